//! Tenants isolated by proof, on the harness's real node (kube-router enforces NetworkPolicy,
//! the API server enforces RBAC, quota and admission policies):
//!
//! - Traffic. From a pod of tenant A: A's own pods and cluster DNS answer; tenant B's pod and
//!   Service, a pod in kube-system, the node's own address (kubelet, API server), the
//!   operator's metrics port and a server at the cloud metadata address and in each other
//!   excepted range (172.16/12, 192.168/16, carrier-grade NAT; put on the node's loopback) do
//!   not. A platform namespace reaches A. Each cut-off path is shown to open once the policies
//!   are removed (tenants paused, so the operator leaves the deletion alone), and to close again
//!   when the operator restores them: the policy, not the network, is what blocked.
//! - The owner. Through impersonation, the owner is refused each way out of the namespace that
//!   RBAC alone would leave open: Endpoints and EndpointSlices, `services/proxy`, a RoleBinding
//!   for everyone or another namespace's ServiceAccount, a Service with externalIPs, a NodePort
//!   or LoadBalancer Service. The same requests pass where the guards do not apply, and a
//!   platform administrator may bind a ServiceAccount of another namespace.
//!
//! Needs KUBECONFIG, KUBESPACES_KUBECTL, KUBESPACES_ACCEPTANCE, KUBESPACES_BUSYBOX_IMAGE and
//! KUBESPACES_NODE_IP.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{Namespace, Pod, PodSpec, Service},
    networking::v1::NetworkPolicy,
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    pods::{
        self, HTTP_PORT, busybox_spec, cluster_ip_service, delete_tenant, fresh_tenant,
        http_get_from, httpd_spec, nslookup_addresses, page_of, pod, pod_ip, real_nodes,
        retry_until, shell_spec, wait_namespace_ready_for_pods, wait_pod_running,
    },
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{conditions, names};
use serde_json::json;

/// The first pods on a fresh node (image unpacking, CNI set-up) may take a while.
const START: Duration = Duration::from_secs(120);
/// kube-router programs iptables from what the API says asynchronously.
const NETWORK: Duration = Duration::from_secs(90);
/// How many checks in a row must find a blocked path blocked.
const CONFIRMATIONS: usize = 3;
/// The API server's address in every pod, and the name that resolves to it.
const KUBERNETES_SERVICE: (&str, &str) = ("kubernetes.default.svc.cluster.local", "10.96.0.1");

/// A place a pod may try to connect to.
struct Target {
    what: String,
    host: String,
    port: u16,
}

impl Target {
    fn new(what: impl Into<String>, host: &str, port: u16) -> Target {
        Target {
            what: what.into(),
            host: host.to_owned(),
            port,
        }
    }
}

/// Waits until `ns/client` connects to `target` (and, given `page`, is served it).
async fn wait_reachable(env: &Env, ns: &str, client: &str, target: &Target, page: Option<&str>) {
    let what = format!("{ns}/{client} to reach {}", target.what);
    retry_until(&what, NETWORK, || {
        let response = http_get_from(env, ns, client, &target.host, target.port)?;
        match page {
            Some(page) if !response.contains(page) => Err(response),
            _ => Ok(()),
        }
    })
    .await;
}

/// Waits until `ns/client` can no longer connect to `target`, then checks that it stays so
/// ([`CONFIRMATIONS`] more times): a blocked path is blocked every time, not by chance.
async fn wait_blocked(env: &Env, ns: &str, client: &str, target: &Target) {
    let what = format!("{ns}/{client} to be cut off from {}", target.what);
    let blocked = || match http_get_from(env, ns, client, &target.host, target.port) {
        Ok(response) => Err(format!("answered: {response}")),
        Err(_) => Ok(()),
    };
    retry_until(&what, NETWORK, &blocked).await;
    for _ in 0..CONFIRMATIONS {
        if let Err(seen) = blocked() {
            panic!("{what}: blocked once, then {seen}");
        }
    }
}

