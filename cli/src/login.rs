//! Logging in: the server's well-known document names the issuer, client id and scopes; the
//! issuer's discovery document names its device authorization and token endpoints; the device
//! authorization grant (RFC 8628, via the `oauth2` crate) turns a code the user confirms in a
//! browser into an ID token and a refresh token. Every one of those URLs must be https (but for
//! loopback, see [`crate::origin`]) before the CLI sends it anything: they receive the device
//! code and the refresh token.

use std::time::Duration;

use oauth2::{
    AuthType, ClientId, DeviceAuthorizationUrl, EndpointNotSet, EndpointSet, ExtraTokenFields,
    RefreshToken, RequestTokenError, Scope, StandardDeviceAuthorizationResponse,
    StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
    basic::{
        BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
        BasicTokenType,
    },
};
use serde::{Deserialize, Serialize};

use crate::{
    credentials::Credentials,
    error::{CliError, Result},
    origin::{self, Endpoint, UrlError},
    trust::{self, CertificateAuthority},
};

/// The OIDC extra of a token response: the ID token the server authenticates.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdTokenFields {
    #[serde(default)]
    pub id_token: Option<String>,
}
impl ExtraTokenFields for IdTokenFields {}

type OidcTokenResponse = StandardTokenResponse<IdTokenFields, BasicTokenType>;
type OidcClient<HasDeviceUrl> = oauth2::Client<
    BasicErrorResponse,
    OidcTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointNotSet,
    HasDeviceUrl,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// What the server publishes at /.well-known/kubespaces.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSettings {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Discovery {
    token_endpoint: String,
    #[serde(default)]
    device_authorization_endpoint: Option<String>,
}

impl Discovery {
    /// Refuses endpoints a code or token must not travel to. The device endpoint is checked
    /// where it is used (only the login needs it; a refresh must not fail over it).
    fn checked_token_endpoint(self) -> Result<Discovery, UrlError> {
        origin::checked(&self.token_endpoint, Endpoint::Token)?;
        Ok(self)
    }

    /// Where the device flow starts, if the issuer offers it over https (or loopback).
    fn device_endpoint(&self, issuer: &str) -> Result<String> {
        let url = self.device_authorization_endpoint.clone().ok_or_else(|| {
            CliError::Other(format!(
                "the issuer {issuer} does not offer the device authorization grant"
            ))
        })?;
        origin::checked(&url, Endpoint::DeviceAuthorization)?;
        Ok(url)
    }
}

/// An HTTP client that follows no redirects (the OAuth2 endpoints must answer themselves),
/// trusting `ca` besides the built-in roots.
pub fn http(ca: Option<&CertificateAuthority>) -> reqwest::Client {
    trust::client(ca)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    what: &'static str,
    url: &str,
) -> Result<T> {
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| CliError::unreachable(what, url, &e))?;
    if !response.status().is_success() {
        return Err(CliError::Other(format!(
            "{url} answered {} (is this a KubeSpaces server?)",
            response.status()
        )));
    }
    response
        .json()
        .await
        .map_err(|e| CliError::Other(format!("{url} sent something unexpected: {e}")))
}

pub async fn server_settings(http: &reqwest::Client, server: &str) -> Result<ServerSettings> {
    let url = format!("{}/.well-known/kubespaces", server.trim_end_matches('/'));
    get_json(http, "the KubeSpaces server", &url).await
}

async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Discovery> {
    origin::checked(issuer, Endpoint::Issuer)?;
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let discovery: Discovery = get_json(http, "the OIDC issuer", &url).await?;
    Ok(discovery.checked_token_endpoint()?)
}

fn url_error(e: impl std::fmt::Display) -> CliError {
    CliError::Other(format!("the issuer published an invalid endpoint URL: {e}"))
}

fn token_error<E: std::error::Error + 'static, T: oauth2::ErrorResponseType + std::fmt::Display>(
    e: RequestTokenError<E, oauth2::StandardErrorResponse<T>>,
    url: &str,
) -> CliError {
    match e {
        RequestTokenError::ServerResponse(r) => CliError::LoginExpired(format!(
            "the issuer said {}",
            r.error_description()
                .cloned()
                .unwrap_or_else(|| r.to_string())
        )),
        RequestTokenError::Request(e) => CliError::unreachable("the OIDC issuer", url, &e),
        other => CliError::Other(format!("the issuer's answer could not be read: {other}")),
    }
}

fn credentials_from(
    token: &OidcTokenResponse,
    server: &str,
    settings_issuer: &str,
    client_id: &str,
    old_refresh: Option<String>,
    certificate_authority: Option<CertificateAuthority>,
) -> Result<Credentials> {
    let id_token = token.extra_fields().id_token.clone().ok_or_else(|| {
        CliError::Other("the issuer returned no ID token (is the openid scope allowed?)".into())
    })?;
    Ok(Credentials {
        server: server.trim_end_matches('/').to_owned(),
        issuer: settings_issuer.to_owned(),
        client_id: client_id.to_owned(),
        id_token,
        // Issuers that rotate refresh tokens send a new one; others keep the old one valid.
        refresh_token: token
            .refresh_token()
            .map(|t| t.secret().clone())
            .or(old_refresh),
        certificate_authority,
    })
}

/// Shown to the user while they confirm the code (printed, and opened in a browser if asked).
pub struct Prompt {
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub user_code: String,
}

