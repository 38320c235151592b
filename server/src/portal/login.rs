//! The portal's login and logout pages: `/login` begins the OIDC authorization code flow
//! ([`super::oidc`]), `/auth/callback` finishes it and starts a session ([`super::session`]),
//! `/logout` ends it. What a login needs until its callback is in the browser's sealed login
//! cookie, so the callback may reach any replica, and `/login`, open to anyone, makes the
//! server keep nothing.

use std::time::SystemTime;

use axum::{
    Form,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use serde::Deserialize;
use tracing::{info, warn};

use super::{
    oidc::OidcError,
    session::{Browser, LOGIN_COOKIE, SESSION_COOKIE, session_ttl, set_cookie},
};
use crate::{error::ApiError, state::AppState};

/// The login could not be completed: one answer, whatever went wrong.
fn refused() -> ApiError {
    ApiError::Forbidden("the login could not be completed; log in again".into())
}

/// What the issuer's trouble is for the browser: an issuer out of reach (or of no use) is 503,
/// a refused token 401, the rest a refusal.
fn answer(error: OidcError) -> ApiError {
    match error {
        OidcError::Unreachable(_) | OidcError::Discovery(_) => {
            ApiError::Unavailable(error.to_string())
        }
        OidcError::Exchange(_) => {
            warn!(%error, "the code exchange failed");
            refused()
        }
        OidcError::Token(_) => {
            info!(reason = %error, "refused a portal login token");
            ApiError::Unauthorized
        }
        OidcError::Nonce => refused(),
    }
}

pub async fn login(State(state): State<AppState>) -> Result<Response, ApiError> {
    let portal = &state.portal;
    let authorization = portal.oidc.begin().await.map_err(answer)?;
    let login = portal.login_cookie(&authorization.state, authorization.login);
    Ok((
        [(
            header::SET_COOKIE,
            set_cookie(LOGIN_COOKIE, &login, portal.login_ttl().as_secs()),
        )],
        Redirect::to(&authorization.url),
    )
        .into_response())
}

#[derive(Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Result<Response, ApiError> {
    if let Some(error) = q.error {
        warn!(%error, "the issuer refused the login");
        return Err(refused());
    }
    let (Some(code), Some(login_state)) = (q.code, q.state) else {
        return Err(refused());
    };
    // The state must be the one this browser was given (login CSRF), in time. No login
    // cookie, another's, an expired or a forged one: all the same refusal.
    let pending = state
        .portal
        .login(&headers, &login_state)
        .ok_or_else(refused)?;
    let oidc = &state.portal.oidc;
    let id_token = oidc.finish(&code, &pending).await.map_err(answer)?;
    // The identity as the API would see it (verified email, groups, admin, how long it holds);
    // first, so that a token signed with a new key makes the verifier refetch the keys the
    // crate's check below uses.
    let identity = state
        .verifier
        .verify(&id_token.to_string())
        .await
        .map_err(|e| {
            info!(reason = %e, "refused a portal login token");
            ApiError::Unauthorized
        })?;
    oidc.check(&id_token, &pending).await.map_err(answer)?;
    let ttl = session_ttl(identity.remaining(SystemTime::now()));
    let session = state.portal.start_session(identity.clone(), ttl);
    state.metrics.portal_logins.inc();
    info!(caller = %identity.email, "portal login");
    let mut response = Redirect::to("/").into_response();
    let headers = response.headers_mut();
    for c in [
        set_cookie(SESSION_COOKIE, &session, ttl.as_secs()),
        set_cookie(LOGIN_COOKIE, "", 0),
    ] {
        if let Ok(v) = c.parse() {
            headers.append(header::SET_COOKIE, v);
        }
    }
    Ok(response)
}

#[derive(Deserialize)]
pub struct LogoutForm {
    csrf: String,
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    b: Browser,
    Form(f): Form<LogoutForm>,
) -> Response {
    if f.csrf != b.csrf {
        return (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response();
    }
    if let Some(session) = state.portal.session(&headers) {
        state.portal.end_session(&session);
    }
    (
        [(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0))],
        Redirect::to("/"),
    )
        .into_response()
}
