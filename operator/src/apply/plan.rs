//! The apply plan of a tenant's rendered objects, built without a client: each object claimed
//! for the tenant (its labels, the rendered-chart label among them, and its namespace as the API
//! server's discovery says the kind is scoped, not as a list of ours guesses), the inventory of
//! what the plan applies, what the last inventory has that this one no longer does (the prune
//! set), and what a sweep by label found that the plan does not apply (strays).
//! [`super::dynamic`] carries it out.
//!
//! Inventory entries are `group/version/Kind/namespace/name` strings kept in the Tenant's
//! status; since more than the operator may write that status, an entry is only ever deleted
//! when the object carries the tenant's label and is in the tenant's namespace or
//! cluster-scoped (see [`super::dynamic::delete_entry`]).

use std::collections::HashMap;

use kube::{
    ResourceExt,
    api::{DynamicObject, GroupVersionKind},
};

use crate::{
    error::{Error, Result},
    names,
};

/// Whether each kind is namespaced, as discovery answered.
pub type Scopes = HashMap<GroupVersionKind, bool>;

/// What to apply, in order, and what to prune afterwards.
#[derive(Debug)]
pub struct Plan {
    /// The claimed objects in the order given (helm's install order).
    pub objects: Vec<DynamicObject>,
    /// One [`entry`] per object, in the same order: the next inventory.
    pub inventory: Vec<String>,
    /// Entries of the previous inventory that this plan no longer applies.
    pub prune: Vec<String>,
}

/// Plans the apply of `rendered` for `tenant`, after an apply that left `previous`. Every kind
/// must be in `scopes`.
pub fn build(
    tenant: &str,
    rendered: Vec<DynamicObject>,
    scopes: &Scopes,
    previous: &[String],
) -> Result<Plan> {
    let objects = rendered
        .into_iter()
        .map(|o| {
            let gvk = gvk_of(&o)?;
            let namespaced = scopes.get(&gvk).copied().ok_or_else(|| {
                Error::Invalid(format!("the scope of kind {} was not resolved", gvk.kind))
            })?;
            let mut o = claim(o, tenant, namespaced)?;
            o.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(
                    names::control_plane::RENDERED_LABEL.to_owned(),
                    names::control_plane::RENDERED_CHART.to_owned(),
                );
            Ok(o)
        })
        .collect::<Result<Vec<_>>>()?;
    let inventory: Vec<String> = objects.iter().map(entry).collect();
    let prune = previous
        .iter()
        .filter(|e| !inventory.contains(e))
        .cloned()
        .collect();
    Ok(Plan {
        objects,
        inventory,
        prune,
    })
}

