//! OIDC for the server and CLI tests: Dex (started by `acceptance/harness/dex.sh`, users in its
//! config), the browser's part of Dex's login pages, a KubeSpaces server run in the test process
//! (the real router, verifier and watch cache, under the chart's `kubespaces-server`
//! ServiceAccount), and a test issuer whose key the test holds, to sign tokens Dex never would.

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use k8s_openapi::api::{
    authentication::v1::{TokenRequest, TokenRequestSpec},
    core::v1::ServiceAccount,
};
use kube::{Api, Client, api::PostParams};
use kubespaces_server::{
    app::serve,
    auth::Verifier,
    config::{Config, Limits},
    portal::seal::Sealer,
    public_url::PublicUrl,
    rate::Rate,
    state::AppState,
    store::Tenants,
};
use serde_json::Value;

/// Every Dex user's password (dex.sh).
pub const PASSWORD: &str = "password";
/// The admin group of dex.sh's admin user.
pub const ADMIN_GROUP: &str = "kubespaces-admins";
/// Namespace of the chart's release (its ServiceAccounts).
pub const RELEASE_NAMESPACE: &str = "kubespaces-system";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The running Dex.
#[derive(Clone)]
pub struct Dex {
    pub issuer: String,
    pub client_id: String,
}

impl Dex {
    pub fn get() -> Dex {
        let issuer = var("KUBESPACES_OIDC_ISSUER").unwrap_or_else(|| {
            panic!(
                "KUBESPACES_OIDC_ISSUER is not set: start Dex with `acceptance/harness/dex.sh start \
                 <state dir>` and source <state dir>/env"
            )
        });
        Dex {
            issuer,
            client_id: var("KUBESPACES_OIDC_CLIENT_ID").unwrap_or_else(|| "kubespaces".into()),
        }
    }

    async fn discovery(&self) -> Value {
        reqwest::get(format!("{}/.well-known/openid-configuration", self.issuer))
            .await
            .expect("Dex discovery")
            .json()
            .await
            .expect("Dex discovery JSON")
    }

    /// An ID token for `email` by the password grant (for tests of what the server does with a
    /// token, not of how one gets it).
    pub async fn token(&self, email: &str) -> String {
        self.token_for_client(email, &self.client_id).await
    }

    pub async fn token_for_client(&self, email: &str, client_id: &str) -> String {
        let response = self.token_response(email, client_id).await;
        response["id_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no id_token from Dex: {response}"))
            .to_owned()
    }

    /// Dex's whole token response (ID, access and refresh tokens) for `email`.
    pub async fn token_response(&self, email: &str, client_id: &str) -> Value {
        let token_url = self.discovery().await["token_endpoint"]
            .as_str()
            .expect("token_endpoint")
            .to_owned();
        let response: Value = reqwest::Client::new()
            .post(token_url)
            .form(&[
                ("grant_type", "password"),
                ("username", email),
                ("password", PASSWORD),
                ("client_id", client_id),
                ("scope", "openid email groups profile offline_access"),
            ])
            .send()
            .await
            .expect("Dex token request")
            .json()
            .await
            .expect("Dex token JSON");
        response
    }

    /// The JWKS Dex signs with.
    pub async fn jwks(&self) -> Value {
        let uri = self.discovery().await["jwks_uri"]
            .as_str()
            .expect("jwks_uri")
            .to_owned();
        reqwest::get(uri).await.unwrap().json().await.unwrap()
    }
}

/// The first form of an HTML page: its action (resolved against `base`) and its fields.
fn form(page: &str, base: &reqwest::Url) -> (reqwest::Url, HashMap<String, String>) {
    let start = page
        .find("<form")
        .unwrap_or_else(|| panic!("no form in:\n{page}"));
    let end = page[start..]
        .find("</form>")
        .map_or(page.len(), |e| start + e);
    let form = &page[start..end];
    let attr = |tag: &str, name: &str| -> Option<String> {
        let key = format!("{name}=\"");
        let at = tag.find(&key)? + key.len();
        let value = &tag[at..at + tag[at..].find('"')?];
        Some(
            value
                .replace("&amp;", "&")
                .replace("&#43;", "+")
                .replace("&#34;", "\""),
        )
    };
    let tag_end = form.find('>').unwrap_or(form.len());
    let action = attr(&form[..tag_end], "action").unwrap_or_default();
    let mut fields = HashMap::new();
    for input in form.split("<input").skip(1) {
        let tag = &input[..input.find('>').unwrap_or(input.len())];
        if let Some(name) = attr(tag, "name") {
            fields.insert(name, attr(tag, "value").unwrap_or_default());
        }
    }
    (base.join(&action).expect("form action URL"), fields)
}

