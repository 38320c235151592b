//! Applies the host objects of a tenant — only those that are missing or drifted.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::debug;

use super::{Context, drift, observe};
use crate::{
    api::{QuotaStatus, Tenant},
    build,
    conditions::{self, Desired},
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
    let client = &ctx.client;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let desired_ns = build::namespace(tenant, &ctx.host);

    // The cache holds only namespaces with the tenant label, so a namespace of the same name
    // that is not ours is invisible to it. On a cache miss, create (not apply) the namespace:
    // if it already exists we read it and check whose it is before touching it.
    if host.namespace.is_none() {
        let params = PostParams {
            field_manager: Some(names::CHILD_FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        host.namespace = match namespaces.create(&params, &desired_ns).await {
            Ok(created) => Some(created),
            Err(kube::Error::Api(s)) if s.code == 409 => namespaces.get_opt(&ns).await?,
            Err(e) => return Err(e.into()),
        };
    }
    if let Some((reason, message)) = observe::namespace_conflict(&name, host.namespace.as_ref()) {
        // Nothing of the tenant's exists; the namespace condition says why.
        let mut details = observe::details(tenant, &observe::HostObjects::default());
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
        });
    }
    host.namespace = apply(&namespaces, desired_ns, host.namespace).await?;
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
