//! KubeSpaces: the host-side operator. The Tenant API lives in `kubespaces_api` and is
//! re-exported here under its old paths (`api`, `names`, `quantity`, `conditions`).
//!
//! - [`api`]: the one Tenant type (CRD generated from it).
//! - [`names`]: every name derived from a tenant's name.
//! - [`conditions`], [`build`], [`reconcile::observe`], [`reconcile::drift`]: pure domain logic.
//! - [`reconcile`], [`controller`]: the Kubernetes glue.

pub use kubespaces_api::{api, conditions, kubeconfig, names, quantity};

pub mod access;
pub mod build;
pub mod config;
pub mod control_plane;
pub mod controller;
pub mod error;
pub mod http;
pub mod kube_client;
pub mod leader;
pub mod manifests;
pub mod metrics;
pub mod reconcile;
