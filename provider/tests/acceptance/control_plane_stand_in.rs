//! CONTROL-PLANE STAND-IN. The operator does not run tenant control planes yet; when it does,
//! it will publish each tenant's public URLs in `status.endpoints` and its kubeconfig in the
//! Secret `Tenant::kubeconfig_secret` names, which `status.kubeconfigSecretRef` points at (SPEC
//! §2.5–2.6). Until then, this writes the same observable result the same way a second
//! controller would: that Secret in the tenant's namespace, and a merge patch of the Tenant's
//! status subresource under a field manager of its own, which the operator's
//! server-side-applied status leaves alone.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kubespaces_api::api::{
    KUBECONFIG_SECRET, KUBECONFIG_SECRET_KEY, SecretReference, Tenant, TenantEndpoints,
};
use kubespaces_api::names;

pub const FIELD_MANAGER: &str = "kubespaces-acceptance-control-plane-stand-in";
/// The bearer token in the kubeconfig the stand-in publishes.
pub const TOKEN: &str = "control-plane-stand-in-token";

/// What the stand-in published for one tenant.
pub struct Published {
    pub api: String,
    pub apps: String,
    pub kubeconfig: String,
    pub secret_name: String,
    pub secret_namespace: String,
}

impl Published {
    /// `status.endpoints` as published.
    pub fn endpoints(&self) -> TenantEndpoints {
        TenantEndpoints {
            api: Some(self.api.clone()),
            apps: Some(self.apps.clone()),
        }
    }

    /// `status.kubeconfigSecretRef` as published.
    pub fn secret_ref(&self) -> SecretReference {
        SecretReference {
            name: self.secret_name.clone(),
            namespace: self.secret_namespace.clone(),
        }
    }
}

/// A small, valid kubeconfig for the tenant's API at `server`.
fn kubeconfig(tenant: &str, server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {tenant}\n  cluster:\n    server: {server}\ncontexts:\n- name: {tenant}\n  context:\n    cluster: {tenant}\n    user: {tenant}-admin\ncurrent-context: {tenant}\nusers:\n- name: {tenant}-admin\n  user:\n    token: {TOKEN}\n"
    )
}

/// Publishes endpoints under `example.com` and a kubeconfig for `tenant`, as its control
/// plane will.
pub async fn publish(tenant: &str) -> Published {
    let client = kube::Client::try_default().await.unwrap();
    let api = format!("https://{tenant}.api.example.com:443");
    let published = Published {
        kubeconfig: kubeconfig(tenant, &api),
        apps: format!("https://*.{tenant}.apps.example.com"),
        api,
        secret_name: KUBECONFIG_SECRET.to_owned(),
        secret_namespace: names::namespace(tenant),
    };
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": published.secret_name},
        "type": "Opaque",
        "stringData": {KUBECONFIG_SECRET_KEY: published.kubeconfig},
    }))
    .unwrap();
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    Api::<Secret>::namespaced(client.clone(), &published.secret_namespace)
        .create(&pp, &secret)
        .await
        .unwrap();
    let status = serde_json::json!({"status": {
        "endpoints": {"api": published.api, "apps": published.apps},
        "kubeconfigSecretRef": {
            "name": published.secret_name,
            "namespace": published.secret_namespace,
        },
    }});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    Api::<Tenant>::all(client)
        .patch_status(tenant, &params, &Patch::Merge(&status))
        .await
        .unwrap();
    published
}