/// The device flow: asks for a code, hands it to `show`, and polls until the user confirmed it.
/// `ca`, trusted for the server and the issuer, is recorded with the tokens.
pub async fn device_login(
    server: &str,
    ca: Option<CertificateAuthority>,
    show: impl FnOnce(&Prompt),
) -> Result<Credentials> {
    let server = origin::checked(server, Endpoint::Server)?;
    let http = http(ca.as_ref());
    let settings = server_settings(&http, &server).await?;
    let discovery = discover(&http, &settings.issuer).await?;
    let device_url = discovery.device_endpoint(&settings.issuer)?;
    let client: OidcClient<EndpointSet> =
        oauth2::Client::new(ClientId::new(settings.client_id.clone()))
            .set_auth_type(AuthType::RequestBody)
            .set_device_authorization_url(
                DeviceAuthorizationUrl::new(device_url.clone()).map_err(url_error)?,
            )
            .set_token_uri(TokenUrl::new(discovery.token_endpoint.clone()).map_err(url_error)?);
    let details: StandardDeviceAuthorizationResponse = client
        .exchange_device_code()
        .add_scopes(settings.scopes.iter().cloned().map(Scope::new))
        .request_async(&http)
        .await
        .map_err(|e| token_error(e, &device_url))?;
    show(&Prompt {
        verification_uri: details.verification_uri().to_string(),
        verification_uri_complete: details
            .verification_uri_complete()
            .map(|u| u.secret().clone()),
        user_code: details.user_code().secret().clone(),
    });
    let token = client
        .exchange_device_access_token(&details)
        .request_async(&http, tokio::time::sleep, None)
        .await
        .map_err(|e| token_error(e, &discovery.token_endpoint))?;
    // The normalised server: what the tokens are for (see Credentials::server_for).
    credentials_from(
        &token,
        &server,
        &settings.issuer,
        &settings.client_id,
        None,
        ca,
    )
}

/// New tokens from the refresh token, without the user.
pub async fn refresh(credentials: &Credentials) -> Result<Credentials> {
    let refresh_token = credentials
        .refresh_token
        .clone()
        .ok_or_else(|| CliError::LoginExpired("no refresh token was issued".into()))?;
    let http = http(credentials.certificate_authority.as_ref());
    let discovery = discover(&http, &credentials.issuer).await?;
    let client: OidcClient<EndpointNotSet> =
        oauth2::Client::new(ClientId::new(credentials.client_id.clone()))
            .set_auth_type(AuthType::RequestBody)
            .set_token_uri(TokenUrl::new(discovery.token_endpoint.clone()).map_err(url_error)?);
    let token = client
        .exchange_refresh_token(&RefreshToken::new(refresh_token.clone()))
        .request_async(&http)
        .await
        .map_err(|e| token_error(e, &discovery.token_endpoint))?;
    credentials_from(
        &token,
        &credentials.server,
        &credentials.issuer,
        &credentials.client_id,
        Some(refresh_token),
        credentials.certificate_authority.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_https(e: CliError) -> Option<(&'static str, String)> {
        match e {
            CliError::Url(UrlError::NotHttps { what, url, .. }) => Some((what, url)),
            _ => None,
        }
    }

    // Each of these hosts does not resolve: had the CLI sent a request, the error would be
    // "cannot reach", not the refusal.

    #[tokio::test]
    async fn a_plain_http_server_gets_no_login_request() {
        let e = device_login("http://kubespaces.invalid", None, |_| {})
            .await
            .unwrap_err();
        assert_eq!(
            not_https(e),
            Some((
                "--server (or KUBESPACES_SERVER)",
                "http://kubespaces.invalid".into()
            ))
        );
    }

    #[tokio::test]
    async fn a_plain_http_issuer_gets_no_refresh_token() {
        let credentials = Credentials {
            server: "https://kubespaces.invalid".into(),
            issuer: "http://dex.invalid/dex".into(),
            client_id: "kubespaces".into(),
            id_token: "t".into(),
            refresh_token: Some("refresh".into()),
            certificate_authority: None,
        };
        let e = refresh(&credentials).await.unwrap_err();
        assert_eq!(
            not_https(e),
            Some((
                "the OIDC issuer the KubeSpaces server publishes",
                "http://dex.invalid/dex".into()
            ))
        );
    }

    #[test]
    fn a_plain_http_token_endpoint_is_refused() {
        let discovery = |token: &str| Discovery {
            token_endpoint: token.into(),
            device_authorization_endpoint: None,
        };
        let e = discovery("http://dex.example.com/token")
            .checked_token_endpoint()
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "the issuer's token endpoint http://dex.example.com/token must use https://"
            ),
            "{e}"
        );
        assert!(
            discovery("http://127.0.0.1:5556/dex/token")
                .checked_token_endpoint()
                .is_ok()
        );
        assert!(
            discovery("https://dex.example.com/token")
                .checked_token_endpoint()
                .is_ok()
        );
    }

    #[test]
    fn a_plain_http_device_endpoint_is_refused() {
        let discovery = |device: &str| Discovery {
            token_endpoint: "https://dex.example.com/token".into(),
            device_authorization_endpoint: Some(device.into()),
        };
        let e = discovery("http://dex.example.com/device/code")
            .device_endpoint("https://dex.example.com")
            .unwrap_err();
        assert_eq!(
            not_https(e),
            Some((
                "the issuer's device authorization endpoint",
                "http://dex.example.com/device/code".into()
            ))
        );
        assert_eq!(
            discovery("http://[::1]:5556/device/code")
                .device_endpoint("http://[::1]:5556")
                .unwrap(),
            "http://[::1]:5556/device/code"
        );
    }
}
