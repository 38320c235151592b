//! KubeSpaces: the Tenant API and the host-side operator.
//!
//! - [`api`]: the one Tenant type (CRD generated from it).
//! - [`names`]: every name derived from a tenant's name.
//! - [`conditions`], [`build`], [`reconcile::observe`], [`reconcile::drift`]: pure domain logic.
//! - [`reconcile`], [`controller`]: the Kubernetes glue.

pub mod access;
pub mod api;
pub mod build;
pub mod conditions;
pub mod config;
pub mod control_plane;
pub mod controller;
pub mod error;
pub mod http;
pub mod kube_client;
pub mod leader;
pub mod manifests;
pub mod metrics;
pub mod names;
pub mod quantity;
pub mod reconcile;
