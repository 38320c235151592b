//! Live streams: at most --max-streams-per-user open per user, and each ends with the login it
//! was opened with (the token's expiry, the portal session's end).

use std::time::Duration;

use futures::StreamExt;
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server, TestIssuer, TestKey, log_in_on_dex},
    wait_for,
};
use kubespaces_server::config::Limits;
use serde_json::json;

use crate::common::{claims, server_for, server_with};

async fn watch(server: &Server, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!(
            "{}/api/v1/watch/tenants?name=hu-nothing",
            server.url
        ))
        .bearer_auth(token)
        .send()
        .await
        .expect("the live stream")
}

/// What a stream sends until it ends, or until `until` is in it; None if neither happens within
/// `timeout`.
async fn read(response: reqwest::Response, until: &str, timeout: Duration) -> Option<String> {
    let mut seen = String::new();
    let mut bytes = response.bytes_stream();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, bytes.next()).await {
            Err(_) => return None,
            Ok(None) => return Some(seen),
            Ok(Some(chunk)) => {
                seen.push_str(&String::from_utf8_lossy(&chunk.expect("stream")));
                if seen.contains(until) {
                    return Some(seen);
                }
            }
        }
    }
}

/// With --max-streams-per-user 2: alice's third stream is refused, naming the limit; bob's are
/// his own; when alice closes one, she may open another.
#[tokio::test]
async fn a_user_holds_at_most_the_maximum_number_of_streams() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = server_with(
        &dex,
        Limits {
            max_streams_per_user: std::num::NonZeroUsize::new(2).unwrap(),
            ..Limits::default()
        },
    )
    .await;
    let alice = dex.token("alice@example.com").await;
    let bob = dex.token("bob@example.com").await;
    let first = watch(&server, &alice).await;
    let second = watch(&server, &alice).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = watch(&server, &alice).await;
    assert_eq!(third.status(), 429);
    let body: serde_json::Value = third.json().await.unwrap();
    let e = body["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("too many live streams: you have 2 open, the most one user may have (--max-streams-per-user 2)"),
        "{e}"
    );
    assert!(e.contains("close one"), "{e}");
    let bobs = watch(&server, &bob).await;
    assert_eq!(bobs.status(), 200, "bob's streams are his own");
    // Closing a stream gives its place back (the server notices the closed connection).
    drop(first);
    let again = wait_for(
        "alice's closed stream to give its place back",
        Duration::from_secs(30),
        || async {
            let r = watch(&server, &alice).await;
            (r.status() == 200).then_some(r)
        },
    )
    .await;
    drop((second, again, bobs));
}

/// A stream opened with a token ends when the token does (its exp plus the server's leeway,
/// 5 s for the test server), saying why in an SSE comment, while a stream with a longer-lived
/// token goes on; the expired token opens no new one.
#[tokio::test]
async fn a_stream_ends_when_its_token_expires() {
    let _env = Env::get();
    let key = TestKey::generate("short-lived");
    let issuer = TestIssuer::start(&[&key]).await;
    let server = server_for(&issuer.url, "kubespaces", Limits::default()).await;
    const LEEWAY: i64 = 5;
    let short = claims(&issuer.url, "alice@example.com", json!([]), 3);
    let exp = short["exp"].as_i64().unwrap();
    let short = key.sign(&short);
    let long = key.sign(&claims(&issuer.url, "alice@example.com", json!([]), 600));
    let long_stream = watch(&server, &long).await;
    assert_eq!(long_stream.status(), 200);
    let long_reader = tokio::spawn(read(long_stream, "has expired", Duration::from_secs(60)));
    let short_stream = watch(&server, &short).await;
    assert_eq!(short_stream.status(), 200);
    let text = read(short_stream, "<never>", Duration::from_secs(30))
        .await
        .expect("the stream ends within 30 s");
    let ended = jiff::Timestamp::now().as_second();
    assert!(
        text.contains(
            ": the token this stream was opened with has expired: reconnect with a fresh token"
        ),
        "{text}"
    );
    assert!(
        ended >= exp + LEEWAY - 1,
        "ended at {ended}, before the token's exp {exp} plus the leeway"
    );
    assert!(
        !long_reader.is_finished(),
        "the stream of the longer-lived token goes on"
    );
    long_reader.abort();
    let again = watch(&server, &short).await;
    assert_eq!(again.status(), 401, "an expired token opens no stream");
}

/// Logging out of the portal ends the tab's live stream (an `expired` event the page shows),
/// and a logged-out browser opens no new one.
#[tokio::test]
async fn logging_out_of_the_portal_ends_its_streams() {
    let _env = Env::get();
    let dex = Dex::get();
    let server = server_with(&dex, Limits::default()).await;
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let page = browser
        .get(format!("{}/login", server.url))
        .send()
        .await
        .unwrap();
    let home = log_in_on_dex(&browser, page, "alice@example.com").await;
    assert_eq!(home.status(), 200, "{}", home.url());
    let html = home.text().await.unwrap();
    let csrf = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the logout form's CSRF token")
        .to_owned();
    let events = format!("{}/portal/events?name=hu-nothing", server.url);
    let stream = browser.get(&events).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let reader = tokio::spawn(read(stream, "event: expired", Duration::from_secs(60)));
    let out = browser
        .post(format!("{}/logout", server.url))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert!(out.status().is_success(), "logout: {}", out.status());
    let text = reader
        .await
        .unwrap()
        .expect("the stream ends within a minute of the logout");
    assert!(
        text.contains("event: expired\ndata: your session has ended: log in again"),
        "{text}"
    );
    let again = browser.get(&events).send().await.unwrap();
    assert_eq!(again.status(), 401);
}
