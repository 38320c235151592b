//! GitOps health: what Flux, Argo CD and kstatus say about a Tenant in each phase.
//!
//! `tenants_in_every_phase_match_the_fixtures` creates Tenants on the real cluster, with an
//! operator that runs their control planes as the chart's does, captures each at the moment it is
//! in the phase (new, provisioning: the control plane starting, ready, updated, failed, paused,
//! asleep, waking, deleting), strips what changes from run to run (uid, resourceVersion, timestamps,
//! managedFields, the quota's usage, the test cluster's domain) and compares them with `examples/health/testdata/<phase>.json` and the Argo CD test inputs
//! `examples/argocd/kubespaces.io/Tenant/testdata/<phase>.yaml` (`KUBESPACES_UPDATE_MANIFESTS=1`
//! rewrites them). `flux_argo_and_kstatus_verdicts_per_phase` runs those fixtures through the
//! shipped checks (`examples/flux/kustomization.yaml`, `examples/argocd/.../health.lua`) and
//! kstatus, with the libraries those tools use (the Go tool `acceptance/tools/health-check`),
//! and asserts the verdict per phase.

use std::{collections::BTreeMap, path::PathBuf, process::Command, time::Duration};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Namespace},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    control_planes::{pinned_digest, vcluster_flags},
    operator::{OperatorProcess, sharded_tenant},
    tenant_cluster::platform_var,
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    conditions::{
        API_ROUTE_ACCEPTED, APPS_READINESS, CONTROL_PLANE_READY, DELETION_BLOCKED, HOST_READINESS,
        SYNCED,
    },
    names::{SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION},
};
use serde_json::{Value, json};

const SHARD: &str = "health";
/// The control planes of this shard's operator never start (see [`NEVER_STARTS`]): its Tenants
/// stay Provisioning.
const SHARD_STARTING: &str = "health-starting";
/// No operator serves this shard: its Tenants keep the state of a Tenant no operator has seen.
const SHARD_UNSERVED: &str = "health-unserved";
/// The vCluster values that keep a control plane starting: a syncer image the node does not
/// have, and never pulled (nothing leaves this machine).
const NEVER_STARTS: &str = "controlPlane:\n  statefulSet:\n    image:\n      tag: never-built\n    imagePullPolicy: Never\n";
const TIMEOUT: Duration = Duration::from_secs(90);
/// A control plane starts, or is torn down, within this on the test node.
const CONTROL_PLANE_TIMEOUT: Duration = Duration::from_secs(300);
/// The Tenants this test makes.
const TENANTS: [&str; 4] = [
    "health-new",
    "health-provisioning",
    "health-failed",
    "health-ready",
];

/// The phases captured, in the order of the verdict table.
const PHASES: [&str; 9] = [
    "new",
    "provisioning",
    "ready",
    "updated",
    "failed",
    "paused",
    "asleep",
    "waking",
    "deleting",
];

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn fixture(phase: &str) -> PathBuf {
    repo().join(format!("examples/health/testdata/{phase}.json"))
}

const ARGO_DIR: &str = "examples/argocd/kubespaces.io/Tenant";

fn argo_input(phase: &str) -> PathBuf {
    repo().join(format!("{ARGO_DIR}/testdata/{phase}.yaml"))
}

/// Where ControlPlaneReady's message goes on with what the control plane's pod waits for.
const WAITING_FOR: &str = "is not ready yet: ";

