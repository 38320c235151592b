//! A change of what every control plane runs (new chart values, a new chart, a new operator that
//! renders differently) restarts each tenant's control plane: its StatefulSet gets a new pod
//! template. This gate lets at most `max_rolling` of them restart at once, and none more once one
//! did not come back within the deadline, so that a bad change stops at the first tenants it
//! breaks instead of taking every tenant down.
//!
//! What the gate knows lives on the StatefulSets themselves, in two annotations the operator
//! applies with them: the hash of the pod template it last applied, and when that template began
//! to roll out over an older one (absent for a control plane's first start, which is no restart).
//! A restarted operator therefore sees the rolls in flight from its cache; the grants of the last
//! moments, which the cache may not show yet, are held in memory.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{api::apps::v1::StatefulSet, jiff::Timestamp};
use kube::{ResourceExt, api::DynamicObject};
use sha2::{Digest, Sha256};

use crate::{
    build::control_plane::settings::RollPolicy, conditions::Desired,
    observe::control_plane::running,
};

/// The hash of the pod template the operator last applied to a control plane's StatefulSet.
pub const TEMPLATE_HASH_ANNOTATION: &str = "kubespaces.io/template-hash";
/// When that template began to replace an older one.
pub const ROLLED_AT_ANNOTATION: &str = "kubespaces.io/rolled-at";
/// How long a grant is held in memory for a roll the cache does not show yet.
const GRANT_HELD: Duration = Duration::from_secs(60);

/// Whether a tenant's newly rendered control plane may be applied now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Apply it; `rolled_at` is what its StatefulSet says about when its template began to roll.
    Apply { rolled_at: Option<Timestamp> },
    /// It would restart the control plane, and as many as allowed are restarting (their tenants).
    Wait { rolling: Vec<String> },
    /// It would restart the control plane, and the roll is halted: this tenant's control plane
    /// did not come back within the deadline.
    Halted { failed: String },
}

