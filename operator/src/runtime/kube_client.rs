//! The Kubernetes clients the operator uses, from the inferred configuration:
//!
//! - the controller's client: every request counted by verb in the metrics (the figure the
//!   benchmark reports as API requests per tenant, and the per-replica write count), and writes
//!   refused before they leave the process unless the [`WriteGate`] allows them (with leader
//!   election: only while this replica holds the Lease);
//! - the election's client, for the Lease only: neither counted nor gated.

use std::sync::Arc;

use kube::{Client, Config, client::ClientBuilder};
use tower::{ServiceBuilder, filter::FilterLayer, util::MapRequestLayer};

use tracing::error;

use super::leader::WriteGate;
use crate::{
    build::access,
    metrics::{Metrics, RequestLabels},
};

/// True for requests that change something on the API server.
pub fn is_write(method: &http::Method) -> bool {
    !matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    )
}

/// The configuration both clients are built from (KUBECONFIG or the in-cluster ServiceAccount).
pub async fn config() -> Result<Config, kube::Error> {
    let mut config = Config::infer().await.map_err(kube::Error::InferConfig)?;
    // The operator bursts when many tenants arrive at once; the API server's own flow control
    // is the limit, not a client-side one.
    config.read_timeout = Some(std::time::Duration::from_secs(60));
    Ok(config)
}

/// The election's client (the Lease only).
pub fn election(config: &Config) -> Result<Client, kube::Error> {
    Client::try_from(config.clone())
}

/// The controller's client: counted, and writes only through `gate`.
pub fn controller(
    config: Config,
    metrics: Arc<Metrics>,
    gate: WriteGate,
) -> Result<Client, kube::Error> {
    let counting = MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
        let verb = request.method().as_str().to_owned();
        metrics
            .api_requests
            .get_or_create(&RequestLabels { verb })
            .inc();
        // Paths that are no resource (discovery, /version) are open to every authenticated
        // client (the system:discovery role), so no table lists them.
        let listed = access::request_attributes(request.method(), request.uri()).is_none_or(|a| {
            access::covers(access::CONTROLLER, &a)
                || access::covers(access::CONNECTION_SECRETS, &a)
                || access::covers(access::CONTROL_PLANE, &a)
                || access::covers(access::WAKER_NAMESPACE, &a)
        });
        if !listed {
            // A call the generated roles do not grant: a bug in access::CONTROLLER,
            // access::CONNECTION_SECRETS, access::CONTROL_PLANE or access::WAKER_NAMESPACE (the
            // last three are matched without their namespaces).
            error!(method = %request.method(), path = %request.uri().path(), "request not listed in access::CONTROLLER, CONNECTION_SECRETS, CONTROL_PLANE or WAKER_NAMESPACE");
            metrics.api_requests_unlisted.inc();
        }
        request
    });
    // Outermost: a refused write never reaches the counter (nor the API server).
    let fence = FilterLayer::new(move |request: http::Request<kube::client::Body>| {
        if is_write(request.method()) && !gate.allows_writes() {
            Err(tower::BoxError::from(gate.refusal()))
        } else {
            Ok(request)
        }
    });
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&ServiceBuilder::new().layer(fence).layer(counting))
        .build())
}
