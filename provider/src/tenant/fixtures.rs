//! Test fixtures shared by the tenant modules' tests.

use crate::value::Value;

/// A `kubespaces_tenant` configuration for `team-atlas` as Terraform decodes it (every
/// attribute present, computed ones null), with `overrides` applied.
pub fn config(overrides: &[(&str, Value)]) -> Value {
    with(
        Value::object([
            ("id", Value::Null),
            ("name", Value::string("team-atlas")),
            ("owner", Value::string("alice@example.com")),
            ("cpu", Value::string("8")),
            ("memory", Value::string("16Gi")),
            ("storage", Value::Null),
            ("deletion_policy", Value::Null),
            ("wait_for_ready", Value::Null),
            ("phase", Value::Null),
            ("api_endpoint", Value::Null),
            ("apps_domain", Value::Null),
            ("namespace", Value::Null),
            ("kubeconfig", Value::Null),
            ("timeouts", Value::Null),
        ]),
        overrides,
    )
}

/// A planned `kubespaces_tenant` state for `team-atlas` (computed values still unknown), with
/// `overrides` applied.
pub fn planned_state(overrides: &[(&str, Value)]) -> Value {
    with(
        Value::object([
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
        ]),
        overrides,
    )
}

/// `v` with the attributes in `overrides` set.
fn with(mut v: Value, overrides: &[(&str, Value)]) -> Value {
    for (k, val) in overrides {
        v.set(k, val.clone());
    }
    v
}
