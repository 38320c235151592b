//! Getting the provider and its credentials the ways users do: `init` from a filesystem mirror,
//! and configuration from the environment for a least-privilege identity.

use super::*;

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn init_installs_the_provider_from_a_filesystem_mirror() {
    let out = Command::new(workspace::BIN)
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        workspace::PROVIDER_VERSION,
        "mirrored under the version the provider reports"
    );
    let ws = Workspace::with_filesystem_mirror("mirror");
    let api = tenants().await;
    let name = format!("acc-mirror-{}", std::process::id());

    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["init"]);
    let lock = std::fs::read_to_string(ws.dir.join(".terraform.lock.hcl"))
        .expect("init writes the dependency lock file");
    let lock = collapsed(lock.as_bytes());
    assert!(
        workspace::PROVIDER_HOSTS
            .iter()
            .any(|h| lock.contains(&format!("provider \"{h}/kubespaces/kubespaces\""))),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("version = \"{}\"", workspace::PROVIDER_VERSION)),
        "{lock}"
    );
    assert!(lock.contains("\"h1:"), "a hash of the package: {lock}");

    ws.ok(&["apply", "-auto-approve"]);
    assert_eq!(ws.state_value("kubespaces_tenant.t", "phase"), "Ready");
    assert!(api.get(&name).await.unwrap().is_ready());
    assert_eq!(ws.plan_code(), 0, "plan after apply is empty");
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
}

/// The provider configured from the environment alone, as CI systems do it: `KUBE_HOST`,
/// `KUBE_TOKEN` and `KUBE_CLUSTER_CA_CERT_DATA`, for a ServiceAccount that may manage Tenants and
/// read their published kubeconfig, and nothing else. The token reaches neither Terraform's log
/// nor its state. Both are searched while they hold what a leak would sit beside (the state
/// while the tenant is in it, its sensitive kubeconfig included; the log with the provider's own
/// lines), and the search is shown to find what is there.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn host_token_and_ca_from_the_environment_with_least_privilege() {
    let pid = std::process::id();
    let api = tenants().await;
    let name = format!("acc-env-{pid}");
    let identity = service_account::TenantManager::new(&format!("kubespaces-acc-tf-{pid}")).await;
    let cluster = service_account::connection();
    let mut ws = Workspace::new("env");
    ws.set_env("KUBE_HOST", &cluster.host);
    ws.set_env("KUBE_TOKEN", &identity.token);
    ws.set_env("KUBE_CLUSTER_CA_CERT_DATA", &cluster.ca);
    // No kubeconfig to fall back on.
    ws.set_env("KUBECONFIG", "/nonexistent/kubeconfig");
    let log = ws.dir.join("terraform.log");
    ws.set_env("TF_LOG", "trace");
    ws.set_env("TF_LOG_PATH", &log.display().to_string());
    ws.write_with_provider_config("", &tenant_tf(&name, "1"));
    let token = Secret::new("the provider's token", &identity.token);

    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());
    assert_eq!(ws.plan_code(), 0);
    token.assert_absent("the state after apply", &ws.state_files());

    // A secret that belongs in the state: the tenant kubeconfig (sensitive, and stored as is),
    // read by the provider with `get` on the operator's Secret in the tenant's namespace.
    identity.allow_kubeconfig(&name).await;
    let published = published_kubeconfig(&names::namespace(&name), KUBECONFIG_SECRET).await;
    let tenant_token = kubeconfig_token(&published);
    let published_token = Secret::new("the tenant kubeconfig's token", &tenant_token);
    ws.ok(&["apply", "-refresh-only", "-auto-approve"]);
    let state = ws.state_files();
    assert!(
        published_token.found_in(&state),
        "the search finds a secret that is in the state: {}",
        published_token.what
    );
    token.assert_absent("the state after refresh", &state);

    ws.write_with_provider_config("", &tenant_tf(&name, "2"));
    ws.ok(&["apply", "-auto-approve"]);
    assert_eq!(api.get(&name).await.unwrap().spec.resources.cpu.0, "2");
    let state = ws.state_files();
    assert!(published_token.found_in(&state));
    token.assert_absent("the state after update", &state);
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(api.get_opt(&name).await.unwrap().is_none());

    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("ReadResource"),
        "the trace log covers the provider's calls"
    );
    // The provider's own log lines, with their fields, are in the log too: a token it logged
    // would be.
    assert!(
        log.lines()
            .any(|l| l.contains("tenant created") && l.contains(&name)),
        "the provider's lines are in the trace log"
    );
    token.assert_absent("the trace log", &log);
}

/// The bearer token of a kubeconfig's (first) user.
fn kubeconfig_token(kubeconfig: &str) -> String {
    use secrecy::ExposeSecret;
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    parsed.auth_infos[0]
        .auth_info
        .as_ref()
        .and_then(|a| a.token.as_ref())
        .expect("a token in the tenant kubeconfig")
        .expose_secret()
        .to_owned()
}

/// A value that must not leak, in the forms it would take in a file: as is, JSON-escaped (state
/// and log lines are JSON), and base64-encoded (as in a kubeconfig or a Secret).
struct Secret<'a> {
    what: &'a str,
    forms: Vec<String>,
}

impl<'a> Secret<'a> {
    fn new(what: &'a str, value: &str) -> Self {
        use base64::Engine as _;
        assert!(value.len() >= 16, "{what} is long enough to search for");
        let json = serde_json::to_string(value).unwrap();
        let forms = vec![
            value.to_owned(),
            json.trim_matches('"').to_owned(),
            base64::engine::general_purpose::STANDARD.encode(value),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value),
        ];
        Self { what, forms }
    }

    fn found_in(&self, text: &str) -> bool {
        self.forms.iter().any(|f| text.contains(f.as_str()))
    }

    fn assert_absent(&self, place: &str, text: &str) {
        assert!(!text.is_empty(), "{place} is empty");
        assert!(!self.found_in(text), "{} is in {place}", self.what);
    }
}
