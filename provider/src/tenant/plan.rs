//! `PlanResourceChange` for `kubespaces_tenant`, as a pure function.
//!
//! The contract (Terraform `docs/resource-instance-change-lifecycle.md`, enforced by
//! `objchange.AssertPlanValid`): configured values are planned as configured (or as the prior
//! value when the difference is only notation); computed values may be anything, but every
//! *known* planned value must come back identical from apply. So:
//!
//! * nothing changed → return the prior state exactly, or every plan shows a perpetual diff;
//! * create → computed values the operator decides are unknown; `id` and `namespace` follow
//!   from the name and are known as soon as the name is;
//! * update → stable computed values (endpoints, kubeconfig, namespace) keep their prior
//!   value; only `phase` becomes unknown, and only when the spec changes;
//! * `name` and `owner` force replacement (Terraform ignores a path whose value did not
//!   change); the API refuses a change of owner in place.
//!
//! `deletion_policy` and `wait_for_ready` are optional with a default: when the
//! configuration leaves them out the default is planned (like terraform-plugin-framework's
//! `Default`), so deleting the line from the file goes back to the default.

use crate::diag::AttrPath;
use crate::value::Value;

use kubespaces_api::api::DeletionPolicy;
use kubespaces_api::{names, quantity};

use super::model::policy_name;
use super::schema::{DEFAULT_WAIT_FOR_READY, spec_changed};

#[derive(Debug, PartialEq)]
pub struct Plan {
    pub planned: Value,
    pub requires_replace: Vec<AttrPath>,
}

/// Computed attributes the operator decides; unknown until it has.
const OPERATOR_DECIDED: [&str; 4] = ["phase", "api_endpoint", "apps_domain", "kubeconfig"];

/// The computed values of a tenant yet to be created: `id` and `namespace` follow from the name
/// alone (known exactly when the name is), the rest is for the operator to decide.
fn plan_computed_of_new_tenant(planned: &mut Value) {
    let (id, namespace) = match planned.get("name").as_str() {
        Some(n) => (Value::string(n), Value::string(names::namespace(n))),
        None => (Value::Unknown, Value::Unknown),
    };
    planned.set("id", id);
    planned.set("namespace", namespace);
    for attr in OPERATOR_DECIDED {
        planned.set(attr, Value::Unknown);
    }
}

pub fn plan(prior: &Value, proposed: &Value, config: &Value) -> Plan {
    let requires_replace = vec![AttrPath::root("name"), AttrPath::root("owner")];
    let mut planned = proposed.clone();
    apply_defaults(&mut planned, config);

    if prior.is_null() {
        plan_computed_of_new_tenant(&mut planned);
        return Plan {
            planned,
            requires_replace,
        };
    }

    // Same quota written differently ("1" → "1000m"): keep what is stored, no update.
    for q in ["cpu", "memory", "storage"] {
        if let (Some(p), Some(c)) = (prior.get(q).as_str(), planned.get(q).as_str())
            && p != c
            && quantity::same(p, c)
        {
            planned.set(q, Value::string(p));
        }
    }

    if planned.get("name") != prior.get("name") || planned.get("owner") != prior.get("owner") {
        // Replacement: everything computed belongs to the new tenant.
        plan_computed_of_new_tenant(&mut planned);
    } else if spec_changed(prior, &planned) {
        // The operator reconciles the new spec: the phase passes through Provisioning.
        planned.set("phase", Value::Unknown);
    }
    // "No change" needs no special case: values compare structurally (objects are sorted
    // maps), so a plan equal to the prior state encodes to the same bytes.
    Plan {
        planned,
        requires_replace,
    }
}

fn apply_defaults(planned: &mut Value, config: &Value) {
    if config.get("deletion_policy").is_null() {
        let default = policy_name(DeletionPolicy::default());
        planned.set("deletion_policy", Value::string(default));
    }
    if config.get("wait_for_ready").is_null() {
        planned.set("wait_for_ready", Value::Bool(DEFAULT_WAIT_FOR_READY));
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
