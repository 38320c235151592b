//! Wiring: watches, caches and the controller loop. No domain logic here.

use std::{future::Future, sync::Arc, time::Duration};

use futures::{StreamExt, channel::mpsc};
use k8s_openapi::api::{
    apps::v1::StatefulSet,
    authentication::v1::SelfSubjectReview,
    coordination::v1::Lease,
    core::v1::{LimitRange, Namespace, ResourceQuota, Service},
    discovery::v1::EndpointSlice,
    networking::v1::NetworkPolicy,
    rbac::v1::RoleBinding,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    core::DeserializeGuard,
    runtime::{
        Controller, WatchStreamExt,
        controller::Config as ControllerConfig,
        events::{Recorder, Reporter},
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use serde::de::DeserializeOwned;
use thiserror::Error;
use tokio::sync::Notify;
use tracing::{info, warn};

use super::config::RunConfig;
use crate::{
    api::Tenant,
    apply::recent::RecentWrites,
    build::control_plane::settings::ServiceRef,
    metrics::Metrics,
    names,
    reconcile::{self, Caches, Context, control_plane::ControlPlane},
};

#[derive(Debug, Error)]
pub enum StartError {
    #[error(
        "the Tenant CRD is not installed or not readable ({0}); install the chart (charts/kubespaces), or the manifests: `kubespaces-operator manifests | kubectl apply --server-side -f -`"
    )]
    CrdMissing(#[source] kube::Error),
    #[error(
        "the caches of {1} did not fill within {0:?}: the operator may lack list or watch on them \
         (its ClusterRole {role}, generated from operator/src/build/access.rs, grants both), or the API \
         server does not answer",
        role = crate::build::access::OPERATOR_CLUSTER_ROLE
    )]
    CachesNotReady(Duration, String),
    /// The control-plane settings are incomplete.
    #[error("{0}")]
    Config(String),
    #[error(
        "cannot read the host's Kubernetes version, the operator's own identity or the API server's \
         EndpointSlice default/kubernetes: {0}"
    )]
    Version(#[source] kube::Error),
}

type TenantRef = ObjectRef<DeserializeGuard<Tenant>>;

/// Drops what the operator never reads from cached objects (they are most of the cache's
/// memory): managed fields and kubectl's last-applied copy of the whole object.
fn slim<K: Resource>(object: &mut K) {
    object.managed_fields_mut().clear();
    object
        .annotations_mut()
        .remove("kubectl.kubernetes.io/last-applied-configuration");
}

/// Watches one kind of host object (those with the tenant label) into a cache, and sends the
/// owning tenant of every change (including deletions) to `triggers`.
fn watch_children<K>(client: &Client, triggers: mpsc::UnboundedSender<TenantRef>) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    watch_children_with(client, triggers, Watching::default())
}

/// What a watch of host objects does besides filling its cache and triggering reconciles.
#[derive(Default)]
struct Watching {
    /// Woken once the cache holds each change.
    changed: Option<Arc<Notify>>,
    /// The reconciler's own writes: their echoes trigger no reconcile (see
    /// [`RecentWrites::is_echo`]).
    echoes_of: Option<Arc<RecentWrites>>,
}

/// [`watch_children`], with [`Watching`].
fn watch_children_with<K>(
    client: &Client,
    triggers: mpsc::UnboundedSender<TenantRef>,
    watching: Watching,
) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let config = watcher::Config::default()
        .labels(names::TENANT_LABEL)
        .any_semantic();
    let stream = watcher(Api::<K>::all(client.clone()), config)
        .backoff(super::watch_backoff())
        .modify(slim)
        .reflect(writer)
        .touched_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(object) => {
                    if let Some(changed) = &watching.changed {
                        changed.notify_waiters();
                    }
                    if let Some(tenant) = object.labels().get(names::TENANT_LABEL) {
                        // The same key the reconciler records its write of this object under.
                        let key = crate::apply::recent::Key::of(tenant, &object);
                        let version = object.resource_version();
                        if watching
                            .echoes_of
                            .as_ref()
                            .is_some_and(|r| r.is_echo(&key, version.as_deref()))
                        {
                            continue;
                        }
                        let _ = triggers.unbounded_send(ObjectRef::new(tenant));
                    }
                }
                Err(e) => warn!(kind = %K::kind(&()), error = %e, "watch error; retrying"),
            }
        }
    });
    store
}

