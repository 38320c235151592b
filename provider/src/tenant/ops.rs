//! Create, read, update, delete and import of `kubespaces_tenant` against a [`TenantStore`].
//!
//! What users rely on here: apply waits until the Tenant is Ready *at the generation it
//! wrote* (an old Ready says nothing about the new spec); a create that fails after the
//! object exists still returns the object, so Terraform records it as tainted instead of
//! leaking it; StopProvider (Ctrl-C) ends a wait early but still returns what exists; delete
//! returns only once the Tenant is gone; a Tenant deleted behind Terraform's back reads as
//! null so the next plan re-creates it.

use std::time::Duration;

use kubespaces_api::api::Tenant;
use kubespaces_api::conditions::{self, Phase};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::model;
use super::schema::spec_changed;
use super::store::{StoreError, TenantStore};
use crate::diag::{AttrPath, Diag};
use crate::duration;
use crate::value::Value;

/// The default of terraform-plugin-framework-timeouts, which users expect.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Between GETs while waiting. The host side of a tenant is Ready within a second or two, so a
/// longer interval would dominate `apply` (measured by `make bench-provider`); one GET per
/// waiting tenant every half second is cheap for the API server.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Debug)]
pub struct Outcome {
    pub state: Value,
    pub diags: Vec<Diag>,
}

impl Outcome {
    pub fn ok(state: Value) -> Self {
        Self {
            state,
            diags: vec![],
        }
    }

    fn error(state: Value, diag: Diag) -> Self {
        Self {
            state,
            diags: vec![diag],
        }
    }
}

/// The `timeouts.<op>` of a state, or the default. Validation already refused bad values.
pub fn timeout_of(state: &Value, op: &str) -> Duration {
    state
        .get("timeouts")
        .get(op)
        .as_str()
        .and_then(|s| duration::parse(s).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_TIMEOUT)
}

fn api_error(what: &str, name: &str, e: &StoreError) -> Diag {
    Diag::error(format!("Could not {what} tenant {name:?}"), e.to_string())
}

fn ready_message(t: &Tenant) -> String {
    let phase = t.phase().unwrap_or(Phase::Pending.as_str());
    let ready = match t.condition(conditions::READY) {
        Some(c) if !c.message.is_empty() => {
            format!("phase {phase}, Ready: {} ({})", c.message, c.reason)
        }
        Some(c) => format!("phase {phase}, Ready reason {}", c.reason),
        None => format!("phase {phase}, no Ready condition yet (is the operator running?)"),
    };
    // While the operator's last attempt failed, that failure is the likelier cause.
    match t.condition(conditions::SYNCED) {
        Some(c) if c.status == "False" && !c.message.is_empty() => {
            format!("{ready}; Synced: {} ({})", c.message, c.reason)
        }
        _ => ready,
    }
}

/// Failed at the current generation: the operator's word that waiting will not help.
fn failed_now(t: &Tenant) -> bool {
    let status = t.status.as_ref();
    t.phase() == Some(Phase::Failed.as_str())
        && status.and_then(|s| s.observed_generation) == t.metadata.generation
}

enum Waited {
    Ready(Tenant),
    Gone,
    NotReady(Tenant, Diag),
}

async fn wait_ready(
    store: &dyn TenantStore,
    mut tenant: Tenant,
    timeout: Duration,
    stop: &CancellationToken,
) -> Waited {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let deadline = Instant::now() + timeout;
    let mut last_phase = None;
    loop {
        // Progress for `TF_LOG_PROVIDER=INFO`: one line per phase change, not per poll.
        let phase = tenant.phase().map(str::to_owned);
        if phase != last_phase {
            tracing::info!(tenant = %name, phase = phase.as_deref().unwrap_or("none"), "waiting for Ready");
            last_phase = phase;
        }
        if tenant.is_ready() {
            return Waited::Ready(tenant);
        }
        if failed_now(&tenant) {
            let detail = ready_message(&tenant);
            return Waited::NotReady(
                tenant,
                Diag::error(format!("Tenant {name:?} failed"), detail),
            );
        }
        let now = Instant::now();
        if now >= deadline {
            let detail = format!(
                "Not Ready after {}s: {}. Raise `timeouts`, or look at `kubectl describe tenant {name}`.",
                timeout.as_secs(),
                ready_message(&tenant)
            );
            return Waited::NotReady(
                tenant,
                Diag::error(format!("Timed out waiting for tenant {name:?}"), detail),
            );
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_INTERVAL.min(deadline - now)) => {}
            () = stop.cancelled() => {
                let detail = format!("Terraform was interrupted while waiting; the tenant exists and was saved to state ({}).", ready_message(&tenant));
                return Waited::NotReady(tenant, Diag::error(format!("Interrupted while waiting for tenant {name:?}"), detail));
            }
        }
        match store.get(&name).await {
            Ok(Some(t)) => tenant = t,
            Ok(None) => return Waited::Gone,
            // A blip of the API server is no reason to abandon an apply.
            Err(e) => {
                tracing::warn!(tenant = %name, error = %e, "polling the tenant failed; retrying")
            }
        }
    }
}

