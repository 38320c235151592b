//! From the tenant control plane's live objects, as read, to the conditions the status says about
//! them: its workload, its route and its apps listener. Pure; the credential's condition comes
//! from requests through the route and is made where they are sent
//! (`reconcile::control_plane`).

use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::Pod},
    apimachinery::pkg::apis::meta::v1::Condition,
};
use kube::{Resource, api::DynamicObject};

use crate::{
    build::{
        control_plane::{apps, route, settings::ParentRef},
        sleep,
    },
    conditions::{
        API_REACHABLE, API_ROUTE_ACCEPTED, APPS_CERTIFICATE_READY, APPS_LISTENER_PROGRAMMED,
        ASLEEP, CONTROL_PLANE_READY, Desired, FALLING_ASLEEP, WAKING,
    },
    names::control_plane as names,
};

/// Whether the control plane's StatefulSet runs the current revision on every replica.
pub fn running(statefulset: Option<&StatefulSet>) -> bool {
    statefulset.is_some_and(|s| {
        let status = s.status.as_ref();
        let want = s.spec.replicas.unwrap_or(1);
        // Scaled to no pod (asleep), it does not run, whatever its status still says.
        want > 0
            && status.and_then(|st| st.ready_replicas).unwrap_or(0) >= want
            && status.and_then(|st| st.observed_generation) >= s.metadata.generation
            && status.and_then(|st| st.updated_replicas).unwrap_or(0) >= want
    })
}

/// Whether the control plane's StatefulSet is scaled to no pod and has none left.
pub fn stopped(statefulset: Option<&StatefulSet>) -> bool {
    statefulset.is_some_and(|s| {
        let status = s.status.as_ref();
        s.spec.replicas == Some(0)
            && status.map_or(0, |st| st.replicas) == 0
            && status.and_then(|st| st.observed_generation) >= s.metadata.generation
    })
}

/// The conditions of a sleeping control plane: the workload and the credential's check say why
/// they are not looked at, and [`ASLEEP`] whether its pod is gone yet.
pub fn sleeping(ns: &str, stopped: bool, decision: &sleep::Decision) -> [Desired; 3] {
    let why = match (decision.asleep, decision.last_active) {
        (Some(sleep::Cause::Idle), Some(at)) => {
            format!(
                "no activity since {at}: no connection to its API, wake request or return to Ready"
            )
        }
        (Some(sleep::Cause::Idle), None) => "no activity".to_owned(),
        _ => "a sleep request later than the tenant API's last use".to_owned(),
    };
    let reason = decision.asleep.unwrap_or(sleep::Cause::Requested).reason();
    let asleep = match stopped {
        true => Desired::new(
            ASLEEP,
            true,
            reason,
            format!(
                "the control plane sleeps ({why}): StatefulSet {ns}/{} runs no pod; its data, CA \
                 and kubeconfig are kept, the tenant's workloads keep running, and the first \
                 connection to the tenant API wakes it",
                names::RELEASE
            ),
        ),
        false => Desired::new(
            ASLEEP,
            false,
            FALLING_ASLEEP,
            format!("StatefulSet {ns}/{} is stopping its pod", names::RELEASE),
        ),
    };
    [
        Desired::new(
            CONTROL_PLANE_READY,
            true,
            "Asleep",
            format!(
                "StatefulSet {ns}/{} is scaled to no pod while the tenant sleeps",
                names::RELEASE
            ),
        ),
        Desired::new(
            API_REACHABLE,
            true,
            "Asleep",
            "not checked while the control plane sleeps; checked again when it wakes",
        ),
        asleep,
    ]
}

/// While a control plane that slept comes back (the tenant's last [`ASLEEP`] condition says it
/// slept or was waking): [`ASLEEP`] False, [`WAKING`], with the step it waits for. None once
/// every step is done, or for a tenant that did not sleep.
pub fn waking(previous: Option<&Condition>, details: &[Desired]) -> Option<Desired> {
    previous
        .filter(|c| c.status == "True" || [WAKING, FALLING_ASLEEP].contains(&c.reason.as_str()))?;
    let waiting = details.iter().find(|d| !d.status)?;
    Some(Desired::new(
        ASLEEP,
        false,
        WAKING,
        format!("waking: {}: {}", waiting.type_, waiting.message),
    ))
}

