//! `make bench-server` (issue 19): how the server serves a legitimate user while it is flooded,
//! side by side with the same server left alone.
//!
//! Both sides: a fresh `kubespaces-server` process (the release binary, `--server`, with the
//! admin's `$KUBECONFIG` and Dex as its issuer), `--tenants` Tenants seeded on the cluster (half
//! of them the user's, with a status as an operator would write it), `--warmup` untimed lists,
//! `--settle-secs` of waiting, then `--requests` timed `GET /api/v1/tenants` as the user with a
//! real Dex ID token, one after another, each on a new connection (as the CLI, one process per
//! command, makes them). The REST API rather than the CLI binary: the CLI's own start-up would
//! swamp the server's latency. Then the server's resident memory from /proc/<pid>/status: VmHWM
//! (its peak since it started, so over the whole side) and VmRSS (at the end of the timed lists).
//!
//! The flood side does the same while a bounded flood runs on loopback (see [`flood`]): 200 idle
//! live streams held open, and loops of unauthenticated `/login` and of forged tokens, started
//! `--settle-secs` before the timed lists and running until after them. `--rounds` rounds, the order of the sides alternating; median and
//! range of each figure and of the ratio per round, against the targets: p99 <= 2x, RSS <= 1.5x.

mod flood;
mod report;
mod server;
mod user;

use std::{path::PathBuf, time::Duration};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kubespaces_acceptance::oidc::{ADMIN_GROUP, Dex};

use crate::{
    flood::Flood,
    report::{Round, Side},
    server::ServerProcess,
    user::{ADMIN, OTHER_USER, USER},
};

#[derive(Parser)]
#[command(about = "Benchmark a user's tenant list on the KubeSpaces server, alone and flooded")]
struct Args {
    /// Timed lists per side and round.
    #[arg(long, default_value_t = 400)]
    requests: usize,
    /// Rounds; each runs both sides, alternating which goes first.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Tenants seeded on the cluster, half of them the user's.
    #[arg(long, default_value_t = 50)]
    tenants: usize,
    /// Untimed lists per side before the timed ones.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Seconds from the flood's start (on the other side: from the warm-up) to the timed lists.
    #[arg(long, default_value_t = 10)]
    settle_secs: u64,
    /// Idle live streams the flood holds open.
    #[arg(long, default_value_t = 200)]
    streams: usize,
    /// Loops of unauthenticated `GET /login`.
    #[arg(long, default_value_t = 4)]
    login_workers: usize,
    /// Loops of `GET /api/v1/tenants` with forged tokens.
    #[arg(long, default_value_t = 4)]
    forged_workers: usize,
    /// Requests per second of each of the two loops (`/login`, forged tokens), spread over its
    /// workers: a bounded flood. 0: as fast as the server answers, which on one machine measures
    /// the flood's client as much as the server (it competes for the same cores, and refusals
    /// with 429 come back in microseconds).
    #[arg(long, default_value_t = 500)]
    flood_rate: u32,
    /// Threads of the flood's client (at most this many cores).
    #[arg(long, default_value_t = 1)]
    flood_threads: usize,
    /// The server's --pending-login-ttl-secs.
    #[arg(long, default_value_t = 300)]
    pending_login_ttl_secs: u64,
    /// The server binary (built with --release by `make bench-server`).
    #[arg(
        long,
        env = "KUBESPACES_SERVER_BIN",
        default_value = "target/release/kubespaces-server"
    )]
    server: String,
    /// State dir of the cluster: the servers log to <dir>/logs/server-bench-<round>-<side>.log.
    #[arg(long, env = "KUBESPACES_STATE")]
    state_dir: Option<PathBuf>,
}

/// What every side shares.
struct Bench {
    args: Args,
    dex: Dex,
    settings: server::Settings,
    flood: flood::Config,
    forged: Vec<String>,
    logs: PathBuf,
}

