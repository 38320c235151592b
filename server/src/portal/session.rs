//! What the portal keeps of a browser is kept by the browser: its session and its login in
//! progress, each in a cookie sealed with the server's session keys ([`super::seal`]; HttpOnly,
//! Secure, SameSite=Lax). Every replica holding the same keys reads them, and a restart ends no
//! session. The server itself holds only the logouts it served, until those sessions would
//! have expired, so that a logout ends the streams it serves for that session at once. `/login`
//! is open to anyone and makes the server hold nothing. No handlers here: they are in
//! [`super::pages`] and [`super::login`].

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::http::{HeaderMap, header};
use serde::{Deserialize, Serialize};

use super::{
    oidc::{Oidc, PendingLogin},
    seal::{Purpose, Sealer},
};
use crate::{auth::Identity, random};

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

/// Seconds since the Unix epoch: what sealed cookies count in, as any replica's clock reads it.
fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A session that is on: which one (a random id), who, the CSRF token of its forms, and until
/// when (seconds since the Unix epoch).
#[derive(Clone, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub identity: Identity,
    pub csrf: String,
    pub expires: u64,
}

impl Session {
    /// How long it still lasts from `now`.
    pub fn remaining(&self, now: SystemTime) -> Duration {
        Duration::from_secs(self.expires.saturating_sub(unix(now)))
    }
}

/// A login begun, as its cookie holds it: the state the issuer must send back, what the callback
/// needs, and until when.
#[derive(Serialize, Deserialize)]
struct BegunLogin {
    state: String,
    login: PendingLogin,
    expires: u64,
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
    sealer: Sealer,
    /// The sessions logged out here, with their expiry.
    logged_out: Mutex<HashMap<String, u64>>,
    /// The issuer, for the login.
    pub oidc: Oidc,
}

impl Portal {
    /// `sealer` seals the portal's cookies; a user has `login_ttl` to finish a login.
    pub fn new(oidc: Oidc, sealer: Sealer, login_ttl: Duration) -> Portal {
        Portal {
            login_ttl,
            sealer,
            logged_out: Mutex::new(HashMap::new()),
            oidc,
        }
    }

    /// How long a user has to finish a login at the issuer.
    pub fn login_ttl(&self) -> Duration {
        self.login_ttl
    }

    // A panic while the lock was held cannot leave the map half-changed (no code under the lock
    // panics), so a poisoned lock is used as it is rather than taking the portal down.
    fn lock_logged_out(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.logged_out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The login cookie's value for a login begun with `state`: sealed, until the login's time
    /// is up.
    pub fn login_cookie(&self, state: &str, login: PendingLogin) -> String {
        let begun = BegunLogin {
            state: state.to_owned(),
            login,
            expires: unix(SystemTime::now()) + self.login_ttl.as_secs(),
        };
        self.sealer.seal(Purpose::Login, &begun)
    }

    /// The login this browser began, if the issuer sent back its `state` in time. Anything
    /// else (no cookie, another browser's state, a cookie that does not open) is no login.
    pub fn login(&self, headers: &HeaderMap, state: &str) -> Option<PendingLogin> {
        let begun: BegunLogin = self
            .sealer
            .open(Purpose::Login, &cookie(headers, LOGIN_COOKIE)?)?;
        (begun.state == state && begun.expires > unix(SystemTime::now())).then_some(begun.login)
    }

    /// A new session of `identity` for `ttl`: the session cookie's value.
    pub fn start_session(&self, identity: Identity, ttl: Duration) -> String {
        let session = Session {
            id: random::token(),
            identity,
            csrf: random::token(),
            expires: unix(SystemTime::now()) + ttl.as_secs(),
        };
        self.sealer.seal(Purpose::Session, &session)
    }

    /// Ends `session` (logout): the browser's cookie is cleared by the caller, and the streams
    /// this server serves for it end. Sessions logged out earlier that have expired since are
    /// forgotten.
    pub fn end_session(&self, session: &Session) {
        let now = unix(SystemTime::now());
        let mut logged_out = self.lock_logged_out();
        logged_out.retain(|_, expires| *expires > now);
        logged_out.insert(session.id.clone(), session.expires);
    }

    /// The browser's session, if it is on: sealed with one of the keys, not expired, and not
    /// logged out here. Checked on every request, so a session ends the moment it expires (at
    /// the latest with its token: [`session_ttl`]).
    pub fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let session: Session = self
            .sealer
            .open(Purpose::Session, &cookie(headers, SESSION_COOKIE)?)?;
        (session.expires > unix(SystemTime::now()) && self.session_alive(&session.id))
            .then_some(session)
    }

