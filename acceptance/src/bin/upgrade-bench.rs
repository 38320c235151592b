//! `make bench-upgrade` (issue 22): `helm upgrade` of the platform from the previous release to
//! this one with `--tenants` live tenants, each with its own control plane and an app, while
//! probes ask each tenant's API (with the kubeconfig handed out), each app and the portal every
//! `--period-ms` ([`kubespaces_acceptance::upgrade`]).
//!
//! Side by side with the baseline: the same probes for as long again with nothing changing (the
//! probes' own failures and gaps on this machine). Prints, per target, requests sent, failed and
//! the longest time without an answer on each side, with the ratio of the longest gaps; the time
//! the upgrade took; and how many control planes restarted (target: 0 failed anywhere, no
//! control plane restarted).
//!
//! Then a rolling bump of every tenant's control-plane values ([`values_roll`]): `helm upgrade`
//! of the platform with a new pod annotation in `controlPlane.vcluster.values`, the same probes
//! on until every control plane runs again. Prints each tenant's API unavailability (its longest
//! time without an answer) and their p50/p99, the most tenants without an API at one moment
//! against `controlPlane.restarts.maxAtOnce`, and the app probes' failures (the apps run on the
//! host and must not notice); beside it, the same annotation bumped by a plain
//! `helm upgrade --wait` of one vCluster installed by Helm from the same chart and values.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Parser;
use futures::future::join_all;
use kubespaces_acceptance::{
    Env, figures,
    probe::{Probe, Report},
    release::chart_version,
    upgrade::{self, LiveTenant, Previous, Saved},
    values_roll::{self, PlainVcluster},
};

#[derive(Parser)]
#[command(
    about = "Benchmark an upgrade of the platform with live tenants, against the same probes idle"
)]
struct Args {
    /// Live tenants, each with its own control plane and an app.
    #[arg(long, default_value_t = 5)]
    tenants: usize,
    /// How often each probe asks, in milliseconds.
    #[arg(long, default_value_t = 200)]
    period_ms: u64,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let period = Duration::from_millis(args.period_ms);
    let env = Env::get();
    let previous = Previous::get();
    let saved = Saved::now(&env);
    eprintln!("upgrade-bench: release {} installed", previous.version);
    upgrade::install_previous(&env, &previous, &saved);
    let names: Vec<String> = (1..=args.tenants).map(|i| format!("upgrade-{i}")).collect();
    eprintln!(
        "upgrade-bench: {} tenants with control planes and apps",
        names.len()
    );
    let tenants = join_all(names.iter().map(|n| LiveTenant::create(&env, n))).await;
    let before: Vec<String> = tenants.iter().map(|t| t.marks(&env)).collect();

    let upgrade = start(&tenants, period).await;
    eprintln!("upgrade-bench: helm upgrade to {}", chart_version());
    let took = upgrade::upgrade_to_this_release(&env, &saved).await;
    let upgrade = stop(upgrade).await;

    eprintln!("upgrade-bench: the same probes, idle, for as long");
    let idle = start(&tenants, period).await;
    tokio::time::sleep(took).await; // the measurement window itself, not a synchronisation
    let idle = stop(idle).await;

    let restarted = tenants
        .iter()
        .zip(&before)
        .filter(|(t, b)| t.marks(&env) != **b)
        .count();
    print(&upgrade, &idle);
    println!(
        "helm upgrade {} -> {}: {:.1} s (to every replica rolled out; then the new leader reconciled every tenant)",
        previous.version,
        chart_version(),
        took.as_secs_f64()
    );
    println!(
        "control planes restarted or Ready changed: {restarted} of {}",
        tenants.len()
    );
    let failed: u64 = upgrade.iter().map(|r| r.failed).sum();

    let roll = roll_values(&env, &saved, &tenants, period).await;
    saved.restore(&env);
    if failed > 0 || restarted > 0 {
        bail!("{failed} requests failed during the upgrade, {restarted} control planes restarted");
    }
    roll
}

