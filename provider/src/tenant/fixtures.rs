//! Test fixtures shared by the tenant modules' tests.

use crate::value::Value;

/// A planned `kubespaces_tenant` state for `team-atlas` (computed values still unknown), with
/// `overrides` applied.
pub fn planned_state(overrides: &[(&str, Value)]) -> Value {
    let mut v = Value::object([
        ("id", Value::string("team-atlas")),
        ("name", Value::string("team-atlas")),
        ("owner", Value::string("alice@example.com")),
        ("cpu", Value::string("8")),
        ("memory", Value::string("16Gi")),
        ("storage", Value::Null),
        ("deletion_policy", Value::string("Delete")),
        ("wait_for_ready", Value::Bool(true)),
        ("phase", Value::Unknown),
        ("api_endpoint", Value::Unknown),
        ("apps_domain", Value::Unknown),
        ("namespace", Value::string("kubespaces-tenant-team-atlas")),
        ("kubeconfig", Value::Unknown),
        ("timeouts", Value::Null),
    ]);
    for (k, val) in overrides {
        v.set(k, val.clone());
    }
    v
}
