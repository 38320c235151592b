//! Exposing apps (issue 9): from `kubectl apply` inside a tenant to a public HTTPS URL with a
//! real certificate — the tenant's apps Gateway on Traefik, its wildcard certificate from
//! cert-manager, the tenant's HTTPRoute synced by its vCluster — and no tenant can take
//! another's names. Everything a user does here, she does with the tenant kubeconfig and curl.
//! The platform's side: a listener or Certificate changed by hand is put back, and the teardown
//! says what it waits for in the documented order (route, apps listener, namespace).

use std::{
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use kube::{
    Api,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
        WatchEvent, WatchParams,
    },
};
use kubespaces_acceptance::{
    Env,
    pods::{delete_tenant, leftovers, retry_until},
    tenant_app::{self, curl, route},
    tenant_cluster::{in_tenant, owner_kubeconfig, owner_kubectl, platform_var, text},
    tenant_yaml, wait_for, wait_ready,
};
use kubespaces_operator::{api::Tenant, conditions, names, names::control_plane as cp_names};

const READY_WITHIN: Duration = Duration::from_secs(300);
const ATLAS: &str = "team-atlas";
const BRAVO: &str = "team-bravo";

/// The serial number of the certificate the Gateway serves for `url`.
fn served_serial(url: &str) -> Option<String> {
    let out = curl(url, &["--output", "/dev/null", "--write-out", "%{certs}"]);
    let pem = String::from_utf8_lossy(&out.stdout).into_owned();
    out.status.success().then_some(())?;
    let leaf =
        pem.split("-----END CERTIFICATE-----").next()?.to_owned() + "-----END CERTIFICATE-----\n";
    let mut openssl = Command::new("openssl")
        .args(["x509", "-noout", "-serial"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    openssl.stdin.take()?.write_all(leaf.as_bytes()).ok()?;
    let out = openssl.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn dynamic(
    client: &kube::Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// The reasons of `name`'s `DeletionBlocked` condition, each time it changes, from now until the
/// Tenant is gone (a watch from its current version, so no status written meanwhile is missed).
async fn deletion_blocked_reasons(
    tenants: &Api<Tenant>,
    name: &str,
) -> tokio::task::JoinHandle<Vec<String>> {
    let version = tenants
        .get(name)
        .await
        .expect("the Tenant")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = tenants
        .watch(&params, &version)
        .await
        .expect("watch the Tenant")
        .boxed();
    tokio::spawn(async move {
        let mut reasons: Vec<String> = vec![];
        while let Some(event) = events.next().await {
            let tenant = match event.expect("a watch event") {
                WatchEvent::Modified(t) => t,
                WatchEvent::Deleted(_) => break,
                other => panic!("unexpected watch event: {other:?}"),
            };
            let reason = tenant.status.and_then(|s| {
                s.conditions
                    .into_iter()
                    .find(|c| c.type_ == conditions::DELETION_BLOCKED)
                    .map(|c| c.reason)
            });
            if let Some(reason) = reason.filter(|r| reasons.last() != Some(r)) {
                reasons.push(reason);
            }
        }
        reasons
    })
}

/// The Warning events about `route` inside the tenant (what `kubectl describe` shows the user).
fn route_events(env: &Env, kubeconfig: &Path, route: &str) -> String {
    let selector = format!("involvedObject.kind=HTTPRoute,involvedObject.name={route}");
    let out = owner_kubectl(
        env,
        kubeconfig,
        &[
            "-n",
            "default",
            "get",
            "events",
            "--field-selector",
            &selector,
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
        ],
        None,
    );
    text(&out)
}

#[tokio::test]
async fn an_app_in_a_tenant_is_served_at_its_own_https_url_and_nowhere_else() {
    let env = Env::get();
    let domain = platform_var("KUBESPACES_DOMAIN");
    let gateway_address = platform_var("KUBESPACES_GATEWAY_ADDRESS");
    let client = env.client().await;
    let tenants = env.tenants().await;
    for name in [ATLAS, BRAVO] {
        if matches!(tenants.get_opt(name).await, Ok(Some(_))) {
            delete_tenant(&env, name).await;
        }
        env.apply(&tenant_yaml(
            name,
            "alice@example.com",
            "2",
            "4Gi",
            Some("10Gi"),
        ));
    }
    let (atlas, _) = tokio::join!(
        wait_ready(&tenants, ATLAS, READY_WITHIN),
        wait_ready(&tenants, BRAVO, READY_WITHIN)
    );

    // The tenant's apps URL and the conditions behind it.
    let status = atlas.status.clone().expect("a status");
    let apps_url = format!("https://*.{ATLAS}.apps.{domain}");
    assert_eq!(
        status.endpoints.and_then(|e| e.apps).as_deref(),
        Some(apps_url.as_str())
    );
    for type_ in conditions::APPS_READINESS {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("condition {type_}"));
        assert_eq!(c.status, "True", "{type_}: {}", c.message);
    }

    // With the tenant kubeconfig only: a Deployment, a Service and an HTTPRoute.
    let (atlas_kc, _) = owner_kubeconfig(&env, ATLAS).await;
    let host = format!("hello.{ATLAS}.apps.{domain}");
    let url = format!("https://{host}/");
    let answer = format!("hello from {ATLAS}");
    in_tenant(&env, &atlas_kc, &["get", "ns"]).await;
    let out = owner_kubectl(
        &env,
        &atlas_kc,
        &["apply", "-f", "-"],
        Some(&tenant_app::manifests(&env.busybox_image(), &host, &answer)),
    );
    assert!(out.status.success(), "apply in the tenant: {}", text(&out));
    // curl from this machine: the name resolves (the route is accepted), the certificate
    // verifies against the platform's CA, and the app answers.
    let body = retry_until(&format!("curl {url}"), Duration::from_secs(180), || {
        let out = curl(&url, &[]);
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
            false => Err(format!(
                "{}; the route inside the tenant: {}",
                text(&out),
                route_events(&env, &atlas_kc, "hello")
            )),
        }
    })
    .await;
    assert_eq!(body, answer);
    // What the route says inside the tenant: accepted by the imported Gateway.
    let accepted = in_tenant(
        &env,
        &atlas_kc,
        &[
            "-n",
            "default",
            "get",
            "httproute",
            "hello",
            "-o",
            "jsonpath={.status.parents[0].conditions[?(@.type==\"Accepted\")].status}",
        ],
    )
    .await;
    assert_eq!(accepted.trim(), "True");

    // Tenant B claims A's app name and A's API name: refused inside B, never routed.
    let (bravo_kc, _) = owner_kubeconfig(&env, BRAVO).await;
    in_tenant(&env, &bravo_kc, &["get", "ns"]).await;
    let claims = [
        ("steal-app", host.clone()),
        ("steal-api", format!("{ATLAS}.api.{domain}")),
    ];
    for (route_name, claimed) in &claims {
        let out = owner_kubectl(
            &env,
            &bravo_kc,
            &["apply", "-f", "-"],
            Some(&route(route_name, claimed)),
        );
        assert!(out.status.success(), "apply in tenant B: {}", text(&out));
    }
    for (route_name, claimed) in &claims {
        let events = wait_for(
            &format!("tenant B to be told that {claimed} is not its to route"),
            Duration::from_secs(60),
            || async {
                let events = route_events(&env, &bravo_kc, route_name);
                events.contains("not permitted").then_some(events)
            },
        )
        .await;
        assert!(events.contains(claimed.as_str()), "{events}");
    }
    let host_routes = dynamic(
        &client,
        &names::namespace(BRAVO),
        "gateway.networking.k8s.io",
        "v1",
        "HTTPRoute",
        "httproutes",
    );
    let synced = host_routes
        .list(&ListParams::default())
        .await
        .expect("list B's host routes");
    assert!(
        synced.items.is_empty(),
        "none of B's claims reaches the host: {:?}",
        synced
            .items
            .iter()
            .map(|r| r.metadata.name.clone())
            .collect::<Vec<_>>()
    );
    let out = curl(&url, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        answer,
        "A still answers: {}",
        text(&out)
    );

    // And on the host, the admission policy refuses the same claims in B's namespace to anyone,
    // naming the field and the names B may use; B's own names pass.
    let bravo_ns = names::namespace(BRAVO);
    let host_route = |name: &str, hostname: &str, parent_ns: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {bravo_ns}}}\nspec:\n  parentRefs: [{{name: apps, namespace: {parent_ns}}}]\n  hostnames: [\"{hostname}\"]\n"
        )
    };
    for (hostname, parent_ns, refusal) in [
        (host.as_str(), bravo_ns.as_str(), "spec.hostnames"),
        (
            &format!("{ATLAS}.api.{domain}") as &str,
            bravo_ns.as_str(),
            "spec.hostnames",
        ),
        (
            &format!("x.{BRAVO}.apps.{domain}") as &str,
            names::namespace(ATLAS).as_str(),
            "spec.parentRefs",
        ),
    ] {
        let out = env.kubectl(
            &["apply", "--dry-run=server", "-f", "-"],
            Some(&host_route("claim", hostname, parent_ns)),
        );
        let said = text(&out);
        assert!(
            !out.status.success(),
            "{hostname} via {parent_ns} was admitted: {said}"
        );
        assert!(said.contains(refusal), "{said}");
        if refusal == "spec.hostnames" {
            assert!(
                said.contains(&format!("{BRAVO}.apps.{domain}")),
                "the fix is named: {said}"
            );
        }
    }
    let own = env.kubectl(
        &["apply", "--dry-run=server", "-f", "-"],
        Some(&host_route(
            "own",
            &format!("x.{BRAVO}.apps.{domain}"),
            &bravo_ns,
        )),
    );
    assert!(
        own.status.success(),
        "B's own name is admitted: {}",
        text(&own)
    );

    // Renewal: cert-manager re-issues (as `cmctl renew` asks it to), and the Gateway serves
    // the new certificate without dropping a request of a loop running meanwhile.
    let before = served_serial(&url).expect("the served certificate");
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let worker = {
        let (stop, sent, failed, url, answer) = (
            stop.clone(),
            sent.clone(),
            failed.clone(),
            url.clone(),
            answer.clone(),
        );
        std::thread::spawn(move || {
            let mut failures = vec![];
            while !stop.load(Ordering::SeqCst) {
                let out = curl(&url, &[]);
                sent.fetch_add(1, Ordering::SeqCst);
                if !out.status.success() || String::from_utf8_lossy(&out.stdout).trim() != answer {
                    failed.fetch_add(1, Ordering::SeqCst);
                    failures.push(text(&out));
                }
            }
            failures
        })
    };
    let certificates = dynamic(
        &client,
        &names::namespace(ATLAS),
        "cert-manager.io",
        "v1",
        "Certificate",
        "certificates",
    );
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let renew = serde_json::json!([{"op": "add", "path": "/status/conditions/-", "value": {
        "type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
        "message": "Certificate re-issuance manually triggered", "lastTransitionTime": now,
    }}]);
    certificates
        .patch_status(
            cp_names::APPS_CERTIFICATE,
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(renew).expect("a JSON patch")),
        )
        .await
        .expect("trigger the renewal");
    let after = wait_for(
        "the Gateway to serve the renewed certificate",
        Duration::from_secs(120),
        || async { served_serial(&url).filter(|s| *s != before) },
    )
    .await;
    // A few more requests on the new certificate, then the loop stops.
    let seen = sent.load(Ordering::SeqCst);
    wait_for(
        "requests on the new certificate",
        Duration::from_secs(30),
        || async { (sent.load(Ordering::SeqCst) >= seen + 5).then_some(()) },
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    let failures = worker.join().expect("the request loop");
    println!(
        "renewal: serial {before} -> {after}; {} requests during it, {} failed",
        sent.load(Ordering::SeqCst),
        failed.load(Ordering::SeqCst)
    );
    assert!(
        failures.is_empty(),
        "requests failed during the renewal: {failures:?}"
    );

    // Drift: the listener's hostname changed by hand and the Certificate deleted are put back by
    // the next reconcile (asked for the way GitOps tools ask), and the app answers again.
    let gateways = dynamic(
        &client,
        &names::namespace(ATLAS),
        "gateway.networking.k8s.io",
        "v1",
        "Gateway",
        "gateways",
    );
    let listener_hostname = |gateway: &DynamicObject| {
        gateway.data["spec"]["listeners"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["name"] == cp_names::APPS_LISTENER)
            .and_then(|l| l["hostname"].as_str().map(str::to_owned))
    };
    let gateway = gateways
        .get(cp_names::APPS_GATEWAY)
        .await
        .expect("the apps Gateway");
    let hostname = format!("*.{ATLAS}.apps.{domain}");
    assert_eq!(
        listener_hostname(&gateway).as_deref(),
        Some(hostname.as_str())
    );
    let index = gateway.data["spec"]["listeners"]
        .as_array()
        .and_then(|ls| ls.iter().position(|l| l["name"] == cp_names::APPS_LISTENER))
        .expect("the listener");
    let drift = serde_json::json!([{"op": "replace",
        "path": format!("/spec/listeners/{index}/hostname"), "value": "*.drifted.invalid"}]);
    gateways
        .patch(
            cp_names::APPS_GATEWAY,
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(drift).expect("a JSON patch")),
        )
        .await
        .expect("change the listener's hostname");
    let certificate_uid = certificates
        .get(cp_names::APPS_CERTIFICATE)
        .await
        .expect("the apps Certificate")
        .metadata
        .uid;
    certificates
        .delete(cp_names::APPS_CERTIFICATE, &DeleteParams::default())
        .await
        .expect("delete the apps Certificate");
    wait_for(
        "the Certificate deleted",
        Duration::from_secs(30),
        || async {
            let now = certificates
                .get_opt(cp_names::APPS_CERTIFICATE)
                .await
                .ok()?;
            (now.and_then(|c| c.metadata.uid) != certificate_uid).then_some(())
        },
    )
    .await;
    env.kubectl_ok(
        &[
            "annotate",
            "tenant",
            ATLAS,
            "--overwrite",
            &format!(
                "reconcile.fluxcd.io/requestedAt=drift-{}",
                std::process::id()
            ),
        ],
        None,
    );
    wait_for(
        "the listener's hostname and the Certificate put back",
        Duration::from_secs(120),
        || async {
            let gateway = gateways.get(cp_names::APPS_GATEWAY).await.ok()?;
            let certificate = certificates
                .get_opt(cp_names::APPS_CERTIFICATE)
                .await
                .ok()??;
            (listener_hostname(&gateway).as_deref() == Some(hostname.as_str())
                && certificate.metadata.uid != certificate_uid)
                .then_some(())
        },
    )
    .await;
    wait_ready(&tenants, ATLAS, READY_WITHIN).await;
    let body = retry_until(
        &format!("curl {url} after the drift"),
        Duration::from_secs(120),
        || {
            let out = curl(&url, &[]);
            match out.status.success() {
                true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
                false => Err(text(&out)),
            }
        },
    )
    .await;
    assert_eq!(body, answer, "the app answers after the drift was undone");

    // Delete the tenant: it says what it waits for, step by step, in the documented order (the
    // public route, then the apps listener, then the namespace); nothing of it is left anywhere
    // (its listener, Certificate and Secret included), and the name no longer answers at the
    // Gateway.
    let blocked = deletion_blocked_reasons(&tenants, ATLAS).await;
    delete_tenant(&env, ATLAS).await;
    let blocked = tokio::time::timeout(Duration::from_secs(30), blocked)
        .await
        .expect("the Tenant's deletion seen by its watch")
        .expect("the watch of the Tenant");
    assert!(
        blocked.len() >= 3
            && blocked[..3]
                == [
                    "RemovingRoute",
                    "RemovingAppsListener",
                    "NamespaceTerminating"
                ]
            && blocked[3..].iter().all(|r| r == "VolumesReleasing"),
        "the DeletionBlocked reasons of the teardown, in order: {blocked:?}"
    );
    let left = leftovers(&env, ATLAS, &names::namespace(ATLAS));
    assert!(left.is_empty(), "left of tenant {ATLAS}: {left:?}");
    let resolve = format!("{host}:443:{}", gateway_address.trim_end_matches(":443"));
    wait_for(
        "the deleted tenant's app to stop answering at the Gateway",
        Duration::from_secs(60),
        || async {
            let out = curl(&url, &["--resolve", &resolve]);
            let body = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            (body != answer).then_some(())
        },
    )
    .await;
    delete_tenant(&env, BRAVO).await;
}
