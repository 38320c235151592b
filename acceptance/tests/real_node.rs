//! Workloads in a tenant namespace really run, on the harness's real node (kubelet, containerd,
//! CNI, kube-proxy, CoreDNS): real processes with exec, logs and port-forward; Services, DNS and
//! the pod's own API credential; the tenant's LimitRange and memory limits enforced by the kernel.
//!
//! Needs KUBECONFIG, KUBESPACES_KUBECTL, KUBESPACES_ACCEPTANCE and KUBESPACES_BUSYBOX_IMAGE.

use std::{collections::BTreeSet, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{LimitRange, Pod, Service},
    },
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{Api, api::PostParams};
use kubespaces_acceptance::{
    Env,
    pods::{
        HTTP_PORT, PortForward, busybox_spec, cluster_ip_service, delete_tenant, deployment,
        describe, fresh_tenant, http_get_from, httpd_spec, local_http_get, nslookup_addresses,
        page_of, pod, real_nodes, retry_until, retry_until_async, shell_spec, wait_pod,
        wait_pod_running, wait_running_ready,
    },
};
use kubespaces_operator::{names, quantity};

const OWNER: &str = "node-tests@example.com";
/// The first pods on a fresh node (image unpacking, CNI set-up) may take a while.
const START: Duration = Duration::from_secs(120);
/// kube-proxy, CoreDNS and kube-router program what the API says asynchronously.
const NETWORK: Duration = Duration::from_secs(60);
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().expect("a pod has a name")
}

/// Whether two quantities are the same amount ("512Mi" and "536870912" are).
fn same_quantity(a: &Quantity, b: &Quantity) -> bool {
    let parse = |q: &Quantity| {
        quantity::parse(&q.0).unwrap_or_else(|e| panic!("quantity from the API server: {e}"))
    };
    parse(a) == parse(b)
}

/// What a user relies on first: their Deployment's pods run real processes they can exec into,
/// read the logs of and reach through port-forward.
#[tokio::test]
async fn a_deployment_runs_real_processes_with_exec_logs_and_port_forward() {
    let env = Env::get();
    let client = env.client().await;
    let nodes = real_nodes(&client).await;
    let tenant = "node-workload";
    let ns = fresh_tenant(&env, tenant, OWNER, "2", "2Gi").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &deployment("web", 2, httpd_spec(&env.busybox_image(), &nodes)),
        )
        .await
        .expect("create the web Deployment");
    let running = wait_running_ready(&pods, "app=web", 2, START).await;

    let port = HTTP_PORT.to_string();
    for p in &running {
        let name = name_of(p);
        // On a real node, started by containerd (kwok's fake pods have no container runtime).
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
        assert!(node.is_some_and(|n| nodes.contains(&n)), "{}", describe(p));
        let container_id = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.first())
            .and_then(|c| c.container_id.clone())
            .unwrap_or_default();
        assert!(container_id.starts_with("containerd://"), "{}", describe(p));

        // exec runs a command in the container; PID 1 there is the httpd the script became.
        let cmdline = env.exec_ok(&ns, &name, &["cat", "/proc/1/cmdline"]);
        let argv: Vec<&str> = cmdline.split('\0').filter(|a| !a.is_empty()).collect();
        assert_eq!(argv, ["httpd", "-f", "-p", port.as_str(), "-h", "/tmp/www"]);

        // logs return what the container printed on stdout.
        let printed = format!("serving {name} on port {HTTP_PORT}");
        retry_until(
            &format!("{printed:?} in the logs of {name}"),
            NETWORK,
            || {
                let out = env.kubectl(&["-n", &ns, "logs", &name], None);
                let logs = String::from_utf8_lossy(&out.stdout).into_owned();
                if out.status.success() && logs.contains(&printed) {
                    Ok(())
                } else {
                    Err(format!("{logs}{}", String::from_utf8_lossy(&out.stderr)))
                }
            },
        )
        .await;
    }

    // port-forward: the page, fetched by the test itself through the forwarded port.
    let first = name_of(&running[0]);
    let forward = PortForward::start(&env, &ns, &first, HTTP_PORT).await;
    let port = forward.local_port;
    let (status, body) =
        retry_until_async("the page through kubectl port-forward", NETWORK, || {
            let page = page_of(&first);
            async move {
                match local_http_get(port).await? {
                    (status, body) if body.contains(&page) => Ok((status, body)),
                    (status, body) => Err(format!("HTTP {status}: {body}")),
                }
            }
        })
        .await;
    assert_eq!(status, 200, "{body}");
    forward.stop().await;

    delete_tenant(&env, tenant).await;
}