/// The namespaced kinds the pinned chart renders that the operator's roles let it list and
/// delete in a tenant namespace (`access::CONTROL_PLANE`, `access::CONTROLLER`): swept after
/// every apply even when neither the render nor the inventory has one of them any more (a new
/// render dropped the last of a kind and the status write that would have listed it was lost).
pub const CHART_KINDS: [(&str, &str, &str); 9] = [
    ("", "v1", "ServiceAccount"),
    ("", "v1", "Secret"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Service"),
    ("apps", "v1", "StatefulSet"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("policy", "v1", "PodDisruptionBudget"),
];

/// What a sweep lists (in the tenant's namespace, by the rendered-chart label), each kind once:
/// [`CHART_KINDS`], then the other namespaced kinds of the plan and of its prune set.
/// Cluster-scoped objects are pruned by the inventory only: listing them would need the right to
/// read every one of their kind.
pub fn swept_kinds(plan: &Plan) -> Vec<GroupVersionKind> {
    let mut kinds: Vec<GroupVersionKind> = CHART_KINDS
        .iter()
        .map(|(group, version, kind)| GroupVersionKind::gvk(group, version, kind))
        .collect();
    for (gvk, ns, _) in plan
        .inventory
        .iter()
        .chain(&plan.prune)
        .filter_map(|e| parse_entry(e))
    {
        if !ns.is_empty() && !kinds.contains(&gvk) {
            kinds.push(gvk);
        }
    }
    kinds
}

/// The objects a sweep found (`kind` in `ns`, by name) that the plan does not apply, as entries.
pub fn strays<'a>(
    kind: &GroupVersionKind,
    ns: &str,
    found: impl IntoIterator<Item = &'a str>,
    plan: &Plan,
) -> Vec<String> {
    found
        .into_iter()
        .map(|name| entry_of(&kind.api_version(), &kind.kind, ns, name))
        .filter(|e| !plan.inventory.contains(e))
        .collect()
}

pub fn gvk_of(o: &DynamicObject) -> Result<GroupVersionKind> {
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
    let ns = o.metadata.namespace.clone().unwrap_or_default();
    entry_of(&types.api_version, &types.kind, &ns, &o.name_any())
}

/// The entry of an object by its parts (`api_version` is `v1` for the core group).
pub fn entry_of(api_version: &str, kind: &str, ns: &str, name: &str) -> String {
    format!("{api_version}/{kind}/{ns}/{name}")
        .trim_start_matches('/')
        .to_owned()
}

/// Parses an inventory entry back into its kind, namespace and name.
pub fn parse_entry(e: &str) -> Option<(GroupVersionKind, String, String)> {
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

    fn named(api_version: &str, kind: &str, ns: Option<&str>, name: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": ns},
        }))
        .unwrap()
    }

    fn object(api_version: &str, kind: &str, ns: Option<&str>) -> DynamicObject {
        named(api_version, kind, ns, "vcluster")
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

    fn scopes() -> Scopes {
        [
            (GroupVersionKind::gvk("", "v1", "ServiceAccount"), true),
            (GroupVersionKind::gvk("apps", "v1", "StatefulSet"), true),
            (GroupVersionKind::gvk("", "v1", "Namespace"), false),
            (
                GroupVersionKind::gvk("node.k8s.io", "v1", "RuntimeClass"),
                false,
            ),
        ]
        .into()
    }

    #[test]
    fn the_plan_keeps_the_render_order_and_scopes_each_kind_as_discovery_says() {
        let rendered = vec![
            object("v1", "ServiceAccount", None),
            // Cluster-scoped kinds that no list of ours names: a namespace a chart template may
            // have set is dropped, and their entries have no namespace part.
            named("v1", "Namespace", None, "extra"),
            named(
                "node.k8s.io/v1",
                "RuntimeClass",
                Some("kubespaces-tenant-a"),
                "gvisor",
            ),
            object("apps/v1", "StatefulSet", None),
        ];
        let plan = build("a", rendered, &scopes(), &[]).unwrap();
        assert_eq!(
            plan.inventory,
            [
                "v1/ServiceAccount/kubespaces-tenant-a/vcluster",
                "v1/Namespace//extra",
                "node.k8s.io/v1/RuntimeClass//gvisor",
                "apps/v1/StatefulSet/kubespaces-tenant-a/vcluster",
            ]
        );
        assert_eq!(
            plan.inventory,
            plan.objects.iter().map(entry).collect::<Vec<_>>()
        );
        assert!(plan.objects[1].metadata.namespace.is_none());
        assert!(plan.objects[2].metadata.namespace.is_none());
        assert!(is_cluster_scoped_entry(&plan.inventory[1]));
        assert!(!is_cluster_scoped_entry(&plan.inventory[3]));
        assert!(
            plan.objects
                .iter()
                .all(|o| { o.labels().get(names::TENANT_LABEL).map(String::as_str) == Some("a") })
        );
        assert!(plan.prune.is_empty());
    }

    #[test]
    fn the_plan_prunes_exactly_what_the_last_inventory_has_and_this_one_does_not() {
        let previous = [
            "v1/ServiceAccount/kubespaces-tenant-a/vcluster".to_owned(),
            "policy/v1/PodDisruptionBudget/kubespaces-tenant-a/vcluster".to_owned(),
            "v1/Namespace//dropped".to_owned(),
        ];
        let rendered = vec![
            object("v1", "ServiceAccount", None),
            object("apps/v1", "StatefulSet", None),
        ];
        let plan = build("a", rendered, &scopes(), &previous).unwrap();
        assert_eq!(
            plan.prune,
            [
                "policy/v1/PodDisruptionBudget/kubespaces-tenant-a/vcluster",
                "v1/Namespace//dropped"
            ]
        );
        // The same render again: nothing to prune.
        let again = vec![
            object("v1", "ServiceAccount", None),
            object("apps/v1", "StatefulSet", None),
        ];
        let plan = build("a", again, &scopes(), &plan.inventory).unwrap();
        assert!(plan.prune.is_empty());
    }

    #[test]
    fn the_sweep_lists_the_namespaced_kinds_of_plan_and_prune_set_and_keeps_what_the_plan_applies()
    {
        let previous = [
            "policy/v1/PodDisruptionBudget/kubespaces-tenant-a/vcluster".to_owned(),
            "v1/Namespace//dropped".to_owned(),
        ];
        let rendered = vec![
            object("v1", "ServiceAccount", None),
            named("v1", "ServiceAccount", None, "vc-workload-vcluster"),
            named("v1", "Namespace", None, "extra"),
            object("apps/v1", "StatefulSet", None),
        ];
        let plan = build("a", rendered, &scopes(), &previous).unwrap();
        assert!(plan.objects.iter().all(|o| {
            o.labels()
                .get(names::control_plane::RENDERED_LABEL)
                .map(String::as_str)
                == Some(names::control_plane::RENDERED_CHART)
        }));
        let kinds: Vec<String> = swept_kinds(&plan).iter().map(|k| k.kind.clone()).collect();
        let chart: Vec<&str> = CHART_KINDS.iter().map(|(_, _, k)| *k).collect();
        assert_eq!(kinds, chart, "the chart's kinds, and no cluster-scoped one");
        // A kind of the render beyond the chart's usual ones is swept too.
        let widgets = vec![object("example.com/v1", "Widget", None)];
        let mut with_widget = scopes();
        with_widget.insert(GroupVersionKind::gvk("example.com", "v1", "Widget"), true);
        let plan_with_widget = build("a", widgets, &with_widget, &[]).unwrap();
        assert_eq!(
            swept_kinds(&plan_with_widget)
                .last()
                .map(|k| k.kind.as_str()),
            Some("Widget")
        );
        let accounts = GroupVersionKind::gvk("", "v1", "ServiceAccount");
        let found = ["vcluster", "vc-workload-vcluster", "left-behind"];
        assert_eq!(
            strays(&accounts, "kubespaces-tenant-a", found, &plan),
            ["v1/ServiceAccount/kubespaces-tenant-a/left-behind"]
        );
        let budgets = GroupVersionKind::gvk("policy", "v1", "PodDisruptionBudget");
        assert_eq!(
            strays(&budgets, "kubespaces-tenant-a", ["vcluster"], &plan),
            ["policy/v1/PodDisruptionBudget/kubespaces-tenant-a/vcluster"]
        );
    }

    #[test]
    fn the_operator_may_list_and_delete_every_kind_it_sweeps() {
        use crate::build::access::{CONTROL_PLANE, CONTROLLER};
        for (group, _, kind) in CHART_KINDS {
            let lower = kind.to_lowercase();
            let resource = match lower.strip_suffix('y') {
                Some(stem) => format!("{stem}ies"),
                None => format!("{lower}s"),
            };
            for verb in ["list", "delete"] {
                let granted = CONTROL_PLANE.iter().chain(CONTROLLER).any(|a| {
                    a.group == group
                        && a.resource == resource
                        && a.names.is_empty()
                        && a.verbs.contains(&verb)
                });
                assert!(granted, "{verb} {group}/{resource}");
            }
        }
    }

    #[test]
    fn a_kind_discovery_did_not_resolve_is_refused_not_guessed() {
        let rendered = vec![object("example.com/v1", "Widget", None)];
        let error = build("a", rendered, &scopes(), &[]).unwrap_err();
        assert!(error.to_string().contains("Widget"), "{error}");
    }
}
