//! The flood, on loopback, bounded: `streams` idle live streams held open with a valid token,
//! then `login_workers` loops of unauthenticated `GET /login` (each begins a login, sealed in the
//! answer's cookie: the server keeps nothing of it) and
//! `forged_workers` loops of `GET /api/v1/tenants` with forged tokens, each worker sending its
//! next request as soon as the last is answered (keep-alive). All of it runs in a runtime of its
//! own with `threads` threads, so the flood's client never takes the timed user's thread and
//! takes at most that many cores.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use kubespaces_acceptance::oidc::{ADMIN_GROUP, Dex, TestKey};
use serde_json::json;
use tokio::{runtime::Runtime, task::JoinHandle};

use crate::user::{self, USER};

pub struct Config {
    pub streams: usize,
    pub login_workers: usize,
    pub forged_workers: usize,
    /// Requests per second of each loop, 0 for unbounded.
    pub rate: u32,
    pub threads: usize,
}

/// Paces one worker of a loop of `workers` at `rate` requests per second in all: ticks at the
/// worker's share, skipping (never bunching) the ticks a slow answer made it miss. None: unpaced.
fn pacer(rate: u32, workers: usize) -> Option<tokio::time::Interval> {
    if rate == 0 {
        return None;
    }
    let period = Duration::from_secs_f64(workers.max(1) as f64 / f64::from(rate));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    Some(tick)
}

/// Two tokens Dex never issued, both claiming to be `USER` in the admin group with a valid
/// issuer, audience and expiry, signed with a key of our own: one names Dex's key id (the server
/// checks the RS256 signature and refuses it), one an unknown key id (the server may refetch
/// Dex's JWKS for it, at most once per --jwks-min-refresh-secs, and refuses it).
pub async fn forged_tokens(dex: &Dex) -> Result<Vec<String>> {
    let jwks = dex.jwks().await;
    let dex_kid = jwks["keys"][0]["kid"]
        .as_str()
        .context("no key id in Dex's JWKS")?
        .to_owned();
    let key = TestKey::generate("server-bench-forged");
    let now = jiff::Timestamp::now().as_second();
    let claims = json!({
        "iss": dex.issuer, "aud": dex.client_id, "sub": "forged",
        "email": USER, "email_verified": true, "groups": [ADMIN_GROUP],
        "iat": now, "exp": now + 3600,
    });
    Ok(vec![key.sign_as(&dex_kid, &claims), key.sign(&claims)])
}

#[derive(Default)]
struct Counters {
    logins: AtomicU64,
    logins_unexpected: AtomicU64,
    forged: AtomicU64,
    forged_unexpected: AtomicU64,
    throttled: AtomicU64,
    errors: AtomicU64,
    streams_opened: AtomicU64,
    streams_failed: AtomicU64,
    streams_ended: AtomicU64,
}

/// What the flood did, from its start (streams open) to its stop.
pub struct Report {
    pub secs: f64,
    /// `/login` answered with a redirect to Dex, and otherwise.
    pub logins: u64,
    pub logins_unexpected: u64,
    /// Forged tokens answered 401, and otherwise (a forged token let in would be one).
    pub forged: u64,
    pub forged_unexpected: u64,
    /// Requests of the two loops the server's per-address rate limit answered 429: the bound at
    /// work.
    pub throttled: u64,
    /// Requests of the two loops that got no answer at all.
    pub errors: u64,
    pub streams_opened: u64,
    pub streams_failed: u64,
    /// Streams still open when the flood stopped (the server ended none).
    pub streams_held: u64,
}

pub struct Flood {
    runtime: Option<Runtime>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    streams: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
    started: Instant,
}

