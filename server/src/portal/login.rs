//! The portal's login: the OIDC authorization code flow with PKCE (S256), state and nonce, and
//! logout. `/login` is open to anyone, so what it keeps is bounded ([`crate::pending`]); the
//! redirect URI is the configured public URL's, never one built from the request.

use std::time::{Duration, Instant};

use axum::{
    Form,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

use super::{Browser, LOGIN_COOKIE, Portal, SESSION_COOKIE, Session, cookie, set_cookie};
use crate::{error::ApiError, routes::AppState};

/// How long a portal session lasts at most; it ends with its ID token if that ends first
/// ([`session_ttl`]).
const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// A session lasts 8 hours or until its ID token expires, whichever comes first: the user's
/// groups (admin rights, the right to create) are known only from that token, so past its
/// expiry the server no longer knows them. The issuer's own login session usually makes the
/// next login a pair of redirects.
pub(super) fn session_ttl(token_remaining: Duration) -> Duration {
    SESSION_TTL.min(token_remaining)
}

/// What the callback needs of the login it completes. The redirect URI is not kept: it is the
/// same for every login.
pub(super) struct PendingLogin {
    verifier: String,
    nonce: String,
}

#[derive(Deserialize, Clone)]
pub(super) struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

/// 256 random bits, URL-safe: session ids, state, nonce, PKCE verifier, CSRF tokens.
pub(super) fn random() -> String {
    let mut bytes = [0u8; 32];
    // The OS random source; without one no secure session can be made, so fail loudly.
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("no OS random numbers for session ids: {e}");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Portal {
    async fn endpoints(&self, issuer: &str) -> Result<Endpoints, ApiError> {
        self.endpoints
            .get_or_try_init(|| async {
                let url = format!("{issuer}/.well-known/openid-configuration");
                let fail = |e: reqwest::Error| {
                    ApiError::Unavailable(format!("the OIDC issuer is not reachable: {e}"))
                };
                self.http
                    .get(&url)
                    .send()
                    .await
                    .map_err(fail)?
                    .json()
                    .await
                    .map_err(fail)
            })
            .await
            .cloned()
    }

    /// Keeps a login until its callback, within the bound; the metrics follow.
    fn remember_login(&self, state: String, login: PendingLogin) {
        let mut logins = self.lock_logins();
        let dropped = logins.insert(state, login, Instant::now());
        if dropped.evicted > 0 {
            debug!(
                evicted = dropped.evicted,
                "pending logins at their bound: evicted the oldest"
            );
        }
        self.metrics
            .pending_logins_evicted
            .inc_by(dropped.evicted as u64);
        self.metrics
            .pending_logins_expired
            .inc_by(dropped.expired as u64);
        self.metrics.pending_logins.set(logins.len() as i64);
    }

    /// The login `state` names, once, if it is still pending.
    fn take_login(&self, state: &str) -> Option<PendingLogin> {
        let now = Instant::now();
        let mut logins = self.lock_logins();
        let expired = logins.expire(now);
        let login = logins.take(state, now);
        self.metrics.pending_logins_expired.inc_by(expired as u64);
        self.metrics.pending_logins.set(logins.len() as i64);
        login
    }
}

pub(super) async fn login(State(state): State<AppState>) -> Result<Response, ApiError> {
    let portal = &state.portal;
    let endpoints = portal.endpoints(state.verifier.issuer()).await?;
    let (login_state, verifier, nonce) = (random(), random(), random());
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let redirect = portal.public_url.redirect_uri();
    let mut url = reqwest::Url::parse(&endpoints.authorization_endpoint).map_err(|e| {
        ApiError::Unavailable(format!(
            "the issuer's authorization endpoint is invalid: {e}"
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &state.config.oidc_client_id)
        .append_pair("redirect_uri", &redirect)
        .append_pair("scope", &state.config.oidc_scopes.join(" "))
        .append_pair("state", &login_state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    portal.remember_login(login_state.clone(), PendingLogin { verifier, nonce });
    Ok((
        [(
            header::SET_COOKIE,
            set_cookie(LOGIN_COOKIE, &login_state, portal.login_ttl.as_secs()),
        )],
        Redirect::to(url.as_str()),
    )
        .into_response())
}

#[derive(Deserialize)]
pub(super) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    id_token: String,
}

pub(super) async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Result<Response, ApiError> {
    let refused = || ApiError::Forbidden("the login could not be completed; log in again".into());
    if let Some(error) = q.error {
        warn!(%error, "the issuer refused the login");
        return Err(refused());
    }
    let (Some(code), Some(login_state)) = (q.code, q.state) else {
        return Err(refused());
    };
    // The state must be the one this browser was given (login CSRF).
    if cookie(&headers, LOGIN_COOKIE).as_deref() != Some(login_state.as_str()) {
        return Err(refused());
    }
    // Unknown, expired, evicted by newer logins, or already used: all the same refusal.
    let pending = state.portal.take_login(&login_state).ok_or_else(refused)?;
    let endpoints = state.portal.endpoints(state.verifier.issuer()).await?;
    let response = state
        .portal
        .http
        .post(&endpoints.token_endpoint)
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &state.portal.public_url.redirect_uri()),
            ("client_id", &state.config.oidc_client_id),
            ("code_verifier", &pending.verifier),
        ])
        .send()
        .await
        .map_err(|e| ApiError::Unavailable(format!("the OIDC issuer is not reachable: {e}")))?;
    if !response.status().is_success() {
        warn!(status = %response.status(), "the code exchange failed");
        return Err(refused());
    }
    let tokens: TokenResponse = response.json().await.map_err(|_| refused())?;
    let identity = state.verifier.verify(&tokens.id_token).await.map_err(|e| {
        info!(reason = %e, "refused a portal login token");
        ApiError::Unauthorized
    })?;
    // The nonce ties the ID token to this login (replay).
    let nonce = tokens
        .id_token
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|c| c.get("nonce").and_then(|n| n.as_str()).map(str::to_owned));
    if nonce.as_deref() != Some(pending.nonce.as_str()) {
        return Err(refused());
    }
    let session = random();
    let ttl = session_ttl(identity.remaining(std::time::SystemTime::now()));
    {
        let mut sessions = state.portal.lock_sessions();
        sessions.retain(|_, s| s.expires > Instant::now());
        sessions.insert(
            session.clone(),
            Session {
                identity: identity.clone(),
                csrf: random(),
                expires: Instant::now() + ttl,
            },
        );
    }
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
pub(super) struct LogoutForm {
    csrf: String,
}

pub(super) async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    b: Browser,
    Form(f): Form<LogoutForm>,
) -> Response {
    if f.csrf != b.csrf {
        return (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response();
    }
    if let Some(id) = cookie(&headers, SESSION_COOKIE) {
        state.portal.lock_sessions().remove(&id);
    }
    (
        [(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0))],
        Redirect::to("/"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ends_with_its_token_or_after_8_hours() {
        let ten_minutes = Duration::from_secs(600);
        assert_eq!(session_ttl(ten_minutes), ten_minutes);
        assert_eq!(session_ttl(Duration::from_secs(24 * 3600)), SESSION_TTL);
        assert_eq!(session_ttl(Duration::ZERO), Duration::ZERO);
    }
}
