//! The operator is killed (SIGKILL) mid-flight and restarted, twice over:
//! - while 20 tenants provision their host side (this operator runs no control planes: the test
//!   is about the host objects, and 20 control planes would not fit a small machine): every
//!   tenant converges to Ready with exactly one of each host object, nothing duplicated;
//! - while a tenant's control plane is being applied (the first objects of its rendered chart
//!   exist): the restarted operator finishes it without recreating what was there, leaves no
//!   object outside its inventory, and the tenant's API answers with the kubeconfig it hands out.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace, ResourceQuota},
    networking::v1::NetworkPolicy,
    rbac::v1::RoleBinding,
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    control_planes::{
        assert_apply_resumed, labelled_objects, pinned_digest, rendered_objects, vcluster_flags,
    },
    operator::{OperatorProcess, SHARD_LABEL, metric_sum, sharded_tenant},
    pods::{delete_tenant, leftovers},
    tenant_cluster::{in_tenant, owner_kubeconfig},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    names,
};

const SHARD: &str = "restart";
const COUNT: usize = 20;

fn name(i: usize) -> String {
    format!("restart-{i:02}")
}

fn tenant(i: usize) -> Tenant {
    let spec = TenantSpec::new(format!("user{i}@example.com"), "1", "1Gi", None);
    sharded_tenant(&name(i), spec, SHARD)
}

async fn count<K>(client: &Client, ns: &str, tenant: &str) -> usize
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let selector = format!("{}={tenant}", names::TENANT_LABEL);
    Api::<K>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&selector))
        .await
        .map(|l| l.items.len())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_killed_operator_picks_up_where_it_left_off() {
    let env = Env::get();
    let client = env.client().await;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &[]).await;

    for i in 0..COUNT {
        tenants
            .create(&PostParams::default(), &tenant(i))
            .await
            .expect("create tenant");
    }
    // Kill it mid-flight: once it has started writing, well before 20 tenants can be done.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while metric_sum(
        &operator.metrics().await,
        "kubespaces_kube_api_requests_total",
    ) < 10.0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the operator never started working"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    operator.kill();
    let ready_before = {
        let list = tenants
            .list(&ListParams::default().labels(&format!("{SHARD_LABEL}={SHARD}")))
            .await
            .unwrap();
        list.items.iter().filter(|t| t.is_ready()).count()
    };
    assert!(
        ready_before < COUNT,
        "the kill came too late to test anything ({ready_before} already Ready)"
    );

    operator.restart().await;
    for i in 0..COUNT {
        wait_ready(&tenants, &name(i), Duration::from_secs(120)).await;
    }

    // Exactly one of everything, per tenant; one finalizer each.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for i in 0..COUNT {
        let name = name(i);
        let ns = names::namespace(&name);
        let labelled = namespaces
            .list(&ListParams::default().labels(&format!("{}={name}", names::TENANT_LABEL)))
            .await
            .unwrap();
        assert_eq!(labelled.items.len(), 1, "{name}: one namespace");
        let counts = [
            ("quota", count::<ResourceQuota>(&client, &ns, &name).await),
            (
                "limit range",
                count::<LimitRange>(&client, &ns, &name).await,
            ),
            (
                "role binding",
                count::<RoleBinding>(&client, &ns, &name).await,
            ),
            (
                "network policy",
                count::<NetworkPolicy>(&client, &ns, &name).await,
            ),
        ];
        for (what, n) in counts {
            assert_eq!(n, 1, "{name}: one {what}");
        }
        let t = tenants.get(&name).await.unwrap();
        let finalizers = t.metadata.finalizers.unwrap_or_default();
        assert_eq!(
            finalizers.iter().filter(|f| *f == names::FINALIZER).count(),
            1,
            "{name}: {finalizers:?}"
        );
    }

    operator.assert_every_request_listed().await;

    for i in 0..COUNT {
        tenants
            .delete(&name(i), &DeleteParams::default())
            .await
            .expect("delete");
    }
    for i in 0..COUNT {
        let name = name(i);
        wait_gone(&tenants, &name, Duration::from_secs(120)).await;
        assert!(
            namespaces
                .get_opt(&names::namespace(&name))
                .await
                .unwrap()
                .is_none()
        );
    }
}

#[tokio::test]
async fn a_control_plane_killed_mid_apply_is_finished_after_the_restart() {
    let env = Env::get();
    let client = env.client().await;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let (shard, name) = ("restart-cp", "restart-cp");
    let flags = vcluster_flags(&pinned_digest(), &[]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), shard, &flags).await;
    delete_tenant(&env, name).await;
    let spec = TenantSpec::new("vera@example.com", "2", "4Gi", None);
    tenants
        .create(&PostParams::default(), &sharded_tenant(name, spec, shard))
        .await
        .expect("create the tenant");

    // Killed the moment its control plane's apply has begun.
    wait_for(
        "the first object of the tenant's rendered chart",
        Duration::from_secs(120),
        || async { (!rendered_objects(&env, name).is_empty()).then_some(()) },
    )
    .await;
    operator.kill();
    let at_kill = labelled_objects(&env, name);
    let ready_at_kill = tenants.get(name).await.unwrap().is_ready();
    assert!(!ready_at_kill, "the kill came after the tenant was Ready");

    operator.restart().await;
    let ready = wait_ready(&tenants, name, Duration::from_secs(300)).await;
    assert_apply_resumed(&env, name, &at_kill, ready);
    let ns = names::namespace(name);
    let (kubeconfig, _) = owner_kubeconfig(&env, name).await;
    in_tenant(&env, &kubeconfig, &["get", "ns"]).await;
    operator.assert_every_request_listed().await;

    delete_tenant(&env, name).await;
    let left = leftovers(&env, name, &ns);
    assert!(left.is_empty(), "left of {name}: {left:?}");
}
