//! A tenant's life on the host, driven with kubectl as a user would, against the real control
//! plane and the shared operator.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace, Pod, ResourceQuota},
    rbac::v1::RoleBinding,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env, own_share, pods, pods::retry_until_async, tenant_yaml, wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{api::Tenant, conditions, names};
use serde_json::json;

/// Ready includes the tenant's own control plane (its first start: under a minute alone, more
/// while other tests start theirs).
const READY_TIMEOUT: Duration = Duration::from_secs(300);

fn hard(q: &ResourceQuota, key: &str) -> String {
    q.spec
        .as_ref()
        .and_then(|s| s.hard.as_ref())
        .and_then(|h| h.get(key))
        .map(|v| v.0.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_spec_tenant_becomes_a_capped_namespace() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let client = env.client().await;
    // The example users are pointed at, applied as is.
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/tenant.yaml"
    ))
    .expect("examples/tenant.yaml");
    assert!(manifest.contains("name: team-atlas"));
    // Other tests use this name too: one that failed may have left its tenant, with its own
    // workloads counted in the quota, and this test must start from nothing.
    pods::delete_tenant(&env, "team-atlas").await;
    env.apply(&manifest);
    let tenant = wait_ready(&tenants, "team-atlas", READY_TIMEOUT).await;

    // Status: the phase, the namespace, Ready and Synced present, Reconciling gone.
    let status = tenant.status.clone().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Ready"));
    assert_eq!(
        status.namespace.as_deref(),
        Some("kubespaces-tenant-team-atlas")
    );
    assert_eq!(status.observed_generation, tenant.metadata.generation);
    let ready = tenant.condition(conditions::READY).expect("Ready");
    assert_eq!(ready.reason, "Available");
    assert!(
        ready
            .message
            .contains("the tenant control plane answers at https://team-atlas.api."),
        "Ready says what it means: {}",
        ready.message
    );
    assert_eq!(
        tenant
            .condition(conditions::SYNCED)
            .map(|c| c.status.as_str()),
        Some("True")
    );
    assert!(tenant.condition(conditions::RECONCILING).is_none());
    assert!(tenant.condition(conditions::STALLED).is_none());
    assert!(tenant.has_teardown_finalizer());

    // kubectl get tenants shows the columns users read.
    let table = env.kubectl_ok(&["get", "tenants"], None);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&header[..3], ["NAME", "PHASE", "API"], "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("team-atlas "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(" Ready "), "{row}");
    assert!(
        env.kubectl_ok(&["get", "kubespaces"], None)
            .contains("team-atlas"),
        "category works"
    );

    // The namespace, its labels.
    let ns_name = "kubespaces-tenant-team-atlas";
    let ns = Api::<Namespace>::all(client.clone())
        .get(ns_name)
        .await
        .expect("namespace");
    let labels = ns.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get(names::TENANT_LABEL).map(String::as_str),
        Some("team-atlas")
    );
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("restricted")
    );
    for mode in ["enforce", "warn"] {
        assert_eq!(
            labels
                .get(&format!("pod-security.kubernetes.io/{mode}-version"))
                .map(String::as_str),
            Some("v1.37"),
            "the {mode} level is pinned to a version of the standards"
        );
    }

    // The quota: cpu 8, memory 16Gi, storage 50Gi for the tenant's own workloads (plus what its
    // control plane takes, status.controlPlane.footprint).
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns_name);
    let quota = quotas.get(names::QUOTA).await.expect("quota");
    assert_eq!(own_share(&quota, &tenant, "hard", "requests.cpu"), "8");
    assert_eq!(own_share(&quota, &tenant, "hard", "limits.cpu"), "8");
    assert_eq!(
        own_share(&quota, &tenant, "hard", "requests.memory"),
        "16Gi"
    );
    assert_eq!(own_share(&quota, &tenant, "hard", "limits.memory"), "16Gi");
    assert_eq!(
        own_share(&quota, &tenant, "hard", "requests.storage"),
        "50Gi"
    );
    // Ephemeral storage (the node's disk) is the platform's per-tenant budget.
    for key in ["requests.ephemeral-storage", "limits.ephemeral-storage"] {
        assert_eq!(own_share(&quota, &tenant, "hard", key), "10Gi", "{key}");
    }
    // Object counts are capped; node ports and load balancers are none.
    assert_eq!(hard(&quota, "pods"), "200");
    assert_eq!(hard(&quota, "services"), "50");
    assert_eq!(hard(&quota, "services.nodeports"), "0");
    assert_eq!(hard(&quota, "services.loadbalancers"), "0");

    // A pod that states no resources is admitted with the LimitRange defaults.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns_name);
    let plain: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
        "spec": {"securityContext": pods::restricted_pod(),
            "containers": [{"name": "app", "image": "nginx", "securityContext": pods::restricted_container()}]}
    }))
    .unwrap();
    let created = pods
        .create(&PostParams::default(), &plain)
        .await
        .expect("a pod without resources is admitted");
    let resources = created.spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap_or_default();
    assert_eq!(
        resources
            .limits
            .unwrap_or_default()
            .get("cpu")
            .map(|q| q.0.as_str()),
        Some("500m")
    );
    assert_eq!(
        resources
            .requests
            .unwrap_or_default()
            .get("memory")
            .map(|q| q.0.as_str()),
        Some("128Mi")
    );

    // A pod over the quota is refused by the API server.
    let greedy: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "greedy"},
        "spec": {"securityContext": pods::restricted_pod(),
            "containers": [{"name": "app", "image": "nginx", "securityContext": pods::restricted_container(),
            "resources": {"requests": {"cpu": "9"}, "limits": {"cpu": "9"}}}]}
    }))
    .unwrap();
    let refused = pods
        .create(&PostParams::default(), &greedy)
        .await
        .expect_err("over quota");
    let kube::Error::Api(status) = refused else {
        panic!("expected an API error, got {refused}")
    };
    assert_eq!(status.code, 403);
    assert!(
        status.message.contains("exceeded quota"),
        "{}",
        status.message
    );

    // Usage is computed by the controller-manager and shown in the Tenant's status.
    retry_until_async(
        "quota usage to include the plain pod",
        READY_TIMEOUT,
        || async {
            let t = tenants.get("team-atlas").await.map_err(|e| e.to_string())?;
            let q = quotas.get(names::QUOTA).await.map_err(|e| e.to_string())?;
            let own = own_share(&q, &t, "used", "requests.cpu");
            if own == "100m" {
                return Ok(());
            }
            // What the quota counts, pod by pod, says why the share is not the plain pod's.
            let listed = pods
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let counted: Vec<String> = listed
                .iter()
                .map(|p| {
                    let phase = p.status.as_ref().and_then(|s| s.phase.clone());
                    format!("{} {}", p.name_any(), phase.unwrap_or_default())
                })
                .collect();
            Err(format!(
                "own requests.cpu {own}; quota used {:?}; footprint {:?}; pods {counted:?}",
                q.status
                    .and_then(|s| s.used)
                    .and_then(|u| u.get("requests.cpu").cloned()),
                t.status.and_then(|s| s.control_plane).map(|c| c.footprint)
            ))
        },
    )
    .await;
    pods::delete_tenant(&env, "team-atlas").await;
}