/// Watches the waker's activity Leases (in its namespace, by the label it writes) into a cache,
/// and sends the tenant of every change to `triggers`: a connection to a sleeping tenant wakes
/// it through this watch.
fn watch_activity(
    client: &Client,
    namespace: &str,
    triggers: mpsc::UnboundedSender<TenantRef>,
) -> Store<Lease> {
    let (store, writer) = reflector::store();
    let selector = format!(
        "{}={}",
        names::MANAGED_BY_LABEL,
        crate::waker::activity::MANAGED_BY
    );
    let config = watcher::Config::default().labels(&selector).any_semantic();
    let stream = watcher(Api::<Lease>::namespaced(client.clone(), namespace), config)
        .backoff(super::watch_backoff())
        .modify(slim)
        .reflect(writer)
        .touched_objects();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(lease) => {
                    if let Some(tenant) = lease.labels().get(names::TENANT_LABEL) {
                        let _ = triggers.unbounded_send(ObjectRef::new(tenant));
                    }
                }
                Err(e) => warn!(error = %e, "watch of the activity Leases failed; retrying"),
            }
        }
    });
    store
}

/// Runs the controller until `shutdown` resolves. `ready` is called once the caches are warm
/// and the controller is running.
pub async fn run(
    client: Client,
    config: RunConfig,
    metrics: Arc<Metrics>,
    ready: impl FnOnce(),
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), StartError> {
    let tenants: Api<DeserializeGuard<Tenant>> = Api::all(client.clone());
    tenants
        .list(&kube::api::ListParams::default().limit(1))
        .await
        .map_err(StartError::CrdMissing)?;

    let (triggers, trigger_stream) = mpsc::unbounded();
    let recent = Arc::new(RecentWrites::default());
    let waker = config.control_plane.waker_service.clone();
    let caches = warm_caches(&client, triggers, &recent, waker.as_ref()).await?;
    let reporter = Reporter {
        controller: names::MANAGED_BY.into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let control_plane = control_plane(&client, &config).await?;
    let ctx = Arc::new(Context {
        client: client.clone(),
        host: config.host.clone(),
        resync: config.resync,
        caches,
        recorder: Recorder::new(client.clone(), reporter),
        metrics,
        recent: recent.clone(),
        connection_secret_namespaces: config.connection_secret_namespaces.clone(),
        control_plane,
    });

    let (tenant_store, tenant_writer) = reflector::store();
    let tenant_stream = tenant_events(tenants, config.selector.as_deref(), tenant_writer, recent);

    info!(selector = ?config.selector, concurrency = config.concurrency, "starting the tenant controller");
    ready();
    Controller::for_stream(tenant_stream, tenant_store)
        .reconcile_on(trigger_stream)
        // The controller backs off its own input after an error too (kube's default: up to 30 s).
        .trigger_backoff(super::watch_backoff())
        .with_config(ControllerConfig::default().concurrency(config.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                match e {
                    kube::runtime::controller::Error::ObjectNotFound(_) => {}
                    e => warn!(error = %e, "controller"),
                }
            }
        })
        .await;
    info!("tenant controller stopped");
    Ok(())
}

/// Starts the watches of every kind of host object the reconciler reads (their changes go to
/// `triggers`), and returns their caches once all are filled: reconciling before the caches are
/// warm would re-apply every object of every tenant.
async fn warm_caches(
    client: &Client,
    triggers: mpsc::UnboundedSender<TenantRef>,
    recent: &Arc<RecentWrites>,
    waker: Option<&ServiceRef>,
) -> Result<Caches, StartError> {
    let quota_changed = Arc::new(Notify::new());
    // The kinds the reconciler writes itself (host::ensure): their echoes are no news.
    let own = || Watching {
        changed: None,
        echoes_of: Some(recent.clone()),
    };
    let caches = Caches {
        namespaces: watch_children_with::<Namespace>(client, triggers.clone(), own()),
        quotas: watch_children_with::<ResourceQuota>(
            client,
            triggers.clone(),
            Watching {
                changed: Some(quota_changed.clone()),
                ..own()
            },
        ),
        quota_changed,
        limit_ranges: watch_children_with::<LimitRange>(client, triggers.clone(), own()),
        owner_bindings: watch_children_with::<RoleBinding>(client, triggers.clone(), own()),
        network_policies: watch_children_with::<NetworkPolicy>(client, triggers.clone(), own()),
        statefulsets: watch_children::<StatefulSet>(client, triggers.clone()),
        activity: waker.map(|w| watch_activity(client, &w.namespace, triggers.clone())),
        services: watch_children::<Service>(client, triggers),
    };
    let warmup = Duration::from_secs(120);
    async fn filled(ready: impl Future<Output = impl Sized>, within: Duration) -> bool {
        tokio::time::timeout(within, ready).await.is_ok()
    }
    let filled = futures::join!(
        filled(caches.namespaces.wait_until_ready(), warmup),
        filled(caches.quotas.wait_until_ready(), warmup),
        filled(caches.limit_ranges.wait_until_ready(), warmup),
        filled(caches.owner_bindings.wait_until_ready(), warmup),
        filled(caches.network_policies.wait_until_ready(), warmup),
        filled(caches.statefulsets.wait_until_ready(), warmup),
        filled(caches.services.wait_until_ready(), warmup),
        async {
            match &caches.activity {
                Some(a) => filled(a.wait_until_ready(), warmup).await,
                None => true,
            }
        },
    );
    let empty: Vec<&str> = [
        (filled.0, "Namespaces"),
        (filled.1, "ResourceQuotas"),
        (filled.2, "LimitRanges"),
        (filled.3, "RoleBindings"),
        (filled.4, "NetworkPolicies"),
        (filled.5, "StatefulSets"),
        (filled.6, "Services"),
        (filled.7, "the waker's activity Leases"),
    ]
    .into_iter()
    .filter_map(|(ok, kind)| (!ok).then_some(kind))
    .collect();
    match empty.is_empty() {
        true => Ok(caches),
        false => Err(StartError::CachesNotReady(warmup, empty.join(", "))),
    }
}