/// The object as committed: without what differs from run to run.
fn normalize(tenant: &Tenant) -> Value {
    let mut v = serde_json::to_value(tenant).expect("tenant as JSON");
    let meta = v["metadata"].as_object_mut().expect("metadata");
    for field in [
        "uid",
        "resourceVersion",
        "managedFields",
        "creationTimestamp",
    ] {
        meta.remove(field);
    }
    if meta.contains_key("deletionTimestamp") {
        meta.insert("deletionTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    }
    // Sleep and wake requests hold the time they were made.
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        for request in [SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION] {
            if annotations.contains_key(request) {
                annotations.insert(request.into(), json!("2026-01-01T00:00:00Z"));
            }
        }
    }
    // What the quota controller counted depends on when it last looked (the namespace's
    // kube-root-ca.crt ConfigMap, for one): no health check reads it.
    if let Some(quota) = v
        .pointer_mut("/status/quota")
        .and_then(Value::as_object_mut)
    {
        quota.remove("used");
    }
    if let Some(conditions) = v
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for c in conditions {
            if c.get("lastTransitionTime").is_some() {
                c["lastTransitionTime"] = json!("2026-01-01T00:00:00Z");
            }
            // What the control plane's pod waits for alternates as the kubelet retries
            // (ErrImagePull, then ImagePullBackOff): the fixtures keep what comes before it.
            if let Some(m) = c["message"].as_str()
                && let Some(at) = m.find(WAITING_FOR)
            {
                c["message"] = json!(m[..at + WAITING_FOR.len() - 2]);
            }
        }
    }
    // The test cluster's domain is its state directory's name: the fixtures name none.
    let text = v.to_string().replace(
        &format!(".{}", platform_var("KUBESPACES_DOMAIN")),
        ".kubespaces.example",
    );
    serde_json::from_str(&text).expect("the normalized JSON")
}

