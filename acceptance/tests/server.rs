//! The KubeSpaces server against real Dex and the real cluster: which tokens it accepts (only
//! Dex's, for its own client, with a verified email), which it refuses and how (401, nothing
//! more), and that every user sees and touches only their own tenants while an admin sees all,
//! without learning whether a name they may not see exists. And the doors against hostile
//! users: the login redirects only to the public URL, every response carries the security
//! headers. And the portal's sessions: served by every replica with the same keys, kept over a
//! restart. The server runs in the test process as the chart's
//! `kubespaces-server` ServiceAccount; and the chart's own server, in its pods, at its door.

use std::time::Duration;

use base64::Engine;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
};
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server, TestIssuer, TestKey, log_in_on_dex, server_account_client},
    tenant_cluster::{assert_reaches_tenant, platform_var, private_kubeconfig},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::{
    api::Tenant,
    names::{SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION},
};
use serde_json::{Value, json};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

async fn status(server: &Server, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("{}/api/v1/tenants", server.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("request");
    let code = response.status().as_u16();
    (code, response.text().await.unwrap_or_default())
}

/// 401 with the one body every refusal gets: nothing that tells an attacker which check failed.
async fn assert_refused(server: &Server, token: &str, what: &str) {
    let (code, body) = status(server, Some(token)).await;
    assert_eq!(code, 401, "{what}: expected 401, got {code} {body}");
    assert_eq!(
        body, r#"{"error":"unauthorized"}"#,
        "{what}: the body says no more"
    );
}

fn parts(token: &str) -> (Value, Value) {
    let mut it = token.split('.');
    let header = serde_json::from_slice(&B64.decode(it.next().unwrap()).unwrap()).unwrap();
    let claims = serde_json::from_slice(&B64.decode(it.next().unwrap()).unwrap()).unwrap();
    (header, claims)
}

fn encode(part: &Value) -> String {
    B64.encode(part.to_string())
}

#[tokio::test]
async fn only_dex_tokens_for_this_client_with_a_verified_email_are_accepted() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let alice = dex.token("alice@example.com").await;
    let (code, body) = status(&server, Some(&alice)).await;
    assert_eq!(code, 200, "a real token is accepted: {body}");

    // No token, and garbage.
    let (code, body) = status(&server, None).await;
    assert_eq!((code, body.as_str()), (401, r#"{"error":"unauthorized"}"#));
    assert_refused(&server, "garbage", "garbage").await;
    assert_refused(&server, "a.b.c", "three garbage parts").await;

    // Real Dex tokens that must not pass: an unverified email, another client's token.
    let carol = dex.token("carol@example.com").await;
    assert_eq!(
        parts(&carol).1["email_verified"],
        json!(false),
        "dex.sh: carol is unverified"
    );
    assert_refused(&server, &carol, "unverified email").await;
    let other = dex.token_for_client("alice@example.com", "other-app").await;
    assert_eq!(parts(&other).1["aud"], json!("other-app"));
    assert_refused(&server, &other, "a token for another client (aud)").await;

    let (header, claims) = parts(&alice);
    let signature = alice.rsplit('.').next().unwrap();
    // alg none, no signature.
    let mut none = header.clone();
    none["alg"] = json!("none");
    assert_refused(
        &server,
        &format!("{}.{}.", encode(&none), encode(&claims)),
        "alg none",
    )
    .await;
    // Tampered payload under the real signature: alice claiming to be bob.
    let mut bob = claims.clone();
    bob["email"] = json!("bob@example.com");
    assert_refused(
        &server,
        &format!("{}.{}.{signature}", encode(&header), encode(&bob)),
        "tampered payload",
    )
    .await;
    // HS256 keyed with the issuer's public key (the key confusion attack).
    let jwks = dex.jwks().await;
    let kid = header["kid"].as_str().unwrap();
    let public = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .expect("Dex's key");
    for secret in [
        public.to_string().into_bytes(),
        B64.decode(public["n"].as_str().unwrap()).unwrap(),
    ] {
        let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        hs.kid = Some(kid.to_owned());
        let forged = jsonwebtoken::encode(
            &hs,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .unwrap();
        assert_refused(&server, &forged, "HS256 keyed with the public key").await;
    }
    // Signed by a key the issuer never published, under the issuer's real key id.
    let stranger = TestKey::generate("stranger");
    assert_refused(
        &server,
        &stranger.sign_as(kid, &claims),
        "unknown key, known kid",
    )
    .await;
    assert_refused(&server, &stranger.sign(&claims), "unknown key id").await;

    // And the real token still works after all that.
    assert_eq!(status(&server, Some(&alice)).await.0, 200);
}

fn claims(issuer: &str, changes: Value) -> Value {
    let now = jiff::Timestamp::now().as_second();
    let mut c = json!({
        "iss": issuer, "aud": "kubespaces", "sub": "u1",
        "iat": now, "exp": now + 600,
        "email": "alice@example.com", "email_verified": true,
    });
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

/// Correctly signed tokens that are wrong in one claim, from an issuer whose key the test holds;
/// and key rotation: an unknown key id refetches the JWKS, at most once per interval.
#[tokio::test]
async fn every_claim_is_checked_and_key_rotation_is_rate_limited() {
    let _env = Env::get();
    let first = TestKey::generate("first");
    let issuer = TestIssuer::start(&[&first]).await;
    let client = kubespaces_acceptance::oidc::server_account_client().await;
    let server = Server::start(&issuer.url, "kubespaces", client, Duration::from_secs(2)).await;
    let iss = issuer.url.clone();
    let now = jiff::Timestamp::now().as_second();

    assert_eq!(
        status(&server, Some(&first.sign(&claims(&iss, json!({})))))
            .await
            .0,
        200,
        "the control: a correct token from this issuer is accepted"
    );
    for (what, changes) in [
        ("wrong audience", json!({"aud": "other-app"})),
        (
            "wrong issuer",
            json!({"iss": "https://evil.example.com/dex"}),
        ),
        ("expired", json!({"exp": now - 120})),
        ("not yet valid", json!({"nbf": now + 600})),
        ("no exp", json!({"exp": null})),
        ("no email", json!({"email": null})),
        ("email not verified", json!({"email_verified": false})),
        ("email_verified missing", json!({"email_verified": null})),
        (
            "email_verified as a string",
            json!({"email_verified": "true"}),
        ),
        // OIDC Core 3.1.3.7: several audiences need an azp, and an azp must be this client.
        (
            "several audiences, no azp",
            json!({"aud": ["kubespaces", "other-app"]}),
        ),
        (
            "several audiences, azp another client",
            json!({"aud": ["kubespaces", "other-app"], "azp": "other-app"}),
        ),
        (
            "one audience, azp another client",
            json!({"azp": "other-app"}),
        ),
    ] {
        assert_refused(&server, &first.sign(&claims(&iss, changes)), what).await;
    }
    // The controls of the azp rule: issued to this client, with or without other audiences.
    for changes in [
        json!({"azp": "kubespaces"}),
        json!({"aud": ["kubespaces", "other-app"], "azp": "kubespaces"}),
    ] {
        let (code, body) = status(&server, Some(&first.sign(&claims(&iss, changes.clone())))).await;
        assert_eq!(code, 200, "{changes}: {body}");
    }

    // Rotation: a token under a key the JWKS does not have yet is refused...
    let second = TestKey::generate("second");
    let token = second.sign(&claims(&iss, json!({})));
    assert_refused(&server, &token, "a key not yet published").await;
    // ...made-up key ids do not each cost a fetch: at most one per started 2 s interval (a
    // loaded machine may take more than one interval for the 20 requests)...
    let before = issuer.fetches();
    let started = std::time::Instant::now();
    for i in 0..20 {
        assert_refused(
            &server,
            &second.sign_as(&format!("made-up-{i}"), &claims(&iss, json!({}))),
            "made-up kid",
        )
        .await;
    }
    let intervals = 1 + (started.elapsed().as_secs() / 2) as usize;
    assert!(
        issuer.fetches() - before <= intervals,
        "20 unknown key ids caused {} JWKS fetches in {:?} (at most one per 2 s interval)",
        issuer.fetches() - before,
        started.elapsed()
    );
    // ...and once the issuer publishes the key, the next fetch picks it up.
    issuer.publish(&second);
    wait_for(
        "the rotated key to be accepted",
        Duration::from_secs(10),
        || async { (status(&server, Some(&token)).await.0 == 200).then_some(()) },
    )
    .await;
}

async fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.url))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let code = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// Reads SSE events from a live stream until `until` matches one; returns every tenant name seen.
async fn stream_until(
    response: reqwest::Response,
    until: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, String)> {
    let mut seen = vec![];
    let mut buffer = String::new();
    let mut bytes = response.bytes_stream();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, bytes.next()).await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("stream")));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let kind = event
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("");
            let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let tenant: Value = serde_json::from_str(data).unwrap();
            let name = tenant["metadata"]["name"].as_str().unwrap_or("").to_owned();
            seen.push((kind.to_owned(), name));
            if until(kind, &tenant) {
                return seen;
            }
        }
    }
    panic!("the stream ended or timed out; seen: {seen:?}");
}

