//! KubeSpaces: the host-side operator. The Tenant API lives in `kubespaces_api` and is
//! re-exported here under its old paths (`api`, `names`, `quantity`, `conditions`).
//!
//! The layers, each using only those before it ([`error`] and [`metrics`] sit beside them):
//! - [`api`], [`names`], [`conditions`]: the one Tenant type, every derived name, the phase.
//! - [`build`]: pure, a tenant's whole desired state in one value ([`build::desired::of`]: the
//!   host objects, the rendered chart with the operator's access, route and apps objects), the
//!   control-plane values, install manifests' parts and the RBAC table, from a Tenant and the
//!   settings.
//! - [`observe`]: pure, what the live objects say (conditions, drift).
//! - [`helm`]: the one subprocess, rendering the pinned chart.
//! - [`apply`]: the plan of the rendered objects (pure: claimed, scoped by discovery, the prune
//!   set), their server-side apply, drift check and prune; the typed host objects, written where
//!   they drifted; the operator's own recent writes.
//! - [`reconcile`]: one pass over a Tenant (and its teardown), made of the steps above.
//! - [`runtime`]: configuration, the controller's watches, leader election, clients, probes.
//! - [`waker`]: beside the controller, its own process (`kubespaces-operator waker`): the proxy
//!   in every tenant API's path that notes activity and wakes sleeping tenants.

pub use kubespaces_api::{api, conditions, kubeconfig, names, quantity};

pub mod apply;
pub mod build;
pub mod error;
pub mod helm;
pub mod manifests;
pub mod metrics;
pub mod observe;
pub mod reconcile;
pub mod runtime;
pub mod waker;
