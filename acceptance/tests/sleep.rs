//! Idle tenants sleep and cost no control plane (issue 23), on the shared cluster, whose chart
//! routes every tenant API through the waker:
//! - a tenant whose API has no connection for its `spec.sleep.afterIdle` sleeps by itself: its
//!   control plane runs no pod, its app keeps answering, its workloads keep running and resolving
//!   each other's names (its CoreDNS runs on), and it stays Ready (the operator's own checks of
//!   its API do not keep it awake);
//! - the first `kubectl` with the kubeconfig handed out wakes it, in one try and without an
//!   error, and answers from the woken control plane; the phase goes Asleep, Waking, Ready;
//! - sleep and wake cycles, by request, keep every object, the workload's volume data, the CA
//!   and the kubeconfig;
//! - a wake completes across a restart of the operator's leader, and across one of the node's
//!   containerd;
//! - a tenant deleted while asleep leaves nothing behind.

use std::{
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::Pod},
    jiff::Timestamp,
};
use kube::{Api, api::ListParams};
use kubespaces_acceptance::{
    Env,
    pods::{delete_tenant, leftovers, nslookup_addresses, retry_until},
    tenant_app::{self, curl},
    tenant_cluster::{in_tenant, owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_manifest, wait_for, wait_ready,
};
use kubespaces_operator::{
    api::Tenant,
    conditions::{self, Phase},
    names::{self, SLEEP_REQUESTED_ANNOTATION, control_plane as cp},
};

const NAME: &str = "team-sleepy";
const RESTARTED: &str = "team-dozy";
const READY_WITHIN: Duration = Duration::from_secs(300);
/// Its idle period: short, so that the test sees it pass.
const AFTER_IDLE: &str = "30s";
/// A control plane stops within its pod's grace period.
const ASLEEP_WITHIN: Duration = Duration::from_secs(150);
/// Sleep and wake cycles by request, each checking everything the tenant holds.
const CYCLES: usize = 10;

/// The volume the workload writes once, read back after every wake.
const KEEPER: &str = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: keeper, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: keeper, namespace: default}
spec:
  securityContext: RESTRICTED_POD
  containers:
  - name: keeper
    image: IMAGE
    imagePullPolicy: IfNotPresent
    securityContext: RESTRICTED_CONTAINER
    command: [sh, -c, 'test -f /data/kept || echo "written before any sleep" > /data/kept; exec sleep 86400']
    volumeMounts: [{name: data, mountPath: /data}]
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 50m, memory: 16Mi}}
  volumes: [{name: data, persistentVolumeClaim: {claimName: keeper}}]
"#;

fn tenant_with_idle_period(name: &str) -> String {
    tenant_manifest(
        name,
        &format!(
            "  owner: alice@example.com\n  resources: {{cpu: \"2\", memory: 4Gi, storage: 1Gi}}\n  sleep: {{afterIdle: {AFTER_IDLE}}}\n"
        ),
    )
}

/// Writes a sleep request for now, as any door does.
fn request_sleep(env: &Env, tenant: &str) {
    let now = Timestamp::now().to_string();
    env.kubectl_ok(
        &[
            "annotate",
            "tenant",
            tenant,
            "--overwrite",
            &format!("{SLEEP_REQUESTED_ANNOTATION}={now}"),
        ],
        None,
    );
}

/// Waits for the tenant's phase to be `phase`, and returns the tenant.
async fn phase(tenants: &Api<Tenant>, name: &str, phase: Phase, within: Duration) -> Tenant {
    wait_for(
        &format!("{name} to be {}", phase.as_str()),
        within,
        || async {
            tenants
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .filter(|t| t.phase() == Some(phase.as_str()))
        },
    )
    .await
}

