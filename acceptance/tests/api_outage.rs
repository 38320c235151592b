//! The API server stopped for 20 s and started again: the operator recovers by itself, in the
//! same process, and reconciles a Tenant created right after the API is back within 10 s; the
//! Tenant then becomes Ready (once kube-controller-manager's quota controller has recovered too).
//! A pair of operators with leader election rides out the same outage: both processes stay, one
//! leads and reconciles. And a tenant whose control plane is being applied when the API server
//! goes away (an operator that runs control planes, as the chart's does) becomes Ready after it,
//! and its API answers with the kubeconfig it hands out.
//!
//! One test in this binary: it takes the shared cluster's API server down, so it is `#[ignore]`d
//! in a plain `cargo test` and `make test` runs it with `--ignored` before the other tests start
//! (nothing else is running meanwhile).

use std::{
    process::Command,
    time::{Duration, Instant},
};

use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    control_planes::{pinned_digest, rendered_objects, vcluster_flags},
    operator::{OperatorProcess, least_privileged_kubeconfig, metric_sum, sharded_tenant},
    pods::{delete_tenant, leftovers},
    tenant_cluster::{in_tenant, owner_kubeconfig},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::names;
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    conditions::{NAMESPACE_READY, NETWORK_POLICY_READY, RBAC_READY, SYNCED},
};

const SHARD: &str = "api-outage";
const HA_SHARD: &str = "api-outage-ha";
const CP_SHARD: &str = "api-outage-cp";
const OUTAGE: Duration = Duration::from_secs(20);
const RECONCILED_WITHIN: Duration = Duration::from_secs(10);

fn apiserver(command: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/harness/apiserver.sh");
    let state = std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE (set by the harness)");
    let status = Command::new(script)
        .args([command, &state])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(status.success(), "apiserver.sh {command} failed: {status}");
}

/// Starts the API server again however the test ends, so a failure here does not leave the
/// cluster without one for the tests that follow.
struct RestartOnDrop(bool);

impl Drop for RestartOnDrop {
    fn drop(&mut self) {
        if self.0 {
            apiserver("start");
        }
    }
}

/// The operator's part of a Tenant is done: it saw it and put everything of its own in place.
/// (Ready also needs the quota controller of kube-controller-manager to compute the quota's
/// status, and that controller's watches back off for up to 30 s after an outage (client-go).)
async fn reconciled(tenants: &Api<Tenant>, name: &str) -> Option<()> {
    let t = tenants.get_opt(name).await.ok().flatten()?;
    let synced = t
        .condition(SYNCED)
        .is_some_and(|c| c.status == "True" && c.observed_generation == t.metadata.generation);
    let own = [NAMESPACE_READY, RBAC_READY, NETWORK_POLICY_READY]
        .iter()
        .all(|o| t.condition(o).is_some_and(|c| c.status == "True"));
    (synced && own).then_some(())
}

async fn leaders(ops: &[OperatorProcess]) -> usize {
    let mut n = 0;
    for op in ops {
        if metric_sum(&op.metrics().await, "kubespaces_leader") == 1.0 {
            n += 1;
        }
    }
    n
}