impl Flood {
    /// Opens the streams (as `stream_token`'s user), waits until the server has answered each,
    /// then starts the loops.
    pub async fn start(
        config: &Config,
        base: &str,
        stream_token: &str,
        forged: &[String],
    ) -> Result<Flood> {
        // No overall timeout: it would end the streams.
        let stream_http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        // Dropped in this async context it would panic: shut down in the background on error.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads)
            .thread_name("flood")
            .enable_all()
            .build()?;
        let url = format!("{base}/api/v1/watch/tenants");
        let streams: Vec<_> = (0..config.streams)
            .map(|_| {
                runtime.spawn(hold_stream(
                    stream_http.clone(),
                    url.clone(),
                    stream_token.to_owned(),
                    counters.clone(),
                ))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while counters.streams_opened.load(Relaxed) + counters.streams_failed.load(Relaxed)
            < config.streams as u64
        {
            if Instant::now() > deadline {
                runtime.shutdown_background();
                bail!(
                    "the server did not answer {} streams within 60 s",
                    config.streams
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let http = user::http(false);
        let mut workers = Vec::new();
        for (kind, n, path) in [
            (Loop::Login, config.login_workers, "/login"),
            (Loop::Forged, config.forged_workers, "/api/v1/tenants"),
        ] {
            for w in 0..n {
                let worker = Worker {
                    kind,
                    http: http.clone(),
                    url: format!("{base}{path}"),
                    tokens: forged.to_vec(),
                    index: w,
                    workers: n,
                    rate: config.rate,
                };
                workers.push(runtime.spawn(worker.run(stop.clone(), counters.clone())));
            }
        }
        Ok(Flood {
            runtime: Some(runtime),
            stop,
            workers,
            streams,
            counters,
            started: Instant::now(),
        })
    }

    /// Stops the loops (each finishes the request it is in), closes the streams.
    pub async fn stop(mut self) -> Report {
        let secs = self.started.elapsed().as_secs_f64();
        let c = &self.counters;
        let ended = c.streams_ended.load(Relaxed);
        let report = Report {
            secs,
            logins: c.logins.load(Relaxed),
            logins_unexpected: c.logins_unexpected.load(Relaxed),
            forged: c.forged.load(Relaxed),
            forged_unexpected: c.forged_unexpected.load(Relaxed),
            throttled: c.throttled.load(Relaxed),
            errors: c.errors.load(Relaxed),
            streams_opened: c.streams_opened.load(Relaxed),
            streams_failed: c.streams_failed.load(Relaxed),
            streams_held: c.streams_opened.load(Relaxed).saturating_sub(ended),
        };
        self.stop.store(true, Relaxed);
        for s in &self.streams {
            s.abort();
        }
        for handle in self.workers.drain(..).chain(self.streams.drain(..)) {
            let _ = handle.await;
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        report
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The two loops of the flood.
#[derive(Clone, Copy)]
enum Loop {
    /// Unauthenticated `GET /login`: a redirect to Dex is the expected answer.
    Login,
    /// `GET /api/v1/tenants` with a forged token: 401 is the expected answer.
    Forged,
}

/// One worker of a loop: paced requests until the flood stops, each answer counted as expected,
/// throttled (429: the server's per-address bound) or otherwise.
struct Worker {
    kind: Loop,
    http: reqwest::Client,
    url: String,
    tokens: Vec<String>,
    index: usize,
    workers: usize,
    rate: u32,
}

impl Worker {
    async fn run(self, stop: Arc<AtomicBool>, c: Arc<Counters>) {
        let mut pace = pacer(self.rate, self.workers);
        let (expected, unexpected) = match self.kind {
            Loop::Login => (&c.logins, &c.logins_unexpected),
            Loop::Forged => (&c.forged, &c.forged_unexpected),
        };
        let mut i = self.index;
        while !stop.load(Relaxed) {
            if let Some(tick) = pace.as_mut() {
                tick.tick().await;
            }
            let request = self.http.get(&self.url);
            let request = match self.kind {
                Loop::Login => request,
                Loop::Forged => {
                    i += 1;
                    request.bearer_auth(&self.tokens[i % self.tokens.len()])
                }
            };
            match request.send().await {
                Ok(r) => {
                    let status = r.status();
                    let counter = match self.kind {
                        Loop::Login if status.is_redirection() => expected,
                        Loop::Forged if status == reqwest::StatusCode::UNAUTHORIZED => expected,
                        _ if status == reqwest::StatusCode::TOO_MANY_REQUESTS => &c.throttled,
                        _ => unexpected,
                    };
                    counter.fetch_add(1, Relaxed);
                    let _ = r.bytes().await;
                }
                Err(_) => failed(&c).await,
            }
        }
    }
}

/// A request of a loop got no answer: counted, and a short pause so a server that refuses
/// connections is not spun against.
async fn failed(c: &Counters) {
    c.errors.fetch_add(1, Relaxed);
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// Opens one live stream and reads it until it ends or the flood stops (the task is aborted).
async fn hold_stream(http: reqwest::Client, url: String, token: String, c: Arc<Counters>) {
    let mut response = match http.get(&url).bearer_auth(&token).send().await {
        Ok(r) if r.status().is_success() => r,
        _ => {
            c.streams_failed.fetch_add(1, Relaxed);
            return;
        }
    };
    c.streams_opened.fetch_add(1, Relaxed);
    while let Ok(Some(_)) = response.chunk().await {}
    c.streams_ended.fetch_add(1, Relaxed);
}
