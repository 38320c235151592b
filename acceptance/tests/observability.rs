//! What the operator tells the people who run the platform and own the tenants
//! (`docs/tenant-lifecycle.md`), on the real cluster, with an operator of this test's own under
//! the chart's roles. Its tenants get their host side only: nothing here is about control planes,
//! and a host-only tenant reaches each phase in seconds.
//!
//! - A tenant that fails (its namespace belongs to someone else) is a Warning Event `Failed`; once
//!   the namespace is freed it becomes Ready, a Normal Event `Ready` ("again after Failed"), and
//!   the time-to-Ready histogram counts it.
//! - Ready and unchanged, a reconcile writes nothing.
//! - `status.quota.used` shows what the tenant's pods take.
//! - Its namespace deleted by hand is recreated, and the tenant is Ready again.
//! - Deleting it is a Normal Event `Deleting`, and nothing of it is left.
//! - A Tenant stored under another schema (the CRD widened for a moment, as a newer version of
//!   KubeSpaces would, with a `deletionPolicy` this operator does not know) is a Warning Event
//!   `InvalidObject` and nothing more: the same process goes on making other tenants Ready, the
//!   server (API and portal) starts and serves all the same, and once the object is fixed it is
//!   Ready too.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{Namespace, Pod},
    events::v1::Event,
};
use kube::{
    Api, Client, CustomResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server},
    operator::{OperatorProcess, SHARD_LABEL, http_get, metric_sum, sharded_tenant},
    pods::{self, delete_tenant, leftovers},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    names,
};
use serde_json::json;

const SHARD: &str = "observability";
const TENANT: &str = "observed";

/// The Events recorded so far about the Tenant with `uid` (not merely its name: an earlier Tenant
/// of the name has another uid, and its Events outlive it), as (type, reason, note).
async fn events_of(client: &Client, uid: &str) -> Vec<(String, String, String)> {
    Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list Events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Tenant") && r.uid.as_deref() == Some(uid)
            })
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until an Event of `type_` with `reason` is recorded about the Tenant with `uid`, and
/// returns it.
async fn wait_event(
    client: &Client,
    uid: &str,
    type_: &str,
    reason: &str,
) -> (String, String, String) {
    wait_for(
        &format!("a {type_} Event {reason} on the tenant with uid {uid}"),
        Duration::from_secs(60),
        || async {
            events_of(client, uid)
                .await
                .into_iter()
                .find(|(t, r, _)| t == type_ && r == reason)
        },
    )
    .await
}

