//! `make bench`: how fast and how lean the operator provisions tenants on a real control plane,
//! side by side with a baseline that does the same unavoidable work with a plain client.
//!
//! Per tenant, both sides create the Tenant, the same five host objects (the operator's own
//! `build::*` objects) and write the same final status (the operator's own status functions);
//! the baseline just does it in a straight line, waiting only for the quota controller. The
//! baseline's objects carry no `kubespaces.io/tenant` label and its Tenants another shard label,
//! so the operator neither caches nor reconciles them. Requests are counted by the API server's
//! own `apiserver_request_total`, read before and after each side.
//!
//! Several rounds, alternating which side goes first, each on fresh names and with a fresh
//! operator process (the previous round's operator tenants are deleted first, so its peak RSS
//! counts only its own N tenants). Prints median and range over the rounds, then the operator's
//! peak RSS with the idle count of tenants and the writes an idle operator makes.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
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
    reconcile::{
        host::Outcome,
        observe::{self, HostObjects},
        status,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;
use tokio::sync::{Mutex, Notify};

#[derive(Parser)]
#[command(about = "Benchmark the KubeSpaces operator against a plain client doing the same work")]
struct Args {
    /// Tenants created at once in each timed run.
    #[arg(long, default_value_t = 300)]
    tenants: usize,
    /// Rounds; each runs both sides, alternating which goes first.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
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

/// The label the baseline puts on its host objects instead of `kubespaces.io/tenant` (which the
/// operator watches): its value is the baseline run.
const BASELINE_LABEL: &str = "kubespaces.io/bench-baseline";

/// A short id that keeps the names of one run apart from any earlier run on the same cluster.
fn run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{:05}", secs % 100_000)
}

fn tenant(name: &str, shard: &str) -> Tenant {
    let spec = TenantSpec::new(format!("{name}@example.com"), "2", "4Gi", Some("10Gi"));
    sharded_tenant(name, spec, shard)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Requests counted by the API server: (verb, resource[/subresource]) → count.
type Requests = BTreeMap<(String, String), f64>;

const WRITE_VERBS: [&str; 6] = [
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

/// The API server's `apiserver_request_total`, summed by verb and resource.
async fn api_requests(client: &Client) -> Result<Requests> {
    // A plain GET of /metrics (`list` with no parameters builds just that).
    let request = kube::core::Request::new("/metrics").list(&ListParams::default())?;
    let text = client.request_text(request).await.context("GET /metrics")?;
    let mut out = Requests::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{key}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let (resource, sub) = (label("resource"), label("subresource"));
        let resource = if sub.is_empty() {
            resource
        } else {
            format!("{resource}/{sub}")
        };
        *out.entry((label("verb"), resource)).or_default() += value;
    }
    Ok(out)
}

/// Writes other than Lease renewals (which go on at every moment, from every component).
fn work_writes(requests: &Requests) -> f64 {
    requests
        .iter()
        .filter(|((verb, resource), _)| {
            WRITE_VERBS.contains(&verb.as_str()) && resource != "leases"
        })
        .map(|(_, v)| v)
        .sum()
}

/// The request counts once writes have stopped (no write but Lease renewals for 2 s, at most
/// 60 s): the writes a side caused after its last tenant was Ready (the controller-manager's
/// ConfigMap and ServiceAccount in each new namespace, quota updates, late Events) are its own,
/// and must not spill into the next side's count.
async fn settled(client: &Client) -> Result<Requests> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = api_requests(client).await?;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = api_requests(client).await?;
        if work_writes(&now) == work_writes(&last) || Instant::now() > deadline {
            return Ok(now);
        }
        last = now;
    }
}

