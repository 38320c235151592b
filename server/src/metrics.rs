//! Prometheus metrics of the server (`GET /metrics`, admins only: see `api::metrics`). One
//! registry per server, not a global, so servers started side by side (the tests) keep apart.

use prometheus_client::{metrics::counter::Counter, registry::Registry};

pub struct Metrics {
    registry: Registry,
    /// Portal logins completed (a session started).
    pub portal_logins: Counter,
    /// Requests refused by `--rate-limit` or `--anonymous-rate-limit` (429): the refusals are
    /// logged at debug level only, so a flood does not become a flood of log lines.
    pub rate_limited: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubespaces_server");
        let portal_logins = Counter::default();
        let rate_limited = Counter::default();
        registry.register(
            "portal_logins",
            "Portal logins completed, each starting a session",
            portal_logins.clone(),
        );
        registry.register(
            "rate_limited",
            "Requests refused with 429 by --rate-limit or --anonymous-rate-limit",
            rate_limited.clone(),
        );
        Metrics {
            registry,
            portal_logins,
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
    fn the_metrics_are_exposed_under_their_names() {
        let m = Metrics::default();
        m.portal_logins.inc_by(3);
        m.rate_limited.inc_by(2);
        let text = m.encode();
        for line in [
            "kubespaces_server_portal_logins_total 3",
            "kubespaces_server_rate_limited_total 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
