//! The Kubernetes client the operator uses: inferred configuration, and every request counted
//! by verb in the metrics (the figure the benchmark reports as API requests per tenant).

use std::sync::Arc;

use kube::{Client, Config, client::ClientBuilder};
use tower::util::MapRequestLayer;

use crate::metrics::{Metrics, RequestLabels};

pub async fn client(metrics: Arc<Metrics>) -> Result<Client, kube::Error> {
    let mut config = Config::infer().await.map_err(kube::Error::InferConfig)?;
    // The operator bursts when many tenants arrive at once; the API server's own flow control
    // is the limit, not a client-side one.
    config.read_timeout = Some(std::time::Duration::from_secs(60));
    let counting = MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
        let verb = request.method().as_str().to_owned();
        metrics
            .api_requests
            .get_or_create(&RequestLabels { verb })
            .inc();
        request
    });
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&counting)
        .build())
}
