//! The Tenant API (`kubespaces.io/v1alpha1`): the one definition of the type, shared by the
//! operator, the provider, the server and the CLI. The CRD YAML is generated from it.

pub mod reference;
mod schema;
mod tenant;

pub use tenant::*;