/// One side of one round; returns it and how many Tenants the user's lists held.
async fn run_side(ctx: &Bench, round: usize, flooded: bool) -> Result<(Side, usize)> {
    let name = if flooded { "flood" } else { "no-flood" };
    let log = ctx
        .logs
        .join(format!("server-bench-{}-{name}.log", round + 1));
    let mut server = ServerProcess::start(&ctx.settings, &log)?;
    let http = user::http(true);
    server.wait_ready(&http, Duration::from_secs(60)).await?;
    // Tokens per side: Dex's ID tokens live 10 minutes (dex.sh).
    let token = ctx.dex.token(USER).await;
    let admin = ctx.dex.token(ADMIN).await;
    let url = server.url.clone();
    let expected = user::wait_listed(&http, &url, &admin, ctx.args.tenants).await?;
    user::time_lists(&http, &url, &token, ctx.args.warmup, expected).await;
    let flood = if flooded {
        let other = ctx.dex.token(OTHER_USER).await;
        Some(Flood::start(&ctx.flood, &url, &other, &ctx.forged).await?)
    } else {
        None
    };
    // The wait is the setting itself: the flood runs (or the server idles) this long.
    tokio::time::sleep(Duration::from_secs(ctx.args.settle_secs)).await;
    let latencies = user::time_lists(&http, &url, &token, ctx.args.requests, expected).await;
    let memory = server.memory()?;
    let flood = match flood {
        Some(f) => Some(f.stop().await),
        None => None,
    };
    server.stop(Duration::from_secs(10)).await;
    let side = Side {
        latencies,
        memory,
        flood,
    };
    Ok((side, expected))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.requests == 0 || args.rounds == 0 || args.flood_threads == 0 {
        bail!("--requests, --rounds and --flood-threads must be at least 1");
    }
    let dex = Dex::get();
    let client = kube::Client::try_default()
        .await
        .context("a Kubernetes client from KUBECONFIG")?;
    println!(
        "seeding {} Tenants (label kubespaces.io/test-operator=server-bench) ...",
        args.tenants
    );
    user::seed(&client, args.tenants).await?;
    let forged = flood::forged_tokens(&dex).await?;
    let logs = args
        .state_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("create {}", logs.display()))?;
    let ctx = Bench {
        settings: server::Settings {
            bin: args.server.clone(),
            issuer: dex.issuer.clone(),
            client_id: dex.client_id.clone(),
            admin_group: ADMIN_GROUP.to_owned(),
            pending_login_ttl_secs: args.pending_login_ttl_secs,
        },
        flood: flood::Config {
            streams: args.streams,
            login_workers: args.login_workers,
            forged_workers: args.forged_workers,
            rate: args.flood_rate,
            threads: args.flood_threads,
        },
        forged,
        logs,
        dex,
        args,
    };
    let a = &ctx.args;
    println!(
        "server {}: --pending-login-ttl-secs {}; flood: {} streams, {} \
         /login loops and {} forged-token loops at {} requests/s each (0: unbounded), {} client \
         thread(s), {} s before the timed lists",
        a.server,
        a.pending_login_ttl_secs,
        a.streams,
        a.login_workers,
        a.forged_workers,
        a.flood_rate,
        a.flood_threads,
        a.settle_secs
    );
    let mut rounds = Vec::new();
    let mut expected = 0;
    for r in 0..a.rounds {
        let flood_first = r % 2 == 1;
        let (mut quiet, mut flooded) = (None, None);
        for with_flood in [flood_first, !flood_first] {
            let (side, listed) = run_side(&ctx, r, with_flood).await?;
            report::print_side(r, &side);
            expected = listed;
            *(if with_flood { &mut flooded } else { &mut quiet }) = Some(side);
        }
        let (Some(quiet), Some(flooded)) = (quiet, flooded) else {
            unreachable!("both sides ran")
        };
        rounds.push(Round { quiet, flooded });
    }
    report::print_summary(&rounds, a.requests, a.tenants, expected);
    println!(
        "(the servers' logs: {}/server-bench-*.log)",
        ctx.logs.display()
    );
    Ok(())
}