/// Pods find each other and the API server the way applications do: a Service's ClusterIP
/// (load-balanced over its pods), its DNS names (full and short), `kubernetes.default.svc`'s
/// name, and the ServiceAccount token mounted into the pod is a working credential for that
/// namespace's account.
#[tokio::test]
async fn services_dns_and_the_api_server_are_reachable_from_pods() {
    let env = Env::get();
    let client = env.client().await;
    let nodes = real_nodes(&client).await;
    let image = env.busybox_image();
    let tenant = "node-service";
    let ns = fresh_tenant(&env, tenant, OWNER, "2", "2Gi").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &deployment("web", 2, httpd_spec(&image, &nodes)),
        )
        .await
        .expect("create the web Deployment");
    let service = Api::<Service>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &cluster_ip_service("web", 80))
        .await
        .expect("create the web Service");
    let cluster_ip = service
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("a ClusterIP is allocated on create");
    pods.create(
        &PostParams::default(),
        &pod("client", &[], shell_spec(&image, &nodes)),
    )
    .await
    .expect("create the client pod");
    let web: BTreeSet<String> = wait_running_ready(&pods, "app=web", 2, START)
        .await
        .iter()
        .map(name_of)
        .collect();
    wait_pod_running(&pods, "client", START).await;

    // pod -> ClusterIP -> pod, and kube-proxy spreads the requests over both replicas.
    let mut served = BTreeSet::new();
    retry_until(
        &format!("both web pods to answer through {cluster_ip}:80"),
        NETWORK,
        || {
            let response = http_get_from(&env, &ns, "client", &cluster_ip, 80)?;
            served.extend(
                web.iter()
                    .filter(|w| response.contains(&page_of(w)))
                    .cloned(),
            );
            if served == web {
                Ok(())
            } else {
                Err(format!("answered so far: {served:?}; last: {response}"))
            }
        },
    )
    .await;

    // DNS: the full and the short name of the Service resolve to its ClusterIP...
    let fqdn = format!("web.{ns}.svc.cluster.local");
    for query in [fqdn.as_str(), "web"] {
        retry_until(
            &format!("{query} to resolve to {cluster_ip}"),
            NETWORK,
            || {
                // busybox nslookup exits 1 when any search domain says NXDOMAIN: read the output.
                let out = env.sh_ok(&ns, "client", &format!("nslookup {query} 2>&1; true"));
                if nslookup_addresses(&out, &fqdn).contains(&cluster_ip) {
                    Ok(())
                } else {
                    Err(out)
                }
            },
        )
        .await;
    }
    // ...and applications can use the short name.
    retry_until("GET http://web:80/ by name", NETWORK, || {
        let response = http_get_from(&env, &ns, "client", "web", 80)?;
        if response.contains("hello from") {
            Ok(())
        } else {
            Err(response)
        }
    })
    .await;

    // The API server's in-cluster name resolves, but a tenant pod does not connect to it: the
    // tenant's NetworkPolicy keeps pods off the node's addresses (tests/isolation.rs shows the
    // connection blocked, and open once the policy is removed). Tenant workloads talk to their
    // own control plane; the pod's credential is tried from outside below.
    retry_until(
        "kubernetes.default.svc to resolve to 10.96.0.1",
        NETWORK,
        || {
            let name = "kubernetes.default.svc.cluster.local";
            let out = env.sh_ok(&ns, "client", &format!("nslookup {name} 2>&1; true"));
            if nslookup_addresses(&out, name)
                .iter()
                .any(|a| a == "10.96.0.1")
            {
                Ok(())
            } else {
                Err(out)
            }
        },
    )
    .await;

    // The token and CA mounted into the pod: the API server (verified with that CA) takes the
    // token as the namespace's default ServiceAccount.
    let token = env.exec_ok(
        &ns,
        "client",
        &["cat", &format!("{SERVICE_ACCOUNT_DIR}/token")],
    );
    let ca = env.exec_ok(
        &ns,
        "client",
        &["cat", &format!("{SERVICE_ACCOUNT_DIR}/ca.crt")],
    );
    assert!(ca.contains("BEGIN CERTIFICATE"), "ca.crt: {ca}");
    let server = env.kubectl_ok(
        &[
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ],
        None,
    );
    let out = env.kubectl_with_token(
        server.trim(),
        &ca,
        token.trim(),
        &["auth", "whoami", "-o", "json"],
    );
    assert!(
        out.status.success(),
        "kubectl auth whoami with the pod's token: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("kubectl auth whoami -o json prints JSON");
    assert_eq!(
        review["status"]["userInfo"]["username"],
        format!("system:serviceaccount:{ns}:default"),
        "{review}"
    );

    delete_tenant(&env, tenant).await;
}