/// Compares `tenant` with its fixture and Argo CD test input, or writes both when
/// KUBESPACES_UPDATE_MANIFESTS is set.
fn record(phase: &str, tenant: &Tenant) {
    let v = normalize(tenant);
    let json_text = serde_json::to_string_pretty(&v).unwrap() + "\n";
    let yaml_text = serde_yaml::to_string(&v).unwrap();
    let files = [(fixture(phase), json_text), (argo_input(phase), yaml_text)];
    if std::env::var_os("KUBESPACES_UPDATE_MANIFESTS").is_some() {
        for (path, text) in &files {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        return;
    }
    for (path, text) in &files {
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(
            &committed,
            text,
            "{} differs from the Tenant captured in phase {phase} \
             (KUBESPACES_UPDATE_MANIFESTS=1 rewrites it)",
            path.display()
        );
    }
}

fn spec() -> TenantSpec {
    TenantSpec::new("health@example.com", "1", "1Gi", None)
}

async fn merge(tenants: &Api<Tenant>, name: &str, patch: Value) -> Tenant {
    tenants
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch {name}: {e}"))
}

async fn get_when(
    tenants: &Api<Tenant>,
    name: &str,
    what: &str,
    check: impl Fn(&Tenant) -> bool,
) -> Tenant {
    wait_for(&format!("{name}: {what}"), TIMEOUT, || async {
        tenants.get_opt(name).await.ok().flatten().filter(&check)
    })
    .await
}

/// health-new has the teardown finalizer (the admission policy puts it on every new Tenant) and
/// no operator to remove it: removes it.
async fn release_unserved(tenants: &Api<Tenant>) {
    let release = json!({"metadata": {"finalizers": null}});
    let _ = tenants
        .patch(
            "health-new",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await;
}

#[tokio::test]
async fn tenants_in_every_phase_match_the_fixtures() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    // Both operators run tenant control planes, under the chart's roles, as the chart's does.
    let flags = vcluster_flags(&pinned_digest(), &[]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &flags).await;
    let dir =
        std::env::var("KUBESPACES_STATE").map_or_else(|_| std::env::temp_dir(), PathBuf::from);
    let never_starts = dir.join("health-never-starts.yaml");
    std::fs::write(&never_starts, NEVER_STARTS).expect("values file");
    let starting = vcluster_flags(&pinned_digest(), &[&never_starts]);
    let starting: Vec<&str> = starting.iter().map(String::as_str).collect();
    let _starting = OperatorProcess::start_least_privileged(
        &client,
        env.operator_bin(),
        SHARD_STARTING,
        &starting,
    )
    .await;
    // Leftovers of an earlier run (their operators tear them down).
    for name in TENANTS {
        let resume = json!({"metadata": {"annotations": {"crossplane.io/paused": null}}});
        let _ = tenants
            .patch(name, &PatchParams::default(), &Patch::Merge(&resume))
            .await;
        let _ = tenants.delete(name, &DeleteParams::default()).await;
    }
    release_unserved(&tenants).await;
    let _ = namespaces
        .delete("kubespaces-tenant-health-failed", &DeleteParams::default())
        .await;
    for name in TENANTS {
        wait_gone(&tenants, name, CONTROL_PLANE_TIMEOUT).await;
    }
    wait_gone(&namespaces, "kubespaces-tenant-health-failed", TIMEOUT).await;
    let create = |name: &'static str, shard: &'static str| {
        let tenants = tenants.clone();
        async move {
            tenants
                .create(&PostParams::default(), &sharded_tenant(name, spec(), shard))
                .await
                .unwrap_or_else(|e| panic!("create {name}: {e}"))
        }
    };

    // new: as every Tenant is until an operator's first reconcile, no status at all.
    let new = create("health-new", SHARD_UNSERVED).await;
    assert!(new.status.is_none());
    record("new", &new);
    tenants
        .delete("health-new", &DeleteParams::default())
        .await
        .expect("delete health-new");
    release_unserved(&tenants).await;

    // provisioning: the host side, the route and the apps listener are done, and the control
    // plane is starting: its objects are applied, its pod not running yet. (Its syncer image is
    // one the node does not have, so it stays so while this looks.)
    create("health-provisioning", SHARD_STARTING).await;
    let t = get_when(
        &tenants,
        "health-provisioning",
        "the control plane starting, everything else done",
        |t| {
            let done = |c: &&str| t.condition(c).is_some_and(|c| c.status == "True");
            t.phase() == Some("Provisioning")
                && HOST_READINESS.iter().all(&done)
                && APPS_READINESS.iter().all(&done)
                && done(&API_ROUTE_ACCEPTED)
                && t.condition(CONTROL_PLANE_READY).is_some_and(|c| {
                    // It says why: its pod's syncer waits for an image that cannot be pulled.
                    c.reason == "Starting"
                        && c.message.contains(
                            "is not ready yet: container syncer of pod vcluster-0 is waiting: ",
                        )
                        && c.message.contains("Image")
                })
        },
    )
    .await;
    record("provisioning", &t);
    tenants
        .delete("health-provisioning", &DeleteParams::default())
        .await
        .expect("delete health-provisioning");

    // failed: the namespace belongs to someone else.
    let squatted: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "kubespaces-tenant-health-failed"}}))
            .unwrap();
    namespaces
        .create(&PostParams::default(), &squatted)
        .await
        .expect("squatted namespace");
    create("health-failed", SHARD).await;
    let t = get_when(&tenants, "health-failed", "Failed", |t| {
        t.phase() == Some("Failed")
    })
    .await;
    record("failed", &t);
    tenants
        .delete("health-failed", &DeleteParams::default())
        .await
        .expect("delete health-failed");

    // ready: a tenant with its control plane up. The phases after it are the same tenant's.
    let name = "health-ready";
    create(name, SHARD).await;
    let t = wait_ready(&tenants, name, CONTROL_PLANE_TIMEOUT).await;
    assert!(
        t.status
            .as_ref()
            .and_then(|s| s.control_plane.as_ref())
            .is_some(),
        "a Ready tenant of this operator has a control plane: {t:?}"
    );
    record("ready", &t);

    // updated: the spec changed and no operator has looked yet (it is stopped meanwhile).
    operator.kill();
    merge(&tenants, name, json!({"spec": {"resources": {"cpu": "2"}}})).await;
    let t = tenants.get(name).await.expect("get health-ready");
    assert_eq!(t.metadata.generation, Some(2));
    record("updated", &t);
    operator.restart().await;
    let t = wait_ready(&tenants, name, CONTROL_PLANE_TIMEOUT).await;
    assert_eq!(t.metadata.generation, Some(2));

    // paused, then changed: the change waits.
    let pause = |paused: Option<&str>| json!({"metadata": {"annotations": {"crossplane.io/paused": paused}}});
    merge(&tenants, name, pause(Some("true"))).await;
    get_when(&tenants, name, "ReconcilePaused", |t| {
        t.condition(SYNCED)
            .is_some_and(|c| c.reason == "ReconcilePaused")
    })
    .await;
    merge(&tenants, name, json!({"spec": {"resources": {"cpu": "3"}}})).await;
    let t = get_when(&tenants, name, "ReconcilePaused at generation 3", |t| {
        t.metadata.generation == Some(3)
            && t.condition(SYNCED)
                .is_some_and(|c| c.reason == "ReconcilePaused" && c.observed_generation == Some(3))
    })
    .await;
    record("paused", &t);
    merge(&tenants, name, pause(None)).await;
    wait_ready(&tenants, name, CONTROL_PLANE_TIMEOUT).await;

    // asleep, then waking: a sleep request, then a wake request (this operator runs without the
    // waker: requests alone put it to sleep and wake it).
    let request = |annotation: &str| json!({"metadata": {"annotations": {annotation: Timestamp::now().to_string()}}});
    merge(&tenants, name, request(SLEEP_REQUESTED_ANNOTATION)).await;
    let t = get_when(&tenants, name, "Asleep", |t| t.phase() == Some("Asleep")).await;
    record("asleep", &t);
    merge(&tenants, name, request(WAKE_REQUESTED_ANNOTATION)).await;
    let t = get_when(&tenants, name, "Waking", |t| t.phase() == Some("Waking")).await;
    record("waking", &t);
    wait_ready(&tenants, name, CONTROL_PLANE_TIMEOUT).await;

    // deleting: a ConfigMap with a finalizer nobody removes holds the namespace once the
    // control plane is gone.
    let held = "kubespaces-tenant-health-ready";
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), held);
    let hold: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "hold", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    configmaps
        .create(&PostParams::default(), &hold)
        .await
        .expect("configmap with a finalizer");
    tenants
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete health-ready");
    let t = get_when(
        &tenants,
        name,
        "DeletionBlocked naming the finalizer, once the held ConfigMap is all that is left",
        |t| {
            t.condition(DELETION_BLOCKED).is_some_and(|c| {
                c.message.contains("example.com/hold")
                    && c.message.contains(
                        "Some resources are remaining: configmaps. has 1 resource instances;",
                    )
            })
        },
    )
    .await;
    record("deleting", &t);
    configmaps
        .patch(
            "hold",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the configmap");

    // Clean up.
    for name in TENANTS {
        wait_gone(&tenants, name, CONTROL_PLANE_TIMEOUT).await;
    }
    namespaces
        .delete("kubespaces-tenant-health-failed", &DeleteParams::default())
        .await
        .expect("delete the squatted namespace");
}