fn delta(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

fn writes(requests: &Requests) -> f64 {
    requests
        .iter()
        .filter(|((verb, _), _)| WRITE_VERBS.contains(&verb.as_str()))
        .map(|(_, v)| v)
        .sum()
}

/// "POST tenants 1.00, APPLY tenants/status 1.00, …": writes per tenant by verb and resource.
fn write_breakdown(requests: &Requests, n: usize) -> String {
    requests
        .iter()
        .filter(|((verb, _), _)| WRITE_VERBS.contains(&verb.as_str()))
        .map(|((verb, resource), v)| format!("{verb} {resource} {:.2}", v / n as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

struct Side {
    wall: Duration,
    p50: Duration,
    p99: Duration,
    requests: Requests,
}

impl Side {
    fn writes_per_tenant(&self, n: usize) -> f64 {
        writes(&self.requests) / n as f64
    }
}

/// Watches the Tenants of `shard` and returns, once all of `expected` are Ready, when each became
/// Ready (other Tenants of the shard, already Ready, are not counted).
fn watch_ready(
    client: &Client,
    shard: &str,
    expected: HashSet<String>,
) -> tokio::task::JoinHandle<HashMap<String, Instant>> {
    let api: Api<Tenant> = Api::all(client.clone());
    let config = watcher::Config::default().labels(&format!("{SHARD_LABEL}={shard}"));
    tokio::spawn(async move {
        let mut ready: HashMap<String, Instant> = HashMap::new();
        let mut events = std::pin::pin!(watcher(api, config).applied_objects());
        while let Some(Ok(t)) = events.next().await {
            let name = t.name_any();
            if t.is_ready() && expected.contains(&name) {
                ready.entry(name).or_insert_with(Instant::now);
                if ready.len() == expected.len() {
                    break;
                }
            }
        }
        ready
    })
}

/// Runs `per_tenant` for names `prefix0000..` with `concurrency`, waits until all `n` Tenants of
/// `shard` are Ready, and measures the side (requests counted by the API server).
async fn timed_side<F, Fut>(
    client: &Client,
    shard: &str,
    prefix: &str,
    range: std::ops::Range<usize>,
    concurrency: usize,
    per_tenant: F,
) -> Result<Side>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let expected = range.clone().map(|i| format!("{prefix}{i:04}")).collect();
    let done = watch_ready(client, shard, expected);
    let started: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    // Start from a quiet API server: nothing left over from the previous side or round.
    let before = settled(client).await?;
    let t0 = Instant::now();
    stream::iter(range)
        .map(|i| {
            let name = format!("{prefix}{i:04}");
            let started = started.clone();
            let work = per_tenant(name.clone());
            async move {
                started.lock().await.insert(name, Instant::now());
                work.await
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await?;
    let ready = tokio::time::timeout(Duration::from_secs(900), done)
        .await
        .context("tenants not Ready within 15 min")??;
    let wall = t0.elapsed();
    let after = settled(client).await?;
    let started = started.lock().await;
    let mut latencies: Vec<Duration> = ready
        .iter()
        .filter_map(|(name, at)| Some(at.duration_since(*started.get(name)?)))
        .collect();
    latencies.sort();
    Ok(Side {
        wall,
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        requests: delta(&before, &after),
    })
}

/// Quotas the quota controller has computed, by namespace, for the baseline to wait on.
#[derive(Default)]
struct Enforced {
    quotas: std::sync::Mutex<HashMap<String, ResourceQuota>>,
    changed: Notify,
}

impl Enforced {
    /// Watches the baseline's quotas of one run (one watch request for the whole side).
    fn watch(client: &Client, run: &str) -> Arc<Enforced> {
        let enforced = Arc::new(Enforced::default());
        let api: Api<ResourceQuota> = Api::all(client.clone());
        let config = watcher::Config::default().labels(&format!("{BASELINE_LABEL}={run}"));
        let e = enforced.clone();
        tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config).applied_objects());
            while let Some(Ok(q)) = events.next().await {
                if q.status.as_ref().and_then(|s| s.hard.as_ref()).is_some() {
                    let ns = q.namespace().unwrap_or_default();
                    e.quotas.lock().expect("quota map").insert(ns, q);
                    e.changed.notify_waiters();
                }
            }
        });
        enforced
    }

    /// The quota of `tenant` once the quota controller enforces its spec.
    async fn wait(&self, tenant: &Tenant, host: &HostConfig) -> ResourceQuota {
        let ns = names::namespace(&tenant.name_any());
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if let Some(q) = self.quotas.lock().expect("quota map").get(&ns)
                && observe::quota_enforced(tenant, host, q)
            {
                return q.clone();
            }
            changed.await;
        }
    }
}

/// A host object as the baseline creates it: the operator's object, with the baseline's label in
/// place of the tenant label the operator watches.
fn unwatched<K: Resource>(mut object: K, run: &str) -> K {
    let labels = object.meta_mut().labels.get_or_insert_default();
    labels.remove(names::TENANT_LABEL);
    labels.insert(BASELINE_LABEL.to_owned(), run.to_owned());
    object
}

async fn create<K>(api: &Api<K>, object: &K) -> Result<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .context("create")
}

