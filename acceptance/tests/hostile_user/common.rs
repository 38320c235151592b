//! What the hostile-user tests share: a server with the limits a test sets, and requests.

use std::time::Duration;

use kube::api::DeleteParams;
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server, server_account_client},
    wait_gone,
};
use kubespaces_server::config::Limits;
use serde_json::{Value, json};

/// A server with Dex as its issuer and `limits` (the rest as `Server::with_dex`).
pub async fn server_with(dex: &Dex, limits: Limits) -> Server {
    server_for(&dex.issuer, &dex.client_id, limits).await
}

pub async fn server_for(issuer: &str, client_id: &str, limits: Limits) -> Server {
    Server::start_with(
        issuer,
        client_id,
        server_account_client().await,
        Duration::from_secs(30),
        |c| c.limits = limits,
    )
    .await
}

/// One answer: status, Retry-After, and the body (JSON when it is).
pub struct Answer {
    pub code: u16,
    pub retry_after: Option<u64>,
    pub body: Value,
}

impl Answer {
    /// The refusal's sentence.
    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or_default()
    }
}

pub async fn call(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = client.request(method, format!("{}{path}", server.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let code = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let text = response.text().await.unwrap_or_default();
    Answer {
        code,
        retry_after,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

pub async fn create(server: &Server, token: &str, name: &str, cpu: &str, memory: &str) -> Answer {
    create_body(
        server,
        token,
        json!({"name": name, "cpu": cpu, "memory": memory}),
    )
    .await
}

pub async fn create_body(server: &Server, token: &str, body: Value) -> Answer {
    call(
        server,
        reqwest::Method::POST,
        "/api/v1/tenants",
        Some(token),
        Some(body),
    )
    .await
}

/// The answer of a create that every bound let by and the CRD refused (cpu `lots`).
pub fn assert_reached_the_cluster(answer: &Answer, who: &str) {
    assert_eq!(answer.code, 422, "{who}: {:?}", answer.body);
    assert!(
        answer.error().contains("must be a Kubernetes quantity"),
        "{who}: {:?}",
        answer.body
    );
}

/// Deletes the tenants and waits until they are gone.
pub async fn remove(env: &Env, names: &[&str]) {
    let tenants = env.tenants().await;
    for n in names {
        let _ = tenants.delete(n, &DeleteParams::default()).await;
    }
    for n in names {
        wait_gone(&tenants, n, Duration::from_secs(600)).await;
    }
}

/// ID token claims from `issuer` for `email` (verified) in `groups`, valid for `secs` more.
pub fn claims(issuer: &str, email: &str, groups: Value, secs: i64) -> Value {
    let now = jiff::Timestamp::now().as_second();
    json!({
        "iss": issuer, "aud": "kubespaces", "sub": email,
        "iat": now, "exp": now + secs,
        "email": email, "email_verified": true, "groups": groups,
    })
}
