//! The operator runs under the generated ClusterRole less one permission (writing
//! NetworkPolicies): the Tenant's conditions say which permission is missing, and where to grant
//! it, instead of a bare API error; so do a Warning Event on the Tenant and the operator's
//! `kubespaces_reconcile_errors_total{reason="MissingPermission"}`.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    operator::{
        OperatorProcess, least_privileged_kubeconfig, metric_sum_where,
        rules_without_network_policy_writes, sharded_tenant,
    },
    wait_for, wait_gone,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    conditions::{READY, SYNCED},
};

const SHARD: &str = "rbac-missing";

#[tokio::test]
async fn a_missing_permission_is_named_in_the_tenant_conditions() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let kubeconfig = least_privileged_kubeconfig(
        &client,
        Some(("no-netpol-write", rules_without_network_policy_writes())),
    )
    .await;
    let operator =
        OperatorProcess::start_as(env.operator_bin(), SHARD, &[], Some(kubeconfig.path)).await;

    // A leftover of an earlier run would make the create below fail (its operator tears it down).
    let _ = tenants
        .delete("rbac-missing", &DeleteParams::default())
        .await;
    wait_gone(&tenants, "rbac-missing", Duration::from_secs(60)).await;

    let spec = TenantSpec::new("peggy@example.com", "1", "1Gi", None);
    let uid = tenants
        .create(
            &PostParams::default(),
            &sharded_tenant("rbac-missing", spec, SHARD),
        )
        .await
        .expect("create")
        .metadata
        .uid;

    let synced = wait_for(
        "a Synced condition naming the missing permission",
        Duration::from_secs(60),
        || async {
            let t: Tenant = tenants.get_opt("rbac-missing").await.ok().flatten()?;
            t.condition(SYNCED)
                .filter(|c| c.status == "False" && c.reason == "MissingPermission")
                .cloned()
        },
    )
    .await;
    for needle in [
        "may not create networkpolicies.networking.k8s.io in namespace kubespaces-tenant-rbac-missing",
        "kubespaces:operator",
    ] {
        assert!(
            synced.message.contains(needle),
            "{needle:?} not in {:?}",
            synced.message
        );
    }
    let t = tenants.get("rbac-missing").await.expect("get");
    assert!(
        t.condition(READY).is_some_and(|c| c.status != "True"),
        "not Ready without its NetworkPolicy: {:?}",
        t.condition(READY)
    );

    let events: Api<Event> = Api::all(client.clone());
    let event = wait_for(
        "a Warning Event MissingPermission on the Tenant",
        Duration::from_secs(60),
        || async {
            events
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|e| {
                    e.regarding
                        .as_ref()
                        .is_some_and(|r| r.uid.is_some() && r.uid == uid)
                        && e.type_.as_deref() == Some("Warning")
                        && e.reason.as_deref() == Some("MissingPermission")
                })
        },
    )
    .await;
    let note = event.note.unwrap_or_default();
    assert!(note.contains("may not create networkpolicies"), "{note}");
    wait_for(
        "kubespaces_reconcile_errors_total{reason=\"MissingPermission\"} to count it",
        Duration::from_secs(30),
        || async {
            let text = operator.metrics().await;
            // The family exists once an error was counted.
            text.contains("kubespaces_reconcile_errors_total{")
                .then(|| {
                    metric_sum_where(
                        &text,
                        "kubespaces_reconcile_errors_total",
                        "reason",
                        &["MissingPermission"],
                    )
                })
                .filter(|n| *n >= 1.0)
        },
    )
    .await;

    // Teardown needs no NetworkPolicy write: the Tenant goes away as usual.
    tenants
        .delete("rbac-missing", &DeleteParams::default())
        .await
        .expect("delete");
    wait_gone(&tenants, "rbac-missing", Duration::from_secs(60)).await;
}