/// The platform's guard rails hold on a real node: a pod that states no resources gets the
/// LimitRange defaults, and the memory default is the container's cgroup limit; a pod that
/// allocates beyond its memory limit is OOM-killed, and its status says so.
#[tokio::test]
async fn limit_range_defaults_and_memory_limits_are_enforced_by_the_kernel() {
    let env = Env::get();
    let client = env.client().await;
    let nodes = real_nodes(&client).await;
    let image = env.busybox_image();
    let tenant = "node-limits";
    // cpu 2 / memory 2Gi: room for a pod with the default limits and the 32Mi one.
    let ns = fresh_tenant(&env, tenant, OWNER, "2", "2Gi").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    // The defaults as the operator configured them (see operator/src/build/settings.rs: 500m/512Mi
    // limits, 100m/128Mi requests unless the harness overrides them).
    let limit_range = Api::<LimitRange>::namespaced(client.clone(), &ns)
        .get(names::LIMIT_RANGE)
        .await
        .expect("the tenant's LimitRange");
    let item = limit_range
        .spec
        .and_then(|s| s.limits.into_iter().find(|l| l.type_ == "Container"))
        .expect("a Container item in the LimitRange");
    let default_limits = item.default.expect("default limits");
    let default_requests = item.default_request.expect("default requests");

    pods.create(
        &PostParams::default(),
        &pod(
            "plain",
            &[],
            busybox_spec(&image, &nodes, "exec sleep 86400"),
        ),
    )
    .await
    .expect("a pod without resources is admitted");
    let plain = wait_pod_running(&pods, "plain", START).await;
    let resources = plain
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].resources.clone())
        .expect("resources filled in by the LimitRange");
    let limits = resources.limits.unwrap_or_default();
    let requests = resources.requests.unwrap_or_default();
    for (key, want) in &default_limits {
        let got = limits.get(key);
        assert!(
            got.is_some_and(|g| same_quantity(g, want)),
            "limits.{key}: {got:?}, want {want:?}"
        );
    }
    for (key, want) in &default_requests {
        let got = requests.get(key);
        assert!(
            got.is_some_and(|g| same_quantity(g, want)),
            "requests.{key}: {got:?}, want {want:?}"
        );
    }
    // The kernel enforces the default: the container's memory cgroup limit, in bytes (cgroup v1,
    // or memory.max on a cgroup v2 host).
    let memory = default_limits
        .get("memory")
        .expect("a default memory limit");
    let bytes = quantity::parse(&memory.0).expect("a memory quantity").0 / 1_000_000_000;
    let cgroup = env.sh_ok(
        &ns,
        "plain",
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max",
    );
    assert_eq!(
        cgroup.trim(),
        bytes.to_string(),
        "memory limit of {}",
        memory.0
    );

    // 32Mi, and a tail that buffers 200 MiB of newline-free input: the OOM killer steps in.
    let mut spec = busybox_spec(&image, &nodes, "head -c 200m /dev/zero | tail");
    spec.restart_policy = Some("Never".into());
    spec.containers[0].resources = Some(
        serde_json::from_value(serde_json::json!({
            "requests": {"memory": "32Mi"}, "limits": {"memory": "32Mi"},
        }))
        .expect("valid resources"),
    );
    pods.create(&PostParams::default(), &pod("hog", &[], spec))
        .await
        .expect("create the hog pod");
    let hog = wait_pod(
        &pods,
        "hog",
        "Failed with its container terminated",
        START,
        |p| {
            let status = p.status.as_ref()?;
            let terminated = status
                .container_statuses
                .as_ref()?
                .first()?
                .state
                .as_ref()?
                .terminated
                .as_ref();
            (status.phase.as_deref() == Some("Failed") && terminated.is_some()).then(|| p.clone())
        },
    )
    .await;
    let reason = hog
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.reason.clone());
    assert_eq!(reason.as_deref(), Some("OOMKilled"), "{}", describe(&hog));

    delete_tenant(&env, tenant).await;
}

/// The kubelet's API (logs, exec, pods of the node) answers only callers the API server vouches
/// for: no anonymous access, a valid token without rights is forbidden, the admin is served; and
/// its serving certificate verifies against the cluster CA for the node's address.
#[tokio::test]
async fn the_kubelet_api_is_authenticated_and_authorized() {
    let env = Env::get();
    let node_ip = std::env::var("KUBESPACES_NODE_IP").expect("KUBESPACES_NODE_IP (harness env)");
    let state = std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE (harness env)");
    let ca = format!("{state}/pki/ca.crt");
    let url = format!("https://{node_ip}:10250/pods");
    // The HTTP status of GET /pods with an optional bearer token; --cacert, never -k.
    let status = |token: Option<&str>| {
        let mut cmd = std::process::Command::new("curl");
        cmd.args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--cacert",
            &ca,
        ]);
        if let Some(t) = token {
            cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
        }
        let out = cmd.arg(&url).output().expect("run curl");
        assert!(
            out.status.success(),
            "curl {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(status(None), "401", "anonymous callers are refused");
    let sa_token = env.kubectl_ok(&["-n", "default", "create", "token", "default"], None);
    assert_eq!(
        status(Some(sa_token.trim())),
        "403",
        "a ServiceAccount without nodes/proxy rights is forbidden"
    );
    let admin_token = env.kubectl_ok(
        &[
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "jsonpath={.users[0].user.token}",
        ],
        None,
    );
    assert_eq!(
        status(Some(admin_token.trim())),
        "200",
        "the admin is served"
    );
}
