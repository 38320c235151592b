//! Conditions and the phase: pure functions, no client.
//!
//! `Ready` and `Synced` are always present; `Reconciling` and `Stalled` only while true (kstatus,
//! Flux); detail conditions name the object and the reason when something is stuck. The phase
//! is derived from the conditions in one place, [`phase`]; what the operator does next (requeue,
//! `status.observedGeneration`, Events on a phase change) follows from it, never the reverse.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub const READY: &str = "Ready";
pub const SYNCED: &str = "Synced";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const NAMESPACE_READY: &str = "NamespaceReady";
pub const QUOTA_READY: &str = "QuotaReady";
pub const RBAC_READY: &str = "RBACReady";
pub const NETWORK_POLICY_READY: &str = "NetworkPolicyReady";
pub const DELETION_BLOCKED: &str = "DeletionBlocked";
/// Only with `spec.writeConnectionSecretToRef`; does not hold `Ready` back.
pub const CONNECTION_SECRET_READY: &str = "ConnectionSecretReady";
/// The tenant control plane, step by step (only when the operator provisions one): its
/// workload runs, the Gateway routes its public host to it, and the kubeconfig handed out
/// authenticates through that route.
pub const CONTROL_PLANE_READY: &str = "ControlPlaneReady";
pub const API_ROUTE_ACCEPTED: &str = "APIRouteAccepted";
pub const API_REACHABLE: &str = "APIReachable";
pub const CONTROL_PLANE_READINESS: [&str; 3] =
    [CONTROL_PLANE_READY, API_ROUTE_ACCEPTED, API_REACHABLE];
/// Apps exposure (only when the platform has an apps Gateway class and ClusterIssuer): the
/// tenant's wildcard certificate is issued, and the Gateway programmed its apps listener.
pub const APPS_CERTIFICATE_READY: &str = "AppsCertificateReady";
pub const APPS_LISTENER_PROGRAMMED: &str = "AppsListenerProgrammed";
pub const APPS_READINESS: [&str; 2] = [APPS_CERTIFICATE_READY, APPS_LISTENER_PROGRAMMED];

/// Present only while the tenant sleeps or wakes: True while its control plane runs no pod,
/// False with [`FALLING_ASLEEP`] while its pod stops and with [`WAKING`] until it answers again.
/// Never holds `Ready` back: a sleeping tenant is not failing.
pub const ASLEEP: &str = "Asleep";
pub const FALLING_ASLEEP: &str = "FallingAsleep";
pub const WAKING: &str = "Waking";

/// The detail conditions that must all be true for the tenant to be Ready.
pub const HOST_READINESS: [&str; 4] = [
    NAMESPACE_READY,
    QUOTA_READY,
    RBAC_READY,
    NETWORK_POLICY_READY,
];

/// A condition as the reconciler wants it, before timestamps and generations are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
    /// The generation this condition speaks for; None: the current one. Conditions carried
    /// over unchanged (while paused, or after an error) keep the generation they were
    /// computed for, so they never claim a spec they have not seen.
    pub observed_generation: Option<Option<i64>>,
}

impl Desired {
    pub fn new(
        type_: &'static str,
        status: bool,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason: reason.into(),
            message: message.into(),
            observed_generation: None,
        }
    }
}

/// The phase shown in the PHASE column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    Pending,
    Provisioning,
    Ready,
    Failed,
    Deleting,
    Asleep,
    Waking,
}

impl Phase {
    pub const ALL: [Phase; 7] = [
        Phase::Pending,
        Phase::Provisioning,
        Phase::Ready,
        Phase::Failed,
        Phase::Deleting,
        Phase::Asleep,
        Phase::Waking,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Provisioning => "Provisioning",
            Phase::Ready => "Ready",
            Phase::Failed => "Failed",
            Phase::Deleting => "Deleting",
            Phase::Asleep => "Asleep",
            Phase::Waking => "Waking",
        }
    }
}

fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// The phase, from the conditions alone (and whether the object is being deleted).
pub fn phase(conditions: &[Condition], deleting: bool) -> Phase {
    if deleting {
        Phase::Deleting
    } else if is_true(conditions, STALLED) {
        Phase::Failed
    } else if is_true(conditions, ASLEEP) {
        Phase::Asleep
    } else if !is_true(conditions, READY)
        && conditions
            .iter()
            .any(|c| c.type_ == ASLEEP && c.reason == WAKING)
    {
        Phase::Waking
    } else if is_true(conditions, READY) {
        Phase::Ready
    } else if HOST_READINESS.iter().any(|t| is_true(conditions, t)) {
        Phase::Provisioning
    } else {
        Phase::Pending
    }
}

/// Replaces the condition set with `desired`, keeping `lastTransitionTime` of every condition
/// whose status did not change (so an unchanged tenant gets an identical status and no write).
/// Conditions not in `desired` are dropped: `Reconciling`/`Stalled` vanish when no longer true.
pub fn merge(
    existing: &[Condition],
    desired: Vec<Desired>,
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    desired
        .into_iter()
        .map(|d| {
            let status = if d.status { "True" } else { "False" }.to_owned();
            let last_transition_time = existing
                .iter()
                .find(|c| c.type_ == d.type_ && c.status == status)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            Condition {
                type_: d.type_.to_owned(),
                status,
                reason: d.reason,
                message: d.message,
                observed_generation: d.observed_generation.unwrap_or(generation),
                last_transition_time,
            }
        })
        .collect()
}

/// The summary conditions for a reconcile that finished without error.
///
/// `details` are the detail conditions; `stalled` is a permanent problem (reason, message) that
/// no retry will fix without a change to the spec or the host.
pub fn summarize(
    details: Vec<Desired>,
    stalled: Option<(String, String)>,
    ready_message: &str,
) -> Vec<Desired> {
    let blocking = details.iter().find(|d| !d.status);
    let mut out = Vec::with_capacity(details.len() + 3);
    match (&stalled, blocking) {
        (Some((reason, message)), _) => {
            out.push(Desired::new(READY, false, "Unavailable", message.clone()));
            out.push(Desired::new(SYNCED, true, "ReconcileSuccess", ""));
            out.push(Desired::new(STALLED, true, reason.clone(), message.clone()));
        }
        (None, Some(waiting)) => {
            let message = format!("{}: {}", waiting.type_, waiting.message);
            out.push(Desired::new(READY, false, "Creating", message.clone()));
            out.push(Desired::new(SYNCED, true, "ReconcileSuccess", ""));
            out.push(Desired::new(RECONCILING, true, "Progressing", message));
        }
        (None, None) => {
            out.push(Desired::new(READY, true, "Available", ready_message));
            out.push(Desired::new(SYNCED, true, "ReconcileSuccess", ""));
        }
    }
    out.extend(details);
    out
}

/// The existing conditions of known types, minus those in `drop`, with `Ready` added (False,
/// with `waiting`) when there was none.
fn carried_over(existing: &[Condition], drop: &[&str], waiting: &str) -> Vec<Desired> {
    let mut out: Vec<Desired> = existing
        .iter()
        .filter(|c| !drop.contains(&c.type_.as_str()))
        .filter_map(|c| {
            known_type(&c.type_).map(|t| Desired {
                observed_generation: Some(c.observed_generation),
                ..Desired::new(t, c.status == "True", c.reason.clone(), c.message.clone())
            })
        })
        .collect();
    if !out.iter().any(|d| d.type_ == READY) {
        out.push(Desired::new(READY, false, "Creating", waiting));
    }
    out
}

/// The conditions after a reconcile that failed with a (retryable) error: the summary and
/// details already on the object stay, `Synced` turns false with the error, and the tenant is
/// marked as still reconciling.
pub fn with_sync_error(
    existing: &[Condition],
    condition_reason: &str,
    reason: &str,
    message: &str,
) -> Vec<Desired> {
    let waiting = "waiting for the first successful reconcile";
    let mut out = carried_over(existing, &[SYNCED, RECONCILING, STALLED], waiting);
    let error = format!("{reason}: {message}");
    out.push(Desired::new(SYNCED, false, condition_reason, error.clone()));
    out.push(Desired::new(
        RECONCILING,
        true,
        "ProgressingWithRetry",
        error,
    ));
    out
}

