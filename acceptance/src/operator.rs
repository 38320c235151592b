//! An operator process owned by a test or the benchmark, reconciling only the Tenants labelled
//! `kubespaces.io/test-operator=<shard>` (the shared operator of the test run skips those).

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use k8s_openapi::api::{
    authentication::v1::{TokenRequest, TokenRequestSpec},
    core::v1::{Namespace, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    build::access,
};

use crate::wait_for;

pub const SHARD_LABEL: &str = "kubespaces.io/test-operator";

/// A Tenant for the operator of `shard` only.
pub fn sharded_tenant(name: &str, spec: TenantSpec, shard: &str) -> Tenant {
    let mut t = Tenant::new(name, spec);
    t.metadata.labels = Some([(SHARD_LABEL.to_owned(), shard.to_owned())].into());
    t
}

pub struct OperatorProcess {
    child: Child,
    pub metrics_url: String,
    bin: String,
    shard: String,
    log: std::path::PathBuf,
    extra: Vec<String>,
    /// The kubeconfig the process runs with; None: the harness's admin one ($KUBECONFIG).
    kubeconfig: Option<PathBuf>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl OperatorProcess {
    /// Starts the operator binary for one shard and waits until it reports ready.
    pub async fn start(bin: &str, shard: &str) -> OperatorProcess {
        Self::start_with(bin, shard, &[]).await
    }

    /// Same as [`start`](Self::start), with extra `run` flags.
    pub async fn start_with(bin: &str, shard: &str, extra: &[&str]) -> OperatorProcess {
        Self::start_as(bin, shard, extra, None).await
    }

    /// Starts the operator for one shard as the installed operator runs: under the generated
    /// ClusterRole `kubespaces:operator` (and the leader-election Role), not as the admin. See
    /// [`least_privileged_kubeconfig`].
    pub async fn start_least_privileged(
        client: &Client,
        bin: &str,
        shard: &str,
        extra: &[&str],
    ) -> OperatorProcess {
        let kubeconfig = least_privileged_kubeconfig(client, None).await;
        Self::start_as(bin, shard, extra, Some(kubeconfig.path)).await
    }

    /// Starts the operator with `kubeconfig` (None: the admin's).
    pub async fn start_as(
        bin: &str,
        shard: &str,
        extra: &[&str],
        kubeconfig: Option<PathBuf>,
    ) -> OperatorProcess {
        let port = free_port();
        let dir = std::env::var("KUBESPACES_STATE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir());
        let log = dir.join(format!("operator-{shard}.log"));
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(bin, shard, port, &log, &extra, kubeconfig.as_deref());
        let op = OperatorProcess {
            child,
            metrics_url: format!("http://127.0.0.1:{port}"),
            bin: bin.into(),
            shard: shard.into(),
            log,
            extra,
            kubeconfig,
        };
        op.wait_ready().await;
        op
    }

    async fn wait_ready(&self) {
        let url = format!("{}/readyz", self.metrics_url);
        let what = format!("the operator to be ready (log: {})", self.log.display());
        wait_for(&what, Duration::from_secs(120), || async {
            http_get(&url)
                .await
                .is_some_and(|(status, _)| status == 200)
                .then_some(())
        })
        .await
    }

    /// SIGKILL: no graceful shutdown, as when a node dies.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as Kubernetes stops a pod; returns the exit status once the process is gone.
    pub async fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().ok()?;
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Starts the same operator again (after [`kill`](Self::kill)).
    pub async fn restart(&mut self) {
        let port = free_port();
        self.child = spawn(
            &self.bin,
            &self.shard,
            port,
            &self.log,
            &self.extra,
            self.kubeconfig.as_deref(),
        );
        self.metrics_url = format!("http://127.0.0.1:{port}");
        self.wait_ready().await;
    }

    /// The process id (to tell whether it is still the same process).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process runs (it has not exited or crashed).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The operator's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Asserts that every request the operator sent so far is one its ClusterRole lists
    /// (`access::CONTROLLER`): a request outside the table would be refused under the chart.
    pub async fn assert_every_request_listed(&self) {
        assert_eq!(
            metric_sum(
                &self.metrics().await,
                "kubespaces_kube_api_requests_unlisted_total"
            ),
            0.0,
            "every request the operator sent is listed in access::CONTROLLER (its ClusterRole)"
        );
    }

    /// The operator's Prometheus metrics text. It answers from the moment it is ready (`start`
    /// waits for that) until it is stopped: no answer is a dead process, and fails the test
    /// rather than reading as zeros.
    pub async fn metrics(&self) -> String {
        match http_get(&format!("{}/metrics", self.metrics_url)).await {
            Some((200, body)) => body,
            other => panic!(
                "the operator did not answer /metrics (HTTP {:?}; log: {})",
                other.map(|(status, _)| status),
                self.log.display()
            ),
        }
    }

    /// Completed reconciles so far (the duration histogram counts a reconcile when it ends).
    pub async fn reconciles_done(&self) -> f64 {
        metric_sum(
            &self.metrics().await,
            "kubespaces_reconcile_duration_seconds_count",
        )
    }

    /// Writes (POST, PUT, PATCH, DELETE) the controller sent to the API so far.
    pub async fn writes(&self) -> f64 {
        metric_sum_where(
            &self.metrics().await,
            "kubespaces_kube_api_requests_total",
            "verb",
            &["POST", "PUT", "PATCH", "DELETE"],
        )
    }

    /// Touches an annotation of the Tenant (which its watch delivers) and waits until a reconcile
    /// of this operator ended after that.
    pub async fn poke(&self, env: &crate::Env, tenant: &str, round: usize) {
        let before = self.reconciles_done().await;
        env.kubectl_ok(
            &[
                "annotate",
                "--overwrite",
                "tenant",
                tenant,
                &format!("kubespaces.io/test-poke={round}"),
            ],
            None,
        );
        wait_for(
            "a reconcile after the Tenant changed",
            Duration::from_secs(60),
            || async { (self.reconciles_done().await > before).then_some(()) },
        )
        .await;
    }

    /// Peak resident memory of the process so far, in KiB (VmHWM).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(
    bin: &str,
    shard: &str,
    port: u16,
    log: &Path,
    extra: &[String],
    kubeconfig: Option<&Path>,
) -> Child {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("operator log file");
    let err = out.try_clone().expect("operator log file");
    let mut command = Command::new(bin);
    // The cluster's operator settings (the Gateway, apps and storage ones), as the harness wrote
    // them; and tenants of test-owned operators get the host side only, unless a test asks for
    // control planes (`--control-plane=vcluster` and its settings in `extra`, which win over
    // these).
    command
        .envs(settings())
        .env("KUBESPACES_CONTROL_PLANE", "none");
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    command
        .args([
            "run",
            "--metrics-addr",
            &format!("127.0.0.1:{port}"),
            "--selector",
            &format!("{SHARD_LABEL}={shard}"),
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"))
}

/// The operator's settings for the cluster under test: `$KUBESPACES_STATE/operator.env`, one
/// `NAME=VALUE` a line, written by the harness (lib.sh `operator_setting`): the operator's own
/// flag variables (storage class, helm, the Gateway and apps settings). Only those a test reads
/// itself are in the tests' env too; every operator a test or the bench starts gets all of them
/// from here. Empty without a state dir or file.
pub fn settings() -> Vec<(String, String)> {
    let Ok(state) = std::env::var("KUBESPACES_STATE") else {
        return Vec::new();
    };
    let path = Path::new(&state).join("operator.env");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("read {}: {e}", path.display()),
    };
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, value) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("{}: not NAME=VALUE: {l}", path.display()));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// One of the operator's [`settings`] by name.
pub fn setting(name: &str) -> Option<String> {
    settings()
        .into_iter()
        .find_map(|(n, v)| (n == name).then_some(v))
}

/// A GET of an operator's loopback endpoint (/readyz, /metrics): status and body; None when it
/// does not answer within 30 s (never through a proxy).
pub async fn http_get(url: &str) -> Option<(u16, String)> {
    let response = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
        .ok()?
        .get(url)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?))
}

/// The samples of a Prometheus metric family in a metrics text: (line, value). The family must
/// be declared in the text (its `# TYPE` line, which the exporter writes even before the first
/// sample): a renamed or unregistered metric fails the test instead of summing to zero.
fn samples<'a>(metrics: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, f64)> {
    // A sample's name is its family's, or that with a suffix of the family's type (a counter's
    // `_total`, a histogram's `_count`, `_sum` and `_bucket`).
    let family = ["_total", "_count", "_sum", "_bucket"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    assert!(
        metrics.lines().any(|l| l
            .strip_prefix("# TYPE ")
            .and_then(|t| t.split_whitespace().next())
            .is_some_and(|declared| declared == name || declared == family)),
        "the metrics text declares no family {name}:\n{metrics}"
    );
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(move |l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| Some((l, l.rsplit(' ').next()?.parse::<f64>().ok()?)))
}

/// Sum of a Prometheus counter family (all label values) in a metrics text.
pub fn metric_sum(metrics: &str, name: &str) -> f64 {
    samples(metrics, name).map(|(_, v)| v).sum()
}

/// Sum of a counter family for the label values given (e.g. verbs).
pub fn metric_sum_where(metrics: &str, name: &str, label: &str, values: &[&str]) -> f64 {
    samples(metrics, name)
        .filter(|(l, _)| {
            values
                .iter()
                .any(|v| l.contains(&format!("{label}=\"{v}\"")))
        })
        .map(|(_, v)| v)
        .sum()
}

/// Where the installed chart runs the operator: when this ServiceAccount exists, test-owned
/// operators use it (the chart binds it to the generated roles).
pub const CHART_NAMESPACE: &str = "kubespaces-system";
pub const CHART_SERVICE_ACCOUNT: &str = "kubespaces-operator";
/// Where test-owned operators get a ServiceAccount of their own otherwise, and hold their Leases.
pub const TEST_NAMESPACE: &str = "kubespaces-test-operators";
const TEST_SERVICE_ACCOUNT: &str = "kubespaces-test-operator";
const FIELD_MANAGER: &str = "kubespaces-acceptance";

/// A kubeconfig of a ServiceAccount (0600), and where that account may hold leader Leases.
pub struct OperatorKubeconfig {
    pub path: PathBuf,
    /// The namespace whose leader-election Role the account is bound to (its own).
    pub lease_namespace: String,
    /// The ServiceAccount's name.
    pub account: String,
}

/// Binds the Role for connection Secrets (generated from the RBAC table) in `namespace` to the
/// operator account of `kubeconfig`, as the chart does for each namespace of
/// `--connection-secret-namespaces`.
pub async fn bind_connection_secrets(
    client: &Client,
    kubeconfig: &OperatorKubeconfig,
    namespace: &str,
) {
    let mut role = access::connection_secrets_role();
    role.metadata.namespace = Some(namespace.to_owned());
    apply(&Api::<Role>::namespaced(client.clone(), namespace), &role).await;
    let binding = RoleBinding {
        metadata: meta(
            &format!("{}-{}", access::CONNECTION_SECRETS_ROLE, kubeconfig.account),
            Some(namespace),
        ),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: access::CONNECTION_SECRETS_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: kubeconfig.account.clone(),
            namespace: Some(kubeconfig.lease_namespace.clone()),
            ..Subject::default()
        }]),
    };
    apply(
        &Api::<RoleBinding>::namespaced(client.clone(), namespace),
        &binding,
    )
    .await;
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(String::from),
        ..ObjectMeta::default()
    }
}

