//! A Terraform identity with least privilege: a ServiceAccount that may manage Tenants and do
//! nothing else, as a platform team would give its CI, and a short-lived token for it.

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use super::cluster::cleanup_from_drop;

const NAMESPACE: &str = "default";

/// The ServiceAccount, its ClusterRole and binding, all named `name`; deleted on drop.
pub struct TenantManager {
    name: String,
    pub token: String,
}

impl TenantManager {
    pub async fn new(name: &str) -> Self {
        let client = kube::Client::try_default().await.unwrap();
        let pp = PostParams::default();
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
        let mut manager = Self {
            name: name.to_owned(),
            token: String::new(),
        };
        accounts
            .create(
                &pp,
                &object(serde_json::json!({"metadata": {"name": name}})),
            )
            .await
            .unwrap();
        // Exactly the verbs the provider uses: get (read, import, data source, polling),
        // create, patch (in-place update) and delete.
        let role: ClusterRole = object(serde_json::json!({
            "metadata": {"name": name},
            "rules": [{
                "apiGroups": ["kubespaces.io"],
                "resources": ["tenants"],
                "verbs": ["get", "create", "patch", "delete"],
            }],
        }));
        Api::<ClusterRole>::all(client.clone())
            .create(&pp, &role)
            .await
            .unwrap();
        let binding: ClusterRoleBinding = object(serde_json::json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
        }));
        Api::<ClusterRoleBinding>::all(client)
            .create(&pp, &binding)
            .await
            .unwrap();
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        manager.token = accounts
            .create_token_request(name, &pp, &request)
            .await
            .unwrap()
            .status
            .and_then(|s| s.token)
            .expect("the TokenRequest is answered with a token");
        manager
    }
}

impl TenantManager {
    /// Lets the identity read one tenant's kubeconfig, and nothing else: `get` on the Secret the
    /// operator publishes, by name, in that tenant's namespace (a Role and a RoleBinding named
    /// like the identity, which go with the namespace).
    pub async fn allow_kubeconfig(&self, tenant: &str) {
        let client = kube::Client::try_default().await.unwrap();
        let namespace = kubespaces_api::names::namespace(tenant);
        let pp = PostParams::default();
        let role: Role = object(serde_json::json!({
            "metadata": {"name": self.name},
            "rules": [{
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [kubespaces_api::api::KUBECONFIG_SECRET],
                "verbs": ["get"],
            }],
        }));
        Api::<Role>::namespaced(client.clone(), &namespace)
            .create(&pp, &role)
            .await
            .unwrap();
        let binding: RoleBinding = object(serde_json::json!({
            "metadata": {"name": self.name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": self.name},
            "subjects": [{"kind": "ServiceAccount", "name": self.name, "namespace": NAMESPACE}],
        }));
        Api::<RoleBinding>::namespaced(client, &namespace)
            .create(&pp, &binding)
            .await
            .unwrap();
    }
}

impl Drop for TenantManager {
    fn drop(&mut self) {
        let name = self.name.clone();
        cleanup_from_drop(async move {
            let client = kube::Client::try_default().await.unwrap();
            let dp = DeleteParams::default();
            // Gone already (or never created) is fine here.
            let _ = Api::<ClusterRoleBinding>::all(client.clone())
                .delete(&name, &dp)
                .await;
            let _ = Api::<ClusterRole>::all(client.clone())
                .delete(&name, &dp)
                .await;
            let _ = Api::<ServiceAccount>::namespaced(client, NAMESPACE)
                .delete(&name, &dp)
                .await;
        });
    }
}

fn object<T: serde::de::DeserializeOwned>(json: serde_json::Value) -> T {
    serde_json::from_value(json).unwrap()
}

/// Where and how the test cluster's kubeconfig connects.
pub struct Connection {
    pub host: String,
    /// PEM.
    pub ca: String,
    /// The kubeconfig user's own token (the harness's cluster admin).
    pub admin_token: String,
}

/// The API server's URL, CA certificate and token from the test cluster's kubeconfig.
pub fn connection() -> Connection {
    use base64::Engine as _;
    use secrecy::ExposeSecret as _;
    let path = std::env::var("KUBECONFIG").unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
    let ca = base64::engine::general_purpose::STANDARD
        .decode(cluster.certificate_authority_data.as_ref().unwrap())
        .unwrap();
    let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
    Connection {
        host: cluster.server.clone().unwrap(),
        ca: String::from_utf8(ca).unwrap(),
        admin_token: user.token.as_ref().unwrap().expose_secret().to_owned(),
    }
}
