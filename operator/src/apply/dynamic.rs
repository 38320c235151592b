//! Carrying out a [`super::plan`]: discovery of the kinds (once each), server-side apply of the
//! planned objects, and pruning of what a new render no longer has (by the inventory, then by
//! label: [`sweep`]). Since more than the operator may write the Tenant's status, where the
//! inventory is kept, an entry is only ever deleted when the object carries the tenant's label
//! and is in the tenant's namespace or cluster-scoped.

use std::{collections::HashMap, sync::Mutex};

use kube::{
    Api, Client, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    },
    discovery::{self, Scope},
};
use tracing::{debug, info};

use super::plan::{self, Plan, Scopes, claim, entry, gvk_of, holds, parse_entry};
use crate::{
    error::{Error, Result},
    names,
};

/// What the API server said about a kind: resolved once, then kept.
#[derive(Default)]
pub struct Kinds {
    known: Mutex<HashMap<GroupVersionKind, (ApiResource, bool)>>,
}

impl Kinds {
    /// The resource of a kind and whether it is namespaced.
    pub async fn resolve(
        &self,
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Result<(ApiResource, bool)> {
        if let Some(found) = self.known.lock().ok().and_then(|k| k.get(gvk).cloned()) {
            return Ok(found);
        }
        let (resource, caps) = discovery::pinned_kind(client, gvk).await?;
        let found = (resource, caps.scope == Scope::Namespaced);
        if let Ok(mut k) = self.known.lock() {
            k.insert(gvk.clone(), found.clone());
        }
        Ok(found)
    }
}

/// The object [`claim`]ed for the tenant, and the API it lives in.
async fn claimed(
    client: &Client,
    kinds: &Kinds,
    tenant: &str,
    o: DynamicObject,
) -> Result<(Api<DynamicObject>, DynamicObject)> {
    let (resource, namespaced) = kinds.resolve(client, &gvk_of(&o)?).await?;
    let o = claim(o, tenant, namespaced)?;
    let api = match &o.metadata.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    Ok((api, o))
}

/// Asks discovery (once per kind, then [`Kinds`] keeps the answer) how each kind of `rendered` is scoped, and plans
/// their apply for `tenant` after an apply that left `previous`.
pub async fn plan(
    client: &Client,
    kinds: &Kinds,
    tenant: &str,
    rendered: Vec<DynamicObject>,
    previous: &[String],
) -> Result<Plan> {
    let mut scopes = Scopes::new();
    for o in &rendered {
        let gvk = gvk_of(o)?;
        let (_, namespaced) = kinds.resolve(client, &gvk).await?;
        scopes.insert(gvk, namespaced);
    }
    plan::build(tenant, rendered, &scopes, previous)
}

/// Applies the plan's objects, in its order (helm's install order), with server-side apply.
pub async fn apply_all(client: &Client, kinds: &Kinds, plan: &Plan) -> Result<()> {
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    for o in &plan.objects {
        let (resource, _) = kinds.resolve(client, &gvk_of(o)?).await?;
        let api: Api<DynamicObject> = match &o.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        debug!(object = %entry(o), "applying");
        api.patch(&o.name_any(), &params, &Patch::Apply(o)).await?;
    }
    Ok(())
}

/// The objects as they are on the server after making sure each holds what `objects` says:
/// one that is missing, or whose labels or spec no longer hold every value given (drift), is
/// applied; with `force`, all are. The others are left alone, so a converged tenant costs reads,
/// not writes.
pub async fn apply_changed(
    client: &Client,
    kinds: &Kinds,
    tenant: &str,
    objects: Vec<DynamicObject>,
    force: bool,
) -> Result<Vec<DynamicObject>> {
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    let mut live = Vec::with_capacity(objects.len());
    for o in objects {
        let (api, o) = claimed(client, kinds, tenant, o).await?;
        let current = api.get_opt(&o.name_any()).await?;
        match current {
            Some(c) if !force && holds(&c, &o) => live.push(c),
            _ => {
                debug!(object = %entry(&o), "applying");
                live.push(api.patch(&o.name_any(), &params, &Patch::Apply(&o)).await?);
            }
        }
    }
    Ok(live)
}

/// Deletes the plan's prune set (what the last inventory has and this plan does not). Returns
/// how many were deleted.
pub async fn prune(client: &Client, kinds: &Kinds, tenant: &str, plan: &Plan) -> Result<usize> {
    let mut deleted = 0;
    for gone in &plan.prune {
        if delete_entry(client, kinds, tenant, gone).await? {
            info!(object = %gone, "pruned: no longer rendered");
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Deletes what carries the tenant's and the rendered-chart labels in the tenant's namespace, of
/// the plan's namespaced kinds, and is not in the plan: objects a new render dropped that the
/// inventory no longer names (a status write lost after an apply). Objects of the tenant's own
/// that carry both labels are the tenant's doing, and confined to its namespace. Returns how
/// many were deleted.
pub async fn sweep(client: &Client, kinds: &Kinds, tenant: &str, plan: &Plan) -> Result<usize> {
    let ns = names::namespace(tenant);
    let selector = format!(
        "{}={tenant},{}={}",
        names::TENANT_LABEL,
        names::control_plane::RENDERED_LABEL,
        names::control_plane::RENDERED_CHART
    );
    let mut deleted = 0;
    for kind in plan::swept_kinds(plan) {
        let resource = match kinds.resolve(client, &kind).await {
            Ok((resource, _)) => resource,
            // The kind itself is gone (its CRD removed): nothing of it can be left.
            Err(Error::KubeApi(kube::Error::Discovery(_))) => continue,
            Err(e) => return Err(e),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
        let found = api
            .list_metadata(&ListParams::default().labels(&selector))
            .await?;
        let found: Vec<String> = found.items.iter().map(|o| o.name_any()).collect();
        for stray in plan::strays(&kind, &ns, found.iter().map(String::as_str), plan) {
            if delete_entry(client, kinds, tenant, &stray).await? {
                info!(object = %stray, "swept: carries the rendered-chart label, no longer rendered");
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// Deletes one inventory entry if it is the tenant's. True when something was deleted.
pub async fn delete_entry(client: &Client, kinds: &Kinds, tenant: &str, e: &str) -> Result<bool> {
    let Some((gvk, ns, name)) = parse_entry(e) else {
        return Ok(false);
    };
    let resource = match kinds.resolve(client, &gvk).await {
        Ok((resource, _)) => resource,
        // The kind itself is gone (its CRD removed): nothing of it can be left.
        Err(Error::KubeApi(kube::Error::Discovery(_))) => return Ok(false),
        Err(e) => return Err(e),
    };
    let api: Api<DynamicObject> = if ns.is_empty() {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), &ns, &resource)
    };
    let Some(found) = api.get_opt(&name).await? else {
        return Ok(false);
    };
    let ours = found.labels().get(names::TENANT_LABEL).map(String::as_str) == Some(tenant)
        && (ns.is_empty() || ns == names::namespace(tenant));
    if !ours {
        return Ok(false);
    }
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: found.uid(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}