#[tokio::test]
async fn users_see_and_touch_only_their_own_tenants_and_admins_see_all() {
    let env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let alice = dex.token("alice@example.com").await;
    let bob = dex.token("bob@example.com").await;
    let admin = dex.token("admin@example.com").await;
    let tenants = env.tenants().await;
    for n in ["srv-alice", "srv-alice-2", "srv-bob"] {
        let _ = tenants.delete(n, &DeleteParams::default()).await;
        wait_gone(&tenants, n, Duration::from_secs(600)).await;
    }
    use reqwest::Method;
    let create = |name: &str| json!({"name": name, "cpu": "1", "memory": "1Gi"});

    let (code, created) = api(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &alice,
        Some(create("srv-alice")),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    // The owner is the caller's verified email, in the real object.
    let stored = tenants.get("srv-alice").await.unwrap();
    assert_eq!(stored.spec.owner, "alice@example.com");
    let (code, body) = api(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &alice,
        Some(create("srv-alice")),
    )
    .await;
    assert_eq!(code, 409, "exists: {body}");
    // Not an admin: may not create for someone else.
    let mut for_bob = create("srv-for-bob");
    for_bob["owner"] = json!("bob@example.com");
    let (code, body) = api(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &alice,
        Some(for_bob),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    // The CRD's own validation message comes back for a bad quantity.
    let mut bad = create("srv-bad");
    bad["cpu"] = json!("lots");
    let (code, body) = api(&server, Method::POST, "/api/v1/tenants", &alice, Some(bad)).await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("must be a Kubernetes quantity"),
        "{body}"
    );

    // Bob: alice's tenant does not exist for him.
    wait_for(
        "alice's tenant in the cache",
        Duration::from_secs(10),
        || async {
            (api(
                &server,
                Method::GET,
                "/api/v1/tenants/srv-alice",
                &alice,
                None,
            )
            .await
            .0 == 200)
                .then_some(())
        },
    )
    .await;
    for (method, path) in [
        (Method::GET, "/api/v1/tenants/srv-alice"),
        (Method::GET, "/api/v1/tenants/srv-alice/kubeconfig"),
        (Method::DELETE, "/api/v1/tenants/srv-alice"),
    ] {
        let (code, body) = api(&server, method.clone(), path, &bob, None).await;
        assert_eq!(code, 404, "bob {method} {path}: {body}");
        assert_eq!(body["error"], json!("tenant \"srv-alice\" not found"));
    }
    assert!(
        tenants.get("srv-alice").await.is_ok(),
        "bob's delete deleted nothing"
    );
    let (_, list) = api(&server, Method::GET, "/api/v1/tenants", &bob, None).await;
    assert!(!names(&list).contains(&"srv-alice".to_owned()), "{list}");

    // Bob's live stream: alice's next tenant never shows; his own does. Events arrive in order,
    // so once his own tenant (created after alice's) has arrived, alice's would have, too.
    let bob_stream = reqwest::Client::new()
        .get(format!("{}/api/v1/watch/tenants", server.url))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(bob_stream.status(), 200);
    let alice_stream = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/watch/tenants?name=srv-alice-2",
            server.url
        ))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(
        api(
            &server,
            Method::POST,
            "/api/v1/tenants",
            &alice,
            Some(create("srv-alice-2"))
        )
        .await
        .0,
        201
    );
    // Alice sees hers arrive (so it is in the feed before bob creates his).
    let seen = stream_until(alice_stream, |_, t| t["metadata"]["name"] == "srv-alice-2").await;
    assert!(
        seen.iter().all(|(_, n)| n == "srv-alice-2"),
        "?name= filters: {seen:?}"
    );
    assert_eq!(
        api(
            &server,
            Method::POST,
            "/api/v1/tenants",
            &bob,
            Some(create("srv-bob"))
        )
        .await
        .0,
        201
    );
    let seen = stream_until(bob_stream, |_, t| t["metadata"]["name"] == "srv-bob").await;
    assert!(
        seen.iter().all(|(_, n)| !n.starts_with("srv-alice")),
        "bob's stream showed alice's tenants: {seen:?}"
    );

    // The admin sees both, and may read alice's.
    wait_for(
        "both tenants in the admin's list",
        Duration::from_secs(10),
        || async {
            let (_, list) = api(&server, Method::GET, "/api/v1/tenants", &admin, None).await;
            let n = names(&list);
            (n.contains(&"srv-alice".to_owned()) && n.contains(&"srv-bob".to_owned())).then_some(())
        },
    )
    .await;
    assert_eq!(
        api(
            &server,
            Method::GET,
            "/api/v1/tenants/srv-alice",
            &admin,
            None
        )
        .await
        .0,
        200
    );
    // Alice's list has hers only.
    let (_, list) = api(&server, Method::GET, "/api/v1/tenants", &alice, None).await;
    let n = names(&list);
    assert!(
        n.contains(&"srv-alice".to_owned()) && !n.contains(&"srv-bob".to_owned()),
        "{n:?}"
    );

    // No kubeconfig before the control plane publishes one: a clear 409.
    let (code, body) = api(
        &server,
        Method::GET,
        "/api/v1/tenants/srv-alice/kubeconfig",
        &alice,
        None,
    )
    .await;
    if code == 409 {
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("has no kubeconfig yet"),
            "{body}"
        );
    } else {
        assert_eq!(
            code, 200,
            "either not ready (409) or the kubeconfig: {body}"
        );
    }
    // Once Ready (its control plane up), the kubeconfig is there, and it works: kubectl with
    // exactly that file answers from the tenant. The server answers from its watch cache, which
    // follows the API server a moment later: Ready as the server sees it.
    wait_ready(&tenants, "srv-alice", Duration::from_secs(300)).await;
    wait_for(
        "the server to see srv-alice Ready",
        Duration::from_secs(30),
        || async {
            let (_, body) = api(
                &server,
                Method::GET,
                "/api/v1/tenants/srv-alice",
                &alice,
                None,
            )
            .await;
            (body["status"]["phase"] == "Ready").then_some(())
        },
    )
    .await;
    // Before anything of the test's connects to the tenant's API (a later connection would undo
    // the sleep request): sleep and wake, after which the kubeconfig below must still work.
    sleep_and_wake_through_the_api(&server, &tenants, "srv-alice", &alice, &bob, &admin).await;
    let (code, body) = api(
        &server,
        Method::GET,
        "/api/v1/tenants/srv-alice/kubeconfig",
        &alice,
        None,
    )
    .await;
    assert_eq!(code, 200, "the kubeconfig of a Ready tenant: {body}");
    let kubeconfig = private_kubeconfig(
        "srv-alice.kubeconfig",
        body.as_str().expect("a kubeconfig (YAML) body"),
    );
    assert_reaches_tenant(&env, &kubeconfig).await;

    // Owners delete their own; the admin deletes anyone's.
    assert_eq!(
        api(
            &server,
            Method::DELETE,
            "/api/v1/tenants/srv-alice",
            &alice,
            None
        )
        .await
        .0,
        202
    );
    assert_eq!(
        api(
            &server,
            Method::DELETE,
            "/api/v1/tenants/srv-alice-2",
            &admin,
            None
        )
        .await
        .0,
        202
    );
    assert_eq!(
        api(
            &server,
            Method::DELETE,
            "/api/v1/tenants/srv-bob",
            &bob,
            None
        )
        .await
        .0,
        202
    );
    for n in ["srv-alice", "srv-alice-2", "srv-bob"] {
        wait_gone(&tenants, n, Duration::from_secs(600)).await;
    }
}

