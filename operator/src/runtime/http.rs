//! The operator's HTTP endpoints: `/metrics`, `/healthz` (the process serves) and `/readyz`
//! (caches warm and controller running).

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{
    Router, extract::State, http::StatusCode, http::header, response::IntoResponse, routing::get,
};

use crate::metrics::Metrics;

#[derive(Clone)]
pub struct Probe {
    pub metrics: Arc<Metrics>,
    pub ready: Arc<AtomicBool>,
}

async fn metrics(State(probe): State<Probe>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        probe.metrics.encode(),
    )
}

async fn readyz(State(probe): State<Probe>) -> impl IntoResponse {
    if probe.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches warming up")
    }
}

pub fn router(probe: Probe) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(probe)
}

pub async fn serve(
    addr: SocketAddr,
    probe: Probe,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router(probe))
        .with_graceful_shutdown(shutdown)
        .await
}
