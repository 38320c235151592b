//! Hostile tenants (issue 18): a tenant who attacks the platform gets nothing beyond its own
//! namespace. Each attack is played for real by the tenant `mallory`, as its owner on the host
//! (kubectl as `mallory@example.com`, and with the token of its vCluster's ServiceAccount, which
//! a tenant that steered its syncer would hold) and as cluster-admin inside its vCluster (the
//! kubeconfig it was handed), against the shared operator the chart installed and the
//! platform's Gateway. The victim is a web page in the namespace of another tenant, `victim`.
//! docs/security.md lists each path and the step below that plays it. Every step is played and
//! each attack that works is reported, so one run lists every open path.

use std::{path::PathBuf, time::Duration};

use k8s_openapi::{
    ByteString,
    api::core::v1::{Pod, Secret},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    hostile::{
        As, curl_app, kubectl_as, plant_control_plane_secret, refused_by, self_signed,
        tenant_warnings, try_create,
    },
    oidc::{Dex, Server},
    pods::{
        self, HTTP_PORT, delete_tenant, httpd_spec, page_of, pod, pod_ip, real_nodes,
        wait_pod_running,
    },
    tenant_cluster::{in_tenant, owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_yaml, wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::{KUBECONFIG_SECRET, KUBECONFIG_SECRET_KEY, Tenant},
    conditions, kubeconfig, names,
    names::control_plane as cp_names,
};
use serde_json::json;

#[path = "hostile_tenant/apps_certificate.rs"]
mod apps_certificate;
#[path = "hostile_tenant/control_plane.rs"]
mod control_plane;
#[path = "hostile_tenant/gateway_reach.rs"]
mod gateway_reach;
#[path = "hostile_tenant/operator_bounds.rs"]
mod operator_bounds;
#[path = "hostile_tenant/placement.rs"]
mod placement;

const READY_WITHIN: Duration = Duration::from_secs(300);
const MALLORY: &str = "mallory";
const OWNER: &str = "mallory@example.com";
const VICTIM: &str = "victim";
/// Where a ServiceAccount's token is mounted in a pod (the operator's, in its pod).
const TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// What every step works with.
struct Scene {
    env: Env,
    client: Client,
    domain: String,
    /// mallory's namespace, and the victim's.
    ns: String,
    victim_ns: String,
    /// The victim's page: its pod's address and what it answers.
    victim_ip: String,
    secret_page: String,
    /// The kubeconfig mallory was handed (cluster-admin inside its vCluster).
    kubeconfig: PathBuf,
    nodes: Vec<String>,
}

#[tokio::test]
async fn a_hostile_tenant_gets_nothing_beyond_its_namespace() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    for name in [MALLORY, VICTIM] {
        if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
            delete_tenant(&env, name).await;
        }
        let owner = format!("{name}@example.com");
        // Storage, so that a claim of mallory's meets the volume guard, not the quota (step 10).
        env.apply(&tenant_yaml(name, &owner, "2", "2Gi", Some("3Gi")));
    }
    for name in [MALLORY, VICTIM] {
        wait_ready(&tenants, name, READY_WITHIN).await;
    }
    // The victim: a page in the other tenant's namespace, which the platform's Gateway may reach
    // (tenant policies admit the platform's namespaces) and no tenant pod may.
    let nodes = real_nodes(&client).await;
    let victim_ns = names::namespace(VICTIM);
    let victim_pods: Api<Pod> = Api::namespaced(client.clone(), &victim_ns);
    let page = pod(
        "secret-page",
        &[("app", "secret-page")],
        httpd_spec(&env.busybox_image(), &nodes),
    );
    victim_pods
        .create(&PostParams::default(), &page)
        .await
        .expect("the victim's page");
    let victim = wait_pod_running(&victim_pods, "secret-page", Duration::from_secs(120)).await;
    let (kubeconfig, _) = owner_kubeconfig(&env, MALLORY).await;
    let scene = Scene {
        domain: platform_var("KUBESPACES_DOMAIN"),
        ns: names::namespace(MALLORY),
        victim_ns,
        victim_ip: pod_ip(&victim),
        secret_page: page_of("secret-page"),
        kubeconfig,
        nodes,
        client,
        env,
    };

    let mut open: Vec<String> = vec![];
    open.extend(gateway_to_another_tenant(&scene).await);
    open.extend(node_takeover_from_inside(&scene).await);
    open.extend(host_side_guards(&scene));
    open.extend(planted_tenant_kubeconfig(&scene, &tenants).await);
    open.extend(operator_token_theft(&scene, &tenants).await);
    open.extend(operator_bounds::stolen_operator_token(&scene));
    open.extend(apps_certificate::planted_apps_certificate(&scene).await);
    open.extend(placement::placement_and_volumes(&scene).await);
    open.extend(control_plane::control_plane_takeover(&scene).await);
    open.extend(gateway_reach::gateway_reach(&scene).await);
    assert!(
        open.is_empty(),
        "{} attacks of {MALLORY}'s worked:\n\n{}",
        open.len(),
        open.join("\n\n")
    );

    for name in [MALLORY, VICTIM] {
        delete_tenant(&scene.env, name).await;
    }
}