async fn apply<K>(api: &Api<K>, object: &K)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|e| panic!("apply {name}: {e}"));
}

/// The generated ClusterRole's rules with NetworkPolicies readable but not writable: an
/// operator under them misses one permission (tests of how that shows).
pub fn rules_without_network_policy_writes() -> Vec<PolicyRule> {
    let mut role = access::operator_cluster_role();
    role.rules
        .take()
        .unwrap_or_default()
        .into_iter()
        .map(|mut rule| {
            if rule.resources.as_deref() == Some(&["networkpolicies".to_owned()][..]) {
                rule.verbs.retain(|v| v == "list" || v == "watch");
            }
            rule
        })
        .collect()
}

/// A kubeconfig for a test-owned operator that holds only what the installed operator holds.
///
/// With `rules` None: the generated ClusterRole `kubespaces:operator` (created from the Rust
/// table if the cluster does not have it yet), through the chart's ServiceAccount
/// (`kubespaces-system/kubespaces-operator`) where the chart is installed, else through a
/// ServiceAccount `kubespaces-test-operators/kubespaces-test-operator` bound here. With `rules`:
/// a ClusterRole of exactly those rules, under a ServiceAccount named `<name>` of its own (for
/// tests that take a permission away). Either way the account is also bound to the
/// leader-election Role in its namespace. The token comes from the TokenRequest API (one hour);
/// server and CA from the admin kubeconfig.
pub async fn least_privileged_kubeconfig(
    client: &Client,
    custom: Option<(&str, Vec<PolicyRule>)>,
) -> OperatorKubeconfig {
    let chart_sa: Api<ServiceAccount> = Api::namespaced(client.clone(), CHART_NAMESPACE);
    let chart_installed = custom.is_none()
        && chart_sa
            .get_opt(CHART_SERVICE_ACCOUNT)
            .await
            .ok()
            .flatten()
            .is_some();
    let (namespace, account) = if chart_installed {
        (CHART_NAMESPACE.to_owned(), CHART_SERVICE_ACCOUNT.to_owned())
    } else {
        let account = match &custom {
            Some((name, _)) => format!("{TEST_SERVICE_ACCOUNT}-{name}"),
            None => TEST_SERVICE_ACCOUNT.to_owned(),
        };
        (TEST_NAMESPACE.to_owned(), account)
    };
    if !chart_installed {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        apply(
            &namespaces,
            &Namespace {
                metadata: meta(&namespace, None),
                ..Namespace::default()
            },
        )
        .await;
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
        apply(
            &accounts,
            &ServiceAccount {
                metadata: meta(&account, Some(&namespace)),
                ..ServiceAccount::default()
            },
        )
        .await;
        let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
        let role_name = match &custom {
            Some((_, rules)) => {
                let name = format!("kubespaces:test-operator-{account}");
                let role = ClusterRole {
                    metadata: meta(&name, None),
                    rules: Some(rules.clone()),
                    ..ClusterRole::default()
                };
                apply(&cluster_roles, &role).await;
                name
            }
            None => {
                // Installed by cluster-up.sh (operator/manifests) or the chart; created from the
                // table otherwise, never overwritten.
                match cluster_roles
                    .create(&PostParams::default(), &access::operator_cluster_role())
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => panic!("create ClusterRole {}: {e}", access::OPERATOR_CLUSTER_ROLE),
                }
                access::OPERATOR_CLUSTER_ROLE.to_owned()
            }
        };
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: account.clone(),
            namespace: Some(namespace.clone()),
            ..Subject::default()
        };
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        apply(
            &bindings,
            &ClusterRoleBinding {
                metadata: meta(&format!("kubespaces:test-operator-{account}"), None),
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name: role_name,
                },
                subjects: Some(vec![subject.clone()]),
            },
        )
        .await;
        let mut lease_role = access::leader_election_role();
        lease_role.metadata.namespace = Some(namespace.clone());
        let roles: Api<Role> = Api::namespaced(client.clone(), &namespace);
        apply(&roles, &lease_role).await;
        let role_bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace);
        apply(
            &role_bindings,
            &RoleBinding {
                metadata: meta(
                    &format!("kubespaces:test-operator-{account}"),
                    Some(&namespace),
                ),
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "Role".into(),
                    name: access::LEADER_ELECTION_ROLE.into(),
                },
                subjects: Some(vec![subject]),
            },
        )
        .await;
    }

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request(&account, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("token for {namespace}/{account}: {e}"))
        .status
        .and_then(|s| s.token)
        .expect("a token in the TokenRequest status");

    // A file per call: tests of one binary run at once, and two may ask for the same account.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = kubeconfig_dir().join(format!(
        "kubeconfig-{namespace}-{account}-{}-{call}",
        std::process::id()
    ));
    write_private(&path, &token_kubeconfig(&token));
    OperatorKubeconfig {
        path,
        lease_namespace: namespace,
        account,
    }
}

