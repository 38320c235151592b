//! Drift detection: does the object on the host still say everything we want it to say?
//!
//! The desired object (as we would apply it) must be contained in the observed one: every field
//! we set has the same value, quantities compared by value. Fields others added (defaults, other
//! managers) are not drift. This lets an idle operator re-check every tenant from its caches and
//! write nothing.

use serde_json::Value;

use crate::quantity;

/// True when `observed` is missing or differs from `desired` in a field `desired` sets.
pub fn needs_apply(desired: &Value, observed: Option<&Value>) -> bool {
    observed.is_none_or(|o| !contains(o, desired))
}

fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (_, Value::Null) => true,
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| dv.is_null() || o.get(k).is_some_and(|ov| contains(ov, dv))),
        (Value::Array(o), Value::Array(d)) => {
            o.len() == d.len() && o.iter().zip(d).all(|(ov, dv)| contains(ov, dv))
        }
        (Value::String(o), Value::String(d)) => quantity::same(o, d),
        (o, d) => o == d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_objects_need_applying() {
        assert!(needs_apply(&json!({"a": 1}), None));
    }

    #[test]
    fn fields_added_by_the_server_are_not_drift() {
        let desired = json!({"metadata": {"name": "q", "labels": {"a": "b"}}, "spec": {"hard": {"cpu": "8"}}});
        let observed = json!({
            "metadata": {"name": "q", "uid": "u", "resourceVersion": "7", "labels": {"a": "b", "extra": "x"}},
            "spec": {"hard": {"cpu": "8", "pods": "10"}},
            "status": {"hard": {"cpu": "8"}}
        });
        assert!(!needs_apply(&desired, Some(&observed)));
    }

    #[test]
    fn a_changed_or_removed_field_is_drift() {
        let desired = json!({"spec": {"hard": {"cpu": "8", "memory": "16Gi"}}});
        assert!(needs_apply(
            &desired,
            Some(&json!({"spec": {"hard": {"cpu": "9", "memory": "16Gi"}}}))
        ));
        assert!(needs_apply(
            &desired,
            Some(&json!({"spec": {"hard": {"cpu": "8"}}}))
        ));
        assert!(needs_apply(&desired, Some(&json!({"spec": {}}))));
    }

    #[test]
    fn canonicalised_quantities_are_not_drift() {
        let desired = json!({"spec": {"hard": {"cpu": "0.5", "memory": "1024Mi"}}});
        let observed = json!({"spec": {"hard": {"cpu": "500m", "memory": "1Gi"}}});
        assert!(!needs_apply(&desired, Some(&observed)));
    }

    #[test]
    fn lists_must_match_item_by_item() {
        let desired = json!({"subjects": [{"kind": "User", "name": "alice@example.com"}]});
        let same = json!({"subjects": [{"kind": "User", "name": "alice@example.com", "apiGroup": "rbac.authorization.k8s.io"}]});
        let other = json!({"subjects": [{"kind": "User", "name": "mallory@example.com"}]});
        let more = json!({"subjects": [{"kind": "User", "name": "alice@example.com"}, {"kind": "User", "name": "x"}]});
        assert!(!needs_apply(&desired, Some(&same)));
        assert!(needs_apply(&desired, Some(&other)));
        assert!(
            needs_apply(&desired, Some(&more)),
            "an added subject is drift: access must be exact"
        );
    }
}
