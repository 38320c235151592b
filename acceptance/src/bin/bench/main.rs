//! `make bench`: how fast and how lean the operator provisions tenants on a real control plane,
//! side by side with a baseline that does the same unavoidable work with a plain client.
//!
//! Both sides get the same input from the same client code: N Tenants created at once (`c`
//! creates in flight). The operator (a fresh process per round, reconcile concurrency `c`)
//! provisions its side; on the other, `c` baseline workers take the Tenants in creation order and
//! create the same host objects, wait for the quota controller and write the same final status
//! (see [`baseline`]). The baseline's objects and Tenants are outside the operator's selection,
//! so they are neither cached nor reconciled. Requests are counted by the API server's own
//! `apiserver_request_total`, read before and after each side.
//!
//! Several rounds, alternating which side goes first, each on fresh names and with a fresh
//! operator process (the previous round's operator tenants are deleted first, so its peak RSS
//! counts only its own tenants). Then, per side, tenants one at a time: the latency of one tenant
//! with no queue in front of it. Prints median and range over the rounds, then the operator's
//! peak RSS with the idle count of tenants and the writes an idle operator makes.

mod apiserver;
mod baseline;
mod side;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams},
};
use kubespaces_acceptance::{
    figures::cell,
    operator::{OperatorProcess, SHARD_LABEL, metric_sum, metric_sum_where},
};
use kubespaces_operator::{api::Tenant, build::settings::HostConfig, names};

use crate::{
    apiserver::WRITE_VERBS,
    baseline::{BASELINE_LABEL, Baseline},
    side::{Load, Side},
};

#[derive(Parser)]
#[command(about = "Benchmark the KubeSpaces operator against a plain client doing the same work")]
struct Args {
    /// Tenants created at once in each timed run.
    #[arg(long, default_value_t = 300)]
    tenants: usize,
    /// Rounds; each runs both sides, alternating which goes first.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Tenants per side and round created one at a time, each once the one before is Ready
    /// (0 skips this).
    #[arg(long, default_value_t = 20)]
    latency_tenants: usize,
    /// Total tenants for the memory and idle measurements (0 skips them).
    #[arg(long, default_value_t = 1000)]
    idle_tenants: usize,
    /// How long the operator is watched while idle.
    #[arg(long, default_value_t = 120)]
    idle_seconds: u64,
    /// Creates in flight, and the baseline's workers.
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

fn names(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i:04}")).collect()
}

