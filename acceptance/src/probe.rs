//! Probes that keep asking what a user relies on while the platform changes under it (an
//! upgrade): each request counted, each failure kept, and the longest time without an answer.

use std::{
    fmt,
    future::Future,
    time::{Duration, Instant},
};

use tokio::{sync::watch, task::JoinHandle, time::MissedTickBehavior};

/// Longer than any answer of a healthy target on this machine; a request still waiting then
/// counts as failed.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Failures kept word for word in a report (the rest are only counted).
const KEPT_ERRORS: usize = 5;

/// What a probe saw from its start to its stop.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: String,
    pub sent: u64,
    pub failed: u64,
    /// The longest time between two answers (from the start to the first, and from the last to
    /// the stop, count too).
    pub longest_gap: Duration,
    /// When that gap began and ended.
    pub longest_gap_window: (Instant, Instant),
    pub errors: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} sent, {} failed, longest gap {:.2} s",
            self.target,
            self.sent,
            self.failed,
            self.longest_gap.as_secs_f64()
        )?;
        if !self.errors.is_empty() {
            write!(f, " (first failures: {})", self.errors.join("; "))?;
        }
        Ok(())
    }
}

pub struct Probe {
    stop: watch::Sender<bool>,
    task: JoinHandle<Report>,
}

impl Probe {
    /// Asks `ask` every `period` (one request at a time, the next one `period` after the last
    /// began, or at once if it took longer) until [`Probe::stop`].
    pub fn start<F, Fut>(target: impl Into<String>, period: Duration, mut ask: F) -> Probe
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send,
    {
        let (stop, mut stopped) = watch::channel(false);
        let target = target.into();
        let task = tokio::spawn(async move {
            let mut last_answer = Instant::now();
            let mut report = Report {
                target,
                sent: 0,
                failed: 0,
                longest_gap: Duration::ZERO,
                longest_gap_window: (last_answer, last_answer),
                errors: Vec::new(),
            };
            let gap_ends = |report: &mut Report, last_answer: Instant| {
                let now = Instant::now();
                if now - last_answer > report.longest_gap {
                    report.longest_gap = now - last_answer;
                    report.longest_gap_window = (last_answer, now);
                }
            };
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = ticks.tick() => {}
                }
                let answer = tokio::time::timeout(ATTEMPT_TIMEOUT, ask())
                    .await
                    .unwrap_or_else(|_| Err(format!("no answer within {ATTEMPT_TIMEOUT:?}")));
                report.sent += 1;
                match answer {
                    Ok(()) => {
                        gap_ends(&mut report, last_answer);
                        last_answer = Instant::now();
                    }
                    Err(why) => {
                        report.failed += 1;
                        if report.errors.len() < KEPT_ERRORS {
                            report.errors.push(why);
                        }
                    }
                }
            }
            gap_ends(&mut report, last_answer);
            report
        });
        Probe { stop, task }
    }

    pub async fn stop(self) -> Report {
        let _ = self.stop.send(true);
        self.task.await.expect("the probe's task ends when told to")
    }
}

/// A probe of an HTTPS URL: an answer is a status below 400 whose body contains `expect`
/// (redirects are not followed: a redirect is an answer).
pub fn https(
    target: impl Into<String>,
    period: Duration,
    url: String,
    ca_pem: &[u8],
    expect: String,
) -> Probe {
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem).expect("a PEM CA"))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(ATTEMPT_TIMEOUT)
        .build()
        .expect("an HTTPS client");
    Probe::start(target, period, move || {
        let (client, url, expect) = (client.clone(), url.clone(), expect.clone());
        async move {
            let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let status = response.status();
            let body = response.text().await.map_err(|e| e.to_string())?;
            match status.as_u16() < 400 && body.contains(&expect) {
                true => Ok(()),
                false => Err(format!(
                    "{status}: {}",
                    body.chars().take(120).collect::<String>()
                )),
            }
        }
    })
}

/// A probe of a Kubernetes API server with a kubeconfig's own credential: `GET /version`.
pub fn kube_api(target: impl Into<String>, period: Duration, client: kube::Client) -> Probe {
    Probe::start(target, period, move || {
        let client = client.clone();
        async move {
            client
                .apiserver_version()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    })
}

/// A client for the API server and credential of a kubeconfig's text.
pub async fn client_of(kubeconfig: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a usable kubeconfig");
    kube::Client::try_from(config).expect("a client for the kubeconfig")
}
