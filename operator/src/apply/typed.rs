//! Typed host objects of a tenant (its namespace, quota, LimitRange, owner RoleBinding,
//! NetworkPolicy, and with a control plane the operator's RoleBinding and the control plane's
//! NetworkPolicy): each created, or server-side applied, only when what the operator knows of it
//! (the cache, or its own newer write, under its [`Key`]) misses something desired.

use std::fmt::Debug;

use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::debug;

use super::recent::{Key, RecentWrites};
use crate::{
    error::{Error, Result},
    names,
    observe::drift,
};

pub fn create_params() -> PostParams {
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
pub struct Known<K> {
    key: Key,
    pub object: Option<K>,
}

impl<K> Known<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    /// The cached object, or our newer write, of the object `desired` names.
    pub fn of(tenant: &str, desired: &K, cached: Option<K>, recent: &RecentWrites) -> Self {
        let key = Key::of(tenant, desired);
        let seen = cached.as_ref().and_then(|o| o.resource_version());
        let object = recent.current(&key, seen.as_deref(), cached);
        Known { key, object }
    }

    /// Records an object we just wrote and returns it.
    pub fn wrote(&self, written: K, recent: &RecentWrites) -> K {
        recent.record(
            self.key.clone(),
            written.resource_version(),
            written.clone(),
        );
        written
    }
}

/// Creates or server-side applies `desired` unless what we know of it already says all of it;
/// returns what is now on the host.
pub async fn apply<K>(
    api: Api<K>,
    desired: K,
    known: Known<K>,
    recent: &RecentWrites,
) -> Result<Option<K>>
where
    K: Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + Clone
        + Debug
        + Send
        + Sync
        + 'static,
{
    let current = known.object.as_ref().map(encode).transpose()?;
    if !drift::needs_apply(&encode(&desired)?, current.as_ref()) {
        return Ok(known.object);
    }
    let kind = K::kind(&()).to_string();
    let name = desired.name_any();
    if known.object.is_none() {
        // Not there as far as we know: a create is cheaper for the API server than an apply. If
        // it exists after all, apply it.
        debug!(%kind, %name, "creating");
        match api.create(&create_params(), &desired).await {
            Ok(created) => return Ok(Some(known.wrote(created, recent))),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    debug!(%kind, %name, "applying");
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    let applied = api.patch(&name, &params, &Patch::Apply(&desired)).await?;
    Ok(Some(known.wrote(applied, recent)))
}
