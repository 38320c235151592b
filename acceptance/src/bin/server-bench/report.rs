//! What each side measured, per round as it comes and at the end side by side: median and
//! range over the rounds, and the ratios (flood / no flood, per round) against the targets.

use kubespaces_acceptance::figures::{cell, median_range};

use crate::{flood, server::Memory, user::Latencies};

pub struct Side {
    pub latencies: Latencies,
    pub memory: Memory,
    pub flood: Option<flood::Report>,
}

pub struct Round {
    pub quiet: Side,
    pub flooded: Side,
}

/// Targets of issue 19: the flooded run's p99 and RSS against the run without a flood.
const P99_TARGET: f64 = 2.0;
const RSS_TARGET: f64 = 1.5;

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub fn print_side(round: usize, side: &Side) {
    let l = &side.latencies;
    let name = if side.flood.is_some() {
        "flood"
    } else {
        "no flood"
    };
    println!(
        "round {} {name:<8}: list p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} answered, {} failed); \
         server RSS peak {:.1} MiB, at the end {:.1} MiB",
        round + 1,
        l.percentile_ms(50.0),
        l.percentile_ms(99.0),
        l.percentile_ms(100.0),
        l.sorted.len(),
        l.failures,
        mib(side.memory.peak_kib),
        mib(side.memory.now_kib),
    );
    if let Some(why) = &l.first_failure {
        println!("    first failure of the user's lists: {why}");
    }
    if let Some(f) = &side.flood {
        let rate = |n: u64| n as f64 / f.secs;
        println!(
            "    flood {:.1} s: /login {:.0}/s ({} redirected to Dex, {} otherwise), forged tokens \
             {:.0}/s ({} refused 401, {} otherwise), {} of both throttled 429, {} unanswered; \
             streams: {} opened, {} still open at the end, {} refused",
            f.secs,
            rate(f.logins + f.logins_unexpected),
            f.logins,
            f.logins_unexpected,
            rate(f.forged + f.forged_unexpected),
            f.forged,
            f.forged_unexpected,
            f.throttled,
            f.errors,
            f.streams_opened,
            f.streams_held,
            f.streams_failed,
        );
    }
}

/// One row: the figure on each side and the ratio per round; with a target, whether the
/// median ratio meets it. Returns the median ratio.
fn row(
    rounds: &[Round],
    label: &str,
    unit: &str,
    figure: &dyn Fn(&Side) -> f64,
    target: Option<f64>,
) -> f64 {
    let quiet: Vec<f64> = rounds.iter().map(|r| figure(&r.quiet)).collect();
    let flooded: Vec<f64> = rounds.iter().map(|r| figure(&r.flooded)).collect();
    let ratios: Vec<f64> = rounds
        .iter()
        .map(|r| figure(&r.flooded) / figure(&r.quiet))
        .collect();
    let (median, _, _) = median_range(ratios.clone());
    let verdict = target.map_or_else(String::new, |t| {
        let met = if median <= t { "met" } else { "NOT met" };
        format!("<= {t}x: {met}")
    });
    println!(
        "  {label:<26} {:<24} {:<24} {:<22} {verdict}",
        cell(quiet, unit, 2),
        cell(flooded, unit, 2),
        cell(ratios, "x", 2),
    );
    median
}

pub fn print_summary(rounds: &[Round], requests: usize, tenants: usize, expected: usize) {
    println!(
        "\nresults: {} rounds (order alternating), {requests} timed lists per side of {expected} \
         Tenants of {tenants}, REST API, median [min–max]",
        rounds.len()
    );
    println!(
        "  {:<26} {:<24} {:<24} {:<22} target",
        "", "no flood", "flood", "flood / no flood"
    );
    row(
        rounds,
        "list p50",
        " ms",
        &|s| s.latencies.percentile_ms(50.0),
        None,
    );
    let p99 = row(
        rounds,
        "list p99",
        " ms",
        &|s| s.latencies.percentile_ms(99.0),
        Some(P99_TARGET),
    );
    let peak = row(
        rounds,
        "server RSS peak (VmHWM)",
        " MiB",
        &|s| mib(s.memory.peak_kib),
        Some(RSS_TARGET),
    );
    let end = row(
        rounds,
        "server RSS at the end",
        " MiB",
        &|s| mib(s.memory.now_kib),
        Some(RSS_TARGET),
    );
    let failed: usize = rounds.iter().map(|r| r.flooded.latencies.failures).sum();
    let failed_quiet: usize = rounds.iter().map(|r| r.quiet.latencies.failures).sum();
    println!(
        "  the user's lists that failed: {failed_quiet} without the flood, {failed} under it \
         (each side's percentiles count only the answered ones)"
    );
    let verdict = |x: f64, t: f64| if x <= t { "met" } else { "NOT met" };
    println!(
        "targets (issue 19, on the median ratio): p99 <= {P99_TARGET}x: {} ({p99:.2}x); RSS <= \
         {RSS_TARGET}x: peak {} ({peak:.2}x), at the end {} ({end:.2}x){}",
        verdict(p99, P99_TARGET),
        verdict(peak, RSS_TARGET),
        verdict(end, RSS_TARGET),
        if failed > 0 {
            "; NOT met: lists failed under the flood"
        } else {
            ""
        }
    );
}
