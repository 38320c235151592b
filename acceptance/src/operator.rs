//! An operator process owned by a test or the benchmark, reconciling only the Tenants labelled
//! `kubespaces.io/test-operator=<shard>` (the shared operator of the test run skips those).

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::Duration,
};

use kubespaces_operator::api::{Tenant, TenantSpec};

use crate::wait_for;

pub const SHARD_LABEL: &str = "kubespaces.io/test-operator";

/// A Tenant for the operator of `shard` only.
pub fn sharded_tenant(name: &str, spec: TenantSpec, shard: &str) -> Tenant {
    let mut t = Tenant::new(name, spec);
    t.metadata.labels = Some([(SHARD_LABEL.to_owned(), shard.to_owned())].into());
    t
}

pub struct OperatorProcess {
    child: Child,
    pub metrics_url: String,
    bin: String,
    shard: String,
    log: std::path::PathBuf,
    extra: Vec<String>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl OperatorProcess {
    /// Starts the operator binary for one shard and waits until it reports ready.
    pub async fn start(bin: &str, shard: &str) -> OperatorProcess {
        Self::start_with(bin, shard, &[]).await
    }

    /// Same as [`start`](Self::start), with extra `run` flags.
    pub async fn start_with(bin: &str, shard: &str, extra: &[&str]) -> OperatorProcess {
        let port = free_port();
        let dir = std::env::var("KUBESPACES_STATE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir());
        let log = dir.join(format!("operator-{shard}.log"));
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(bin, shard, port, &log, &extra);
        let op = OperatorProcess {
            child,
            metrics_url: format!("http://127.0.0.1:{port}"),
            bin: bin.into(),
            shard: shard.into(),
            log,
            extra,
        };
        op.wait_ready().await;
        op
    }

    async fn wait_ready(&self) {
        let url = format!("{}/readyz", self.metrics_url);
        let what = format!("the operator to be ready (log: {})", self.log.display());
        wait_for(&what, Duration::from_secs(120), || async {
            http_get(&url)
                .await
                .is_some_and(|(status, _)| status == 200)
                .then_some(())
        })
        .await
    }

    /// SIGKILL: no graceful shutdown, as when a node dies.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as Kubernetes stops a pod; returns the exit status once the process is gone.
    pub async fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().ok()?;
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Starts the same operator again (after [`kill`](Self::kill)).
    pub async fn restart(&mut self) {
        let port = free_port();
        self.child = spawn(&self.bin, &self.shard, port, &self.log, &self.extra);
        self.metrics_url = format!("http://127.0.0.1:{port}");
        self.wait_ready().await;
    }

    /// The operator's Prometheus metrics text.
    pub async fn metrics(&self) -> String {
        http_get(&format!("{}/metrics", self.metrics_url))
            .await
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// Peak resident memory of the process so far, in KiB (VmHWM).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(bin: &str, shard: &str, port: u16, log: &std::path::Path, extra: &[String]) -> Child {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("operator log file");
    let err = out.try_clone().expect("operator log file");
    Command::new(bin)
        .args([
            "run",
            "--metrics-addr",
            &format!("127.0.0.1:{port}"),
            "--selector",
            &format!("{SHARD_LABEL}={shard}"),
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"))
}

/// A minimal HTTP/1.0 GET on loopback (status, body): enough for /readyz and /metrics.
pub async fn http_get(url: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest
        .split_once('/')
        .map(|(h, p)| (h, format!("/{p}")))
        .unwrap_or((rest, "/".into()));
    let mut stream = tokio::net::TcpStream::connect(host).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await.ok()?;
    let text = String::from_utf8_lossy(&buf);
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((status, body))
}

/// The samples of a Prometheus metric family in a metrics text: (line, value).
fn samples<'a>(metrics: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, f64)> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(move |l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| Some((l, l.rsplit(' ').next()?.parse::<f64>().ok()?)))
}

/// Sum of a Prometheus counter family (all label values) in a metrics text.
pub fn metric_sum(metrics: &str, name: &str) -> f64 {
    samples(metrics, name).map(|(_, v)| v).sum()
}

/// Sum of a counter family for the label values given (e.g. verbs).
pub fn metric_sum_where(metrics: &str, name: &str, label: &str, values: &[&str]) -> f64 {
    samples(metrics, name)
        .filter(|(l, _)| {
            values
                .iter()
                .any(|v| l.contains(&format!("{label}=\"{v}\"")))
        })
        .map(|(_, v)| v)
        .sum()
}