/// Sleep and wake through the REST API on the Ready tenant `name` of `owner`: someone who may not
/// see it (`other`) gets the 404 of a missing tenant and writes nothing; its owner's sleep and an
/// admin's wake each answer 202 with what the tenant does, write their annotation on the Tenant
/// (read with kube), and the API then reports the phase asked for (Asleep, then Ready again).
async fn sleep_and_wake_through_the_api(
    server: &Server,
    tenants: &Api<Tenant>,
    name: &str,
    owner: &str,
    other: &str,
    admin: &str,
) {
    use reqwest::Method;
    let path = |request: &str| format!("/api/v1/tenants/{name}/{request}");
    for request in ["sleep", "wake"] {
        let (code, body) = api(server, Method::POST, &path(request), other, None).await;
        assert_eq!(code, 404, "{request} by another user: {body}");
        assert_eq!(body["error"], json!(format!("tenant \"{name}\" not found")));
    }
    let untouched = tenants.get(name).await.unwrap();
    for annotation in [SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION] {
        assert!(
            !untouched.annotations().contains_key(annotation),
            "another user's request wrote {annotation}"
        );
    }
    for (request, caller, doing, annotation, phase) in [
        (
            "sleep",
            owner,
            "sleeping",
            SLEEP_REQUESTED_ANNOTATION,
            "Asleep",
        ),
        ("wake", admin, "waking", WAKE_REQUESTED_ANNOTATION, "Ready"),
    ] {
        let before = Timestamp::now();
        let (code, body) = api(server, Method::POST, &path(request), caller, None).await;
        assert_eq!((code, &body), (202, &json!({ doing: name })), "{request}");
        let written = tenants.get(name).await.unwrap();
        let at = written
            .annotations()
            .get(annotation)
            .map(|a| a.parse::<Timestamp>());
        assert!(
            matches!(at, Some(Ok(at)) if at >= before),
            "{annotation} is the time of the request: {at:?}"
        );
        wait_for(
            &format!("the API to report {name} {phase}"),
            Duration::from_secs(300),
            || async {
                let (_, body) = api(
                    server,
                    Method::GET,
                    &format!("/api/v1/tenants/{name}"),
                    owner,
                    None,
                )
                .await;
                (body["status"]["phase"] == phase).then_some(())
            },
        )
        .await;
    }
}