/// What the control plane's pod waits for, when the StatefulSet does not run: not scheduled
/// (and the scheduler's reason: CPU, memory, a volume not provisioned), a container waiting
/// (an image not pulled, a crash loop) or not passing its probes. None when there is no more to
/// say. The admission guard already keeps the tenant from making a pod of that name
/// (`build::control_plane_guard`); a pod the StatefulSet does not control is not read either,
/// should one exist, since what it says would not be the platform's.
pub fn pod_waiting(pod: Option<&Pod>, statefulset: Option<&StatefulSet>) -> Option<String> {
    let statefulset_uid = statefulset?.meta().uid.as_deref()?;
    let Some(pod) = pod else {
        return Some(format!(
            "pod {} does not exist yet",
            names::CONTROL_PLANE_POD
        ));
    };
    let controlled = pod
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == statefulset_uid);
    if !controlled {
        return None;
    }
    let name = names::CONTROL_PLANE_POD;
    if pod.meta().deletion_timestamp.is_some() {
        return Some(format!("pod {name} is terminating"));
    }
    let status = pod.status.as_ref()?;
    let unscheduled = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        return Some(format!(
            "pod {name} is not scheduled: {}: {}",
            c.reason.as_deref().unwrap_or("no reason"),
            c.message
                .as_deref()
                .unwrap_or("no message")
                .trim_end_matches('.')
        ));
    }
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .map(|c| ("init container", c))
        .chain(
            status
                .container_statuses
                .iter()
                .flatten()
                .map(|c| ("container", c)),
        );
    let mut unready = None;
    for (kind, c) in containers {
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
        let reason = waiting.and_then(|w| w.reason.as_deref());
        // Creating and initializing are what starting is; anything else is worth saying.
        if let Some(reason) =
            reason.filter(|r| !matches!(*r, "ContainerCreating" | "PodInitializing"))
        {
            let last = c
                .last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map(|t| {
                    format!(
                        " (last exit {}: {})",
                        t.exit_code,
                        t.reason.as_deref().unwrap_or("no reason")
                    )
                })
                .unwrap_or_default();
            let message = waiting
                .and_then(|w| w.message.as_deref())
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            return Some(format!(
                "{kind} {} of pod {name} is waiting: {reason}{message}{last}",
                c.name
            ));
        }
        let started = c.state.as_ref().is_some_and(|s| s.running.is_some());
        if unready.is_none() && kind == "container" && started && !c.ready {
            unready = Some(format!(
                "container {} of pod {name} runs but is not ready yet",
                c.name
            ));
        }
    }
    if unready.is_some() {
        return unready;
    }
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    // The StatefulSet's status counts a ready pod a moment later; and the operator reads that
    // status from its watch: when this stays, the watch is behind.
    ready.then(|| format!("pod {name} is ready; the StatefulSet's status does not say so yet"))
}

/// `ControlPlaneReady`: the workload runs and has written its admin kubeconfig. `why`: what its
/// pod waits for, when it does not run ([`pod_waiting`]).
pub fn workload(
    ns: &str,
    running: bool,
    admin_written: bool,
    chart_version: &str,
    why: Option<String>,
) -> Desired {
    match (running, admin_written) {
        (false, _) => Desired::new(
            CONTROL_PLANE_READY,
            false,
            "Starting",
            match why {
                Some(why) => format!(
                    "StatefulSet {ns}/{} is not ready yet: {why}",
                    names::RELEASE
                ),
                None => format!("StatefulSet {ns}/{} is not ready yet", names::RELEASE),
            },
        ),
        (true, false) => Desired::new(
            CONTROL_PLANE_READY,
            false,
            "WaitingForAdminSecret",
            format!(
                "the control plane runs; waiting for it to write Secret {ns}/{}",
                names::ADMIN_SECRET
            ),
        ),
        (true, true) => Desired::new(
            CONTROL_PLANE_READY,
            true,
            "Running",
            format!(
                "vCluster {} (chart {chart_version}) runs in {ns}",
                names::RELEASE
            ),
        ),
    }
}

/// Whether the platform Gateway accepted the route (reason and message when not).
pub fn route_accepted(
    route: Option<&DynamicObject>,
    ns: &str,
    gateway: &ParentRef,
) -> Result<(), (String, String)> {
    match route {
        Some(r) => route::accepted(r, gateway),
        None => Err((
            "Creating".into(),
            format!("TLSRoute {ns}/{} does not exist yet", names::API_ROUTE),
        )),
    }
}

/// `ApiRouteAccepted`, from [`route_accepted`].
pub fn route(accepted: &Result<(), (String, String)>, ns: &str, host: &str) -> Desired {
    match accepted {
        Ok(()) => Desired::new(
            API_ROUTE_ACCEPTED,
            true,
            "Accepted",
            format!(
                "TLSRoute {ns}/{} routes {host} to the control plane",
                names::API_ROUTE
            ),
        ),
        Err((reason, message)) => {
            Desired::new(API_ROUTE_ACCEPTED, false, reason.clone(), message.clone())
        }
    }
}

