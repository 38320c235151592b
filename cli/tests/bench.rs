//! Benchmark (ignored by default; `make test` does not run it):
//!
//!     cargo test -p kubespaces-cli --test bench -- --ignored --nocapture
//!
//! With 1000 Tenants (half alice's, half bob's; labelled so that no operator reconciles them):
//! `kubespaces tenant list` wall time (p50 of 21 runs, as alice and as the admin), and the
//! server's authenticated, owner-filtered list throughput under a load generator (8 concurrent
//! clients for 10 s) beside a plain kube-apiserver list of the same 1000 objects by the same
//! generator, as a ratio.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{StreamExt, stream};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    oidc::{Dex, Server},
    wait_for,
};
use kubespaces_api::api::{Tenant, TenantSpec};

const CLI: &str = env!("CARGO_BIN_EXE_kubespaces");
const N: usize = 1000;
const LABEL: &str = "kubespaces.io/test-operator";
const LABEL_VALUE: &str = "server-bench";

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn cli_list_p50(config_dir: &std::path::Path) -> Duration {
    let mut times = vec![];
    for _ in 0..21 {
        let t0 = Instant::now();
        let out = tokio::process::Command::new(CLI)
            .args(["tenant", "list"])
            .env("KUBESPACES_CONFIG_DIR", config_dir)
            .output()
            .await
            .unwrap();
        times.push(t0.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    p50(times)
}

/// Requests per second that `concurrency` workers complete in `duration` with `request`.
async fn throughput<F, Fut>(concurrency: usize, duration: Duration, request: F) -> f64
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let done = Arc::new(AtomicU64::new(0));
    let request = Arc::new(request);
    let deadline = Instant::now() + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (done, request) = (done.clone(), request.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    request().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    for w in workers {
        w.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn write_login(dir: &std::path::Path, server: &Server, dex: &Dex, tokens: &serde_json::Value) {
    std::fs::create_dir_all(dir).unwrap();
    let c = serde_json::json!({
        "server": server.url, "issuer": dex.issuer, "clientId": dex.client_id,
        "idToken": tokens["id_token"], "refreshToken": tokens["refresh_token"],
    });
    std::fs::write(dir.join("credentials.json"), c.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: cargo test -p kubespaces-cli --test bench -- --ignored --nocapture"]
async fn list_with_1000_tenants() {
    let env = Env::get();
    let dex = Dex::get();
    let tenants: Api<Tenant> = env.tenants().await;
    let selector = ListParams::default().labels(&format!("{LABEL}={LABEL_VALUE}"));
    cleanup(&tenants, &selector).await;

    let t0 = Instant::now();
    stream::iter(0..N)
        .map(|i| {
            let tenants = tenants.clone();
            async move {
                let owner = if i % 2 == 0 {
                    "alice@example.com"
                } else {
                    "bob@example.com"
                };
                let mut t = Tenant::new(
                    &format!("bench-srv-{i:04}"),
                    TenantSpec::new(owner, "1", "1Gi", None),
                );
                t.metadata.labels = Some([(LABEL.to_owned(), LABEL_VALUE.to_owned())].into());
                tenants.create(&PostParams::default(), &t).await.unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    println!("created {N} tenants in {:.1}s", t0.elapsed().as_secs_f64());

    let server = Server::with_dex(&dex).await;
    let alice_tokens = dex
        .token_response("alice@example.com", &dex.client_id)
        .await;
    let admin_tokens = dex
        .token_response("admin@example.com", &dex.client_id)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (alice_dir, admin_dir) = (dir.path().join("alice"), dir.path().join("admin"));
    write_login(&alice_dir, &server, &dex, &alice_tokens);
    write_login(&admin_dir, &server, &dex, &admin_tokens);
    let alice_token = alice_tokens["id_token"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    let url = format!("{}/api/v1/tenants", server.url);
    wait_for(
        "all tenants in the server's cache",
        Duration::from_secs(60),
        || async {
            let list: serde_json::Value = http
                .get(&url)
                .bearer_auth(admin_tokens["id_token"].as_str().unwrap())
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            let n = list["items"]
                .as_array()?
                .iter()
                .filter(|t| {
                    t["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("bench-srv-"))
                })
                .count();
            (n == N).then_some(())
        },
    )
    .await;

    let alice_p50 = cli_list_p50(&alice_dir).await;
    let admin_p50 = cli_list_p50(&admin_dir).await;

    let (h, u, tok) = (http.clone(), url.clone(), alice_token.clone());
    let server_rps = throughput(8, Duration::from_secs(10), move || {
        let (h, u, tok) = (h.clone(), u.clone(), tok.clone());
        async move {
            let r = h.get(&u).bearer_auth(&tok).send().await.unwrap();
            assert!(r.status().is_success());
            let _ = r.bytes().await.unwrap();
        }
    })
    .await;
    let (t, s) = (tenants.clone(), selector.clone());
    let apiserver_rps = throughput(8, Duration::from_secs(10), move || {
        let (t, s) = (t.clone(), s.clone());
        async move {
            let list = t.list(&s).await.unwrap();
            assert_eq!(list.items.len(), N);
        }
    })
    .await;

    println!("BENCH tenants={N}");
    println!(
        "BENCH cli tenant list p50: alice (500 of them) {:.0} ms, admin (all {N}) {:.0} ms",
        alice_p50.as_secs_f64() * 1e3,
        admin_p50.as_secs_f64() * 1e3
    );
    println!(
        "BENCH server filtered list (alice, 500 items, token validated per request): {server_rps:.1} req/s"
    );
    println!(
        "BENCH kube-apiserver list of the same {N} objects (label selector): {apiserver_rps:.1} req/s"
    );
    println!(
        "BENCH ratio server/apiserver: {:.2}x",
        server_rps / apiserver_rps
    );

    cleanup(&tenants, &selector).await;
}

/// No operator reconciles these Tenants (their label), so nothing removes the teardown finalizer
/// that admission puts on every Tenant: the benchmark removes it itself.
async fn cleanup(tenants: &Api<Tenant>, selector: &ListParams) {
    let _ = tenants
        .delete_collection(&DeleteParams::default(), selector)
        .await;
    let names: Vec<String> = tenants
        .list(selector)
        .await
        .map(|l| {
            l.items
                .into_iter()
                .filter_map(|t| t.metadata.name)
                .collect()
        })
        .unwrap_or_default();
    let unfinalize = serde_json::json!({"metadata": {"finalizers": null}});
    stream::iter(names)
        .map(|name| {
            let (tenants, patch) = (tenants.clone(), unfinalize.clone());
            async move {
                let _ = tenants
                    .patch(
                        &name,
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(&patch),
                    )
                    .await;
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    wait_for(
        "the bench tenants to be gone",
        Duration::from_secs(120),
        || async {
            tenants
                .list(selector)
                .await
                .ok()
                .filter(|l| l.items.is_empty())
                .map(|_| ())
        },
    )
    .await;
}
