//! When what every control plane runs changes (new vCluster values here; a new chart or a new
//! operator alike), each tenant's control plane restarts, and the operator rolls that across
//! tenants in a bounded way (`--max-restarting-control-planes`, `--control-plane-restart-deadline`;
//! the chart's `controlPlane.restarts`):
//! - with at most one restarting, two tenants' control planes restart one after the other, never
//!   both at once, and the one waiting says so (`ControlPlaneReady` reason `UpdateWaiting`) while
//!   it keeps running;
//! - with values no control plane can run with (a hostPath volume, which the tenant namespace's
//!   Pod Security level refuses), the first control plane to restart does not come back, and once the deadline has passed the
//!   other is held (`UpdateHalted`, naming the tenant that failed), still Ready on its old pod;
//! - the values undone, both run again.
//!
//! A test-owned operator (under the chart's role) runs the control planes, restarted with each
//! new values file as the chart's operator would be.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::PostParams};
use kubespaces_acceptance::{
    Env,
    control_planes::{pinned_digest, vcluster_flags},
    operator::{OperatorProcess, sharded_tenant},
    pods::delete_tenant,
    wait_for, wait_ready,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    conditions::CONTROL_PLANE_READY,
    names,
};

const SHARD: &str = "roll";
const TENANTS: [&str; 2] = ["roll-a", "roll-b"];
/// What the deadline is in this test: long enough for a control plane to restart on this machine
/// (about 30 s), short enough to wait for.
const DEADLINE: &str = "90s";
const ROLLED_WITHIN: Duration = Duration::from_secs(420);

/// A values file: a pod annotation (any change of the pod template restarts a control plane),
/// and with `host_path` a hostPath volume, which the tenant namespace's Pod Security level
/// refuses: no pod of that template is ever created.
fn values(dir: &Path, name: &str, round: &str, host_path: bool) -> PathBuf {
    let volume = match host_path {
        true => "\n    persistence:\n      addVolumes: [{name: host, hostPath: {path: /tmp}}]",
        false => "",
    };
    let text = format!(
        "controlPlane:\n  statefulSet:\n    pods:\n      annotations: {{kubespaces.io/test-roll: \"{round}\"}}{volume}\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a values file");
    path
}

async fn operator(env: &Env, values: &Path) -> OperatorProcess {
    let mut flags = vcluster_flags(&pinned_digest(), &[values]);
    flags.push("--max-restarting-control-planes=1".into());
    flags.push(format!("--control-plane-restart-deadline={DEADLINE}"));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    OperatorProcess::start_least_privileged(&env.client().await, env.operator_bin(), SHARD, &flags)
        .await
}

/// Each tenant's control-plane pod: its uid and the test annotation, None while it has none.
async fn control_plane_pods(env: &Env) -> BTreeMap<&'static str, Option<(String, String, bool)>> {
    let client = env.client().await;
    let mut out = BTreeMap::new();
    for t in TENANTS {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &names::namespace(t));
        let pod = pods
            .get_opt(names::control_plane::CONTROL_PLANE_POD)
            .await
            .ok()
            .flatten();
        out.insert(
            t,
            pod.map(|p| {
                let round = p
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kubespaces.io/test-roll").cloned())
                    .unwrap_or_default();
                let ready = kubespaces_acceptance::pods::is_running_ready(&p);
                (p.metadata.uid.unwrap_or_default(), round, ready)
            }),
        );
    }
    out
}

/// The reason of a tenant's `ControlPlaneReady` condition and its message.
async fn control_plane_condition(tenants: &Api<Tenant>, tenant: &str) -> (String, String) {
    let t = tenants.get(tenant).await.expect("the tenant");
    t.status
        .and_then(|s| {
            s.conditions
                .into_iter()
                .find(|c| c.type_ == CONTROL_PLANE_READY)
        })
        .map(|c| (c.reason, c.message))
        .unwrap_or_default()
}

