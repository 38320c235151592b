//! `kubespaces-operator`: runs the Tenant controller, or prints the install manifests or one
//! tenant's control-plane values.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use kubespaces_operator::{
    build::{
        control_plane::{ControlPlaneConfig, values},
        settings::HostConfig,
    },
    manifests,
    metrics::Metrics,
    names::{MAX_TENANT_NAME_LEN, NAME_LABEL_MESSAGE},
    runtime::{
        config::RunConfig,
        controller, http, kube_client,
        leader::{Election, Role, WriteGate},
    },
    waker::{self, WakerConfig},
};
use tokio::sync::watch;
use tracing::info;

#[derive(Parser)]
#[command(
    name = "kubespaces-operator",
    version,
    about = "Reconciles KubeSpaces Tenants on the host cluster"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controller (uses KUBECONFIG or the in-cluster service account).
    Run(Box<RunConfig>),
    /// Run the waker: the proxy in every tenant API's path that notes its activity and wakes a
    /// sleeping tenant on the first connection (uses KUBECONFIG or the in-cluster service
    /// account, for the activity Leases only).
    Waker(Box<WakerConfig>),
    /// Print the install manifests (the Tenant CRD, the tenant-owner ClusterRole, the admission
    /// policies and the operator's own RBAC).
    Manifests,
    /// Print, as JSON, the chart values the operator gives one tenant's control plane: what
    /// `helm template` gets last, after the platform's `--vcluster-values` files. Takes the same
    /// settings (flags or environment) as `run`.
    Values(Box<ValuesArgs>),
}

#[derive(clap::Args)]
struct ValuesArgs {
    /// The Tenant's name (metadata.name).
    #[arg(value_parser = tenant_name)]
    tenant: String,
    #[command(flatten)]
    host: HostConfig,
    #[command(flatten)]
    control_plane: ControlPlaneConfig,
}

/// A name the Tenant CRD admits (the same rules as its validation).
fn tenant_name(s: &str) -> Result<String, String> {
    let label = s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match (label, s.len() <= MAX_TENANT_NAME_LEN) {
        (true, true) => Ok(s.to_owned()),
        (false, _) => Err(NAME_LABEL_MESSAGE.replace("metadata.name", "the tenant name")),
        (_, false) => Err(format!(
            "the tenant name must be at most {MAX_TENANT_NAME_LEN} characters"
        )),
    }
}

fn init_tracing() {
    use tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,kube_client=warn,kube_runtime=warn"));
    let json = std::env::var("KUBESPACES_LOG_FORMAT").is_ok_and(|f| f == "json");
    if json {
        fmt()
            .json()
            .with_env_filter(filter)
            .with_current_span(true)
            .init();
    } else {
        // Colours only on a terminal: log files and collectors get plain text.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
        fmt().with_env_filter(filter).with_ansi(ansi).init();
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = tokio::signal::ctrl_c() => {},
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifests => {
            for (_, text) in manifests::all()? {
                print!("---\n{text}");
            }
            Ok(())
        }
        Command::Values(args) => {
            let settings = args
                .control_plane
                .vcluster()
                .map_err(anyhow::Error::msg)?
                .context("values needs --control-plane=vcluster")?;
            let values = values::tenant_values(
                &args.tenant,
                &args.host.base_domain,
                &args.host.pod_security,
                &settings,
            );
            println!("{}", serde_json::to_string_pretty(&values)?);
            Ok(())
        }
        Command::Run(config) => {
            init_tracing();
            run(*config).await
        }
        Command::Waker(config) => {
            init_tracing();
            let kube_config = kube_client::config()
                .await
                .context("reading the Kubernetes client configuration")?;
            let client =
                kube::Client::try_from(kube_config).context("connecting to the Kubernetes API")?;
            waker::run(client, *config, termination())
                .await
                .context("serving tenant API connections")
        }
    }
}

async fn run(config: RunConfig) -> anyhow::Result<()> {
    let metrics = Metrics::shared();
    let kube_config = kube_client::config()
        .await
        .context("reading the Kubernetes client configuration")?;
    let mut election = match config.leader.enabled {
        true => Some(Election::start(
            kube_client::election(&kube_config).context("building the election's client")?,
            &config.leader,
        )?),
        false => None,
    };
    let gate = election
        .as_ref()
        .map_or_else(WriteGate::open, |e| e.gate.clone());
    let client = kube_client::controller(kube_config, metrics.clone(), gate)
        .context("connecting to the Kubernetes API")?;
    let ready = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    let probe = http::Probe {
        metrics: metrics.clone(),
        ready: ready.clone(),
    };
    let server = tokio::spawn(http::serve(
        config.metrics_addr,
        probe,
        stopped(stop_rx.clone()),
    ));
    tokio::spawn(async move {
        termination().await;
        info!("termination requested; shutting down gracefully");
        let _ = stop_tx.send(true);
    });

    info!(metrics_addr = %config.metrics_addr, "kubespaces-operator starting");
    let set_ready = {
        let ready = ready.clone();
        move || ready.store(true, Ordering::Relaxed)
    };
    let result = match election.as_mut() {
        None => {
            metrics.leader.set(1);
            controller::run(client, config, metrics.clone(), set_ready, stopped(stop_rx))
                .await
                .map_err(anyhow::Error::from)
        }
        Some(election) => {
            // A standby is ready once it reaches the Lease: it serves its purpose by waiting,
            // and a rollout or a PodDisruptionBudget must be able to count it.
            let mut role = election.role.clone();
            tokio::select! {
                _ = role.wait_for(|r| *r != Role::Connecting) => ready.store(true, Ordering::Relaxed),
                _ = stopped(stop_rx.clone()) => {}
            }
            tokio::select! {
                leading = election.leading() => match leading {
                    Err(lost) => Err(lost.into()),
                    Ok(()) => {
                        metrics.leader.set(1);
                        info!("leading: starting the controller");
                        let lost = election.lost();
                        // Termination steps down before the reconciles drain: see StepDown.
                        let step_down = election.step_down();
                        let shutdown = async move {
                            stopped(stop_rx).await;
                            step_down.now().await;
                        };
                        tokio::select! {
                            run = controller::run(client, config, metrics.clone(), set_ready, shutdown) => run.map_err(anyhow::Error::from),
                            lost = lost => Err(lost.into()),
                        }
                    }
                },
                _ = stopped(stop_rx.clone()) => Ok(()),
            }
        }
    };
    metrics.leader.set(0);
    // Leadership lost or start-up failed: end now, without waiting for the probe server.
    result?;
    if let Some(election) = election {
        election.resign().await;
    }
    match server.await {
        Ok(result) => result.context("metrics server")?,
        Err(e) => return Err(e).context("metrics server task"),
    }
    Ok(())
}
