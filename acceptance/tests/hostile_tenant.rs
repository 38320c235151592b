//! Hostile tenants (issue 18): a tenant who attacks the platform gets nothing beyond its own
//! namespace. Each attack is played for real by the tenant `mallory`, as its owner on the host
//! (kubectl as `mallory@example.com`, and with the token of its vCluster's ServiceAccount, which
//! the owner can mint) and as cluster-admin inside its vCluster (the kubeconfig it was handed),
//! against the shared operator the chart installed and the platform's Gateway. The victim is a
//! web page in the namespace of another tenant, `victim`. docs/security.md lists each path and
//! the test below that plays it.

use std::{path::Path, process::Command, time::Duration};

use k8s_openapi::{
    ByteString,
    api::core::v1::{Pod, Secret},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server},
    pods::{
        HTTP_PORT, delete_tenant, httpd_spec, page_of, pod, pod_ip, real_nodes, wait_pod_running,
    },
    tenant_cluster::{in_tenant, owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_yaml, wait_for, wait_ready,
};
use kubespaces_operator::{
    api::{KUBECONFIG_SECRET, KUBECONFIG_SECRET_KEY, Tenant},
    conditions,
    control_plane::names as cp_names,
    kubeconfig, names,
};
use serde_json::json;

const READY_WITHIN: Duration = Duration::from_secs(300);
const MALLORY: &str = "mallory";
const OWNER: &str = "mallory@example.com";
const VICTIM: &str = "victim";
/// Where a ServiceAccount's token is mounted in a pod (the operator's, in its pod).
const TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// kubectl on the host as the tenant's owner (impersonated: the RBAC and admission the owner's
/// own credential would meet).
fn as_owner(env: &Env, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut all = args.to_vec();
    all.extend(["--as", OWNER]);
    env.kubectl(&all, stdin)
}

/// kubectl on the host with nothing but `token` (no credential of the harness's).
fn with_token(env: &Env, token: &str, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let view = |path: &str| {
        env.kubectl_ok(
            &[
                "config",
                "view",
                "--raw",
                "--minify",
                "-o",
                &format!("jsonpath={{{path}}}"),
            ],
            None,
        )
    };
    let server = view(".clusters[0].cluster.server");
    let ca = String::from_utf8(
        Command::new("base64")
            .args(["-d"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().expect("stdin").write_all(
                    view(".clusters[0].cluster.certificate-authority-data").as_bytes(),
                )?;
                c.wait_with_output()
            })
            .expect("base64 -d")
            .stdout,
    )
    .expect("a PEM CA");
    let mut all = args.to_vec();
    let manifest = stdin.map(str::to_owned);
    if manifest.is_some() {
        all.extend(["-f", "-"]);
    }
    // kubectl_with_token takes no stdin: the manifest goes through a file.
    let file = std::env::temp_dir().join(format!("hostile-{}.yaml", std::process::id()));
    if let Some(m) = &manifest {
        std::fs::write(&file, m).expect("write the manifest");
        let at = all.iter().position(|a| *a == "-").expect("-f -");
        all[at] = file.to_str().expect("a UTF-8 path");
    }
    let out = env.kubectl_with_token(server.trim(), &ca, token, &all);
    let _ = std::fs::remove_file(&file);
    out
}

