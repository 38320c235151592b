//! Whether a tenant's control plane should sleep (pure): after `afterIdle` without activity, or
//! on a sleep request later than its last activity. Activity is the tenant turning Ready (once
//! provisioned, and at the end of each wake), a connection to its API (the waker's Lease) or a
//! wake request. A tenant that is not Ready does not sleep: what it waits for stays in sight (and
//! a sleep request made while it wakes is overtaken by the wake). Requests are annotations any
//! door may write (kubectl, GitOps, the CLI, the portal); the operator never removes them, so an
//! object a GitOps tool applies stays as written.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::DynamicObject;
use serde_json::json;

use crate::names::{self, SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION};

/// What the requests on a Tenant ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requests {
    pub sleep: Option<Timestamp>,
    pub wake: Option<Timestamp>,
}

impl Requests {
    /// The requests in a Tenant's annotations. A value that is no RFC 3339 time is an error
    /// that names the annotation and the fix; the other request still counts.
    pub fn of(annotations: &BTreeMap<String, String>) -> (Self, Option<String>) {
        let mut problem = None;
        let mut read = |key: &str| {
            let value = annotations.get(key)?;
            match value.parse::<Timestamp>() {
                Ok(t) => Some(t),
                Err(_) => {
                    problem = Some(format!(
                        "annotation {key} is {value:?}, not an RFC 3339 time: write the time of \
                         the request, such as {}, or remove it",
                        Timestamp::UNIX_EPOCH
                    ));
                    None
                }
            }
        };
        let requests = Requests {
            sleep: read(SLEEP_REQUESTED_ANNOTATION),
            wake: read(WAKE_REQUESTED_ANNOTATION),
        };
        (requests, problem)
    }
}

/// Why a control plane sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A sleep request later than any activity.
    Requested,
    /// No activity for the tenant's `afterIdle`.
    Idle,
}

impl Cause {
    /// The `Asleep` condition's reason.
    pub fn reason(self) -> &'static str {
        match self {
            Cause::Requested => "SleepRequested",
            Cause::Idle => "Idle",
        }
    }
}

/// Whether a tenant's control plane sleeps, and when to decide again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Why it sleeps; None: awake.
    pub asleep: Option<Cause>,
    /// The last activity: the latest of the tenant turning Ready, a connection to its API and a
    /// wake request.
    pub last_active: Option<Timestamp>,
    /// How long until it falls asleep for idleness, while awake.
    pub idle_in: Option<Duration>,
    /// What the last activity was, while awake: `connection` or `request` (a wake request), or
    /// `ready` (the metric of wakes by cause).
    pub woken_by: Option<&'static str>,
    /// A request that cannot be read, for the owner.
    pub problem: Option<String>,
}

impl Decision {
    pub fn awake() -> Self {
        Decision {
            asleep: None,
            last_active: None,
            idle_in: None,
            woken_by: None,
            problem: None,
        }
    }
}

