//! kubespaces-server: see the library documentation.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Parser;
use kubespaces_server::{
    app::serve, auth::Verifier, config::Config, issuer_roots::IssuerRoots, portal::seal::Sealer,
    public_url::PublicUrl, state::AppState, store::Tenants,
};
use tracing::{info, warn};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        // Colours only for a terminal: a pod's log (kubectl logs, a collector) gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,kube_client=warn,kube_runtime=warn")
            }),
        )
        .init();
    let config = Config::parse();
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", config.listen))?;
    // A missing or unusable --public-url stops the server here, before it serves anything.
    let bound = listener
        .local_addr()
        .with_context(|| format!("no local address for {} (--listen)", config.listen))?;
    let public_url = PublicUrl::resolve(config.public_url.as_deref(), bound)?;
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes configuration (KUBECONFIG or the in-cluster ServiceAccount)")?;
    let verifier = Arc::new(
        Verifier::new(
            &config.oidc_issuer,
            &config.oidc_client_id,
            config.admin_group.clone(),
            Duration::from_secs(config.oidc_leeway_secs),
            Duration::from_secs(config.jwks_min_refresh_secs),
        )
        .trusting(IssuerRoots::for_flag(config.oidc_ca_file.as_deref())?)
        .context("cannot make an HTTP client for the issuer")?,
    );
    // The issuer may start after us: without its keys every token is refused until a request
    // triggers the (rate-limited) refetch.
    if let Err(e) = verifier.refresh().await {
        warn!(error = %e, "the OIDC issuer is not reachable yet; tokens are refused until it is");
    }
    let tenants = Tenants::start(client.clone());
    info!(
        listen = %bound,
        public_url = public_url.as_str(),
        issuer = %config.oidc_issuer,
        "serving"
    );
    let sealer = Sealer::for_flag(config.session_keys_file.as_deref())?;
    let state = AppState::new(config, public_url, client, verifier, tenants, sealer);
    serve(listener, state, shutdown())
        .await
        .context("server failed")
}

/// SIGTERM (Kubernetes, make down) or Ctrl-C: finish the requests in flight, then exit.
async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the server");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = term => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    info!("shutting down");
}
