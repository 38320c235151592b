//! `make bench`: how fast and how lean the operator provisions tenants on a real control plane,
//! side by side with a baseline that creates the same host objects with a plain client loop
//! (the API server's and controller-manager's own limit on this machine).
//!
//! Prints, in one run: wall time until all tenants are Ready for both, the ratio, p50/p99
//! time-to-Ready, API requests per tenant, the operator's peak RSS with N and with the idle
//! count of tenants, and the writes an idle operator makes.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use kubespaces_acceptance::operator::{
    OperatorProcess, SHARD_LABEL, metric_sum, metric_sum_where, sharded_tenant,
};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    build,
    config::HostConfig,
    names,
};
use serde::{Serialize, de::DeserializeOwned};
use tokio::sync::Mutex;

#[derive(Parser)]
#[command(about = "Benchmark the KubeSpaces operator against a plain client loop")]
struct Args {
    /// Tenants created at once in the timed runs.
    #[arg(long, default_value_t = 300)]
    tenants: usize,
    /// Total tenants for the memory and idle measurements (0 skips them).
    #[arg(long, default_value_t = 1000)]
    idle_tenants: usize,
    /// How long the operator is watched while idle.
    #[arg(long, default_value_t = 120)]
    idle_seconds: u64,
    /// Client concurrency of the baseline and of the tenant creation (the operator's default
    /// reconcile concurrency is the same).
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// The operator's reconcile concurrency (its --concurrency flag).
    #[arg(long, default_value_t = 32)]
    operator_concurrency: u16,
    /// The operator binary (built with --release by `make bench`).
    #[arg(
        long,
        env = "KUBESPACES_OPERATOR_BIN",
        default_value = "target/release/kubespaces-operator"
    )]
    operator: String,
}

/// A short id that keeps the names of one run apart from any earlier run on the same cluster.
fn run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{:05}", secs % 100_000)
}

fn tenant(name: &str) -> Tenant {
    let spec = TenantSpec::new(format!("{name}@example.com"), "2", "4Gi", Some("10Gi"));
    sharded_tenant(name, spec, "bench")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

struct RunResult {
    wall: Duration,
    p50: Duration,
    p99: Duration,
    requests_per_tenant: f64,
}

/// How long each name in `done` took from its entry in `started`.
fn latencies<'a>(
    started: &HashMap<String, Instant>,
    done: impl IntoIterator<Item = (&'a String, &'a Instant)>,
) -> Vec<Duration> {
    done.into_iter()
        .filter_map(|(name, at)| Some(at.duration_since(*started.get(name)?)))
        .collect()
}

fn summarize(wall: Duration, mut latencies: Vec<Duration>, requests: f64, n: usize) -> RunResult {
    latencies.sort();
    RunResult {
        wall,
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        requests_per_tenant: requests / n as f64,
    }
}

/// Creates a host object the way the baseline does: labelled for its run, with no owner (there
/// is no Tenant behind it).
async fn create_for_shard<K>(api: &Api<K>, mut object: K, shard: &str) -> Result<()>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let meta = object.meta_mut();
    meta.labels
        .get_or_insert_default()
        .insert(SHARD_LABEL.to_owned(), shard.to_owned());
    meta.owner_references = None;
    create(api, &object).await
}

async fn create<K>(api: &Api<K>, object: &K) -> Result<()>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .map(|_| ())
        .context("create")
}

