//! Step 9. Names and certificates: the owner writes the Secret its apps listener serves
//! (`apps-tls`) with a certificate of its making for one of the victim's app names. The Gateway
//! picks a certificate by the name a client asks for, from every listener's, so a certificate
//! for `www.victim.apps.<domain>` in mallory's Secret would be served to the victim's users.

use std::{process::Command, time::Duration};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kubespaces_acceptance::{
    hostile::{As, kubectl_as, refused_by, self_signed},
    tenant_cluster::platform_var,
    wait_for,
};
use kubespaces_operator::{names, names::control_plane as cp_names};
use serde_json::json;

use super::{MALLORY, OWNER, Scene, VICTIM};

pub async fn planted_apps_certificate(s: &Scene) -> Option<String> {
    let victim_host = format!("www.{}", names::apps_domain(VICTIM, &s.domain));
    let (crt, key) = self_signed(&victim_host);
    let patch = json!({"data": {"tls.crt": b64(&crt), "tls.key": b64(&key)}}).to_string();
    let args = [
        "-n",
        &s.ns,
        "patch",
        "secret",
        cp_names::APPS_CERTIFICATE,
        "--type",
        "merge",
        "-p",
        &patch,
    ];
    let out = kubectl_as(&s.env, As::Owner(OWNER), &args, None);
    let what = format!("the owner's certificate for {victim_host} in its apps-tls");
    if let Err(admitted) = refused_by(&out, names::APPS_CERTIFICATE_GUARD, "apps-tls", &what) {
        // Written: does the Gateway serve it to the victim's users before cert-manager puts its
        // own back (it notices the Secret no longer matches its Certificate)?
        let url = format!("https://{victim_host}/");
        let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.ns);
        let served = wait_for(
            "the Gateway to serve the planted certificate, or cert-manager to replace it",
            Duration::from_secs(120),
            || async {
                if untrusted_certificate(&url) {
                    return Some(true);
                }
                let now = secrets.get(cp_names::APPS_CERTIFICATE).await.ok()?;
                let held = now.data.as_ref()?.get("tls.crt")?.0.clone();
                (held != crt).then_some(false)
            },
        )
        .await;
        return Some(if served {
            format!(
                "{admitted}\nand the Gateway served it for {victim_host}: the victim's users get \
                 {MALLORY}'s certificate"
            )
        } else {
            format!(
                "{admitted}\n(the Gateway kept serving the victim's own until cert-manager replaced it)"
            )
        });
    }
    None
}

/// True when `url` answers with a certificate the platform's CA did not sign (curl exit 60).
fn untrusted_certificate(url: &str) -> bool {
    let ca = platform_var("KUBESPACES_APPS_CA_FILE");
    let out = Command::new("curl")
        .args([
            "--silent",
            "--max-time",
            "5",
            "--output",
            "/dev/null",
            "--cacert",
            &ca,
        ])
        .arg(url)
        .output()
        .expect("curl runs");
    out.status.code() == Some(60)
}

fn b64(bytes: &[u8]) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes)
}
