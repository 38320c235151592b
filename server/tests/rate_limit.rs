//! The request rate limit as the router applies it, without a cluster or an issuer: requests
//! without a valid login are counted per client address, refused tokens included, and the
//! probes never are. (Logged-in users' limits, which need real tokens, are tested against Dex in
//! acceptance/tests/hostile_user.rs.)

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::ConnectInfo,
    http::{Request, StatusCode, header},
};
use clap::Parser;
use kubespaces_server::{
    app::router,
    auth::Verifier,
    config::Config,
    portal::seal::Sealer,
    public_url::PublicUrl,
    rate::{Per, Rate},
    state::AppState,
    store::Tenants,
};
use tower::ServiceExt;

/// The router with `anonymous` requests per address allowed at once (none replenished within
/// the test), against an issuer and an API server that do not exist: nothing here needs them.
fn app(anonymous: u32) -> Router {
    let mut config = Config::try_parse_from([
        "kubespaces-server",
        "--oidc-issuer=http://127.0.0.1:9",
        "--oidc-client-id=kubespaces",
    ])
    .unwrap();
    config.limits.anonymous_rate_limit = Rate::new(1, Per::Hour);
    config.limits.anonymous_rate_limit_burst = anonymous;
    let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let public_url = PublicUrl::resolve(None, listen).unwrap();
    let kube = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(kube).unwrap();
    let verifier = Arc::new(Verifier::new(
        "http://127.0.0.1:9",
        "kubespaces",
        None,
        Duration::from_secs(30),
        Duration::from_secs(30),
    ));
    let tenants = Tenants::start(client.clone());
    router(AppState::new(
        config,
        public_url,
        client,
        verifier,
        tenants,
        Sealer::random(),
    ))
}

async fn get(app: &Router, from: &str, path: &str, token: Option<&str>) -> (StatusCode, String) {
    let peer: SocketAddr = format!("{from}:40000").parse().unwrap();
    let mut request = Request::builder().uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let mut request = request.body(Body::empty()).unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = String::from_utf8_lossy(&body).into_owned();
    if status == StatusCode::TOO_MANY_REQUESTS {
        // Told when to come back, and the refusal carries the security headers too.
        let retry: u64 = headers[header::RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=3600).contains(&retry), "Retry-After {retry}");
        assert!(headers.contains_key(header::CONTENT_SECURITY_POLICY));
    }
    (status, body)
}

#[tokio::test]
async fn requests_without_a_login_are_limited_per_address_and_probes_never() {
    let app = app(2);
    for _ in 0..2 {
        assert_eq!(
            get(&app, "192.0.2.1", "/.well-known/kubespaces", None)
                .await
                .0,
            StatusCode::OK
        );
    }
    let (status, body) = get(&app, "192.0.2.1", "/.well-known/kubespaces", None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body.contains("the limit is 1 per hour (bursts of 2) per address"),
        "{body}"
    );
    assert!(body.contains("--anonymous-rate-limit"), "{body}");
    // Every path counts, the portal's included.
    assert_eq!(
        get(&app, "192.0.2.1", "/", None).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another address has its own allowance.
    assert_eq!(
        get(&app, "192.0.2.2", "/.well-known/kubespaces", None)
            .await
            .0,
        StatusCode::OK
    );
    // The probes are never refused: a flood must not get the server restarted.
    for _ in 0..5 {
        assert_eq!(
            get(&app, "192.0.2.1", "/healthz", None).await.0,
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn refused_tokens_count_against_their_senders_address() {
    let app = app(2);
    for _ in 0..2 {
        let (status, body) = get(&app, "198.51.100.7", "/api/v1/tenants", Some("forged")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body, r#"{"error":"unauthorized"}"#);
    }
    let (status, body) = get(&app, "198.51.100.7", "/api/v1/tenants", Some("forged")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // And without a token, from the same address: the same allowance, spent.
    assert_eq!(
        get(&app, "198.51.100.7", "/login", None).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
}
