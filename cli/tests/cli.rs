//! The `kubespaces` binary against real Dex, the KubeSpaces server (in the test process, as the
//! chart's ServiceAccount) and the real cluster with the shared operator: the device-flow login
//! with the test playing the user's browser on Dex's pages, the token file, refresh, logout, the
//! errors with their exit codes; and at the chart's door (its server in the cluster, at
//! https://kubespaces.<domain>, Dex on the node's link) a login trusting the local CA and the SPEC
//! walk-through.
//!
//! Needs the harness environment (KUBESPACES_ACCEPTANCE=1, KUBECONFIG, KUBESPACES_OIDC_ISSUER
//! from acceptance/harness/dex.sh, the chart installed), except the test of where a token may go,
//! whose every case is refused before a request.

use std::{
    os::unix::fs::PermissionsExt,
    path::PathBuf,
    process::{Output, Stdio},
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{Pod, ResourceQuota},
    jiff::Timestamp,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams},
};
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server, confirm_device_code_trusting},
    own_share,
    pods::leftovers,
    tenant_cluster::platform_var,
    wait_for, wait_gone,
};
use kubespaces_api::{api::Tenant, names};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const CLI: &str = env!("CARGO_BIN_EXE_kubespaces");

/// One user's CLI: its own config directory (token file) and kubeconfig.
struct User {
    dir: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        User {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config_dir(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    fn credentials(&self) -> PathBuf {
        self.config_dir().join("credentials.json")
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kube/config")
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(CLI);
        c.args(args)
            .env("KUBESPACES_CONFIG_DIR", self.config_dir())
            .env("KUBECONFIG", self.kubeconfig())
            .env_remove("KUBESPACES_SERVER")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().await.expect("run kubespaces")
    }

    /// Runs and expects success; returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        self.ok_with_stderr(args).await.0
    }

    /// Runs and expects success; returns stdout and stderr (where progress goes).
    async fn ok_with_stderr(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "kubespaces {args:?} failed ({:?}): {stderr}",
            out.status.code(),
        );
        (String::from_utf8(out.stdout).unwrap(), stderr)
    }

    /// Runs, expects exit `code` and a one-line error containing `needle`.
    async fn fails(&self, args: &[&str], code: i32, needle: &str) -> String {
        let out = self.run(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "kubespaces {args:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
        assert!(stderr.starts_with("kubespaces: error: "), "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
        stderr
    }

    /// `kubespaces login --no-browser` the way a user runs it: the CLI prints the verification
    /// URL and code, the test plays the user's browser on Dex's real pages, and the login
    /// finishes, saying who is logged in.
    async fn device_login(&self, server: &Server, email: &str) {
        self.device_login_at(&server.url, None, email).await;
    }

    /// The same at the server `url`, trusting the CA in the PEM file `ca` (given to the CLI
    /// with --certificate-authority, and trusted by the test's browser).
    async fn device_login_at(&self, url: &str, ca: Option<&str>, email: &str) {
        let mut args = vec!["login", "--server", url, "--no-browser"];
        if let Some(ca) = ca {
            args.extend(["--certificate-authority", ca]);
        }
        let mut login = self
            .command(&args)
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(login.stderr.take().unwrap()).lines();
        let mut printed = vec![];
        let url = loop {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("login prints the URL")
                .unwrap()
                .unwrap_or_else(|| panic!("login ended early: {printed:?}"));
            printed.push(line.clone());
            if let Some(url) = line.trim().strip_prefix("http") {
                break format!("http{url}");
            }
        };
        let code_line = loop {
            let line = lines.next_line().await.unwrap().unwrap();
            if line.contains("code:") {
                break line;
            }
        };
        let code = code_line.rsplit(' ').next().unwrap().to_owned();
        assert!(
            url.contains("/device") && url.contains(&code),
            "URL {url} carries the code {code}"
        );
        // The browser's part, on Dex's real pages.
        let page = confirm_device_code_trusting(&url, email, ca).await;
        assert!(
            page.contains("Login Successful") || page.contains("successful"),
            "{page}"
        );
        let status = tokio::time::timeout(Duration::from_secs(60), login.wait())
            .await
            .expect("login finishes once the code is confirmed")
            .unwrap();
        let mut rest = vec![];
        while let Ok(Some(l)) = lines.next_line().await {
            rest.push(l);
        }
        assert!(status.success(), "login: {rest:?}");
        assert!(
            rest.iter().any(|l| l.contains(&format!("as {email}"))),
            "{rest:?}"
        );
    }

    /// Logged in without the device flow (for tests about other things): Dex's tokens for
    /// `email`, written where `login` writes them.
    async fn log_in_directly(&self, dex: &Dex, server: &Server, email: &str) {
        let tokens = dex.token_response(email, &dex.client_id).await;
        let credentials = json!({
            "server": server.url, "issuer": dex.issuer, "clientId": dex.client_id,
            "idToken": tokens["id_token"], "refreshToken": tokens["refresh_token"],
        });
        std::fs::create_dir_all(self.config_dir()).unwrap();
        std::fs::write(self.credentials(), credentials.to_string()).unwrap();
    }

    fn stored(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.credentials()).unwrap()).unwrap()
    }

