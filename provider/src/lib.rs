//! `terraform-provider-kubespaces`: a Terraform/OpenTofu provider (plugin protocol 6) for
//! KubeSpaces tenants.
//!
//! Layers, from the wire inwards, kept apart the way terraform-plugin-framework separates
//! protocol from resources:
//! - [`plugin`]: go-plugin handshake, AutoMTLS, signals, shutdown;
//! - [`server`]: the tfplugin6 RPCs, decoding and encoding values;
//! - [`value`] and [`schema`]: msgpack/cty values driven by schema descriptions;
//! - [`tenant`]: the `kubespaces_tenant` resource and data source; only its `ops` module
//!   talks to Kubernetes.

pub mod config;
pub mod connection;
pub mod diag;
pub mod duration;
pub mod logging;
pub mod plugin;
pub mod proto;
pub mod schema;
pub mod server;
pub mod tenant;
pub mod value;