/// Status, content type and body text of one request.
async fn raw(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.url))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("request");
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (
        code,
        content_type,
        response.text().await.unwrap_or_default(),
    )
}

/// Everything a live stream sends until `stop` turns true.
async fn read_until(
    response: reqwest::Response,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> String {
    let mut seen = String::new();
    let mut bytes = response.bytes_stream();
    loop {
        tokio::select! {
            chunk = bytes.next() => match chunk {
                Some(chunk) => seen.push_str(&String::from_utf8_lossy(&chunk.expect("stream"))),
                None => return format!("{seen}<the stream ended>"),
            },
            _ = stop.wait_for(|stop| *stop) => return seen,
        }
    }
}

async fn watch(server: &Server, token: &str, name: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}/api/v1/watch/tenants?name={name}", server.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("the live stream")
}

/// For bob, alice's tenant and a name nobody has get the same answer on every verb: status,
/// content type and body, but for the name he asked about. Create is the one verb where a taken
/// name must fail; its failure is the same whoever holds the name, alice herself included.
#[tokio::test]
async fn bob_cannot_tell_whether_alices_tenant_name_exists() {
    use reqwest::Method;
    let env = Env::get();
    let dex = Dex::get();
    let server = Server::with_dex(&dex).await;
    let alice = dex.token("alice@example.com").await;
    let bob = dex.token("bob@example.com").await;
    let tenants = env.tenants().await;
    // Of one length, so not even the lengths of the answers differ.
    let (taken, free) = ("srv-hidden", "srv-nobody");
    for n in [taken, free] {
        let _ = tenants.delete(n, &DeleteParams::default()).await;
        wait_gone(&tenants, n, Duration::from_secs(600)).await;
    }
    let (code, body) = api(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &alice,
        Some(json!({"name": taken, "cpu": "1", "memory": "1Gi"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    wait_for(
        "alice's tenant in the cache",
        Duration::from_secs(10),
        || async {
            let path = format!("/api/v1/tenants/{taken}");
            (api(&server, Method::GET, &path, &alice, None).await.0 == 200).then_some(())
        },
    )
    .await;

    type Request = (Method, String, Option<Value>);
    let requests = |n: &str| -> Vec<Request> {
        vec![
            (Method::GET, format!("/api/v1/tenants/{n}"), None),
            (Method::DELETE, format!("/api/v1/tenants/{n}"), None),
            (Method::GET, format!("/api/v1/tenants/{n}/kubeconfig"), None),
            (Method::POST, format!("/api/v1/tenants/{n}/sleep"), None),
            (Method::POST, format!("/api/v1/tenants/{n}/wake"), None),
            // Creates that fail whatever the name: the CRD's validation, an owner that is not
            // bob's to give, a field the API does not have.
            (
                Method::POST,
                "/api/v1/tenants".into(),
                Some(json!({"name": n, "cpu": "lots", "memory": "1Gi"})),
            ),
            (
                Method::POST,
                "/api/v1/tenants".into(),
                Some(json!({"name": n, "cpu": "1", "memory": "1Gi", "owner": "alice@example.com"})),
            ),
            (
                Method::POST,
                "/api/v1/tenants".into(),
                Some(json!({"name": n, "cpu": "1", "memory": "1Gi", "bogus": true})),
            ),
        ]
    };
    for ((method, path_taken, body_taken), (_, path_free, body_free)) in
        requests(taken).into_iter().zip(requests(free))
    {
        let (code_t, type_t, text_t) = raw(
            &server,
            method.clone(),
            &path_taken,
            &bob,
            body_taken.as_ref(),
        )
        .await;
        let (code_f, type_f, text_f) = raw(
            &server,
            method.clone(),
            &path_free,
            &bob,
            body_free.as_ref(),
        )
        .await;
        let what = format!("bob {method} {path_taken} {body_taken:?} vs {path_free}");
        assert_ne!(code_t / 100, 2, "{what}: {code_t} {text_t}");
        assert_eq!(code_t, code_f, "{what}: {text_t} / {text_f}");
        assert_eq!(type_t, type_f, "{what}");
        assert_eq!(
            text_t.replace(taken, "<name>"),
            text_f.replace(free, "<name>"),
            "{what}"
        );
        assert!(!text_t.contains("alice"), "{what}: {text_t}");
    }
    assert_eq!(
        tenants.get(taken).await.unwrap().spec.owner,
        "alice@example.com",
        "bob's requests changed nothing"
    );
    assert!(
        tenants.get_opt(free).await.unwrap().is_none(),
        "the failed creates created nothing"
    );

    // The live stream for one name: nothing for either, even while alice's tenant changes, and
    // for as long as alice's own stream takes to show her the change.
    let (stream_taken, stream_free) = (
        watch(&server, &bob, taken).await,
        watch(&server, &bob, free).await,
    );
    assert_eq!(
        (
            stream_taken.status(),
            stream_taken.headers().get("content-type")
        ),
        (
            stream_free.status(),
            stream_free.headers().get("content-type")
        ),
    );
    assert_eq!(stream_taken.status(), 200);
    let alice_stream = watch(&server, &alice, taken).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let bob_reads = tokio::spawn(async move {
        tokio::join!(
            read_until(stream_taken, stopped.clone()),
            read_until(stream_free, stopped)
        )
    });
    tenants
        .patch(
            taken,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"kubespaces.io/test-poke": "1"}}})),
        )
        .await
        .unwrap();
    stream_until(alice_stream, |_, t| {
        t["metadata"]["annotations"]["kubespaces.io/test-poke"] == "1"
    })
    .await;
    // Alice has seen the change; give bob's streams as long again before comparing them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.send(true).unwrap();
    let (seen_taken, seen_free) = bob_reads.await.unwrap();
    assert_eq!(seen_taken, seen_free, "bob's streams differ");
    assert!(
        !seen_taken.contains(taken),
        "bob's stream showed alice's tenant: {seen_taken}"
    );

    // Create: a taken name must fail (the one signal left: see docs/server-cli-portal.md), and
    // the failure does not say whose it is: bob hears what alice hears for her own tenant.
    let create = json!({"name": taken, "cpu": "1", "memory": "1Gi"});
    let for_bob = raw(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &bob,
        Some(&create),
    )
    .await;
    let for_alice = raw(
        &server,
        Method::POST,
        "/api/v1/tenants",
        &alice,
        Some(&create),
    )
    .await;
    assert_eq!(for_bob.0, 409, "{}", for_bob.2);
    assert_eq!(
        for_bob, for_alice,
        "the same answer for the owner and for bob"
    );
    assert!(for_bob.2.contains("is not available"), "{}", for_bob.2);
    assert!(!for_bob.2.contains("alice"), "{}", for_bob.2);
    let path = format!("/api/v1/tenants/{taken}");
    assert_eq!(api(&server, Method::GET, &path, &bob, None).await.0, 404);

    let _ = tenants.delete(taken, &DeleteParams::default()).await;
    wait_gone(&tenants, taken, Duration::from_secs(600)).await;
}