/// The second half: every tenant's control-plane values bumped through the platform's chart,
/// beside one plain vCluster's `helm upgrade`.
async fn roll_values(
    env: &Env,
    saved: &Saved,
    tenants: &[LiveTenant],
    period: Duration,
) -> Result<()> {
    eprintln!("upgrade-bench: a plain vCluster beside the tenants, installed by helm");
    let plain = PlainVcluster::install(env, "plain-vcluster");
    let names: Vec<String> = tenants.iter().map(|t| t.name.clone()).collect();
    let before: Vec<String> = names
        .iter()
        .map(|n| values_roll::control_plane_pod_uid(env, n))
        .collect();
    let max_at_once = values_roll::max_at_once();

    let probes = start(tenants, period).await;
    eprintln!("upgrade-bench: helm upgrade with new values for every tenant's vCluster");
    let started = Instant::now();
    let helm_took = values_roll::bump_platform_values(env, saved, "1");
    let rolled =
        values_roll::wait_rolled(env, &names, &before, started, Duration::from_secs(900)).await;
    let reports = stop(probes).await;
    eprintln!("upgrade-bench: the same values bumped in the plain vCluster");
    let plain_took = plain.upgrade("1");
    plain.remove(env);

    // Each tenant's probes are its API's, then its app's (LiveTenant::probes); the portal's last.
    let apis: Vec<_> = reports.iter().step_by(2).take(names.len()).collect();
    let apps: Vec<_> = reports
        .iter()
        .skip(1)
        .step_by(2)
        .take(names.len())
        .collect();
    let unavailable: Vec<Duration> = apis.iter().map(|r| r.longest_gap).collect();
    // An outage, not the probe's own pace: a gap of more than a few periods.
    let outages: Vec<_> = apis
        .iter()
        .filter(|r| r.longest_gap > period * 5)
        .map(|r| r.longest_gap_window)
        .collect();
    let at_once = values_roll::most_at_once(&outages);

    println!();
    println!(
        "rolling bump of every tenant's vCluster values (controlPlane.restarts.maxAtOnce {max_at_once}):"
    );
    println!(
        "{:<16} {:>16} {:>10} {:>16} {:>10} {:>12}",
        "tenant", "API unavailable", "API failed", "app longest gap", "app failed", "rolled at"
    );
    for (i, name) in names.iter().enumerate() {
        println!(
            "{:<16} {:>14.2} s {:>10} {:>14.2} s {:>10} {:>10.1} s",
            name,
            apis[i].longest_gap.as_secs_f64(),
            apis[i].failed,
            apps[i].longest_gap.as_secs_f64(),
            apps[i].failed,
            rolled[i].as_secs_f64()
        );
        for e in apps[i].errors.iter() {
            println!("    app: {e}");
        }
    }
    let (p50, p99) = (
        figures::percentile(&unavailable, 50.0),
        figures::percentile(&unavailable, 99.0),
    );
    println!(
        "API unavailability per tenant: p50 {:.2} s, p99 {:.2} s; at most {at_once} tenants without an API at once",
        p50.as_secs_f64(),
        p99.as_secs_f64()
    );
    println!(
        "helm upgrade of the platform: {:.1} s; every control plane running the new values {:.1} s after it began",
        helm_took.as_secs_f64(),
        rolled
            .iter()
            .max()
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
    );
    println!(
        "plain `helm upgrade --wait` of one vCluster, same chart, values and change: {:.1} s (p50 unavailability / that: {:.2}x)",
        plain_took.as_secs_f64(),
        p50.as_secs_f64() / plain_took.as_secs_f64().max(f64::EPSILON)
    );
    let app_failed: u64 = apps.iter().map(|r| r.failed).sum();
    if app_failed > 0 || at_once as u64 > max_at_once {
        bail!(
            "during the roll {app_failed} app requests failed and {at_once} tenants had no API at once (at most {max_at_once} allowed)"
        );
    }
    Ok(())
}

async fn start(tenants: &[LiveTenant], period: Duration) -> Vec<Probe> {
    let mut probes = Vec::new();
    for t in tenants {
        probes.extend(t.probes(period).await);
    }
    probes.push(upgrade::portal_probe(period));
    probes
}

async fn stop(probes: Vec<Probe>) -> Vec<Report> {
    join_all(probes.into_iter().map(Probe::stop)).await
}

fn print(upgrade: &[Report], idle: &[Report]) {
    println!(
        "{:<52} {:>17} {:>17} {:>21} {:>7}",
        "target", "sent upgr / idle", "failed upgr / idle", "longest gap upgr / idle", "ratio"
    );
    for (u, i) in upgrade.iter().zip(idle) {
        let (gu, gi) = (u.longest_gap.as_secs_f64(), i.longest_gap.as_secs_f64());
        println!(
            "{:<52} {:>8} / {:<6} {:>8} / {:<6} {:>9.2} s / {:<6.2} s {:>6.2}x",
            u.target,
            u.sent,
            i.sent,
            u.failed,
            i.failed,
            gu,
            gi,
            gu / gi.max(f64::EPSILON)
        );
        for e in &u.errors {
            println!("    during the upgrade: {e}");
        }
    }
}
