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

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Parser;
use futures::future::join_all;
use kubespaces_acceptance::{
    Env,
    probe::{Probe, Report},
    release::chart_version,
    upgrade::{self, LiveTenant, Previous, Saved},
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
    saved.restore(&env);
    let failed: u64 = upgrade.iter().map(|r| r.failed).sum();
    if failed > 0 || restarted > 0 {
        bail!("{failed} requests failed during the upgrade, {restarted} control planes restarted");
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
