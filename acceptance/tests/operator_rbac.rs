//! The operator runs under the generated ClusterRole less one permission (writing
//! NetworkPolicies): the Tenant's conditions say which permission is missing, and where to grant
//! it, instead of a bare API error.

use std::time::Duration;

use kube::api::{DeleteParams, PostParams};
use kubespaces_acceptance::{
    Env,
    operator::{
        OperatorProcess, least_privileged_kubeconfig, rules_without_network_policy_writes,
        sharded_tenant,
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
    let _operator =
        OperatorProcess::start_as(env.operator_bin(), SHARD, &[], Some(kubeconfig.path)).await;

    // A leftover of an earlier run would make the create below fail (its operator tears it down).
    let _ = tenants
        .delete("rbac-missing", &DeleteParams::default())
        .await;
    wait_gone(&tenants, "rbac-missing", Duration::from_secs(60)).await;

    let spec = TenantSpec::new("peggy@example.com", "1", "1Gi", None);
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant("rbac-missing", spec, SHARD),
        )
        .await
        .expect("create");

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

    // Teardown needs no NetworkPolicy write: the Tenant goes away as usual.
    tenants
        .delete("rbac-missing", &DeleteParams::default())
        .await
        .expect("delete");
    wait_gone(&tenants, "rbac-missing", Duration::from_secs(60)).await;
}