/// The kubeconfig the operator published for `tenant`. Failing to read it is only a warning
/// (the tenant itself is fine), with `fallback` in its place.
async fn kubeconfig(
    store: &dyn TenantStore,
    tenant: &Tenant,
    fallback: Option<&str>,
    diags: &mut Vec<Diag>,
) -> Option<String> {
    store.kubeconfig(tenant).await.unwrap_or_else(|e| {
        diags.push(Diag::warning(
            "Could not read the tenant kubeconfig",
            e.to_string(),
        ));
        fallback.map(str::to_owned)
    })
}

/// After a write: waits for Ready when `wait` gives a timeout, then returns the state, keeping
/// every known planned value (see `model::honour_plan`). A wait that ends unready returns the
/// tenant with the error, so Terraform keeps it in state (tainted after a create).
async fn wait_then_settle(
    store: &dyn TenantStore,
    tenant: Tenant,
    planned: &Value,
    wait: Option<Duration>,
    stop: &CancellationToken,
    gone: Diag,
) -> Outcome {
    let mut diags = vec![];
    let tenant = match wait {
        None => tenant,
        Some(timeout) => match wait_ready(store, tenant, timeout, stop).await {
            Waited::Ready(t) => t,
            Waited::Gone => return Outcome::error(Value::Null, gone),
            Waited::NotReady(t, d) => {
                diags.push(d);
                t
            }
        },
    };
    let kubeconfig = kubeconfig(store, &tenant, None, &mut diags).await;
    let state = model::honour_plan(
        planned,
        model::state_from_tenant(&tenant, kubeconfig, planned),
    );
    Outcome { state, diags }
}

/// The tenant a state is about.
fn name_of(state: &Value) -> String {
    state.get("name").as_str().unwrap_or_default().to_owned()
}

pub async fn create(store: &dyn TenantStore, planned: &Value, stop: &CancellationToken) -> Outcome {
    let tenant = match model::tenant_from_state(planned) {
        Ok(t) => t,
        Err(e) => {
            return Outcome::error(
                Value::Null,
                Diag::error("Cannot create the tenant", e.to_string()),
            );
        }
    };
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let created = match store.create(&tenant).await {
        Ok(t) => t,
        Err(e) if e.is_conflict() => {
            let detail = format!(
                "A Tenant named {name:?} already exists. Bring it under Terraform with `terraform import <address> {name}`, or choose another name."
            );
            return Outcome::error(
                Value::Null,
                Diag::error("Tenant already exists", detail).at(AttrPath::root("name")),
            );
        }
        Err(e) => return Outcome::error(Value::Null, api_error("create", &name, &e)),
    };
    tracing::info!(tenant = %name, "tenant created");
    let wait = model::wait_for_ready(planned).then(|| timeout_of(planned, "create"));
    let gone = Diag::error(
        format!("Tenant {name:?} was deleted while being created"),
        "Something else deleted it before it became Ready.",
    );
    wait_then_settle(store, created, planned, wait, stop, gone).await
}

pub async fn update(
    store: &dyn TenantStore,
    prior: &Value,
    planned: &Value,
    stop: &CancellationToken,
) -> Outcome {
    let name = name_of(planned);
    let spec_changed = spec_changed(prior, planned);
    let fetched = if spec_changed {
        let spec = match model::spec_from_state(planned) {
            Ok(s) => s,
            Err(e) => {
                return Outcome::error(
                    prior.clone(),
                    Diag::error("Cannot update the tenant", e.to_string()),
                );
            }
        };
        store.patch_spec(&name, &spec).await.map(Some)
    } else {
        // Only Terraform-side settings (timeouts, wait_for_ready) changed: nothing to write.
        store.get(&name).await
    };
    let tenant = match fetched {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Outcome::error(
                Value::Null,
                Diag::error(
                    format!("Tenant {name:?} no longer exists"),
                    "It was deleted outside Terraform; the next plan will create it again.",
                ),
            );
        }
        Err(e) => return Outcome::error(prior.clone(), api_error("update", &name, &e)),
    };
    let wait =
        (spec_changed && model::wait_for_ready(planned)).then(|| timeout_of(planned, "update"));
    let gone = Diag::error(format!("Tenant {name:?} was deleted during the update"), "");
    wait_then_settle(store, tenant, planned, wait, stop, gone).await
}

