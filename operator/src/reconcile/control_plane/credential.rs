//! The tenant kubeconfig: a ServiceAccount token issued inside the tenant's control plane with
//! a lifetime, re-issued before it expires, and checked by a request through the public route.
//!
//! The operator talks to the tenant API with the admin kubeconfig vCluster writes into the
//! tenant namespace, through the Gateway (`--gateway-address`, with the public host as the TLS
//! server name), exactly the path a user's kubectl takes.

use std::time::Duration;

use k8s_openapi::{
    ByteString,
    api::{
        authentication::v1::{TokenRequest, TokenRequestSpec},
        core::v1::{Namespace, Secret, ServiceAccount},
        rbac::v1::{ClusterRoleBinding, RoleRef, Subject},
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, Config,
    api::{ObjectMeta, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use thiserror::Error;

use crate::kubeconfig;

use crate::names::control_plane as names;

#[derive(Debug, Error)]
pub enum CredentialError {
    /// The admin kubeconfig vCluster wrote cannot be used.
    #[error("the admin kubeconfig in Secret {secret} cannot be used: {message}")]
    AdminKubeconfig { secret: String, message: String },
    /// The tenant API answered with an error or not at all.
    #[error("the tenant API at {url} {what}: {message}")]
    TenantApi {
        url: String,
        what: &'static str,
        message: String,
    },
}

/// A token, when it was issued and when it expires.
pub struct Issued {
    pub token: String,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
    /// The uid of the ServiceAccount the token is for: a token outlives a deleted account in
    /// the tenant API's authentication cache for a few seconds, so revocation is told by the
    /// account's uid, not by a refused request.
    pub account_uid: String,
}

/// Where the operator connects for a tenant: its public URL, or the Gateway's address with the
/// public host as TLS server name.
pub struct Endpoint<'a> {
    pub public_host: &'a str,
    pub gateway_address: Option<&'a str>,
}

impl Endpoint<'_> {
    pub fn public_url(&self) -> String {
        format!("https://{}:443", self.public_host)
    }

    fn configure(&self, config: &mut Config) -> Result<(), String> {
        let url = match self.gateway_address {
            Some(address) => {
                config.tls_server_name = Some(self.public_host.to_owned());
                format!("https://{address}")
            }
            None => self.public_url(),
        };
        config.cluster_url = url.parse().map_err(|e| format!("{url}: {e}"))?;
        config.connect_timeout = Some(Duration::from_secs(5));
        config.read_timeout = Some(Duration::from_secs(15));
        config.write_timeout = Some(Duration::from_secs(15));
        Ok(())
    }

    /// A client for the tenant API from a kubeconfig's credential and CA, and nothing else of
    /// it: the kubeconfig sits in the tenant's namespace, so it is read as data
    /// ([`kubeconfig::parse`]: no `exec`, `tokenFile`, proxy or skipped TLS check, and the
    /// server is this endpoint's).
    pub async fn client(&self, kubeconfig: &str) -> Result<Client, String> {
        let credential = kubeconfig::parse(kubeconfig).map_err(|e| e.to_string())?;
        let clean = credential.kubeconfig("tenant", &self.public_url());
        let parsed = Kubeconfig::from_yaml(&clean).map_err(|e| e.to_string())?;
        let mut config = Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        self.configure(&mut config)?;
        // The operator's own checks must not keep a tenant awake.
        super::quiet_client::client(config)
    }

    fn api_error(&self, what: &'static str, e: impl ToString) -> CredentialError {
        CredentialError::TenantApi {
            url: self.public_url(),
            what,
            message: e.to_string(),
        }
    }
}

/// The CA of the tenant control plane, from the admin kubeconfig (base64, as kubeconfigs hold
/// it), which must hold nothing a tenant kubeconfig may not ([`kubeconfig::parse`]).
pub fn ca_data(admin_kubeconfig: &str) -> Result<String, String> {
    kubeconfig::parse(admin_kubeconfig)
        .map(|c| c.ca_data)
        .map_err(|e| e.to_string())
}

/// A client for the tenant API with the admin kubeconfig vCluster wrote.
pub async fn admin_client(
    endpoint: &Endpoint<'_>,
    admin_kubeconfig: &str,
) -> Result<Client, CredentialError> {
    endpoint
        .client(admin_kubeconfig)
        .await
        .map_err(|message| CredentialError::AdminKubeconfig {
            secret: names::ADMIN_SECRET.into(),
            message,
        })
}

/// The uid of the owner's ServiceAccount inside the tenant, None when it does not exist
/// (deleted: the credentials handed out are revoked).
pub async fn account_uid(
    endpoint: &Endpoint<'_>,
    admin: &Client,
) -> Result<Option<String>, CredentialError> {
    let accounts: Api<ServiceAccount> =
        Api::namespaced(admin.clone(), names::OWNER_ACCOUNT_NAMESPACE);
    accounts
        .get_opt(names::OWNER_ACCOUNT)
        .await
        .map(|a| a.and_then(|a| a.metadata.uid))
        .map_err(|e| endpoint.api_error("did not answer for the owner's ServiceAccount", e))
}

/// Issues a token for the owner's ServiceAccount inside the tenant (creating the account and
/// its cluster-admin binding when missing: deleting the account is how a credential is revoked).
pub async fn issue(
    endpoint: &Endpoint<'_>,
    admin: &Client,
    lifetime: Duration,
) -> Result<Issued, CredentialError> {
    let accounts: Api<ServiceAccount> =
        Api::namespaced(admin.clone(), names::OWNER_ACCOUNT_NAMESPACE);
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(names::OWNER_ACCOUNT.into()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    create_if_missing(&accounts, &account)
        .await
        .map_err(|e| endpoint.api_error("refused the owner's ServiceAccount", e))?;
    let account_uid = account_uid(endpoint, admin)
        .await?
        .ok_or_else(|| endpoint.api_error("lost the owner's ServiceAccount", "just created"))?;
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(names::OWNER_ACCOUNT.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: "cluster-admin".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names::OWNER_ACCOUNT.into(),
            namespace: Some(names::OWNER_ACCOUNT_NAMESPACE.into()),
            api_group: None,
        }]),
    };
    create_if_missing(&bindings, &binding)
        .await
        .map_err(|e| endpoint.api_error("refused the owner's ClusterRoleBinding", e))?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(lifetime.as_secs() as i64),
            // Empty: the tenant API server's own audience.
            audiences: Some(vec![]),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let issued_at = Timestamp::now();
    let answer = accounts
        .create_token_request(names::OWNER_ACCOUNT, &PostParams::default(), &request)
        .await
        .map_err(|e| endpoint.api_error("refused a token", e))?;
    let status = answer
        .status
        .ok_or_else(|| endpoint.api_error("answered a token request", "without a token"))?;
    match (status.token, status.expiration_timestamp) {
        (Some(token), Some(expires)) if !token.is_empty() => Ok(Issued {
            token,
            issued_at,
            expires_at: expires.0,
            account_uid,
        }),
        _ => Err(endpoint.api_error("answered a token request", "without a token or its expiry")),
    }
}

