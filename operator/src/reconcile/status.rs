//! Status: computed from conditions (pure), written only when it changed.

use std::time::Duration;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::EventType,
};
use serde_json::json;

use super::{Context, Pass, publish};
use crate::{
    api::{QuotaStatus, Tenant, TenantStatus},
    conditions::{self, Desired, Phase},
    error::Result,
    names, observe,
};

/// The status after a successful pass over the host side.
pub fn from_pass(tenant: &Tenant, outcome: &Pass) -> TenantStatus {
    let mut details = outcome.details.clone();
    let asleep = outcome
        .control_plane
        .as_ref()
        .and_then(|cp| cp.asleep.as_ref())
        .is_some_and(|a| a.status);
    if let Some(cp) = &outcome.control_plane {
        details.extend(cp.details.iter().cloned());
    }
    let ready = match &outcome.control_plane {
        Some(_) if asleep => format!(
            "the tenant sleeps: the first connection to its API, or a wake request (annotation \
             {}), starts its control plane again",
            names::WAKE_REQUESTED_ANNOTATION
        ),
        Some(cp) => {
            let api = cp
                .endpoints
                .as_ref()
                .and_then(|e| e.api.clone())
                .unwrap_or_default();
            format!(
                "the tenant control plane answers at {api} with the kubeconfig in Secret {}/{}",
                names::namespace(&tenant.name_any()),
                crate::api::KUBECONFIG_SECRET
            )
        }
        None => observe::ready_message(tenant),
    };
    let mut summary = conditions::summarize(details, outcome.stalled.clone(), &ready);
    // After the summary: it does not hold Ready back.
    summary.extend(outcome.connection.clone());
    summary.extend(
        outcome
            .control_plane
            .as_ref()
            .and_then(|cp| cp.asleep.clone()),
    );
    let mut status = with_conditions(tenant, summary, outcome.quota.clone());
    if let Some(cp) = &outcome.control_plane {
        status.endpoints = cp.endpoints.clone();
        status.control_plane = cp.status.clone();
        status.kubeconfig_secret_ref = cp.kubeconfig.clone().or(status.kubeconfig_secret_ref);
    }
    status
}

/// The status with the given conditions; the phase and observedGeneration follow from them.
/// Quota figures are kept from the current status when none are given.
pub fn with_conditions(
    tenant: &Tenant,
    desired: Vec<Desired>,
    quota: Option<QuotaStatus>,
) -> TenantStatus {
    let existing = tenant.status.clone().unwrap_or_default();
    let generation = tenant.metadata.generation;
    let now = Time(Timestamp::now());
    let conditions = conditions::merge(&existing.conditions, desired, generation, &now);
    let phase = conditions::phase(&conditions, tenant.metadata.deletion_timestamp.is_some());
    // observedGeneration moves only when this generation reached a verdict (Ready or a
    // permanent failure): Flux and kstatus read it as "this spec has been fully applied".
    let verdict = match phase {
        Phase::Ready | Phase::Asleep => Some(conditions::READY),
        Phase::Failed => Some(conditions::STALLED),
        _ => None,
    };
    let reached = verdict.is_some_and(|v| {
        conditions
            .iter()
            .any(|c| c.type_ == v && c.observed_generation == generation)
    });
    let observed_generation = if reached {
        generation
    } else {
        existing.observed_generation
    };
    let request_token = names::RECONCILE_REQUEST_ANNOTATIONS
        .iter()
        .find_map(|a| tenant.annotations().get(*a).cloned());
    TenantStatus {
        phase: Some(phase.as_str().to_owned()),
        observed_generation,
        namespace: Some(names::namespace(&tenant.name_any())),
        quota: quota.or(existing.quota),
        last_handled_reconcile_at: request_token.or(existing.last_handled_reconcile_at),
        conditions,
        ..existing
    }
}

