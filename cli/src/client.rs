//! The server's REST API, authenticated with the stored ID token. A token that is about to
//! expire, or that the server refuses, is refreshed once with the refresh token and the new
//! tokens are saved; only when that fails must the user log in again. Every request, the one
//! after a refresh included, goes to the server the login was issued for
//! ([`Credentials::server_for`], checked when the session opens).

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use kubespaces_api::api::Tenant;
use reqwest::{Method, StatusCode};
use serde::{Deserialize, Serialize};

use crate::{
    credentials::{self, Credentials},
    error::{CliError, Result},
    login,
    trust::{self, CertificateAuthority},
};

/// Refresh when the ID token expires within this many seconds.
const REFRESH_MARGIN_SECS: i64 = 30;

pub struct Session {
    http: reqwest::Client,
    credentials: Credentials,
    /// Where requests go: the server of the login, or `--server` when it is the same origin.
    server: String,
}

/// What a create asks for.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTenant {
    pub name: String,
    pub cpu: String,
    pub memory: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

#[derive(Deserialize)]
struct TenantList {
    items: Vec<Tenant>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
}

/// One event of the live stream.
pub struct Change {
    /// `applied` or `deleted`.
    pub kind: String,
    pub tenant: Tenant,
}

/// How a request's failure reads, by what was asked.
#[derive(Clone, Copy)]
enum Ask<'a> {
    Tenant(&'a str),
    Create(&'a str),
    Kubeconfig(&'a str),
    List,
}

impl Session {
    /// The stored login, refreshed first if it is about to expire. Refuses, before any request,
    /// a `--server` the login was not issued for. `ca` (`--certificate-authority`) replaces the
    /// CA the login recorded, and is recorded instead.
    pub async fn open(
        server_override: Option<&str>,
        ca: Option<CertificateAuthority>,
    ) -> Result<Session> {
        let mut credentials = credentials::load()?;
        if ca.is_some() && ca != credentials.certificate_authority {
            credentials.certificate_authority = ca;
            credentials::save(&credentials)?;
        }
        let server = credentials.server_for(server_override)?;
        if credentials.expires_within(REFRESH_MARGIN_SECS) {
            credentials = login::refresh(&credentials).await?;
            credentials::save(&credentials)?;
        }
        Ok(Session {
            http: trust::client(credentials.certificate_authority.as_ref())
                .build()
                .unwrap_or_default(),
            credentials,
            server,
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&CreateTenant>,
        ask: Ask<'_>,
    ) -> Result<reqwest::Response> {
        let url = format!("{}{path}", self.server);
        let mut refreshed = false;
        loop {
            let mut request = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(&self.credentials.id_token);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request
                .send()
                .await
                .map_err(|e| CliError::unreachable("the KubeSpaces server", &self.server, &e))?;
            if response.status() == StatusCode::UNAUTHORIZED && !refreshed {
                // Expired or revoked: one refresh, then the request again.
                self.credentials = login::refresh(&self.credentials).await?;
                credentials::save(&self.credentials)?;
                refreshed = true;
                continue;
            }
            if response.status().is_success() {
                return Ok(response);
            }
            return Err(failure(response, ask).await);
        }
    }

    pub async fn list(&mut self) -> Result<Vec<Tenant>> {
        let response = self
            .send(Method::GET, "/api/v1/tenants", None, Ask::List)
            .await?;
        let list: TenantList = decode(response).await?;
        Ok(list.items)
    }

    pub async fn get(&mut self, name: &str) -> Result<Tenant> {
        let response = self
            .send(Method::GET, &tenant_path(name), None, Ask::Tenant(name))
            .await?;
        decode(response).await
    }

    pub async fn create(&mut self, request: &CreateTenant) -> Result<Tenant> {
        let response = self
            .send(
                Method::POST,
                "/api/v1/tenants",
                Some(request),
                Ask::Create(&request.name),
            )
            .await?;
        decode(response).await
    }

    pub async fn delete(&mut self, name: &str) -> Result<()> {
        self.send(Method::DELETE, &tenant_path(name), None, Ask::Tenant(name))
            .await?;
        Ok(())
    }

    /// Asks the tenant's control plane to sleep (the server writes the request; the operator
    /// carries it out).
    pub async fn sleep(&mut self, name: &str) -> Result<()> {
        let path = format!("{}/sleep", tenant_path(name));
        self.send(Method::POST, &path, None, Ask::Tenant(name))
            .await?;
        Ok(())
    }

    /// Asks the tenant's control plane to wake.
    pub async fn wake(&mut self, name: &str) -> Result<()> {
        let path = format!("{}/wake", tenant_path(name));
        self.send(Method::POST, &path, None, Ask::Tenant(name))
            .await?;
        Ok(())
    }

    pub async fn kubeconfig(&mut self, name: &str) -> Result<String> {
        let path = format!("{}/kubeconfig", tenant_path(name));
        let response = self
            .send(Method::GET, &path, None, Ask::Kubeconfig(name))
            .await?;
        response
            .text()
            .await
            .map_err(|e| CliError::Other(format!("the kubeconfig could not be read: {e}")))
    }

    /// The live stream of one tenant: its current state first, then every change.
    pub async fn watch(
        &mut self,
        name: &str,
    ) -> Result<impl Stream<Item = Result<Change>> + use<>> {
        let path = format!("/api/v1/watch/tenants?name={}", encode(name));
        let response = self
            .send(Method::GET, &path, None, Ask::Tenant(name))
            .await?;
        Ok(response.bytes_stream().eventsource().map(|event| {
            let event = event.map_err(|e| CliError::StreamBroken(e.to_string()))?;
            let tenant = serde_json::from_str(&event.data).map_err(|e| {
                CliError::Other(format!("the server sent an unreadable tenant: {e}"))
            })?;
            Ok(Change {
                kind: event.event,
                tenant,
            })
        }))
    }
}

/// Tenant names are DNS labels, but a mistyped one must not become another path.
fn encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn tenant_path(name: &str) -> String {
    format!("/api/v1/tenants/{}", encode(name))
}

async fn decode<T: serde::de::DeserializeOwned>(response: reqwest::Response) -> Result<T> {
    response
        .json()
        .await
        .map_err(|e| CliError::Other(format!("the server sent something unexpected: {e}")))
}

async fn failure(response: reqwest::Response, ask: Ask<'_>) -> CliError {
    let status = response.status();
    let message = response
        .json::<ErrorBody>()
        .await
        .map(|b| b.error)
        .unwrap_or_else(|_| format!("the server answered {status}"));
    match (status, ask) {
        (StatusCode::UNAUTHORIZED, _) => {
            CliError::LoginExpired("the server refused the refreshed token".into())
        }
        (StatusCode::NOT_FOUND, Ask::Tenant(n) | Ask::Kubeconfig(n)) => {
            CliError::NotFound(n.to_owned())
        }
        (StatusCode::CONFLICT, Ask::Create(n)) => CliError::Exists(n.to_owned()),
        (StatusCode::CONFLICT, Ask::Kubeconfig(_)) => CliError::NotReady(message),
        (StatusCode::FORBIDDEN, _) => CliError::Forbidden(message),
        (StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST, _) => {
            CliError::Invalid(message)
        }
        _ => CliError::Other(message),
    }
}
