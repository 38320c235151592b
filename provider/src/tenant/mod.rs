//! The `kubespaces_tenant` resource and data source. Pure logic (schema, validation, plan)
//! lives in its own files; only `ops` talks to Kubernetes.

#[cfg(test)]
mod fixtures;
pub mod model;
pub mod ops;
pub mod plan;
pub mod rules;
pub mod schema;
pub mod store;
pub mod validate;
