//! KubeSpaces server: a REST API over the Tenant custom resource for people who never write
//! YAML (the CLI and the portal), authenticated by OIDC ID tokens. In layers, each file
//! importing only from the layers below it:
//!
//! 1. Values and mechanisms, no HTTP: [`error`], [`rate`], [`max_quantity`], [`config`],
//!    [`auth`], [`store`], [`metrics`], [`public_url`], [`random`], [`rate_limit`],
//!    [`bounds`].
//! 2. [`tenant_view`]: what the portal shows of a tenant (pure); [`tenant_events`]: a tenant's
//!    recent Events; [`tenants`]: the tenant use cases (list, get, create, delete, sleep and
//!    wake, kubeconfig, Events), owner-filtered.
//! 3. [`streams`]: the live stream, at most so many per user, ending with the login it came from.
//! 4. [`portal::seal`], [`portal::session`] and [`portal::oidc`]: the sealing of the portal's
//!    cookies, what it keeps in them, and its OIDC client.
//! 5. [`state`]: what every handler shares (`AppState`).
//! 6. The adapters: [`caller`] (who calls the API), [`api`] (the REST API), [`portal`] (pages,
//!    login), [`middleware`] (tracing, request rates), [`headers`] (security headers).
//! 7. [`app`]: the router.
//!
//! In short:
//! - [`auth`]: ID token validation against the issuer's discovery document and JWKS.
//! - [`store`]: the watch cache of Tenants every read is served from, and its change feed.
//! - [`metrics`]: Prometheus metrics (`/metrics`, admins only).
//! - [`public_url`]: the portal's public URL, the only source of its OIDC redirect URI.
//! - [`bounds`]: what a create may ask for: creator groups, tenants per owner, sizes, create rate.
//! - [`rate_limit`]: requests per user and per address without a login (429 + Retry-After).
//! - [`rate`]: rates as the flags write them (`50/s`, `10/min`); [`max_quantity`]: maxima.
//! - [`config`]: command-line flags / environment.

pub mod api;
pub mod app;
pub mod auth;
pub mod bounds;
pub mod caller;
pub mod config;
pub mod error;
pub mod headers;
pub mod issuer_roots;
pub mod max_quantity;
pub mod metrics;
pub mod middleware;
pub mod portal;
pub mod public_url;
pub mod random;
pub mod rate;
pub mod rate_limit;
pub mod state;
pub mod store;
pub mod streams;
pub mod tenant_events;
pub mod tenant_view;
pub mod tenants;
