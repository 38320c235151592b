//! What the portal keeps: the sessions (the browser holds only their random id, in an HttpOnly,
//! Secure, SameSite=Lax cookie) and the logins begun and not yet finished (bounded:
//! [`crate::pending`]). In memory: one replica, and a restart logs everyone out. No handlers
//! here: they are in [`super::pages`] and [`super::login`].

use std::{
    collections::HashMap,
    num::NonZeroUsize,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use axum::http::{HeaderMap, header};
use tracing::debug;

use super::oidc::{Oidc, PendingLogin};
use crate::{auth::Identity, metrics::Metrics, pending::Pending, random};

pub const SESSION_COOKIE: &str = "ks_session";
pub const LOGIN_COOKIE: &str = "ks_login";

/// How long a portal session lasts at most; it ends with its ID token if that ends first
/// ([`session_ttl`]).
const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// A session lasts 8 hours or until its ID token expires, whichever comes first: the user's
/// groups (admin rights, the right to create) are known only from that token, so past its
/// expiry the server no longer knows them. The issuer's own login session usually makes the
/// next login a pair of redirects.
pub fn session_ttl(token_remaining: Duration) -> Duration {
    SESSION_TTL.min(token_remaining)
}

/// A session that is on: who, the CSRF token of its forms, and until when.
#[derive(Clone)]
pub struct Session {
    pub identity: Identity,
    pub csrf: String,
    pub expires: Instant,
}

/// The logged-in browser: its identity and CSRF token.
pub struct Browser {
    pub identity: Identity,
    pub csrf: String,
}

/// The value of cookie `name` in a request's headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// A `Set-Cookie` value: HttpOnly, Secure, SameSite=Lax, for the whole site.
pub fn set_cookie(name: &str, value: &str, max_age: u64) -> String {
    format!("{name}={value}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age={max_age}")
}

pub struct Portal {
    login_ttl: Duration,
    sessions: Mutex<HashMap<String, Session>>,
    logins: Mutex<Pending<PendingLogin>>,
    metrics: Arc<Metrics>,
    /// The issuer, for the login.
    pub oidc: Oidc,
}

impl Portal {
    /// `max_pending_logins` and `login_ttl` bound what unauthenticated `/login` requests can
    /// make the server keep.
    pub fn new(
        oidc: Oidc,
        max_pending_logins: NonZeroUsize,
        login_ttl: Duration,
        metrics: Arc<Metrics>,
    ) -> Portal {
        Portal {
            login_ttl,
            sessions: Mutex::new(HashMap::new()),
            logins: Mutex::new(Pending::new(max_pending_logins, login_ttl)),
            metrics,
            oidc,
        }
    }

    /// How long a user has to finish a login at the issuer.
    pub fn login_ttl(&self) -> Duration {
        self.login_ttl
    }

    // A panic while a lock was held cannot leave these maps half-changed (no code under the
    // locks panics), so a poisoned lock is used as it is rather than taking the portal down.
    fn lock_sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_logins(&self) -> MutexGuard<'_, Pending<PendingLogin>> {
        self.logins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops expired pending logins, so the metrics read now are current.
    pub fn expire_logins(&self) {
        let mut logins = self.lock_logins();
        let expired = logins.expire(Instant::now());
        self.metrics.pending_logins_expired.inc_by(expired as u64);
        self.metrics.pending_logins.set(logins.len() as i64);
    }

    /// Keeps a login until its callback, within the bound; the metrics follow.
    pub fn remember_login(&self, state: String, login: PendingLogin) {
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
    pub fn take_login(&self, state: &str) -> Option<PendingLogin> {
        let now = Instant::now();
        let mut logins = self.lock_logins();
        let expired = logins.expire(now);
        let login = logins.take(state, now);
        self.metrics.pending_logins_expired.inc_by(expired as u64);
        self.metrics.pending_logins.set(logins.len() as i64);
        login
    }

    /// Starts a session of `identity` for `ttl`, dropping the expired ones; its id.
    pub fn start_session(&self, identity: Identity, ttl: Duration) -> String {
        let id = random::token();
        let mut sessions = self.lock_sessions();
        sessions.retain(|_, s| s.expires > Instant::now());
        sessions.insert(
            id.clone(),
            Session {
                identity,
                csrf: random::token(),
                expires: Instant::now() + ttl,
            },
        );
        id
    }

    /// Ends session `id` (logout).
    pub fn end_session(&self, id: &str) {
        self.lock_sessions().remove(id);
    }

    /// The logged-in browser's identity and CSRF token, if its session is still on: checked on
    /// every request, so a session ends the moment it expires (at the latest with its token:
    /// [`session_ttl`]).
    pub fn browser(&self, headers: &HeaderMap) -> Option<Browser> {
        let id = cookie(headers, SESSION_COOKIE)?;
        self.live_session(&id).map(|s| Browser {
            identity: s.identity,
            csrf: s.csrf,
        })
    }

    /// Session `id`, if it is still on; an expired one is dropped.
    pub fn live_session(&self, id: &str) -> Option<Session> {
        let mut sessions = self.lock_sessions();
        match sessions.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    /// Is the session still on (not expired, not logged out)?
    pub fn session_alive(&self, id: &str) -> bool {
        self.live_session(id).is_some()
    }
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
