//! The portal: server-rendered pages for people who never write YAML. Login is the OIDC
//! authorization code flow with PKCE (S256), state and nonce; the session, like the login in
//! progress, is kept by the browser in a cookie sealed with the server's session keys
//! (HttpOnly, Secure, SameSite=Lax), so every replica with those keys serves it and a restart
//! logs nobody out. Every form carries the session's CSRF token. The list and the tenant page
//! follow the live stream (EventSource), so phases, the checklist and the quota move without a
//! reload.
//!
//! - [`session`]: what the portal keeps (sessions, logins in progress), below the app's state;
//! - [`seal`]: the sealing of its cookies;
//! - [`oidc`]: the code flow's exchanges with the issuer;
//! - [`html`]: the pages' HTML, one script per page and one style (the CSP allows them by hash);
//! - [`extract`]: the logged-in browser, as handlers take it;
//! - [`login`] and [`pages`]: the handlers.

pub mod extract;
pub mod html;
pub mod login;
pub mod oidc;
pub mod pages;
pub mod seal;
pub mod session;

use axum::{
    Router,
    routing::{get, post},
};

use crate::state::AppState;

/// The portal's routes, for [`crate::app::router`].
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(pages::home))
        .route("/login", get(login::login))
        .route("/auth/callback", get(login::callback))
        .route("/logout", post(login::logout))
        .route("/tenants", post(pages::create))
        .route("/tenants/{name}", get(pages::tenant_page))
        .route("/tenants/{name}/kubeconfig", get(pages::download))
        .route("/tenants/{name}/events", get(pages::tenant_events))
        .route("/tenants/{name}/delete", post(pages::delete))
        .route("/tenants/{name}/sleep", post(pages::sleep))
        .route("/tenants/{name}/wake", post(pages::wake))
        .route("/portal/events", get(pages::events))
}
