//! The app's wiring: the API's and the portal's routes in one router, inside the middlewares
//! ([`crate::middleware`]) and the security headers ([`crate::headers`]).

use std::{future::Future, net::SocketAddr};

use axum::{
    Router, extract::connect_info::IntoMakeServiceWithConnectInfo, middleware, serve::ListenerExt,
};
use tokio::net::TcpListener;
use tracing::warn;

use crate::{api, headers, middleware as mw, portal, state::AppState};

/// The server as `axum::serve` takes it: the router, told each connection's peer address (the
/// rate limit of requests without a login counts by it).
pub fn app(state: AppState) -> IntoMakeServiceWithConnectInfo<Router, SocketAddr> {
    router(state).into_make_service_with_connect_info::<SocketAddr>()
}

/// Serves the app on `listener` until `shutdown` resolves, then finishes the requests in flight.
/// Without Nagle's delay: a live stream's event is one small write that must leave at once.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            warn!(error = %e, "could not set TCP_NODELAY on a connection");
        }
    });
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await
}

pub fn router(state: AppState) -> Router {
    let headers = headers::layer(&state.public_url);
    let limit = middleware::from_fn_with_state(state.clone(), mw::limit);
    api::routes()
        .merge(portal::routes())
        // Inside the trace and the headers, so a 429 is logged and carries the headers too.
        .layer(limit)
        .layer(middleware::from_fn(mw::trace))
        // Outermost, so no response escapes it (404s and 405s of the router included).
        .layer(headers)
        .with_state(state)
}