/// Step 1. Inside its vCluster, mallory points a selector-less Service at the victim's pod and
/// routes one of its own app names to it: the syncer would copy the Endpoints to the host and the
/// Gateway would proxy to whatever they name.
async fn gateway_to_another_tenant(s: &Scene) -> Option<String> {
    let steal_host = format!("steal.{}", names::apps_domain(MALLORY, &s.domain));
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
subsets: [{{addresses: [{{ip: "{ip}"}}], ports: [{{name: http, port: {HTTP_PORT}}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: steal, namespace: default}}
spec:
  parentRefs: [{{name: {gateway}, namespace: {gateway_ns}}}]
  hostnames: ["{steal_host}"]
  rules: [{{backendRefs: [{{name: steal, port: 80}}]}}]
"#,
        ip = s.victim_ip,
        gateway = cp_names::APPS_GATEWAY,
        gateway_ns = cp_names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
    );
    // The Gateway import can show up a moment after Ready (see docs/first-tenant.md).
    let gateway = [
        "get",
        "gateway",
        "-n",
        cp_names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
        cp_names::APPS_GATEWAY,
    ];
    in_tenant(&s.env, &s.kubeconfig, &gateway).await;
    let out = owner_kubectl(
        &s.env,
        &s.kubeconfig,
        &["apply", "-f", "-"],
        Some(&manifests),
    );
    assert!(out.status.success(), "inside the tenant: {}", text(&out));
    let url = format!("https://{steal_host}/");
    let outcome = wait_for(
        "the Gateway to serve the victim's page (the attack) or the syncer's Endpoints to be refused",
        Duration::from_secs(120),
        || async {
            let (code, body) = curl_app(&url);
            if body.contains(&s.secret_page) {
                return Some(Err(format!(
                    "the Gateway served tenant {VICTIM}'s page to {MALLORY} at {steal_host} (HTTP {code}): {body}"
                )));
            }
            let warnings = tenant_warnings(&s.env, &s.kubeconfig);
            warnings.lines().find(|l| l.contains(names::ENDPOINTS_GUARD)).map(|l| Ok(l.to_owned()))
        },
    )
    .await;
    let refusal = match outcome {
        Err(e) => return Some(e),
        Ok(refusal) => refusal,
    };
    assert!(
        refusal.contains("steal"),
        "the tenant is told which object: {refusal}"
    );
    // On the host, no Endpoints or EndpointSlice in mallory's namespace names the victim.
    for kind in ["endpoints", "endpointslices"] {
        let listed = s
            .env
            .kubectl_ok(&["-n", &s.ns, "get", kind, "-o", "json"], None);
        assert!(
            !listed.contains(&s.victim_ip),
            "{kind} in {} name {}:\n{listed}",
            s.ns,
            s.victim_ip
        );
    }
    let (code, body) = curl_app(&url);
    assert!(
        !body.contains(&s.secret_page) && code != "200",
        "HTTP {code}: {body}"
    );
    None
}

/// Step 1b. Inside its vCluster, pods the Pod Security level refuses: one that would take the
/// node (privileged, the host's network and process namespaces, the node's root file system), and
/// a plain pod that runs as root with the default capabilities (`NET_RAW` among them), which
/// `baseline` lets onto nodes shared with other tenants, in a namespace mallory loosened to
/// `privileged` inside its vCluster. Each is refused by the vCluster at `kubectl apply`, or by
/// the host when the syncer copies it; either way the tenant is told why.
async fn node_takeover_from_inside(s: &Scene) -> Option<String> {
    let image = s.env.busybox_image();
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
"#
    );
    let as_root = format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: loose
  labels: {{pod-security.kubernetes.io/enforce: privileged}}
---
apiVersion: v1
kind: Pod
metadata: {{name: as-root, namespace: loose}}
spec:
  containers: [{{name: main, image: {image}, command: [sleep, "3600"]}}]
"#
    );
    let mut open = vec![];
    for (name, manifest, what) in [
        (
            "root-me",
            root_me,
            "a privileged, hostPath, hostNetwork, hostPID pod",
        ),
        (
            "as-root",
            as_root,
            "a pod running as root with the default capabilities",
        ),
    ] {
        open.extend(refused_inside(s, name, &manifest, what).await);
    }
    (!open.is_empty()).then(|| open.join("\n\n"))
}