/// The conditions while reconciliation is paused: everything stays, `Synced` says why.
pub fn paused(existing: &[Condition]) -> Vec<Desired> {
    let waiting = "reconciliation is paused before the tenant was provisioned";
    let mut out = carried_over(existing, &[SYNCED, RECONCILING], waiting);
    out.push(Desired::new(
        SYNCED,
        false,
        "ReconcilePaused",
        "reconciliation is paused by the crossplane.io/paused annotation",
    ));
    out
}

/// The conditions while the tenant is being torn down. `blocked` names what is still in the way.
pub fn deleting(blocked: Option<(String, String)>) -> Vec<Desired> {
    let mut out = vec![
        Desired::new(READY, false, "Deleting", "the tenant is being deleted"),
        Desired::new(SYNCED, true, "ReconcileSuccess", ""),
    ];
    if let Some((reason, message)) = blocked {
        out.push(Desired::new(DELETION_BLOCKED, true, reason, message));
    }
    out
}

/// Condition types this operator writes; anything else on the object is not ours to keep.
fn known_type(type_: &str) -> Option<&'static str> {
    [
        READY,
        SYNCED,
        RECONCILING,
        STALLED,
        DELETION_BLOCKED,
        CONNECTION_SECRET_READY,
        ASLEEP,
    ]
    .into_iter()
    .chain(HOST_READINESS)
    .chain(CONTROL_PLANE_READINESS)
    .chain(APPS_READINESS)
    .find(|t| *t == type_)
}

