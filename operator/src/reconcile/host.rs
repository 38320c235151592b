//! The host objects of a tenant, as [`desired::of`](crate::build::desired::of) built them:
//! applied ([`crate::apply::typed`]) only where they are missing or drifted; then the quota given
//! a moment to be enforced.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::{Namespace, ResourceQuota};
use kube::{
    Api, Resource, ResourceExt,
    runtime::reflector::{ObjectRef, Store},
};
use tokio::sync::Notify;
use tracing::debug;

use super::{Context, Pass};
use crate::apply::typed::{Known, apply, create_params};
use crate::{
    api::Tenant,
    build::{desired::DesiredState, settings::HostConfig},
    conditions::{self, Desired},
    error::Result,
    names, observe,
};

pub async fn ensure(tenant: &Tenant, desired: &DesiredState, ctx: &Context) -> Result<Pass> {
    let (host_config, wanted) = (&desired.config, &desired.host);
    let name = tenant.name_any();
    let ns = names::namespace(&name);
    let cached = ctx.caches.observe(&name);
    let cached_quota_version = cached.quota.as_ref().and_then(|q| q.resource_version());
    let client = &ctx.client;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let desired_ns = wanted.namespace.clone();

    // The cache holds only namespaces with the tenant label, so a namespace of the same name
    // that is not ours is invisible to it. When we know of no namespace, create (not apply)
    // it: if it exists after all, read it and check whose it is before touching it.
    let mut namespace = Known::of(&name, &desired_ns, cached.namespace, &ctx.recent);
    if namespace.object.is_none() {
        namespace.object = match namespaces.create(&create_params(), &desired_ns).await {
            Ok(created) => Some(namespace.wrote(created, &ctx.recent)),
            Err(kube::Error::Api(s)) if s.code == 409 => namespaces.get_opt(&ns).await?,
            Err(e) => return Err(e.into()),
        };
    }
    if let Some((reason, message)) = observe::namespace_conflict(tenant, namespace.object.as_ref())
    {
        // Nothing of the tenant's exists; the namespace condition says why.
        let mut details = observe::details(tenant, host_config, &observe::HostObjects::default());
        details[0] = Desired::new(
            conditions::NAMESPACE_READY,
            false,
            reason.clone(),
            message.clone(),
        );
        return Ok(Pass {
            details,
            stalled: Some((reason, message)),
            quota: None,
            connection: None,
            control_plane: None,
        });
    }
    let mut host = observe::HostObjects {
        namespace: apply(namespaces.clone(), desired_ns, namespace, &ctx.recent).await?,
        ..observe::HostObjects::default()
    };
    let terminating = host
        .namespace
        .as_ref()
        .is_some_and(|n| n.metadata.deletion_timestamp.is_some());
    if !terminating {
        // Independent objects: apply them concurrently.
        let known = &ctx.recent;
        let (quota, limit_range) = (&wanted.quota, &wanted.limit_range);
        let (binding, policy) = (&wanted.owner_binding, &wanted.network_policy);
        (
            host.quota,
            host.limit_range,
            host.owner_binding,
            host.network_policy,
            (),
        ) = futures::try_join!(
            apply(
                Api::namespaced(client.clone(), &ns),
                quota.clone(),
                Known::of(&name, quota, cached.quota, known),
                known
            ),
            apply(
                Api::namespaced(client.clone(), &ns),
                limit_range.clone(),
                Known::of(&name, limit_range, cached.limit_range, known),
                known
            ),
            apply(
                Api::namespaced(client.clone(), &ns),
                binding.clone(),
                Known::of(&name, binding, cached.owner_binding, known),
                known
            ),
            apply(
                Api::namespaced(client.clone(), &ns),
                policy.clone(),
                Known::of(&name, policy, cached.network_policy, known),
                known
            ),
            control_plane_access(&name, desired, ctx),
        )?;
    }
    // Only a quota written just now is worth waiting for: one that stays unenforced without a
    // change of ours (quota controller down) is reported, not waited on at every reconcile.
    let quota_written =
        host.quota.as_ref().map(|q| q.resource_version()) != Some(cached_quota_version);
    if let Some(quota) = &host.quota
        && quota_written
        && !observe::quota_enforced(tenant, host_config, quota)
    {
        host.quota = Some(settle_quota(tenant, host_config, quota.clone(), ctx).await);
    }
    Ok(Pass {
        details: observe::details(tenant, host_config, &host),
        stalled: None,
        quota: observe::quota_status(host.quota.as_ref()),
        connection: None,
        control_plane: None,
    })
}

