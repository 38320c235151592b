//! Applies the host objects of a tenant — only those that are missing or drifted.

use std::fmt::Debug;

use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::debug;

use super::{Context, drift, observe};
use crate::{
    api::{QuotaStatus, Tenant},
    build,
    conditions::Desired,
    error::{Error, Result},
    names,
};

/// What applying the host side found.
pub struct Outcome {
    pub details: Vec<Desired>,
    /// A permanent problem (reason, message): nothing was applied.
    pub stalled: Option<(String, String)>,
    pub quota: Option<QuotaStatus>,
}

pub async fn ensure(tenant: &Tenant, ctx: &Context) -> Result<Outcome> {
    let name = tenant.name_any();
    let ns = names::namespace(&name);
    let mut host = ctx.caches.observe(&name);

    if let Some(conflict) = observe::namespace_conflict(&name, host.namespace.as_ref()) {
        return Ok(Outcome {
            details: observe::details(tenant, &host),
            stalled: Some(conflict),
            quota: None,
        });
    }

    let client = &ctx.client;
    host.namespace = apply(
        &Api::all(client.clone()),
        build::namespace(tenant, &ctx.host),
        host.namespace,
    )
    .await?;
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
        let (quota, limit_range, owner_binding, network_policy) = futures::try_join!(
            apply(&quotas, build::quota(tenant), host.quota.take()),
            apply(
                &limit_ranges,
                build::limit_range(tenant, &ctx.host),
                host.limit_range.take()
            ),
            apply(
                &bindings,
                build::owner_binding(tenant),
                host.owner_binding.take()
            ),
            apply(
                &policies,
                build::network_policy(tenant),
                host.network_policy.take()
            ),
        )?;
        host.quota = quota;
        host.limit_range = limit_range;
        host.owner_binding = owner_binding;
        host.network_policy = network_policy;
    }
    Ok(Outcome {
        details: observe::details(tenant, &host),
        stalled: None,
        quota: observe::quota_status(host.quota.as_ref()),
    })
}

/// Server-side applies `desired` unless `observed` already says all of it; returns what is now
/// on the host.
async fn apply<K>(api: &Api<K>, desired: K, observed: Option<K>) -> Result<Option<K>>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let encode = |o: &K| {
        serde_json::to_value(o).map_err(|source| Error::Encoding {
            kind: "host object",
            source,
        })
    };
    let wanted = encode(&desired)?;
    let current = observed.as_ref().map(encode).transpose()?;
    if !drift::needs_apply(&wanted, current.as_ref()) {
        return Ok(observed);
    }
    let name = desired.name_any();
    debug!(%kind, %name, "applying");
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    Ok(Some(
        api.patch(&name, &params, &Patch::Apply(&desired)).await?,
    ))
}