/// Plays the user's browser for the device flow: opens the verification page, confirms the
/// code, logs in on Dex's password page. Returns the final page's text.
pub async fn confirm_device_code(verification_url: &str, email: &str) -> String {
    confirm_device_code_trusting(verification_url, email, None).await
}

/// The same, with a browser that trusts the CA in the PEM file `ca` (an issuer whose
/// certificate the cluster's CA signed: dex.sh's node mode).
pub async fn confirm_device_code_trusting(
    verification_url: &str,
    email: &str,
    ca: Option<&str>,
) -> String {
    let mut browser = reqwest::Client::builder().cookie_store(true);
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).unwrap_or_else(|e| panic!("read {ca}: {e}"));
        for certificate in reqwest::Certificate::from_pem_bundle(&pem).expect("a PEM CA") {
            browser = browser.add_root_certificate(certificate);
        }
    }
    let browser = browser.build().unwrap();
    let page = browser
        .get(verification_url)
        .send()
        .await
        .expect("device page");
    let url = page.url().clone();
    let text = page.text().await.unwrap();
    // The device page, with the code filled in from the URL: submit it.
    let (action, fields) = form(&text, &url);
    let page = browser
        .post(action)
        .form(&fields)
        .send()
        .await
        .expect("submit code");
    let url = page.url().clone();
    let text = page.text().await.unwrap();
    // Dex's login page (the local password database).
    let (action, mut fields) = form(&text, &url);
    fields.insert("login".into(), email.into());
    fields.insert("password".into(), PASSWORD.into());
    let page = browser
        .post(action)
        .form(&fields)
        .send()
        .await
        .expect("log in");
    assert!(
        page.status().is_success(),
        "login answered {}",
        page.status()
    );
    page.text().await.unwrap()
}

/// Logs in as `email` on Dex's password page, the page `page` (reached by following the
/// portal's `/login` with `browser`); returns the answer at the end of the redirects back.
pub async fn log_in_on_dex(
    browser: &reqwest::Client,
    page: reqwest::Response,
    email: &str,
) -> reqwest::Response {
    let url = page.url().clone();
    let text = page.text().await.unwrap();
    let (action, mut fields) = form(&text, &url);
    fields.insert("login".into(), email.into());
    fields.insert("password".into(), PASSWORD.into());
    browser
        .post(action)
        .form(&fields)
        .send()
        .await
        .expect("log in on Dex's page")
}

/// A Kubernetes client acting as the chart's `kubespaces-server` ServiceAccount, so the server
/// under test has exactly the chart's rights.
pub async fn server_account_client() -> Client {
    let admin = Client::try_default().await.expect("KUBECONFIG client");
    let accounts: Api<ServiceAccount> = Api::namespaced(admin, RELEASE_NAMESPACE);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request("kubespaces-server", &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "no token for ServiceAccount {RELEASE_NAMESPACE}/kubespaces-server ({e}); the chart \
                 (charts/kubespaces, templates/server-rbac.yaml) must be installed: chart.sh install"
            )
        })
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let mut config = kube::Config::infer().await.expect("kube config");
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..Default::default()
    };
    Client::try_from(config).expect("client")
}

/// A KubeSpaces server in this process, on a free loopback port.
pub struct Server {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start(
        issuer: &str,
        client_id: &str,
        client: Client,
        jwks_min_refresh: Duration,
    ) -> Server {
        Server::start_with(issuer, client_id, client, jwks_min_refresh, |_| {}).await
    }

