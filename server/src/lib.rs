//! KubeSpaces server: a REST API over the Tenant custom resource for people who never write
//! YAML (the CLI and the portal), authenticated by OIDC ID tokens.
//!
//! - [`auth`]: ID token validation against the issuer's discovery document and JWKS.
//! - [`store`]: the watch cache of Tenants every read is served from, and its change feed.
//! - [`routes`]: the HTTP API; every tenant is filtered by owner before it leaves the process.
//! - [`portal`]: the web portal (server-rendered HTML, OIDC code flow with PKCE, session cookies).
//! - [`pending`]: the bounded store of logins begun and not yet finished.
//! - [`headers`]: the security headers every response carries (CSP, framing, HSTS, ...).
//! - [`metrics`]: Prometheus metrics (`/metrics`, admins only).
//! - [`public_url`]: the portal's public URL, the only source of its OIDC redirect URI.
//! - [`bounds`]: what a create may ask for: creator groups, tenants per owner, sizes, create rate.
//! - [`rate_limit`]: requests per user and per address without a login (429 + Retry-After).
//! - [`streams`]: the live stream, at most so many per user, ending with the login it came from.
//! - [`rate`]: rates as the flags write them (`50/s`, `10/min`).
//! - [`config`]: command-line flags / environment.

pub mod auth;
pub mod bounds;
pub mod config;
pub mod error;
pub mod headers;
pub mod metrics;
pub mod pending;
pub mod portal;
pub mod public_url;
pub mod rate;
pub mod rate_limit;
pub mod routes;
pub mod store;
pub mod streams;
