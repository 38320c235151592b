//! The Kubernetes calls the resource needs, behind a trait so the waiting and error logic
//! in `ops` is tested without a cluster.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubespaces_api::api::{KUBECONFIG_SECRET_KEY, SecretReference, Tenant, TenantSpec};

use super::model;

/// The API server's own words for a refused request (as the operator puts it in conditions),
/// without kube's debug dump of the response.
fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => kubespaces_api::status::describe(status),
        other => other.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}", describe(.0))]
    Api(#[from] kube::Error),
    #[error(
        "This API server does not serve the Tenant API (kubespaces.io/v1alpha1, tenants). Is \
         KubeSpaces installed there, and is it the host cluster you meant? Check `config_path`, \
         `config_context` and `host` (or KUBECONFIG, KUBE_CONFIG_PATH, KUBE_CTX, KUBE_HOST). \
         The API server answered: {0}"
    )]
    NotServed(String),
    #[error(
        "status.kubeconfigSecretRef of tenant {tenant:?} names Secret {found}, not the Secret the \
         operator publishes ({expected}). The provider reads a tenant kubeconfig only from that \
         Secret and did not read this one; something other than the operator wrote that status \
         field."
    )]
    ForeignKubeconfigSecret {
        tenant: String,
        found: String,
        expected: String,
    },
    #[error(
        "The kubeconfig in Secret {secret} of tenant {tenant:?} was not put in the state: {reason}. \
         KubeSpaces writes no such kubeconfig, so someone who may write that Secret changed it; \
         the operator writes a new one at its next check of the tenant."
    )]
    KubeconfigRefused {
        tenant: String,
        secret: String,
        reason: kubespaces_api::kubeconfig::KubeconfigError,
    },
}

impl StoreError {
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Api(kube::Error::Api(s)) if s.code == 409)
    }

    /// An error from a Tenant request, telling apart "this cluster has no Tenant API" (a 404
    /// that names no object) from everything else.
    fn from_tenant_request(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(s) if s.code == 404 => StoreError::NotServed(describe(&error)),
            _ => StoreError::Api(error),
        }
    }
}

/// Whether `error` says that the Tenant `name` does not exist. The API server names the object
/// in a 404 about a missing object; a 404 that names none is about the API itself (another
/// cluster, or KubeSpaces not installed), and taking it for "deleted" would drop every tenant
/// from Terraform's state, or forget them on destroy.
fn tenant_missing(error: &kube::Error, name: &str) -> bool {
    matches!(error, kube::Error::Api(s)
        if s.code == 404 && s.details.as_ref().is_some_and(|d| d.name == name))
}

#[tonic::async_trait]
pub trait TenantStore: Send + Sync {
    /// `None` when there is no such Tenant.
    async fn get(&self, name: &str) -> Result<Option<Tenant>, StoreError>;
    async fn create(&self, tenant: &Tenant) -> Result<Tenant, StoreError>;
    async fn patch_spec(&self, name: &str, spec: &TenantSpec) -> Result<Tenant, StoreError>;
    /// Succeeds when the Tenant is already gone.
    async fn delete(&self, name: &str) -> Result<(), StoreError>;
    /// The tenant kubeconfig the operator published, if any (see [`kubeconfig_secret`]).
    async fn kubeconfig(&self, tenant: &Tenant) -> Result<Option<String>, StoreError>;
}

/// Field manager for Terraform's writes, so `kubectl get --show-managed-fields` says who.
const FIELD_MANAGER: &str = "terraform-provider-kubespaces";

pub struct KubeStore {
    client: kube::Client,
}

impl KubeStore {
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }

    fn tenants(&self) -> Api<Tenant> {
        Api::all(self.client.clone())
    }
}

