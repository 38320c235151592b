//! Two operator processes with leader election, under the generated roles: both ready, one
//! leads and only it writes; the leader killed (SIGKILL), the other takes over within 15 s and
//! reconciles.

use std::time::{Duration, Instant};

use kube::api::{DeleteParams, PostParams};
use kubespaces_acceptance::{
    Env,
    operator::{
        OperatorProcess, least_privileged_kubeconfig, metric_sum, metric_sum_where, sharded_tenant,
    },
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::api::TenantSpec;

const SHARD: &str = "leader-election";
const LEASE: &str = "kubespaces-test-leader-election";
const WRITES: [&str; 4] = ["POST", "PUT", "PATCH", "DELETE"];

async fn is_leader(op: &OperatorProcess) -> bool {
    metric_sum(&op.metrics().await, "kubespaces_leader") == 1.0
}

async fn writes(op: &OperatorProcess) -> f64 {
    metric_sum_where(
        &op.metrics().await,
        "kubespaces_kube_api_requests_total",
        "verb",
        &WRITES,
    )
}

#[tokio::test]
async fn only_the_leader_writes_and_a_killed_leader_is_replaced_within_15_s() {
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
    assert!(writes(&ops[leader]).await > 0.0, "the leader wrote");
    assert_eq!(
        writes(&ops[standby]).await,
        0.0,
        "the standby wrote nothing:\n{}",
        ops[standby].metrics().await
    );
    assert!(!is_leader(&ops[standby]).await);

    ops[leader].kill();
    let killed = Instant::now();
    let standby_op = &ops[standby];
    wait_for(
        "the standby to take over",
        Duration::from_secs(30),
        || async { is_leader(standby_op).await.then_some(()) },
    )
    .await;
    let handover = killed.elapsed();
    eprintln!(
        "handover {:.1} s after the leader was killed",
        handover.as_secs_f64()
    );
    assert!(
        handover <= Duration::from_secs(15),
        "handover took {handover:?}"
    );
    tenants
        .create(
            &PostParams::default(),
            &sharded_tenant(names[1], spec(), SHARD),
        )
        .await
        .expect("create");
    wait_ready(&tenants, names[1], Duration::from_secs(60)).await;

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
