//! The operator is killed (SIGKILL) while 20 tenants provision and restarted: every tenant
//! converges to Ready with exactly one of each host object, nothing duplicated or orphaned.

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
    operator::{OperatorProcess, SHARD_LABEL, metric_sum, sharded_tenant},
    wait_gone, wait_ready,
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