#[tokio::test]
async fn control_planes_restart_a_bounded_few_at_a_time_and_a_failed_one_halts_the_rest() {
    let env = Env::get();
    let client = env.client().await;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let dir = std::env::temp_dir().join(format!("kubespaces-roll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for values files");
    for t in TENANTS {
        delete_tenant(&env, t).await;
    }

    let mut op = operator(&env, &values(&dir, "round-1.yaml", "1", false)).await;
    for t in TENANTS {
        let spec = TenantSpec::new(format!("{t}@example.com"), "1", "2Gi", Some("5Gi"));
        tenants
            .create(&PostParams::default(), &sharded_tenant(t, spec, SHARD))
            .await
            .expect("create a tenant");
    }
    for t in TENANTS {
        wait_ready(&tenants, t, Duration::from_secs(300)).await;
    }

    // 1. New values: one control plane at a time.
    op.terminate(Duration::from_secs(30)).await;
    let mut op = operator(&env, &values(&dir, "round-2.yaml", "2", false)).await;
    let most_down = std::cell::Cell::new(0);
    let waited = std::cell::RefCell::new(BTreeSet::new());
    wait_for(
        "both control planes to run the new template",
        ROLLED_WITHIN,
        || async {
            let pods = control_plane_pods(&env).await;
            let up = |p: &Option<(String, String, bool)>, round: &str| {
                p.as_ref().is_some_and(|(_, r, ready)| r == round && *ready)
            };
            let down = pods.values().filter(|p| !up(p, "1") && !up(p, "2")).count();
            most_down.set(most_down.get().max(down));
            for t in TENANTS {
                if control_plane_condition(&tenants, t).await.0 == "UpdateWaiting" {
                    waited.borrow_mut().insert(t);
                }
            }
            pods.values().all(|p| up(p, "2")).then_some(())
        },
    )
    .await;
    assert_eq!(
        most_down.get(),
        1,
        "control planes down at once while the new values rolled out (at most 1 allowed)"
    );
    assert_eq!(
        waited.borrow().len(),
        1,
        "one tenant should have waited for the other's restart: {:?}",
        waited.borrow()
    );

    // 2. Values no control plane can run with: the first restart never comes back, the other is
    // held on its running pod.
    op.terminate(Duration::from_secs(30)).await;
    let before = control_plane_pods(&env).await;
    let mut op = operator(&env, &values(&dir, "round-3.yaml", "3", true)).await;
    let (failed, halted) = wait_for(
        "the roll to halt on the control plane that did not come back",
        Duration::from_secs(300),
        || async {
            let mut halted = None;
            for t in TENANTS {
                let (reason, message) = control_plane_condition(&tenants, t).await;
                if reason == "UpdateHalted" {
                    halted = Some((t, message));
                }
            }
            let (held, message) = halted?;
            let failed = TENANTS.into_iter().find(|t| *t != held)?;
            Some((failed, (held, message)))
        },
    )
    .await;
    let (held, message) = halted;
    assert!(
        message.contains(&format!("tenant {failed}'s")),
        "{held}'s condition should name {failed}: {message}"
    );
    let now = control_plane_pods(&env).await;
    assert_eq!(
        now[held], before[held],
        "the held tenant's control plane was restarted"
    );
    assert!(
        tenants.get(held).await.expect("the tenant").is_ready(),
        "the held tenant {held} is not Ready"
    );

    // 3. Undone: both run again.
    op.terminate(Duration::from_secs(30)).await;
    let mut op = operator(&env, &values(&dir, "round-4.yaml", "4", false)).await;
    wait_for(
        "both control planes to run again",
        ROLLED_WITHIN,
        || async {
            let pods = control_plane_pods(&env).await;
            pods.values()
                .all(|p| {
                    p.as_ref()
                        .is_some_and(|(_, round, ready)| round == "4" && *ready)
                })
                .then_some(())
        },
    )
    .await;
    for t in TENANTS {
        wait_ready(&tenants, t, ROLLED_WITHIN).await;
    }

    for t in TENANTS {
        delete_tenant(&env, t).await;
    }
    op.terminate(Duration::from_secs(30)).await;
    let _ = std::fs::remove_dir_all(&dir);
}