    /// Like [`Server::start`], with the settings `tweak` changes (the flags a test needs: the
    /// session keys, a public URL, ...). Without a `public_url` the server's own loopback
    /// URL is its public URL, as for `kubespaces-server --listen 127.0.0.1:<port>`.
    pub async fn start_with(
        issuer: &str,
        client_id: &str,
        client: Client,
        jwks_min_refresh: Duration,
        tweak: impl FnOnce(&mut Config),
    ) -> Server {
        let mut config = Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            oidc_issuer: issuer.to_owned(),
            oidc_client_id: client_id.to_owned(),
            oidc_scopes: ["openid", "email", "groups", "profile", "offline_access"]
                .map(String::from)
                .to_vec(),
            oidc_ca_file: None,
            admin_group: Some(ADMIN_GROUP.into()),
            jwks_min_refresh_secs: jwks_min_refresh.as_secs(),
            public_url: None,
            session_keys_file: None,
            pending_login_ttl_secs: 300,
            oidc_leeway_secs: 5,
            // The server's defaults, but for the rate of one user's requests
            // (cli/tests/bench.rs measures how many one user's lists the server can answer) and
            // the tenants per owner: the tests of two lanes and the provider's create tenants for
            // the same Dex users at once, and this count is of the whole cluster's. Tests of the
            // limits set them (acceptance/tests/hostile_user.rs).
            limits: Limits {
                rate_limit: Rate::Unlimited,
                max_tenants_per_owner: 0,
                ..Limits::default()
            },
        };
        tweak(&mut config);
        let verifier = Arc::new(Verifier::new(
            issuer,
            client_id,
            config.admin_group.clone(),
            Duration::from_secs(config.oidc_leeway_secs),
            jwks_min_refresh,
        ));
        verifier.refresh().await.expect("the issuer's JWKS");
        let tenants = Tenants::start(client.clone());
        assert!(tenants.ready().await, "the tenant cache fills");
        let listener = tokio::net::TcpListener::bind(config.listen).await.unwrap();
        let bound = listener.local_addr().unwrap();
        let url = format!("http://{bound}");
        let public_url = PublicUrl::resolve(config.public_url.as_deref(), bound)
            .unwrap_or_else(|e| panic!("the test server's public URL: {e}"));
        let sealer = Sealer::for_flag(config.session_keys_file.as_deref())
            .unwrap_or_else(|e| panic!("the test server's session keys: {e}"));
        let state = AppState::new(config, public_url, client, verifier, tenants, sealer);
        let task = tokio::spawn(async move {
            let _ = serve(listener, state, std::future::pending()).await;
        });
        Server { url, task }
    }

    /// With Dex as the issuer and the chart's ServiceAccount as the identity.
    pub async fn with_dex(dex: &Dex) -> Server {
        Server::start(
            &dex.issuer,
            &dex.client_id,
            server_account_client().await,
            Duration::from_secs(30),
        )
        .await
    }
}

/// An RSA key the test holds, published (or not) by a [`TestIssuer`].
pub struct TestKey {
    pub kid: String,
    pem: Vec<u8>,
    pub jwk: Value,
}

impl TestKey {
    /// A fresh 2048-bit RSA key (by openssl, which the harness needs anyway).
    pub fn generate(kid: &str) -> TestKey {
        let dir = std::env::temp_dir().join(format!("kubespaces-key-{}-{kid}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("key.pem");
        let ok = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(&key)
            .status()
            .expect("openssl");
        assert!(ok.success(), "openssl genpkey");
        let modulus = std::process::Command::new("openssl")
            .args(["rsa", "-noout", "-modulus", "-in"])
            .arg(&key)
            .output()
            .expect("openssl rsa");
        let hex = String::from_utf8(modulus.stdout).unwrap();
        let hex = hex.trim().trim_start_matches("Modulus=");
        let n: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let pem = std::fs::read(&key).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        TestKey {
            kid: kid.to_owned(),
            pem,
            jwk: serde_json::json!({
                "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                "n": b64.encode(n), "e": "AQAB"
            }),
        }
    }

    /// `claims` signed RS256 under this key, its header naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(&self.pem).expect("RSA PEM");
        jsonwebtoken::encode(&header, claims, &key).expect("sign")
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// An OIDC issuer of the test's own (discovery document and JWKS only), so the server can be
/// shown tokens that are correctly signed yet wrong in one claim. Counts JWKS fetches.
pub struct TestIssuer {
    pub url: String,
    keys: Arc<std::sync::Mutex<Vec<Value>>>,
    fetches: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestIssuer {
    pub async fn start(keys: &[&TestKey]) -> TestIssuer {
        use axum::{Json, routing::get};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let published = Arc::new(std::sync::Mutex::new(
            keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>(),
        ));
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let discovery = serde_json::json!({
            "issuer": url, "jwks_uri": format!("{url}/keys"),
            "authorization_endpoint": format!("{url}/auth"), "token_endpoint": format!("{url}/token"),
            "id_token_signing_alg_values_supported": ["RS256"],
        });
        let (k, f) = (published.clone(), fetches.clone());
        let app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || async move { Json(discovery) }),
            )
            .route(
                "/keys",
                get(move || {
                    let (k, f) = (k.clone(), f.clone());
                    async move {
                        f.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let keys = k.lock().unwrap().clone();
                        Json(serde_json::json!({ "keys": keys }))
                    }
                }),
            );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestIssuer {
            url,
            keys: published,
            fetches,
            task,
        }
    }

    /// Adds a key to the JWKS (a key rotation).
    pub fn publish(&self, key: &TestKey) {
        self.keys.lock().unwrap().push(key.jwk.clone());
    }

    /// How often the JWKS was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::SeqCst)
    }
}