#[tokio::test]
async fn the_owner_can_work_in_their_namespace_and_nowhere_else() {
    let env = Env::get();
    let tenants = env.tenants().await;
    env.apply(&tenant_yaml(
        "rbac-alice",
        "alice@example.com",
        "2",
        "2Gi",
        None,
    ));
    env.apply(&tenant_yaml(
        "rbac-bob",
        "bob@example.com",
        "2",
        "2Gi",
        None,
    ));
    wait_ready(&tenants, "rbac-alice", READY_TIMEOUT).await;
    wait_ready(&tenants, "rbac-bob", READY_TIMEOUT).await;
    let (mine, theirs) = ("kubespaces-tenant-rbac-alice", "kubespaces-tenant-rbac-bob");
    let as_alice = |args: &[&str]| {
        let mut all = vec!["--as", "alice@example.com"];
        all.extend_from_slice(args);
        env.kubectl(&all, None)
    };
    // Server-side dry runs pass authorization and admission like real requests, and leave
    // nothing behind.
    let ok = as_alice(&[
        "-n",
        mine,
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--dry-run=server",
    ]);
    assert!(
        ok.status.success(),
        "alice deploys in her namespace: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for args in [
        vec![
            "-n",
            theirs,
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--dry-run=server",
        ],
        vec!["-n", theirs, "get", "secrets"],
        vec!["-n", "default", "get", "secrets"],
        vec!["-n", "kube-system", "get", "secrets"],
        vec!["get", "namespaces"],
        // The platform's guard rails are read-only for her.
        vec!["-n", mine, "delete", "resourcequota", names::QUOTA],
        vec!["-n", mine, "delete", "limitrange", names::LIMIT_RANGE],
        vec!["-n", mine, "delete", "networkpolicy", names::NETWORK_POLICY],
    ] {
        let out = as_alice(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.to_lowercase().contains("forbidden"),
            "alice must be refused `{}`: {err}",
            args.join(" ")
        );
    }
    let ok = as_alice(&["-n", mine, "get", "secrets"]);
    assert!(
        ok.status.success(),
        "alice reads secrets in her namespace: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for name in ["rbac-alice", "rbac-bob"] {
        pods::delete_tenant(&env, name).await;
    }
}