fn kubeconfig_dir() -> PathBuf {
    std::env::var("KUBESPACES_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir())
}

/// A kubeconfig with the admin kubeconfig's server and CA and `token` as the credential.
fn token_kubeconfig(token: &str) -> String {
    let admin_path = std::env::var("KUBECONFIG").expect("KUBECONFIG (the admin kubeconfig)");
    let admin = kube::config::Kubeconfig::read_from(&admin_path)
        .unwrap_or_else(|e| panic!("read {admin_path}: {e}"));
    let context = admin
        .current_context
        .as_ref()
        .and_then(|name| admin.contexts.iter().find(|c| &c.name == name))
        .and_then(|c| c.context.clone())
        .expect("a current context in the admin kubeconfig");
    let cluster = admin
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .expect("the current context's cluster");
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "cluster", "user": "operator"}}],
        "current-context": "operator",
    });
    serde_yaml::to_string(&config).expect("kubeconfig as YAML")
}

/// Writes `text` to `path`, readable by the owner only (a credential).
fn write_private(path: &Path, text: &str) {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    file.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::{metric_sum, metric_sum_where};

    const TEXT: &str = "# HELP kubespaces_leader 1 while this process holds the Lease.\n\
        # TYPE kubespaces_leader gauge\n\
        kubespaces_leader 1\n\
        # TYPE kubespaces_kube_api_requests counter\n\
        kubespaces_kube_api_requests_total{verb=\"GET\"} 3\n\
        kubespaces_kube_api_requests_total{verb=\"PATCH\"} 2\n\
        # TYPE kubespaces_kube_api_requests_unlisted counter\n\
        # TYPE kubespaces_reconcile_duration_seconds histogram\n\
        kubespaces_reconcile_duration_seconds_sum 0.5\n\
        kubespaces_reconcile_duration_seconds_count 2\n";

    #[test]
    fn a_declared_family_sums_its_samples_and_an_empty_one_is_zero() {
        assert_eq!(metric_sum(TEXT, "kubespaces_leader"), 1.0);
        assert_eq!(metric_sum(TEXT, "kubespaces_kube_api_requests_total"), 5.0);
        let patch = &["PATCH"];
        let writes = metric_sum_where(TEXT, "kubespaces_kube_api_requests_total", "verb", patch);
        assert_eq!(writes, 2.0);
        assert_eq!(
            metric_sum(TEXT, "kubespaces_kube_api_requests_unlisted_total"),
            0.0
        );
        assert_eq!(
            metric_sum(TEXT, "kubespaces_reconcile_duration_seconds_count"),
            2.0
        );
    }

    #[test]
    #[should_panic(expected = "declares no family kubespaces_reconciles_total")]
    fn a_family_the_text_does_not_declare_fails_rather_than_reading_zero() {
        metric_sum(TEXT, "kubespaces_reconciles_total");
    }
}