/// The baseline: for each tenant, create the namespace and its four objects with plain
/// creates (no operator), and count the tenant done when the quota controller has computed its
/// quota — the same point at which the operator calls a tenant Ready.
async fn baseline(client: &Client, run: &str, n: usize, concurrency: usize) -> Result<RunResult> {
    let shard = format!("baseline-{run}");
    let host = HostConfig::default();
    let started: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watch_client = client.clone();
    let shard_for_watch = shard.clone();
    let done = tokio::spawn(async move {
        let shard = shard_for_watch;
        let quotas: Api<ResourceQuota> = Api::all(watch_client);
        let config = watcher::Config::default().labels(&format!("{SHARD_LABEL}={shard}"));
        let mut seen: BTreeMap<String, Instant> = BTreeMap::new();
        let mut events = std::pin::pin!(watcher(quotas, config).applied_objects());
        while let Some(Ok(q)) = events.next().await {
            if q.status.as_ref().and_then(|s| s.hard.as_ref()).is_some() {
                seen.entry(q.namespace().unwrap_or_default())
                    .or_insert_with(Instant::now);
                if seen.len() == n {
                    break;
                }
            }
        }
        seen
    });
    let t0 = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let client = client.clone();
            let host = host.clone();
            let started = started.clone();
            let shard = shard.clone();
            async move {
                let name = format!("b{run}-{i:04}");
                let t = tenant(&name);
                let ns_name = names::namespace(&name);
                started.lock().await.insert(ns_name.clone(), Instant::now());
                let (c, ns) = (&client, ns_name.as_str());
                create_for_shard(&Api::all(c.clone()), build::namespace(&t, &host), &shard).await?;
                create_for_shard(
                    &Api::namespaced(c.clone(), ns),
                    build::quota(&t, &host),
                    &shard,
                )
                .await?;
                create_for_shard(
                    &Api::namespaced(c.clone(), ns),
                    build::limit_range(&t, &host),
                    &shard,
                )
                .await?;
                create_for_shard(
                    &Api::namespaced(c.clone(), ns),
                    build::owner_binding(&t),
                    &shard,
                )
                .await?;
                create_for_shard(
                    &Api::namespaced(c.clone(), ns),
                    build::network_policy(&t, &host),
                    &shard,
                )
                .await?;
                Ok::<_, anyhow::Error>(())
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await?;
    let seen = tokio::time::timeout(Duration::from_secs(600), done)
        .await
        .context("baseline: quotas not computed in 10 min")??;
    let wall = t0.elapsed();
    let latencies = latencies(&*started.lock().await, &seen);
    // Five creates per tenant (every one succeeded, or we returned above), and one watch
    // request for the whole run.
    let requests = 5 * n + 1;
    Ok(summarize(wall, latencies, requests as f64, n))
}

/// Creates tenants `from..to` and waits until all are Ready; returns per-tenant latencies.
async fn provision(
    client: &Client,
    run: &str,
    from: usize,
    to: usize,
    concurrency: usize,
) -> Result<(Duration, Vec<Duration>)> {
    let prefix = format!("t{run}-");
    let tenants: Api<Tenant> = Api::all(client.clone());
    let n = to - from;
    let started: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watch_api = tenants.clone();
    let watch_prefix = prefix.clone();
    let done = tokio::spawn(async move {
        let config = watcher::Config::default().labels(&format!("{SHARD_LABEL}=bench"));
        let mut ready: HashMap<String, Instant> = HashMap::new();
        let mut events = std::pin::pin!(watcher(watch_api, config).applied_objects());
        while let Some(Ok(t)) = events.next().await {
            let name = t.name_any();
            let index: usize = name
                .strip_prefix(watch_prefix.as_str())
                .and_then(|i| i.parse().ok())
                .unwrap_or(usize::MAX);
            if (from..to).contains(&index) && t.is_ready() {
                ready.entry(name).or_insert_with(Instant::now);
                if ready.len() == n {
                    break;
                }
            }
        }
        ready
    });
    let t0 = Instant::now();
    stream::iter(from..to)
        .map(|i| {
            let tenants = tenants.clone();
            let started = started.clone();
            let prefix = prefix.clone();
            async move {
                let name = format!("{prefix}{i:04}");
                started.lock().await.insert(name.clone(), Instant::now());
                create(&tenants, &tenant(&name)).await
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await?;
    let ready = tokio::time::timeout(Duration::from_secs(900), done)
        .await
        .context("tenants not Ready within 15 min")??;
    let wall = t0.elapsed();
    Ok((wall, latencies(&*started.lock().await, &ready)))
}

const API_REQUESTS: &str = "kubespaces_kube_api_requests_total";
const WRITE_VERBS: [&str; 4] = ["POST", "PUT", "PATCH", "DELETE"];

/// What the operator has done so far, read from one metrics text so the figures agree.
struct Activity {
    writes: f64,
    reads: f64,
    reconciles: f64,
}

impl Activity {
    fn of(metrics: &str) -> Activity {
        let writes = metric_sum_where(metrics, API_REQUESTS, "verb", &WRITE_VERBS);
        Activity {
            writes,
            reads: metric_sum(metrics, API_REQUESTS) - writes,
            reconciles: metric_sum(metrics, "kubespaces_reconcile_total"),
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let client = Client::try_default()
        .await
        .context("KUBECONFIG must point at the bench control plane")?;
    if !std::path::Path::new(&args.operator).exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p kubespaces-operator`",
            args.operator
        );
    }
    let n = args.tenants;
    println!(
        "benchmark: {n} tenants at once, client concurrency {}",
        args.concurrency
    );

    println!(
        "baseline: plain client creating namespace + quota + limits + binding + policy per tenant ..."
    );
    let run = run_id();
    let base = baseline(&client, &run, n, args.concurrency).await?;

    println!("operator: {n} Tenants ...");
    // A short resync: during the idle window every Ready tenant is re-checked several times, so
    // "zero writes" means re-checks write nothing, not that no re-check happened.
    let resync = format!("{}s", (args.idle_seconds / 4).max(1));
    let operator = OperatorProcess::start_with(
        &args.operator,
        "bench",
        &[
            "--resync",
            &resync,
            "--concurrency",
            &args.operator_concurrency.to_string(),
        ],
    )
    .await;
    let before = metric_sum(&operator.metrics().await, API_REQUESTS);
    let (wall, latencies) = provision(&client, &run, 0, n, args.concurrency).await?;
    let after = metric_sum(&operator.metrics().await, API_REQUESTS);
    let op = summarize(wall, latencies, after - before, n);
    let rss_n = operator.peak_rss_kib().unwrap_or(0);

    let row = |label: &str, r: &RunResult| {
        println!(
            "  {label:<10} wall {:>7.2}s   p50 {:>6.2}s   p99 {:>6.2}s   API requests/tenant {:>5.1}",
            r.wall.as_secs_f64(),
            r.p50.as_secs_f64(),
            r.p99.as_secs_f64(),
            r.requests_per_tenant
        )
    };
    println!("\nresults ({n} tenants)");
    row("baseline", &base);
    row("operator", &op);
    let ratio = op.wall.as_secs_f64() / base.wall.as_secs_f64();
    println!("  ratio operator/baseline wall time: {ratio:.2}x (target <= 1.5x)");
    println!(
        "  operator peak RSS with {n} tenants: {:.1} MiB",
        rss_n as f64 / 1024.0
    );

    if args.idle_tenants > n {
        println!("\nidle: growing to {} tenants ...", args.idle_tenants);
        provision(&client, &run, n, args.idle_tenants, args.concurrency).await?;
        let before = Activity::of(&operator.metrics().await);
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        let after = Activity::of(&operator.metrics().await);
        let writes = after.writes - before.writes;
        let reads = after.reads - before.reads;
        let reconciles = after.reconciles - before.reconciles;
        let rss = operator.peak_rss_kib().unwrap_or(0);
        println!(
            "  operator peak RSS with {} tenants: {:.1} MiB (target <= 64 MiB)",
            args.idle_tenants,
            rss as f64 / 1024.0
        );
        println!(
            "  idle {}s with {} Ready tenants (resync {resync}): {reconciles} reconciles, {writes} writes, {reads} other requests (target: 0 writes)",
            args.idle_seconds, args.idle_tenants
        );
    }
    println!("\n(the bench cluster in .kubespaces/bench is discarded by `make bench`)");
    Ok(())
}
