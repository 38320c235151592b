//! The portal's side of the OIDC authorization code flow with PKCE (S256), state and nonce:
//! the authorization URL a login begins with, and the code exchange its callback ends with. The
//! redirect URI is the configured public URL's, never one built from the request.

use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::random;

/// Why a login could not begin or finish.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The issuer could not be asked (its discovery document, its token endpoint).
    #[error("the OIDC issuer is not reachable: {0}")]
    Unreachable(String),
    #[error("the issuer's authorization endpoint is invalid: {0}")]
    AuthorizationEndpoint(String),
    /// The issuer refused the code (or answered with something else than tokens).
    #[error("the code exchange failed: {0}")]
    Exchange(String),
    /// The ID token is not the one this login asked for (replay).
    #[error("the ID token's nonce is not this login's")]
    Nonce,
}

/// What the callback needs of the login it completes. The redirect URI is not kept: it is the
/// same for every login.
pub struct PendingLogin {
    verifier: String,
    nonce: String,
}

/// A login begun: where to send the browser, and what to keep until it comes back.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub login: PendingLogin,
}

#[derive(Deserialize, Clone)]
struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

#[derive(Deserialize)]
struct TokenResponse {
    id_token: String,
}

/// The issuer as the portal's login client sees it.
pub struct Oidc {
    issuer: String,
    client_id: String,
    scopes: String,
    redirect_uri: String,
    endpoints: tokio::sync::OnceCell<Endpoints>,
    http: reqwest::Client,
}

impl Oidc {
    pub fn new(issuer: &str, client_id: &str, scopes: &[String], redirect_uri: String) -> Oidc {
        Oidc {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            scopes: scopes.join(" "),
            redirect_uri,
            endpoints: tokio::sync::OnceCell::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
        }
    }

    async fn endpoints(&self) -> Result<Endpoints, OidcError> {
        self.endpoints
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.issuer);
                let fail = |e: reqwest::Error| OidcError::Unreachable(e.to_string());
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

    /// A new login: its authorization URL, state, nonce and PKCE verifier.
    pub async fn begin(&self) -> Result<Authorization, OidcError> {
        let endpoints = self.endpoints().await?;
        let (state, verifier, nonce) = (random::token(), random::token(), random::token());
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        let mut url = reqwest::Url::parse(&endpoints.authorization_endpoint)
            .map_err(|e| OidcError::AuthorizationEndpoint(e.to_string()))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("scope", &self.scopes)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        Ok(Authorization {
            url: url.into(),
            state,
            login: PendingLogin { verifier, nonce },
        })
    }

    /// Exchanges the callback's `code` of `login` for its ID token.
    pub async fn finish(&self, code: &str, login: &PendingLogin) -> Result<String, OidcError> {
        let endpoints = self.endpoints().await?;
        let response = self
            .http
            .post(&endpoints.token_endpoint)
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &self.redirect_uri),
                ("client_id", &self.client_id),
                ("code_verifier", &login.verifier),
            ])
            .send()
            .await
            .map_err(|e| OidcError::Unreachable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(OidcError::Exchange(format!("status {}", response.status())));
        }
        let tokens: TokenResponse = response
            .json()
            .await
            .map_err(|e| OidcError::Exchange(e.to_string()))?;
        Ok(tokens.id_token)
    }

    /// The ID token's nonce must be the one of `login`: it ties the token to this login
    /// (replay). The token itself is validated by [`crate::auth::Verifier`].
    pub fn check_nonce(&self, id_token: &str, login: &PendingLogin) -> Result<(), OidcError> {
        // The nonce ties the ID token to this login (replay).
        let nonce = id_token
            .split('.')
            .nth(1)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()
            })
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|c| c.get("nonce").and_then(|n| n.as_str()).map(str::to_owned));
        if nonce.as_deref() != Some(login.nonce.as_str()) {
            return Err(OidcError::Nonce);
        }
        Ok(())
    }
}