/// Whether a phase change is worth an Event (a line in `kubectl describe`): Failed, Deleting and
/// Asleep, and Ready again after Failed or Waking. A tenant's first Ready is not: its status says so (the Ready
/// condition, with the time), and an Event would be one more write for every tenant created —
/// the largest part of what provisioning many tenants at once cost beyond the writes it cannot
/// avoid. Pending and Provisioning are visible in the status too.
fn announced(old: Option<&str>, new: Option<&str>) -> bool {
    let (ready, failed, deleting, asleep) = (
        Phase::Ready.as_str(),
        Phase::Failed.as_str(),
        Phase::Deleting.as_str(),
        Phase::Asleep.as_str(),
    );
    match new {
        _ if old == new => false,
        Some(p) if p == failed || p == deleting || p == asleep => true,
        Some(p) if p == ready => old == Some(failed) || old == Some(Phase::Waking.as_str()),
        _ => false,
    }
}

/// How long after a tenant turned Ready changes of its quota usage alone wait to be written.
const USAGE_SETTLE: Duration = Duration::from_secs(10);

/// How long to hold `new` back, when it differs from `old` only in the quota usage and the
/// tenant turned Ready less than [`USAGE_SETTLE`] ago. Right after a namespace is made, the
/// controller-manager adds objects of its own (the `kube-root-ca.crt` ConfigMap) and the quota
/// controller counts them a moment after the quota is enforced: written as they come, those
/// counts would double the status writes of every new tenant, and compete with the tenants still
/// waiting to be provisioned. Held back, they are written once, together. Later usage changes
/// are written at once.
fn usage_settling(
    old: Option<&TenantStatus>,
    new: &TenantStatus,
    now: Timestamp,
) -> Option<Duration> {
    let old = old?;
    let ready_since = old
        .conditions
        .iter()
        .find(|c| c.type_ == conditions::READY && c.status == "True")?
        .last_transition_time
        .0;
    let (old_quota, new_quota) = (old.quota.as_ref()?, new.quota.as_ref()?);
    let same_but_usage = TenantStatus {
        quota: Some(QuotaStatus {
            used: old_quota.used.clone(),
            hard: new_quota.hard.clone(),
        }),
        ..new.clone()
    };
    if same_but_usage != *old {
        return None;
    }
    let since = Duration::try_from(now.duration_since(ready_since)).unwrap_or(Duration::ZERO);
    USAGE_SETTLE
        .checked_sub(since)
        .filter(|left| !left.is_zero())
}