/// The value of metric `name` (no labels) in the server's /metrics, read as the admin.
async fn metric(server: &Server, admin: &str, name: &str) -> f64 {
    let (code, _, text) = raw(server, reqwest::Method::GET, "/metrics", admin, None).await;
    assert_eq!(code, 200, "/metrics: {text}");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

/// A file of one session key made now, 0600, as a platform team would mount it from a Secret.
fn session_keys_file() -> std::path::PathBuf {
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))
        .expect("random bytes");
    private_kubeconfig(
        "server-session-keys",
        &format!(
            "{}\n",
            base64::engine::general_purpose::STANDARD.encode(key)
        ),
    )
}

/// The portal's home page for `browser`: whom it greets, or None when it sends to the login.
async fn greeted(browser: &reqwest::Client, server: &Server) -> Option<String> {
    let page = browser
        .get(format!("{}/", server.url))
        .send()
        .await
        .expect("the portal's home page");
    if page.url().path() == "/login" || !page.url().as_str().starts_with(&server.url) {
        return None;
    }
    let text = page.text().await.unwrap();
    ["alice@example.com", "bob@example.com"]
        .into_iter()
        .find(|who| text.contains(who))
        .map(str::to_owned)
}

/// Two servers with the same session keys are two replicas behind one public URL: a login
/// begun on one finishes on the other, either serves the session, and a restart keeps it. A
/// server with other keys (or none) does not know it. `/login`, open to anyone, keeps nothing
/// on the server: the login travels sealed in its cookie.
#[tokio::test]
async fn a_portal_session_is_served_by_every_replica_and_outlives_a_restart() {
    let _env = Env::get();
    let dex = Dex::get();
    let keys = session_keys_file();
    let start = |public_url: Option<String>, keys: Option<std::path::PathBuf>| {
        let issuer = dex.issuer.clone();
        let client_id = dex.client_id.clone();
        async move {
            Server::start_with(
                &issuer,
                &client_id,
                server_account_client().await,
                Duration::from_secs(30),
                |c| {
                    c.public_url = public_url;
                    c.session_keys_file = keys;
                },
            )
            .await
        }
    };
    let a = start(None, Some(keys.clone())).await;
    let b = start(Some(a.url.clone()), Some(keys.clone())).await;

    // The login begins on a; Dex sends the browser back to the public URL, where b answers.
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().path() == "/auth/callback" {
                attempt.stop()
            } else {
                attempt.follow()
            }
        }))
        .build()
        .unwrap();
    let page = browser
        .get(format!("{}/login", a.url))
        .send()
        .await
        .unwrap();
    assert!(
        page.url().as_str().starts_with(&dex.issuer),
        "{}",
        page.url()
    );
    let back = log_in_on_dex(&browser, page, "alice@example.com").await;
    let callback = back
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("Dex's answer {} has no Location", back.status()));
    assert!(
        callback.starts_with(&format!("{}/auth/callback?", a.url)),
        "{callback}"
    );
    let done = browser
        .get(callback.replacen(&a.url, &b.url, 1))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200, "{}", done.url());
    assert!(done.text().await.unwrap().contains("alice@example.com"));
    // The login was used up: its cookie is gone, and the same answer again is refused.
    let again = browser
        .get(callback.replacen(&a.url, &b.url, 1))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 403);
    assert_eq!(
        again.text().await.unwrap(),
        r#"{"error":"the login could not be completed; log in again"}"#
    );

    // Either replica serves the session b started.
    assert_eq!(
        greeted(&browser, &b).await.as_deref(),
        Some("alice@example.com")
    );
    assert_eq!(
        greeted(&browser, &a).await.as_deref(),
        Some("alice@example.com")
    );
    let admin = dex.token("admin@example.com").await;
    assert_eq!(
        metric(&b, &admin, "kubespaces_server_portal_logins_total").await,
        1.0
    );
    // A restart of a keeps it: the new process reads the same keys.
    let a_url = a.url.clone();
    drop(a);
    let restarted = start(Some(a_url), Some(keys.clone())).await;
    assert_eq!(
        greeted(&browser, &restarted).await.as_deref(),
        Some("alice@example.com")
    );
    // A server with a key of its own does not know the session.
    let stranger = start(Some(b.url.clone()), None).await;
    assert_eq!(greeted(&browser, &stranger).await, None);
    let _ = std::fs::remove_file(&keys);
}