/// Waits until `ns/client` resolves the API server's Service name through cluster DNS.
async fn wait_dns(env: &Env, ns: &str, client: &str) {
    let (name, address) = KUBERNETES_SERVICE;
    retry_until(&format!("{ns}/{client} to resolve {name}"), NETWORK, || {
        // busybox nslookup exits 1 when any search domain says NXDOMAIN: read the output.
        let out = env.sh_ok(ns, client, &format!("nslookup {name} 2>&1; true"));
        if nslookup_addresses(&out, name).iter().any(|a| a == address) {
            Ok(())
        } else {
            Err(out)
        }
    })
    .await;
}

/// The metrics port of a pod of the operator the chart installed (its namespace has no
/// NetworkPolicy: only the tenant's own policy keeps tenant pods off it).
async fn operator_metrics(client: &Client) -> Target {
    let namespace = std::env::var("KUBESPACES_OPERATOR_NAMESPACE")
        .unwrap_or_else(|_| "kubespaces-system".into());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let selector = ListParams::default().labels("app.kubernetes.io/component=operator");
    let found = wait_for("a running operator pod with an IP", START, || async {
        let list = pods.list(&selector).await.ok()?;
        list.items.into_iter().find_map(|p| {
            let status = p.status?;
            (status.phase.as_deref() == Some("Running"))
                .then_some(status.pod_ip)
                .flatten()
        })
    })
    .await;
    Target::new(
        format!("the operator's metrics at {found}:8080"),
        &found,
        8080,
    )
}

/// The port of [`off_limits_listener`].
const OFF_LIMITS_PORT: u16 = 8099;
/// One address in each range a tenant's pods may not reach even with the internet open to them
/// (`--tenant-egress-except`) and that the node's own address (10.0.0.0/8) does not stand for.
/// Loopback is left out: a pod's 127.0.0.1 is the pod itself.
const OFF_LIMITS: [(&str, &str); 4] = [
    ("the cloud metadata address (link-local)", "169.254.169.254"),
    ("a private address in 172.16.0.0/12", "172.16.255.1"),
    ("a private address in 192.168.0.0/16", "192.168.255.1"),
    ("a carrier-grade NAT address", "100.64.255.1"),
];