#[tokio::test]
async fn updates_reach_the_quota_and_drift_is_undone() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let client = env.client().await;
    env.apply(&tenant_yaml(
        "drift",
        "carol@example.com",
        "8",
        "16Gi",
        Some("50Gi"),
    ));
    let before = wait_ready(&tenants, "drift", READY_TIMEOUT).await;
    let ns = "kubespaces-tenant-drift";
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);

    // cpu 8 -> 12: the quota follows and Ready is reported for the new generation.
    env.apply(&tenant_yaml(
        "drift",
        "carol@example.com",
        "12",
        "16Gi",
        Some("50Gi"),
    ));
    let after = wait_ready(&tenants, "drift", READY_TIMEOUT).await;
    assert!(after.metadata.generation > before.metadata.generation);
    assert_eq!(
        after.status.as_ref().and_then(|s| s.observed_generation),
        after.metadata.generation
    );
    let quota = quotas.get(names::QUOTA).await.unwrap();
    assert_eq!(own_share(&quota, &after, "hard", "requests.cpu"), "12");
    assert_eq!(own_share(&quota, &after, "hard", "limits.cpu"), "12");

    // Someone raises the quota by hand: it is set back.
    let raise = json!({"spec": {"hard": {"requests.cpu": "99"}}});
    quotas
        .patch(names::QUOTA, &PatchParams::default(), &Patch::Merge(&raise))
        .await
        .expect("edit quota");
    wait_for("the quota edit to be undone", READY_TIMEOUT, || async {
        let q = quotas.get(names::QUOTA).await.ok()?;
        (own_share(&q, &after, "hard", "requests.cpu") == "12").then_some(())
    })
    .await;

    // Someone deletes the LimitRange: it comes back.
    let limits: Api<LimitRange> = Api::namespaced(client.clone(), ns);
    limits
        .delete(names::LIMIT_RANGE, &DeleteParams::default())
        .await
        .expect("delete limitrange");
    wait_for("the LimitRange to be recreated", READY_TIMEOUT, || async {
        limits
            .get_opt(names::LIMIT_RANGE)
            .await
            .ok()
            .flatten()
            .filter(|l| l.metadata.deletion_timestamp.is_none())
    })
    .await;
    wait_ready(&tenants, "drift", READY_TIMEOUT).await;
    pods::delete_tenant(&env, "drift").await;
}