/// Applies `manifest` inside mallory's vCluster: the pod `name` must be refused with a Pod Security
/// reason, at once or by the host, and never exist on the host.
async fn refused_inside(s: &Scene, name: &str, manifest: &str, what: &str) -> Option<String> {
    let out = owner_kubectl(&s.env, &s.kubeconfig, &["apply", "-f", "-"], Some(manifest));
    if !out.status.success() {
        let said = text(&out);
        assert!(
            said.contains("PodSecurity") && said.contains(name),
            "inside the tenant, {what} is refused for its Pod Security: {said}"
        );
        return None;
    }
    let host_pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.ns);
    let outcome = wait_for(
        &format!("{what} to be refused on the host, with a Warning the tenant sees"),
        Duration::from_secs(120),
        || async {
            let listed = host_pods.list(&Default::default()).await.ok()?.items;
            if let Some(p) = listed.iter().find(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(name))
            }) {
                return Some(Err(format!(
                    "{what} made inside the tenant runs on the host: {:?}",
                    p.metadata.name
                )));
            }
            tenant_warnings(&s.env, &s.kubeconfig)
                .lines()
                .find(|l| l.contains(name) && l.contains("PodSecurity"))
                .map(|l| Ok(l.to_owned()))
        },
    )
    .await;
    outcome.err()
}

/// Steps 2 to 5, on the host, as the owner and with its vCluster syncer's own token: each write
/// that would reach past the namespace. The owner may no longer mint that token (step 11); it is
/// minted here as the platform's admin, for a syncer the tenant found a way to steer.
fn host_side_guards(s: &Scene) -> Vec<String> {
    let (env, ns, owner) = (&s.env, s.ns.as_str(), As::Owner(OWNER));
    let token = env
        .kubectl_ok(
            &[
                "-n",
                ns,
                "create",
                "token",
                cp_names::SYNCER_ACCOUNT,
                "--duration",
                "10m",
            ],
            None,
        )
        .trim()
        .to_owned();
    let syncer = As::Token(&token);
    let mut open = vec![];
    let mut refused = |who: As<'_>, manifest: &str, policy: &str, names: &str, what: &str| {
        open.extend(refused_by(&try_create(env, who, manifest), policy, names, what).err());
    };

    // 2. An EndpointSlice for one of its Services, naming the victim's pod.
    let slice = format!(
        r#"apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: steal-direct, namespace: {ns}, labels: {{kubernetes.io/service-name: {release}}}}}
addressType: IPv4
endpoints: [{{addresses: ["{ip}"]}}]
ports: [{{name: http, port: {HTTP_PORT}, protocol: TCP}}]
"#,
        release = cp_names::RELEASE,
        ip = s.victim_ip,
    );
    refused(
        syncer,
        &slice,
        names::ENDPOINTS_GUARD,
        "steal-direct",
        "an EndpointSlice with the syncer's token",
    );

    // 3. A pod that joins the tenant API's Service (its labels).
    let impostor = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: impostor, namespace: {ns}, labels: {{app: vcluster, release: {release}}}}}