/// Deletes the operator's Tenants of `shard` and waits until they and their namespaces are gone.
async fn delete_shard(client: &Client, shard: &str) -> Result<()> {
    let tenants: Api<Tenant> = Api::all(client.clone());
    let lp = ListParams::default().labels(&format!("{SHARD_LABEL}={shard}"));
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
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    // Polled: "all gone" has no event of its own, and this is between measurements.
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
        if std::time::Instant::now() > deadline {
            bail!("{left} tenants and {ns_left} namespaces of {shard} still there after 10 min");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Both sides of one round under one load.
struct Pair {
    baseline: Side,
    operator: Side,
    /// What the operator did for its side, by its own count.
    work: Activity,
}

struct Round {
    burst: Pair,
    single: Option<Pair>,
    rss_kib: u64,
}

const API_REQUESTS: &str = "kubespaces_kube_api_requests_total";
const OPERATOR_WRITE_VERBS: [&str; 4] = ["POST", "PUT", "PATCH", "DELETE"];

/// What the operator has done so far, read from one metrics text so the figures agree, and the
/// CPU time it has used (it shares the machine's cores with the API server it loads).
#[derive(Clone, Copy, Default)]
struct Activity {
    writes: f64,
    reads: f64,
    reconciles: f64,
    cpu_seconds: f64,
}

impl Activity {
    async fn of(operator: &OperatorProcess) -> Activity {
        let metrics = operator.metrics().await;
        let writes = metric_sum_where(&metrics, API_REQUESTS, "verb", &OPERATOR_WRITE_VERBS);
        Activity {
            writes,
            reads: metric_sum(&metrics, API_REQUESTS) - writes,
            reconciles: metric_sum(&metrics, "kubespaces_reconcile_total"),
            cpu_seconds: side::cpu_seconds(operator.pid()).unwrap_or(0.0),
        }
    }

    fn since(self, before: Activity) -> Activity {
        Activity {
            writes: self.writes - before.writes,
            reads: self.reads - before.reads,
            reconciles: self.reconciles - before.reconciles,
            cpu_seconds: self.cpu_seconds - before.cpu_seconds,
        }
    }
}

/// Resident memory of a process now, in KiB (VmRSS).
fn rss_now_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The setting of one round that both sides share.
struct RoundSetup<'a> {
    client: &'a Client,
    host: &'a HostConfig,
    operator_shard: String,
    baseline_shard: String,
    baseline_run: String,
    prefix: String,
}

impl RoundSetup<'_> {
    /// Runs both sides under `load` with `count` tenants each, in the given order.
    async fn pair(
        &self,
        operator: &OperatorProcess,
        load: Load,
        tag: &str,
        count: usize,
        baseline_first: bool,
    ) -> Result<Pair> {
        let (mut base, mut op, mut work) = (None, None, Activity::default());
        for first in [true, false] {
            if first == baseline_first {
                let b = Baseline::new(self.client, self.host.clone(), &self.baseline_run);
                let names = names(&format!("b{tag}{}", self.prefix), 0..count);
                base =
                    Some(side::run(self.client, &self.baseline_shard, names, load, Some(b)).await?);
            } else {
                let names = names(&format!("t{tag}{}", self.prefix), 0..count);
                let before = Activity::of(operator).await;
                let mut side =
                    side::run(self.client, &self.operator_shard, names, load, None).await?;
                work = Activity::of(operator).await.since(before);
                side.operator_cpu = work.cpu_seconds;
                op = Some(side);
            }
        }
        Ok(Pair {
            baseline: base.context("baseline ran")?,
            operator: op.context("operator ran")?,
            work,
        })
    }
}

fn print_pair(pair: &Pair, n: usize) {
    let line = |label: &str, s: &Side| {
        println!(
            "    {label:<8} wall {:>6.2}s  p50 {:>5.2}s  p99 {:>5.2}s  CPU: control plane {:>5.2}s, bench client {:>5.2}s  writes/tenant {:>5.2}: {}",
            s.wall.as_secs_f64(),
            s.p50.as_secs_f64(),
            s.p99.as_secs_f64(),
            s.cluster_cpu,
            s.client_cpu,
            s.writes_per_tenant(n),
            apiserver::write_breakdown(&s.requests, n)
        )
    };
    line("baseline", &pair.baseline);
    line("operator", &pair.operator);
    for (label, s) in [("baseline", &pair.baseline), ("operator", &pair.operator)] {
        println!(
            "    {label:<8} API server: {}",
            apiserver::time_breakdown(&s.requests, 6)
        );
    }
    let w = &pair.work;
    println!(
        "    operator's own count: {:.2} reconciles, {:.2} writes and {:.2} other requests per tenant; CPU {:.2} s",
        w.reconciles / n as f64,
        w.writes / n as f64,
        w.reads / n as f64,
        w.cpu_seconds
    );
}