/// Every phase the tenant shows, in order, as a watcher polling its status sees them.
fn record_phases(tenants: Api<Tenant>, name: &'static str) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(Some(t)) = tenants.get_opt(name).await
                && let Some(p) = t.phase()
                && let Ok(mut log) = log.lock()
                && log.last().map(String::as_str) != Some(p)
            {
                log.push(p.to_owned());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    seen
}

/// The control plane's pods (the StatefulSet's), by name.
async fn control_plane_pods(pods: &Api<Pod>) -> Vec<String> {
    let selector = format!("app=vcluster,release={}", cp::RELEASE);
    pods.list(&ListParams::default().labels(&selector))
        .await
        .expect("list the control plane's pods")
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect()
}

/// One `kubectl` with the kubeconfig as handed out, once (no retry): its stdout, or a failure
/// naming what it said.
fn once(env: &Env, kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let out = owner_kubectl(env, kubeconfig, args, None);
    assert!(
        out.status.success(),
        "`kubectl {}` against the tenant failed: {}",
        args.join(" "),
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// Several workers: the phase recorder runs while this thread waits for kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_tenant_sleeps_and_the_first_kubectl_wakes_it_with_everything_kept() {
    let env = Env::get();
    let domain = platform_var("KUBESPACES_DOMAIN");
    let client = env.client().await;
    let tenants = env.tenants().await;
    let ns = names::namespace(NAME);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    if matches!(tenants.get_opt(NAME).await, Ok(Some(_))) {
        delete_tenant(&env, NAME).await;
    }
    env.apply(&tenant_with_idle_period(NAME));
    wait_ready(&tenants, NAME, READY_WITHIN).await;
    let phases = record_phases(tenants.clone(), NAME);

    // Inside the tenant: an object, a workload writing to a volume, an app at its apps URL.
    let (kubeconfig, handed_out) = owner_kubeconfig(&env, NAME).await;
    in_tenant(&env, &kubeconfig, &["get", "ns"]).await;
    let host = format!("hello.{NAME}.apps.{domain}");
    let url = format!("https://{host}/");
    let answer = format!("hello from {NAME}");
    let restricted = |v: serde_json::Value| serde_json::to_string(&v).expect("JSON");
    let keeper = KEEPER
        .replace(
            "RESTRICTED_POD",
            &restricted(kubespaces_acceptance::pods::restricted_pod()),
        )
        .replace(
            "RESTRICTED_CONTAINER",
            &restricted(kubespaces_acceptance::pods::restricted_container()),
        )
        .replace("IMAGE", &env.busybox_image());
    let app = tenant_app::manifests(&env.busybox_image(), &host, &answer);
    for manifest in [app, keeper] {
        let out = owner_kubectl(&env, &kubeconfig, &["apply", "-f", "-"], Some(&manifest));
        assert!(out.status.success(), "apply in the tenant: {}", text(&out));
    }
    in_tenant(
        &env,
        &kubeconfig,
        &[
            "wait",
            "pod/keeper",
            "--for=condition=Ready",
            "--timeout=120s",
        ],
    )
    .await;
    in_tenant(
        &env,
        &kubeconfig,
        &[
            "create",
            "configmap",
            "cycle-0",
            "--from-literal",
            "kept=yes",
        ],
    )
    .await;
    let answers = || async {
        retry_until(&format!("curl {url}"), Duration::from_secs(180), || {
            let out = curl(&url, &[]);
            match out.status.success() {
                true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
                false => Err(text(&out)),
            }
        })
        .await
    };
    assert_eq!(answers().await, answer);

    // Idle for its period: asleep by itself, and still Ready. Meanwhile the operator is asked to
    // look again every 2 s, and each time checks the tenant's API through its public route,
    // which must not count as activity.
    let mut polls = 0u32;
    let asleep = wait_for("the idle tenant to fall asleep", ASLEEP_WITHIN, || {
        polls += 1;
        let poke = polls % 8 == 1;
        let env = &env;
        let tenants = &tenants;
        async move {
            if poke {
                let token = format!("reconcile.fluxcd.io/requestedAt={}", Timestamp::now());
                env.kubectl_ok(&["annotate", "tenant", NAME, "--overwrite", &token], None);
            }
            let t = tenants.get_opt(NAME).await.ok().flatten()?;
            (t.phase() == Some(Phase::Asleep.as_str())).then_some(t)
        }
    })
    .await;
    assert!(
        polls > 8 * 5,
        "the operator was asked to look again at least 5 times"
    );
    let c = asleep.condition(conditions::ASLEEP).expect("Asleep");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "Idle"),
        "{}",
        c.message
    );
    let ready = asleep.condition(conditions::READY).expect("Ready");
    assert_eq!(ready.status, "True", "a sleeping tenant is not failing");
    assert_eq!(control_plane_pods(&pods).await, Vec::<String>::new());
    let replicas = statefulsets
        .get(cp::RELEASE)
        .await
        .expect("the StatefulSet is kept")
        .spec
        .replicas;
    assert_eq!(replicas, Some(0));
    assert_eq!(
        answers().await,
        answer,
        "the app answers while its tenant sleeps"
    );
    // Its workloads still resolve each other's names: the tenant's CoreDNS keeps running
    // (docs/sleep.md). Asked from the keeper's pod on the host: not through the tenant's API,
    // which would wake it.
    let keeper_on_host = format!("keeper-x-default-x-{}", cp::RELEASE);
    let service = "hello.default.svc.cluster.local";
    retry_until(
        &format!("{service} resolved in the keeper while its tenant sleeps"),
        Duration::from_secs(30),
        || {
            let out = env.exec(&ns, &keeper_on_host, &["nslookup", service]);
            let said = String::from_utf8_lossy(&out.stdout);
            if nslookup_addresses(&said, service).is_empty() {
                Err(text(&out))
            } else {
                Ok(())
            }
        },
    )
    .await;
    // Still asleep: nothing of that reached its API.
    phase(&tenants, NAME, Phase::Asleep, Duration::ZERO).await;

    // The first kubectl after the sleep: one try, no error, the answer from the woken control
    // plane, and the volume's data read through it.
    let value = once(
        &env,
        &kubeconfig,
        &["get", "configmap", "cycle-0", "-o", "jsonpath={.data.kept}"],
    );
    assert_eq!(value, "yes");
    let kept = once(
        &env,
        &kubeconfig,
        &["exec", "keeper", "--", "cat", "/data/kept"],
    );
    assert_eq!(kept.trim(), "written before any sleep");
    let woken = wait_ready(&tenants, NAME, READY_WITHIN).await;
    assert!(
        woken.condition(conditions::ASLEEP).is_none(),
        "awake: no Asleep condition"
    );
    let seen = phases.lock().map(|p| p.clone()).unwrap_or_default();
    let asleep_at = seen.iter().position(|p| p == "Asleep");
    let waking_at = seen.iter().rposition(|p| p == "Waking");
    assert!(
        matches!((asleep_at, waking_at), (Some(a), Some(w)) if a < w)
            && seen.last().map(String::as_str) == Some("Ready"),
        "phases seen: {seen:?}"
    );

    // Cycles by request: each time every object, the volume's data, the kubeconfig as handed out.
    for cycle in 1..=CYCLES {
        let name = format!("cycle-{cycle}");
        once(
            &env,
            &kubeconfig,
            &["create", "configmap", &name, "--from-literal", "kept=yes"],
        );
        request_sleep(&env, NAME);
        phase(&tenants, NAME, Phase::Asleep, ASLEEP_WITHIN).await;
        assert_eq!(
            control_plane_pods(&pods).await,
            Vec::<String>::new(),
            "cycle {cycle}"
        );
        let listed = once(&env, &kubeconfig, &["get", "configmaps", "-o", "name"]);
        for c in 0..=cycle {
            assert!(
                listed.lines().any(|l| l == format!("configmap/cycle-{c}")),
                "cycle-{c} after wake {cycle}: {listed}"
            );
        }
        let kept = once(
            &env,
            &kubeconfig,
            &["exec", "keeper", "--", "cat", "/data/kept"],
        );
        assert_eq!(kept.trim(), "written before any sleep", "wake {cycle}");
        let (_, now_handed_out) = owner_kubeconfig(&env, NAME).await;
        assert_eq!(
            now_handed_out, handed_out,
            "the kubeconfig handed out is kept"
        );
    }

    // Deleted while asleep: nothing is left, in its namespace or beside the waker.
    request_sleep(&env, NAME);
    phase(&tenants, NAME, Phase::Asleep, ASLEEP_WITHIN).await;
    delete_tenant(&env, NAME).await;
    let left = leftovers(&env, NAME, &ns);
    assert!(left.is_empty(), "left of a tenant deleted asleep: {left:?}");
}