spec:
  securityContext: {restricted_pod}
  containers: [{{name: main, image: {image}, command: [sleep, "3600"], securityContext: {restricted_container}}}]
"#,
        release = cp_names::RELEASE,
        image = env.busybox_image(),
        restricted_pod = pods::RESTRICTED_POD,
        restricted_container = pods::RESTRICTED_CONTAINER,
    );
    refused(
        owner,
        &impostor,
        names::CONTROL_PLANE_POD_GUARD,
        "impostor",
        "a pod with the control plane's labels",
    );
    refused(
        syncer,
        &impostor,
        names::CONTROL_PLANE_POD_GUARD,
        "impostor",
        "the same pod with the syncer's token",
    );

    // 4. A RoleBinding handing the owner's role to another namespace's ServiceAccount, named as
    //    the User its tokens authenticate as.
    let lent_to = format!("system:serviceaccount:{}:default", s.victim_ns);
    let binding = format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: lend, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{lent_to}"}}]
"#,
        role = names::OWNER_CLUSTER_ROLE,
    );
    let what = "a RoleBinding to a foreign ServiceAccount as a User";
    refused(
        owner,
        &binding,
        names::ROLE_BINDING_GUARD,
        &format!("User {lent_to}"),
        what,
    );

    // 5. Ingresses for another tenant's app name and for every name (no host); its own is fine.
    let ingress = |name: &str, host: Option<String>| {
        let host = host.map(|h| format!("host: \"{h}\", ")).unwrap_or_default();
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  rules: [{{{host}http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: steal, port: {{number: 80}}}}}}}}]}}}}]\n"
        )
    };
    let victims = Some(format!("www.{}", names::apps_domain(VICTIM, &s.domain)));
    for (name, host) in [("claim", victims), ("catch-all", None)] {
        refused(
            owner,
            &ingress(name, host),
            names::INGRESS_GUARD,
            name,
            "an Ingress for names not the tenant's",
        );
    }
    let own = ingress(
        "own",
        Some(format!("www.{}", names::apps_domain(MALLORY, &s.domain))),
    );
    let out = try_create(env, owner, &own);
    assert!(
        out.status.success(),
        "the tenant's own apps name: {}",
        text(&out)
    );
    // ...and a TLSRoute (the API names are TLS passthrough routes): RBAC, for both.
    let tls_route = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {{name: claim, namespace: {ns}}}\nspec:\n  hostnames: [\"{VICTIM}.api.{domain}\"]\n  rules: [{{backendRefs: [{{name: {release}, port: 443}}]}}]\n",
        domain = s.domain,
        release = cp_names::RELEASE,
    );
    for (who, by) in [(owner, "the owner"), (syncer, "the syncer's token")] {
        let out = try_create(env, who, &tls_route);
        let said = text(&out);
        if out.status.success() || !said.contains("forbidden") {
            open.push(format!(
                "a TLSRoute for {VICTIM}'s API name by {by}: {said}"
            ));
        }
    }
    open
}

