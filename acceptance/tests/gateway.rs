//! The platform's Gateway on the real node (acceptance/harness/gateway.sh): Traefik serves the
//! Gateway kubespaces-gateway/kubespaces, whose listener `api` passes TLS for `*.api.<domain>`
//! through to the backends of TLSRoutes in tenant namespaces, and hosts-sync makes the routes'
//! hostnames resolve on this machine. Reached the way a tenant's user would: by name, on port 443,
//! verifying the backend's own certificate.
//!
//! Needs KUBECONFIG, KUBESPACES_KUBECTL, KUBESPACES_ACCEPTANCE, and what gateway.sh exports:
//! KUBESPACES_DOMAIN, KUBESPACES_GATEWAY_ADDRESS, KUBESPACES_API_GATEWAY, KUBESPACES_TLSSERVER_IMAGE,
//! plus KUBESPACES_STATE and KUBESPACES_NODE_IP (cluster-up.sh).

use std::{path::Path, process::Command, time::Duration};

use kubespaces_acceptance::{Env, pods::retry_until, wait_for};
use serde_json::Value;

/// The namespace of the test's backend and routes: a tenant namespace as far as the listener's
/// selector is concerned (label kubespaces.io/tenant), without a Tenant behind it.
const NS: &str = "gateway-smoke";
/// A namespace without that label: the listener must not take its routes.
const NS_OTHER: &str = "gateway-smoke-untenanted";
/// Traefik, hosts-sync and a first pod on the node act asynchronously.
const SETTLE: Duration = Duration::from_secs(90);

fn var(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!("{name} (exported by acceptance/harness/gateway.sh into the state dir's env)")
        })
}

