//! Who is at the portal, as handlers take it: the logged-in [`Browser`] (without a session: to
//! the login page) and, for the live stream, its [`BrowserSession`].

use std::time::{Instant, SystemTime};

use axum::{
    extract::FromRequestParts,
    http::{StatusCode, request::Parts},
    response::{IntoResponse, Redirect, Response},
};

use super::session::Browser;
use crate::{auth::Identity, state::AppState};

impl FromRequestParts<AppState> for Browser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        state
            .portal
            .browser(&parts.headers)
            .ok_or_else(|| Redirect::to("/login").into_response())
    }
}

/// The logged-in browser's session, for its live stream: which session, until when.
pub struct BrowserSession {
    pub identity: Identity,
    pub id: String,
    pub expires: Instant,
}

impl FromRequestParts<AppState> for BrowserSession {
    type Rejection = StatusCode;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, StatusCode> {
        let session = state
            .portal
            .session(&parts.headers)
            .ok_or(StatusCode::UNAUTHORIZED)?;
        Ok(BrowserSession {
            expires: Instant::now() + session.remaining(SystemTime::now()),
            identity: session.identity,
            id: session.id,
        })
    }
}