#[tokio::test]
async fn deletion_tears_everything_down_unless_told_to_orphan() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let namespaces: Api<Namespace> = Api::all(env.client().await);
    env.apply(&tenant_yaml("doomed", "dave@example.com", "1", "1Gi", None));
    let orphan_yaml = tenant_yaml("kept", "erin@example.com", "1", "1Gi", None)
        .replace("spec:\n", "spec:\n  deletionPolicy: Orphan\n");
    env.apply(&orphan_yaml);
    wait_ready(&tenants, "doomed", READY_TIMEOUT).await;
    wait_ready(&tenants, "kept", READY_TIMEOUT).await;
    // Something running in the tenant namespace when it is deleted.
    env.kubectl_ok(
        &[
            "-n",
            "kubespaces-tenant-doomed",
            "create",
            "deployment",
            "web",
            "--image=nginx",
        ],
        None,
    );

    env.kubectl_ok(&["delete", "tenant", "doomed", "--wait=false"], None);
    wait_gone(&tenants, "doomed", Duration::from_secs(120)).await;
    // The finalizer went only once the namespace was really gone, not merely Terminating.
    assert!(
        namespaces
            .get_opt("kubespaces-tenant-doomed")
            .await
            .unwrap()
            .is_none(),
        "namespace must be gone"
    );
    assert_eq!(
        pods::leftovers(&env, "doomed", &names::namespace("doomed")),
        Vec::<String>::new()
    );

    env.kubectl_ok(&["delete", "tenant", "kept"], None);
    wait_gone(&tenants, "kept", Duration::from_secs(60)).await;
    let ns = namespaces
        .get("kubespaces-tenant-kept")
        .await
        .expect("Orphan keeps the namespace");
    assert!(ns.metadata.deletion_timestamp.is_none());
    assert!(
        ns.metadata.owner_references.unwrap_or_default().is_empty(),
        "no owner reference left for the GC to act on"
    );
    let quotas: Api<ResourceQuota> = Api::namespaced(env.client().await, "kubespaces-tenant-kept");
    assert!(
        quotas.get_opt(names::QUOTA).await.unwrap().is_some(),
        "Orphan keeps the contents too"
    );

    // What was left goes to no one else: a new Tenant of that name for another owner stalls on
    // the namespace, and the earlier owner's binding stays as it was.
    env.apply(&tenant_yaml(
        "kept",
        "mallory@example.com",
        "1",
        "1Gi",
        None,
    ));
    let refused = wait_for(
        "the other owner's tenant to stall on the namespace",
        READY_TIMEOUT,
        || async {
            let t = tenants.get("kept").await.ok()?;
            t.condition(conditions::NAMESPACE_READY)
                .filter(|c| c.reason == "NamespaceConflict")
                .map(|c| c.message.clone())
        },
    )
    .await;
    assert!(
        refused.contains("by an earlier tenant of another owner")
            && !refused.contains("erin@example.com"),
        "{refused}"
    );
    let bindings: Api<RoleBinding> = Api::namespaced(env.client().await, "kubespaces-tenant-kept");
    let subjects = bindings
        .get(names::OWNER_ROLE_BINDING)
        .await
        .unwrap()
        .subjects;
    assert_eq!(
        subjects.unwrap_or_default()[0].name,
        "erin@example.com",
        "the earlier owner's binding is untouched"
    );
    env.kubectl_ok(&["delete", "tenant", "kept"], None);
    wait_gone(&tenants, "kept", Duration::from_secs(60)).await;
    assert!(
        namespaces
            .get_opt("kubespaces-tenant-kept")
            .await
            .unwrap()
            .is_some(),
        "a namespace that was not the tenant's is left alone by its teardown"
    );

    // The same owner takes it back, contents and all; deleted with the default policy, it goes.
    env.apply(&tenant_yaml("kept", "erin@example.com", "1", "1Gi", None));
    wait_ready(&tenants, "kept", READY_TIMEOUT).await;
    env.kubectl_ok(&["delete", "tenant", "kept", "--wait=false"], None);
    wait_gone(&tenants, "kept", Duration::from_secs(120)).await;
    assert!(
        namespaces
            .get_opt("kubespaces-tenant-kept")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_paused_tenant_is_left_alone_until_resumed() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let quotas: Api<ResourceQuota> =
        Api::namespaced(env.client().await, "kubespaces-tenant-paused");
    env.apply(&tenant_yaml(
        "paused",
        "frank@example.com",
        "2",
        "2Gi",
        None,
    ));
    wait_ready(&tenants, "paused", READY_TIMEOUT).await;
    env.kubectl_ok(
        &["annotate", "tenant", "paused", "crossplane.io/paused=true"],
        None,
    );
    wait_for("Synced=False/ReconcilePaused", READY_TIMEOUT, || async {
        let t = tenants.get("paused").await.ok()?;
        t.condition(conditions::SYNCED)
            .filter(|c| c.status == "False" && c.reason == "ReconcilePaused")
            .map(|_| ())
    })
    .await;
    env.kubectl_ok(
        &[
            "patch",
            "tenant",
            "paused",
            "--type=merge",
            "-p",
            r#"{"spec":{"resources":{"cpu":"3"}}}"#,
        ],
        None,
    );
    // The operator has seen the new spec once Synced speaks for its generation; paused, it says
    // ReconcilePaused there, and a Synced=True at that generation is a reconcile it should not
    // have done.
    let changed = tenants
        .get("paused")
        .await
        .unwrap()
        .metadata
        .generation
        .expect("a generation");
    let seen = wait_for(
        &format!("Synced=False/ReconcilePaused at generation {changed}"),
        READY_TIMEOUT,
        || async {
            let t = tenants.get("paused").await.ok()?;
            let synced = t
                .condition(conditions::SYNCED)
                .filter(|c| c.observed_generation == Some(changed))?;
            assert_eq!(
                (synced.status.as_str(), synced.reason.as_str()),
                ("False", "ReconcilePaused"),
                "paused, yet the operator synced generation {changed}: {synced:?}"
            );
            Some(t)
        },
    )
    .await;
    assert!(!seen.is_ready(), "Ready does not claim the paused spec");
    assert_eq!(
        own_share(
            &quotas.get(names::QUOTA).await.unwrap(),
            &seen,
            "hard",
            "requests.cpu"
        ),
        "2",
        "paused: the spec change waits"
    );
    env.kubectl_ok(
        &["annotate", "tenant", "paused", "crossplane.io/paused-"],
        None,
    );
    let resumed = wait_ready(&tenants, "paused", READY_TIMEOUT).await;
    assert_eq!(
        own_share(
            &quotas.get(names::QUOTA).await.unwrap(),
            &resumed,
            "hard",
            "requests.cpu"
        ),
        "3"
    );
    pods::delete_tenant(&env, "paused").await;
}

