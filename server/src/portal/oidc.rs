//! The portal's side of the OIDC authorization code flow with PKCE (S256), state and nonce, on
//! the `openidconnect` crate: the authorization URL a login begins with, the code exchange its
//! callback ends with, and the check that the ID token is the one this login asked for. The
//! issuer's discovery document and keys are the ones [`Verifier`] fetched (the document once,
//! the keys again on key rotation), so the server asks the issuer for each only once; the
//! redirect URI is the configured public URL's, never one built from the request.

use std::sync::Arc;

use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, CsrfToken, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, RequestTokenError, Scope, TokenResponse as _,
    core::{
        CoreAuthenticationFlow, CoreClient, CoreIdToken, CoreIdTokenVerifier, CoreJsonWebKeySet,
        CoreJwsSigningAlgorithm, CoreProviderMetadata,
    },
};

use serde::{Deserialize, Serialize};

use crate::{auth::Verifier, random};

/// The algorithms [`crate::auth::ALLOWED_ALGORITHMS`] allows, as the crate names them:
/// asymmetric only.
const ALLOWED_ALGORITHMS: [CoreJwsSigningAlgorithm; 8] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
];

/// Why a login could not begin or finish.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The issuer could not be asked (its discovery document, its keys, its token endpoint).
    #[error("the OIDC issuer is not reachable: {0}")]
    Unreachable(String),
    /// The discovery document is not one a login can use (an endpoint that is not a URL, ...).
    #[error("the issuer's discovery document cannot be used for a login: {0}")]
    Discovery(String),
    /// The issuer refused the code, or answered with something else than an ID token.
    #[error("the code exchange failed: {0}")]
    Exchange(String),
    /// The ID token failed the crate's check (signature, iss, aud, exp).
    #[error("the ID token was refused: {0}")]
    Token(String),
    /// The ID token is not the one this login asked for (replay).
    #[error("the ID token's nonce is not this login's")]
    Nonce,
}

/// What the callback needs of the login it completes: the PKCE verifier and the nonce, kept in
/// the browser's sealed login cookie ([`super::session`]). The redirect URI is not kept: it is
/// the same for every login.
#[derive(Serialize, Deserialize)]
pub struct PendingLogin {
    verifier: String,
    nonce: String,
}

#[cfg(test)]
impl PendingLogin {
    /// A login as [`Oidc::begin`] makes them, without an issuer.
    pub fn made_up() -> PendingLogin {
        PendingLogin {
            verifier: random::token(),
            nonce: random::token(),
        }
    }
}

/// A login begun: where to send the browser, and what to keep until it comes back.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub login: PendingLogin,
}

/// The crate's client once discovered: authorization endpoint set, token endpoint maybe.
type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

struct Discovered {
    client: Client,
    issuer: IssuerUrl,
}

/// The issuer as the portal's login client sees it.
pub struct Oidc {
    verifier: Arc<Verifier>,
    client_id: ClientId,
    scopes: Vec<Scope>,
    redirect_uri: String,
    /// Built from the discovery document at the first login that finds it.
    discovered: tokio::sync::OnceCell<Discovered>,
    /// The portal's own client: no redirects followed (the crate's advice against SSRF), 10 s,
    /// the verifier's roots.
    http: reqwest::Client,
}

impl Oidc {
    pub fn new(
        verifier: Arc<Verifier>,
        client_id: &str,
        scopes: &[String],
        redirect_uri: String,
    ) -> Oidc {
        Oidc {
            client_id: ClientId::new(client_id.to_owned()),
            scopes: scopes.iter().cloned().map(Scope::new).collect(),
            redirect_uri,
            discovered: tokio::sync::OnceCell::new(),
            http: verifier
                .issuer_client()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            verifier,
        }
    }

    async fn discovered(&self) -> Result<&Discovered, OidcError> {
        self.discovered
            .get_or_try_init(|| async {
                let document = self
                    .verifier
                    .discovery()
                    .await
                    .map_err(|e| OidcError::Unreachable(e.to_string()))?;
                let metadata: CoreProviderMetadata = serde_json::from_value(document)
                    .map_err(|e| OidcError::Discovery(e.to_string()))?;
                let redirect = RedirectUrl::new(self.redirect_uri.clone())
                    .map_err(|e| OidcError::Discovery(format!("redirect URI: {e}")))?;
                let issuer = metadata.issuer().clone();
                let client =
                    CoreClient::from_provider_metadata(metadata, self.client_id.clone(), None)
                        .set_redirect_uri(redirect)
                        // The scopes are the configured ones, `openid` among them, as they are.
                        .disable_openid_scope();
                Ok(Discovered { client, issuer })
            })
            .await
    }

    /// A new login: its authorization URL, state, nonce and PKCE verifier.
    pub async fn begin(&self) -> Result<Authorization, OidcError> {
        let discovered = self.discovered().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = discovered
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                || CsrfToken::new(random::token()),
                || Nonce::new(random::token()),
            )
            .add_scopes(self.scopes.iter().cloned())
            .set_pkce_challenge(challenge)
            .url();
        Ok(Authorization {
            url: url.into(),
            state: state.secret().clone(),
            login: PendingLogin {
                verifier: verifier.secret().clone(),
                nonce: nonce.secret().clone(),
            },
        })
    }

    /// Exchanges the callback's `code` of `login` for its ID token.
    pub async fn finish(&self, code: &str, login: &PendingLogin) -> Result<CoreIdToken, OidcError> {
        let discovered = self.discovered().await?;
        let response = discovered
            .client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Discovery(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(login.verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                RequestTokenError::Request(e) => OidcError::Unreachable(e.to_string()),
                other => OidcError::Exchange(other.to_string()),
            })?;
        response
            .id_token()
            .cloned()
            .ok_or_else(|| OidcError::Exchange("the token response has no ID token".into()))
    }

    /// The crate's check of the ID token: its signature against the issuer's keys (those the
    /// [`Verifier`] holds, refetched by it on key rotation), `iss`, `aud`, `exp` (with
    /// `--oidc-leeway-secs`) and the nonce of `login`, which ties the token to this login.
    pub async fn check(
        &self,
        id_token: &CoreIdToken,
        login: &PendingLogin,
    ) -> Result<(), OidcError> {
        let discovered = self.discovered().await?;
        let keys: CoreJsonWebKeySet = serde_json::from_value(self.verifier.published_keys().await)
            .map_err(|e| OidcError::Token(format!("the issuer's keys: {e}")))?;
        let leeway = chrono::Duration::from_std(self.verifier.leeway())
            .map_err(|e| OidcError::Token(format!("--oidc-leeway-secs: {e}")))?;
        let verifier = CoreIdTokenVerifier::new_public_client(
            self.client_id.clone(),
            discovered.issuer.clone(),
            keys,
        )
        .set_allowed_algs(ALLOWED_ALGORITHMS)
        .set_time_fn(move || chrono::Utc::now() - leeway);
        match id_token.claims(&verifier, &Nonce::new(login.nonce.clone())) {
            Ok(_) => Ok(()),
            Err(ClaimsVerificationError::InvalidNonce(_)) => Err(OidcError::Nonce),
            Err(e) => Err(OidcError::Token(e.to_string())),
        }
    }
}
