//! The server under test: the real `kubespaces-server` binary as a process of its own (so its
//! memory is its own), a fresh one for each side of each round.

use std::{
    fs::File,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// The flags every server of the run gets; the Kubernetes access is the admin's `$KUBECONFIG`,
/// inherited.
pub struct Settings {
    pub bin: String,
    pub issuer: String,
    pub client_id: String,
    pub admin_group: String,
    pub pending_login_ttl_secs: u64,
}

pub struct ServerProcess {
    child: Child,
    pub url: String,
    log: PathBuf,
}

/// Resident memory of the server, KiB.
#[derive(Clone, Copy)]
pub struct Memory {
    /// VmHWM: the peak since the process started.
    pub peak_kib: u64,
    /// VmRSS: now.
    pub now_kib: u64,
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl ServerProcess {
    /// Starts the server on a free loopback port (its public URL is then http://<listen>: no
    /// `--public-url` needed), logging to `log`.
    pub fn start(settings: &Settings, log: &Path) -> Result<ServerProcess> {
        let port = free_port()?;
        let out = File::create(log).with_context(|| format!("create {}", log.display()))?;
        let err = out.try_clone()?;
        let child = Command::new(&settings.bin)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--oidc-issuer", &settings.issuer])
            .args(["--oidc-client-id", &settings.client_id])
            .args(["--admin-group", &settings.admin_group])
            .args([
                "--pending-login-ttl-secs",
                &settings.pending_login_ttl_secs.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start {}", settings.bin))?;
        Ok(ServerProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log: log.to_owned(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `/readyz` answers 200 (the tenant cache is filled).
    pub async fn wait_ready(&mut self, http: &reqwest::Client, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let url = format!("{}/readyz", self.url);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited ({status}); log: {}", self.log.display());
            }
            if let Ok(r) = http.get(&url).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the server was not ready after {timeout:?}; log: {}",
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// VmHWM and VmRSS from /proc/<pid>/status.
    pub fn memory(&self) -> Result<Memory> {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
        let field = |name: &str| -> Result<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .with_context(|| format!("no {name} in {path}"))
        };
        Ok(Memory {
            peak_kib: field("VmHWM:")?,
            now_kib: field("VmRSS:")?,
        })
    }

    /// SIGTERM (the server finishes what is in flight), SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "the server did not stop within {grace:?} of SIGTERM: killed (log: {})",
            self.log.display()
        );
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    /// A benchmark that fails half-way leaves no server behind.
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            self.kill();
        }
    }
}