/// Writes `new` unless it equals the current status (or only its quota usage changed, right after
/// the tenant turned Ready: then it returns when to look again, see [`usage_settling`]), records
/// the phase in the metrics, and reports phase transitions as Events.
pub async fn write(
    api: &Api<Tenant>,
    tenant: &Tenant,
    new: TenantStatus,
    ctx: &Context,
) -> Result<Option<Duration>> {
    let name = tenant.name_any();
    let phase_of = |s: Option<&TenantStatus>| s.and_then(|s| s.phase.clone());
    let old_phase = phase_of(tenant.status.as_ref());
    let new_phase = phase_of(Some(&new));
    if let Some(p) = Phase::ALL
        .iter()
        .find(|p| Some(p.as_str()) == new_phase.as_deref())
    {
        ctx.metrics.set_phase(&name, Some(*p));
    }
    if tenant.status.as_ref() == Some(&new) {
        return Ok(None);
    }
    if let Some(wait) = usage_settling(tenant.status.as_ref(), &new, Timestamp::now()) {
        return Ok(Some(wait));
    }
    let was_ready = tenant
        .condition(conditions::READY)
        .is_some_and(|c| c.status == "True");
    let now_ready = new
        .conditions
        .iter()
        .any(|c| c.type_ == conditions::READY && c.status == "True");
    let body = json!({"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant", "status": new});
    let params = PatchParams::apply(names::STATUS_FIELD_MANAGER).force();
    let patched = api
        .patch_status(&name, &params, &Patch::Apply(&body))
        .await?;
    // The next reconcile may start before the watch delivers this write: remember it.
    ctx.recent.record(
        super::status_key(tenant),
        patched.resource_version(),
        new.clone(),
    );

    // Ready again after a wake: since the wake began (the Asleep condition left True); a first
    // Ready (or one after a failure): since the creation.
    let waking = old_phase.as_deref() == Some(Phase::Waking.as_str());
    let since = match waking {
        true => tenant
            .condition(conditions::ASLEEP)
            .map(|c| c.last_transition_time.0),
        false => tenant.creation_timestamp().map(|t| t.0),
    };
    if now_ready
        && !was_ready
        && let Some(since) = since
        && let Ok(elapsed) = std::time::Duration::try_from(Timestamp::now().duration_since(since))
    {
        match waking {
            true => ctx.metrics.observe_wake(elapsed),
            false => ctx.metrics.observe_time_to_ready(elapsed),
        }
    }
    if old_phase != new_phase {
        tracing::info!(tenant = %name, from = ?old_phase, to = ?new_phase, "phase changed");
    }
    if announced(old_phase.as_deref(), new_phase.as_deref()) {
        let phase = new_phase.unwrap_or_default();
        let ready = new.conditions.iter().find(|c| c.type_ == conditions::READY);
        let note = ready.map(|c| c.message.clone()).unwrap_or_default();
        let type_ = if phase == Phase::Failed.as_str() {
            EventType::Warning
        } else {
            EventType::Normal
        };
        publish(ctx, &tenant.object_ref(&()), type_, &phase, &note);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};

    use super::*;

    fn ready_status(since: Timestamp, configmaps: &str) -> TenantStatus {
        let q = |v: &str| {
            std::collections::BTreeMap::from([("configmaps".to_owned(), Quantity(v.to_owned()))])
        };
        TenantStatus {
            phase: Some("Ready".into()),
            quota: Some(QuotaStatus {
                hard: q("50"),
                used: q(configmaps),
            }),
            conditions: vec![Condition {
                type_: conditions::READY.into(),
                status: "True".into(),
                reason: "Available".into(),
                message: "ready".into(),
                last_transition_time: Time(since),
                observed_generation: Some(1),
            }],
            ..TenantStatus::default()
        }
    }

    #[test]
    fn usage_alone_waits_a_moment_after_ready_then_goes_out_at_once() {
        let ready_at = Timestamp::now();
        let later = |s: i64| ready_at + k8s_openapi::jiff::SignedDuration::from_secs(s);
        let old = ready_status(ready_at, "0");
        let counted = ready_status(ready_at, "1");
        let wait = usage_settling(Some(&old), &counted, later(3));
        assert_eq!(wait, Some(Duration::from_secs(7)));
        assert_eq!(usage_settling(Some(&old), &counted, later(10)), None);
        assert_eq!(usage_settling(Some(&old), &counted, later(60)), None);
    }

    #[test]
    fn anything_but_usage_goes_out_at_once() {
        let ready_at = Timestamp::now();
        let old = ready_status(ready_at, "0");
        let mut failed = ready_status(ready_at, "1");
        failed.phase = Some("Failed".into());
        assert_eq!(usage_settling(Some(&old), &failed, ready_at), None);
        let mut hard = ready_status(ready_at, "0");
        if let Some(q) = hard.quota.as_mut() {
            q.hard.insert("configmaps".into(), Quantity("60".into()));
        }
        assert_eq!(usage_settling(Some(&old), &hard, ready_at), None);
        // Not Ready yet, or no status at all: written at once.
        let mut provisioning = old.clone();
        provisioning.conditions[0].status = "False".into();
        assert_eq!(
            usage_settling(Some(&provisioning), &counted(ready_at), ready_at),
            None
        );
        assert_eq!(usage_settling(None, &old, ready_at), None);
    }

    fn counted(at: Timestamp) -> TenantStatus {
        ready_status(at, "1")
    }

    #[test]
    fn events_for_failures_deletions_and_recoveries_not_for_every_new_tenant() {
        let [pending, provisioning, ready, failed, deleting] = [
            Phase::Pending,
            Phase::Provisioning,
            Phase::Ready,
            Phase::Failed,
            Phase::Deleting,
        ]
        .map(|p| Some(p.as_str()));
        for first in [None, pending, provisioning] {
            assert!(!announced(first, ready), "first Ready from {first:?}");
        }
        assert!(announced(ready, failed));
        assert!(announced(provisioning, failed));
        assert!(announced(ready, deleting));
        assert!(announced(failed, ready), "a recovery is news");
        assert!(!announced(failed, failed));
        assert!(!announced(ready, ready));
        assert!(!announced(ready, provisioning));
        let [asleep, waking] = [Phase::Asleep, Phase::Waking].map(|p| Some(p.as_str()));
        assert!(announced(ready, asleep), "falling asleep is news");
        assert!(!announced(asleep, waking));
        assert!(announced(waking, ready), "and so is the wake's end");
    }
}
