//! The Tenant reconciler: fetch (from caches) → validate → build (pure) → apply (only what
//! drifted) → status (only when it changed). Teardown lives in [`teardown`].

pub mod drift;
pub mod host;
pub mod observe;
pub mod status;
pub mod teardown;

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace, ResourceQuota},
    networking::v1::NetworkPolicy,
    rbac::v1::RoleBinding,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
    core::DeserializeGuard,
    runtime::{
        controller::Action,
        events::{Event, EventType, Recorder},
        reflector::{ObjectRef, Store},
    },
};
use serde_json::json;
use tracing::{info, warn};

use crate::{
    api::Tenant,
    conditions,
    config::HostConfig,
    error::{Error, Result},
    metrics::Metrics,
    names,
};
use observe::HostObjects;

/// Caches of the host objects of every tenant, kept by watches on the tenant label.
#[derive(Clone)]
pub struct Caches {
    pub namespaces: Store<Namespace>,
    pub quotas: Store<ResourceQuota>,
    pub limit_ranges: Store<LimitRange>,
    pub owner_bindings: Store<RoleBinding>,
    pub network_policies: Store<NetworkPolicy>,
}

impl Caches {
    /// The cached host objects of one tenant.
    pub fn observe(&self, tenant: &str) -> HostObjects {
        let ns = names::namespace(tenant);
        fn get<K>(store: &Store<K>, ns: &str, name: &str) -> Option<K>
        where
            K: Resource<DynamicType = ()> + Clone + 'static,
        {
            store
                .get(&ObjectRef::new(name).within(ns))
                .map(|o| (*o).clone())
        }
        HostObjects {
            namespace: self
                .namespaces
                .get(&ObjectRef::new(&ns))
                .map(|o| (*o).clone()),
            quota: get(&self.quotas, &ns, names::QUOTA),
            limit_range: get(&self.limit_ranges, &ns, names::LIMIT_RANGE),
            owner_binding: get(&self.owner_bindings, &ns, names::OWNER_ROLE_BINDING),
            network_policy: get(&self.network_policies, &ns, names::NETWORK_POLICY),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub host: HostConfig,
    pub resync: Duration,
    pub caches: Caches,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
}

/// How long to wait before looking again at a tenant that is still converging. Watches on the
/// host objects usually trigger the next reconcile sooner.
const CONVERGING_REQUEUE: Duration = Duration::from_secs(10);

pub async fn reconcile(object: Arc<DeserializeGuard<Tenant>>, ctx: Arc<Context>) -> Result<Action> {
    let started = std::time::Instant::now();
    ctx.metrics.reconciles.inc();
    let result = match &object.0 {
        Ok(tenant) => reconcile_tenant(tenant, &ctx).await,
        Err(invalid) => {
            // Never crash-loop on an object we cannot read: report it and wait for a change.
            let name = invalid.metadata.name.clone().unwrap_or_default();
            warn!(tenant = %name, error = %invalid.error, "cannot read Tenant");
            let reference = object.object_ref(&());
            publish(
                &ctx,
                &reference,
                EventType::Warning,
                "InvalidObject",
                &invalid.error,
            )
            .await;
            Ok(Action::await_change())
        }
    };
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

pub fn error_policy(
    _object: Arc<DeserializeGuard<Tenant>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics
        .reconcile_errors
        .get_or_create(&crate::metrics::ErrorLabels {
            reason: error.reason().into(),
        })
        .inc();
    warn!(reason = error.reason(), %error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

#[tracing::instrument(skip_all, fields(tenant = %tenant.name_any(), generation = ?tenant.metadata.generation))]
async fn reconcile_tenant(tenant: &Tenant, ctx: &Context) -> Result<Action> {
    let api: Api<Tenant> = Api::all(ctx.client.clone());
    if is_paused(tenant) {
        let conditions = conditions::paused(tenant.conditions());
        status::write(
            &api,
            tenant,
            status::with_conditions(tenant, conditions, None),
            ctx,
        )
        .await?;
        return Ok(Action::await_change());
    }
    if tenant.metadata.deletion_timestamp.is_some() {
        return teardown::run(&api, tenant, ctx).await;
    }
    if !has_finalizer(tenant) {
        add_finalizer(&api, tenant).await?;
    }
    match host::ensure(tenant, ctx).await {
        Ok(outcome) => {
            let new_status = status::from_outcome(tenant, &outcome);
            let ready = new_status.phase.as_deref() == Some(conditions::Phase::Ready.as_str());
            let stalled = outcome.stalled.is_some();
            status::write(&api, tenant, new_status, ctx).await?;
            Ok(match (ready, stalled) {
                (true, _) => Action::requeue(ctx.resync),
                // A conflicting namespace is not ours to watch; look again now and then.
                (_, true) => Action::requeue(Duration::from_secs(60)),
                _ => Action::requeue(CONVERGING_REQUEUE),
            })
        }
        Err(error) => {
            let conditions = conditions::with_sync_error(
                tenant.conditions(),
                error.reason(),
                &error.to_string(),
            );
            let failed = status::with_conditions(tenant, conditions, None);
            if let Err(e) = status::write(&api, tenant, failed, ctx).await {
                warn!(error = %e, "could not record the reconcile error in status");
            }
            publish(
                ctx,
                &tenant.object_ref(&()),
                EventType::Warning,
                error.reason(),
                &error.to_string(),
            )
            .await;
            Err(error)
        }
    }
}

fn is_paused(tenant: &Tenant) -> bool {
    tenant
        .annotations()
        .get(names::PAUSED_ANNOTATION)
        .is_some_and(|v| v == "true")
}

fn has_finalizer(tenant: &Tenant) -> bool {
    tenant.finalizers().iter().any(|f| f == names::FINALIZER)
}

/// Sets the finalizer list, guarded by the resourceVersion we read so that a concurrent change
/// to the list is never overwritten.
async fn set_finalizers(api: &Api<Tenant>, tenant: &Tenant, finalizers: Vec<String>) -> Result<()> {
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": tenant.resource_version()}});
    match api
        .patch(
            &tenant.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn add_finalizer(api: &Api<Tenant>, tenant: &Tenant) -> Result<()> {
    let mut finalizers = tenant.finalizers().to_vec();
    finalizers.push(names::FINALIZER.to_owned());
    set_finalizers(api, tenant, finalizers).await
}

async fn remove_finalizer(api: &Api<Tenant>, tenant: &Tenant) -> Result<()> {
    let finalizers = tenant
        .finalizers()
        .iter()
        .filter(|f| *f != names::FINALIZER)
        .cloned()
        .collect();
    set_finalizers(api, tenant, finalizers).await?;
    info!(tenant = %tenant.name_any(), "teardown complete, finalizer removed");
    Ok(())
}

/// Publishes an Event on the Tenant. Events are best effort: failing to publish one must not
/// fail the reconcile.
async fn publish(
    ctx: &Context,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    type_: EventType,
    reason: &str,
    note: &str,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, reference).await {
        warn!(error = %e, "could not publish event");
    }
}