/// The Secret to read `tenant`'s kubeconfig from: the one the operator publishes
/// ([`Tenant::kubeconfig_secret`]: its fixed name in the tenant's own namespace), once
/// `status.kubeconfigSecretRef` says it is there; `None` before. A status naming any other
/// Secret is an error, and that Secret is not read: whoever may write a Tenant's status could
/// otherwise have the provider copy any Secret its identity can read into Terraform's state.
pub fn kubeconfig_secret(tenant: &Tenant) -> Result<Option<SecretReference>, StoreError> {
    let Some(found) = tenant
        .status
        .as_ref()
        .and_then(|s| s.kubeconfig_secret_ref.as_ref())
    else {
        return Ok(None);
    };
    let expected = tenant.kubeconfig_secret();
    if *found != expected {
        let show = |r: &SecretReference| format!("{}/{}", r.namespace, r.name);
        return Err(StoreError::ForeignKubeconfigSecret {
            tenant: tenant.metadata.name.clone().unwrap_or_default(),
            found: show(found),
            expected: show(&expected),
        });
    }
    Ok(Some(expected))
}

/// The kubeconfig in the operator's Secret: under [`KUBECONFIG_SECRET_KEY`], and nowhere else
/// (no guessing at other keys, nor taking whatever a one-key Secret holds).
pub fn kubeconfig_from_secret(secret: &Secret) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(KUBECONFIG_SECRET_KEY)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// What goes into Terraform's state from the kubeconfig `found` in Secret `r`: its CA and token
/// with the tenant's published API URL, nothing else (that Secret sits in the tenant's namespace;
/// an `exec` in it would run wherever the state's kubeconfig is used).
pub fn trusted_kubeconfig(
    tenant: &Tenant,
    r: &SecretReference,
    found: &str,
) -> Result<String, StoreError> {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let refused = |reason| StoreError::KubeconfigRefused {
        tenant: name.clone(),
        secret: format!("{}/{}", r.namespace, r.name),
        reason,
    };
    let server = tenant.api_url().ok_or_else(|| {
        refused(kubespaces_api::kubeconfig::KubeconfigError::Missing(
            "public API URL in the tenant's status (status.endpoints.api)".into(),
        ))
    })?;
    kubespaces_api::kubeconfig::rebuild(&name, server, found.as_bytes()).map_err(refused)
}

#[tonic::async_trait]
impl TenantStore for KubeStore {
    async fn get(&self, name: &str) -> Result<Option<Tenant>, StoreError> {
        match self.tenants().get(name).await {
            Ok(t) => Ok(Some(t)),
            Err(e) if tenant_missing(&e, name) => Ok(None),
            Err(e) => Err(StoreError::from_tenant_request(e)),
        }
    }

    async fn create(&self, tenant: &Tenant) -> Result<Tenant, StoreError> {
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        self.tenants()
            .create(&pp, tenant)
            .await
            .map_err(StoreError::from_tenant_request)
    }

