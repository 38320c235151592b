//! OIDC ID token validation: the issuer's discovery document names its JWKS; a token is
//! accepted only when its signature verifies with a key from that set under an allowed
//! asymmetric algorithm, and its `iss`, `aud`, `azp`, `exp` and `nbf` hold. The caller is the
//! token's `email`, which must be verified (`email_verified: true`): it becomes the owner of
//! what the caller creates, so an unverified address would let anyone claim anyone's tenants.
//!
//! Key rotation: a token signed with a key id the cached JWKS lacks triggers one refetch, at most
//! once per `min_refresh`, so forged key ids cannot make the server hammer the issuer.
//!
//! The discovery document and the JWKS are fetched here only, and kept as the issuer published
//! them too ([`Verifier::discovery`], [`Verifier::published_keys`]): the portal's login client
//! ([`crate::portal::oidc`]) reads its endpoints and keys from them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    jwk::{AlgorithmParameters, Jwk, JwkSet},
};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, RwLock};
use tracing::{debug, info, warn};

use crate::issuer_roots::IssuerRoots;

/// Asymmetric algorithms only: an HMAC algorithm would let anyone holding the issuer's public
/// key sign tokens, and `none` is not an algorithm.
pub const ALLOWED_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// Why a token was refused. Logged at debug level; the caller only ever learns "unauthorized".
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("malformed token header: {0}")]
    Header(jsonwebtoken::errors::Error),
    #[error("algorithm {0:?} is not allowed")]
    Algorithm(Algorithm),
    #[error("no key with id {0:?} in the issuer's JWKS")]
    UnknownKey(String),
    #[error("the key {0:?} does not fit algorithm {1:?}")]
    KeyMismatch(String, Algorithm),
    #[error("token rejected: {0}")]
    Invalid(jsonwebtoken::errors::Error),
    #[error("the token has {0} audiences and no azp claim")]
    AzpMissing(usize),
    #[error("the token was issued to client {0:?} (azp), not this one")]
    AzpMismatch(String),
    #[error("the token has no email claim")]
    NoEmail,
    #[error("the token's email is not verified")]
    UnverifiedEmail,
    #[error("the issuer's keys could not be fetched: {0}")]
    Jwks(String),
}

/// OIDC Core §3.1.3.7 (4, 5): a token for several audiences must name the party it was issued
/// to (`azp`), and that must be this client; a token that names one must name this client
/// whatever its audiences. Without this, a token issued to another client that merely lists
/// this one among its audiences (cross-client trust) would log its bearer in here.
pub fn check_azp(
    audiences: &[String],
    azp: Option<&str>,
    client_id: &str,
) -> Result<(), AuthError> {
    match azp {
        Some(azp) if azp == client_id => Ok(()),
        Some(other) => Err(AuthError::AzpMismatch(other.to_owned())),
        None if audiences.len() > 1 => Err(AuthError::AzpMissing(audiences.len())),
        None => Ok(()),
    }
}

/// Who is calling. Kept in the portal's sealed session cookie, hence serializable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Verified email: the owner of the tenants this caller creates.
    pub email: String,
    pub groups: Vec<String>,
    /// Member of the configured admin group: sees and manages every tenant.
    pub admin: bool,
    /// When the server stops accepting the token this identity came from (the second after its
    /// `exp` plus the leeway: the verifier accepts a token through that whole second), in
    /// seconds since the Unix epoch. Groups, and so admin rights and the right to
    /// create, are known only from the token: past this the server knows nothing about the
    /// caller, so streams end and portal sessions with them.
    pub valid_until: u64,
}

impl Identity {
    /// May this caller see and act on a tenant owned by `owner`?
    pub fn may_access(&self, owner: &str) -> bool {
        self.admin || self.email == owner
    }

    /// How long from `now` the token stays valid (zero once it is not).
    pub fn remaining(&self, now: SystemTime) -> Duration {
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Duration::from_secs(self.valid_until.saturating_sub(now))
    }
}

