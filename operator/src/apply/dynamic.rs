//! Server-side apply of rendered objects under an inventory, and pruning of what a new render
//! no longer has. The inventory is the list of [`entry`] strings kept in the Tenant's status;
//! since more than the operator may write that status, an entry is only ever deleted when it is
//! in the tenant's namespace or carries the tenant's label.

use std::{collections::HashMap, sync::Mutex};

use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams},
    discovery::{self, Scope},
};
use tracing::{debug, info};

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

fn gvk_of(o: &DynamicObject) -> Result<GroupVersionKind> {
    let types = o
        .types
        .as_ref()
        .ok_or_else(|| Error::Invalid("a rendered object has no kind".into()))?;
    GroupVersionKind::try_from(types)
        .map_err(|e| Error::Invalid(format!("a rendered object's kind: {e}")))
}

/// `group/version/Kind/namespace/name` (namespace empty for cluster-scoped objects).
pub fn entry(o: &DynamicObject) -> String {
    let types = o.types.clone().unwrap_or_default();
    format!(
        "{}/{}/{}/{}",
        types.api_version,
        types.kind,
        o.metadata.namespace.clone().unwrap_or_default(),
        o.name_any()
    )
    .trim_start_matches('/')
    .to_owned()
}

/// Parses an inventory entry back into its kind, namespace and name.
fn parse_entry(e: &str) -> Option<(GroupVersionKind, String, String)> {
    let parts: Vec<&str> = e.split('/').collect();
    let (group, version, rest) = match parts.len() {
        // core group: v1/Kind/ns/name
        4 => ("", parts[0], &parts[1..]),
        5 => (parts[0], parts[1], &parts[2..]),
        _ => return None,
    };
    Some((
        GroupVersionKind::gvk(group, version, rest[0]),
        rest[1].to_owned(),
        rest[2].to_owned(),
    ))
}

/// Whether an inventory entry names a cluster-scoped object (its namespace part is empty).
pub fn is_cluster_scoped_entry(e: &str) -> bool {
    parse_entry(e).is_some_and(|(_, ns, _)| ns.is_empty())
}

/// Puts the tenant's labels on a rendered object and pins namespaced objects to the tenant's
/// namespace (a chart that renders into another namespace is refused).
pub fn claim(mut o: DynamicObject, tenant: &str, namespaced: bool) -> Result<DynamicObject> {
    let ns = names::namespace(tenant);
    if namespaced {
        match o.metadata.namespace.as_deref() {
            None => o.metadata.namespace = Some(ns),
            Some(n) if n == ns => {}
            Some(other) => {
                return Err(Error::Invalid(format!(
                    "the chart renders {} into namespace {other}; a tenant's control plane lives in {ns} only",
                    entry(&o)
                )));
            }
        }
    } else {
        o.metadata.namespace = None;
    }
    o.metadata
        .labels
        .get_or_insert_with(Default::default)
        .extend(crate::build::labels(tenant));
    Ok(o)
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

/// Applies every object (in the order given: helm's install order) with server-side apply and
/// returns the inventory of what is now applied.
pub async fn apply_all(
    client: &Client,
    kinds: &Kinds,
    tenant: &str,
    objects: Vec<DynamicObject>,
) -> Result<Vec<String>> {
    let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
    let mut inventory = Vec::with_capacity(objects.len());
    for o in objects {
        let (api, o) = claimed(client, kinds, tenant, o).await?;
        debug!(object = %entry(&o), "applying");
        api.patch(&o.name_any(), &params, &Patch::Apply(&o)).await?;
        inventory.push(entry(&o));
    }
    Ok(inventory)
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

/// Whether `live` has every label and spec value `desired` sets (the server adds defaults, so
/// equality would never hold).
pub fn holds(live: &DynamicObject, desired: &DynamicObject) -> bool {
    let labels = desired
        .labels()
        .iter()
        .all(|(k, v)| live.labels().get(k) == Some(v));
    labels && covers(&live.data["spec"], &desired.data["spec"])
}

/// `live` has every value of `desired`: maps key by key, lists item by item (same length).
fn covers(live: &serde_json::Value, desired: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, v)| l.get(k).is_some_and(|lv| covers(lv, v))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| covers(lv, dv))
        }
        (l, d) => l == d,
    }
}

/// Deletes what `previous` lists and `current` does not. Returns how many were deleted.
pub async fn prune(
    client: &Client,
    kinds: &Kinds,
    tenant: &str,
    previous: &[String],
    current: &[String],
) -> Result<usize> {
    let mut deleted = 0;
    for gone in previous.iter().filter(|e| !current.contains(e)) {
        if delete_entry(client, kinds, tenant, gone).await? {
            info!(object = %gone, "pruned: no longer rendered");
            deleted += 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_holds_what_was_applied_despite_server_defaults_but_not_after_drift() {
        let desired = DynamicObject {
            types: None,
            metadata: kube::api::ObjectMeta {
                labels: Some([("a".to_owned(), "1".to_owned())].into()),
                ..Default::default()
            },
            data: serde_json::json!({"spec": {"hostnames": ["h"], "rules": [{"backendRefs": [{"name": "s", "port": 443}]}]}}),
        };
        let mut live = desired.clone();
        live.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("other".into(), "x".into());
        live.data["spec"]["rules"][0]["backendRefs"][0]["weight"] = serde_json::json!(1);
        live.data["status"] = serde_json::json!({"parents": []});
        assert!(holds(&live, &desired));
        let mut drifted = live.clone();
        drifted.data["spec"]["hostnames"] = serde_json::json!(["h", "extra"]);
        assert!(!holds(&drifted, &desired));
        let mut relabelled = live.clone();
        relabelled
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("a".into(), "2".into());
        assert!(!holds(&relabelled, &desired));
        let mut changed = live;
        changed.data["spec"]["rules"][0]["backendRefs"][0]["port"] = serde_json::json!(80);
        assert!(!holds(&changed, &desired));
    }

    fn object(api_version: &str, kind: &str, ns: Option<&str>) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "vcluster", "namespace": ns},
        }))
        .unwrap()
    }

    #[test]
    fn entries_round_trip_for_core_and_grouped_kinds() {
        let svc = object("v1", "Service", Some("kubespaces-tenant-a"));
        assert_eq!(entry(&svc), "v1/Service/kubespaces-tenant-a/vcluster");
        let (gvk, ns, name) = parse_entry(&entry(&svc)).unwrap();
        assert_eq!((gvk.group.as_str(), gvk.kind.as_str()), ("", "Service"));
        assert_eq!(
            (ns.as_str(), name.as_str()),
            ("kubespaces-tenant-a", "vcluster")
        );
        let role = object("rbac.authorization.k8s.io/v1", "ClusterRole", None);
        let (gvk, ns, _) = parse_entry(&entry(&role)).unwrap();
        assert_eq!(gvk.group, "rbac.authorization.k8s.io");
        assert!(ns.is_empty());
    }

    #[test]
    fn rendered_objects_are_labelled_and_kept_in_the_tenant_namespace() {
        let o = claim(object("v1", "Service", None), "a", true).unwrap();
        assert_eq!(o.metadata.namespace.as_deref(), Some("kubespaces-tenant-a"));
        assert_eq!(
            o.labels().get(names::TENANT_LABEL).map(String::as_str),
            Some("a")
        );
        let elsewhere = object("v1", "Service", Some("kube-system"));
        assert!(claim(elsewhere, "a", true).is_err());
    }
}
