//! Applies the host objects of a tenant — only those that are missing or drifted.

use std::{fmt::Debug, time::Duration};

use k8s_openapi::api::core::v1::{Namespace, ResourceQuota};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    runtime::reflector::ObjectRef,
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::debug;

use super::{Context, drift, observe};
use crate::{
    api::{QuotaStatus, Tenant},
    build,
    conditions::{self, Desired},
    config::HostConfig,
    error::{Error, Result},
    names,
};

/// What applying the host side found.
pub struct Outcome {
    pub details: Vec<Desired>,
    /// A permanent problem (reason, message): nothing was applied.
    pub stalled: Option<(String, String)>,
    pub quota: Option<QuotaStatus>,
    /// The connection Secret's condition, when the Tenant asks for one (see [`super::connection`]).
    pub connection: Option<Desired>,
    /// The tenant control plane, when the operator provisions one.
    pub control_plane: Option<crate::control_plane::Outcome>,
}

pub async fn ensure(tenant: &Tenant, host_config: &HostConfig, ctx: &Context) -> Result<Outcome> {
    let name = tenant.name_any();
    let ns = names::namespace(&name);
    let cached = ctx.caches.observe(&name);
    let cached_quota_version = cached.quota.as_ref().and_then(|q| q.resource_version());
    let client = &ctx.client;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let desired_ns = build::namespace(tenant, host_config);

    // The cache holds only namespaces with the tenant label, so a namespace of the same name
    // that is not ours is invisible to it. When we know of no namespace, create (not apply)
    // it: if it exists after all, read it and check whose it is before touching it.
    let mut namespace = Known::of(&name, cached.namespace, ctx);
    if namespace.object.is_none() {
        namespace.object = match namespaces.create(&create_params(), &desired_ns).await {
            Ok(created) => Some(namespace.wrote(created, ctx)),
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
        return Ok(Outcome {
            details,
            stalled: Some((reason, message)),
            quota: None,
            connection: None,
            control_plane: None,
        });
    }
    let mut host = observe::HostObjects {
        namespace: apply(&namespaces, desired_ns, namespace, ctx).await?,
        ..observe::HostObjects::default()
    };
    let terminating = host
        .namespace
        .as_ref()
        .is_some_and(|n| n.metadata.deletion_timestamp.is_some());
    if !terminating {
        // Independent objects: apply them concurrently.
        let (quotas, limit_ranges, bindings, policies) = (
            Api::namespaced(client.clone(), &ns),
            Api::namespaced(client.clone(), &ns),
            Api::namespaced(client.clone(), &ns),
            Api::namespaced(client.clone(), &ns),
        );
        (
            host.quota,
            host.limit_range,
            host.owner_binding,
            host.network_policy,
        ) = futures::try_join!(
            apply(
                &quotas,
                build::quota(tenant, host_config),
                Known::of(&name, cached.quota, ctx),
                ctx
            ),
            apply(
                &limit_ranges,
                build::limit_range(tenant, host_config),
                Known::of(&name, cached.limit_range, ctx),
                ctx
            ),
            apply(
                &bindings,
                build::owner_binding(tenant),
                Known::of(&name, cached.owner_binding, ctx),
                ctx
            ),
            apply(
                &policies,
                build::network_policy(tenant, host_config),
                Known::of(&name, cached.network_policy, ctx),
                ctx
            ),
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
    Ok(Outcome {
        details: observe::details(tenant, host_config, &host),
        stalled: None,
        quota: observe::quota_status(host.quota.as_ref()),
        connection: None,
        control_plane: None,
    })
}

/// How long a reconcile waits for the quota controller to compute a quota it just wrote.
const QUOTA_SETTLE: Duration = Duration::from_secs(2);

/// Waits briefly (watching the cache) for the quota controller to enforce `quota`. It usually
/// does within a fraction of a second, and waiting here lets the first status written be the
/// final one instead of "Provisioning" followed by "Ready": half the status writes.
async fn settle_quota(
    tenant: &Tenant,
    host_config: &HostConfig,
    quota: ResourceQuota,
    ctx: &Context,
) -> ResourceQuota {
    let key = ObjectRef::new(names::QUOTA).within(&names::namespace(&tenant.name_any()));
    let deadline = tokio::time::Instant::now() + QUOTA_SETTLE;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(cached) = ctx.caches.quotas.get(&key)
            && observe::quota_enforced(tenant, host_config, &cached)
        {
            return (*cached).clone();
        }
    }
    quota
}

fn create_params() -> PostParams {
    PostParams {
        field_manager: Some(names::CHILD_FIELD_MANAGER.into()),
        ..PostParams::default()
    }
}

fn encode<K: Serialize>(o: &K) -> Result<serde_json::Value> {
    serde_json::to_value(o).map_err(|source| Error::Encoding {
        kind: "host object",
        source,
    })
}

/// What we know of one host object: the cached one, or our own write if the cache has not
/// caught up with it yet (see [`super::recent`]).
struct Known<K> {
    key: String,
    object: Option<K>,
}

impl<K> Known<K>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// The cached object, or our newer write. A tenant has one object of each kind, so the
    /// tenant and the kind make the key.
    fn of(tenant: &str, cached: Option<K>, ctx: &Context) -> Self {
        let key = format!("{tenant}/{}", K::kind(&K::DynamicType::default()));
        let seen = cached.as_ref().and_then(|o| o.resource_version());
        let object = ctx.recent.current(&key, seen.as_deref(), cached);
        Known { key, object }
    }

    /// Records an object we just wrote and returns it.
    fn wrote(&self, written: K, ctx: &Context) -> K {
        ctx.recent.record(
            self.key.clone(),
            written.resource_version(),
            written.clone(),
        );
        written
    }
}

/// Creates or server-side applies `desired` unless what we know of it already says all of it;
/// returns what is now on the host.
async fn apply<K>(api: &Api<K>, desired: K, known: Known<K>, ctx: &Context) -> Result<Option<K>>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    let current = known.object.as_ref().map(encode).transpose()?;
    if !drift::needs_apply(&encode(&desired)?, current.as_ref()) {
        return Ok(known.object);
    }
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let name = desired.name_any();
    if known.object.is_none() {
        // Not there as far as we know: a create is cheaper for the API server than an apply. If
        // it exists after all, apply it.
        debug!(%kind, %name, "creating");
        match api.create(&create_params(), &desired).await {
            Ok(created) => return Ok(Some(known.wrote(created, ctx))),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    debug!(%kind, %name, "applying");
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    let applied = api.patch(&name, &params, &Patch::Apply(&desired)).await?;
    Ok(Some(known.wrote(applied, ctx)))
}