    async fn patch_spec(&self, name: &str, spec: &TenantSpec) -> Result<Tenant, StoreError> {
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let patch = model::spec_patch(spec);
        self.tenants()
            .patch(name, &pp, &Patch::Merge(&patch))
            .await
            .map_err(StoreError::from_tenant_request)
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        match self.tenants().delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if tenant_missing(&e, name) => Ok(()),
            Err(e) => Err(StoreError::from_tenant_request(e)),
        }
    }

    async fn kubeconfig(&self, tenant: &Tenant) -> Result<Option<String>, StoreError> {
        let Some(r) = kubeconfig_secret(tenant)? else {
            return Ok(None);
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &r.namespace);
        let Some(found) = secrets
            .get_opt(&r.name)
            .await?
            .as_ref()
            .and_then(kubeconfig_from_secret)
        else {
            return Ok(None);
        };
        trusted_kubeconfig(tenant, &r, &found).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(pairs: &[(&str, &str)]) -> Secret {
        Secret {
            data: Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    /// Bodies as a v1.37 API server sends them: a missing Tenant, and a missing API (the
    /// plain-text 404 of a path nothing serves, which kube turns into a Status without details).
    #[test]
    fn only_a_404_naming_the_tenant_means_it_is_gone() {
        let object: kube::core::Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"tenants.kubespaces.io \"nope\" not found","reason":"NotFound",
                "details":{"name":"nope","group":"kubespaces.io","kind":"tenants"},"code":404}"#,
        )
        .unwrap();
        let object = kube::Error::Api(Box::new(object));
        assert!(tenant_missing(&object, "nope"));
        assert!(!tenant_missing(&object, "other"));

        let api = kube::Error::Api(
            kube::core::Status::failure("404 page not found", "Failed to parse error data")
                .with_code(404)
                .boxed(),
        );
        assert!(!tenant_missing(&api, "nope"));
        let error = StoreError::from_tenant_request(api);
        assert!(matches!(error, StoreError::NotServed(_)));
        assert!(error.to_string().contains("does not serve the Tenant API"));
        assert!(error.to_string().contains("404 page not found"));
    }

    #[test]
    fn the_kubeconfig_is_read_only_under_the_operators_key() {
        let s = secret(&[
            ("certificate-authority", "x"),
            ("config", "kc"),
            ("value", "v"),
        ]);
        assert_eq!(kubeconfig_from_secret(&s).as_deref(), Some("kc"));
        // No fallback: neither other conventions' keys nor a Secret's only key.
        for other in ["kubeconfig", "value", "whatever"] {
            assert_eq!(kubeconfig_from_secret(&secret(&[(other, "only")])), None);
        }
        assert_eq!(kubeconfig_from_secret(&Secret::default()), None);
    }

    fn with_secret_ref(name: &str, namespace: &str) -> Tenant {
        let mut t = Tenant::new(
            "team-atlas",
            TenantSpec::new("alice@example.com", "1", "1Gi", None),
        );
        t.status = Some(kubespaces_api::api::TenantStatus {
            kubeconfig_secret_ref: Some(SecretReference {
                name: name.into(),
                namespace: namespace.into(),
            }),
            ..Default::default()
        });
        t
    }

    #[test]
    fn only_the_ca_and_token_reach_the_state_with_the_published_url() {
        let mut t = with_secret_ref("tenant-kubeconfig", "kubespaces-tenant-team-atlas");
        let r = t.kubeconfig_secret();
        let url = "https://team-atlas.api.example.com:443";
        if let Some(s) = t.status.as_mut() {
            s.endpoints = Some(kubespaces_api::api::TenantEndpoints {
                api: Some(url.into()),
                apps: None,
            });
        }
        let written = kubespaces_api::kubeconfig::tenant_kubeconfig(
            "x",
            "https://elsewhere:443",
            "Q0E=",
            "t",
        );
        let state = trusted_kubeconfig(&t, &r, &written).unwrap();
        assert!(
            state.contains(url) && !state.contains("elsewhere"),
            "{state}"
        );
        let planted = written.replace("    token: t", "    exec: {command: sh}\n    token: t");
        let e = trusted_kubeconfig(&t, &r, &planted)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("users[0].user.exec")
                && e.contains("kubespaces-tenant-team-atlas/tenant-kubeconfig"),
            "{e}"
        );
    }

    #[test]
    fn the_kubeconfig_is_read_only_from_the_operators_secret_in_the_tenants_namespace() {
        let own = ("tenant-kubeconfig", "kubespaces-tenant-team-atlas");
        let read = kubeconfig_secret(&with_secret_ref(own.0, own.1)).unwrap();
        assert_eq!(
            read.map(|r| (r.name, r.namespace)),
            Some((own.0.to_owned(), own.1.to_owned()))
        );
        // Not published yet: nothing to read, and no error.
        let mut unpublished = with_secret_ref(own.0, own.1);
        unpublished.status = None;
        assert!(kubeconfig_secret(&unpublished).unwrap().is_none());

        for (name, namespace) in [
            // Another namespace: the platform's own credentials, another tenant's kubeconfig.
            ("tenant-kubeconfig", "kube-system"),
            ("tenant-kubeconfig", "kubespaces-tenant-team-borealis"),
            // Another Secret in the tenant's own namespace.
            ("vc-team-atlas", "kubespaces-tenant-team-atlas"),
            ("default-token", "kubespaces-tenant-team-atlas"),
        ] {
            let error = kubeconfig_secret(&with_secret_ref(name, namespace)).unwrap_err();
            let text = error.to_string();
            assert!(
                matches!(error, StoreError::ForeignKubeconfigSecret { .. }),
                "{text}"
            );
            assert!(text.contains(&format!("{namespace}/{name}")), "{text}");
            assert!(
                text.contains("kubespaces-tenant-team-atlas/tenant-kubeconfig"),
                "{text}"
            );
        }
    }
}
