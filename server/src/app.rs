//! The app's wiring: the API's and the portal's routes in one router, inside the middlewares
//! ([`crate::middleware`]) and the security headers ([`crate::headers`]).

use std::net::SocketAddr;

use axum::{Router, extract::connect_info::IntoMakeServiceWithConnectInfo, middleware};

use crate::{api, headers, middleware as mw, portal, state::AppState};

/// The server as `axum::serve` takes it: the router, told each connection's peer address (the
/// rate limit of requests without a login counts by it).
pub fn app(state: AppState) -> IntoMakeServiceWithConnectInfo<Router, SocketAddr> {
    router(state).into_make_service_with_connect_info::<SocketAddr>()
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