/// The health-check tool built by `build-tools.sh --with health-check`.
fn health_check_bin() -> PathBuf {
    kubespaces_acceptance::built_tool("health-check", "health-check")
}

/// The verdicts of the shipped checks and kstatus for every fixture: phase -> tool -> verdict.
fn verdicts() -> BTreeMap<String, BTreeMap<String, (String, String)>> {
    let out = Command::new(health_check_bin())
        .current_dir(repo())
        .args([
            "--json",
            "--flux",
            "examples/flux/kustomization.yaml",
            "--argo",
            ARGO_DIR,
        ])
        .args(PHASES.map(|p| format!("examples/health/testdata/{p}.json")))
        .output()
        .expect("run health-check");
    assert!(
        out.status.success(),
        "health-check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let row: BTreeMap<String, String> = serde_json::from_str(line).expect("a JSON row");
            let tools = ["flux", "argo", "kstatus"]
                .map(|t| {
                    let message = row.get(&format!("{t}Message")).cloned().unwrap_or_default();
                    (t.to_owned(), (row[t].clone(), message))
                })
                .into();
            (row["object"].clone(), tools)
        })
        .collect()
}

#[test]
fn the_argocd_cm_snippet_holds_the_tested_script() {
    let cm: Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("examples/argocd/argocd-cm.yaml")).unwrap(),
    )
    .expect("argocd-cm.yaml");
    let script = std::fs::read_to_string(repo().join(format!("{ARGO_DIR}/health.lua"))).unwrap();
    assert_eq!(
        cm["data"]["resource.customizations.health.kubespaces.io_Tenant"].as_str(),
        Some(script.as_str()),
        "examples/argocd/argocd-cm.yaml differs from {ARGO_DIR}/health.lua"
    );
}