/// The operator's own RoleBinding in the namespace and the control plane's path to the host's API
/// server, when the tenant has a control plane: applied with the host objects, before the chart
/// that needs them.
async fn control_plane_access(tenant: &str, desired: &DesiredState, ctx: &Context) -> Result<()> {
    let Some(cp) = &desired.control_plane else {
        return Ok(());
    };
    let ns = names::namespace(tenant);
    let (binding, policy) = (&cp.operator_binding, &cp.network_policy);
    let cached_binding = super::get(&ctx.caches.owner_bindings, &ns, &binding.name_any());
    let cached_policy = super::get(&ctx.caches.network_policies, &ns, &policy.name_any());
    futures::try_join!(
        apply(
            Api::namespaced(ctx.client.clone(), &ns),
            binding.clone(),
            Known::of(tenant, binding, cached_binding, &ctx.recent),
            &ctx.recent
        ),
        apply(
            Api::namespaced(ctx.client.clone(), &ns),
            policy.clone(),
            Known::of(tenant, policy, cached_policy, &ctx.recent),
            &ctx.recent
        ),
    )?;
    Ok(())
}

/// How long a reconcile waits for the quota controller to compute a quota it just wrote.
const QUOTA_SETTLE: Duration = Duration::from_secs(2);

/// Waits briefly for the quota controller to enforce `quota`. It usually answers within a
/// fraction of a second, and waiting here lets the first status written be the final one
/// instead of "Provisioning" followed by "Ready": half the status writes.
#[tracing::instrument(skip_all, level = "debug")]
async fn settle_quota(
    tenant: &Tenant,
    host_config: &HostConfig,
    quota: ResourceQuota,
    ctx: &Context,
) -> ResourceQuota {
    let key = ObjectRef::new(names::QUOTA).within(&names::namespace(&tenant.name_any()));
    let started = tokio::time::Instant::now();
    let enforced = cached_when(
        &ctx.caches.quotas,
        &ctx.caches.quota_changed,
        &key,
        QUOTA_SETTLE,
        |q| observe::quota_enforced(tenant, host_config, q),
    )
    .await;
    debug!(waited = ?started.elapsed(), enforced = enforced.is_some(), "quota settle");
    enforced.map_or(quota, |q| (*q).clone())
}

/// The cached object at `key` once `wanted` holds for it, or None after `within`. Woken by
/// `changed` (which the watch fires once the cache holds a change), so it returns the moment
/// the watch delivers: a poll would add half its period to every tenant's time-to-Ready, and
/// hold the reconcile slot that long.
async fn cached_when<K>(
    store: &Store<K>,
    changed: &Notify,
    key: &ObjectRef<K>,
    within: Duration,
    wanted: impl Fn(&K) -> bool,
) -> Option<Arc<K>>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let found = async {
        loop {
            // Registered before the cache is read, so a change in between still wakes us.
            let next = changed.notified();
            let mut next = std::pin::pin!(next);
            next.as_mut().enable();
            if let Some(cached) = store.get(key)
                && wanted(&cached)
            {
                return cached;
            }
            next.await;
        }
    };
    tokio::time::timeout(within, found).await.ok()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ResourceQuotaStatus;
    use kube::runtime::{reflector, watcher};

    use super::*;

    fn quota(version: &str, enforced: bool) -> ResourceQuota {
        let mut q = ResourceQuota::default();
        q.metadata.name = Some(names::QUOTA.into());
        q.metadata.namespace = Some("kubespaces-tenant-a".into());
        q.metadata.resource_version = Some(version.into());
        q.status = enforced.then(ResourceQuotaStatus::default);
        q
    }

    // Time is paused: the wait's 2 s pass at once when nothing else can run, so a wait that is
    // not woken by the watch returns None instead of the enforced quota.
    #[tokio::test(start_paused = true)]
    async fn a_settling_reconcile_wakes_when_the_watch_delivers_the_answer() {
        let (store, mut writer) = reflector::store::<ResourceQuota>();
        writer.apply_watcher_event(&watcher::Event::Apply(quota("1", false)));
        let changed = Arc::new(Notify::new());
        let key = ObjectRef::from_obj(&quota("1", false));
        let watch = {
            let changed = changed.clone();
            async move {
                // The quota controller's answer arrives while the reconcile waits.
                tokio::task::yield_now().await;
                writer.apply_watcher_event(&watcher::Event::Apply(quota("2", true)));
                changed.notify_waiters();
            }
        };
        let (found, ()) = tokio::join!(
            cached_when(&store, &changed, &key, QUOTA_SETTLE, |q| q.status.is_some()),
            watch
        );
        let found = found.expect("woken by the watch before the deadline");
        assert_eq!(found.metadata.resource_version.as_deref(), Some("2"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_quota_is_given_up_after_the_settle_time() {
        let (store, mut writer) = reflector::store::<ResourceQuota>();
        writer.apply_watcher_event(&watcher::Event::Apply(quota("1", false)));
        let key = ObjectRef::from_obj(&quota("1", false));
        let found = cached_when(&store, &Notify::new(), &key, QUOTA_SETTLE, |q| {
            q.status.is_some()
        })
        .await;
        assert!(found.is_none());
    }
}