fn print_table(rounds: &[Round], pick: &dyn Fn(&Round) -> Option<&Pair>) {
    let col = |f: &dyn Fn(&Pair) -> f64| rounds.iter().filter_map(pick).map(f).collect::<Vec<_>>();
    let row = |label: &str, f: &dyn Fn(&Side) -> f64, unit: &str, precision: usize| {
        println!(
            "  {label:<24} {:<24} {:<24} {:<20}",
            cell(col(&|p| f(&p.baseline)), unit, precision),
            cell(col(&|p| f(&p.operator)), unit, precision),
            cell(col(&|p| f(&p.operator) / f(&p.baseline)), "x", 2),
        )
    };
    row("wall until all Ready", &|s| s.wall.as_secs_f64(), " s", 2);
    row("p50 time-to-Ready", &|s| s.p50.as_secs_f64(), " s", 2);
    row("p99 time-to-Ready", &|s| s.p99.as_secs_f64(), " s", 2);
    row("control plane CPU", &|s| s.cluster_cpu, " s", 2);
    row("CPU, all processes", &|s| s.cpu(), " s", 2);
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
    let (n, c, single) = (args.tenants, args.concurrency, args.latency_tenants);
    println!(
        "benchmark: {n} tenants at once per side, {} rounds (alternating which side goes first), \
         {c} creates in flight, {c} baseline workers, operator concurrency {}; then {single} tenants \
         one at a time per side",
        args.rounds, args.operator_concurrency
    );
    println!(
        "  both sides: the same client creates the Tenants; time-to-Ready is from the start of a \
         Tenant's create until a watch sees it Ready; wall time from the first create until all are"
    );
    println!(
        "  baseline: {c} workers take the created Tenants in creation order and, per tenant, create \
         its namespace, quota, limit range, owner RoleBinding and NetworkPolicy (the operator's \
         build:: objects, labelled {BASELINE_LABEL} instead of {}, so the operator does not cache \
         them; its Tenants are not the operator's shard); wait for the quota controller (one \
         watch); server-side apply the operator's final status (its status::from_pass)",
        names::TENANT_LABEL
    );
    println!(
        "  operator: a fresh process per round (--selector {SHARD_LABEL}=<its shard>) does the rest"
    );
    println!(
        "  requests: the API server's apiserver_request_total, between quiet points before and \
         after each side (all clients: the controller-manager's follow-ups and everyone's leases \
         included, on both sides)\n"
    );
    let run = run_id();
    let host = HostConfig::default();
    // A short resync: during the idle window every Ready tenant is re-checked several times, so
    // "zero writes" means re-checks write nothing, not that no re-check happened.
    let resync = format!("{}s", (args.idle_seconds / 4).max(1));
    let operator_args = [
        "--resync".to_owned(),
        resync.clone(),
        "--concurrency".to_owned(),
        args.operator_concurrency.to_string(),
    ];
    let operator_args: Vec<&str> = operator_args.iter().map(String::as_str).collect();
    let mut rounds = Vec::new();
    let mut last_operator = None;
    for r in 0..args.rounds {
        let setup = RoundSetup {
            client: &client,
            host: &host,
            operator_shard: format!("bench-{run}-{r}"),
            baseline_shard: format!("baseline-{run}-{r}"),
            baseline_run: format!("{run}-{r}"),
            prefix: format!("{run}-{r}-"),
        };
        let operator =
            OperatorProcess::start_with(&args.operator, &setup.operator_shard, &operator_args)
                .await;
        let baseline_first = r % 2 == 0;
        let burst = setup
            .pair(
                &operator,
                Load::Burst { concurrency: c },
                "",
                n,
                baseline_first,
            )
            .await?;
        // Read before the one-at-a-time tenants join: the peak with its N tenants.
        let rss_kib = operator.peak_rss_kib().unwrap_or(0);
        let one_at_a_time = match single {
            0 => None,
            k => Some(
                setup
                    .pair(&operator, Load::OneAtATime, "l", k, baseline_first)
                    .await?,
            ),
        };
        let first = if baseline_first {
            "baseline"
        } else {
            "operator"
        };
        println!("round {} ({first} first):", r + 1);
        println!("  {n} at once:");
        print_pair(&burst, n);
        if let Some(s) = &one_at_a_time {
            println!("  {single} one at a time:");
            print_pair(s, single);
        }
        println!(
            "  operator peak RSS with its {n} tenants: {:.1} MiB",
            rss_kib as f64 / 1024.0
        );
        rounds.push(Round {
            burst,
            single: one_at_a_time,
            rss_kib,
        });
        if r + 1 < args.rounds || args.idle_tenants <= n + single {
            // The next operator must find only its own tenants.
            delete_shard(&client, &setup.operator_shard).await?;
            drop(operator);
        } else {
            last_operator = Some((operator, setup));
        }
    }

    println!("\nresults: {} rounds, median [min–max]", rounds.len());
    println!(
        "  {:<24} {:<24} {:<24} {:<20}",
        format!("{n} at once"),
        "baseline",
        "operator",
        "operator/baseline"
    );
    print_table(&rounds, &|r| Some(&r.burst));
    let writes = |f: &dyn Fn(&Round) -> f64| rounds.iter().map(f).collect::<Vec<_>>();
    println!(
        "  {:<24} {:<24} {:<24} {:<20}",
        "writes per tenant",
        cell(writes(&|r| r.burst.baseline.writes_per_tenant(n)), "", 2),
        cell(writes(&|r| r.burst.operator.writes_per_tenant(n)), "", 2),
        cell(
            writes(
                &|r| r.burst.operator.writes_per_tenant(n) / r.burst.baseline.writes_per_tenant(n)
            ),
            "x",
            2
        ),
    );
    println!(
        "  {:<24} {:<24} {:<24}",
        "operator peak RSS",
        "-",
        cell(writes(&|r| r.rss_kib as f64 / 1024.0), " MiB", 1)
    );
    println!(
        "  {:<24} {:<24} {:<24}",
        "operator CPU time",
        "-",
        cell(writes(&|r| r.burst.work.cpu_seconds), " s", 2)
    );
    println!(
        "  {:<24} {:<24} {:<24}",
        "operator reconciles/tenant",
        "-",
        cell(writes(&|r| r.burst.work.reconciles / n as f64), "", 2)
    );
    if single > 0 {
        println!("  {:<24}", format!("{single} one at a time"));
        print_table(&rounds, &|r| r.single.as_ref());
    }
    println!(
        "  targets: wall <= 1.2x, p99 <= 2x the baseline's (issue 10); writes/tenant counted by the API server"
    );

    if let Some((operator, setup)) = last_operator {
        println!("\nidle: growing to {} tenants ...", args.idle_tenants);
        let names = names(&format!("t{}", setup.prefix), n..args.idle_tenants - single);
        side::run(
            &client,
            &setup.operator_shard,
            names,
            Load::Burst { concurrency: c },
            None,
        )
        .await?;
        let quota_changes =
            side::count_changes::<ResourceQuota>(&client, names::TENANT_LABEL).await?;
        let before = Activity::of(&operator).await;
        let api_before = apiserver::requests(&client).await?;
        // Idle is "nothing happens for this long": a sleep is the measurement itself.
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        let idle = Activity::of(&operator).await.since(before);
        let api_idle = apiserver::delta(&api_before, &apiserver::requests(&client).await?);
        let (writes, reads, reconciles) = (idle.writes, idle.reads, idle.reconciles);
        let changed = quota_changes.load(std::sync::atomic::Ordering::Relaxed);
        let rss = operator.peak_rss_kib().unwrap_or(0);
        println!(
            "  operator peak RSS with {} tenants (only its own in its caches): {:.1} MiB (target <= 64 MiB); resident now {:.1} MiB",
            args.idle_tenants,
            rss as f64 / 1024.0,
            rss_now_kib(operator.pid()).unwrap_or(0) as f64 / 1024.0
        );
        println!(
            "  idle {}s with {} Ready tenants (resync {resync}): {reconciles} reconciles, {writes} writes, {reads} other requests, CPU {:.2} s (target: 0 writes)",
            args.idle_seconds, args.idle_tenants, idle.cpu_seconds
        );
        println!(
            "  its inputs changed meanwhile: {changed} updates of quotas in its tenants' namespaces \
             (the quota controller's; each may change the quota usage the Tenant's status shows)"
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