async fn create_if_missing<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The kubeconfig handed to the owner (pure): the public URL, the tenant CA, the token.
pub fn kubeconfig(tenant: &str, public_url: &str, ca_data: &str, token: &str) -> String {
    kubeconfig::tenant_kubeconfig(tenant, public_url, ca_data, token)
}

/// The token of a tenant kubeconfig when it is exactly what [`kubeconfig`] writes for this
/// tenant, URL and CA: anything else in the Secret (it sits in the tenant's namespace) is not kept.
pub fn own_token(tenant: &str, public_url: &str, ca_data: &str, written: &str) -> Option<String> {
    match kubeconfig::parse(written).ok()?.auth {
        kubeconfig::Auth::Token(token)
            if kubeconfig(tenant, public_url, ca_data, &token) == written =>
        {
            Some(token)
        }
        _ => None,
    }
}

/// The Secret that holds the tenant kubeconfig (pure).
pub fn secret(tenant: &str, kubeconfig: String, issued: &Issued) -> Secret {
    let mut meta = crate::build::install_meta(crate::api::KUBECONFIG_SECRET);
    meta.namespace = Some(crate::names::namespace(tenant));
    meta.labels = Some(crate::build::labels(tenant));
    meta.annotations = Some(
        [
            (names::ISSUED_AT_ANNOTATION, issued.issued_at.to_string()),
            (names::EXPIRES_AT_ANNOTATION, issued.expires_at.to_string()),
            (names::ACCOUNT_UID_ANNOTATION, issued.account_uid.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    );
    Secret {
        metadata: meta,
        type_: Some("Opaque".into()),
        data: Some(
            [(
                crate::api::KUBECONFIG_SECRET_KEY.to_owned(),
                ByteString(kubeconfig.into_bytes()),
            )]
            .into(),
        ),
        ..Secret::default()
    }
}

/// Whether a kubeconfig Secret's credential is due for renewal: two thirds of its life passed
/// (or its times are unreadable).
pub fn due(secret: &Secret, now: Timestamp) -> bool {
    let time = |key: &str| -> Option<Timestamp> {
        secret.metadata.annotations.as_ref()?.get(key)?.parse().ok()
    };
    match (
        time(names::ISSUED_AT_ANNOTATION),
        time(names::EXPIRES_AT_ANNOTATION),
    ) {
        (Some(issued), Some(expires)) if expires > issued => {
            let life = expires.duration_since(issued);
            let renew_at = issued.checked_add(life * 2 / 3).unwrap_or(issued);
            now >= renew_at
        }
        _ => true,
    }
}

/// The uid of the ServiceAccount a kubeconfig Secret's credential was issued for.
pub fn issued_for(secret: &Secret) -> Option<&str> {
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(names::ACCOUNT_UID_ANNOTATION)
        .map(String::as_str)
}

/// When the credential of a kubeconfig Secret is to be renewed.
pub fn renew_in(secret: &Secret, now: Timestamp) -> Option<Duration> {
    let time = |key: &str| -> Option<Timestamp> {
        secret.metadata.annotations.as_ref()?.get(key)?.parse().ok()
    };
    let (issued, expires) = (
        time(names::ISSUED_AT_ANNOTATION)?,
        time(names::EXPIRES_AT_ANNOTATION)?,
    );
    let renew_at = issued
        .checked_add(expires.duration_since(issued) * 2 / 3)
        .ok()?;
    Duration::try_from(renew_at.duration_since(now)).ok()
}

/// What an authenticated request with the handed-out kubeconfig says: the tenant's Kubernetes
/// version, or why it failed (`Err((unauthorized, message))`).
pub async fn probe(endpoint: &Endpoint<'_>, kubeconfig: &str) -> Result<String, (bool, String)> {
    let client = endpoint.client(kubeconfig).await.map_err(|m| (false, m))?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.get("default").await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 401 => {
            return Err((true, format!("{} (HTTP 401)", s.message)));
        }
        Err(e) => return Err((false, crate::error::describe(&e))),
    }
    client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .map_err(|e| (false, crate::error::describe(&e)))
}

/// The kubeconfig in a Secret, if it holds one.
pub fn kubeconfig_of(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(issued: &str, expires: &str) -> Issued {
        Issued {
            token: "t".into(),
            issued_at: issued.parse().unwrap(),
            expires_at: expires.parse().unwrap(),
            account_uid: "u".into(),
        }
    }

    #[test]
    fn a_credential_is_renewed_after_two_thirds_of_its_life() {
        let i = issued("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z");
        let s = secret("a", "x".into(), &i);
        assert!(!due(&s, "2026-12-01T15:59:00Z".parse().unwrap()));
        assert!(due(&s, "2026-12-01T16:00:00Z".parse().unwrap()));
        assert_eq!(
            renew_in(&s, "2026-12-01T15:00:00Z".parse().unwrap()),
            Some(Duration::from_secs(3600))
        );
        assert!(due(&Secret::default(), Timestamp::now()));
    }

    #[test]
    fn the_kubeconfig_names_the_public_url_and_the_tenant_context() {
        let k = kubeconfig(
            "team-atlas",
            "https://team-atlas.api.example.com:443",
            "Q0E=",
            "tok",
        );
        let parsed = Kubeconfig::from_yaml(&k).unwrap();
        assert_eq!(parsed.current_context.as_deref(), Some("team-atlas"));
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            cluster.server.as_deref(),
            Some("https://team-atlas.api.example.com:443")
        );
        let url = "https://team-atlas.api.example.com:443";
        assert_eq!(
            own_token("team-atlas", url, "Q0E=", &k).as_deref(),
            Some("tok")
        );
        // Tampered with, for another CA, or with anything added: not the operator's any more.
        for other in [
            k.replace("token: tok", "token: tok\n    tokenFile: /t"),
            k.replace("Q0E=", "Q0I="),
            k.replace("kind: Config", "kind: Config\npreferences: {}"),
        ] {
            assert_eq!(
                own_token("team-atlas", url, "Q0E=", &other),
                None,
                "{other}"
            );
        }
    }
}
