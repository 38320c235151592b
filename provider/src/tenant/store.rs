//! The Kubernetes calls the resource needs, behind a trait so the waiting and error logic
//! in `ops` is tested without a cluster.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubespaces_operator::api::{Tenant, TenantSpec};

use super::model;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}", kubespaces_operator::error::describe(.0))]
    Api(#[from] kube::Error),
}

impl StoreError {
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Api(kube::Error::Api(s)) if s.code == 409)
    }
}

#[tonic::async_trait]
pub trait TenantStore: Send + Sync {
    /// `None` when there is no such Tenant.
    async fn get(&self, name: &str) -> Result<Option<Tenant>, StoreError>;
    async fn create(&self, tenant: &Tenant) -> Result<Tenant, StoreError>;
    async fn patch_spec(&self, name: &str, spec: &TenantSpec) -> Result<Tenant, StoreError>;
    /// Succeeds when the Tenant is already gone.
    async fn delete(&self, name: &str) -> Result<(), StoreError>;
    /// The tenant kubeconfig the operator published, if any.
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

/// Keys under which a kubeconfig Secret may hold the file: vCluster writes `config`;
/// `kubeconfig` and `value` are the other common conventions.
const KUBECONFIG_KEYS: [&str; 3] = ["config", "kubeconfig", "value"];

pub fn kubeconfig_from_secret(secret: &Secret) -> Option<String> {
    let data = secret.data.as_ref()?;
    let bytes = KUBECONFIG_KEYS
        .iter()
        .find_map(|k| data.get(*k))
        .or_else(|| (data.len() == 1).then(|| data.values().next()).flatten())?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[tonic::async_trait]
impl TenantStore for KubeStore {
    async fn get(&self, name: &str) -> Result<Option<Tenant>, StoreError> {
        Ok(self.tenants().get_opt(name).await?)
    }

    async fn create(&self, tenant: &Tenant) -> Result<Tenant, StoreError> {
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        Ok(self.tenants().create(&pp, tenant).await?)
    }

    async fn patch_spec(&self, name: &str, spec: &TenantSpec) -> Result<Tenant, StoreError> {
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let patch = model::spec_patch(spec);
        Ok(self
            .tenants()
            .patch(name, &pp, &Patch::Merge(&patch))
            .await?)
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        match self.tenants().delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn kubeconfig(&self, tenant: &Tenant) -> Result<Option<String>, StoreError> {
        let Some(r) = tenant
            .status
            .as_ref()
            .and_then(|s| s.kubeconfig_secret_ref.as_ref())
        else {
            return Ok(None);
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &r.namespace);
        Ok(secrets
            .get_opt(&r.name)
            .await?
            .as_ref()
            .and_then(kubeconfig_from_secret))
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

    #[test]
    fn kubeconfig_key_preference() {
        let s = secret(&[
            ("certificate-authority", "x"),
            ("config", "kc"),
            ("value", "v"),
        ]);
        assert_eq!(kubeconfig_from_secret(&s).as_deref(), Some("kc"));
        assert_eq!(
            kubeconfig_from_secret(&secret(&[("whatever", "only")])).as_deref(),
            Some("only")
        );
        assert_eq!(
            kubeconfig_from_secret(&secret(&[("a", "1"), ("b", "2")])),
            None
        );
        assert_eq!(kubeconfig_from_secret(&Secret::default()), None);
    }
}
