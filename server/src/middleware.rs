//! The middlewares around every route: one tracing span per request ([`trace`]) and the
//! per-client request rate ([`limit`], with the limits of [`crate::rate_limit`]).
//!
//! The caller is known only after the token is verified, so a forged token is counted against
//! its sender's address, never against the user it claims to be: no one can use up someone
//! else's allowance. The identity found here travels on to the handlers in the request's
//! extensions ([`Checked`]), so a token is verified once per request.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::{
    extract::{ConnectInfo, Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tracing::{Instrument, debug, info_span};

use crate::{
    caller::{Checked, bearer},
    rate_limit::{Client, client_address},
    state::AppState,
};

/// One span per request (method, path, status); headers, and so tokens, are never recorded.
pub async fn trace(request: Request, next: Next) -> Response {
    let span = info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
    );
    async move {
        let response = next.run(request).await;
        debug!(status = response.status().as_u16(), "answered");
        response
    }
    .instrument(span)
    .await
}

/// The middleware: finds the client, counts the request, passes the identity on.
pub async fn limit(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    // The kubelet's probes: throttling them would let a flood from the probes' address make
    // Kubernetes restart the server or take it out of its Service.
    if path == "/healthz" || path == "/readyz" {
        return next.run(request).await;
    }
    let mut user = None;
    if let Some(token) = bearer(request.headers()) {
        let identity = match state.verifier.verify(token).await {
            Ok(identity) => Some(identity),
            Err(reason) => {
                // The reason helps an operator of this server, not the caller: logged only.
                tracing::info!(%reason, "refused a token");
                None
            }
        };
        user = identity.as_ref().map(|i| i.email.clone());
        request.extensions_mut().insert(Checked(identity));
    } else if let Some(browser) = state.portal.browser(request.headers()) {
        user = Some(browser.identity.email);
    }
    let client = match user {
        Some(email) => Client::User(email),
        None => Client::Address(
            request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| client_address(peer.ip()))
                // Served without the peer's address (only the unit tests' oneshot calls): all
                // such requests share one allowance.
                .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        ),
    };
    if let Err(refusal) = state.request_limits.check(&client) {
        state.metrics.rate_limited.inc();
        tracing::debug!(?client, "rate limited");
        return refusal.into_response();
    }
    next.run(request).await
}
