//! The KubeSpaces server against real Dex and the real cluster: which tokens it accepts (only
//! Dex's, for its own client, with a verified email), which it refuses and how (401, nothing
//! more), and that every user sees and touches only their own tenants while an admin sees all.
//! The server runs in the test process as the chart's `kubespaces-server` ServiceAccount.

use std::time::Duration;

use base64::Engine;
use futures::StreamExt;
use kube::api::DeleteParams;
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server, TestIssuer, TestKey},
    wait_for, wait_gone,
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
    ] {
        assert_refused(&server, &first.sign(&claims(&iss, changes)), what).await;
    }

    // Rotation: a token under a key the JWKS does not have yet is refused...
    let second = TestKey::generate("second");
    let token = second.sign(&claims(&iss, json!({})));
    assert_refused(&server, &token, "a key not yet published").await;
    // ...made-up key ids do not each cost a fetch...
    let before = issuer.fetches();
    for i in 0..20 {
        assert_refused(
            &server,
            &second.sign_as(&format!("made-up-{i}"), &claims(&iss, json!({}))),
            "made-up kid",
        )
        .await;
    }
    assert!(
        issuer.fetches() - before <= 1,
        "20 unknown key ids caused {} JWKS fetches (at most one per interval)",
        issuer.fetches() - before
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