    fn store(&self, credentials: &Value) {
        std::fs::write(self.credentials(), credentials.to_string()).unwrap();
    }

    /// Runs with KUBESPACES_SERVER set (instead of --server).
    async fn run_with_server_env(&self, server: &str, args: &[&str]) -> Output {
        self.command(args)
            .env("KUBESPACES_SERVER", server)
            .output()
            .await
            .expect("run kubespaces")
    }
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// A command line clap refused (exit 2), naming `needles`.
fn refused_usage(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
    }
}

#[tokio::test]
async fn device_login_stores_tokens_0600_refreshes_them_and_logout_removes_them() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    // dave: no other test logs in as him (Dex keeps one refresh token per user and client).
    let dave = User::new();

    dave.device_login(&server, "dave@example.com").await;

    assert_eq!(mode(&dave.credentials()), 0o600, "the token file is 0600");
    assert_eq!(
        mode(&dave.config_dir()),
        0o700,
        "the config directory the CLI created is 0700"
    );
    let stored = dave.stored();
    assert_eq!(
        stored["server"],
        json!(server.url),
        "the login records the server its tokens are for"
    );
    assert!(
        stored["refreshToken"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{stored}"
    );
    assert!(dave.ok(&["tenant", "list"]).await.starts_with("NAME"));

    // An ID token past its expiry is refreshed before use, without a new login.
    let expired = {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let old = stored["idToken"].as_str().unwrap();
        let mut parts = old.split('.');
        let header = parts.next().unwrap();
        let mut claims: Value =
            serde_json::from_slice(&b64.decode(parts.next().unwrap()).unwrap()).unwrap();
        claims["exp"] = json!(jiff::Timestamp::now().as_second() - 60);
        format!(
            "{header}.{}.{}",
            b64.encode(claims.to_string()),
            parts.next().unwrap()
        )
    };
    let mut c = stored.clone();
    c["idToken"] = json!(expired);
    dave.store(&c);
    // Widened by someone: the refresh writes a fresh 0600 file in its place.
    std::fs::set_permissions(dave.credentials(), std::fs::Permissions::from_mode(0o644)).unwrap();
    dave.ok(&["tenant", "list"]).await;
    let refreshed = dave.stored();
    assert_ne!(
        refreshed["idToken"],
        json!(expired),
        "a new ID token was stored"
    );
    assert_ne!(refreshed["idToken"], stored["idToken"]);
    assert_eq!(
        mode(&dave.credentials()),
        0o600,
        "0600 again after the refresh"
    );

    // A token that looks fresh but the server refuses (revoked, rotated keys): refreshed on the
    // 401 and the request repeated.
    let mut c = refreshed.clone();
    let valid = refreshed["idToken"].as_str().unwrap();
    let forged = format!("{}.AAAA", valid.rsplit_once('.').unwrap().0);
    c["idToken"] = json!(forged);
    dave.store(&c);
    assert!(dave.ok(&["tenant", "list"]).await.starts_with("NAME"));
    assert_ne!(dave.stored()["idToken"], json!(forged));

    // A refresh token the issuer no longer honours: log in again, exit 3.
    let mut c = dave.stored();
    c["idToken"] = json!("garbage");
    c["refreshToken"] = json!("revoked");
    dave.store(&c);
    dave.fails(&["tenant", "list"], 3, "kubespaces login").await;

    dave.ok(&["logout"]).await;
    assert!(
        !dave.credentials().exists(),
        "logout removes the token file"
    );
    dave.fails(&["tenant", "list"], 3, "not logged in").await;
}

