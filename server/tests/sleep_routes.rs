//! The sleep and wake doors as the router serves them, without a cluster or an issuer: each
//! needs a login (the API's bearer token, the portal's session) before anything is read or
//! written, and each is a POST. (What they write is tested against the real cluster in
//! acceptance/tests/server.rs and portal.rs.)

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::ConnectInfo,
    http::{Method, Request, StatusCode, header},
};
use clap::Parser;
use kubespaces_server::{
    app::router, auth::Verifier, config::Config, portal::seal::Sealer, public_url::PublicUrl,
    state::AppState, store::Tenants,
};
use tower::ServiceExt;

/// The router against an issuer and an API server that do not exist: nothing here reaches them.
fn app() -> Router {
    let config = Config::try_parse_from([
        "kubespaces-server",
        "--oidc-issuer=http://127.0.0.1:9",
        "--oidc-client-id=kubespaces",
    ])
    .unwrap();
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

/// Status, `Location` and body of one request from a client of its own address.
async fn send(
    app: &Router,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, String, String) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let mut request = request.body(Body::empty()).unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 9], 40000))));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        location,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::test]
async fn sleep_and_wake_need_a_login_and_a_post() {
    let app = app();
    for request in ["sleep", "wake"] {
        let api = format!("/api/v1/tenants/team-atlas/{request}");
        for token in [None, Some("forged")] {
            let (status, _, body) = send(&app, Method::POST, &api, token).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{api} {token:?}: {body}");
            assert_eq!(body, r#"{"error":"unauthorized"}"#, "nothing more");
        }
        let (status, _, _) = send(&app, Method::GET, &api, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{api}: a POST only");
        // The portal's form: without a session, to the login (the form's CSRF token is never
        // read before a session is).
        let portal = format!("/tenants/team-atlas/{request}");
        let (status, location, _) = send(&app, Method::POST, &portal, None).await;
        assert_eq!(
            (status, location.as_str()),
            (StatusCode::SEE_OTHER, "/login"),
            "{portal}"
        );
    }
}