fn run(what: &str, cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// A CA and a serving certificate for `names`, signed by it, in `dir` (ca.crt, tls.crt, tls.key).
fn make_certificates(dir: &Path, names: &[&str]) {
    let sans = names
        .iter()
        .map(|n| format!("DNS:{n}"))
        .collect::<Vec<_>>()
        .join(",");
    let script = format!(
        "set -e; cd '{dir}'
         openssl req -x509 -new -nodes -newkey rsa:2048 -days 1 -keyout ca.key -out ca.crt \
           -subj /CN=gateway-smoke-ca -addext basicConstraints=critical,CA:TRUE \
           -addext keyUsage=critical,keyCertSign 2>/dev/null
         openssl req -new -nodes -newkey rsa:2048 -keyout tls.key -out tls.csr -subj /CN={first} 2>/dev/null
         printf 'subjectAltName={sans}\\nextendedKeyUsage=serverAuth\\n' >tls.ext
         openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
           -extfile tls.ext -out tls.crt 2>/dev/null",
        dir = dir.display(),
        first = names[0],
    );
    let out = run("openssl", Command::new("sh").args(["-c", &script]));
    assert!(
        out.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn b64(path: &Path) -> String {
    let out = run("base64", Command::new("base64").arg("-w0").arg(path));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The backend (tlsserver with the certificate), its Service, a client pod (kubectl, the CA in
/// /ca) to reach the Gateway from inside the cluster, and one TLSRoute per hostname, each attached
/// to the listener named by KUBESPACES_API_GATEWAY.
fn manifests(dir: &Path, image: &str, routes: &[(&str, &str)]) -> String {
    let parent = var("KUBESPACES_API_GATEWAY");
    let [gw_ns, gw_name, section]: [&str; 3] = parent
        .split('/')
        .collect::<Vec<_>>()
        .try_into()
        .unwrap_or_else(|_| {
            panic!("KUBESPACES_API_GATEWAY={parent}: want namespace/name/sectionName")
        });
    let mut yaml = format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {NS}, labels: {{kubespaces.io/tenant: {NS}}}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: smoke-tls, namespace: {NS}}}
type: kubernetes.io/tls
data: {{tls.crt: {crt}, tls.key: {key}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: smoke, namespace: {NS}, labels: {{app: smoke}}}}
spec:
  securityContext: {{runAsNonRoot: true, runAsUser: 65534}}
  containers:
  - name: tlsserver
    image: {image}
    imagePullPolicy: IfNotPresent
    args: ["-addr", ":8443", "-name", "smoke"]
    ports: [{{name: https, containerPort: 8443}}]
    readinessProbe: {{tcpSocket: {{port: https}}, periodSeconds: 1}}
    volumeMounts: [{{name: tls, mountPath: /tls, readOnly: true}}]
  volumes: [{{name: tls, secret: {{secretName: smoke-tls}}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: smoke, namespace: {NS}}}
spec:
  selector: {{app: smoke}}
  ports: [{{name: https, port: 443, targetPort: https}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: smoke-ca, namespace: {NS}}}
data: {{ca.crt: {ca_pem}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: client, namespace: {NS}}}
spec:
  automountServiceAccountToken: false
  # sleep as PID 1 ignores SIGTERM: without this, deleting the namespace waits 30 s for it.
  terminationGracePeriodSeconds: 0
  securityContext: {{runAsNonRoot: true, runAsUser: 65534}}
  containers:
  - name: kubectl
    image: {client_image}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "86400"]
    volumeMounts: [{{name: ca, mountPath: /ca, readOnly: true}}]
  volumes: [{{name: ca, configMap: {{name: smoke-ca}}}}]
"#,
        crt = b64(&dir.join("tls.crt")),
        key = b64(&dir.join("tls.key")),
        // A JSON string is a YAML scalar: the PEM's newlines escaped.
        ca_pem = Value::String(read(&dir.join("ca.crt"))),
        client_image = var("KUBESPACES_KUBECTL_IMAGE"),
    );
    for (name, host) in routes {
        yaml.push_str(&format!(
            r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {{name: {name}, namespace: {NS}}}
spec:
  parentRefs: [{{namespace: {gw_ns}, name: {gw_name}, sectionName: {section}}}]
  hostnames: ["{host}"]
  rules: [{{backendRefs: [{{name: smoke, port: 443}}]}}]
"#
        ));
    }
    yaml
}

fn get_json(env: &Env, args: &[&str]) -> Option<Value> {
    let out = env.kubectl(&[args, &["-o", "json"]].concat(), None);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// The condition `type_` of an object's status (or of its first route parent) as (status, reason).
fn condition(conditions: &Value, type_: &str) -> Option<(String, String)> {
    conditions.as_array()?.iter().find_map(|c| {
        (c["type"] == type_).then(|| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
    })
}

/// The route's Accepted condition from its parent, once the parent has seen its generation.
async fn route_accepted(env: &Env, ns: &str, route: &str) -> (String, String) {
    wait_for(
        &format!("a verdict on TLSRoute {ns}/{route}"),
        SETTLE,
        || async {
            let r = get_json(env, &["-n", ns, "get", "tlsroute", route])?;
            let parent = r["status"]["parents"].get(0)?;
            let accepted = parent["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Accepted")?;
            (accepted["observedGeneration"] == r["metadata"]["generation"]).then_some(())?;
            condition(&parent["conditions"], "Accepted")
        },
    )
    .await
}

/// The lines of this cluster's block in /etc/hosts (hosts-sync.py).
fn hosts_block(state: &str) -> Vec<String> {
    let text = read(Path::new("/etc/hosts"));
    let (begin, end) = (
        format!("# kubespaces {state} begin"),
        format!("# kubespaces {state} end"),
    );
    text.lines()
        .skip_while(|l| *l != begin)
        .skip(1)
        .take_while(|l| *l != end)
        .map(str::to_owned)
        .collect()
}

/// `curl` of https://HOST:443/ with the test's CA; `resolve` pins the address instead of the
/// machine's resolver. Ok(body) or Err(curl's error).
fn curl(ca: &Path, host: &str, resolve: Option<&str>) -> Result<String, String> {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "5", "--cacert"]).arg(ca);
    if let Some(ip) = resolve {
        cmd.args(["--resolve", &format!("{host}:443:{ip}")]);
    }
    let out = run("curl", cmd.arg(format!("https://{host}:443/")));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

fn delete_namespaces(env: &Env) {
    env.kubectl(
        &[
            "delete",
            "namespace",
            NS,
            NS_OTHER,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=90s",
        ],
        None,
    );
}

/// A TLSRoute for `host` in NS_OTHER (no kubespaces.io/tenant label), to the listener of
/// KUBESPACES_API_GATEWAY, with a backend that need not exist: the listener refuses it first.
fn untenanted_route(host: &str) -> String {
    let parent = var("KUBESPACES_API_GATEWAY");
    let parts: Vec<&str> = parent.split('/').collect();
    assert_eq!(
        parts.len(),
        3,
        "KUBESPACES_API_GATEWAY={parent}: want namespace/name/sectionName"
    );
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {NS_OTHER}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {{name: untenanted, namespace: {NS_OTHER}}}
spec:
  parentRefs: [{{namespace: {}, name: {}, sectionName: {}}}]
  hostnames: ["{host}"]
  rules: [{{backendRefs: [{{name: smoke, port: 443}}]}}]
"#,
        parts[0], parts[1], parts[2]
    )
}

/// The Gateway is Programmed with its `api` listener, and a TLSRoute under `*.api.<domain>` reaches
/// its backend from this machine by name alone (hosts-sync's entry, port 443), end to end TLS: the
/// certificate curl verifies is the backend's; a pod reaches it the same way through the Gateway's
/// Service. A route for a name outside the listener's hostname
/// is refused, and so is a route from a namespace that is not a tenant's; neither gets a hosts
/// entry, and the outside name is not routed. Deleting the routes removes the entry.
#[tokio::test]
async fn a_tls_route_reaches_its_backend_by_name_through_the_gateway() {
    let env = Env::get();
    let (domain, state, node_ip) = (
        var("KUBESPACES_DOMAIN"),
        var("KUBESPACES_STATE"),
        var("KUBESPACES_NODE_IP"),
    );
    assert_eq!(var("KUBESPACES_GATEWAY_ADDRESS"), format!("{node_ip}:443"));

    // The Gateway as gateway.sh left it: accepted by Traefik, programmed, at the node's address.
    let gw = get_json(
        &env,
        &["-n", "kubespaces-gateway", "get", "gateway", "kubespaces"],
    )
    .expect("Gateway kubespaces-gateway/kubespaces");
    for c in ["Accepted", "Programmed"] {
        assert_eq!(
            condition(&gw["status"]["conditions"], c)
                .map(|(s, _)| s)
                .as_deref(),
            Some("True"),
            "Gateway {c}: {}",
            gw["status"]
        );
    }
    assert_eq!(
        gw["status"]["addresses"][0]["value"],
        node_ip.as_str(),
        "{}",
        gw["status"]
    );
    let api = gw["status"]["listeners"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["name"] == "api"))
        .unwrap_or_else(|| panic!("no status for listener api: {}", gw["status"]));
    assert_eq!(
        condition(&api["conditions"], "Programmed")
            .map(|(s, _)| s)
            .as_deref(),
        Some("True"),
        "{api}"
    );
    assert_eq!(api["supportedKinds"][0]["kind"], "TLSRoute", "{api}");

    let host = format!("smoke.api.{domain}");
    // Outside the listener's *.api.<domain>, though under the domain (so hosts-sync would take it).
    let outside = format!("smoke.web.{domain}");
    let dir = std::env::temp_dir().join(format!("kubespaces-gateway-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the test's temp dir");
    // Both names in the certificate: a refusal of `outside` is the Gateway's, not TLS's.
    make_certificates(&dir, &[&host, &outside]);
    let ca = dir.join("ca.crt");

    delete_namespaces(&env);
    let image = var("KUBESPACES_TLSSERVER_IMAGE");
    env.apply(&manifests(
        &dir,
        &image,
        &[("smoke", &host), ("outside", &outside)],
    ));
    // Under *.api.<domain>, but from a namespace that is not a tenant's.
    let untenanted = format!("untenanted.api.{domain}");
    env.apply(&untenanted_route(&untenanted));

    assert_eq!(
        route_accepted(&env, NS, "smoke").await,
        ("True".into(), "Accepted".into())
    );
    let (status, reason) = route_accepted(&env, NS, "outside").await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "NoMatchingListenerHostname")
    );
    let (status, reason) = route_accepted(&env, NS_OTHER, "untenanted").await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "NotAllowedByListeners")
    );

    let entry = format!("{node_ip} {host}");
    wait_for(&format!("'{entry}' in /etc/hosts"), SETTLE, || async {
        hosts_block(&state).contains(&entry).then_some(())
    })
    .await;

    // By name only: /etc/hosts (hosts-sync) -> the node's hostPort 443 -> Traefik -> the pod.
    let body = retry_until(
        &format!("https://{host}:443/ through the Gateway"),
        SETTLE,
        || curl(&ca, &host, None),
    )
    .await;
    assert_eq!(body.trim(), format!("hello from smoke (sni {host})"));

    // From a pod, through the Gateway's Service (KUBESPACES_GATEWAY_SERVICE) with the same server
    // name: kubectl is the TLS client at hand in the cluster, its --raw GET prints the body.
    let service = var("KUBESPACES_GATEWAY_SERVICE");
    let server = format!("--server=https://{service}");
    let sni = format!("--tls-server-name={host}");
    let body = retry_until(
        &format!("{host} from a pod through {service}"),
        SETTLE,
        || {
            let out = env.exec(
                NS,
                "client",
                &[
                    "kubectl",
                    "get",
                    "--raw",
                    "/",
                    &server,
                    &sni,
                    "--certificate-authority=/ca/ca.crt",
                    "--token=none",
                ],
            );
            if out.status.success() {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
            }
        },
    )
    .await;
    assert_eq!(body.trim(), format!("hello from smoke (sni {host})"));

    // Not routed: no entry, and at the Gateway's address the outside name gets no backend.
    for refused in [&outside, &untenanted] {
        assert!(
            !hosts_block(&state)
                .iter()
                .any(|l| l.ends_with(refused.as_str())),
            "{refused} is in /etc/hosts: {:?}",
            hosts_block(&state)
        );
    }
    let refused = curl(&ca, &outside, Some(&node_ip));
    assert!(refused.is_err(), "{outside} was routed: {refused:?}");

    delete_namespaces(&env);
    wait_for(
        &format!("'{entry}' to leave /etc/hosts"),
        SETTLE,
        || async { (!hosts_block(&state).contains(&entry)).then_some(()) },
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}