#[test]
fn flux_argo_and_kstatus_verdicts_per_phase() {
    let expected: [(&str, &str, &str, &str); 9] = [
        // phase          Flux (healthCheckExprs)  Argo CD (health.lua)  kstatus
        ("new", "Unknown", "Progressing", "Current"),
        ("provisioning", "InProgress", "Progressing", "InProgress"),
        ("ready", "Current", "Healthy", "Current"),
        ("updated", "InProgress", "Progressing", "InProgress"),
        ("failed", "Failed", "Degraded", "Failed"),
        ("paused", "InProgress", "Suspended", "InProgress"),
        ("asleep", "Current", "Healthy", "Current"),
        ("waking", "InProgress", "Progressing", "InProgress"),
        ("deleting", "InProgress", "Progressing", "Terminating"),
    ];
    let got = verdicts();
    println!(
        "{:<14} {:<11} {:<12} {:<12}",
        "phase", "flux", "argo", "kstatus"
    );
    for phase in PHASES {
        let row = &got[phase];
        println!(
            "{phase:<14} {:<11} {:<12} {:<12}",
            row["flux"].0, row["argo"].0, row["kstatus"].0
        );
    }
    for (phase, row) in &got {
        for tool in ["flux", "argo", "kstatus"] {
            println!("  {phase} {tool}: {}", row[tool].1);
        }
    }
    let mut wrong = Vec::new();
    for (phase, flux, argo, kstatus) in expected {
        let row = &got[phase];
        for (tool, want) in [("flux", flux), ("argo", argo), ("kstatus", kstatus)] {
            if row[tool].0 != want {
                wrong.push(format!(
                    "{phase} {tool}: {} ({}), expected {want}",
                    row[tool].0, row[tool].1
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "unexpected verdicts:\n{}",
        wrong.join("\n")
    );

    // The shipped checks never call a Tenant healthy unless it is Ready at its generation.
    for phase in PHASES {
        let tenant: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture(phase)).unwrap()).unwrap();
        let generation = &tenant["metadata"]["generation"];
        let ready_now = tenant
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "Ready"
                        && c["status"] == "True"
                        && &c["observedGeneration"] == generation
                })
            })
            && tenant.pointer("/metadata/deletionTimestamp").is_none();
        let row = &got[phase];
        if row["flux"].0 == "Current" || row["argo"].0 == "Healthy" {
            assert!(
                ready_now,
                "{phase}: reported healthy ({row:?}) but not Ready at its generation"
            );
        }
    }
    for phase in ["new", "provisioning", "updated"] {
        assert_ne!(
            got[phase]["flux"].0, "Current",
            "Flux calls a {phase} Tenant healthy"
        );
        assert_ne!(
            got[phase]["argo"].0, "Healthy",
            "Argo CD calls a {phase} Tenant healthy"
        );
    }
}
