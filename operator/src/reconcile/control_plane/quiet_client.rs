//! A client for a tenant API whose connections do not count as the tenant's activity: its TLS
//! ClientHello offers [`QUIET_ALPN`](crate::names::QUIET_ALPN) beside HTTP/1.1, which the waker
//! reads and the API server ignores. Otherwise it is what `Client::try_from(config)` builds (the
//! same TLS settings, server name, timeouts and credentials); kube offers no hook for ALPN.

use std::sync::Arc;

use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_timeout::TimeoutConnector;
use hyper_util::{
    client::legacy::{Client as HyperClient, connect::HttpConnector},
    rt::TokioExecutor,
};
use kube::{
    Client, Config,
    client::{Body, ConfigExt},
};
use rustls::pki_types::ServerName;
use tower::{BoxError, ServiceBuilder};

/// The protocols offered: the quiet name first, so nothing is taken from HTTP/1.1, which the
/// API server picks (kube's client speaks only HTTP/1.1).
fn alpn() -> Vec<Vec<u8>> {
    vec![
        crate::names::QUIET_ALPN.as_bytes().to_vec(),
        b"http/1.1".to_vec(),
    ]
}

pub fn client(config: Config) -> Result<Client, String> {
    let mut tls = config.rustls_client_config().map_err(|e| e.to_string())?;
    tls.alpn_protocols = alpn();
    let host = match &config.tls_server_name {
        Some(name) => name.clone(),
        None => config.cluster_url.host().unwrap_or_default().to_owned(),
    };
    let name = ServerName::try_from(host.clone()).map_err(|e| format!("{host}: {e}"))?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = HttpsConnector::new(
        http,
        tls,
        true,
        Arc::new(FixedServerNameResolver::new(name)),
    );
    let mut connector = TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http_client: HyperClient<_, Body> =
        HyperClient::builder(TokioExecutor::new()).build(connector);
    let auth = config.auth_layer().map_err(|e| e.to_string())?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(auth)
        .map_err(BoxError::from)
        .service(http_client);
    Ok(Client::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_quiet_name_is_offered_beside_http1() {
        let offered = super::alpn();
        assert_eq!(offered[0], crate::names::QUIET_ALPN.as_bytes());
        assert!(offered.contains(&b"http/1.1".to_vec()));
    }
}
