//! Prometheus metrics of the server (`GET /metrics`, admins only: see `api::metrics`). One
//! registry per server, not a global, so servers started side by side (the tests) keep apart.

use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

pub struct Metrics {
    registry: Registry,
    /// Logins begun at `/login` and not yet finished, expired or evicted.
    pub pending_logins: Gauge,
    /// Pending logins evicted, oldest first, because `--max-pending-logins` were pending.
    pub pending_logins_evicted: Counter,
    /// Pending logins dropped after `--pending-login-ttl-secs`.
    pub pending_logins_expired: Counter,
    /// Requests refused by `--rate-limit` or `--anonymous-rate-limit` (429): the refusals are
    /// logged at debug level only, so a flood does not become a flood of log lines.
    pub rate_limited: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubespaces_server");
        let pending_logins = Gauge::default();
        let pending_logins_evicted = Counter::default();
        let pending_logins_expired = Counter::default();
        let rate_limited = Counter::default();
        registry.register(
            "pending_logins",
            "Portal logins begun and not yet finished (bounded by --max-pending-logins)",
            pending_logins.clone(),
        );
        registry.register(
            "pending_logins_evicted",
            "Pending portal logins evicted, oldest first, because the bound was reached",
            pending_logins_evicted.clone(),
        );
        registry.register(
            "pending_logins_expired",
            "Pending portal logins dropped after their time to live",
            pending_logins_expired.clone(),
        );
        registry.register(
            "rate_limited",
            "Requests refused with 429 by --rate-limit or --anonymous-rate-limit",
            rate_limited.clone(),
        );
        Metrics {
            registry,
            pending_logins,
            pending_logins_evicted,
            pending_logins_expired,
            rate_limited,
        }
    }
}

impl Metrics {
    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pending_login_metrics_are_exposed_under_their_names() {
        let m = Metrics::default();
        m.pending_logins.set(7);
        m.pending_logins_evicted.inc_by(3);
        m.pending_logins_expired.inc();
        m.rate_limited.inc_by(2);
        let text = m.encode();
        for line in [
            "kubespaces_server_pending_logins 7",
            "kubespaces_server_pending_logins_evicted_total 3",
            "kubespaces_server_pending_logins_expired_total 1",
            "kubespaces_server_rate_limited_total 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
