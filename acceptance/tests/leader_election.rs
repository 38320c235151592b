//! Two operator processes with leader election, under the generated roles: both ready, one
//! leads and only it writes; the leader killed (SIGKILL), the other takes over once the Lease has
//! expired, not before, and reconciles; then the killed one back as a standby and the leader
//! stopped gracefully (SIGTERM): it hands the Lease back and the standby takes it at once. (How
//! long a failover takes is measured by `make bench-chart`, not asserted here.)

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    lease::handover,
    operator::{OperatorProcess, least_privileged_kubeconfig, metric_sum, sharded_tenant},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::api::TenantSpec;

const SHARD: &str = "leader-election";
const LEASE: &str = "kubespaces-test-leader-election";

async fn is_leader(op: &OperatorProcess) -> bool {
    metric_sum(&op.metrics().await, "kubespaces_leader") == 1.0
}

/// The identity a process on this machine runs for leadership with (the host name and its pid).
fn identity(op: &OperatorProcess) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    format!("{}_{}", host.trim(), op.pid())
}

#[tokio::test]
async fn only_the_leader_writes_a_killed_leader_is_replaced_on_expiry_and_a_stopped_one_hands_over()
{
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    let args = [
        "--leader-elect",
        "--leader-elect-namespace",
        &kubeconfig.lease_namespace,
        "--leader-elect-lease",
        LEASE,
    ];
    // start_as returns once /readyz answers 200: a waiting standby is ready too.
    let a = OperatorProcess::start_as(
        env.operator_bin(),
        SHARD,
        &args,
        Some(kubeconfig.path.clone()),
    )
    .await;
    let b = OperatorProcess::start_as(
        env.operator_bin(),
        SHARD,
        &args,
        Some(kubeconfig.path.clone()),
    )
    .await;
    let mut ops = [a, b];
    let leader = wait_for(
        "one of the two to lead",
        Duration::from_secs(30),
        || async {
            let leading = [is_leader(&ops[0]).await, is_leader(&ops[1]).await];
            match leading {
                [true, false] => Some(0),
                [false, true] => Some(1),
                _ => None,
            }
        },
    )
    .await;
    let standby = 1 - leader;

    let names = ["leader-a", "leader-b"];
    for name in names {
        let _ = tenants.delete(name, &DeleteParams::default()).await;
        wait_gone(&tenants, name, Duration::from_secs(60)).await;
    }
    let spec = || TenantSpec::new("rita@example.com", "1", "1Gi", None);
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant(names[0], spec(), SHARD),
        )
        .await
        .expect("create");
    wait_ready(&tenants, names[0], Duration::from_secs(60)).await;
    assert!(ops[leader].writes().await > 0.0, "the leader wrote");
    assert_eq!(
        ops[standby].writes().await,
        0.0,
        "the standby wrote nothing:\n{}",
        ops[standby].metrics().await
    );
    assert!(!is_leader(&ops[standby]).await);

    // Killed: nothing is handed back; the standby takes the Lease once it has expired.
    let leases: Api<Lease> = Api::namespaced(client.clone(), &kubeconfig.lease_namespace);
    let killed = handover(
        &leases,
        LEASE,
        &identity(&ops[leader]),
        async || ops[leader].kill(),
        Duration::from_secs(60),
    )
    .await;
    eprintln!("leader killed: {killed:?}");
    assert_eq!(killed.holder, identity(&ops[standby]));
    assert!(
        !killed.taken_before_expiry,
        "a killed leader cannot hand the Lease back, and no replica may take it before it \
         expires: {killed:?}"
    );
    let standby_op = &ops[standby];
    wait_for(
        "the standby to report that it leads",
        Duration::from_secs(30),
        || async { is_leader(standby_op).await.then_some(()) },
    )
    .await;
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant(names[1], spec(), SHARD),
        )
        .await
        .expect("create");
    wait_ready(&tenants, names[1], Duration::from_secs(60)).await;

    // The killed one back, as a standby; the leader stopped as Kubernetes stops a pod: it hands
    // the Lease back, and the standby takes it before it would have expired.
    ops[leader].restart().await;
    let (old, new) = (standby, leader);
    assert!(!is_leader(&ops[new]).await, "a restarted replica waits");
    let from = identity(&ops[old]);
    let stopped = handover(
        &leases,
        LEASE,
        &from,
        async || {
            let status = ops[old].terminate(Duration::from_secs(30)).await;
            assert!(status.is_some(), "the leader ends on SIGTERM");
        },
        Duration::from_secs(60),
    )
    .await;
    eprintln!("leader stopped: {stopped:?}");
    assert_eq!(stopped.holder, identity(&ops[new]));
    assert!(
        stopped.taken_before_expiry,
        "a leader stopped gracefully hands the Lease back: {stopped:?}"
    );

    for name in names {
        tenants
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    for name in names {
        wait_gone(&tenants, name, Duration::from_secs(60)).await;
    }
}
