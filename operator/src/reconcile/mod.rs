//! The Tenant reconciler, one pass: `build` the tenant's whole desired state (the chart rendered,
//! then [`desired::of`](crate::build::desired::of), before anything is applied) → the finalizer
//! and the host objects ([`host`]: read from the caches, applied where they drifted) →
//! `provision` the control plane and the connection Secret → `record` the status (written only
//! when it changed) and when to look again.
//! Teardown lives in [`teardown`].

pub mod connection;
pub mod control_plane;
pub mod host;
pub mod status;
pub mod teardown;

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        coordination::v1::Lease,
        core::v1::{LimitRange, Namespace, ResourceQuota, Service},
        networking::v1::NetworkPolicy,
        rbac::v1::RoleBinding,
    },
    jiff::Timestamp,
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
    build::{
        control_plane::settings::parse_after_idle,
        desired::{self, DesiredState},
        settings::HostConfig,
        sleep,
    },
    conditions,
    error::{Error, Result},
    metrics::Metrics,
    names,
};
use crate::{apply::recent, observe::HostObjects};

/// Caches of the host objects of every tenant, kept by watches on the tenant label.
#[derive(Clone)]
pub struct Caches {
    pub namespaces: Store<Namespace>,
    pub quotas: Store<ResourceQuota>,
    /// Woken on every change the quota watch delivers (after the cache holds it): a reconcile
    /// waiting for the quota controller wakes when it answers, not at the next poll.
    pub quota_changed: Arc<tokio::sync::Notify>,
    pub limit_ranges: Store<LimitRange>,
    pub owner_bindings: Store<RoleBinding>,
    pub network_policies: Store<NetworkPolicy>,
    /// The tenant control planes' StatefulSets (the chart's objects carry the tenant label too).
    pub statefulsets: Store<StatefulSet>,
    pub services: Store<Service>,
    /// The waker's activity Leases (with a waker).
    pub activity: Option<Store<Lease>>,
}

impl Caches {
    /// The cached StatefulSet of a tenant's control plane.
    pub fn statefulset(&self, tenant: &str) -> Option<StatefulSet> {
        let ns = names::namespace(tenant);
        self.statefulsets
            .get(&ObjectRef::new(crate::names::control_plane::RELEASE).within(&ns))
            .map(|o| (*o).clone())
    }

    /// When the waker last saw a connection to the tenant's API (its activity Lease).
    pub fn last_connection(&self, tenant: &str, waker_namespace: &str) -> Option<Timestamp> {
        let lease = self
            .activity
            .as_ref()?
            .get(&ObjectRef::new(&names::activity_lease(tenant)).within(waker_namespace))?;
        lease.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)
    }

    /// Whether the cache holds the Service of a tenant's control plane.
    pub fn has_control_plane_service(&self, tenant: &str) -> bool {
        let ns = names::namespace(tenant);
        self.services
            .get(&ObjectRef::new(crate::names::control_plane::RELEASE).within(&ns))
            .is_some()
    }

    /// The cached host objects of one tenant.
    pub fn observe(&self, tenant: &str) -> HostObjects {
        let ns = names::namespace(tenant);
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

/// The cached object `name` of a tenant namespace `ns`.
pub fn get<K>(store: &Store<K>, ns: &str, name: &str) -> Option<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .get(&ObjectRef::new(name).within(ns))
        .map(|o| (*o).clone())
}

pub struct Context {
    pub client: Client,
    pub host: HostConfig,
    pub resync: Duration,
    pub caches: Caches,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    pub recent: Arc<recent::RecentWrites>,
    /// Where `spec.writeConnectionSecretToRef` may point (`--connection-secret-namespaces`).
    pub connection_secret_namespaces: Vec<String>,
    /// The tenant control plane, unless the operator runs with `--control-plane=none`.
    pub control_plane: Option<Arc<crate::reconcile::control_plane::ControlPlane>>,
}

