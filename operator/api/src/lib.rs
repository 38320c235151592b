//! The KubeSpaces Tenant API, shared by the operator, the Terraform provider, the server and
//! the CLI. It depends on no runtime (no client, no async executor, no HTTP server), so a client
//! gets the one Tenant type without the operator's machinery.
//!
//! - [`api`]: the Tenant type (the CRD is generated from it) and the field reference.
//! - [`names`]: every name derived from a tenant's name, and the name rules admission enforces.
//! - [`quantity`]: Kubernetes quantities as exact numbers.
//! - [`conditions`]: condition types, the phase and how it follows from the conditions.
//! - [`kubeconfig`]: tenant kubeconfigs read as data (CA and credential only) and built.
//! - [`status`]: the API server's refusals in words a person reads.

pub mod api;
pub mod conditions;
pub mod kubeconfig;
pub mod names;
pub mod quantity;
pub mod status;