/// Step 6. The tenant kubeconfig others download: the owner plants one that runs a program
/// (refused: the Secret is the control plane's, step 11; planted by the platform's admin then,
/// for a tenant that found a way). The platform's admin downloads it through the server (the
/// portal's download is the same code), then the operator puts its own back.
async fn planted_tenant_kubeconfig(s: &Scene, tenants: &Api<Tenant>) -> Vec<String> {
    let mut open = vec![];
    let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.ns);
    let handed_out = secrets
        .get(KUBECONFIG_SECRET)
        .await
        .expect("the tenant kubeconfig");
    let planted = secret_text(&handed_out, KUBECONFIG_SECRET_KEY).replacen(
        "    token: ",
        "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch /tmp/pwned']}\n    token: ",
        1,
    );
    open.extend(
        plant_control_plane_secret(
            &s.env,
            OWNER,
            &s.ns,
            KUBECONFIG_SECRET,
            KUBECONFIG_SECRET_KEY,
            &planted,
        )
        .err(),
    );
    // Started after the plant: its cache holds the planted Secret from its first list.
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
    request_reconcile(tenants, "hostile").await;
    let replaced = wait_for(
        "the operator to replace the planted kubeconfig, or a reconcile to keep it",
        Duration::from_secs(60),
        || async {
            let t = tenants.get(MALLORY).await.ok()?;
            let k = secret_text(
                &secrets.get(KUBECONFIG_SECRET).await.ok()?,
                KUBECONFIG_SECRET_KEY,
            );
            if !k.contains("exec") {
                return Some(true);
            }
            // A reconcile after the request that kept it: the planted file stays handed out.
            let handled = t.status.as_ref()?.last_handled_reconcile_at.as_deref();
            (handled == Some("hostile")).then_some(false)
        },
    )
    .await;
    if !replaced {
        open.push(format!(
            "the operator kept the owner's planted `exec` kubeconfig in Secret {}/{KUBECONFIG_SECRET}: every door hands it on",
            s.ns
        ));
        return open;
    }
    // ...and the admin's download is the tenant's public URL, CA and token, nothing else.
    let (code, body) = download().await;
    assert_eq!(code, 200, "{body}");
    let credential = kubeconfig::parse(&body).expect("a kubeconfig as KubeSpaces writes them");
    assert!(
        matches!(credential.auth, kubeconfig::Auth::Token(_)),
        "{body}"
    );
    let url = format!("server: https://{MALLORY}.api.{}:443", s.domain);
    assert!(body.contains(&url), "{body}");
    open
}