#[tokio::test]
#[ignore = "stops the shared API server for 20 s: make test runs it alone, with --ignored (run-tests.sh)"]
async fn after_an_api_server_outage_a_new_tenant_is_reconciled_within_10_s() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let mut operator =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), SHARD, &[]).await;
    // A leftover of an earlier run would make the create below fail (its operator tears it down).
    let _ = tenants.delete("outage", &DeleteParams::default()).await;
    wait_gone(&tenants, "outage", Duration::from_secs(60)).await;
    let pid = operator.pid();
    // And a pair with leader election, as the chart runs them: an outage longer than the Lease
    // must not cost the leader its process.
    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    let ha_args = [
        "--leader-elect",
        "--leader-elect-namespace",
        &kubeconfig.lease_namespace,
        "--leader-elect-lease",
        "kubespaces-test-api-outage",
    ];
    let mut pair = Vec::new();
    for _ in 0..2 {
        let op = OperatorProcess::start_as(
            env.operator_bin(),
            HA_SHARD,
            &ha_args,
            Some(kubeconfig.path.clone()),
        )
        .await;
        pair.push(op);
    }
    let _ = tenants.delete("outage-ha", &DeleteParams::default()).await;
    wait_for(
        "one of the pair to lead",
        Duration::from_secs(30),
        || async { (leaders(&pair).await == 1).then_some(()) },
    )
    .await;
    wait_gone(&tenants, "outage-ha", Duration::from_secs(60)).await;
    let pair_pids: Vec<u32> = pair.iter().map(OperatorProcess::pid).collect();
    // And an operator with control planes, one tenant's control plane in flight.
    let flags = vcluster_flags(&pinned_digest(), &[]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut with_control_planes =
        OperatorProcess::start_least_privileged(&client, env.operator_bin(), CP_SHARD, &flags)
            .await;
    delete_tenant(&env, "outage-cp").await;
    let spec = TenantSpec::new("olga@example.com", "2", "4Gi", None);
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant("outage-cp", spec, CP_SHARD),
        )
        .await
        .expect("create a Tenant with a control plane");
    wait_for(
        "the first object of outage-cp's rendered chart",
        Duration::from_secs(120),
        || async { (!rendered_objects(&env, "outage-cp").is_empty()).then_some(()) },
    )
    .await;
    assert!(
        !tenants.get("outage-cp").await.unwrap().is_ready(),
        "the outage comes while outage-cp's control plane is in flight"
    );

    let mut down = RestartOnDrop(true);
    apiserver("stop");
    // The outage itself (not a wait for anything): the API server stays down this long.
    tokio::time::sleep(OUTAGE).await;
    apiserver("start"); // returns once the API server answers /readyz
    down.0 = false;

    // The API server answers /readyz a moment before it serves the Tenant API again (custom
    // resources come back last): create as soon as it takes the Tenant.
    let spec = TenantSpec::new("olga@example.com", "1", "1Gi", None);
    let tenant = sharded_tenant("outage", spec, SHARD);
    wait_for(
        "the API server to take a Tenant",
        Duration::from_secs(30),
        || async { tenants.create(&PostParams::default(), &tenant).await.ok() },
    )
    .await;
    let created = Instant::now();

    wait_for(
        "the operator to reconcile the new Tenant",
        Duration::from_secs(90),
        || reconciled(&tenants, "outage"),
    )
    .await;
    let reconciled_in = created.elapsed();
    wait_ready(&tenants, "outage", Duration::from_secs(120)).await;
    let ready = created.elapsed();
    eprintln!(
        "API server down {} s; after the Tenant was created: reconciled by the operator in {:.1} s, \
         Ready in {:.1} s",
        OUTAGE.as_secs(),
        reconciled_in.as_secs_f64(),
        ready.as_secs_f64()
    );
    assert!(
        reconciled_in <= RECONCILED_WITHIN,
        "the operator reconciled the new Tenant only {:.1} s after its creation (at most \
         {RECONCILED_WITHIN:?} expected): its watches were still backing off",
        reconciled_in.as_secs_f64()
    );
    assert!(
        operator.running() && operator.pid() == pid,
        "the operator must ride out the outage in the same process; log:\n{}",
        operator.log_text()
    );

    let spec = TenantSpec::new("olga@example.com", "1", "1Gi", None);
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant("outage-ha", spec, HA_SHARD),
        )
        .await
        .expect("create a Tenant for the pair");
    wait_for(
        "the leader of the pair to reconcile its Tenant",
        Duration::from_secs(30),
        || reconciled(&tenants, "outage-ha"),
    )
    .await;
    for op in pair.iter_mut() {
        assert!(
            op.running(),
            "both of the pair ride out the outage; log:\n{}",
            op.log_text()
        );
    }
    assert_eq!(
        pair.iter().map(OperatorProcess::pid).collect::<Vec<_>>(),
        pair_pids
    );
    assert_eq!(leaders(&pair).await, 1, "one leader");
    tenants
        .delete("outage-ha", &DeleteParams::default())
        .await
        .expect("delete");

    operator.assert_every_request_listed().await;

    // The control plane that was in flight: finished, in the same process, and it answers.
    wait_ready(&tenants, "outage-cp", Duration::from_secs(300)).await;
    let (kubeconfig, _) = owner_kubeconfig(&env, "outage-cp").await;
    in_tenant(&env, &kubeconfig, &["get", "ns"]).await;
    assert!(
        with_control_planes.running(),
        "the operator with control planes rides out the outage; log:\n{}",
        with_control_planes.log_text()
    );
    with_control_planes.assert_every_request_listed().await;
    delete_tenant(&env, "outage-cp").await;
    let left = leftovers(&env, "outage-cp", &names::namespace("outage-cp"));
    assert!(left.is_empty(), "left of outage-cp: {left:?}");

    tenants
        .delete("outage", &DeleteParams::default())
        .await
        .expect("delete");
    // Teardown waits for the namespace controller, which recovers from the outage at its pace.
    wait_gone(&tenants, "outage", Duration::from_secs(120)).await;
    wait_gone(&tenants, "outage-ha", Duration::from_secs(120)).await;
}