/// Whether `out` is a refusal by the admission policy `policy` whose message contains `names`;
/// `Err` says what the tenant tried and got. (Every attack is played and each one that works is
/// reported, so one run lists every open path.)
fn refused_by(
    out: &std::process::Output,
    policy: &str,
    names: &str,
    what: &str,
) -> Result<(), String> {
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

/// `curl` of `url` from this machine, verifying the platform's test CA: the status and body.
fn curl(url: &str) -> (String, String) {
    let ca = platform_var("KUBESPACES_APPS_CA_FILE");
    let out = Command::new("curl")
        .args(["--silent", "--max-time", "5", "--cacert", &ca])
        .args(["--write-out", "\n%{http_code}"])
        .arg(url)
        .output()
        .expect("curl runs");
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = all.rsplit_once('\n').unwrap_or(("", &all));
    (code.trim().to_owned(), body.to_owned())
}

/// Warning events inside the tenant (what `kubectl get events` shows its user).
fn tenant_warnings(env: &Env, kubeconfig: &Path) -> String {
    let out = owner_kubectl(
        env,
        kubeconfig,
        &[
            "get",
            "events",
            "-A",
            "--field-selector",
            "type=Warning",
            "-o",
            "custom-columns=KIND:.involvedObject.kind,NAME:.involvedObject.name,REASON:.reason,MESSAGE:.message",
            "--no-headers",
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn a_hostile_tenant_gets_nothing_beyond_its_namespace() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let domain = platform_var("KUBESPACES_DOMAIN");
    for name in [MALLORY, VICTIM] {
        if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
            delete_tenant(&env, name).await;
        }
        env.apply(&tenant_yaml(
            name,
            &format!("{name}@example.com"),
            "2",
            "2Gi",
            None,
        ));
    }
    for name in [MALLORY, VICTIM] {
        wait_ready(&tenants, name, READY_WITHIN).await;
    }
    let ns = names::namespace(MALLORY);
    let victim_ns = names::namespace(VICTIM);
    // What each attack that worked obtained.
    let mut open: Vec<String> = vec![];

    // The victim: a page in the other tenant's namespace, which the platform's Gateway may reach
    // (tenant policies admit the platform's namespaces) and no tenant pod may.
    let nodes = real_nodes(&client).await;
    let victim_pods: Api<Pod> = Api::namespaced(client.clone(), &victim_ns);
    victim_pods
        .create(
            &PostParams::default(),
            &pod(
                "secret-page",
                &[("app", "secret-page")],
                httpd_spec(&env.busybox_image(), &nodes),
            ),
        )
        .await
        .expect("the victim's page");
    let victim = wait_pod_running(&victim_pods, "secret-page", Duration::from_secs(120)).await;
    let victim_ip = pod_ip(&victim);
    let secret_page = page_of("secret-page");
    let (kubeconfig, _) = owner_kubeconfig(&env, MALLORY).await;

    // 1. Inside its vCluster, mallory points a selector-less Service at the victim's pod and
    //    routes one of its own app names to it: the syncer would copy the Endpoints to the host
    //    and the Gateway would proxy to whatever they name.
    let steal_host = format!("steal.{}", names::apps_domain(MALLORY, &domain));
    let manifests = format!(
        r#"apiVersion: v1
kind: Service
metadata: {{name: steal, namespace: default}}
spec:
  ports: [{{name: http, port: 80, targetPort: {HTTP_PORT}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: steal, namespace: default}}
subsets: [{{addresses: [{{ip: "{victim_ip}"}}], ports: [{{name: http, port: {HTTP_PORT}}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: steal, namespace: default}}
spec:
  parentRefs: [{{name: {gateway}, namespace: {gateway_ns}}}]
  hostnames: ["{steal_host}"]
  rules: [{{backendRefs: [{{name: steal, port: 80}}]}}]
"#,
        gateway = cp_names::APPS_GATEWAY,
        gateway_ns = cp_names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
    );
    // The Gateway import can show up a moment after Ready (see docs/first-tenant.md).
    in_tenant(
        &env,
        &kubeconfig,
        &[
            "get",
            "gateway",
            "-n",
            cp_names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
            cp_names::APPS_GATEWAY,
        ],
    )
    .await;
    let out = owner_kubectl(&env, &kubeconfig, &["apply", "-f", "-"], Some(&manifests));
    assert!(out.status.success(), "inside the tenant: {}", text(&out));
    let step1 = wait_for(
        "the Gateway to serve the victim's page (the attack) or the syncer's Endpoints to be refused",
        Duration::from_secs(120),
        || async {
            let (code, body) = curl(&format!("https://{steal_host}/"));
            if body.contains(&secret_page) {
                return Some(Err(format!(
                    "the Gateway served tenant {VICTIM}'s page to {MALLORY} at {steal_host} (HTTP {code}): {body}"
                )));
            }
            let warnings = tenant_warnings(&env, &kubeconfig);
            warnings
                .lines()
                .find(|l| l.contains(names::ENDPOINTS_GUARD))
                .map(|l| Ok(l.to_owned()))
        },
    )
    .await;
    match step1 {
        Err(e) => open.push(e),
        Ok(refusal) => {
            assert!(
                refusal.contains("steal"),
                "the tenant is told which object: {refusal}"
            );
            // On the host, no Endpoints or EndpointSlice in mallory's namespace names the victim.
            for kind in ["endpoints", "endpointslices"] {
                let listed = env.kubectl_ok(&["-n", &ns, "get", kind, "-o", "json"], None);
                assert!(
                    !listed.contains(&victim_ip),
                    "{kind} in {ns} name {victim_ip}:\n{listed}"
                );
            }
            let (code, body) = curl(&format!("https://{steal_host}/"));
            assert!(
                !body.contains(&secret_page) && code != "200",
                "HTTP {code}: {body}"
            );
        }
    }

    // 1b. Inside its vCluster, a pod that would take the node: privileged, the host's network
    //     and process namespaces, the node's root file system. The syncer creates it on the
    //     host, where the namespace's Pod Security level refuses it; the tenant is told why.
    let root_me = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: root-me, namespace: default}}
spec:
  hostNetwork: true
  hostPID: true
  containers:
  - name: main
    image: {image}
    command: [sleep, "3600"]
    securityContext: {{privileged: true}}
    volumeMounts: [{{name: root, mountPath: /host}}]
  volumes: [{{name: root, hostPath: {{path: /}}}}]
"#,
        image = env.busybox_image(),
    );
    let out = owner_kubectl(&env, &kubeconfig, &["apply", "-f", "-"], Some(&root_me));
    assert!(out.status.success(), "inside the tenant: {}", text(&out));
    let host_pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let step = wait_for(
        "the privileged pod to be refused on the host, with a Warning the tenant sees",
        Duration::from_secs(120),
        || async {
            let on_host = host_pods
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|p| p.metadata.name.as_deref().is_some_and(|n| n.starts_with("root-me")));
            if let Some(p) = on_host {
                return Some(Err(format!(
                    "a privileged, hostPath, hostNetwork, hostPID pod made inside the tenant exists on the host: {:?}",
                    p.metadata.name
                )));
            }
            tenant_warnings(&env, &kubeconfig)
                .lines()
                .find(|l| l.contains("root-me") && l.contains("PodSecurity"))
                .map(|l| Ok(l.to_owned()))
        },
    )
    .await;
    match step {
        Err(e) => open.push(e),
        Ok(warning) => assert!(
            warning.contains("privileged"),
            "the tenant is told why: {warning}"
        ),
    }

    // 2. On the host, with its vCluster syncer's own token (the owner may mint it): the same
    //    Endpoints written directly, and an EndpointSlice for one of its Services.
    let token = String::from_utf8_lossy(
        &as_owner(
            &env,
            &[
                "-n",
                &ns,
                "create",
                "token",
                "vc-vcluster",
                "--duration",
                "10m",
            ],
            None,
        )
        .stdout,
    )
    .trim()
    .to_owned();
    assert!(!token.is_empty(), "the owner mints the syncer's token");
    let slice = format!(
        r#"apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: steal-direct, namespace: {ns}, labels: {{kubernetes.io/service-name: {release}}}}}
addressType: IPv4
endpoints: [{{addresses: ["{victim_ip}"]}}]
ports: [{{name: http, port: {HTTP_PORT}, protocol: TCP}}]
"#,
        release = cp_names::RELEASE,
    );
    let out = with_token(&env, &token, &["create", "--dry-run=server"], Some(&slice));
    open.extend(
        refused_by(
            &out,
            names::ENDPOINTS_GUARD,
            "steal-direct",
            "an EndpointSlice with the syncer's token",
        )
        .err(),
    );

    // 3. A pod of the owner's that joins the tenant API's Service (its labels), as the owner and
    //    with the syncer's token.
    let impostor = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: impostor, namespace: {ns}, labels: {{app: vcluster, release: {release}}}}}
spec:
  containers: [{{name: main, image: {image}, command: [sleep, "3600"]}}]
"#,
        release = cp_names::RELEASE,
        image = env.busybox_image(),
    );
    let out = as_owner(
        &env,
        &["create", "--dry-run=server", "-f", "-"],
        Some(&impostor),
    );
    open.extend(
        refused_by(
            &out,
            names::CONTROL_PLANE_POD_GUARD,
            "impostor",
            "a pod with the control plane's labels",
        )
        .err(),
    );
    let out = with_token(
        &env,
        &token,
        &["create", "--dry-run=server"],
        Some(&impostor),
    );
    open.extend(
        refused_by(
            &out,
            names::CONTROL_PLANE_POD_GUARD,
            "impostor",
            "the same pod with the syncer's token",
        )
        .err(),
    );

    // 4. A RoleBinding handing the owner's role to another namespace's ServiceAccount, named as
    //    the User its tokens authenticate as.
    let binding = format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: lend, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:serviceaccount:{victim_ns}:default"}}]