/// What one pass over a Tenant found, from which its status is made ([`status::from_pass`]).
pub struct Pass {
    pub details: Vec<conditions::Desired>,
    /// A permanent problem (reason, message): nothing was applied.
    pub stalled: Option<(String, String)>,
    pub quota: Option<crate::api::QuotaStatus>,
    /// The connection Secret's condition, when the Tenant asks for one (see [`connection`]).
    pub connection: Option<conditions::Desired>,
    /// The tenant control plane, when the operator provisions one.
    pub control_plane: Option<control_plane::Progress>,
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
            let error = Error::InvalidObject(invalid.error.clone());
            warn!(tenant = %name, %error, "cannot read Tenant");
            let reference = object.object_ref(&());
            publish(
                &ctx,
                &reference,
                EventType::Warning,
                error.reason(),
                &error.to_string(),
            );
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

#[tracing::instrument(skip_all, fields(tenant = %cached.name_any(), generation = ?cached.metadata.generation))]
async fn reconcile_tenant(cached: &Tenant, ctx: &Context) -> Result<Action> {
    let own = own_view(cached, ctx);
    let tenant = &own;
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
    // The whole desired control plane is built (the chart rendered) before anything is
    // applied: the quota grows by what it takes, and a broken pin installs nothing of it.
    let built = build(tenant, ctx).await?;
    // The finalizer and the host objects go out together: nothing can be orphaned meanwhile,
    // because the namespace (which holds everything else) carries an owner reference to the
    // Tenant, and the garbage collector removes it should the Tenant vanish first.
    let finalizer = async {
        match tenant.has_teardown_finalizer() {
            true => Ok(()),
            false => add_finalizer(&api, tenant, ctx).await,
        }
    };
    let (finalized, host) = futures::join!(finalizer, host::ensure(tenant, &built.desired, ctx));
    finalized?;
    match provision(tenant, host, built, ctx).await {
        Ok(pass) => record(&api, tenant, &pass, ctx).await,
        Err(error) => {
            record_error(&api, tenant, &error, ctx).await;
            Err(error)
        }
    }
}

/// The tenant's whole desired state, built before anything is applied
/// ([`desired::of`](crate::build::desired::of)).
struct Built {
    desired: DesiredState,
    /// The chart cannot be used until the platform fixes it (reason, message): the host objects
    /// are built without a control plane.
    chart_stalled: Option<(String, String)>,
}

async fn build(tenant: &Tenant, ctx: &Context) -> Result<Built> {
    let (rendered, chart_stalled) = match &ctx.control_plane {
        None => (None, None),
        Some(cp) => match cp.render(tenant).await {
            Ok(r) => (
                Some((cp.platform(), r, sleep_decision(tenant, cp, ctx))),
                None,
            ),
            Err(e) if e.is_permanent() => (None, Some((e.reason().to_owned(), e.to_string()))),
            Err(e) => return Err(e.into()),
        },
    };
    Ok(Built {
        desired: desired::of(tenant, &ctx.host, rendered),
        chart_stalled,
    })
}

/// Whether the tenant's control plane sleeps now: its requests, its creation and the waker's
/// record of its last connection, against its idle period (its own, else the platform's; none
/// without a waker, which alone sees connections).
fn sleep_decision(
    tenant: &Tenant,
    cp: &control_plane::ControlPlane,
    ctx: &Context,
) -> sleep::Decision {
    let settings = &cp.settings;
    let waker = settings.waker.as_ref();
    let after_idle = waker.and_then(|_| {
        let own = tenant
            .spec
            .sleep
            .as_ref()
            .and_then(|s| s.after_idle.as_deref());
        // The CRD admits only what parses; an older object that does not falls back.
        own.and_then(|v| parse_after_idle(v).ok())
            .unwrap_or(settings.sleep_after_idle)
            .0
    });
    let connection =
        waker.and_then(|w| ctx.caches.last_connection(&tenant.name_any(), &w.namespace));
    // Ready stays True while asleep: its last transition is when the tenant last became usable
    // (provisioned, or awake again after a wake), however long that took.
    let ready_since = tenant
        .condition(conditions::READY)
        .filter(|c| c.status == "True")
        .map(|c| c.last_transition_time.0);
    sleep::decide(
        Timestamp::now(),
        tenant.annotations(),
        ready_since,
        connection,
        after_idle,
    )
}

/// The rest of a pass once the host objects are applied (`host`): the control plane and the
/// connection Secret. A stalled step (a conflicting namespace, a broken chart pin) ends the
/// pass with what it found.
async fn provision(
    tenant: &Tenant,
    host: Result<Pass>,
    built: Built,
    ctx: &Context,
) -> Result<Pass> {
    let mut pass = host?;
    if pass.stalled.is_some() {
        return Ok(pass);
    }
    if built.chart_stalled.is_some() {
        pass.stalled = built.chart_stalled;
        return Ok(pass);
    }
    if let (Some(cp), Some(desired)) = (&ctx.control_plane, built.desired.control_plane) {
        let name = tenant.name_any();
        let statefulset = ctx.caches.statefulset(&name);
        let statefulsets = ctx.caches.statefulsets.state();
        let complete = statefulset.is_some() && ctx.caches.has_control_plane_service(&name);
        let progress = cp
            .ensure(
                &ctx.client,
                tenant,
                desired,
                statefulset.as_ref(),
                &statefulsets,
                complete,
            )
            .await?;
        pass.control_plane = Some(progress);
    }
    pass.connection = connection::ensure(tenant, ctx).await?;
    Ok(pass)
}

/// Writes the status the pass found (when it changed) and says when to look again.
async fn record(api: &Api<Tenant>, tenant: &Tenant, pass: &Pass, ctx: &Context) -> Result<Action> {
    let new_status = status::from_pass(tenant, pass);
    if let Some(cause) = pass.control_plane.as_ref().and_then(|c| c.woke) {
        ctx.metrics.count_wake(cause);
    }
    let control_plane_next = pass.control_plane.as_ref().and_then(|c| c.requeue);
    let ready = [conditions::Phase::Ready, conditions::Phase::Asleep]
        .iter()
        .any(|p| new_status.phase.as_deref() == Some(p.as_str()));
    let stalled = pass.stalled.is_some();
    let held_back = status::write(api, tenant, new_status, ctx).await?;
    let next = match (ready, stalled) {
        (true, _) => ctx.resync,
        // A conflicting namespace is not ours to watch; look again now and then.
        (_, true) => Duration::from_secs(60),
        _ => CONVERGING_REQUEUE,
    };
    let next = control_plane_next.map_or(next, |d| next.min(d));
    let next = held_back.map_or(next, |d| next.min(d));
    // While our own writes are preferred to the caches, look again once the caches alone
    // decide, so a change someone made meanwhile is not missed.
    let pending = ctx.recent.pending(&tenant.name_any());
    Ok(Action::requeue(if pending {
        next.min(recent::TRUST)
    } else {
        next
    }))
}

/// Records a failed pass in the status (`Synced` false with the error's reason) and as a
/// Warning Event; the error itself goes back to the controller, which retries.
async fn record_error(api: &Api<Tenant>, tenant: &Tenant, error: &Error, ctx: &Context) {
    let conditions = conditions::with_sync_error(
        tenant.conditions(),
        error.condition_reason(),
        error.reason(),
        &error.to_string(),
    );
    let failed = status::with_conditions(tenant, conditions, None);
    if let Err(e) = status::write(api, tenant, failed, ctx).await {
        warn!(error = %e, "could not record the reconcile error in status");
    }
    publish(
        ctx,
        &tenant.object_ref(&()),
        EventType::Warning,
        error.reason(),
        &error.to_string(),
    );
}

pub(crate) fn finalizers_key(tenant: &Tenant) -> recent::Key {
    recent::Key::new(&tenant.name_any(), "Tenant", "finalizers")
}

pub(crate) fn status_key(tenant: &Tenant) -> recent::Key {
    recent::Key::new(&tenant.name_any(), "Tenant", "status")
}

/// The cached Tenant with our own newer finalizer and status writes laid over it, so a
/// reconcile that runs before the watch delivers them neither repeats nor fights them.
fn own_view(cached: &Tenant, ctx: &Context) -> Tenant {
    let mut tenant = cached.clone();
    let seen = cached.resource_version();
    if let Some(finalizers) = ctx
        .recent
        .current(&finalizers_key(cached), seen.as_deref(), None)
    {
        tenant.metadata.finalizers = Some(finalizers);
    }
    if let Some(status) = ctx
        .recent
        .current(&status_key(cached), seen.as_deref(), None)
    {
        tenant.status = Some(status);
    }
    tenant
}

fn is_paused(tenant: &Tenant) -> bool {
    tenant
        .annotations()
        .get(names::PAUSED_ANNOTATION)
        .is_some_and(|v| v == "true")
}

/// Adds our finalizer, guarded by the resourceVersion we read so that a concurrent change to
/// the list is never overwritten.
async fn add_finalizer(api: &Api<Tenant>, tenant: &Tenant, ctx: &Context) -> Result<()> {
    let mut finalizers = tenant.finalizers().to_vec();
    finalizers.push(names::FINALIZER.to_owned());
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": tenant.resource_version()}});
    let patched = api
        .patch(
            &tenant.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    ctx.recent.record(
        finalizers_key(tenant),
        patched.resource_version(),
        finalizers,
    );
    Ok(())
}

/// Removes our finalizer, guarded by a test of the list as we know it (which includes our
/// own recent writes, so a cache that lags behind them does not cause a conflict).
async fn remove_finalizer(api: &Api<Tenant>, tenant: &Tenant, ctx: &Context) -> Result<()> {
    let current = tenant.finalizers().to_vec();
    let remaining: Vec<String> = current
        .iter()
        .filter(|f| *f != names::FINALIZER)
        .cloned()
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
    ]))
    .map_err(|source| Error::Encoding {
        kind: "finalizer patch",
        source,
    })?;
    match api
        .patch(
            &tenant.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    ctx.recent.forget(&tenant.name_any());
    info!(tenant = %tenant.name_any(), "teardown complete, finalizer removed");
    Ok(())
}

/// Publishes an Event on the Tenant in the background. Events are best effort: they must
/// neither fail nor slow down the reconcile.
fn publish(
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
    let recorder = ctx.recorder.clone();
    let reference = reference.clone();
    tokio::spawn(async move {
        if let Err(e) = recorder.publish(&event, &reference).await {
            warn!(error = %e, "could not publish event");
        }
    });
}