/// The baseline for one tenant: what the operator must do at the least, in a straight line.
/// Create the Tenant; create its namespace (owned by the Tenant) and the four objects in it;
/// wait for the quota controller to enforce the quota (the operator's Ready needs that too);
/// write the status the operator would write, with the operator's field manager.
async fn baseline_tenant(
    client: Client,
    host: HostConfig,
    enforced: Arc<Enforced>,
    run: String,
    shard: String,
    name: String,
) -> Result<()> {
    let tenants: Api<Tenant> = Api::all(client.clone());
    let t = create(&tenants, &tenant(&name, &shard)).await?;
    let ns = names::namespace(&name);
    let namespace = create(
        &Api::all(client.clone()),
        &unwatched(build::namespace(&t, &host), &run),
    )
    .await?;
    let (quota_api, lr_api, rb_api, np_api) = (
        Api::namespaced(client.clone(), &ns),
        Api::namespaced(client.clone(), &ns),
        Api::namespaced(client.clone(), &ns),
        Api::namespaced(client.clone(), &ns),
    );
    let (quota, limit_range, owner_binding) = (
        unwatched(build::quota(&t, &host), &run),
        unwatched(build::limit_range(&t, &host), &run),
        unwatched(build::owner_binding(&t), &run),
    );
    let policy = unwatched(build::network_policy(&t, &host), &run);
    let (quota, limit_range, owner_binding, network_policy) = futures::try_join!(
        create(&quota_api, &quota),
        create(&lr_api, &limit_range),
        create(&rb_api, &owner_binding),
        create(&np_api, &policy),
    )?;
    let quota = if observe::quota_enforced(&t, &host, &quota) {
        quota
    } else {
        enforced.wait(&t, &host).await
    };
    let objects = HostObjects {
        namespace: Some(namespace),
        quota: Some(quota),
        limit_range: Some(limit_range),
        owner_binding: Some(owner_binding),
        network_policy: Some(network_policy),
    };
    let outcome = Outcome {
        details: observe::details(&t, &host, &objects),
        stalled: None,
        quota: observe::quota_status(objects.quota.as_ref()),
        connection: None,
        control_plane: None,
    };
    let new = status::from_outcome(&t, &outcome);
    let body = json!({"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant", "status": new});
    tenants
        .patch_status(
            &name,
            &PatchParams::apply(names::STATUS_FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .context("status")?;
    Ok(())
}

/// Deletes the operator's Tenants of `shard` and waits until they and their namespaces are gone.
async fn delete_shard(client: &Client, shard: &str) -> Result<()> {
    let tenants: Api<Tenant> = Api::all(client.clone());
    let selector = format!("{SHARD_LABEL}={shard}");
    let lp = ListParams::default().labels(&selector);
    let list = tenants.list_metadata(&lp).await?;
    let namespaces: Vec<String> = list
        .items
        .iter()
        .map(|t| names::namespace(&t.name_any()))
        .collect();
    stream::iter(list.items)
        .map(|t| {
            let tenants = tenants.clone();
            async move {
                tenants
                    .delete(&t.name_any(), &DeleteParams::default())
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let deadline = Instant::now() + Duration::from_secs(600);
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    loop {
        let left = tenants.list_metadata(&lp).await?.items.len();
        let ns_left = ns_api
            .list_metadata(&ListParams::default().labels(names::TENANT_LABEL))
            .await?
            .items
            .iter()
            .filter(|n| namespaces.contains(&n.name_any()))
            .count();
        if left == 0 && ns_left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{left} tenants and {ns_left} namespaces of {shard} still there after 10 min");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

struct Round {
    baseline: Side,
    operator: Side,
    rss_kib: u64,
}

fn median_range(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

fn cell(values: Vec<f64>, unit: &str, precision: usize) -> String {
    let (m, lo, hi) = median_range(values);
    format!("{m:.precision$}{unit} [{lo:.precision$}–{hi:.precision$}]")
}

const API_REQUESTS: &str = "kubespaces_kube_api_requests_total";
const OPERATOR_WRITE_VERBS: [&str; 4] = ["POST", "PUT", "PATCH", "DELETE"];

/// What the operator has done so far, read from one metrics text so the figures agree.
struct Activity {
    writes: f64,
    reads: f64,
    reconciles: f64,
}

impl Activity {
    fn of(metrics: &str) -> Activity {
        let writes = metric_sum_where(metrics, API_REQUESTS, "verb", &OPERATOR_WRITE_VERBS);
        Activity {
            writes,
            reads: metric_sum(metrics, API_REQUESTS) - writes,
            reconciles: metric_sum(metrics, "kubespaces_reconcile_total"),
        }
    }
}

async fn start_operator(args: &Args, shard: &str, resync: &str) -> OperatorProcess {
    OperatorProcess::start_with(
        &args.operator,
        shard,
        &[
            "--resync",
            resync,
            "--concurrency",
            &args.operator_concurrency.to_string(),
        ],
    )
    .await
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
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let n = args.tenants;
    let c = args.concurrency;
    println!(
        "benchmark: {n} tenants at once per side, {} rounds (alternating which side goes first), client concurrency {c}, operator concurrency {}",
        args.rounds, args.operator_concurrency
    );
    println!(
        "  baseline: a plain client, per tenant: create the Tenant; create its namespace, quota, limit range, \
         owner RoleBinding and NetworkPolicy (the operator's build:: objects, labelled {BASELINE_LABEL} instead of \
         {}, so the operator does not cache them; its Tenants are not the operator's shard); wait for the quota \
         controller (one watch); server-side apply the operator's final status (its status::from_outcome)",
        names::TENANT_LABEL
    );
    println!(
        "  operator: per tenant, create the Tenant; the operator (a fresh process per round, --selector \
         {SHARD_LABEL}=<its shard>) does the rest"
    );
    println!(
        "  requests: the API server's apiserver_request_total, before and after each side (all clients: \
         the controller-manager's quota updates and everyone's leases included, on both sides)\n"
    );
    let run = run_id();
    let host = HostConfig::default();
    // A short resync: during the idle window every Ready tenant is re-checked several times, so
    // "zero writes" means re-checks write nothing, not that no re-check happened.
    let resync = format!("{}s", (args.idle_seconds / 4).max(1));
    let mut rounds = Vec::new();
    let mut last_operator = None;
    for r in 0..args.rounds {
        let operator_shard = format!("bench-{run}-{r}");
        let baseline_run = format!("{run}-{r}");
        let baseline_shard = format!("baseline-{run}-{r}");
        let operator = start_operator(&args, &operator_shard, &resync).await;
        let baseline_first = r % 2 == 0;
        let mut base = None;
        let mut op = None;
        for side in 0..2 {
            if (side == 0) == baseline_first {
                let enforced = Enforced::watch(&client, &baseline_run);
                let side = timed_side(
                    &client,
                    &baseline_shard,
                    &format!("b{run}-{r}-"),
                    0..n,
                    c,
                    |name| {
                        baseline_tenant(
                            client.clone(),
                            host.clone(),
                            enforced.clone(),
                            baseline_run.clone(),
                            baseline_shard.clone(),
                            name,
                        )
                    },
                )
                .await?;
                base = Some(side);
            } else {
                let tenants: Api<Tenant> = Api::all(client.clone());
                let side = timed_side(
                    &client,
                    &operator_shard,
                    &format!("t{run}-{r}-"),
                    0..n,
                    c,
                    |name| {
                        let tenants = tenants.clone();
                        let t = tenant(&name, &operator_shard);
                        async move { create(&tenants, &t).await.map(|_| ()) }
                    },
                )
                .await?;
                op = Some(side);
            }
        }
        let (base, op) = (base.expect("baseline ran"), op.expect("operator ran"));
        let rss_kib = operator.peak_rss_kib().unwrap_or(0);
        let line = |label: &str, s: &Side| {
            println!(
                "  {label:<8} wall {:>6.2}s  p50 {:>5.2}s  p99 {:>5.2}s  writes/tenant {:>5.2}: {}",
                s.wall.as_secs_f64(),
                s.p50.as_secs_f64(),
                s.p99.as_secs_f64(),
                s.writes_per_tenant(n),
                write_breakdown(&s.requests, n)
            )
        };
        println!(
            "round {} ({} first):",
            r + 1,
            if baseline_first {
                "baseline"
            } else {
                "operator"
            }
        );
        line("baseline", &base);
        line("operator", &op);
        println!(
            "  operator peak RSS with its {n} tenants: {:.1} MiB",
            rss_kib as f64 / 1024.0
        );
        rounds.push(Round {
            baseline: base,
            operator: op,
            rss_kib,
        });
        if r + 1 < args.rounds || args.idle_tenants <= n {
            // The next operator must find only its own tenants.
            delete_shard(&client, &operator_shard).await?;
            drop(operator);
        } else {
            last_operator = Some((operator, operator_shard));
        }
    }

    let col = |f: &dyn Fn(&Round) -> f64| rounds.iter().map(f).collect::<Vec<_>>();
    println!(
        "\nresults: {n} tenants, {} rounds, median [min–max]",
        rounds.len()
    );
    println!(
        "  {:<24} {:<24} {:<24} {:<20}",
        "", "baseline", "operator", "operator/baseline"
    );
    let row = |label: &str, f: &dyn Fn(&Side) -> f64, unit: &str, precision: usize| {
        println!(
            "  {label:<24} {:<24} {:<24} {:<20}",
            cell(col(&|r| f(&r.baseline)), unit, precision),
            cell(col(&|r| f(&r.operator)), unit, precision),
            cell(col(&|r| f(&r.operator) / f(&r.baseline)), "x", 2),
        )
    };
    row("wall until all Ready", &|s| s.wall.as_secs_f64(), " s", 2);
    row("p50 time-to-Ready", &|s| s.p50.as_secs_f64(), " s", 2);
    row("p99 time-to-Ready", &|s| s.p99.as_secs_f64(), " s", 2);
    row("writes per tenant", &|s| s.writes_per_tenant(n), "", 2);
    println!(
        "  {:<24} {:<24} {:<24}",
        "operator peak RSS",
        "-",
        cell(col(&|r| r.rss_kib as f64 / 1024.0), " MiB", 1)
    );
    println!(
        "  targets: wall <= 1.2x, p99 <= 2x the baseline's (issue 10); writes/tenant counted by the API server"
    );

    if let Some((operator, shard)) = last_operator {
        println!("\nidle: growing to {} tenants ...", args.idle_tenants);
        let tenants: Api<Tenant> = Api::all(client.clone());
        timed_side(
            &client,
            &shard,
            &format!("t{run}-{}-", args.rounds - 1),
            n..args.idle_tenants,
            c,
            |name| {
                let tenants = tenants.clone();
                let t = tenant(&name, &shard);
                async move { create(&tenants, &t).await.map(|_| ()) }
            },
        )
        .await?;
        let before = Activity::of(&operator.metrics().await);
        let api_before = api_requests(&client).await?;
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        let after = Activity::of(&operator.metrics().await);
        let api_idle = delta(&api_before, &api_requests(&client).await?);
        let writes = after.writes - before.writes;
        let reads = after.reads - before.reads;
        let reconciles = after.reconciles - before.reconciles;
        let rss = operator.peak_rss_kib().unwrap_or(0);
        println!(
            "  operator peak RSS with {} tenants (only its own in its caches): {:.1} MiB (target <= 64 MiB)",
            args.idle_tenants,
            rss as f64 / 1024.0
        );
        println!(
            "  idle {}s with {} Ready tenants (resync {resync}): {reconciles} reconciles, {writes} writes, {reads} other requests (target: 0 writes)",
            args.idle_seconds, args.idle_tenants
        );
        println!(
            "  API server writes meanwhile, all clients: {}",
            api_idle
                .iter()
                .filter(|((verb, _), _)| WRITE_VERBS.contains(&verb.as_str()))
                .map(|((verb, resource), v)| format!("{verb} {resource} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!("\n(the bench cluster in .kubespaces/bench is discarded by `make bench`)");
    Ok(())
}
