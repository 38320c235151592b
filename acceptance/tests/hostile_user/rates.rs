//! How often: tenant creates per user, requests per user, requests per address without a login.
//! Over a rate the answer is 429 with Retry-After and a body naming the limit.

use kubespaces_acceptance::{
    Env,
    oidc::{Dex, TestKey},
};
use kubespaces_server::{
    config::Limits,
    rate::{Per, Rate},
};
use reqwest::Method;
use serde_json::json;

use crate::common::{Answer, assert_reached_the_cluster, call, claims, create, server_with};

fn assert_too_many(answer: &Answer, says: &str, most_secs: u64) {
    assert_eq!(answer.code, 429, "{:?}", answer.body);
    let retry = answer.retry_after.expect("a Retry-After header");
    assert!(
        (1..=most_secs).contains(&retry),
        "Retry-After {retry}, at most {most_secs}"
    );
    assert!(answer.error().contains(says), "{says} in {:?}", answer.body);
    assert!(
        answer.error().contains(&format!("retry in {retry} s")),
        "the body says when, as the header does: {:?}",
        answer.body
    );
}

/// With --create-rate 1/h, bob's second create within the hour is refused with Retry-After;
/// alice's allowance is her own. (Creates that reach the cluster count, refused ones included:
/// these ask for an impossible CPU, so none creates a tenant.)
#[tokio::test]
async fn creates_are_limited_per_user() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = server_with(
        &dex,
        Limits {
            create_rate: Rate::new(1, Per::Hour),
            ..Limits::default()
        },
    )
    .await;
    let bob = dex.token("bob@example.com").await;
    let alice = dex.token("alice@example.com").await;
    assert_reached_the_cluster(
        &create(&server, &bob, "hu-rate", "lots", "1Gi").await,
        "bob's first",
    );
    let second = create(&server, &bob, "hu-rate", "lots", "1Gi").await;
    assert_too_many(
        &second,
        "too many tenants created: the limit is 1 per hour per user (--create-rate 1/h)",
        3600,
    );
    assert!(
        second.error().contains("to raise the limit"),
        "{:?}",
        second.body
    );
    assert_reached_the_cluster(
        &create(&server, &alice, "hu-rate", "lots", "1Gi").await,
        "alice",
    );
    // Bob's other requests are not creates: they go on.
    let list = call(&server, Method::GET, "/api/v1/tenants", Some(&bob), None).await;
    assert_eq!(list.code, 200);
}

/// With --rate-limit 1/h and a burst of 5: alice's sixth request is refused, bob's first is not;
/// tokens forged in alice's name (a key Dex does not have) are counted against the address that
/// sent them, so they cannot spend her allowance.
#[tokio::test]
async fn each_user_has_a_request_allowance_that_forged_tokens_cannot_spend() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = server_with(
        &dex,
        Limits {
            rate_limit: Rate::new(1, Per::Hour),
            rate_limit_burst: 5,
            ..Limits::default()
        },
    )
    .await;
    let jwks = dex.jwks().await;
    let dex_kid = jwks["keys"][0]["kid"].as_str().expect("Dex's key id");
    let forger = TestKey::generate("hostile-user-forger");
    let forged = forger.sign_as(
        dex_kid,
        &claims(&dex.issuer, "alice@example.com", json!([]), 600),
    );
    for _ in 0..10 {
        let answer = call(&server, Method::GET, "/api/v1/tenants", Some(&forged), None).await;
        assert_eq!(answer.code, 401, "{:?}", answer.body);
    }
    let alice = dex.token("alice@example.com").await;
    for i in 0..5 {
        let answer = call(&server, Method::GET, "/api/v1/tenants", Some(&alice), None).await;
        assert_eq!(answer.code, 200, "alice's request {i}: {:?}", answer.body);
    }
    let refused = call(&server, Method::GET, "/api/v1/tenants", Some(&alice), None).await;
    assert_too_many(
        &refused,
        "too many requests: the limit is 1 per hour (bursts of 5) per user",
        3600,
    );
    assert!(
        refused.error().contains("--rate-limit"),
        "{:?}",
        refused.body
    );
    let bob = dex.token("bob@example.com").await;
    assert_eq!(
        call(&server, Method::GET, "/api/v1/tenants", Some(&bob), None)
            .await
            .code,
        200
    );
}

/// With --anonymous-rate-limit 1/h and a burst of 3: the fourth request without a login from
/// this address is refused (the login, the OIDC callback alike), the probes never are, and a
/// logged-in user at the same address has an allowance of their own.
#[tokio::test]
async fn requests_without_a_login_are_limited_per_address() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = server_with(
        &dex,
        Limits {
            anonymous_rate_limit: Rate::new(1, Per::Hour),
            anonymous_rate_limit_burst: 3,
            ..Limits::default()
        },
    )
    .await;
    for i in 0..3 {
        let answer = call(&server, Method::GET, "/login", None, None).await;
        assert_eq!(answer.code, 303, "login {i}: {:?}", answer.body);
    }
    let says = "too many requests from your address without a login: the limit is 1 per hour \
                (bursts of 3) per address";
    for path in ["/login", "/auth/callback?state=x&code=y", "/api/v1/tenants"] {
        let answer = call(&server, Method::GET, path, None, None).await;
        assert_too_many(&answer, says, 3600);
        assert!(answer.error().contains("or log in"), "{:?}", answer.body);
    }
    assert_eq!(
        call(&server, Method::GET, "/healthz", None, None)
            .await
            .code,
        200
    );
    let alice = dex.token("alice@example.com").await;
    assert_eq!(
        call(&server, Method::GET, "/api/v1/tenants", Some(&alice), None)
            .await
            .code,
        200
    );
    // The refusals are counted for the platform team (and logged at debug level only).
    let admin = dex.token("admin@example.com").await;
    let metrics = call(&server, Method::GET, "/metrics", Some(&admin), None).await;
    assert_eq!(metrics.code, 200);
    let text = metrics.body.as_str().unwrap_or_default();
    assert!(
        text.lines()
            .any(|l| l == "kubespaces_server_rate_limited_total 3"),
        "{text}"
    );
}
