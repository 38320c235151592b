//! Inside a tenant's own cluster, as its owner: the kubeconfig from the tenant's Secret and
//! kubectl with exactly that kubeconfig (tests of the control plane and of apps exposure).

use std::{
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::Output,
    time::Duration,
};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kubespaces_operator::{
    api::{KUBECONFIG_SECRET, KUBECONFIG_SECRET_KEY},
    names,
};

use crate::{Env, pods::retry_until};

/// A setting of the cluster's platform parts that these tests need (the harness writes it): one
/// of the operator's settings ([`crate::operator::settings`]), else a variable of the test's env.
pub fn platform_var(name: &str) -> String {
    crate::operator::setting(name).or_else(|| std::env::var(name).ok()).unwrap_or_else(|| {
        panic!("{name} is not set: tenant control planes need the cluster's platform Gateway (make test sets it up)")
    })
}

/// The tenant kubeconfig from its Secret, written 0600 where only this test reads it.
pub async fn owner_kubeconfig(env: &Env, tenant: &str) -> (PathBuf, String) {
    let secrets: Api<Secret> = Api::namespaced(env.client().await, &names::namespace(tenant));
    let secret = secrets
        .get(KUBECONFIG_SECRET)
        .await
        .expect("the tenant kubeconfig Secret");
    let bytes = secret
        .data
        .and_then(|mut d| d.remove(KUBECONFIG_SECRET_KEY))
        .expect("a kubeconfig in the Secret");
    let text = String::from_utf8(bytes.0).expect("a UTF-8 kubeconfig");
    (
        private_kubeconfig(&format!("{tenant}.kubeconfig"), &text),
        text,
    )
}

/// A kubeconfig's text in a file named `name` that only this test reads (0600), under the run's
/// state dir; replaces one left by an earlier run.
pub fn private_kubeconfig(name: &str, text: &str) -> PathBuf {
    let dir =
        std::env::var("KUBESPACES_STATE").map_or_else(|_| std::env::temp_dir(), PathBuf::from);
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .expect("a private kubeconfig file");
    f.write_all(text.as_bytes()).expect("write the kubeconfig");
    path
}

/// kubectl with exactly the tenant kubeconfig (and nothing of the harness's).
pub fn owner_kubectl(env: &Env, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    env.kubectl(&all, stdin)
}

/// A command's stdout and stderr, for messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `args` in the tenant until it succeeds (the public name resolves on this machine once
/// the Gateway accepted the route) and returns its output.
pub async fn in_tenant(env: &Env, kubeconfig: &Path, args: &[&str]) -> String {
    let what = format!("`kubectl {}` in the tenant", args.join(" "));
    retry_until(&what, Duration::from_secs(60), || {
        let out = owner_kubectl(env, kubeconfig, args, None);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(text(&out))
        }
    })
    .await
}

/// Asserts that kubectl with exactly `kubeconfig` (a file a user was handed) reaches the tenant's
/// own API: it lists the tenant's `default` namespace.
pub async fn assert_reaches_tenant(env: &Env, kubeconfig: &Path) {
    let namespaces = in_tenant(env, kubeconfig, &["get", "ns", "-o", "name"]).await;
    assert!(
        namespaces.lines().any(|l| l == "namespace/default"),
        "the kubeconfig {} reaches the tenant: {namespaces}",
        kubeconfig.display()
    );
}
