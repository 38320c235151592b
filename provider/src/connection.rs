//! The provider's connection to the host cluster: one HTTP/2 connection for every request.
//!
//! kube's stock client speaks HTTP/1.1 only, so the ten reads Terraform runs at once during a
//! refresh open ten TLS connections, and the API server and the provider pay for ten handshakes
//! on every `plan`. Offering `h2` by ALPN lets them share one connection, which every Kubernetes
//! API server accepts; a server (or proxy) that only answers `http/1.1` is still served, since
//! ALPN falls back. The connection is opened while Terraform is still building its graph
//! ([`warm_up`]), so the first read does not wait for the handshake either.
//!
//! What the stock client adds and this one leaves out: kube's HTTP proxy support (with a proxy
//! configured, [`client`] returns the stock client) and exec-plugin certificate rotation (the
//! provider lives for one Terraform command). It keeps the retry of 429, 503 and 504 answers
//! with backoff: right after a CRD is installed, the API server answers 503 for a few seconds.

use hyper_util::{client::legacy::Client as HyperClient, rt::TokioExecutor};
use kube::client::{ConfigExt, retry::RetryPolicy};
use tower::{ServiceBuilder, retry::RetryLayer};

/// A client for `config`: HTTP/2 where the server agrees, kube's stock client behind a proxy.
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    if config.proxy_url.is_some() {
        return kube::Client::try_from(config);
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let mut tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = name.clone().try_into().map_err(|e| {
            kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e))
        })?;
        tls = tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let connector = tls.enable_http1().enable_http2().wrap_connector(http);
    let hyper = HyperClient::builder(TokioExecutor::new()).build(connector);
    // The same layers, in the same order, as kube's stock client.
    let retry = config
        .default_retry
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(hyper);
    Ok(kube::Client::new(service, config.default_namespace))
}

/// Opens the connection in the background with a cheap request (the API server's version), so
/// it is ready when the first resource is read. A failure here is not reported: the reads that
/// follow meet the same problem and report it where Terraform shows it.
pub fn warm_up(client: &kube::Client) {
    let client = client.clone();
    tokio::spawn(async move {
        if let Err(error) = client.apiserver_version().await {
            tracing::debug!(%error, "warming up the cluster connection failed");
        }
    });
}