/// Every response, whatever answers it (API, portal, probes, refusals, the router's own 404 and
/// 405, redirects), carries the security headers; Strict-Transport-Security only when the public
/// URL is https. The login's redirect URI is the public URL's, whatever Host the request names.
#[tokio::test]
async fn every_response_carries_the_security_headers_and_logins_return_to_the_public_url() {
    use reqwest::{Method, header};
    let _env = Env::get();
    let dex = Dex::get();
    let alice = dex.token("alice@example.com").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for public_url in [None, Some("https://kubespaces.example.com")] {
        let server = Server::start_with(
            &dex.issuer,
            &dex.client_id,
            server_account_client().await,
            Duration::from_secs(30),
            |c| c.public_url = public_url.map(str::to_owned),
        )
        .await;
        let requests: [(Method, &str, Option<&str>, u16); 11] = [
            (Method::GET, "/", None, 200),
            (Method::GET, "/healthz", None, 200),
            (Method::GET, "/.well-known/kubespaces", None, 200),
            (Method::GET, "/api/v1/tenants", None, 401),
            (Method::GET, "/api/v1/tenants", Some(&alice), 200),
            (Method::GET, "/api/v1/tenants/srv-nobody", Some(&alice), 404),
            (Method::GET, "/no-such-path", None, 404),
            (Method::DELETE, "/healthz", None, 405),
            (Method::GET, "/login", None, 303),
            (Method::GET, "/tenants/srv-nobody", None, 303),
            (Method::GET, "/auth/callback?state=x&code=y", None, 403),
        ];
        for (method, path, token, code) in requests {
            let mut request = client.request(method.clone(), format!("{}{path}", server.url));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.unwrap();
            let what = format!("{method} {path} ({public_url:?})");
            assert_eq!(response.status().as_u16(), code, "{what}");
            let h = response.headers();
            let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            for directive in [
                "default-src 'none'",
                "frame-ancestors 'none'",
                "connect-src 'self'",
            ] {
                assert!(csp.contains(directive), "{what}: {csp}");
            }
            assert!(csp.contains("script-src 'sha256-"), "{what}: {csp}");
            assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
            assert_eq!(h[header::X_FRAME_OPTIONS], "DENY", "{what}");
            assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{what}");
            assert_eq!(h[header::REFERRER_POLICY], "no-referrer", "{what}");
            match public_url {
                Some(_) => assert_eq!(
                    h[header::STRICT_TRANSPORT_SECURITY],
                    "max-age=31536000",
                    "{what}"
                ),
                None => assert!(
                    h.get(header::STRICT_TRANSPORT_SECURITY).is_none(),
                    "{what}: no HSTS over http"
                ),
            }
        }

        // A forged Host header does not move the redirect URI.
        let response = client
            .get(format!("{}/login", server.url))
            .header(header::HOST, "evil.example.com")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303);
        let location = response.headers()[header::LOCATION].to_str().unwrap();
        assert!(location.starts_with(&dex.issuer), "{location}");
        let redirect_uri = reqwest::Url::parse(location)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "redirect_uri")
            .map(|(_, v)| v.into_owned());
        let base = public_url.unwrap_or(&server.url);
        assert_eq!(redirect_uri, Some(format!("{base}/auth/callback")));
    }
}

