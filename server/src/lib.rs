//! KubeSpaces server: a REST API over the Tenant custom resource for people who never write
//! YAML (the CLI and the portal), authenticated by OIDC ID tokens.
//!
//! - [`auth`]: ID token validation against the issuer's discovery document and JWKS.
//! - [`store`]: the watch cache of Tenants every read is served from, and its change feed.
//! - [`routes`]: the HTTP API; every tenant is filtered by owner before it leaves the process.
//! - [`portal`]: the web portal (server-rendered HTML, OIDC code flow with PKCE, session cookies).
//! - [`config`]: command-line flags / environment.

pub mod auth;
pub mod config;
pub mod error;
pub mod portal;
pub mod routes;
pub mod store;
