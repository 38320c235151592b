//! The tests' own view of the cluster: reading Tenants and namespaces, and holding up one
//! tenant's provisioning with an admission policy.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kubespaces_acceptance::{wait_for, wait_gone};
use kubespaces_api::api::Tenant;

/// The bound on every wait of these tests (a tenant's teardown takes its control plane and the
/// control plane's volume first).
pub const WAIT: Duration = Duration::from_secs(120);

pub async fn tenants() -> Api<Tenant> {
    Api::all(kube::Client::try_default().await.unwrap())
}

pub async fn namespaces() -> Api<Namespace> {
    Api::all(kube::Client::try_default().await.unwrap())
}

/// The kubeconfig the operator published for a tenant, from its Secret.
pub async fn published_kubeconfig(namespace: &str, secret: &str) -> String {
    use k8s_openapi::api::core::v1::Secret;
    let client = kube::Client::try_default().await.unwrap();
    let found = Api::<Secret>::namespaced(client, namespace)
        .get(secret)
        .await
        .unwrap();
    let bytes = found
        .data
        .and_then(|mut d| d.remove(kubespaces_api::api::KUBECONFIG_SECRET_KEY))
        .expect("a kubeconfig in the tenant's Secret");
    String::from_utf8(bytes.0).unwrap()
}

/// Writes a credential file readable by its owner only.
pub fn write_private(path: &std::path::Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .unwrap();
}

/// kubectl (the harness's, `KUBESPACES_KUBECTL`) with `args`; its stdout, or the test fails
/// with its stderr.
pub fn kubectl(args: &[&str]) -> String {
    let bin = std::env::var("KUBESPACES_KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let out = std::process::Command::new(&bin)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub async fn namespace_exists(name: &str) -> bool {
    namespaces().await.get_opt(name).await.unwrap().is_some()
}

/// The namespace controller finishes a namespace's deletion; until then the name is taken.
pub async fn wait_namespace_gone(name: &str) {
    wait_gone(&namespaces().await, name, WAIT).await;
}

/// What the policy says when it refuses the namespace.
pub const HOLD_MESSAGE: &str = "held by the acceptance test";

/// A ValidatingAdmissionPolicy and its binding that refuse the creation of exactly one
/// namespace, so the operator cannot provision that tenant until [`NamespaceHold::release`].
/// Every other namespace is admitted: other tests on the cluster are not affected. Dropped
/// unreleased (a failed assertion), it still deletes both objects.
pub struct NamespaceHold {
    name: String,
    namespace: String,
    released: bool,
}

impl NamespaceHold {
    /// Creates the policy and binding named `name`, and returns once the API server enforces
    /// them (a dry-run create of the namespace is refused).
    pub async fn new(name: &str, namespace: &str) -> Self {
        let client = kube::Client::try_default().await.unwrap();
        let policy: ValidatingAdmissionPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["namespaces"],
                }]},
                "validations": [{
                    "expression": format!("object.metadata.name != '{namespace}'"),
                    "message": HOLD_MESSAGE,
                }],
            }
        }))
        .unwrap();
        let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}
        }))
        .unwrap();
        // The guard exists before the objects do: whatever happens next, drop cleans up.
        let hold = Self {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            released: false,
        };
        let pp = PostParams::default();
        Api::<ValidatingAdmissionPolicy>::all(client.clone())
            .create(&pp, &policy)
            .await
            .unwrap();
        Api::<ValidatingAdmissionPolicyBinding>::all(client)
            .create(&pp, &binding)
            .await
            .unwrap();
        wait_for(
            &format!("the admission policy {name} to be enforced"),
            WAIT,
            || async {
                match hold.dry_run_create().await {
                    Err(kube::Error::Api(s)) if s.message.contains(HOLD_MESSAGE) => Some(()),
                    _ => None,
                }
            },
        )
        .await;
        hold
    }

    async fn dry_run_create(&self) -> kube::Result<Namespace> {
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": self.namespace}}))
                .unwrap();
        let pp = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        namespaces().await.create(&pp, &ns).await
    }

    /// Deletes the policy and binding, and returns once the namespace may be created again:
    /// a dry-run create is admitted, or the namespace exists already (the operator, retrying,
    /// may create it the moment the policy is gone, and from then on every create is a 409).
    pub async fn release(mut self) {
        delete_policy(&self.name).await;
        self.released = true;
        wait_for(
            &format!("namespace {} to be admitted again", self.namespace),
            WAIT,
            || async {
                match self.dry_run_create().await {
                    Ok(_) => Some(()),
                    Err(kube::Error::Api(s)) if s.code == 409 => Some(()),
                    Err(_) => None,
                }
            },
        )
        .await;
    }
}

impl Drop for NamespaceHold {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let name = self.name.clone();
        cleanup_from_drop(async move { delete_policy(&name).await });
    }
}

/// Runs a cleanup from `Drop`, which cannot await while the test's runtime may be unwinding:
/// on a runtime of its own, on a thread of its own.
pub fn cleanup_from_drop(cleanup: impl Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(cleanup)
    })
    .join();
}

/// Deletes the binding and the policy named `name`; gone already is fine.
async fn delete_policy(name: &str) {
    let client = kube::Client::try_default().await.unwrap();
    let dp = DeleteParams::default();
    let gone = |r: kube::Result<_>| match r {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("could not delete admission policy {name}: {e}"),
    };
    gone(
        Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
            .delete(name, &dp)
            .await
            .map(|_| ()),
    );
    gone(
        Api::<ValidatingAdmissionPolicy>::all(client)
            .delete(name, &dp)
            .await
            .map(|_| ()),
    );
}