#[tokio::test]
async fn phase_changes_are_events_and_the_operator_keeps_its_tenant_as_documented() {
    let env = Env::get();
    let client = env.client().await;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = names::namespace(TENANT);
    let operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &[]).await;
    delete_tenant(&env, TENANT).await;
    if namespaces.get_opt(&ns).await.ok().flatten().is_some() {
        namespaces
            .delete(&ns, &DeleteParams::default())
            .await
            .expect("delete a leftover namespace");
        wait_gone(&namespaces, &ns, Duration::from_secs(120)).await;
    }

    // Its namespace is someone else's: Failed, and a Warning Event says so.
    let squatted: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    let squatted_uid = namespaces
        .create(&PostParams::default(), &squatted)
        .await
        .expect("someone else's namespace")
        .metadata
        .uid;
    let spec = TenantSpec::new("quinn@example.com", "1", "1Gi", None);
    let uid = tenants
        .create(&PostParams::default(), &sharded_tenant(TENANT, spec, SHARD))
        .await
        .expect("create the tenant")
        .metadata
        .uid
        .expect("a uid");
    let (_, _, note) = wait_event(&client, &uid, "Warning", "Failed").await;
    assert!(note.contains(&ns), "the Event says why: {note}");
    assert_eq!(tenants.get(TENANT).await.unwrap().phase(), Some("Failed"));

    // The namespace freed, and the tenant looked at again: Ready, and a Normal Event for it.
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("free the namespace");
    // Gone, or already made again by the operator (it watches namespaces): then a look at once.
    wait_for(
        "the squatted namespace gone",
        Duration::from_secs(120),
        || async {
            let now = namespaces.get_opt(&ns).await.ok()?;
            now.is_none_or(|n| n.metadata.uid != squatted_uid)
                .then_some(())
        },
    )
    .await;
    env.kubectl_ok(
        &[
            "annotate",
            "--overwrite",
            "tenant",
            TENANT,
            "reconcile.fluxcd.io/requestedAt=freed",
        ],
        None,
    );
    let ready = wait_ready(&tenants, TENANT, Duration::from_secs(120)).await;
    wait_event(&client, &uid, "Normal", "Ready").await;
    let text = operator.metrics().await;
    assert_eq!(
        metric_sum(&text, "kubespaces_tenant_time_to_ready_seconds_count"),
        1.0,
        "the time-to-Ready histogram counts the one tenant this operator made Ready:\n{text}"
    );

    // Ready and unchanged: reconciles read, they do not write.
    operator.poke(&env, TENANT, 0).await;
    let settled = operator.writes().await;
    for round in 1..=3 {
        operator.poke(&env, TENANT, round).await;
    }
    assert_eq!(
        operator.writes().await,
        settled,
        "a Ready tenant costs no writes per reconcile"
    );

    // What its pods take is in its status.
    pods::wait_namespace_ready_for_pods(&client, &ns).await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "busy"},
        "spec": {"securityContext": pods::restricted_pod(), "containers": [{
            "name": "app", "image": "nginx", "securityContext": pods::restricted_container(),
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                          "limits": {"cpu": "100m", "memory": "64Mi"}}}]}
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &pod)
        .await
        .expect("a pod in the tenant's namespace");
    let used = wait_for(
        "status.quota.used to show the pod",
        Duration::from_secs(120),
        || async {
            let t = tenants.get(TENANT).await.ok()?;
            let used = t.status?.quota?.used;
            (used.get("requests.cpu").map(|q| q.0.as_str()) == Some("100m")).then_some(used)
        },
    )
    .await;
    assert_eq!(
        used.get("requests.memory").map(|q| q.0.as_str()),
        Some("64Mi"),
        "{used:?}"
    );

    // Its namespace deleted by hand: recreated, and Ready again.
    let first = ready.status.and_then(|s| s.namespace);
    assert_eq!(first.as_deref(), Some(ns.as_str()));
    let ns_uid = namespaces.get(&ns).await.unwrap().metadata.uid;
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("delete the tenant's namespace");
    wait_for(
        "the namespace recreated",
        Duration::from_secs(180),
        || async {
            let again = namespaces.get_opt(&ns).await.ok()??;
            (again.metadata.uid != ns_uid && again.metadata.deletion_timestamp.is_none())
                .then_some(())
        },
    )
    .await;
    wait_ready(&tenants, TENANT, Duration::from_secs(120)).await;

    // Deleted: a Normal Event, and nothing of it left.
    env.kubectl_ok(&["delete", "tenant", TENANT, "--wait=false"], None);
    wait_event(&client, &uid, "Normal", "Deleting").await;
    wait_gone(&tenants, TENANT, Duration::from_secs(120)).await;
    let left = leftovers(&env, TENANT, &ns);
    assert!(left.is_empty(), "left of {TENANT}: {left:?}");
    operator.assert_every_request_listed().await;
}

/// The JSON pointer of the `deletionPolicy` values the CRD allows.
const DELETION_POLICY_ENUM: &str =
    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/deletionPolicy/enum";
/// A deletion policy only a newer version of KubeSpaces would know.
const NEWER_POLICY: &str = "Archive";

/// The CRD with [`NEWER_POLICY`] allowed, for as long as this lives: dropped (the test ended or
/// failed), the CRD is as the chart installed it again. Only widened, so that no other test's
/// Tenant is refused meanwhile.
struct WidenedCrd {
    env: Env,
}

/// `kubectl patch` of the Tenant CRD with a JSON patch.
fn patch_crd(env: &Env, patch: &serde_json::Value) -> std::process::Output {
    let crd = Tenant::crd_name();
    let patch = patch.to_string();
    env.kubectl(&["patch", "crd", crd, "--type=json", "-p", &patch], None)
}

