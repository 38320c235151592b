//! Step 12. The Gateway's own reach. Tenant policies admit the platform's namespaces, and the
//! Gateway proxies to whatever its routes' backends name: should a route of a tenant's ever point
//! past the tenant's pods (a guard of step 1 bypassed, a bug in a syncer), the Gateway must still
//! reach nothing of the platform. The platform's admin plays that bypass here: in mallory's
//! namespace, a Service whose EndpointSlice names the operator's pod (its /metrics), routed under
//! mallory's apps domain. A page of mallory's own, routed the same way, must still answer.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use kubespaces_acceptance::{
    hostile::curl_app,
    pods::{httpd_spec, page_of, pod, pod_ip, wait_pod_running},
    wait_for,
};
use kubespaces_operator::{names, names::control_plane as cp};

use super::{MALLORY, Scene};

pub async fn gateway_reach(s: &Scene) -> Option<String> {
    let operators: Api<Pod> = Api::all(s.client.clone());
    let selector = "app.kubernetes.io/component=operator,app.kubernetes.io/name=kubespaces";
    let operator = operators
        .list(&ListParams::default().labels(selector))
        .await
        .expect("the operator's pods")
        .items
        .into_iter()
        .find(|p| p.status.as_ref().is_some_and(|st| st.pod_ip.is_some()))
        .expect("an operator pod with an address");
    let port = operator
        .spec
        .as_ref()
        .and_then(|sp| sp.containers[0].ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.name.as_deref() == Some("http")))
        .map(|p| p.container_port)
        .expect("the operator's http port");

    // mallory's own page, and a route to it: the control.
    let pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.ns);
    let page = pod(
        "own-page",
        &[("app", "own-page")],
        httpd_spec(&s.env.busybox_image(), &s.nodes),
    );
    pods.create(&PostParams::default(), &page)
        .await
        .expect("mallory's page");
    wait_pod_running(&pods, "own-page", Duration::from_secs(120)).await;
    let apps = names::apps_domain(MALLORY, &s.domain);
    let route = |name: &str, host: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: {gateway}}}]\n  hostnames: [\"{host}\"]\n  rules: [{{backendRefs: [{{name: {name}, port: 80}}]}}]\n",
            ns = s.ns,
            gateway = cp::APPS_GATEWAY,
        )
    };
    let (own_host, reach_host) = (format!("own.{apps}"), format!("reach.{apps}"));
    let manifests = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: own-page, namespace: {ns}}}\nspec:\n  selector: {{app: own-page}}\n  ports: [{{port: 80, targetPort: {http}}}]\n---\n{own}---\napiVersion: v1\nkind: Service\nmetadata: {{name: platform-reach, namespace: {ns}}}\nspec:\n  ports: [{{name: http, port: 80, targetPort: {port}}}]\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: platform-reach, namespace: {ns}, labels: {{kubernetes.io/service-name: platform-reach}}}}\naddressType: IPv4\nendpoints: [{{addresses: [\"{ip}\"], conditions: {{ready: true}}}}]\nports: [{{name: http, port: {port}, protocol: TCP}}]\n---\n{reach}",
        ns = s.ns,
        http = kubespaces_acceptance::pods::HTTP_PORT,
        own = route("own-page", &own_host),
        ip = pod_ip(&operator),
        reach = route("platform-reach", &reach_host),
    );
    s.env.apply(&manifests);

    let own = format!("https://{own_host}/");
    wait_for(
        "the Gateway to serve mallory's own page",
        Duration::from_secs(120),
        || async {
            curl_app(&own)
                .1
                .contains(&page_of("own-page"))
                .then_some(())
        },
    )
    .await;
    // Each try waits up to curl's limit; a 404 (no route) or 503 (no backend) is a route or its
    // endpoints not loaded yet.
    let metrics = format!("https://{reach_host}/metrics");
    let outcome = wait_for(
        "the Gateway to answer for the route to the operator",
        Duration::from_secs(120),
        || async {
            let (code, body) = curl_app(&metrics);
            if body.contains("kubespaces_") {
                return Some(Err(format!(
                    "the Gateway proxied {reach_host} to the operator's /metrics (HTTP {code}):\n{}",
                    body.lines().take(5).collect::<Vec<_>>().join("\n")
                )));
            }
            (!["404", "503"].contains(&code.as_str())).then_some(Ok(code))
        },
    )
    .await;
    s.env.kubectl_ok(
        &[
            "-n",
            &s.ns,
            "delete",
            "httproute/own-page",
            "httproute/platform-reach",
            "service/own-page",
            "service/platform-reach",
            "endpointslice/platform-reach",
            "pod/own-page",
            "--wait=false",
        ],
        None,
    );
    match outcome {
        Err(e) => Some(e),
        // 000: the connection never came (curl gave up); 502/504: the Gateway could not dial.
        Ok(code) => {
            assert!(
                ["000", "502", "504"].contains(&code.as_str()),
                "the Gateway answered the route to the operator with HTTP {code}"
            );
            None
        }
    }
}
