//! Shared helpers for the acceptance tests and the benchmark: they drive a real control plane
//! (started by `acceptance/harness/cluster-up.sh`) the way a user would, with `kubectl` and a
//! Kubernetes client, and wait for what the operator does.

pub mod browser;
pub mod control_planes;
pub mod doc_console;
pub mod figures;
pub mod hostile;
pub mod lease;
pub mod oidc;
pub mod operator;
pub mod pod_logs;
pub mod pods;
pub mod probe;
pub mod release;
pub mod tenant_app;
pub mod tenant_cluster;
pub mod upgrade;
pub mod values_roll;

use std::{
    future::Future,
    io::Write,
    process::{Command, Output, Stdio},
    time::Duration,
};

use kube::{Api, Client};
use kubespaces_operator::api::Tenant;

/// Environment the harness hands the tests (see `acceptance/harness/run-tests.sh`).
pub struct Env {
    pub kubectl: String,
    operator_bin: Option<String>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Env {
    /// The harness environment. Acceptance tests need a running control plane: without one they
    /// fail and say how to get one, rather than pass without testing anything.
    pub fn get() -> Env {
        assert!(
            var("KUBESPACES_ACCEPTANCE").is_some() && var("KUBECONFIG").is_some(),
            "acceptance tests run against a real control plane: use `make test` \
             (or source .kubespaces/dev/env after `make up` and set KUBESPACES_ACCEPTANCE=1)"
        );
        Env {
            kubectl: var("KUBESPACES_KUBECTL").unwrap_or_else(|| "kubectl".into()),
            operator_bin: var("KUBESPACES_OPERATOR_BIN"),
        }
    }

    pub async fn client(&self) -> Client {
        Client::try_default()
            .await
            .expect("a Kubernetes client from KUBECONFIG")
    }

    pub async fn tenants(&self) -> Api<Tenant> {
        Api::all(self.client().await)
    }

    /// The operator binary, for tests that start an operator of their own.
    pub fn operator_bin(&self) -> &str {
        self.operator_bin
            .as_deref()
            .expect("KUBESPACES_OPERATOR_BIN (set by the harness)")
    }

    /// Runs kubectl with `args`, feeding `stdin` when given.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(&self.kubectl)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.kubectl));
        if let Some(input) = stdin
            && let Some(mut pipe) = child.stdin.take()
        {
            pipe.write_all(input.as_bytes())
                .expect("write kubectl stdin");
        }
        drop(child.stdin.take());
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl and returns stdout, failing the test with kubectl's stderr on error.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl(args, stdin);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -f -` of `manifest`, failing the test if kubectl does.
    pub fn apply(&self, manifest: &str) -> String {
        self.kubectl_ok(&["apply", "-f", "-"], Some(manifest))
    }
}

/// A tool `build-tools.sh --with <extra>` builds into `$KUBESPACES_BIN`. `make test` builds the
/// tools only some tests use while the first tests run: this waits until the tool is there, and
/// fails at once, naming the build's log, when `$KUBESPACES_STATE/tools.failed` says the build
/// failed.
pub fn built_tool(name: &str, extra: &str) -> std::path::PathBuf {
    let bin = var("KUBESPACES_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "KUBESPACES_BIN (set by the harness): {name} is built by \
             acceptance/harness/build-tools.sh --with {extra}"
            )
        });
    let path = bin.join(name);
    let failed = var("KUBESPACES_STATE").map(|s| std::path::Path::new(&s).join("tools.failed"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30 * 60);
    while !path.exists() {
        if let Some(failed) = failed.as_ref().filter(|f| f.exists()) {
            let why = std::fs::read_to_string(failed).unwrap_or_default();
            panic!("{name} was not built: {}", why.trim());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} is still missing after 30 min: run acceptance/harness/build-tools.sh --with {extra}",
            path.display()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    path
}

/// A Tenant manifest with `spec_body` (indented YAML) as its spec.
pub fn tenant_manifest(name: &str, spec_body: &str) -> String {
    format!(
        "apiVersion: kubespaces.io/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n{spec_body}"
    )
}

/// A Tenant manifest as a user would write it.
pub fn tenant_yaml(
    name: &str,
    owner: &str,
    cpu: &str,
    memory: &str,
    storage: Option<&str>,
) -> String {
    let storage = storage
        .map(|s| format!("\n    storage: {s}"))
        .unwrap_or_default();
    tenant_manifest(
        name,
        &format!(
            "  owner: {owner}\n  resources:\n    cpu: \"{cpu}\"\n    memory: {memory}{storage}\n"
        ),
    )
}

/// Polls `check` every 250 ms until it returns Some, or panics after `timeout` with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the Tenant is Ready at its current generation and returns it.
pub async fn wait_ready(tenants: &Api<Tenant>, name: &str, timeout: Duration) -> Tenant {
    pods::retry_until_async(&format!("tenant {name} to be Ready"), timeout, || async {
        match tenants.get_opt(name).await {
            Ok(Some(t)) if t.is_ready() => Ok(t),
            Ok(Some(t)) => Err(conditions_seen(&t)),
            Ok(None) => Err("no such tenant".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
}

/// A tenant's phase and its conditions that are not True, for a timeout's message.
fn conditions_seen(tenant: &Tenant) -> String {
    let status = tenant.status.as_ref();
    let mut seen = format!(
        "phase {}",
        status.and_then(|s| s.phase.as_deref()).unwrap_or("none")
    );
    for c in status.map(|s| s.conditions.as_slice()).unwrap_or_default() {
        if c.status != "True" {
            seen.push_str(&format!(
                "; {} {} {}: {}",
                c.type_, c.status, c.reason, c.message
            ));
        }
    }
    seen
}

/// Waits until the named object no longer exists (not merely terminating).
pub async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(&format!("{name} to be gone"), timeout, || async {
        matches!(api.get_opt(name).await, Ok(None)).then_some(())
    })
    .await
}

/// What a tenant's quota leaves the tenant's own workloads under `key` (`hard`, or `used`):
/// the quota's figure less what the tenant's control plane takes (`status.controlPlane.footprint`;
/// nothing without a control plane), written as people write it (`8`, `250m`, `16Gi`, `512Mi`).
pub fn own_share(
    quota: &k8s_openapi::api::core::v1::ResourceQuota,
    tenant: &Tenant,
    field: &str,
    key: &str,
) -> String {
    use kubespaces_operator::quantity::parse;
    let status = quota.status.as_ref();
    let figure = match field {
        "hard" => quota.spec.as_ref().and_then(|s| s.hard.as_ref()),
        _ => status.and_then(|s| s.used.as_ref()),
    }
    .and_then(|m| m.get(key))
    .map_or_else(|| "0".to_owned(), |q| q.0.clone());
    let footprint = tenant
        .status
        .as_ref()
        .and_then(|s| s.control_plane.as_ref())
        .and_then(|c| c.footprint.get(key))
        .map_or_else(|| "0".to_owned(), |q| q.0.clone());
    let nanos = parse(&figure).map(|n| n.0).unwrap_or_default()
        - parse(&footprint).map(|n| n.0).unwrap_or_default();
    const NANO: i128 = 1_000_000_000;
    if key.ends_with("cpu") {
        let milli = nanos / 1_000_000;
        return if milli % 1000 == 0 {
            (milli / 1000).to_string()
        } else {
            format!("{milli}m")
        };
    }
    if !(key.ends_with("memory") || key.ends_with("storage")) {
        return (nanos / NANO).to_string();
    }
    let bytes = nanos / NANO;
    match bytes {
        0 => "0".to_owned(),
        b if b % (1 << 30) == 0 => format!("{}Gi", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}Mi", b >> 20),
        b => b.to_string(),
    }
}