/// `aud` is one string or an array of them (RFC 7519 §4.1.3).
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn into_vec(self) -> Vec<String> {
        match self {
            Audience::One(one) => vec![one],
            Audience::Many(all) => all,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    /// Required and checked by the validation; kept for [`Identity::valid_until`].
    #[serde(default)]
    exp: u64,
    aud: Option<Audience>,
    azp: Option<String>,
    email: Option<String>,
    email_verified: Option<bool>,
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

struct Keys {
    /// The discovery document as the issuer published it, once fetched.
    discovery: Option<serde_json::Value>,
    jwks_uri: Option<String>,
    set: JwkSet,
    /// The same keys as the issuer published them.
    published: serde_json::Value,
}

pub struct Verifier {
    issuer: String,
    audience: String,
    admin_group: Option<String>,
    leeway: u64,
    min_refresh: Duration,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    /// When the JWKS was last fetched (or tried): the rate limit of refetches.
    last_fetch: Mutex<Option<Instant>>,
    /// The roots `http` trusts beyond the built-in ones, for the portal's client too.
    roots: IssuerRoots,
}

impl Verifier {
    pub fn new(
        issuer: &str,
        audience: &str,
        admin_group: Option<String>,
        leeway: Duration,
        min_refresh: Duration,
    ) -> Self {
        let http = Self::client_with(&IssuerRoots::default())
            .build()
            .unwrap_or_default();
        Verifier {
            issuer: issuer.trim_end_matches('/').to_owned(),
            audience: audience.to_owned(),
            admin_group,
            leeway: leeway.as_secs(),
            min_refresh,
            http,
            keys: RwLock::new(Keys {
                discovery: None,
                jwks_uri: None,
                set: JwkSet { keys: vec![] },
                published: serde_json::json!({ "keys": [] }),
            }),
            last_fetch: Mutex::new(None),
            roots: IssuerRoots::default(),
        }
    }

    /// The same verifier, trusting `roots` for the issuer too (`--oidc-ca-file`).
    pub fn trusting(mut self, roots: IssuerRoots) -> Result<Self, reqwest::Error> {
        self.http = Self::client_with(&roots).build()?;
        self.roots = roots;
        Ok(self)
    }

    /// A client for requests to the issuer: its roots, 10 s per request.
    pub fn issuer_client(&self) -> reqwest::ClientBuilder {
        Self::client_with(&self.roots)
    }

    fn client_with(roots: &IssuerRoots) -> reqwest::ClientBuilder {
        roots.apply(reqwest::Client::builder().timeout(Duration::from_secs(10)))
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Clock skew tolerated on `exp` and `nbf` (`--oidc-leeway-secs`).
    pub fn leeway(&self) -> Duration {
        Duration::from_secs(self.leeway)
    }

    /// The issuer's discovery document, fetched (with the JWKS) if it is not yet.
    pub async fn discovery(&self) -> Result<serde_json::Value, AuthError> {
        if let Some(discovery) = self.keys.read().await.discovery.clone() {
            return Ok(discovery);
        }
        self.refresh().await?;
        self.keys
            .read()
            .await
            .discovery
            .clone()
            .ok_or_else(|| AuthError::Jwks("no discovery document".into()))
    }

    /// The issuer's keys as it published them, as last fetched.
    pub async fn published_keys(&self) -> serde_json::Value {
        self.keys.read().await.published.clone()
    }

    /// Fetches the discovery document (once) and the JWKS. Called at start-up and when a token
    /// names an unknown key id (rate limited by the caller).
    pub async fn refresh(&self) -> Result<(), AuthError> {
        let known = self.keys.read().await.jwks_uri.clone();
        let (jwks_uri, discovery) = match known {
            Some(uri) => (uri, None),
            None => {
                let url = format!("{}/.well-known/openid-configuration", self.issuer);
                let document: serde_json::Value = self.get_json(&url).await?;
                let discovery: Discovery = serde_json::from_value(document.clone())
                    .map_err(|e| AuthError::Jwks(format!("GET {url}: {e}")))?;
                if discovery.issuer.trim_end_matches('/') != self.issuer {
                    return Err(AuthError::Jwks(format!(
                        "{url} names issuer {:?}, not the configured {:?} (--oidc-issuer must be \
                         the issuer exactly as the provider publishes it)",
                        discovery.issuer, self.issuer
                    )));
                }
                (discovery.jwks_uri, Some(document))
            }
        };
        let published: serde_json::Value = self.get_json(&jwks_uri).await?;
        let set: JwkSet = serde_json::from_value(published.clone())
            .map_err(|e| AuthError::Jwks(format!("GET {jwks_uri}: {e}")))?;
        info!(keys = set.keys.len(), %jwks_uri, "fetched the issuer's JWKS");
        let mut keys = self.keys.write().await;
        keys.jwks_uri = Some(jwks_uri);
        if discovery.is_some() {
            keys.discovery = discovery;
        }
        keys.set = set;
        keys.published = published;
        Ok(())
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, AuthError> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| AuthError::Jwks(format!("GET {url}: {e}")))?;
        response
            .json()
            .await
            .map_err(|e| AuthError::Jwks(format!("GET {url}: {e}")))
    }

    /// The key for `kid`, refetching the JWKS once (rate limited) when it is unknown.
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, AuthError> {
        if let Some(jwk) = self.cached_key(kid).await {
            return Ok(jwk);
        }
        {
            let mut last = self.last_fetch.lock().await;
            // Another request may have refetched while this one waited for the lock.
            if let Some(jwk) = self.cached_key(kid).await {
                return Ok(jwk);
            }
            if last.is_none_or(|t| t.elapsed() >= self.min_refresh) {
                *last = Some(Instant::now());
                if let Err(e) = self.refresh().await {
                    warn!(error = %e, "JWKS refresh failed");
                    return Err(e);
                }
            }
        }
        self.cached_key(kid)
            .await
            .ok_or_else(|| AuthError::UnknownKey(kid.unwrap_or_default().to_owned()))
    }

    async fn cached_key(&self, kid: Option<&str>) -> Option<Jwk> {
        let keys = self.keys.read().await;
        match kid {
            Some(kid) => keys.set.find(kid).cloned(),
            // Without a key id only an unambiguous set will do.
            None if keys.set.keys.len() == 1 => keys.set.keys.first().cloned(),
            None => None,
        }
    }

    /// Validates an ID token and returns the caller.
    pub async fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(AuthError::Header)?;
        if !ALLOWED_ALGORITHMS.contains(&header.alg) {
            return Err(AuthError::Algorithm(header.alg));
        }
        let jwk = self.key(header.kid.as_deref()).await?;
        let fits = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => matches!(
                header.alg,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
            AlgorithmParameters::EllipticCurve(_) => {
                matches!(header.alg, Algorithm::ES256 | Algorithm::ES384)
            }
            _ => false,
        };
        if !fits {
            return Err(AuthError::KeyMismatch(
                jwk.common.key_id.clone().unwrap_or_default(),
                header.alg,
            ));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(AuthError::Invalid)?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = self.leeway;
        let data =
            jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(AuthError::Invalid)?;
        let claims = data.claims;
        let audiences = claims.aud.map(Audience::into_vec).unwrap_or_default();
        check_azp(&audiences, claims.azp.as_deref(), &self.audience)?;
        let email = claims
            .email
            .filter(|e| !e.is_empty())
            .ok_or(AuthError::NoEmail)?;
        if claims.email_verified != Some(true) {
            return Err(AuthError::UnverifiedEmail);
        }
        let admin = self
            .admin_group
            .as_ref()
            .is_some_and(|g| claims.groups.iter().any(|c| c == g));
        debug!(%email, admin, "token accepted");
        Ok(Identity {
            email,
            groups: claims.groups,
            admin,
            valid_until: claims.exp.saturating_add(self.leeway).saturating_add(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azp_must_name_this_client_when_present_or_when_there_are_several_audiences() {
        let me = "kubespaces";
        let one = ["kubespaces".to_owned()];
        let two = ["kubespaces".to_owned(), "other-app".to_owned()];
        // One audience (already checked to be this client): azp optional, but if present, ours.
        assert!(check_azp(&one, None, me).is_ok());
        assert!(check_azp(&one, Some(me), me).is_ok());
        assert!(matches!(
            check_azp(&one, Some("other-app"), me),
            Err(AuthError::AzpMismatch(c)) if c == "other-app"
        ));
        // Several audiences: azp required, and ours.
        assert!(matches!(
            check_azp(&two, None, me),
            Err(AuthError::AzpMissing(2))
        ));
        assert!(check_azp(&two, Some(me), me).is_ok());
        assert!(matches!(
            check_azp(&two, Some("other-app"), me),
            Err(AuthError::AzpMismatch(_))
        ));
        // Exact comparison: no prefixes, no case folding.
        assert!(check_azp(&two, Some("kubespaces-evil"), me).is_err());
        assert!(check_azp(&two, Some("KubeSpaces"), me).is_err());
    }

    #[test]
    fn the_time_left_counts_down_to_zero() {
        let identity = Identity {
            email: "alice@example.com".into(),
            groups: vec![],
            admin: false,
            valid_until: 1_000,
        };
        let at = |secs| UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(identity.remaining(at(400)), Duration::from_secs(600));
        assert_eq!(identity.remaining(at(1_000)), Duration::ZERO);
        assert_eq!(identity.remaining(at(5_000)), Duration::ZERO);
    }

    #[test]
    fn aud_is_read_as_one_string_or_an_array() {
        let one: Claims = serde_json::from_str(r#"{"aud":"kubespaces"}"#).unwrap();
        assert_eq!(
            one.aud.map(Audience::into_vec),
            Some(vec!["kubespaces".into()])
        );
        let many: Claims =
            serde_json::from_str(r#"{"aud":["kubespaces","other-app"],"azp":"kubespaces"}"#)
                .unwrap();
        assert_eq!(many.aud.map(|a| a.into_vec().len()), Some(2));
        assert_eq!(many.azp.as_deref(), Some("kubespaces"));
    }
}