const EXISTING_KUBECONFIG: &str = "apiVersion: v1
# contexts I already had
clusters:
- cluster:
    server: https://prod.example.com:6443   # production
  name: prod
contexts:
- context:
    cluster: prod
    namespace: web
    user: me
  name: prod
current-context: prod
kind: Config
preferences: {}
users:
- name: me
  user:
    token: my-own-token
";

/// The chart's server at its door, https://kubespaces.<domain>, once it answers (its route
/// programmed, its name resolved by hosts-sync.py): its URL, the CA file its certificate chains
/// to, and its /.well-known/kubespaces.
async fn chart_door() -> (String, String, Value) {
    let door = format!("https://kubespaces.{}", platform_var("KUBESPACES_DOMAIN"));
    let ca = platform_var("KUBESPACES_NODE_OIDC_CA_FILE");
    let door_client = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(&ca).unwrap()).expect("a PEM CA"),
        )
        .build()
        .unwrap();
    let well_known: Value = wait_for(
        "the chart's server at its door",
        Duration::from_secs(120),
        || async {
            let response = door_client
                .get(format!("{door}/.well-known/kubespaces"))
                .send()
                .await
                .ok()?;
            response.status().is_success().then_some(())?;
            response.json().await.ok()
        },
    )
    .await;
    (door, ca, well_known)
}

/// The chart's server at its door: https://kubespaces.<domain>, through the cluster's Gateway with
/// a certificate of the cluster's CA, its issuer Dex on the node's link (dex.sh node). A user
/// logs in there trusting that CA with --certificate-authority, nothing added to the machine's
/// trust store; the login records the CA, so later commands and refreshes trust it without the
/// flag. Without it, the CLI refuses the door's certificate and sends nothing.
#[tokio::test]
async fn a_login_at_the_chart_s_door_trusts_the_local_ca_given_once() {
    let _env = Env::get();
    let (door, ca, well_known) = chart_door().await;
    let issuer = platform_var("KUBESPACES_NODE_OIDC_ISSUER");
    assert_eq!(well_known["issuer"], json!(issuer), "{well_known}");

    // Without the CA: the door's certificate is not trusted, and nothing is stored.
    let stranger = User::new();
    stranger
        .fails(
            &["login", "--server", &door, "--no-browser"],
            4,
            "certificate",
        )
        .await;
    assert!(!stranger.credentials().exists());

    // bob: on this Dex the walk-through below logs alice in and the portal's door test
    // (acceptance/tests/server.rs) dave, and Dex keeps one refresh token per user and client:
    // another login of either would revoke theirs.
    let bob = User::new();
    bob.device_login_at(&door, Some(&ca), "bob@example.com")
        .await;
    let stored = bob.stored();
    assert_eq!(stored["server"], json!(door));
    assert_eq!(
        stored["certificateAuthority"],
        json!(std::fs::read_to_string(&ca).unwrap()),
        "the login records the CA it trusted"
    );
    // Later commands need no flag: the server in the cluster verified the token with its
    // issuer's keys (fetched through the node's guard, trusting the CA the chart gave it).
    assert!(bob.ok(&["tenant", "list"]).await.starts_with("NAME"));
    bob.fails(&["tenant", "get", "door-nothing-here"], 5, "not found")
        .await;
    // A token the server refuses is refreshed at the issuer, which only the recorded CA lets
    // the CLI trust, and the command goes through.
    let mut forged = bob.stored();
    forged["idToken"] = unsigned_login(&door, &issuer)["idToken"].clone();
    bob.store(&forged);
    assert!(bob.ok(&["tenant", "list"]).await.starts_with("NAME"));
    assert_ne!(bob.stored()["idToken"], forged["idToken"], "refreshed");
}