impl WidenedCrd {
    fn new() -> WidenedCrd {
        let env = Env::get();
        let add = json!([{"op": "add", "path": format!("{DELETION_POLICY_ENUM}/-"), "value": NEWER_POLICY}]);
        let out = patch_crd(&env, &add);
        assert!(
            out.status.success(),
            "widen the Tenant CRD: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        WidenedCrd { env }
    }
}

impl Drop for WidenedCrd {
    fn drop(&mut self) {
        // Removes the value it appended (the third), and only if it is still that value.
        let remove = json!([
            {"op": "test", "path": format!("{DELETION_POLICY_ENUM}/2"), "value": NEWER_POLICY},
            {"op": "remove", "path": format!("{DELETION_POLICY_ENUM}/2")}
        ]);
        let out = patch_crd(&self.env, &remove);
        if !out.status.success() && !std::thread::panicking() {
            panic!(
                "the Tenant CRD could not be put back: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[tokio::test]
async fn a_tenant_the_operator_cannot_read_is_a_warning_event_and_stops_nothing_else() {
    const SHARD: &str = "unreadable";
    const UNREADABLE: &str = "unreadable";
    const READABLE: &str = "readable";
    let env = Env::get();
    let client = env.client().await;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &[]).await;
    let pid = operator.pid();
    // One left by a failed run may still be unreadable: no operator can tear it down then.
    let readable_again = json!({"spec": {"deletionPolicy": "Delete"}});
    let _ = tenants
        .patch(
            UNREADABLE,
            &PatchParams::default(),
            &Patch::Merge(&readable_again),
        )
        .await;
    for name in [UNREADABLE, READABLE] {
        delete_tenant(&env, name).await;
    }

    // Stored under a wider schema, as a newer version of KubeSpaces would leave it.
    let manifest = json!({
        "apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant",
        "metadata": {"name": UNREADABLE, "labels": {SHARD_LABEL: SHARD}},
        "spec": {"owner": "uma@example.com", "resources": {"cpu": "1", "memory": "1Gi"},
                 "deletionPolicy": NEWER_POLICY}
    });
    let widened = WidenedCrd::new();
    // The API server takes up a changed CRD a moment later.
    let created = wait_for(
        "the widened CRD to admit the newer deletionPolicy",
        Duration::from_secs(60),
        || async {
            let out = env.kubectl(
                &["create", "-o", "json", "-f", "-"],
                Some(&manifest.to_string()),
            );
            out.status.success().then(|| {
                serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("kubectl's JSON")
            })
        },
    )
    .await;
    drop(widened);
    let uid = created["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned();

    // This operator cannot read it: a Warning Event that says why, no status, no crash.
    let (_, _, note) = wait_event(&client, &uid, "Warning", "InvalidObject").await;
    assert!(
        note.contains(NEWER_POLICY),
        "the Event names what it cannot read: {note}"
    );
    let raw = env.kubectl_ok(&["get", "tenant", UNREADABLE, "-o", "json"], None);
    let raw: serde_json::Value = serde_json::from_str(&raw).expect("kubectl's JSON");
    assert!(
        raw.get("status").is_none(),
        "no status is written for a tenant the operator cannot read: {raw}"
    );

    // The server (API and portal) fills its cache and serves all the same: it leaves out what
    // it cannot read.
    let server = tokio::time::timeout(Duration::from_secs(60), Server::with_dex(&Dex::get()))
        .await
        .expect("the server's tenant cache fills while a Tenant it cannot read is stored");
    let ready = http_get(&format!("{}/readyz", server.url)).await;
    assert_eq!(
        ready.map(|(status, _)| status),
        Some(200),
        "the server is ready"
    );
    drop(server);

    // The same process goes on with the tenants it can read.
    let spec = TenantSpec::new("uma@example.com", "1", "1Gi", None);
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant(READABLE, spec, SHARD),
        )
        .await
        .expect("create a readable tenant");
    wait_ready(&tenants, READABLE, Duration::from_secs(120)).await;
    assert!(
        operator.running() && operator.pid() == pid,
        "the operator kept running:\n{}",
        operator.log_text()
    );

    // Fixed by its owner (the CRD is as before again): read, and Ready.
    tenants
        .patch(
            UNREADABLE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deletionPolicy": "Delete"}})),
        )
        .await
        .expect("fix the deletionPolicy");
    wait_ready(&tenants, UNREADABLE, Duration::from_secs(120)).await;
    assert!(
        operator.running() && operator.pid() == pid,
        "the operator kept running:\n{}",
        operator.log_text()
    );

    for name in [UNREADABLE, READABLE] {
        delete_tenant(&env, name).await;
        let left = leftovers(&env, name, &names::namespace(name));
        assert!(left.is_empty(), "left of {name}: {left:?}");
    }
    operator.assert_every_request_listed().await;
}