    /// The logged-in browser's identity and CSRF token, if its session is on.
    pub fn browser(&self, headers: &HeaderMap) -> Option<Browser> {
        self.session(headers).map(|s| Browser {
            identity: s.identity,
            csrf: s.csrf,
        })
    }

    /// Was session `id` not logged out here? (Its expiry is the stream's own deadline.)
    pub fn session_alive(&self, id: &str) -> bool {
        !self.lock_logged_out().contains_key(id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::http::HeaderValue;

    use super::*;
    use crate::auth::Verifier;

    /// A portal whose cookies `key` seals, as a replica of a server with that key file.
    fn replica(key: u8, login_ttl: Duration) -> Portal {
        let verifier = Arc::new(Verifier::new(
            "http://127.0.0.1:9",
            "kubespaces",
            None,
            Duration::from_secs(30),
            Duration::from_secs(30),
        ));
        let oidc = Oidc::new(
            verifier,
            "kubespaces",
            &["openid".to_owned()],
            "http://127.0.0.1:8080/auth/callback".to_owned(),
        );
        Portal::new(oidc, Sealer::from_keys(&[[key; 32]]), login_ttl)
    }

    fn sending(name: &str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let cookie = format!("other=1; {name}={value}");
        headers.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
        headers
    }

    fn alice() -> Identity {
        Identity {
            email: "alice@example.com".into(),
            groups: vec!["kubespaces-admins".into()],
            admin: true,
            valid_until: unix(SystemTime::now()) + 3600,
        }
    }

    #[test]
    fn a_session_is_served_by_every_replica_with_the_same_keys_until_it_ends() {
        let (a, b) = (replica(1, LOGIN), replica(1, LOGIN));
        let cookie = a.start_session(alice(), Duration::from_secs(3600));
        let headers = sending(SESSION_COOKIE, &cookie);
        let on_b = b
            .session(&headers)
            .expect("the other replica serves the session");
        assert_eq!(on_b.identity, alice());
        assert_eq!(a.browser(&headers).map(|s| s.csrf), Some(on_b.csrf.clone()));
        // Another server's keys, another cookie's name, an expired session: no session.
        assert!(replica(2, LOGIN).session(&headers).is_none());
        assert!(a.session(&sending(LOGIN_COOKIE, &cookie)).is_none());
        let expired = a.start_session(alice(), Duration::ZERO);
        assert!(b.session(&sending(SESSION_COOKIE, &expired)).is_none());
        // A logout ends the session where it was served, and its streams there.
        a.end_session(&on_b);
        assert!(a.session(&headers).is_none());
        assert!(!a.session_alive(&on_b.id));
        assert!(
            a.session(&sending(SESSION_COOKIE, &a.start_session(alice(), HOUR)))
                .is_some()
        );
    }

    #[test]
    fn a_login_finishes_on_any_replica_with_its_own_state_in_time() {
        let (a, b) = (replica(1, LOGIN), replica(1, LOGIN));
        let cookie = a.login_cookie("state-1", PendingLogin::made_up());
        let headers = sending(LOGIN_COOKIE, &cookie);
        assert!(b.login(&headers, "state-1").is_some());
        // Another login's state (login CSRF), another server's keys, a session's cookie: none.
        assert!(b.login(&headers, "state-2").is_none());
        assert!(replica(2, LOGIN).login(&headers, "state-1").is_none());
        let session = a.start_session(alice(), HOUR);
        assert!(
            b.login(&sending(LOGIN_COOKIE, &session), "state-1")
                .is_none()
        );
        // Past the time a user has to finish it.
        let late = replica(1, Duration::ZERO);
        let cookie = late.login_cookie("state-1", PendingLogin::made_up());
        assert!(
            b.login(&sending(LOGIN_COOKIE, &cookie), "state-1")
                .is_none()
        );
    }

    const LOGIN: Duration = Duration::from_secs(300);
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_session_ends_with_its_token_or_after_8_hours() {
        let ten_minutes = Duration::from_secs(600);
        assert_eq!(session_ttl(ten_minutes), ten_minutes);
        assert_eq!(session_ttl(Duration::from_secs(24 * 3600)), SESSION_TTL);
        assert_eq!(session_ttl(Duration::ZERO), Duration::ZERO);
    }
}