/// A web server that answers at each [`OFF_LIMITS`] address, as a metadata service or a company
/// network would: a pod on the node's own network that puts the addresses on the node's loopback
/// and takes them away again when it stops. The node is the harness's network namespace, so the
/// traffic stays on this machine.
fn off_limits_listener(image: &str, nodes: &[String]) -> PodSpec {
    let addresses = OFF_LIMITS.map(|(_, a)| a).join(" ");
    let script = format!(
        "for a in {addresses}; do ip addr replace $a/32 dev lo || exit 1; done; \
         trap 'for a in {addresses}; do ip addr del $a/32 dev lo; done; exit 0' TERM; \
         mkdir -p /tmp/www && echo \"{page}\" >/tmp/www/index.html; \
         httpd -p {OFF_LIMITS_PORT} -h /tmp/www; while true; do sleep 1; done",
        page = page_of("off-limits"),
    );
    let mut spec = busybox_spec(image, nodes, &script);
    spec.host_network = Some(true);
    // Root with NET_ADMIN on the node's network, instead of the restricted profile; time for
    // the trap to take the addresses away.
    spec.security_context = None;
    spec.termination_grace_period_seconds = Some(10);
    let main = &mut spec.containers[0];
    main.security_context = Some(
        serde_json::from_value(json!({"runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}))
            .expect("a valid security context"),
    );
    main.readiness_probe = Some(
        serde_json::from_value(json!({"tcpSocket": {"port": OFF_LIMITS_PORT}, "periodSeconds": 2}))
            .expect("a valid probe"),
    );
    spec
}

/// Pauses (`true`) or resumes the tenant and waits until it says so.
async fn set_paused(env: &Env, tenant: &str, paused: bool) {
    let annotation = if paused {
        format!("{}=true", names::PAUSED_ANNOTATION)
    } else {
        format!("{}-", names::PAUSED_ANNOTATION)
    };
    env.kubectl_ok(&["annotate", "tenant", tenant, &annotation], None);
    let tenants = env.tenants().await;
    if paused {
        wait_for(
            &format!("tenant {tenant} to report the pause"),
            NETWORK,
            || async {
                let t = tenants.get(tenant).await.ok()?;
                t.condition(conditions::SYNCED)
                    .filter(|c| c.status == "False" && c.reason == "ReconcilePaused")
                    .map(|_| ())
            },
        )
        .await;
    } else {
        wait_ready(&tenants, tenant, NETWORK).await;
    }
}

/// Deletes the tenant's NetworkPolicy (the tenant must be paused) and waits until it is gone.
async fn delete_policy(client: &Client, ns: &str) {
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
    policies
        .delete(names::NETWORK_POLICY, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("delete the NetworkPolicy of {ns}: {e}"));
    wait_gone(&policies, names::NETWORK_POLICY, NETWORK).await;
}

/// Waits until the operator has put the tenant's NetworkPolicy back.
async fn wait_policy_restored(client: &Client, ns: &str) {
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
    wait_for(
        &format!("the NetworkPolicy of {ns} to be restored"),
        NETWORK,
        || async {
            policies
                .get_opt(names::NETWORK_POLICY)
                .await
                .ok()
                .flatten()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
        },
    )
    .await;
}

/// Creates the namespace `name` with `labels`, deleting one left over from an earlier run.
async fn fresh_namespace(client: &Client, name: &str, labels: serde_json::Value) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if matches!(namespaces.get_opt(name).await, Ok(Some(_))) {
        namespaces
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete the leftover namespace {name}: {e}"));
        wait_gone(&namespaces, name, Duration::from_secs(180)).await;
    }
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
            .expect("a valid namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("create the namespace {name}: {e}"));
    wait_namespace_ready_for_pods(client, name).await;
}

#[tokio::test]
async fn a_tenant_pod_reaches_its_namespace_and_dns_and_nothing_else_of_the_cluster() {
    let env = Env::get();
    let client = env.client().await;
    let nodes = real_nodes(&client).await;
    let image = env.busybox_image();
    let node_ip = std::env::var("KUBESPACES_NODE_IP").expect("KUBESPACES_NODE_IP (harness env)");
    let (a, b) = ("iso-net-a", "iso-net-b");
    let ns_a = fresh_tenant(&env, a, "iso-net@example.com", "2", "2Gi").await;
    let ns_b = fresh_tenant(&env, b, "iso-net@example.com", "2", "2Gi").await;
    // A platform namespace (ingress gateways live in such), made by the test.
    let platform = "iso-net-platform";
    fresh_namespace(
        &client,
        platform,
        json!({names::PLATFORM_NAMESPACE_LABEL: "true"}),
    )
    .await;

    // A web server in A, B (behind a Service) and kube-system; shells in A and the platform.
    // The kube-system pod also serves as an outsider without any policy of its own.
    let system = "kube-system";
    let probe = "kubespaces-isolation-probe";
    let off_limits = "kubespaces-isolation-off-limits";
    let pods_a: Api<Pod> = Api::namespaced(client.clone(), &ns_a);
    let pods_b: Api<Pod> = Api::namespaced(client.clone(), &ns_b);
    let pods_system: Api<Pod> = Api::namespaced(client.clone(), system);
    let pods_platform: Api<Pod> = Api::namespaced(client.clone(), platform);
    for leftover in [probe, off_limits] {
        if matches!(pods_system.get_opt(leftover).await, Ok(Some(_))) {
            pods_system
                .delete(leftover, &DeleteParams::default())
                .await
                .unwrap_or_else(|e| panic!("delete the leftover kube-system pod {leftover}: {e}"));
            wait_gone(&pods_system, leftover, START).await;
        }
    }
    let create = PostParams::default();
    for (api, name, spec) in [
        (&pods_a, "web", httpd_spec(&image, &nodes)),
        (&pods_a, "client", shell_spec(&image, &nodes)),
        (&pods_b, "web", httpd_spec(&image, &nodes)),
        (&pods_system, probe, httpd_spec(&image, &nodes)),
        (&pods_platform, "client", shell_spec(&image, &nodes)),
    ] {
        api.create(&create, &pod(name, &[("app", name)], spec))
            .await
            .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    }
    let listener = off_limits_listener(&image, &nodes);
    pods_system
        .create(&create, &pod(off_limits, &[("app", off_limits)], listener))
        .await
        .expect("create the off-limits listener");
    let service_b = Api::<Service>::namespaced(client.clone(), &ns_b)
        .create(&create, &cluster_ip_service("web", 80))
        .await
        .expect("create B's Service");
    let service_b_ip = service_b
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("a ClusterIP is allocated on create");
    let web_a = pod_ip(&wait_pod_running(&pods_a, "web", START).await);
    let web_b = pod_ip(&wait_pod_running(&pods_b, "web", START).await);
    let web_system = pod_ip(&wait_pod_running(&pods_system, probe, START).await);
    wait_pod_running(&pods_a, "client", START).await;
    wait_pod_running(&pods_platform, "client", START).await;
    wait_for("the off-limits listener ready", START, || async {
        let p = pods_system.get(off_limits).await.ok()?;
        pods::is_running_ready(&p).then_some(())
    })
    .await;

    let own = Target::new(format!("A's web pod {web_a}"), &web_a, HTTP_PORT);
    let cut_off = [
        Target::new(format!("B's web pod {web_b}"), &web_b, HTTP_PORT),
        Target::new(format!("B's Service {service_b_ip}:80"), &service_b_ip, 80),
        Target::new(
            format!("the kube-system pod {web_system}"),
            &web_system,
            HTTP_PORT,
        ),
        Target::new(format!("the kubelet at {node_ip}:10250"), &node_ip, 10250),
        Target::new(format!("the API server at {node_ip}:6443"), &node_ip, 6443),
        operator_metrics(&client).await,
    ]
    .into_iter()
    .chain(OFF_LIMITS.map(|(what, address)| {
        Target::new(
            format!("{what} {address}:{OFF_LIMITS_PORT}"),
            address,
            OFF_LIMITS_PORT,
        )
    }))
    .collect::<Vec<_>>();
    let (b_pod, b_service) = (&cut_off[0], &cut_off[1]);
    let page = page_of("web");

    // With the operator's policies: A reaches its own pods and DNS, the platform reaches A,
    // and A reaches nothing else.
    wait_reachable(&env, &ns_a, "client", &own, Some(page.as_str())).await;
    wait_dns(&env, &ns_a, "client").await;
    wait_reachable(&env, platform, "client", &own, Some(page.as_str())).await;
    for target in &cut_off {
        wait_blocked(&env, &ns_a, "client", target).await;
    }

    // B's policy removed: B is open to anyone (the kube-system pod reaches it), yet not to A,
    // whose own policy keeps it in: isolation holds on the way out too.
    set_paused(&env, b, true).await;
    delete_policy(&client, &ns_b).await;
    wait_reachable(&env, system, probe, b_pod, Some(page.as_str())).await;
    wait_reachable(&env, system, probe, b_service, Some(page.as_str())).await;
    wait_blocked(&env, &ns_a, "client", b_pod).await;
    wait_blocked(&env, &ns_a, "client", b_service).await;

    // A's policy removed too: every path A was cut off from opens.
    set_paused(&env, a, true).await;
    delete_policy(&client, &ns_a).await;
    for target in &cut_off {
        wait_reachable(&env, &ns_a, "client", target, None).await;
    }

    // Resumed, the operator restores both policies, and A is cut off again.
    set_paused(&env, a, false).await;
    set_paused(&env, b, false).await;
    wait_policy_restored(&client, &ns_a).await;
    wait_policy_restored(&client, &ns_b).await;
    for target in &cut_off {
        wait_blocked(&env, &ns_a, "client", target).await;
    }
    wait_reachable(&env, &ns_a, "client", &own, Some(page.as_str())).await;
    wait_dns(&env, &ns_a, "client").await;

    delete_tenant(&env, a).await;
    delete_tenant(&env, b).await;
    for pod in [probe, off_limits] {
        pods_system
            .delete(pod, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete the kube-system pod {pod}: {e}"));
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(platform, &DeleteParams::default())
        .await
        .expect("delete the platform namespace");
    wait_gone(&pods_system, probe, START).await;
    wait_gone(&pods_system, off_limits, START).await;
    wait_gone(&namespaces, platform, Duration::from_secs(180)).await;
}

/// kubectl's verdict on one request: refused with every one of `expect` in its error, or
/// admitted.
fn assert_refused(out: &std::process::Output, what: &str, expect: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what} must be refused; it was not");
    for text in expect {
        assert!(
            err.contains(text),
            "{what} must be refused saying {text:?}; kubectl said: {err}"
        );
    }
}

fn assert_admitted(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} must be admitted: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A RoleBinding of the owner ClusterRole to `subjects`, as YAML.
fn role_binding(ns: &str, subjects: serde_json::Value) -> String {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "widen", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": names::OWNER_CLUSTER_ROLE},
        "subjects": subjects,
    })
    .to_string()
}

/// A Service `web` in `ns` of `type_`, with `external_ips` when not empty, as YAML.
fn service(ns: &str, type_: &str, external_ips: &[&str]) -> String {
    let mut spec = json!({
        "type": type_,
        "selector": {"app": "web"},
        "ports": [{"port": 80, "targetPort": HTTP_PORT}],
    });
    if !external_ips.is_empty() {
        spec["externalIPs"] = json!(external_ips);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
           "spec": spec})
    .to_string()
}

#[tokio::test]
async fn the_owner_is_refused_every_way_out_of_the_namespace() {
    let env = Env::get();
    let owner = "iso-owner@example.com";
    let tenant = "iso-owner";
    let ns = fresh_tenant(&env, tenant, owner, "2", "2Gi").await;
    // Server-side dry runs pass authorization, quota and admission like real requests, and
    // leave nothing behind. The owner's RoleBinding names them as a User: impersonate that.
    let as_owner = |args: &[&str], stdin: Option<&str>| {
        let mut all = vec!["--as", owner, "-n", ns.as_str()];
        all.extend_from_slice(args);
        env.kubectl(&all, stdin)
    };
    let create = ["create", "--dry-run=server", "-o", "name", "-f", "-"];
    let other_ns = "kube-system";

    // What the owner may do, so the refusals below are not a blanket "no".
    for (what, manifest) in [
        ("a ClusterIP Service", service(&ns, "ClusterIP", &[])),
        (
            "a RoleBinding to a named user",
            role_binding(&ns, json!([{"kind": "User", "name": "bob@example.com"}])),
        ),
        (
            "a RoleBinding to a ServiceAccount of the namespace",
            role_binding(
                &ns,
                json!([{"kind": "ServiceAccount", "name": "default", "namespace": ns}]),
            ),
        ),
    ] {
        assert_admitted(&as_owner(&create, Some(&manifest)), what);
    }

    // Endpoints and EndpointSlices: a selector-less Service pointed at any address.
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": ns},
        "subsets": [{"addresses": [{"ip": "10.244.0.250"}], "ports": [{"port": 80}]}],
    })
    .to_string();
    assert_refused(
        &as_owner(&create, Some(&endpoints)),
        "creating Endpoints",
        &["forbidden", "cannot create resource \"endpoints\""],
    );
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "namespace": ns,
                     "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.250"]}],
        "ports": [{"port": 80}],
    })
    .to_string();
    assert_refused(
        &as_owner(&create, Some(&slice)),
        "creating an EndpointSlice",
        &[
            "forbidden",
            "cannot create resource \"endpointslices\" in API group \"discovery.k8s.io\"",
        ],
    );

    // services/proxy: the API server as a proxy to wherever a Service points.
    let proxy = format!("/api/v1/namespaces/{ns}/services/http:web:80/proxy/");
    assert_refused(
        &as_owner(&["get", "--raw", &proxy], None),
        "proxying through a Service",
        &["forbidden", "cannot get resource \"services/proxy\""],
    );

    // RoleBindings for everyone, or for another namespace's ServiceAccounts.
    let guard = format!("ValidatingAdmissionPolicy '{}'", names::ROLE_BINDING_GUARD);
    for (kind, name) in [
        ("Group", "system:authenticated"),
        ("Group", "system:unauthenticated"),
        ("Group", "system:serviceaccounts"),
        ("Group", "system:serviceaccounts:kube-system"),
        ("User", "system:anonymous"),
    ] {
        let manifest = role_binding(
            &ns,
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}]),
        );
        assert_refused(
            &as_owner(&create, Some(&manifest)),
            &format!("a RoleBinding to {kind} {name}"),
            &[
                guard.as_str(),
                &format!("RoleBinding widen may not grant its role to {kind} {name}"),
            ],
        );
    }
    let manifest = role_binding(
        &ns,
        json!([{"kind": "ServiceAccount", "name": "default", "namespace": other_ns}]),
    );
    assert_refused(
        &as_owner(&create, Some(&manifest)),
        "a RoleBinding to another namespace's ServiceAccount",
        &[
            guard.as_str(),
            &format!("may not grant its role to ServiceAccount {other_ns}/default"),
        ],
    );

    // Services that reach past the namespace: externalIPs, node ports, load balancers.
    assert_refused(
        &as_owner(&create, Some(&service(&ns, "ClusterIP", &["203.0.113.7"]))),
        "a Service with externalIPs",
        &[
            &format!("ValidatingAdmissionPolicy '{}'", names::SERVICE_GUARD),
            "may not set spec.externalIPs (203.0.113.7)",
            "CVE-2020-8554",
        ],
    );
    assert_refused(
        &as_owner(&create, Some(&service(&ns, "NodePort", &[]))),
        "a NodePort Service",
        &["exceeded quota", "services.nodeports=0"],
    );
    assert_refused(
        &as_owner(&create, Some(&service(&ns, "LoadBalancer", &[]))),
        "a LoadBalancer Service",
        &["exceeded quota", "services.loadbalancers=0"],
    );

    // Where the guards do not apply (a namespace that is not a tenant's), the same requests
    // are valid: the refusals above are the guards' doing, not malformed requests.
    let outside = "default";
    // A server-side dry run as the test driver, a cluster admin, in `namespace`.
    let as_admin = |namespace: &str, manifest: &str| {
        let args = [
            "-n",
            namespace,
            "create",
            "--dry-run=server",
            "-o",
            "name",
            "-f",
            "-",
        ];
        env.kubectl(&args, Some(manifest))
    };
    assert_admitted(
        &as_admin(outside, &service(outside, "ClusterIP", &["203.0.113.7"])),
        "a Service with externalIPs outside tenant namespaces",
    );
    assert_admitted(
        &as_admin(
            outside,
            &role_binding(
                outside,
                json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                        "name": "system:authenticated"}]),
            ),
        ),
        "a RoleBinding to system:authenticated outside tenant namespaces",
    );
    // And inside the tenant namespace, a platform administrator (who could bind anyone
    // cluster-wide anyway) may bind another namespace's ServiceAccount, e.g. a CI identity.
    assert_admitted(
        &as_admin(
            &ns,
            &role_binding(
                &ns,
                json!([{"kind": "ServiceAccount", "name": "default", "namespace": other_ns}]),
            ),
        ),
        "an administrator's RoleBinding to another namespace's ServiceAccount",
    );

    delete_tenant(&env, tenant).await;
}
