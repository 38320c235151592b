//! Conversions between Terraform values and the shared `Tenant` type. Pure: no I/O.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubespaces_api::api::{DeletionPolicy, Tenant, TenantResources, TenantSpec};
use kubespaces_api::{names, quantity};

use super::schema::DEFAULT_WAIT_FOR_READY;
use crate::value::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    #[error("`{0}` must be known and set to create or update a tenant")]
    Missing(&'static str),
    #[error("`deletion_policy` must be \"Delete\" or \"Orphan\", not {0:?}")]
    DeletionPolicy(String),
}

fn required<'a>(v: &'a Value, attr: &'static str) -> Result<&'a str, ModelError> {
    v.get(attr).as_str().ok_or(ModelError::Missing(attr))
}

/// The Tenant's spec from a planned state (wholly known at apply time).
pub fn spec_from_state(v: &Value) -> Result<TenantSpec, ModelError> {
    let deletion_policy = match v.get("deletion_policy").as_str() {
        None => DeletionPolicy::default(),
        Some("Delete") => DeletionPolicy::Delete,
        Some("Orphan") => DeletionPolicy::Orphan,
        Some(other) => return Err(ModelError::DeletionPolicy(other.to_owned())),
    };
    Ok(TenantSpec {
        owner: required(v, "owner")?.to_owned(),
        resources: TenantResources {
            cpu: Quantity(required(v, "cpu")?.to_owned()),
            memory: Quantity(required(v, "memory")?.to_owned()),
            storage: v.get("storage").as_str().map(|s| Quantity(s.to_owned())),
        },
        deletion_policy,
        write_connection_secret_to_ref: None,
        sleep: None,
    })
}

/// A new Tenant object for the planned state.
pub fn tenant_from_state(v: &Value) -> Result<Tenant, ModelError> {
    let name = required(v, "name")?;
    Ok(Tenant::new(name, spec_from_state(v)?))
}

/// The merge patch that makes the live spec match the planned one. `storage: null` removes
/// a storage quota; fields Terraform does not manage (`writeConnectionSecretToRef`) are left
/// alone, so a Crossplane or GitOps owner of those keeps them.
pub fn spec_patch(spec: &TenantSpec) -> serde_json::Value {
    serde_json::json!({
        "spec": {
            "owner": spec.owner,
            "resources": {
                "cpu": spec.resources.cpu.0,
                "memory": spec.resources.memory.0,
                "storage": spec.resources.storage.as_ref().map(|q| &q.0),
            },
            "deletionPolicy": policy_name(spec.deletion_policy),
        }
    })
}

pub fn policy_name(p: DeletionPolicy) -> &'static str {
    match p {
        DeletionPolicy::Delete => "Delete",
        DeletionPolicy::Orphan => "Orphan",
    }
}

/// The quantity as the API has it, unless `base` says the same amount in the user's notation:
/// then the user's notation, so a refresh does not turn `"1"` into `"1000m"` and show a diff.
fn quantity_value(live: Option<&Quantity>, base: &Value) -> Value {
    match (live, base.as_str()) {
        (Some(q), Some(b)) if quantity::same(&q.0, b) => Value::string(b),
        (Some(q), _) => Value::string(q.0.clone()),
        (None, _) => Value::Null,
    }
}

/// Resource state for a live Tenant. `base` (the planned or prior state) supplies what only
/// Terraform knows (`wait_for_ready`, `timeouts`) and the user's quantity notation.
pub fn state_from_tenant(t: &Tenant, kubeconfig: Option<String>, base: &Value) -> Value {
    let name = t.metadata.name.clone().unwrap_or_default();
    let status = t.status.as_ref();
    let endpoints = status.and_then(|s| s.endpoints.as_ref());
    let r = &t.spec.resources;
    Value::object([
        ("id", Value::string(&name)),
        ("namespace", Value::string(names::namespace(&name))),
        ("name", Value::string(name)),
        ("owner", Value::string(&t.spec.owner)),
        ("cpu", quantity_value(Some(&r.cpu), base.get("cpu"))),
        (
            "memory",
            quantity_value(Some(&r.memory), base.get("memory")),
        ),
        (
            "storage",
            quantity_value(r.storage.as_ref(), base.get("storage")),
        ),
        (
            "deletion_policy",
            Value::string(policy_name(t.spec.deletion_policy)),
        ),
        ("wait_for_ready", Value::Bool(wait_for_ready(base))),
        (
            "phase",
            Value::opt_string(status.and_then(|s| s.phase.clone())),
        ),
        (
            "api_endpoint",
            Value::opt_string(endpoints.and_then(|e| e.api.clone())),
        ),
        (
            "apps_domain",
            Value::opt_string(endpoints.and_then(|e| e.apps.as_deref().map(apps_domain))),
        ),
        ("kubeconfig", Value::opt_string(kubeconfig)),
        ("timeouts", base.get("timeouts").clone()),
    ])
}

/// The state's `wait_for_ready`, or the default where it has none (after an import).
pub fn wait_for_ready(state: &Value) -> bool {
    state
        .get("wait_for_ready")
        .as_bool()
        .unwrap_or(DEFAULT_WAIT_FOR_READY)
}

/// `https://*.team-atlas.apps.example.com` → `*.team-atlas.apps.example.com`: a domain is
/// what DNS records and Ingress hosts need.
fn apps_domain(url: &str) -> String {
    url.strip_prefix("https://")
        .unwrap_or(url)
        .trim_end_matches('/')
        .to_owned()
}

/// Keeps every value the plan promised (Terraform rejects an apply result that differs from
/// a known planned value) and fills the unknown ones from what the API returned.
pub fn honour_plan(planned: &Value, actual: Value) -> Value {
    match (planned, actual) {
        (Value::Object(p), Value::Object(mut a)) => {
            for (k, pv) in p {
                let av = a.remove(k).unwrap_or_default();
                a.insert(k.clone(), honour_plan(pv, av));
            }
            Value::Object(a)
        }
        (Value::Unknown, actual) => actual,
        (planned, _) => planned.clone(),
    }
}

/// Data source state for a live Tenant.
pub fn data_from_tenant(t: &Tenant, kubeconfig: Option<String>) -> Value {
    let mut v = state_from_tenant(t, kubeconfig, &Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("wait_for_ready");
        m.remove("timeouts");
    }
    v
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
