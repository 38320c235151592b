//! The TLSRoute that puts the tenant's API server at its public host (pure), and what its
//! status says.

use kube::api::{DynamicObject, ObjectMeta};
use serde_json::{Value, json};

use super::{
    names,
    settings::{ParentRef, ServiceRef},
};

pub const GROUP: &str = "gateway.networking.k8s.io";
pub const VERSION: &str = "v1";
pub const KIND: &str = "TLSRoute";

/// TLS passes through the Gateway to the vCluster Service, or to the waker's (`waker`), which
/// passes it on: either way the client checks the tenant control plane's own certificate (and
/// can use client certificates and upgrades).
pub fn api_route(
    tenant: &str,
    host: &str,
    parent: &ParentRef,
    waker: Option<&ServiceRef>,
) -> DynamicObject {
    let backend = match waker {
        Some(w) => json!({"name": w.name, "namespace": w.namespace, "port": 443}),
        None => json!({"name": names::RELEASE, "port": 443}),
    };
    let ns = crate::names::namespace(tenant);
    DynamicObject {
        types: Some(kube::api::TypeMeta {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: KIND.into(),
        }),
        metadata: ObjectMeta {
            name: Some(names::API_ROUTE.into()),
            namespace: Some(ns),
            labels: Some(crate::build::labels(tenant)),
            ..ObjectMeta::default()
        },
        data: json!({
            "spec": {
                "parentRefs": [{
                    "group": GROUP,
                    "kind": "Gateway",
                    "namespace": parent.namespace,
                    "name": parent.name,
                    "sectionName": parent.section,
                }],
                "hostnames": [host],
                "rules": [{"backendRefs": [backend]}],
            }
        }),
    }
}

pub const GRANT_VERSION: &str = "v1beta1";
pub const GRANT_KIND: &str = "ReferenceGrant";

/// The ReferenceGrant, in the waker's namespace, that lets the tenant's API route (and no other
/// route, nor anything else of the tenant's namespace) send connections to the waker's Service.
pub fn waker_grant(tenant: &str, waker: &ServiceRef) -> DynamicObject {
    DynamicObject {
        types: Some(kube::api::TypeMeta {
            api_version: format!("{GROUP}/{GRANT_VERSION}"),
            kind: GRANT_KIND.into(),
        }),
        metadata: ObjectMeta {
            name: Some(crate::names::api_route_grant(tenant)),
            namespace: Some(waker.namespace.clone()),
            labels: Some(crate::build::labels(tenant)),
            ..ObjectMeta::default()
        },
        data: json!({
            "spec": {
                "from": [{"group": GROUP, "kind": KIND, "namespace": crate::names::namespace(tenant)}],
                "to": [{"group": "", "kind": "Service", "name": waker.name}],
            }
        }),
    }
}

/// Whether the Gateway accepted the route and resolved its backend; otherwise the reason and
/// message of the condition that is not true yet.
pub fn accepted(route: &DynamicObject, parent: &ParentRef) -> Result<(), (String, String)> {
    let ours = route.data["status"]["parents"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            let r = &p["parentRef"];
            r["name"] == parent.name.as_str()
                && r["namespace"].as_str().unwrap_or_default() == parent.namespace
                && r["sectionName"]
                    .as_str()
                    .is_none_or(|s| s == parent.section)
        });
    let Some(status) = ours else {
        return Err((
            "Pending".into(),
            format!(
                "Gateway {}/{} has not answered for TLSRoute {} yet (is a controller serving it?)",
                parent.namespace,
                parent.name,
                names::API_ROUTE
            ),
        ));
    };
    for type_ in ["Accepted", "ResolvedRefs"] {
        match condition(&status["conditions"], type_) {
            Some(c) if c["status"] == "True" => {}
            Some(c) => {
                return Err((
                    text(&c["reason"]).unwrap_or_else(|| format!("Not{type_}")),
                    format!(
                        "TLSRoute {}: {type_} is {}: {}",
                        names::API_ROUTE,
                        text(&c["status"]).unwrap_or_default(),
                        text(&c["message"]).unwrap_or_default()
                    ),
                ));
            }
            None => {
                return Err((
                    "Pending".into(),
                    format!("TLSRoute {}: no {type_} condition yet", names::API_ROUTE),
                ));
            }
        }
    }
    Ok(())
}

/// The condition of type `type_` in a Gateway API status's `conditions`.
pub(super) fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<&'a Value> {
    conditions
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
}

pub(super) fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> ParentRef {
        ParentRef {
            namespace: "gw".into(),
            name: "kubespaces".into(),
            section: "api".into(),
        }
    }

    #[test]
    fn the_route_is_accepted_only_when_the_gateway_says_so_for_our_listener() {
        let mut route = api_route("a", "a.api.example.com", &parent(), None);
        assert_eq!(route.data["spec"]["hostnames"][0], "a.api.example.com");
        assert!(accepted(&route, &parent()).is_err());
        route.data["status"] = json!({"parents": [{
            "parentRef": {"name": "kubespaces", "namespace": "gw", "sectionName": "api"},
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "Accepted"},
                {"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound", "message": "no service"},
            ],
        }]});
        let (reason, message) = accepted(&route, &parent()).unwrap_err();
        assert_eq!(reason, "BackendNotFound");
        assert!(message.contains("no service"));
        route.data["status"]["parents"][0]["conditions"][1]["status"] = json!("True");
        assert!(accepted(&route, &parent()).is_ok());
    }

    #[test]
    fn with_a_waker_the_route_goes_to_it_under_a_grant_for_this_route_only() {
        let waker = ServiceRef {
            namespace: "kubespaces-system".into(),
            name: "kubespaces-waker".into(),
        };
        let route = api_route("a", "a.api.example.com", &parent(), Some(&waker));
        let backend = &route.data["spec"]["rules"][0]["backendRefs"][0];
        assert_eq!(backend["namespace"], "kubespaces-system");
        assert_eq!(backend["name"], "kubespaces-waker");
        let grant = waker_grant("a", &waker);
        assert_eq!(
            grant.metadata.namespace.as_deref(),
            Some("kubespaces-system")
        );
        let spec = &grant.data["spec"];
        assert_eq!(spec["from"][0]["kind"], KIND);
        assert_eq!(spec["from"][0]["namespace"], crate::names::namespace("a"));
        assert_eq!(spec["to"][0]["name"], "kubespaces-waker");
    }
}