/// The tenant control plane, when the configuration asks for one: what it needs from the host
/// (its Kubernetes version, the operator's own identity, the API server's addresses) is read
/// once, here.
async fn control_plane(
    client: &Client,
    config: &RunConfig,
) -> Result<Option<Arc<ControlPlane>>, StartError> {
    let Some(settings) = config
        .control_plane
        .vcluster()
        .map_err(StartError::Config)?
    else {
        return Ok(None);
    };
    // helm renders for the host's version (the chart gates fields on it).
    let version = client
        .apiserver_version()
        .await
        .map_err(StartError::Version)?;
    let kube_version = format!("{}.{}", version.major, version.minor.trim_end_matches('+'));
    let review: Api<SelfSubjectReview> = Api::all(client.clone());
    let me = review
        .create(&Default::default(), &SelfSubjectReview::default())
        .await
        .map_err(StartError::Version)?;
    let username = me
        .status
        .and_then(|s| s.user_info?.username)
        .ok_or_else(|| {
            StartError::Config("the API server did not say who the operator is".into())
        })?;
    info!(chart = %settings.chart.display(), version = %settings.chart_version, %kube_version, operator = %username, "tenant control planes: vCluster");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let slice = slices
        .get("kubernetes")
        .await
        .map_err(StartError::Version)?;
    let api_server = crate::build::control_plane::network::ApiServer {
        addresses: slice
            .endpoints
            .iter()
            .flatten()
            .flat_map(|e| e.addresses.clone())
            .collect(),
        ports: slice
            .ports
            .iter()
            .flatten()
            .filter_map(|p| p.port)
            .collect(),
    };
    Ok(Some(Arc::new(ControlPlane::new(
        settings,
        crate::build::control_plane::subject_of(&username),
        api_server,
        config.host.base_domain.clone(),
        config.host.pod_security.clone(),
        kube_version,
        config.resync,
    ))))
}

/// The Tenants (those `selector` picks) into the controller's cache, as a stream of the changes
/// the controller reconciles.
fn tenant_events(
    tenants: Api<DeserializeGuard<Tenant>>,
    selector: Option<&str>,
    writer: reflector::store::Writer<DeserializeGuard<Tenant>>,
    recent: Arc<RecentWrites>,
) -> impl futures::Stream<Item = Result<DeserializeGuard<Tenant>, watcher::Error>> + Send + use<> {
    let mut watch_config = watcher::Config::default().any_semantic();
    if let Some(selector) = selector {
        watch_config = watch_config.labels(selector);
    }
    watcher(tenants, watch_config)
        .backoff(super::watch_backoff())
        .modify(slim::<DeserializeGuard<Tenant>>)
        .reflect(writer)
        .applied_objects()
        // The echo of our own status or finalizer write is no news (the cache holds it all
        // the same): without this, every write of ours would cost another reconcile.
        .filter(move |event| {
            let echo = match event {
                Ok(DeserializeGuard(Ok(tenant))) => {
                    let version = tenant.resource_version();
                    let version = version.as_deref();
                    recent.is_echo(&reconcile::status_key(tenant), version)
                        || recent.is_echo(&reconcile::finalizers_key(tenant), version)
                }
                _ => false,
            };
            futures::future::ready(!echo)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_retry_within_two_seconds() {
        let delays: Vec<Duration> = super::super::watch_backoff().take(30).collect();
        assert_eq!(delays.len(), 30, "never gives up");
        assert!(
            delays.iter().all(|d| *d <= Duration::from_secs(2)),
            "{delays:?}"
        );
    }
}