"#,
        role = names::OWNER_CLUSTER_ROLE,
    );
    let out = as_owner(
        &env,
        &["create", "--dry-run=server", "-f", "-"],
        Some(&binding),
    );
    open.extend(
        refused_by(
            &out,
            names::ROLE_BINDING_GUARD,
            &format!("User system:serviceaccount:{victim_ns}:default"),
            "a RoleBinding to a foreign ServiceAccount as a User",
        )
        .err(),
    );

    // 5. Ingresses for another tenant's app name, and for every name (no host).
    for (name, rule) in [
        ("claim", format!("{{host: \"www.{}\", http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: steal, port: {{number: 80}}}}}}}}]}}}}", names::apps_domain(VICTIM, &domain))),
        ("catch-all", "{http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: steal, port: {number: 80}}}}]}}".to_owned()),
    ] {
        let ingress = format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  rules: [{rule}]\n"
        );
        let out = as_owner(&env, &["create", "--dry-run=server", "-f", "-"], Some(&ingress));
        open.extend(refused_by(&out, names::INGRESS_GUARD, name, "an Ingress for names not the tenant's").err());
    }
    // Its own app name is fine.
    let own = format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: own, namespace: {ns}}}\nspec:\n  rules: [{{host: \"www.{}\", http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: steal, port: {{number: 80}}}}}}}}]}}}}]\n",
        names::apps_domain(MALLORY, &domain)
    );
    let out = as_owner(&env, &["create", "--dry-run=server", "-f", "-"], Some(&own));
    assert!(
        out.status.success(),
        "the tenant's own apps name: {}",
        text(&out)
    );

    // A TLSRoute of its own (the API names are TLS passthrough routes): RBAC, for the owner and
    // for the syncer.
    let tls_route = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {{name: claim, namespace: {ns}}}\nspec:\n  hostnames: [\"{VICTIM}.api.{domain}\"]\n  rules: [{{backendRefs: [{{name: {release}, port: 443}}]}}]\n",
        release = cp_names::RELEASE,
    );
    for (who, out) in [
        (
            "the owner",
            as_owner(
                &env,
                &["create", "--dry-run=server", "-f", "-"],
                Some(&tls_route),
            ),
        ),
        (
            "the syncer's token",
            with_token(
                &env,
                &token,
                &["create", "--dry-run=server"],
                Some(&tls_route),
            ),
        ),
    ] {
        let said = text(&out);
        if out.status.success() || !said.contains("forbidden") {
            open.push(format!(
                "a TLSRoute for {VICTIM}'s API name by {who}: {said}"
            ));
        }
    }

    // 6. The tenant kubeconfig others download: the owner plants one that runs a program.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let handed_out = secrets
        .get(KUBECONFIG_SECRET)
        .await
        .expect("the tenant kubeconfig");
    let planted = String::from_utf8(
        handed_out.data.as_ref().and_then(|d| d.get(KUBECONFIG_SECRET_KEY)).expect("a kubeconfig").0.clone(),
    )
    .expect("UTF-8")
    .replacen(
        "    token: ",
        "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch /tmp/pwned']}\n    token: ",
        1,
    );
    let patch = json!({"data": {KUBECONFIG_SECRET_KEY: ByteString(planted.into_bytes())}});
    let out = as_owner(
        &env,
        &[
            "-n",
            &ns,
            "patch",
            "secret",
            KUBECONFIG_SECRET,
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "the owner may write its Secrets: {}",
        text(&out)
    );
    // The platform's admin downloads it through the server (the portal's download is the
    // same code): never the planted file.
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let admin_token = dex.token("admin@example.com").await;
    let download = || async {
        let answer = reqwest::Client::new()
            .get(format!(
                "{}/api/v1/tenants/{MALLORY}/kubeconfig",
                server.url
            ))
            .bearer_auth(&admin_token)
            .send()
            .await
            .expect("the server answers");
        let code = answer.status().as_u16();
        (code, answer.text().await.unwrap_or_default())
    };
    let (code, body) = download().await;
    if body.contains("exec") && code == 200 {
        open.push(format!(
            "the server handed the admin the owner's planted `exec` kubeconfig:\n{body}"
        ));
    } else {
        assert_eq!(code, 409, "{body}");
        assert!(
            body.contains("users[0].user.exec"),
            "the refusal names the field: {body}"
        );
    }
    // The operator puts back its own at its next look at the tenant (asked for here).
    let request =
        json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "hostile"}}});
    tenants
        .patch(MALLORY, &PatchParams::default(), &Patch::Merge(&request))
        .await
        .expect("request a reconcile");
    let replaced = wait_for(
        "the operator to replace the planted kubeconfig, or a reconcile to keep it",
        Duration::from_secs(60),
        || async {
            let t = tenants.get(MALLORY).await.ok()?;
            let s = secrets.get(KUBECONFIG_SECRET).await.ok()?;
            let k = String::from_utf8(s.data?.remove(KUBECONFIG_SECRET_KEY)?.0).ok()?;
            if !k.contains("exec") {
                return Some(true);
            }
            // A reconcile after the request that kept it: the planted file stays handed out.
            let seen = t
                .metadata
                .annotations
                .as_ref()?
                .get("reconcile.fluxcd.io/requestedAt")?;
            (seen == "hostile"
                && t.status.as_ref()?.last_handled_reconcile_at.as_deref() == Some("hostile"))
            .then_some(false)
        },
    )
    .await;
    if !replaced {
        open.push(format!("the operator kept the owner's planted `exec` kubeconfig in Secret {ns}/{KUBECONFIG_SECRET}: every door hands it on"));
    } else {
        // ...and the admin's download is the tenant's public URL, CA and token, nothing else.
        let (code, body) = download().await;
        assert_eq!(code, 200, "{body}");
        let credential = kubeconfig::parse(&body).expect("a kubeconfig as KubeSpaces writes them");
        assert!(
            matches!(credential.auth, kubeconfig::Auth::Token(_)),
            "{body}"
        );
        assert!(
            body.contains(&format!("server: https://{MALLORY}.api.{domain}:443")),
            "{body}"
        );
    }
    drop(server);

    // 7. The operator's own credential: mallory replaces its vCluster's admin kubeconfig with one
    //    that reads the operator's ServiceAccount token from the operator's file system and skips
    //    the server's certificate check, and runs an impostor of its API that logs what it gets.
    //    (The impostor is placed by the platform's admin: a tenant's pod may no longer carry the
    //    labels, step 3; this step proves the operator gives nothing away even if one did.)
    let admin = secrets
        .get(cp_names::ADMIN_SECRET)
        .await
        .expect("the admin kubeconfig");
    let admin_text = String::from_utf8(
        admin
            .data
            .as_ref()
            .and_then(|d| d.get(cp_names::ADMIN_SECRET_KEY))
            .expect("config")
            .0
            .clone(),
    )
    .expect("UTF-8");
    let ca_line = admin_text
        .lines()
        .find(|l| l.trim_start().starts_with("certificate-authority-data:"))
        .expect("the CA line")
        .trim()
        .to_owned();
    let stealing = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{MALLORY}.api.{domain}:443\n    {ca_line}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    tokenFile: {TOKEN_FILE}\n"
    );
    let tls = std::env::temp_dir().join(format!("hostile-tls-{}", std::process::id()));
    std::fs::create_dir_all(&tls).expect("a temporary directory");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
        ])
        .arg(format!("/CN={MALLORY}.api.{domain}"))
        .arg("-keyout")
        .arg(tls.join("tls.key"))
        .arg("-out")
        .arg(tls.join("tls.crt"))
        .output()
        .expect("openssl");
    assert!(
        made.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let read = |f: &str| ByteString(std::fs::read(tls.join(f)).expect("the impostor's key pair"));
    let impostor_tls = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("impostor-tls".into()),
            ..Default::default()
        },
        data: Some(
            [
                ("tls.crt".to_owned(), read("tls.crt")),
                ("tls.key".to_owned(), read("tls.key")),
            ]
            .into(),
        ),
        ..Secret::default()
    };
    let _ = std::fs::remove_dir_all(&tls);
    secrets
        .create(&PostParams::default(), &impostor_tls)
        .await
        .expect("the impostor's certificate");
    let impostor_pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "api-impostor", "labels": {"app": "vcluster", "release": cp_names::RELEASE}},
        "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": nodes}]}]}}},
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65534},
            "containers": [{
                "name": "impostor",
                "image": platform_var("KUBESPACES_TLSSERVER_IMAGE"),
                "imagePullPolicy": "IfNotPresent",
                "args": ["-addr", ":8443", "-name", "impostor", "-log-auth"],
                "ports": [{"name": "https", "containerPort": 8443}],
                "readinessProbe": {"tcpSocket": {"port": 8443}, "periodSeconds": 1},
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "32Mi"}},
                "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": true}],
            }],
            "volumes": [{"name": "tls", "secret": {"secretName": "impostor-tls"}}],
        },
    }))
    .expect("a valid pod");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &impostor_pod)
        .await
        .expect("the impostor (as admin)");
    wait_pod_running(&pods, "api-impostor", Duration::from_secs(120)).await;
    let patch = json!({"data": {cp_names::ADMIN_SECRET_KEY: ByteString(stealing.into_bytes())}});
    let out = as_owner(
        &env,
        &[
            "-n",
            &ns,
            "patch",
            "secret",
            cp_names::ADMIN_SECRET,
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "the owner may write its Secrets: {}",
        text(&out)
    );
    // Only the first of these asks must be answered; each is a fresh reconcile, and the
    // operator's connections are spread over the real API pod and the impostor.
    let mut asked = 0;
    let refused = wait_for(
        "the operator to refuse the planted admin kubeconfig (or to give its token away)",
        Duration::from_secs(120),
        || {
            asked += 1;
            let request = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": format!("steal-{asked}")}}});
            let (tenants, env) = (tenants.clone(), &env);
            async move {
                let _ = tenants.patch(MALLORY, &PatchParams::default(), &Patch::Merge(&request)).await;
                let logs = env.kubectl(&["-n", &names::namespace(MALLORY), "logs", "api-impostor"], None);
                let logs = String::from_utf8_lossy(&logs.stdout).into_owned();
                if let Some(line) = logs.lines().find(|l| l.contains("authorization=\"Bearer ")) {
                    let stolen = line.split("Bearer ").nth(1).unwrap_or_default().trim_end_matches('"').to_owned();
                    let can = with_token(env, &stolen, &["auth", "can-i", "--list"], None);
                    return Some(Err(format!(
                        "the impostor of {MALLORY}'s API received the operator's token; with it, on the host:\n{}",
                        text(&can)
                    )));
                }
                let t: Tenant = tenants.get(MALLORY).await.ok()?;
                t.condition(conditions::API_REACHABLE)
                    .filter(|c| c.reason == "AdminKubeconfigInvalid")
                    .map(|c| Ok(c.message.clone()))
            }
        },
    )
    .await;
    match refused {
        Err(e) => open.push(e),
        Ok(refused) => {
            // The first field it planted that the operator came to: the cluster's, then the user's.
            assert!(
                refused.contains("clusters[0].cluster.insecure-skip-tls-verify")
                    || refused.contains("users[0].user.tokenFile"),
                "the refusal names a field the owner planted: {refused}"
            );
            let logs = env.kubectl_ok(&["-n", &ns, "logs", "api-impostor"], None);
            assert!(
                !logs.contains("Bearer"),
                "the impostor got a token:\n{logs}"
            );
        }
    }
    assert!(
        open.is_empty(),
        "{} attacks of {MALLORY}'s worked:\n\n{}",
        open.len(),
        open.join("\n\n")
    );

    for name in [MALLORY, VICTIM] {
        delete_tenant(&env, name).await;
    }
}