/// `AppsCertificateReady` and `AppsListenerProgrammed`: the apps certificate issued, and the
/// apps listener programmed with it, serving `served`.
pub fn apps(
    certificate: Option<&DynamicObject>,
    gateway: Option<&DynamicObject>,
    ns: &str,
    served: &str,
) -> [Desired; 2] {
    let certificate = match apps::certificate_ready(certificate) {
        Ok(()) => Desired::new(
            APPS_CERTIFICATE_READY,
            true,
            "Issued",
            format!(
                "Certificate {ns}/{} is issued and current",
                names::APPS_CERTIFICATE
            ),
        ),
        Err((reason, message)) => Desired::new(APPS_CERTIFICATE_READY, false, reason, message),
    };
    let listener = match apps::listener_programmed(gateway) {
        Ok(()) => Desired::new(
            APPS_LISTENER_PROGRAMMED,
            true,
            "Programmed",
            format!("Gateway {ns}/{} serves {served}", names::APPS_GATEWAY),
        ),
        Err((reason, message)) => Desired::new(APPS_LISTENER_PROGRAMMED, false, reason, message),
    };
    [certificate, listener]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{StatefulSetSpec, StatefulSetStatus};

    fn set(generation: i64, status: StatefulSetStatus) -> StatefulSet {
        StatefulSet {
            metadata: kube::api::ObjectMeta {
                generation: Some(generation),
                ..Default::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(1),
                ..Default::default()
            },
            status: Some(status),
        }
    }

    #[test]
    fn a_control_plane_sleeps_once_scaled_to_zero_with_no_pod_left() {
        let mut scaled = set(
            3,
            StatefulSetStatus {
                replicas: 1,
                ready_replicas: Some(1),
                updated_replicas: Some(1),
                observed_generation: Some(3),
                ..Default::default()
            },
        );
        scaled.spec.replicas = Some(0);
        assert!(!running(Some(&scaled)), "scaled to zero is not running");
        assert!(!stopped(Some(&scaled)), "its pod is still there");
        scaled.status = Some(StatefulSetStatus {
            observed_generation: Some(3),
            ..Default::default()
        });
        assert!(stopped(Some(&scaled)));
        let idle = sleep::Decision {
            asleep: Some(sleep::Cause::Idle),
            ..sleep::Decision::awake()
        };
        let [workload, reachable, asleep] = sleeping("ns", true, &idle);
        assert!(workload.status && reachable.status && asleep.status);
        assert_eq!(asleep.reason, "Idle");
        let [.., stopping] = sleeping("ns", false, &idle);
        assert_eq!(
            (stopping.status, stopping.reason.as_str()),
            (false, FALLING_ASLEEP)
        );
    }

    #[test]
    fn a_tenant_that_slept_is_waking_until_every_step_is_done() {
        let slept = Condition {
            type_: ASLEEP.into(),
            status: "True".into(),
            reason: "SleepRequested".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        };
        let starting = vec![
            Desired::new(CONTROL_PLANE_READY, false, "Starting", "not ready yet"),
            Desired::new(API_REACHABLE, false, "Waiting", "waiting"),
        ];
        let waking_now = waking(Some(&slept), &starting).unwrap();
        assert_eq!(
            (waking_now.status, waking_now.reason.as_str()),
            (false, WAKING)
        );
        assert!(
            waking_now
                .message
                .contains("ControlPlaneReady: not ready yet")
        );
        let done = vec![Desired::new(CONTROL_PLANE_READY, true, "Running", "")];
        assert_eq!(waking(Some(&slept), &done), None);
        assert_eq!(waking(None, &starting), None, "a new tenant is not waking");
        let invalid = Condition {
            status: "False".into(),
            reason: "SleepRequestInvalid".into(),
            ..slept
        };
        assert_eq!(waking(Some(&invalid), &starting), None);
    }

    #[test]
    fn the_workload_runs_only_when_every_replica_is_ready_and_updated_at_its_generation() {
        let current = StatefulSetStatus {
            ready_replicas: Some(1),
            updated_replicas: Some(1),
            observed_generation: Some(2),
            ..Default::default()
        };
        assert!(running(Some(&set(2, current.clone()))));
        assert!(!running(None));
        // A new revision the controller has not seen yet, one not rolled out, one not ready.
        assert!(!running(Some(&set(3, current.clone()))));
        let rolling = StatefulSetStatus {
            updated_replicas: Some(0),
            ..current.clone()
        };
        assert!(!running(Some(&set(2, rolling))));
        let starting = StatefulSetStatus {
            ready_replicas: None,
            ..current
        };
        assert!(!running(Some(&set(2, starting))));
    }

    #[test]
    fn control_plane_ready_says_what_it_waits_for() {
        let ns = "kubespaces-tenant-a";
        let starting = workload(ns, false, true, "0.36.1", None);
        assert_eq!(
            (starting.status, starting.reason.as_str()),
            (false, "Starting")
        );
        let waiting = workload(ns, true, false, "0.36.1", None);
        assert_eq!(waiting.reason, "WaitingForAdminSecret");
        assert!(waiting.message.contains(names::ADMIN_SECRET));
        let running = workload(ns, true, true, "0.36.1", None);
        assert!(running.status && running.message.contains("chart 0.36.1"));
    }

    /// The StatefulSet `uid` and its pod with `status`, owned by `owner` (a uid).
    fn pod(owner: &str, status: serde_json::Value) -> (StatefulSet, Pod) {
        let statefulset = StatefulSet {
            metadata: kube::api::ObjectMeta {
                uid: Some("sts-uid".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let pod = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "vcluster-0",
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vcluster",
                    "uid": owner, "controller": true
                }]
            },
            "status": status,
        }))
        .unwrap();
        (statefulset, pod)
    }

    #[test]
    fn the_pod_says_what_the_control_plane_waits_for() {
        let (sts, unscheduled) = pod(
            "sts-uid",
            serde_json::json!({"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient cpu."
            }]}),
        );
        assert_eq!(
            pod_waiting(Some(&unscheduled), Some(&sts)).as_deref(),
            Some(
                "pod vcluster-0 is not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu"
            )
        );
        let (_, crashing) = pod(
            "sts-uid",
            serde_json::json!({"phase": "Running", "containerStatuses": [{
                "name": "syncer", "ready": false, "restartCount": 3, "image": "", "imageID": "",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
            }]}),
        );
        assert_eq!(
            pod_waiting(Some(&crashing), Some(&sts)).as_deref(),
            Some(
                "container syncer of pod vcluster-0 is waiting: CrashLoopBackOff: back-off 40s (last exit 1: Error)"
            )
        );
        let (_, probing) = pod(
            "sts-uid",
            serde_json::json!({"phase": "Running", "containerStatuses": [{
                "name": "syncer", "ready": false, "restartCount": 0, "image": "", "imageID": "",
                "state": {"running": {}}
            }]}),
        );
        assert_eq!(
            pod_waiting(Some(&probing), Some(&sts)).as_deref(),
            Some("container syncer of pod vcluster-0 runs but is not ready yet")
        );
        assert_eq!(
            pod_waiting(None, Some(&sts)).as_deref(),
            Some("pod vcluster-0 does not exist yet")
        );
        let (_, ready) = pod(
            "sts-uid",
            serde_json::json!({"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}
            ]}),
        );
        assert_eq!(
            pod_waiting(Some(&ready), Some(&sts)).as_deref(),
            Some("pod vcluster-0 is ready; the StatefulSet's status does not say so yet")
        );
        let starting = workload("ns", false, false, "0.36.1", pod_waiting(None, Some(&sts)));
        assert!(
            starting
                .message
                .ends_with("is not ready yet: pod vcluster-0 does not exist yet")
        );
    }

    #[test]
    fn a_pod_the_statefulset_does_not_control_says_nothing() {
        // A pod of that name the StatefulSet does not control: its status is not the platform's.
        let (sts, impostor) = pod(
            "someone-else",
            serde_json::json!({"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "pay the tenant"
            }]}),
        );
        assert_eq!(pod_waiting(Some(&impostor), Some(&sts)), None);
        assert_eq!(pod_waiting(Some(&impostor), None), None);
    }

    #[test]
    fn a_missing_route_is_being_created() {
        let gateway = ParentRef {
            namespace: "kubespaces-system".into(),
            name: "platform".into(),
            section: "tenant-api".into(),
        };
        let accepted = route_accepted(None, "kubespaces-tenant-a", &gateway);
        let condition = route(&accepted, "kubespaces-tenant-a", "a.api.example.com");
        assert_eq!(
            (condition.status, condition.reason.as_str()),
            (false, "Creating")
        );
        let condition = route(&Ok(()), "kubespaces-tenant-a", "a.api.example.com");
        assert!(condition.status && condition.message.contains("a.api.example.com"));
    }
}