pub async fn delete(store: &dyn TenantStore, prior: &Value, stop: &CancellationToken) -> Outcome {
    let name = name_of(prior);
    if let Err(e) = store.delete(&name).await {
        return Outcome::error(prior.clone(), api_error("delete", &name, &e));
    }
    let timeout = timeout_of(prior, "delete");
    let deadline = Instant::now() + timeout;
    loop {
        let tenant = match store.get(&name).await {
            Ok(None) => {
                tracing::info!(tenant = %name, "tenant deleted");
                return Outcome::ok(Value::Null);
            }
            Ok(Some(t)) => Some(t),
            Err(e) => {
                tracing::warn!(tenant = %name, error = %e, "polling the tenant failed; retrying");
                None
            }
        };
        let now = Instant::now();
        let blocked = || {
            tenant
                .as_ref()
                .and_then(|t| t.condition(conditions::DELETION_BLOCKED))
                .map_or_else(
                    || "the operator has not finished tearing it down".to_owned(),
                    |c| c.message.clone(),
                )
        };
        if now >= deadline {
            let detail = format!("Still present after {}s: {}.", timeout.as_secs(), blocked());
            return Outcome::error(
                prior.clone(),
                Diag::error(format!("Timed out deleting tenant {name:?}"), detail),
            );
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_INTERVAL.min(deadline - now)) => {}
            () = stop.cancelled() => {
                let detail = format!("Deletion was requested and goes on in the cluster: {}.", blocked());
                return Outcome::error(prior.clone(), Diag::error(format!("Interrupted while deleting tenant {name:?}"), detail));
            }
        }
    }
}

/// Refresh: null when the Tenant is gone, so Terraform drops it and plans a create.
pub async fn read(store: &dyn TenantStore, current: &Value) -> Outcome {
    let name = current
        .get("name")
        .as_str()
        .or_else(|| current.get("id").as_str())
        .unwrap_or_default()
        .to_owned();
    match store.get(&name).await {
        Ok(None) => {
            tracing::info!(tenant = %name, "tenant no longer exists; removing it from state");
            Outcome::ok(Value::Null)
        }
        Ok(Some(t)) => {
            let mut diags = vec![];
            let known = current.get("kubeconfig").as_str();
            let kubeconfig = kubeconfig(store, &t, known, &mut diags).await;
            Outcome {
                state: model::state_from_tenant(&t, kubeconfig, current),
                diags,
            }
        }
        Err(e) => Outcome::error(current.clone(), api_error("read", &name, &e)),
    }
}

/// `terraform import kubespaces_tenant.x <name>`: a stub that the following Read fills in.
pub fn import(id: &str) -> Result<Value, Diag> {
    super::rules::tenant_name(id).map_err(|detail| {
        Diag::error(
            "Invalid import ID",
            format!("The import ID is the tenant name. {detail}"),
        )
    })?;
    Ok(Value::object([
        ("id", Value::string(id)),
        ("name", Value::string(id)),
    ]))
}

/// The data source: an error, not null, when the tenant does not exist.
pub async fn read_data(store: &dyn TenantStore, config: &Value) -> Outcome {
    let name = name_of(config);
    match store.get(&name).await {
        Ok(Some(t)) => {
            let mut diags = vec![];
            let kubeconfig = kubeconfig(store, &t, None, &mut diags).await;
            Outcome {
                state: model::data_from_tenant(&t, kubeconfig),
                diags,
            }
        }
        Ok(None) => Outcome::error(
            Value::Null,
            Diag::error(
                "Tenant not found",
                format!("There is no Tenant named {name:?}."),
            )
            .at(AttrPath::root("name")),
        ),
        Err(e) => Outcome::error(Value::Null, api_error("read", &name, &e)),
    }
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
