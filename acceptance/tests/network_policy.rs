//! Tenant isolation, enforced on real traffic by kube-router on the harness's real node: the
//! operator's NetworkPolicy lets a tenant's pods be reached from their own namespace and from
//! platform namespaces only, and the test shows that this is the policy's doing by removing it
//! (traffic flows) and letting the operator restore it (traffic is blocked again).
//!
//! Needs KUBECONFIG, KUBESPACES_KUBECTL, KUBESPACES_ACCEPTANCE and KUBESPACES_BUSYBOX_IMAGE.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{Namespace, Pod},
    networking::v1::NetworkPolicy,
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    pods::{
        HTTP_PORT, delete_tenant, fresh_tenant, http_get_from, httpd_spec, page_of, pod, pod_ip,
        real_nodes, retry_until, shell_spec, wait_namespace_ready_for_pods, wait_pod_running,
    },
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{conditions, names};
use serde_json::json;

const OWNER: &str = "node-tests@example.com";
/// The first pods on a fresh node (image unpacking, CNI set-up) may take a while.
const START: Duration = Duration::from_secs(120);
/// kube-router programs iptables from what the API says asynchronously.
const NETWORK: Duration = Duration::from_secs(90);
/// How many checks in a row must find a blocked path blocked.
const CONFIRMATIONS: usize = 3;

/// Waits until `client` in `ns` gets `page` from `ip`.
async fn wait_reachable(env: &Env, ns: &str, client: &str, ip: &str, page: &str, what: &str) {
    retry_until(what, NETWORK, || {
        let response = http_get_from(env, ns, client, ip, HTTP_PORT)?;
        if response.contains(page) {
            Ok(())
        } else {
            Err(response)
        }
    })
    .await;
}

/// Waits until `client` in `ns` can no longer connect to `ip`, then checks that it stays so
/// ([`CONFIRMATIONS`] more times): a blocked path is blocked every time, not by chance.
async fn wait_blocked(env: &Env, ns: &str, client: &str, ip: &str, what: &str) {
    let blocked = || match http_get_from(env, ns, client, ip, HTTP_PORT) {
        Ok(response) => Err(format!("answered: {response}")),
        Err(_) => Ok(()),
    };
    retry_until(what, NETWORK, &blocked).await;
    for _ in 0..CONFIRMATIONS {
        if let Err(seen) = blocked() {
            panic!("{what}: blocked once, then {seen}");
        }
    }
}

#[tokio::test]
async fn tenant_isolation_is_enforced_on_traffic_and_restored_after_drift() {
    let env = Env::get();
    let client = env.client().await;
    let nodes = real_nodes(&client).await;
    let image = env.busybox_image();
    let tenants = env.tenants().await;
    let (a, b) = ("node-netpol-a", "node-netpol-b");
    let ns_a = fresh_tenant(&env, a, OWNER, "2", "2Gi").await;
    let ns_b = fresh_tenant(&env, b, OWNER, "2", "2Gi").await;

    // A platform namespace (ingress gateways, monitoring live in such), made by the test.
    let platform = "node-netpol-platform";
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if matches!(namespaces.get_opt(platform).await, Ok(Some(_))) {
        namespaces
            .delete(platform, &DeleteParams::default())
            .await
            .expect("delete a leftover platform namespace");
        wait_gone(&namespaces, platform, Duration::from_secs(180)).await;
    }
    let labelled: Namespace = serde_json::from_value(json!({
        "metadata": {"name": platform, "labels": {names::PLATFORM_NAMESPACE_LABEL: "true"}}
    }))
    .expect("a valid namespace");
    namespaces
        .create(&PostParams::default(), &labelled)
        .await
        .expect("create the platform namespace");
    wait_namespace_ready_for_pods(&client, platform).await;

    // A web server in each tenant, a client in A and one in the platform namespace.
    let pods_a: Api<Pod> = Api::namespaced(client.clone(), &ns_a);
    let pods_b: Api<Pod> = Api::namespaced(client.clone(), &ns_b);
    let pods_platform: Api<Pod> = Api::namespaced(client.clone(), platform);
    let create = PostParams::default();
    for (api, name, spec) in [
        (&pods_a, "web", httpd_spec(&image, &nodes)),
        (&pods_a, "client", shell_spec(&image, &nodes)),
        (&pods_b, "web", httpd_spec(&image, &nodes)),
        (&pods_platform, "client", shell_spec(&image, &nodes)),
    ] {
        api.create(&create, &pod(name, &[("app", name)], spec))
            .await
            .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    }
    let web_a = pod_ip(&wait_pod_running(&pods_a, "web", START).await);
    let web_b = pod_ip(&wait_pod_running(&pods_b, "web", START).await);
    wait_pod_running(&pods_a, "client", START).await;
    wait_pod_running(&pods_platform, "client", START).await;
    let page = page_of("web");

    // With the operator's policy: A reaches A, the platform reaches B, A does not reach B.
    wait_reachable(
        &env,
        &ns_a,
        "client",
        &web_a,
        &page,
        "A's client to reach A's web",
    )
    .await;
    wait_reachable(
        &env,
        platform,
        "client",
        &web_b,
        &page,
        "the platform namespace to reach B's web",
    )
    .await;
    wait_blocked(
        &env,
        &ns_a,
        "client",
        &web_b,
        "A's client to be cut off from B's web",
    )
    .await;

    // Without it, A reaches B: the policy, not something else, was what blocked. B is paused first
    // so that the operator leaves the deletion alone.
    env.kubectl_ok(
        &[
            "annotate",
            "tenant",
            b,
            &format!("{}=true", names::PAUSED_ANNOTATION),
        ],
        None,
    );
    wait_for("tenant B to report the pause", NETWORK, || async {
        let t = tenants.get(b).await.ok()?;
        t.condition(conditions::SYNCED)
            .filter(|c| c.status == "False" && c.reason == "ReconcilePaused")
            .map(|_| ())
    })
    .await;
    let policies_b: Api<NetworkPolicy> = Api::namespaced(client.clone(), &ns_b);
    policies_b
        .delete(names::NETWORK_POLICY, &DeleteParams::default())
        .await
        .expect("delete B's NetworkPolicy");
    wait_gone(&policies_b, names::NETWORK_POLICY, NETWORK).await;
    wait_reachable(
        &env,
        &ns_a,
        "client",
        &web_b,
        &page,
        "A's client to reach B's web once B's policy is gone",
    )
    .await;

    // Resumed, the operator restores the policy, and A is cut off from B again.
    env.kubectl_ok(
        &[
            "annotate",
            "tenant",
            b,
            &format!("{}-", names::PAUSED_ANNOTATION),
        ],
        None,
    );
    wait_for("B's NetworkPolicy to be restored", NETWORK, || async {
        policies_b
            .get_opt(names::NETWORK_POLICY)
            .await
            .ok()
            .flatten()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
    })
    .await;
    wait_ready(&tenants, b, NETWORK).await;
    wait_blocked(
        &env,
        &ns_a,
        "client",
        &web_b,
        "A's client to be cut off from B's web again",
    )
    .await;
    wait_reachable(
        &env,
        &ns_a,
        "client",
        &web_a,
        &page,
        "A's client to still reach A's web",
    )
    .await;

    delete_tenant(&env, a).await;
    delete_tenant(&env, b).await;
    namespaces
        .delete(platform, &DeleteParams::default())
        .await
        .expect("delete the platform namespace");
    wait_gone(&namespaces, platform, Duration::from_secs(180)).await;
}