#[tokio::test]
async fn a_wake_completes_across_restarts_of_the_operators_leader_and_of_the_nodes_containerd() {
    let env = Env::get();
    let tenants = env.tenants().await;
    if matches!(tenants.get_opt(RESTARTED).await, Ok(Some(_))) {
        delete_tenant(&env, RESTARTED).await;
    }
    env.apply(&tenant_with_idle_period(RESTARTED));
    wait_ready(&tenants, RESTARTED, READY_WITHIN).await;
    let (kubeconfig, _) = owner_kubeconfig(&env, RESTARTED).await;
    in_tenant(
        &env,
        &kubeconfig,
        &[
            "create",
            "configmap",
            "before",
            "--from-literal",
            "kept=yes",
        ],
    )
    .await;
    request_sleep(&env, RESTARTED);
    phase(&tenants, RESTARTED, Phase::Asleep, ASLEEP_WITHIN).await;

    // kubectl asks; once the tenant is Waking, the operator's leader is deleted (it steps down,
    // another takes over and finishes the wake).
    let child = kubectl_in_background(
        &kubeconfig,
        &["get", "configmap", "before", "-o", "jsonpath={.data.kept}"],
    );
    phase(&tenants, RESTARTED, Phase::Waking, ASLEEP_WITHIN).await;
    let namespace = platform_var("KUBESPACES_OPERATOR_NAMESPACE");
    let leader = env.kubectl_ok(
        &[
            "-n",
            &namespace,
            "get",
            "lease",
            "kubespaces-operator",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        None,
    );
    env.kubectl_ok(
        &[
            "-n",
            &namespace,
            "delete",
            "pod",
            leader.trim(),
            "--wait=false",
        ],
        None,
    );
    let out = succeeded(child, "the operator leader's restart").await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "yes");
    wait_ready(&tenants, RESTARTED, READY_WITHIN).await;

    // Again, and this time the node's containerd is restarted once the control plane's pod is
    // made, while the kubelet starts it (its sandbox, the init container's copy, the containers).
    request_sleep(&env, RESTARTED);
    phase(&tenants, RESTARTED, Phase::Asleep, ASLEEP_WITHIN).await;
    let child = kubectl_in_background(&kubeconfig, &["get", "configmap", "before"]);
    let pods: Api<Pod> = Api::namespaced(env.client().await, &names::namespace(RESTARTED));
    wait_for(
        "the control plane's pod made for the wake",
        ASLEEP_WITHIN,
        || async { (!control_plane_pods(&pods).await.is_empty()).then_some(()) },
    )
    .await;
    restart_node_process("containerd");
    succeeded(child, "containerd's restart").await;
    wait_ready(&tenants, RESTARTED, READY_WITHIN).await;
    delete_tenant(&env, RESTARTED).await;
}

/// `kubectl ARGS` against a tenant with `kubeconfig`, started and left running.
fn kubectl_in_background(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(platform_var("KUBESPACES_KUBECTL"))
        .args(["--kubeconfig", kubeconfig.to_str().expect("a UTF-8 path")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts")
}

/// What kubectl `child` printed, once it ended; it must have succeeded, across `what`.
async fn succeeded(child: std::process::Child, what: &str) -> std::process::Output {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("the wait")
        .expect("kubectl ran");
    assert!(
        out.status.success(),
        "kubectl across {what}: {}",
        text(&out)
    );
    out
}

/// Restarts one of the node's processes (acceptance/harness/node-restart.sh).
fn restart_node_process(process: &str) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../acceptance/harness/node-restart.sh");
    let state = std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE (make test sets it)");
    let out = Command::new(script)
        .args([state.as_str(), process])
        .output()
        .expect("node-restart.sh runs");
    assert!(
        out.status.success(),
        "restarting the node's {process}: {}",
        text(&out)
    );
}