fn lines_in_order(haystack: &str, needles: &str) -> bool {
    let mut rest = haystack.lines();
    needles.lines().all(|n| rest.any(|l| l == n))
}

#[tokio::test]
async fn the_spec_walk_through() {
    let env = Env::get();
    // The walk-through is about a tenant with its own control plane, at its public URL: the
    // platform Gateway must be there (make test sets it up).
    platform_var("KUBESPACES_API_GATEWAY");
    // At the door a platform team gives its users: the chart's server at
    // https://kubespaces.<domain>, its certificate from the cluster's CA.
    let (door, ca, _) = chart_door().await;
    let tenants = env.tenants().await;
    let _ = tenants.delete("team-atlas", &DeleteParams::default()).await;
    wait_gone(&tenants, "team-atlas", Duration::from_secs(600)).await;
    let alice = User::new();
    alice
        .device_login_at(&door, Some(&ca), "alice@example.com")
        .await;
    std::fs::create_dir_all(alice.kubeconfig().parent().unwrap()).unwrap();
    // Her kubeconfig is a link into her dotfiles, which the merge writes through (as kubectl).
    let dotfiles = alice.dir.path().join("kube/dotfiles-config");
    std::fs::write(&dotfiles, EXISTING_KUBECONFIG).unwrap();
    std::os::unix::fs::symlink(&dotfiles, alice.kubeconfig()).unwrap();

    alice
        .ok(&[
            "tenant",
            "create",
            "team-atlas",
            "--cpu",
            "8",
            "--memory",
            "16Gi",
        ])
        .await;

    let (table, progress) = alice
        .ok_with_stderr(&["tenant", "get", "team-atlas", "--wait", "--timeout", "10m"])
        .await;
    // Not on a terminal, --wait shows its progress one line per change: the tenant on its way,
    // then Ready.
    let steps: Vec<&str> = progress.lines().collect();
    assert!(
        steps.len() >= 2
            && steps.iter().all(|l| l.starts_with("team-atlas: "))
            && steps.windows(2).all(|w| w[0] != w[1])
            && steps.last() == Some(&"team-atlas: Ready"),
        "--wait's progress: {progress}"
    );
    let tenant = tenants.get("team-atlas").await.unwrap();
    let api = tenant
        .status
        .as_ref()
        .and_then(|s| s.endpoints.as_ref())
        .and_then(|e| e.api.clone())
        .expect("the operator published the API URL");
    let mut rows = table.lines();
    assert_eq!(rows.next(), Some("NAME         PHASE   API"), "{table}");
    assert_eq!(
        rows.next(),
        Some(format!("team-atlas   Ready   {api}").as_str()),
        "{table}"
    );
    // What she asked for is what caps her namespace: the quota's hard limits, less what the
    // tenant's own control plane takes, are 8 CPUs and 16Gi.
    let quota =
        Api::<ResourceQuota>::namespaced(env.client().await, &names::namespace("team-atlas"))
            .get(names::QUOTA)
            .await
            .expect("the tenant's quota");
    for (key, asked) in [("requests.cpu", "8"), ("requests.memory", "16Gi")] {
        assert_eq!(own_share(&quota, &tenant, "hard", key), asked, "{key}");
    }

    alice
        .ok(&["tenant", "kubeconfig", "team-atlas", "--merge"])
        .await;
    let merged = std::fs::read_to_string(alice.kubeconfig()).unwrap();
    assert!(
        lines_in_order(&merged, EXISTING_KUBECONFIG),
        "every line kept, in order:\n{merged}"
    );
    assert_eq!(mode(&dotfiles), 0o600);
    let link = std::fs::symlink_metadata(alice.kubeconfig()).unwrap();
    assert!(
        link.is_symlink(),
        "her link is kept, the file it points to merged"
    );
    // Merging again updates what kubespaces wrote, without --force.
    alice
        .ok(&["tenant", "kubeconfig", "team-atlas", "--merge"])
        .await;
    let again = std::fs::read_to_string(alice.kubeconfig()).unwrap();
    assert!(lines_in_order(&again, EXISTING_KUBECONFIG), "{again}");
    // A context of the tenant's name that the user made is theirs: not replaced without --force,
    // and the file is left byte for byte.
    let mine = alice.dir.path().join("kube/mine");
    let with_my_context = EXISTING_KUBECONFIG.replace(
        "  name: prod\ncurrent-context",
        "  name: prod\n- context:\n    cluster: prod\n    user: me\n  name: team-atlas\ncurrent-context",
    );
    assert_ne!(with_my_context, EXISTING_KUBECONFIG);
    std::fs::write(&mine, &with_my_context).unwrap();
    let mine_arg = mine.to_str().unwrap();
    let merge_mine = [
        "tenant",
        "kubeconfig",
        "team-atlas",
        "--merge",
        "--kubeconfig",
        mine_arg,
    ];
    alice
        .fails(
            &merge_mine,
            1,
            "the kubeconfig already has context \"team-atlas\" that kubespaces did not write for \
             tenant team-atlas; nothing was changed: --force replaces it",
        )
        .await;
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), with_my_context);
    alice.ok(&[&merge_mine[..], &["--force"]].concat()).await;
    let forced: Value = serde_yaml::from_str(&std::fs::read_to_string(&mine).unwrap()).unwrap();
    let context = forced["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "team-atlas")
        .unwrap();
    assert_eq!(context["context"]["user"], "team-atlas", "{forced}");

    let kubectl = |args: &[&str]| {
        let out = std::process::Command::new(&env.kubectl)
            .args(args)
            .env("KUBECONFIG", alice.kubeconfig())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    kubectl(&["config", "use-context", "team-atlas"]);
    // Answered by the tenant's own control plane: the node its pods run on, the host's node
    // where its namespace's pods are scheduled, and no other (it lists a node once a pod of its
    // own, its CoreDNS, is scheduled there: that may follow Ready by a moment).
    let host_pods = Api::<Pod>::namespaced(env.client().await, &names::namespace("team-atlas"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut expected: Vec<String> = host_pods
        .items
        .iter()
        .filter_map(|p| Some(format!("node/{}", p.spec.as_ref()?.node_name.as_ref()?)))
        .collect();
    expected.sort();
    expected.dedup();
    let nodes = wait_for("a node in the tenant", Duration::from_secs(90), || async {
        let nodes = kubectl(&["get", "nodes", "-o", "name"]);
        nodes.starts_with("node/").then_some(nodes)
    })
    .await;
    let mut seen: Vec<String> = nodes.lines().map(str::to_owned).collect();
    seen.sort();
    assert_eq!(
        seen, expected,
        "`kubectl get nodes` in context team-atlas lists the nodes its pods run on"
    );
    // The other contexts are still there and untouched.
    assert!(
        kubectl(&["config", "get-contexts", "-o", "name"])
            .lines()
            .any(|l| l == "prod")
    );

    let list = alice.ok(&["tenant", "list"]).await;
    assert!(list.lines().any(|l| l.starts_with("team-atlas ")), "{list}");
    let json: Value = serde_json::from_str(
        &alice
            .ok(&["tenant", "get", "team-atlas", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(json["spec"]["owner"], "alice@example.com");
    let yaml = alice.ok(&["tenant", "list", "-o", "yaml"]).await;
    assert!(yaml.contains("name: team-atlas"), "{yaml}");
    sleep_and_wake(&alice, &tenants, "team-atlas", &api).await;

    alice
        .ok(&[
            "tenant",
            "delete",
            "team-atlas",
            "--wait",
            "--timeout",
            "10m",
        ])
        .await;
    assert!(
        tenants.get_opt("team-atlas").await.unwrap().is_none(),
        "gone when delete --wait returns"
    );
    let left = leftovers(&env, "team-atlas", &names::namespace("team-atlas"));
    assert!(left.is_empty(), "left of team-atlas: {left:?}");
}

/// The time in `annotation` of tenant `name` as kube reads it, once it is `since` or later.
async fn requested_since(
    tenants: &Api<Tenant>,
    name: &str,
    annotation: &str,
    since: Timestamp,
) -> Timestamp {
    wait_for(
        &format!("{annotation} on {name}"),
        Duration::from_secs(10),
        || async {
            let t = tenants.get(name).await.ok()?;
            let at: Timestamp = t.annotations().get(annotation)?.parse().ok()?;
            (at >= since).then_some(at)
        },
    )
    .await
}

/// `tenant sleep --wait`, then `tenant wake` and `wake --wait`, on a Ready tenant whose API is
/// `api`: each request is its annotation on the Tenant, and each wait returns with the phase it
/// waited for in the row it prints.
async fn sleep_and_wake(user: &User, tenants: &Api<Tenant>, name: &str, api: &str) {
    let before = Timestamp::now();
    let (table, progress) = user
        .ok_with_stderr(&["tenant", "sleep", name, "--wait", "--timeout", "5m"])
        .await;
    requested_since(tenants, name, names::SLEEP_REQUESTED_ANNOTATION, before).await;
    assert_eq!(
        progress.lines().last(),
        Some(format!("{name}: Asleep").as_str()),
        "{progress}"
    );
    let row = |phase: &str| format!("{name}   {phase}   {api}");
    assert_eq!(
        table.lines().nth(1),
        Some(row("Asleep").as_str()),
        "{table}"
    );
    let asleep = tenants.get(name).await.unwrap();
    assert_eq!(asleep.phase(), Some("Asleep"), "as kube reads it");
    // The list's columns are as wide as its longest name: compared by word.
    let list = user.ok(&["tenant", "list"]).await;
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().eq([name, "Asleep", api])),
        "{list}"
    );

    let before = Timestamp::now();
    let (_, said) = user.ok_with_stderr(&["tenant", "wake", name]).await;
    assert_eq!(said, format!("tenant {name} is waking\n"));
    requested_since(tenants, name, names::WAKE_REQUESTED_ANNOTATION, before).await;
    let (table, _) = user
        .ok_with_stderr(&["tenant", "wake", name, "--wait", "--timeout", "5m"])
        .await;
    assert_eq!(table.lines().nth(1), Some(row("Ready").as_str()), "{table}");
    let awake = tenants.get(name).await.unwrap();
    assert!(
        awake.is_ready() && awake.phase() == Some("Ready"),
        "as kube reads it"
    );
}

#[tokio::test]
async fn errors_are_one_line_with_their_exit_codes() {
    let env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let tenants = env.tenants().await;
    let _ = tenants.delete("cli-errors", &DeleteParams::default()).await;
    wait_gone(&tenants, "cli-errors", Duration::from_secs(600)).await;

    let nobody = User::new();
    nobody
        .fails(
            &["tenant", "list"],
            3,
            "not logged in: run `kubespaces login --server URL`",
        )
        .await;

    let bob = User::new();
    bob.log_in_directly(&dex, &server, "bob@example.com").await;
    // A server that is not there (bob's login, recorded for it, so the token may go there; a
    // copy, as a second login would revoke bob's refresh token).
    let stranded = User::new();
    std::fs::create_dir_all(stranded.config_dir()).unwrap();
    let mut c = bob.stored();
    c["server"] = json!("http://127.0.0.1:9");
    stranded.store(&c);
    stranded
        .fails(
            &["tenant", "list"],
            4,
            "cannot reach the KubeSpaces server at http://127.0.0.1:9",
        )
        .await;
    // --server may name the server of the login, spelt as the user likes.
    let same = format!("{}/", server.url);
    assert!(
        bob.ok(&["tenant", "list", "--server", &same])
            .await
            .starts_with("NAME")
    );
    bob.fails(
        &["tenant", "get", "no-such-tenant"],
        5,
        "tenant \"no-such-tenant\" not found",
    )
    .await;
    bob.fails(
        &[
            "tenant",
            "create",
            "cli-errors",
            "--cpu",
            "lots",
            "--memory",
            "1Gi",
        ],
        7,
        "must be a Kubernetes quantity",
    )
    .await;
    bob.ok(&[
        "tenant",
        "create",
        "cli-errors",
        "--cpu",
        "1",
        "--memory",
        "1Gi",
    ])
    .await;
    bob.fails(
        &[
            "tenant",
            "create",
            "cli-errors",
            "--cpu",
            "1",
            "--memory",
            "1Gi",
        ],
        6,
        "tenant \"cli-errors\" already exists",
    )
    .await;
    bob.fails(
        &["tenant", "kubeconfig", "cli-errors"],
        9,
        "has no kubeconfig yet",
    )
    .await;
    // Its control plane takes longer than a second to start: the progress so far, then the
    // error on one line.
    let out = bob
        .run(&["tenant", "get", "cli-errors", "--wait", "--timeout", "1s"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{stderr}");
    assert!(
        stderr.lines().last().is_some_and(|l| l.starts_with(
            "kubespaces: error: tenant cli-errors was not Ready within 1s (last seen: cli-errors: "
        )),
        "{stderr}"
    );
    // Only an admin may name another owner.
    bob.fails(
        &[
            "tenant",
            "create",
            "cli-errors-for-alice",
            "--cpu",
            "1",
            "--memory",
            "1Gi",
            "--owner",
            "alice@example.com",
        ],
        10,
        "only an admin may create a tenant for another owner",
    )
    .await;
    // Someone else's tenant is as unknown as a missing one.
    let alice = User::new();
    alice
        .log_in_directly(&dex, &server, "alice@example.com")
        .await;
    alice
        .fails(&["tenant", "delete", "cli-errors"], 5, "not found")
        .await;
    // Nor may she ask it to sleep or wake: nothing is written on it.
    for request in ["sleep", "wake"] {
        alice
            .fails(&["tenant", request, "cli-errors"], 5, "not found")
            .await;
    }
    let untouched = tenants.get("cli-errors").await.unwrap();
    for annotation in [
        names::SLEEP_REQUESTED_ANNOTATION,
        names::WAKE_REQUESTED_ANNOTATION,
    ] {
        assert!(
            !untouched.annotations().contains_key(annotation),
            "{annotation} on someone else's tenant"
        );
    }
    // Usage errors are clap's (exit 2).
    assert_eq!(bob.run(&["tenant", "create"]).await.status.code(), Some(2));
    // Completions are generated.
    assert!(
        bob.ok(&["completions", "bash"])
            .await
            .contains("kubespaces")
    );

    bob.ok(&["tenant", "delete", "cli-errors", "--wait"]).await;
}

/// A login whose ID token is fresh for an hour (unsigned: the CLI reads its expiry, only servers
/// check signatures; none is reached here), issued for `server` by `issuer`.
fn unsigned_login(server: &str, issuer: &str) -> Value {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims =
        json!({"exp": jiff::Timestamp::now().as_second() + 3600, "email": "erin@example.com"});
    json!({
        "server": server, "issuer": issuer, "clientId": "kubespaces",
        "idToken": format!("{}.{}.unsigned", b64.encode(r#"{"alg":"RS256"}"#), b64.encode(claims.to_string())),
        "refreshToken": "refresh-token",
    })
}

/// `what`, which must not take long: a refusal waits on no one, so a wait means a request was sent
/// (the listeners below accept connections but never answer). The child is killed on timeout.
async fn at_once<T>(what: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), what)
        .await
        .expect("refused at once, without waiting on a server")
}

/// Needs no cluster, Dex or server: everything here is refused before the first request, and
/// loopback listeners (the server the login was issued for, another one, the issuer) show that
/// none arrived.
#[tokio::test]
async fn a_token_goes_only_to_the_server_it_was_issued_for_and_only_over_https() {
    let listener = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        (l, url)
    };
    let (issuing, issuing_url) = listener();
    let (other, other_url) = listener();
    let (issuer, issuer_url) = listener();
    let erin = User::new();
    std::fs::create_dir_all(erin.config_dir()).unwrap();
    erin.store(&unsigned_login(&issuing_url, &issuer_url));
    let before = std::fs::read(erin.credentials()).unwrap();

    let wrong = format!(
        "the stored login is for {issuing_url}, not {other_url}; its token goes only to the server \
         it was issued for: to use {other_url}, run `kubespaces login --server {other_url}`"
    );
    let to_other: [&str; 4] = ["tenant", "list", "--server", &other_url];
    at_once(erin.fails(&to_other, 11, &wrong)).await;
    let out = at_once(erin.run_with_server_env(&other_url, &["tenant", "get", "anything"])).await;
    assert_eq!(out.status.code(), Some(11));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&wrong));
    // localhost is loopback too, but not the origin the login was issued for.
    let port = issuing.local_addr().unwrap().port();
    let localhost = format!("http://localhost:{port}");
    let to_localhost: [&str; 4] = ["tenant", "list", "--server", &localhost];
    at_once(erin.fails(&to_localhost, 11, "the stored login is for")).await;
    // Even a token that must be refreshed first: refused before the refresh.
    let mut c = erin.stored();
    c["idToken"] = json!("expired");
    erin.store(&c);
    at_once(erin.fails(&to_other, 11, &wrong)).await;
    erin.store(&serde_json::from_slice(&before).unwrap());
    for (name, l) in [
        ("the other server", &other),
        ("the login's server", &issuing),
        ("the issuer", &issuer),
    ] {
        assert_eq!(
            l.accept().map(|_| ()).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "no connection reached {name}"
        );
    }

    // A token file that records no server is sent to none.
    let mut c = erin.stored();
    c.as_object_mut().unwrap().remove("server");
    erin.store(&c);
    let unrecorded = "the stored login does not record which server it was issued for";
    at_once(erin.fails(&["tenant", "list"], 3, unrecorded)).await;
    let to_issuing: [&str; 4] = ["tenant", "list", "--server", &issuing_url];
    let needle = format!("not logged in to {issuing_url}: {unrecorded}");
    at_once(erin.fails(&to_issuing, 3, &needle)).await;

    // Plain http to anything but loopback is refused before any request: --server,
    // KUBESPACES_SERVER, login, and an issuer recorded in the token file.
    let refusal = [
        "--server (or KUBESPACES_SERVER) http://kubespaces.invalid must use https://",
        "use --server https://kubespaces.invalid",
    ];
    let plain = "http://kubespaces.invalid";
    let out = at_once(erin.run(&["tenant", "list", "--server", plain])).await;
    refused_usage(&out, &refusal);
    let out = at_once(erin.run_with_server_env(plain, &["tenant", "list"])).await;
    refused_usage(&out, &refusal);
    let out = at_once(User::new().run(&["login", "--server", plain, "--no-browser"])).await;
    refused_usage(&out, &refusal);
    let mut c = unsigned_login(&issuing_url, "http://dex.invalid/dex");
    c["idToken"] = json!("expired");
    erin.store(&c);
    let needle =
        "the OIDC issuer the KubeSpaces server publishes http://dex.invalid/dex must use https://";
    at_once(erin.fails(&["tenant", "list"], 1, needle)).await;
    assert_eq!(erin.stored(), c, "the refresh token was not spent");
}