/// What a tenant is waiting for, as `Type: message` (the reason when there is no message): the
/// first condition that is not true, detail conditions before `Ready`. `Reconciling`, `Stalled`
/// and `Synced` say what the operator is doing, not what the tenant waits for, so they are not
/// named. `None` when nothing is unmet. The CLI's `--wait` progress and the portal's tenant page
/// both show this.
pub fn waiting_for(conditions: &[Condition]) -> Option<String> {
    let unmet = |c: &&Condition| {
        c.status != "True" && !matches!(c.type_.as_str(), RECONCILING | STALLED | SYNCED | ASLEEP)
    };
    let chosen = conditions
        .iter()
        .filter(unmet)
        .find(|c| c.type_ != READY)
        .or_else(|| conditions.iter().filter(unmet).find(|c| c.type_ == READY))?;
    let said = if chosen.message.is_empty() {
        &chosen.reason
    } else {
        &chosen.message
    };
    Some(format!("{}: {said}", chosen.type_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn time(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn asleep_and_waking_are_phases_of_their_own() {
        let asleep = |status: bool, reason: &str| Desired::new(ASLEEP, status, reason, "");
        let mut sleeping = summarize(all_details(true), None, "ok");
        sleeping.push(asleep(true, "SleepRequested"));
        let sleeping = merge(&[], sleeping, Some(1), &time(1));
        assert_eq!(phase(&sleeping, false), Phase::Asleep);
        assert_eq!(phase(&sleeping, true), Phase::Deleting);
        let mut waking = summarize(all_details(false), None, "ok");
        waking.push(asleep(false, WAKING));
        assert_eq!(
            phase(&merge(&[], waking, Some(1), &time(1)), false),
            Phase::Waking
        );
        // Falling asleep, or a request that cannot be read: Ready as before.
        for reason in [FALLING_ASLEEP, "SleepRequestInvalid"] {
            let mut c = summarize(all_details(true), None, "ok");
            c.push(asleep(false, reason));
            let c = merge(&[], c, Some(1), &time(1));
            assert_eq!(phase(&c, false), Phase::Ready);
            assert_eq!(waiting_for(&c), None, "{reason} holds nothing back");
        }
    }

    fn detail(type_: &'static str, ok: bool) -> Desired {
        Desired::new(
            type_,
            ok,
            if ok { "Ready" } else { "Waiting" },
            format!("{type_} message"),
        )
    }

    fn all_details(ok: bool) -> Vec<Desired> {
        HOST_READINESS.iter().map(|t| detail(t, ok)).collect()
    }

    /// The conditions of a tenant that became Ready at generation 1, at time 1.
    fn became_ready() -> Vec<Condition> {
        merge(
            &[],
            summarize(all_details(true), None, "ok"),
            Some(1),
            &time(1),
        )
    }

    #[test]
    fn phase_follows_the_conditions() {
        let now = time(1);
        let ready = became_ready();
        assert_eq!(phase(&ready, false), Phase::Ready);
        assert_eq!(phase(&ready, true), Phase::Deleting);

        let mut some = all_details(true);
        some[1].status = false;
        let provisioning = merge(&[], summarize(some, None, "ok"), Some(1), &now);
        assert_eq!(phase(&provisioning, false), Phase::Provisioning);

        let pending = merge(
            &[],
            summarize(all_details(false), None, "ok"),
            Some(1),
            &now,
        );
        assert_eq!(phase(&pending, false), Phase::Pending);
        assert_eq!(phase(&[], false), Phase::Pending);

        let stalled = summarize(
            all_details(true),
            Some(("NamespaceConflict".into(), "taken".into())),
            "ok",
        );
        assert_eq!(
            phase(&merge(&[], stalled, Some(1), &now), false),
            Phase::Failed
        );
    }

    #[test]
    fn ready_and_synced_are_always_present_and_reconciling_only_while_true() {
        let now = time(1);
        for details in [all_details(true), all_details(false)] {
            let c = merge(&[], summarize(details, None, "ok"), Some(1), &now);
            assert!(c.iter().any(|c| c.type_ == READY));
            assert!(c.iter().any(|c| c.type_ == SYNCED));
            assert!(
                c.iter()
                    .all(|c| c.type_ != RECONCILING || c.status == "True")
            );
            assert!(c.iter().all(|c| c.type_ != STALLED));
        }
        let ready = became_ready();
        assert!(ready.iter().all(|c| c.type_ != RECONCILING));
        let stalled = merge(
            &[],
            summarize(all_details(false), Some(("X".into(), "y".into())), "ok"),
            Some(1),
            &now,
        );
        assert!(
            stalled
                .iter()
                .any(|c| c.type_ == STALLED && c.status == "True")
        );
        assert!(
            stalled.iter().all(|c| c.type_ != RECONCILING),
            "never Reconciling and Stalled together"
        );
    }

    #[test]
    fn the_ready_message_names_what_is_missing() {
        let mut details = all_details(true);
        details[1] = Desired::new(
            QUOTA_READY,
            false,
            "WaitingForQuotaController",
            "ResourceQuota ns/q has no status yet",
        );
        let c = summarize(details, None, "ok");
        let ready = c.iter().find(|d| d.type_ == READY).unwrap();
        assert_eq!(
            ready.message,
            "QuotaReady: ResourceQuota ns/q has no status yet"
        );
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time() {
        let first = merge(
            &[],
            summarize(all_details(false), None, "ok"),
            Some(1),
            &time(1),
        );
        let again = merge(
            &first,
            summarize(all_details(false), None, "ok"),
            Some(1),
            &time(2),
        );
        assert_eq!(
            first, again,
            "an unchanged tenant must produce an identical status"
        );
        let ready = merge(
            &again,
            summarize(all_details(true), None, "ok"),
            Some(1),
            &time(3),
        );
        let r = ready.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(r.last_transition_time, time(3));
        let s = ready.iter().find(|c| c.type_ == SYNCED).unwrap();
        assert_eq!(s.last_transition_time, time(1), "Synced stayed True");
    }

    #[test]
    fn a_sync_error_keeps_readiness_and_flags_synced() {
        let ready = became_ready();
        let errored = merge(
            &ready,
            with_sync_error(&ready, "ReconcileError", "KubeApi", "boom"),
            Some(1),
            &time(2),
        );
        let get = |t: &str| errored.iter().find(|c| c.type_ == t).unwrap();
        assert_eq!(get(READY).status, "True");
        assert_eq!(get(SYNCED).status, "False");
        assert_eq!(get(SYNCED).reason, "ReconcileError");
        assert_eq!(get(SYNCED).message, "KubeApi: boom");
        assert_eq!(get(RECONCILING).status, "True");
        assert_eq!(get(NAMESPACE_READY).status, "True");
    }

    #[test]
    fn carried_over_conditions_do_not_claim_a_newer_generation() {
        let ready = became_ready();
        // The spec changed (generation 2) while paused.
        let paused = merge(&ready, paused(&ready), Some(2), &time(2));
        let r = paused.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(
            r.observed_generation,
            Some(1),
            "Ready speaks for generation 1 only"
        );
        let s = paused.iter().find(|c| c.type_ == SYNCED).unwrap();
        assert_eq!(s.observed_generation, Some(2));
    }

    #[test]
    fn pause_keeps_everything_but_synced() {
        let ready = became_ready();
        let paused = merge(&ready, paused(&ready), Some(1), &time(2));
        assert_eq!(phase(&paused, false), Phase::Ready);
        let synced = paused.iter().find(|c| c.type_ == SYNCED).unwrap();
        assert_eq!(
            (synced.status.as_str(), synced.reason.as_str()),
            ("False", "ReconcilePaused")
        );
        let fresh = merge(&[], paused_for_new(), Some(1), &time(1));
        assert!(
            fresh
                .iter()
                .any(|c| c.type_ == READY && c.status == "False")
        );
    }

    fn paused_for_new() -> Vec<Desired> {
        paused(&[])
    }

    #[test]
    fn deletion_names_the_blocker() {
        let c = merge(
            &[],
            deleting(Some(("NamespaceTerminating".into(), "2 pods left".into()))),
            None,
            &time(1),
        );
        assert_eq!(phase(&c, true), Phase::Deleting);
        let blocked = c.iter().find(|c| c.type_ == DELETION_BLOCKED).unwrap();
        assert_eq!(blocked.message, "2 pods left");
        assert!(deleting(None).iter().all(|d| d.type_ != DELETION_BLOCKED));
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: time(0),
            observed_generation: None,
        }
    }

    #[test]
    fn waiting_for_names_the_first_unmet_detail_before_ready() {
        let conditions = [
            condition(READY, "False", "Provisioning", "not ready"),
            condition(RECONCILING, "True", "Progressing", "working"),
            condition(SYNCED, "False", "Error", "apply failed"),
            condition(NAMESPACE_READY, "True", "Created", ""),
            condition(QUOTA_READY, "False", "Pending", "quota not applied"),
            condition(RBAC_READY, "False", "Pending", "rbac not applied"),
        ];
        assert_eq!(
            waiting_for(&conditions).as_deref(),
            Some("QuotaReady: quota not applied")
        );
    }

    #[test]
    fn waiting_for_falls_back_to_ready_and_to_the_reason() {
        let conditions = [
            condition(READY, "Unknown", "Provisioning", ""),
            condition(NAMESPACE_READY, "True", "Created", ""),
            condition(STALLED, "True", "Stuck", "stuck"),
        ];
        assert_eq!(
            waiting_for(&conditions).as_deref(),
            Some("Ready: Provisioning")
        );
    }

    #[test]
    fn waiting_for_nothing_when_all_are_met() {
        let conditions = [
            condition(READY, "True", "Ready", ""),
            condition(SYNCED, "True", "Synced", ""),
            condition(RECONCILING, "True", "Progressing", ""),
        ];
        assert_eq!(waiting_for(&conditions), None);
        assert_eq!(waiting_for(&[]), None);
    }
}