#[tokio::test]
async fn a_namespace_that_belongs_to_someone_else_is_a_permanent_failure() {
    let env = Env::get();
    let tenants = env.tenants().await;
    let namespaces: Api<Namespace> = Api::all(env.client().await);
    let squatted: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "kubespaces-tenant-squatter"}}))
            .unwrap();
    namespaces
        .create(&PostParams::default(), &squatted)
        .await
        .expect("pre-existing namespace");
    env.apply(&tenant_yaml(
        "squatter",
        "grace@example.com",
        "1",
        "1Gi",
        None,
    ));
    let failed: Tenant = wait_for("the tenant to fail", READY_TIMEOUT, || async {
        tenants
            .get("squatter")
            .await
            .ok()
            .filter(|t| t.phase() == Some("Failed"))
    })
    .await;
    let stalled = failed.condition(conditions::STALLED).expect("Stalled");
    assert_eq!(stalled.reason, "NamespaceConflict");
    assert!(
        stalled.message.contains("kubespaces-tenant-squatter"),
        "{}",
        stalled.message
    );
    assert_eq!(
        failed.status.as_ref().and_then(|s| s.observed_generation),
        failed.metadata.generation
    );
    // Deleting the tenant leaves the namespace it never owned alone.
    env.kubectl_ok(&["delete", "tenant", "squatter"], None);
    wait_gone(&tenants, "squatter", Duration::from_secs(60)).await;
    let ns = namespaces
        .get("kubespaces-tenant-squatter")
        .await
        .expect("still there");
    assert!(ns.metadata.deletion_timestamp.is_none());
    namespaces
        .delete("kubespaces-tenant-squatter", &DeleteParams::default())
        .await
        .expect("clean up");
}
