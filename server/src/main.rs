//! kubespaces-server: see the library documentation.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Parser;
use kubespaces_server::{
    auth::Verifier,
    config::Config,
    routes::{AppState, router},
    store::Tenants,
};
use tracing::{info, warn};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    let config = Config::parse();
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes configuration (KUBECONFIG or the in-cluster ServiceAccount)")?;
    let verifier = Arc::new(Verifier::new(
        &config.oidc_issuer,
        &config.oidc_client_id,
        config.admin_group.clone(),
        Duration::from_secs(config.oidc_leeway_secs),
        Duration::from_secs(config.jwks_min_refresh_secs),
    ));
    // The issuer may start after us: without its keys every token is refused until a request
    // triggers the (rate-limited) refetch.
    if let Err(e) = verifier.refresh().await {
        warn!(error = %e, "the OIDC issuer is not reachable yet; tokens are refused until it is");
    }
    let tenants = Tenants::start(client.clone());
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", config.listen))?;
    info!(listen = %config.listen, issuer = %config.oidc_issuer, "serving");
    let state = AppState {
        tenants,
        client,
        verifier,
        portal: Arc::new(kubespaces_server::portal::Portal::new(
            config.public_url.clone(),
        )),
        config: Arc::new(config),
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("server failed")
}