/// The decision at `now` for a tenant Ready since `ready_since` (None while it is not Ready); whose
/// API last had a connection at `connection` (the waker's activity Lease); with these
/// annotations and `after_idle` (None: never idle).
pub fn decide(
    now: Timestamp,
    annotations: &BTreeMap<String, String>,
    ready_since: Option<Timestamp>,
    connection: Option<Timestamp>,
    after_idle: Option<Duration>,
) -> Decision {
    let (requests, problem) = Requests::of(annotations);
    if ready_since.is_none() {
        return Decision {
            problem,
            ..Decision::awake()
        };
    }
    let sources = [
        ("ready", ready_since),
        ("connection", connection),
        ("request", requests.wake),
    ];
    let (woken_by, last_active) = sources
        .into_iter()
        .filter_map(|(source, at)| at.map(|at| (source, at)))
        .max_by_key(|(_, at)| *at)
        .map_or((None, None), |(source, at)| (Some(source), Some(at)));
    let requested = match (requests.sleep, last_active) {
        (Some(sleep), Some(active)) => sleep > active,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let idle_at = after_idle
        .and_then(|d| SignedDuration::try_from(d).ok())
        .zip(last_active)
        .and_then(|(d, active)| active.checked_add(d).ok());
    let (asleep, idle_in) = match idle_at {
        _ if requested => (Some(Cause::Requested), None),
        Some(at) if now >= at => (Some(Cause::Idle), None),
        Some(at) => (None, Duration::try_from(at.duration_since(now)).ok()),
        None => (None, None),
    };
    Decision {
        woken_by: woken_by.filter(|_| asleep.is_none()),
        asleep,
        last_active,
        idle_in,
        problem,
    }
}

/// The rendered chart with its control plane scaled to no pod: the StatefulSet keeps its volume
/// claim (the datastore), the Secrets keep the CA and the kubeconfig, and everything it synced
/// to the namespace keeps running.
pub fn scaled_to_zero(mut chart: Vec<DynamicObject>) -> Vec<DynamicObject> {
    for o in &mut chart {
        let kind = o.types.as_ref().map(|t| t.kind.as_str());
        if kind == Some("StatefulSet")
            && o.metadata.name.as_deref() == Some(names::control_plane::RELEASE)
        {
            o.data["spec"]["replicas"] = json!(0);
        }
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_sleep_request_holds_until_later_activity() {
        let ready_since = Some(at("2026-12-07T09:00:00Z"));
        let now = at("2026-12-07T12:00:00Z");
        let never = None;
        let decide_with = |pairs: &[(&str, &str)], connection: Option<&str>| {
            decide(
                now,
                &annotations(pairs),
                ready_since,
                connection.map(at),
                never,
            )
        };
        assert_eq!(decide_with(&[], None).asleep, None);
        let sleep = (SLEEP_REQUESTED_ANNOTATION, "2026-12-07T10:00:00Z");
        assert_eq!(decide_with(&[sleep], None).asleep, Some(Cause::Requested));
        // A wake request or a connection after it wakes the tenant; one before does not.
        let wake = (WAKE_REQUESTED_ANNOTATION, "2026-12-07T10:00:01Z");
        assert_eq!(decide_with(&[sleep, wake], None).asleep, None);
        assert_eq!(decide_with(&[sleep, wake], None).woken_by, Some("request"));
        let connected = decide_with(&[sleep], Some("2026-12-07T10:30:00Z"));
        assert_eq!(connected.woken_by, Some("connection"));
        assert_eq!(
            decide_with(&[sleep], Some("2026-12-07T10:30:00Z")).asleep,
            None
        );
        assert_eq!(
            decide_with(&[sleep], Some("2026-12-07T09:30:00Z")).asleep,
            Some(Cause::Requested)
        );
        let offset = (SLEEP_REQUESTED_ANNOTATION, "2026-12-07T11:00:00+01:00");
        let early_wake = (WAKE_REQUESTED_ANNOTATION, "2026-12-07T09:59:00Z");
        assert_eq!(
            decide_with(&[offset, early_wake], None).asleep,
            Some(Cause::Requested),
            "times compare as instants, whatever their offset"
        );
    }

    #[test]
    fn an_idle_tenant_sleeps_after_its_period_and_says_when_until_then() {
        let ready_since = Some(at("2026-12-07T09:00:00Z"));
        let half_hour = Some(Duration::from_secs(1800));
        let decide_at = |now: &str, connection: Option<&str>| {
            decide(
                at(now),
                &annotations(&[]),
                ready_since,
                connection.map(at),
                half_hour,
            )
        };
        let fresh = decide_at("2026-12-07T09:10:00Z", None);
        assert_eq!(
            (fresh.asleep, fresh.idle_in),
            (None, Some(Duration::from_secs(1200)))
        );
        assert_eq!(
            decide_at("2026-12-07T09:30:00Z", None).asleep,
            Some(Cause::Idle)
        );
        let used = decide_at("2026-12-07T09:40:00Z", Some("2026-12-07T09:35:00Z"));
        assert_eq!(used.asleep, None);
        assert_eq!(used.last_active, Some(at("2026-12-07T09:35:00Z")));
        let never = decide(
            at("2027-01-01T00:00:00Z"),
            &annotations(&[]),
            ready_since,
            None,
            None,
        );
        assert_eq!((never.asleep, never.idle_in), (None, None));
    }

    #[test]
    fn a_tenant_not_ready_does_not_sleep() {
        let sleep = annotations(&[(SLEEP_REQUESTED_ANNOTATION, "2026-12-07T10:00:00Z")]);
        let now = at("2026-12-07T12:00:00Z");
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(decide(now, &sleep, None, None, hour).asleep, None);
    }

    #[test]
    fn a_malformed_request_is_named_and_the_other_still_counts() {
        let pairs = [
            (SLEEP_REQUESTED_ANNOTATION, "2026-12-07T10:00:00Z"),
            (WAKE_REQUESTED_ANNOTATION, "tomorrow"),
        ];
        let now = at("2026-12-07T11:00:00Z");
        let ready_since = Some(at("2026-12-07T09:00:00Z"));
        let decision = decide(now, &annotations(&pairs), ready_since, None, None);
        assert_eq!(decision.asleep, Some(Cause::Requested));
        let problem = decision.problem.unwrap();
        assert!(problem.contains(WAKE_REQUESTED_ANNOTATION) && problem.contains("\"tomorrow\""));
        assert!(problem.contains("1970-01-01T00:00:00Z"), "{problem}");
    }

    #[test]
    fn only_the_control_planes_statefulset_is_scaled() {
        let object = |kind: &str, name: &str| {
            let mut o: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": kind,
                "metadata": {"name": name}, "spec": {"replicas": 1}
            }))
            .unwrap();
            o.metadata.name = Some(name.into());
            o
        };
        let chart = scaled_to_zero(vec![
            object("StatefulSet", names::control_plane::RELEASE),
            object("Deployment", names::control_plane::RELEASE),
        ]);
        assert_eq!(chart[0].data["spec"]["replicas"], 0);
        assert_eq!(chart[1].data["spec"]["replicas"], 1);
    }
}
