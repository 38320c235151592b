//! How the operator runs: its configuration, the controller's watches and work queue, leader
//! election, the clients it talks to the API server with, and its probe and metrics endpoint.

pub mod config;
pub mod controller;
pub mod http;
pub mod kube_client;
pub mod leader;

/// Backoff of the watches after an error: 200 ms doubling up to 1 s, with jitter (so at most
/// about 2 s between attempts). kube's default grows to 30 s, so after an API server outage of
/// 20 s the operator would not see new Tenants for up to half a minute more; a watch that fails
/// to connect costs the API server next to nothing, and a few attempts a second from one
/// operator are no burden.
pub fn watch_backoff() -> kube::runtime::watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(std::time::Duration::from_millis(200))
        .with_max_delay(std::time::Duration::from_secs(1))
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .into()
}