/// The hash of the rendered StatefulSet's pod template, or None when there is no StatefulSet.
pub fn template_hash(rendered: &[DynamicObject]) -> Option<String> {
    let statefulset = rendered.iter().find(|o| is_control_plane_statefulset(o))?;
    let template = serde_json::to_vec(&statefulset.data["spec"]["template"]).ok()?;
    let digest = Sha256::digest(template);
    Some(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

fn is_control_plane_statefulset(o: &DynamicObject) -> bool {
    o.types.as_ref().is_some_and(|t| t.kind == "StatefulSet")
        && o.metadata.name.as_deref() == Some(crate::names::control_plane::RELEASE)
}

/// Writes the gate's annotations on the rendered StatefulSet.
pub fn stamp(rendered: &mut [DynamicObject], hash: &str, rolled_at: Option<Timestamp>) {
    if let Some(s) = rendered
        .iter_mut()
        .find(|o| is_control_plane_statefulset(o))
    {
        let annotations = s.metadata.annotations.get_or_insert_default();
        annotations.insert(TEMPLATE_HASH_ANNOTATION.into(), hash.into());
        match rolled_at {
            Some(at) => annotations.insert(ROLLED_AT_ANNOTATION.into(), at.to_string()),
            None => annotations.remove(ROLLED_AT_ANNOTATION),
        };
    }
}

fn hash_of(s: &StatefulSet) -> Option<&str> {
    s.annotations()
        .get(TEMPLATE_HASH_ANNOTATION)
        .map(String::as_str)
}

fn rolled_at(s: &StatefulSet) -> Option<Timestamp> {
    s.annotations().get(ROLLED_AT_ANNOTATION)?.parse().ok()
}

/// Restarting over an older template, not yet running the new one on every replica.
fn rolling(s: &StatefulSet) -> bool {
    rolled_at(s).is_some() && !running(Some(s))
}

fn failed(s: &StatefulSet, policy: RollPolicy, now: Timestamp) -> bool {
    rolling(s)
        && rolled_at(s).is_some_and(|at| {
            Duration::try_from(now.duration_since(at)).is_ok_and(|d| d > policy.deadline)
        })
}

/// The tenant a control plane's StatefulSet belongs to (its namespace says).
fn tenant_of(s: &StatefulSet) -> String {
    let ns = s.namespace().unwrap_or_default();
    crate::names::tenant_of_namespace(&ns)
        .unwrap_or(&ns)
        .to_owned()
}

/// The turn of `tenant`, whose control plane is `live` and renders to `want`, among every control
/// plane's StatefulSet (`all`, the cache) and the other tenants granted a restart lately
/// (`granted`). Pure.
pub fn turn(
    tenant: &str,
    live: Option<&StatefulSet>,
    want: &str,
    all: &[Arc<StatefulSet>],
    granted: &[String],
    policy: RollPolicy,
    now: Timestamp,
) -> Turn {
    let Some(live) = live else {
        // Its first start: nothing restarts.
        return Turn::Apply { rolled_at: None };
    };
    match hash_of(live) {
        Some(h) if h == want => {
            return Turn::Apply {
                rolled_at: rolled_at(live),
            };
        }
        // Applied before the gate existed: what it runs is unknown, so it is not held back (the
        // apply restarts it only if the template did change).
        None => return Turn::Apply { rolled_at: None },
        Some(_) if !running(Some(live)) => {
            // Not running anyway (its first start, or a restart over a template that changed
            // again since): applying takes nothing down that answers, and a restart keeps its
            // turn.
            return Turn::Apply {
                rolled_at: rolled_at(live).map(|_| now),
            };
        }
        Some(_) => {}
    }
    let others = all.iter().filter(|s| tenant_of(s) != tenant);
    let mut rolling_now: Vec<String> = Vec::new();
    for s in others {
        if failed(s, policy, now) {
            return Turn::Halted {
                failed: tenant_of(s),
            };
        }
        if rolling(s) {
            rolling_now.push(tenant_of(s));
        }
    }
    for g in granted.iter().filter(|g| *g != tenant) {
        if !rolling_now.contains(g) {
            rolling_now.push(g.clone());
        }
    }
    rolling_now.sort();
    match rolling_now.len() < policy.max_rolling {
        true => Turn::Apply {
            rolled_at: Some(now),
        },
        false => Turn::Wait {
            rolling: rolling_now,
        },
    }
}

/// What `ControlPlaneReady` adds while a tenant's new control plane waits (its status is what the
/// running control plane says: the tenant keeps working on the old template).
pub fn explain(workload: &mut Desired, turn: &Turn, policy: RollPolicy) {
    match turn {
        Turn::Apply { .. } => {}
        Turn::Wait { rolling } => {
            workload.reason = "UpdateWaiting".into();
            workload.message = format!(
                "{}; what it runs changed, and it restarts in its turn: {} of at most {} control planes are restarting ({})",
                workload.message,
                rolling.len(),
                policy.max_rolling,
                rolling.join(", ")
            );
        }
        Turn::Halted { failed } => {
            workload.reason = "UpdateHalted".into();
            workload.message = format!(
                "{}; what it runs changed, but no control plane restarts for it while tenant {failed}'s does not run again {} s after its restart (fix or undo the change)",
                workload.message,
                policy.deadline.as_secs()
            );
        }
    }
}

/// [`turn`] with the grants of the last moments, one decision at a time (reconciles of different
/// tenants run concurrently).
#[derive(Default)]
pub struct Gate {
    /// Tenant -> (the template hash granted, when).
    granted: Mutex<HashMap<String, (String, Instant)>>,
}

impl Gate {
    pub fn turn(
        &self,
        tenant: &str,
        live: Option<&StatefulSet>,
        want: &str,
        all: &[Arc<StatefulSet>],
        policy: RollPolicy,
    ) -> Turn {
        let Ok(mut granted) = self.granted.lock() else {
            return Turn::Apply { rolled_at: None };
        };
        // A grant is done with once the cache shows its StatefulSet with that template.
        granted.retain(|t, (hash, at)| {
            at.elapsed() < GRANT_HELD
                && !all
                    .iter()
                    .any(|s| tenant_of(s) == *t && hash_of(s) == Some(hash.as_str()))
        });
        let others: Vec<String> = granted.keys().cloned().collect();
        let turn = turn(tenant, live, want, all, &others, policy, Timestamp::now());
        let restarts = live.is_some_and(|l| hash_of(l).is_some_and(|h| h != want));
        if restarts && matches!(turn, Turn::Apply { .. }) {
            granted.insert(tenant.to_owned(), (want.to_owned(), Instant::now()));
        }
        turn
    }

    /// Forgets a tenant that is gone.
    pub fn forget(&self, tenant: &str) {
        if let Ok(mut g) = self.granted.lock() {
            g.remove(tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{StatefulSetSpec, StatefulSetStatus};
    use kube::api::ObjectMeta;

    use super::*;

    const POLICY: RollPolicy = RollPolicy {
        max_rolling: 2,
        deadline: Duration::from_secs(600),
    };

    fn now() -> Timestamp {
        "2026-12-06T12:00:00Z".parse().unwrap()
    }

    /// A tenant's StatefulSet that last applied `hash`; `rolled` seconds before now if it rolled;
    /// running it or not.
    fn sts(tenant: &str, hash: &str, rolled: Option<i64>, running: bool) -> Arc<StatefulSet> {
        let mut annotations = std::collections::BTreeMap::new();
        annotations.insert(TEMPLATE_HASH_ANNOTATION.to_owned(), hash.to_owned());
        if let Some(s) = rolled {
            let at = now() - k8s_openapi::jiff::SignedDuration::from_secs(s);
            annotations.insert(ROLLED_AT_ANNOTATION.to_owned(), at.to_string());
        }
        let ready = i32::from(running);
        Arc::new(StatefulSet {
            metadata: ObjectMeta {
                name: Some("vcluster".into()),
                namespace: Some(format!("kubespaces-tenant-{tenant}")),
                generation: Some(2),
                annotations: Some(annotations),
                ..Default::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(1),
                ..Default::default()
            },
            status: Some(StatefulSetStatus {
                observed_generation: Some(2),
                ready_replicas: Some(ready),
                updated_replicas: Some(ready),
                replicas: 1,
                ..Default::default()
            }),
        })
    }

    fn turn_of(tenant: &str, all: &[Arc<StatefulSet>], granted: &[String]) -> Turn {
        let live = all.iter().find(|s| tenant_of(s) == tenant).map(|s| &**s);
        turn(tenant, live, "new", all, granted, POLICY, now())
    }

    #[test]
    fn a_first_start_and_an_unchanged_template_are_applied_at_once() {
        let all = [
            sts("a", "new", Some(30), false),
            sts("b", "new", Some(30), false),
        ];
        assert_eq!(turn_of("c", &all, &[]), Turn::Apply { rolled_at: None });
        // Unchanged: its own roll time is kept, whatever else rolls.
        assert!(matches!(
            turn_of("a", &all, &[]),
            Turn::Apply { rolled_at: Some(_) }
        ));
    }

    #[test]
    fn at_most_max_rolling_restart_at_once() {
        let all = [
            sts("a", "new", Some(30), false),
            sts("b", "old", None, true),
            sts("c", "old", None, true),
        ];
        assert_eq!(
            turn_of("b", &all, &[]),
            Turn::Apply {
                rolled_at: Some(now())
            }
        );
        // b was granted a moment ago and the cache does not show it yet.
        assert_eq!(
            turn_of("c", &all, &["b".into()]),
            Turn::Wait {
                rolling: vec!["a".into(), "b".into()]
            }
        );
        // Once a came back, c's turn.
        let all = [
            sts("a", "new", Some(30), true),
            sts("b", "new", Some(5), false),
            sts("c", "old", None, true),
        ];
        assert!(matches!(turn_of("c", &all, &[]), Turn::Apply { .. }));
    }

    #[test]
    fn a_control_plane_that_does_not_come_back_halts_the_roll() {
        let all = [
            sts("a", "new", Some(601), false),
            sts("b", "old", None, true),
        ];
        assert_eq!(turn_of("b", &all, &[]), Turn::Halted { failed: "a".into() });
        // Within the deadline it only counts as rolling.
        let all = [
            sts("a", "new", Some(599), false),
            sts("b", "old", None, true),
        ];
        assert!(matches!(turn_of("b", &all, &[]), Turn::Apply { .. }));
    }

    #[test]
    fn a_control_plane_applied_before_the_gate_is_not_held_back() {
        let mut legacy = (*sts("a", "x", None, true)).clone();
        legacy.metadata.annotations = None;
        let all = [
            Arc::new(legacy),
            sts("b", "new", Some(1), false),
            sts("c", "new", Some(1), false),
        ];
        assert_eq!(turn_of("a", &all, &[]), Turn::Apply { rolled_at: None });
    }

    #[test]
    fn the_hash_is_of_the_pod_template_only() {
        let object = |template: serde_json::Value, replicas: i64| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "vcluster"},
                "spec": {"replicas": replicas, "template": template},
            }))
            .unwrap()
        };
        let a = template_hash(&[object(serde_json::json!({"spec": {"x": 1}}), 1)]);
        let b = template_hash(&[object(serde_json::json!({"spec": {"x": 1}}), 2)]);
        let c = template_hash(&[object(serde_json::json!({"spec": {"x": 2}}), 1)]);
        assert!(a.is_some());
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut rendered = [object(serde_json::json!({}), 1)];
        stamp(&mut rendered, "h", Some(now()));
        assert_eq!(
            rendered[0]
                .annotations()
                .get(TEMPLATE_HASH_ANNOTATION)
                .map(String::as_str),
            Some("h")
        );
        stamp(&mut rendered, "h", None);
        assert!(!rendered[0].annotations().contains_key(ROLLED_AT_ANNOTATION));
    }
}
