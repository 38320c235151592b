//! The waker: every connection to a tenant API passes through it (the tenant's TLSRoute sends it
//! here), with TLS untouched end to end. It reads the ClientHello's server name to know the
//! tenant, notes the connection as the tenant's activity (the operator puts a tenant to sleep
//! when it has none for `spec.sleep.afterIdle`), and carries it to the tenant's control plane.
//! When that runs no pod, it wakes the tenant and holds the connection until it answers.
//!
//! It keeps no state a restart loses: activity is in Leases, and a held connection that a
//! restart drops is the client's to retry, as with any proxy. It runs as two replicas or more
//! (the chart), so a rollout or a lost pod leaves the API path open.

pub mod activity;
mod backends;
pub mod held;
pub mod hello;
mod proxy;
mod ready;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};
use clap::Args;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};
use tokio::net::TcpListener;
use tracing::{debug, info};

use crate::build::settings::parse_duration;

/// How the waker runs.
#[derive(Args, Debug, Clone)]
pub struct WakerConfig {
    /// Where tenant API connections arrive (the waker's Service targets it).
    #[arg(long, env = "KUBESPACES_WAKER_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "KUBESPACES_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// The platform's base domain: tenant APIs are `<tenant>.api.<base domain>`.
    #[arg(long, env = "KUBESPACES_BASE_DOMAIN")]
    pub base_domain: String,
    /// The namespace of the activity Leases (the platform's, where the waker runs).
    #[arg(long, env = "KUBESPACES_WAKER_NAMESPACE")]
    pub namespace: String,
    /// Who writes the Leases (the pod's name).
    #[arg(
        long,
        env = "KUBESPACES_WAKER_IDENTITY",
        default_value = "kubespaces-waker"
    )]
    pub identity: String,
    /// How long a connection to a sleeping tenant is held while it wakes before it is closed.
    #[arg(long, env = "KUBESPACES_WAKER_HOLD", default_value = "120s", value_parser = parse_duration)]
    pub hold: Duration,
    /// A tenant's activity is written at most this often (a wake is written at once).
    #[arg(long, env = "KUBESPACES_WAKER_DEBOUNCE", default_value = "10s", value_parser = parse_duration)]
    pub debounce: Duration,
    /// ALPN protocol names whose connections are not activity and do not wake a sleeping tenant
    /// (comma-separated): the operator's own checks, monitoring probes.
    #[arg(
        long,
        env = "KUBESPACES_WAKER_QUIET_ALPN",
        value_delimiter = ',',
        default_value = crate::names::QUIET_ALPN
    )]
    pub quiet_alpn: Vec<String>,
    /// The port of each tenant's control plane Service.
    #[arg(long, env = "KUBESPACES_WAKER_BACKEND_PORT", default_value_t = 443)]
    pub backend_port: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: String,
}

/// What a platform operator charts of the waker.
pub struct WakerMetrics {
    registry: Registry,
    /// Connections by how they ended: passed (to a running control plane), woke (held while
    /// their tenant woke), or refused (not TLS, no tenant, the wake took too long, ...).
    pub connections: Family<OutcomeLabels, Counter>,
    /// How long connections were held while their tenant woke.
    pub held: Histogram,
    /// Connections held right now.
    pub holding: Gauge,
}

impl Default for WakerMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubespaces_waker");
        let connections = Family::<OutcomeLabels, Counter>::default();
        let held = Histogram::new([0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0]);
        let holding = Gauge::default();
        registry.register(
            "connections",
            "Tenant API connections through the waker, by outcome",
            connections.clone(),
        );
        registry.register(
            "held_seconds",
            "How long connections were held while their tenant woke",
            held.clone(),
        );
        registry.register("holding", "Connections held right now", holding.clone());
        Self {
            registry,
            connections,
            held,
            holding,
        }
    }
}

/// What every connection shares.
pub struct Waker {
    pub base_domain: String,
    pub quiet_alpn: Vec<Vec<u8>>,
    pub backends: backends::Backends,
    pub hold: Duration,
    pub activity: activity::Activity,
    pub metrics: WakerMetrics,
    /// For the control planes' certificates Secrets (a held connection's TLS).
    pub client: Client,
    pub certificates: held::Certificates,
}

/// Serves tenant API connections until `shutdown` resolves; connections under way are carried
/// on until they end or the process does.
pub async fn run(
    client: Client,
    config: WakerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), &config.namespace);
    let waker = Arc::new(Waker {
        base_domain: config.base_domain.clone(),
        quiet_alpn: config
            .quiet_alpn
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect(),
        backends: backends::Backends::new(config.backend_port),
        hold: config.hold,
        activity: activity::Activity::new(leases, config.identity.clone(), config.debounce),
        metrics: WakerMetrics::default(),
        client,
        certificates: held::Certificates,
    });
    let flusher = {
        let waker = waker.clone();
        let every = config.debounce.max(Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                waker.activity.flush(false).await;
                waker
                    .activity
                    .forget_older_than(Duration::from_secs(24 * 3600));
            }
        })
    };
    let probes = TcpListener::bind(config.metrics_addr).await?;
    let probes_waker = waker.clone();
    tokio::spawn(async move {
        let _ = axum::serve(probes, router(probes_waker)).await;
    });
    let listener = TcpListener::bind(config.listen).await?;
    info!(listen = %config.listen, metrics_addr = %config.metrics_addr, "kubespaces waker serving tenant APIs");
    let accept = async {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(a) => a,
                Err(error) => {
                    debug!(%error, "accept failed");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let waker = waker.clone();
            tokio::spawn(async move {
                let outcome = match proxy::handle(stream, waker.clone()).await {
                    Ok(outcome) => outcome,
                    Err(error) => {
                        debug!(%peer, %error, "connection refused or broken");
                        error.outcome()
                    }
                };
                waker
                    .metrics
                    .connections
                    .get_or_create(&OutcomeLabels {
                        outcome: outcome.into(),
                    })
                    .inc();
            });
        }
    };
    tokio::select! {
        _ = accept => {}
        _ = shutdown => info!("termination requested; no new connections"),
    }
    // Activity noted but not yet written is not lost to a rollout.
    flusher.abort();
    waker.activity.flush(true).await;
    Ok(())
}

async fn metrics(State(waker): State<Arc<Waker>>) -> impl IntoResponse {
    let mut text = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut text, &waker.metrics.registry);
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

fn router(waker: Arc<Waker>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .with_state(waker)
}