/// The chart's server (two pods; make test installs it) at its door, https://kubespaces.<domain>
/// through the cluster's Gateway: a portal login there, with a browser that trusts the cluster's
/// CA, and the session kept while every pod of its Deployment is replaced (they seal and open
/// with the keys of the Secret the chart made).
#[tokio::test]
async fn the_chart_s_server_keeps_a_portal_session_while_its_pods_are_replaced() {
    let env = Env::get();
    let door = format!("https://kubespaces.{}", platform_var("KUBESPACES_DOMAIN"));
    let ca = std::fs::read(platform_var("KUBESPACES_NODE_OIDC_CA_FILE")).expect("the cluster's CA");
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("a PEM CA"))
        .build()
        .unwrap();
    wait_for(
        "the chart's server at its door",
        Duration::from_secs(120),
        || async {
            let ready = browser.get(format!("{door}/readyz")).send().await.ok()?;
            ready.status().is_success().then_some(())
        },
    )
    .await;
    // The portal's home page as the browser ends on it: (its URL, its text). While the Gateway
    // still routes to pods that are gone (it follows the Endpoints a moment later) the answer is
    // the Gateway's own 502 or 503: None, asked again.
    let home = || {
        let (browser, door) = (browser.clone(), door.clone());
        wait_for(
            "the portal's home page",
            Duration::from_secs(60),
            move || {
                let (browser, door) = (browser.clone(), door.clone());
                async move {
                    let page = browser.get(format!("{door}/")).send().await.ok()?;
                    if [502, 503, 504].contains(&page.status().as_u16()) {
                        return None;
                    }
                    let url = page.url().to_string();
                    Some((url, page.text().await.ok()?))
                }
            },
        )
    };
    let greets = |who: &'static str| {
        let (home, door) = (home(), door.clone());
        async move {
            let (url, text) = home.await;
            assert!(
                url.starts_with(&door) && text.contains(who),
                "{who} is not greeted: the browser ended on {url}:\n{text}"
            );
        }
    };

    let page = browser.get(format!("{door}/login")).send().await.unwrap();
    let issuer = platform_var("KUBESPACES_NODE_OIDC_ISSUER");
    assert!(page.url().as_str().starts_with(&issuer), "{}", page.url());
    let done = log_in_on_dex(&browser, page, "dave@example.com").await;
    assert_eq!(done.status(), 200, "{}", done.url());
    greets("dave@example.com").await;

    let namespace = std::env::var("KUBESPACES_OPERATOR_NAMESPACE")
        .unwrap_or_else(|_| "kubespaces-system".into());
    let deployment = format!(
        "deployment/{}-server",
        std::env::var("KUBESPACES_OPERATOR_RELEASE").unwrap_or_else(|_| "kubespaces".into())
    );
    let selector = "app.kubernetes.io/component=server";
    let pods = |env: &Env| {
        env.kubectl_ok(
            &[
                "-n", &namespace, "get", "pods", "-l", selector, "-o", "name",
            ],
            None,
        )
        .lines()
        .map(str::to_owned)
        .collect::<Vec<_>>()
    };
    let before = pods(&env);
    assert_eq!(before.len(), 2, "two server pods: {before:?}");
    env.kubectl_ok(&["-n", &namespace, "rollout", "restart", &deployment], None);
    env.kubectl_ok(
        &[
            "-n",
            &namespace,
            "rollout",
            "status",
            &deployment,
            "--timeout=180s",
        ],
        None,
    );
    wait_for(
        "the old server pods gone",
        Duration::from_secs(60),
        || async {
            let now = pods(&env);
            now.iter().all(|p| !before.contains(p)).then_some(())
        },
    )
    .await;
    // The new pods open the session the old ones sealed.
    greets("dave@example.com").await;

    // An upgrade of the release keeps the keys the chart made on install (a new key would end
    // every session at the pods' next restart).
    let release =
        std::env::var("KUBESPACES_OPERATOR_RELEASE").unwrap_or_else(|_| "kubespaces".into());
    let keys = || {
        env.kubectl_ok(
            &[
                "-n",
                &namespace,
                "get",
                "secret",
                &format!("{release}-server-session-keys"),
                "-o",
                "jsonpath={.data.keys}",
            ],
            None,
        )
    };
    let installed = keys();
    let helm = platform_var("KUBESPACES_HELM");
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/kubespaces");
    let upgrade = std::process::Command::new(&helm)
        .args([
            "upgrade",
            &release,
            chart,
            "-n",
            &namespace,
            "--reuse-values",
            "--wait",
        ])
        .output()
        .expect("run helm");
    assert!(
        upgrade.status.success(),
        "helm upgrade: {}",
        String::from_utf8_lossy(&upgrade.stderr)
    );
    assert_eq!(keys(), installed, "the upgrade kept the session keys");
    greets("dave@example.com").await;
}