/// Step 7. The operator's own credential: mallory replaces its vCluster's admin kubeconfig with
/// one that reads the operator's ServiceAccount token from the operator's file system and skips
/// the server's certificate check, and an impostor of its API logs what it gets. The owner's
/// write is refused (the control plane's Secrets are the platform's, step 11), and so is a pod
/// with the API's labels (step 3): the platform's admin plants both here, to prove the operator
/// gives nothing away even if a tenant found a way to.
async fn operator_token_theft(s: &Scene, tenants: &Api<Tenant>) -> Vec<String> {
    let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.ns);
    let admin = secrets
        .get(cp_names::ADMIN_SECRET)
        .await
        .expect("the admin kubeconfig");
    let admin = secret_text(&admin, cp_names::ADMIN_SECRET_KEY);
    let ca_line = admin
        .lines()
        .find(|l| l.trim_start().starts_with("certificate-authority-data:"))
        .expect("the CA line")
        .trim();
    let stealing = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{MALLORY}.api.{domain}:443\n    {ca_line}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    tokenFile: {TOKEN_FILE}\n",
        domain = s.domain
    );
    start_impostor(s, &secrets).await;
    let owner_wrote = plant_control_plane_secret(
        &s.env,
        OWNER,
        &s.ns,
        cp_names::ADMIN_SECRET,
        cp_names::ADMIN_SECRET_KEY,
        &stealing,
    );
    // Each ask is a fresh reconcile; the operator's connections would be spread over the real
    // API pod and the impostor.
    let mut asked = 0;
    let outcome = wait_for(
        "the operator to refuse the planted admin kubeconfig (or to give its token away)",
        Duration::from_secs(120),
        || {
            asked += 1;
            async move {
                request_reconcile(tenants, &format!("steal-{asked}")).await;
                let logs = s.env.kubectl(&["-n", &s.ns, "logs", "api-impostor"], None);
                let logs = String::from_utf8_lossy(&logs.stdout).into_owned();
                if let Some(line) = logs.lines().find(|l| l.contains("authorization=\"Bearer ")) {
                    let stolen = line.split("Bearer ").nth(1).unwrap_or_default().trim_end_matches('"');
                    let can = kubectl_as(&s.env, As::Token(stolen), &["auth", "can-i", "--list"], None);
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
    let mut open: Vec<String> = owner_wrote.err().into_iter().collect();
    let refused = match outcome {
        Err(e) => {
            open.push(e);
            remove_impostor(s).await;
            return open;
        }
        Ok(refused) => refused,
    };
    // The first field it planted that the operator came to: the cluster's, then the user's.
    assert!(
        refused.contains("clusters[0].cluster.insecure-skip-tls-verify")
            || refused.contains("users[0].user.tokenFile"),
        "the refusal names a field the owner planted: {refused}"
    );
    let logs = s
        .env
        .kubectl_ok(&["-n", &s.ns, "logs", "api-impostor"], None);
    assert!(
        !logs.contains("Bearer"),
        "the impostor got a token:\n{logs}"
    );
    remove_impostor(s).await;
    open
}

/// The admin's impostor goes once its step is over: in the API's Service it would answer some of
/// the owner's connections of the later steps, with a certificate the owner's kubeconfig refuses.
async fn remove_impostor(s: &Scene) {
    let pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.ns);
    pods.delete("api-impostor", &DeleteParams::default())
        .await
        .expect("delete the impostor (as admin)");
    wait_gone(&pods, "api-impostor", Duration::from_secs(120)).await;
}

/// The impostor of mallory's API: an HTTPS server with the API's labels (so the API Service
/// sends it a share of the connections) that logs every Authorization header.
async fn start_impostor(s: &Scene, secrets: &Api<Secret>) {
    let (crt, key) = self_signed(&format!("{MALLORY}.api.{}", s.domain));
    let tls = Secret {
        metadata: ObjectMeta {
            name: Some("impostor-tls".into()),
            ..ObjectMeta::default()
        },
        data: Some(
            [
                ("tls.crt".to_owned(), ByteString(crt)),
                ("tls.key".to_owned(), ByteString(key)),
            ]
            .into(),
        ),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &tls)
        .await
        .expect("the impostor's certificate");
    let impostor: Pod = serde_json::from_value(json!({
        "metadata": {"name": "api-impostor", "labels": {"app": "vcluster", "release": cp_names::RELEASE}},
        "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": s.nodes}]}]}}},
            "securityContext": pods::restricted_pod(),
            "containers": [{
                "name": "impostor",
                "securityContext": pods::restricted_container(),
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
    let pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.ns);
    pods.create(&PostParams::default(), &impostor)
        .await
        .expect("the impostor (as admin)");
    wait_pod_running(&pods, "api-impostor", Duration::from_secs(120)).await;
}

/// The text under `key` of a Secret.
fn secret_text(secret: &Secret, key: &str) -> String {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone());
    String::from_utf8(bytes.unwrap_or_default()).expect("UTF-8")
}

/// Asks the operator to look at mallory's Tenant now (the operator does not watch Secrets).
async fn request_reconcile(tenants: &Api<Tenant>, token: &str) {
    let request = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}});
    let patched = tenants
        .patch(MALLORY, &PatchParams::default(), &Patch::Merge(&request))
        .await;
    patched.expect("request a reconcile");
}
