//! A hostile tenant's tools on the host (`tests/hostile_tenant.rs`): kubectl as the tenant's
//! owner or with a token (its vCluster syncer's, for a tenant that steered it, or one it stole),
//! server-side dry runs of what it tries, and whether an admission policy refused them.

use std::{
    path::Path,
    process::Output,
    sync::atomic::{AtomicUsize, Ordering},
};

use crate::{
    Env,
    tenant_cluster::{owner_kubectl, platform_var, text},
};

/// Who sends a request to the host's API server.
#[derive(Clone, Copy)]
pub enum As<'a> {
    /// The tenant's owner (impersonated: the RBAC and admission its own credential meets).
    Owner(&'a str),
    /// The holder of this token, with no credential of the harness's.
    Token(&'a str),
}

/// The host API server's URL and CA (PEM), from the harness's kubeconfig.
fn host_server_and_ca(env: &Env) -> (String, String) {
    let view = |path: &str| {
        let jsonpath = format!("jsonpath={{{path}}}");
        let args = ["config", "view", "--raw", "--minify", "-o", &jsonpath];
        env.kubectl_ok(&args, None)
    };
    let server = view(".clusters[0].cluster.server").trim().to_owned();
    let ca = view(".clusters[0].cluster.certificate-authority-data");
    let ca = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, ca.trim())
        .expect("the harness's kubeconfig holds its CA as base64");
    (server, String::from_utf8(ca).expect("a PEM CA"))
}

/// kubectl on the host as `who`, with `manifest` as `-f` when given.
pub fn kubectl_as(env: &Env, who: As<'_>, args: &[&str], manifest: Option<&str>) -> Output {
    let mut all = args.to_vec();
    match who {
        As::Owner(owner) => {
            if manifest.is_some() {
                all.extend(["-f", "-"]);
            }
            all.extend(["--as", owner]);
            env.kubectl(&all, manifest)
        }
        As::Token(token) => {
            // Env::kubectl_with_token reads no stdin: the manifest goes through a file.
            static FILES: AtomicUsize = AtomicUsize::new(0);
            let n = FILES.fetch_add(1, Ordering::Relaxed);
            let file = std::env::temp_dir().join(format!(
                "kubespaces-hostile-{}-{n}.yaml",
                std::process::id()
            ));
            let path = file.to_string_lossy().into_owned();
            if let Some(m) = manifest {
                std::fs::write(&file, m).expect("write the manifest");
                all.extend(["-f", path.as_str()]);
            }
            let (server, ca) = host_server_and_ca(env);
            let out = env.kubectl_with_token(&server, &ca, token, &all);
            let _ = std::fs::remove_file(&file);
            out
        }
    }
}

/// A server-side dry run of creating `manifest` as `who`: admission runs, nothing is kept.
pub fn try_create(env: &Env, who: As<'_>, manifest: &str) -> Output {
    kubectl_as(env, who, &["create", "--dry-run=server"], Some(manifest))
}

/// `ns/secret`'s `key` set to `content`, a Secret of the tenant's control plane. The owner tries
/// first: `Err` says it was let (the path is open). Refused, the Secret is written as the
/// platform's admin, for a tenant that found another way in, so that what the platform does with
/// the planted content is played either way.
pub fn plant_control_plane_secret(
    env: &Env,
    owner: &str,
    ns: &str,
    secret: &str,
    key: &str,
    content: &str,
) -> Result<(), String> {
    let data = k8s_openapi::ByteString(content.as_bytes().to_vec());
    let patch = serde_json::json!({"data": {key: data}}).to_string();
    let args = [
        "-n", ns, "patch", "secret", secret, "--type", "merge", "-p", &patch,
    ];
    let by_owner = kubectl_as(env, As::Owner(owner), &args, None);
    let refused = refused_by(
        &by_owner,
        kubespaces_operator::names::CONTROL_PLANE_OBJECTS_GUARD,
        &format!("secrets {secret}"),
        &format!("the owner writes Secret {ns}/{secret}"),
    );
    if refused.is_ok() {
        env.kubectl_ok(&args, None);
    }
    refused
}

/// `Ok` when `out` is a refusal by the admission policy `policy` whose message contains `names`;
/// `Err` says what the tenant tried (`what`) and got. Tests report each attack that works
/// instead of stopping at the first, so one run lists every open path.
pub fn refused_by(out: &Output, policy: &str, names: &str, what: &str) -> Result<(), String> {
    let said = text(out);
    if out.status.success() {
        return Err(format!("{what}: admitted (the attack works):\n{said}"));
    }
    if !(said.contains(policy) && said.contains(names)) {
        return Err(format!(
            "{what}: refused, but not by {policy} naming {names:?}:\n{said}"
        ));
    }
    Ok(())
}

/// `curl` of an apps URL from this machine, verifying the platform's test CA: status and body.
pub fn curl_app(url: &str) -> (String, String) {
    let ca = platform_var("KUBESPACES_APPS_CA_FILE");
    let out = std::process::Command::new("curl")
        .args(["--silent", "--max-time", "5", "--cacert", &ca])
        .args(["--write-out", "\n%{http_code}"])
        .arg(url)
        .output()
        .expect("curl runs");
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = all.rsplit_once('\n').unwrap_or(("", &all));
    (code.trim().to_owned(), body.to_owned())
}

/// The Warning events inside the tenant, one line each (kind, name, reason, message): what its
/// user sees with `kubectl get events`.
pub fn tenant_warnings(env: &Env, kubeconfig: &Path) -> String {
    let columns = "custom-columns=KIND:.involvedObject.kind,NAME:.involvedObject.name,\
                   REASON:.reason,MESSAGE:.message";
    let args = [
        "get",
        "events",
        "-A",
        "--field-selector",
        "type=Warning",
        "-o",
        columns,
    ];
    let out = owner_kubectl(
        env,
        kubeconfig,
        &[&args[..], &["--no-headers"]].concat(),
        None,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A self-signed certificate and its key (PEM) for `host`, made by openssl.
pub fn self_signed(host: &str) -> (Vec<u8>, Vec<u8>) {
    static PAIRS: AtomicUsize = AtomicUsize::new(0);
    let n = PAIRS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hostile-tls-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let (crt, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .arg("-subj")
        .arg(format!("/CN={host}"))
        .arg("-addext")
        .arg(format!("subjectAltName=DNS:{host}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .expect("openssl");
    assert!(
        made.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let read = |p| std::fs::read(p).expect("the key pair");
    let pair = (read(&crt), read(&key));
    let _ = std::fs::remove_dir_all(&dir);
    pair
}
