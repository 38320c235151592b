//! Prometheus metrics an operator of the platform would chart.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::conditions::Phase;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabels {
    pub cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: String,
}

pub struct Metrics {
    pub registry: Registry,
    pub reconciles: Counter,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub reconcile_duration: Histogram,
    pub tenants: Family<PhaseLabels, Gauge>,
    pub time_to_ready: Histogram,
    pub wakes: Family<CauseLabels, Counter>,
    pub wake_duration: Histogram,
    pub api_requests: Family<RequestLabels, Counter>,
    pub leader: Gauge,
    pub api_requests_unlisted: Counter,
    phases: Mutex<HashMap<String, Phase>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kubespaces");
        let reconciles = Counter::default();
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        let reconcile_duration = Histogram::new([
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ]);
        let tenants = Family::<PhaseLabels, Gauge>::default();
        let time_to_ready =
            Histogram::new([1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0]);
        let api_requests = Family::<RequestLabels, Counter>::default();
        let wakes = Family::<CauseLabels, Counter>::default();
        let wake_duration = Histogram::new([2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0]);
        let leader = Gauge::default();
        let api_requests_unlisted = Counter::default();
        registry.register("reconcile", "Tenant reconciles run", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Tenant reconciles that failed, by reason",
            reconcile_errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of one tenant reconcile",
            reconcile_duration.clone(),
        );
        registry.register(
            "tenants",
            "Tenants handled by this operator, by phase",
            tenants.clone(),
        );
        registry.register(
            "tenant_time_to_ready_seconds",
            "Time from a Tenant's creation until this operator first saw it Ready",
            time_to_ready.clone(),
        );
        registry.register(
            "wakes",
            "Sleeping tenants woken, by cause (connection: to the tenant API; request: a wake \
             request)",
            wakes.clone(),
        );
        registry.register(
            "wake_duration_seconds",
            "Time from a sleeping tenant's wake until it was Ready again",
            wake_duration.clone(),
        );
        registry.register(
            "kube_api_requests",
            "Requests this operator's controller sent to the Kubernetes API, by verb (writes: \
             POST, PUT, PATCH, DELETE); the leader election's Lease requests are not counted",
            api_requests.clone(),
        );
        registry.register(
            "kube_api_requests_unlisted",
            "Requests of the controller that its RBAC tables (access::CONTROLLER and \
             access::CONNECTION_SECRETS, from which its roles are generated) do not list: always 0 \
             unless a table is incomplete",
            api_requests_unlisted.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease and reconciles (always, without leader \
             election); 0 otherwise",
            leader.clone(),
        );
        for phase in Phase::ALL {
            let _ = tenants.get_or_create(&PhaseLabels {
                phase: phase.as_str().into(),
            });
        }
        // Every method the controller sends, at 0 from the start: a standby's (or an idle
        // operator's) writes read as 0 on a dashboard, not as a series that does not exist.
        for verb in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let _ = api_requests.get_or_create(&RequestLabels { verb: verb.into() });
        }
        Self {
            registry,
            reconciles,
            reconcile_errors,
            reconcile_duration,
            tenants,
            time_to_ready,
            wakes,
            wake_duration,
            api_requests,
            leader,
            api_requests_unlisted,
            phases: Mutex::new(HashMap::new()),
        }
    }
}

impl Metrics {
    pub fn shared() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records a tenant's current phase (None once it is gone) and keeps the gauges in step.
    pub fn set_phase(&self, tenant: &str, phase: Option<Phase>) {
        let Ok(mut phases) = self.phases.lock() else {
            return;
        };
        let old = match phase {
            Some(p) => phases.insert(tenant.to_owned(), p),
            None => phases.remove(tenant),
        };
        if old == phase {
            return;
        }
        if let Some(o) = old {
            self.tenants
                .get_or_create(&PhaseLabels {
                    phase: o.as_str().into(),
                })
                .dec();
        }
        if let Some(p) = phase {
            self.tenants
                .get_or_create(&PhaseLabels {
                    phase: p.as_str().into(),
                })
                .inc();
        }
    }

    pub fn count_wake(&self, cause: &str) {
        self.wakes
            .get_or_create(&CauseLabels {
                cause: cause.into(),
            })
            .inc();
    }

    pub fn observe_wake(&self, elapsed: Duration) {
        self.wake_duration.observe(elapsed.as_secs_f64());
    }

    pub fn observe_time_to_ready(&self, elapsed: Duration) {
        self.time_to_ready.observe(elapsed.as_secs_f64());
    }

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
    fn phase_gauges_follow_tenants() {
        let m = Metrics::default();
        m.set_phase("a", Some(Phase::Provisioning));
        m.set_phase("b", Some(Phase::Provisioning));
        m.set_phase("a", Some(Phase::Ready));
        m.set_phase("a", Some(Phase::Ready));
        let text = m.encode();
        assert!(
            text.contains("kubespaces_tenants{phase=\"Ready\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kubespaces_tenants{phase=\"Provisioning\"} 1"),
            "{text}"
        );
        m.set_phase("a", None);
        assert!(m.encode().contains("kubespaces_tenants{phase=\"Ready\"} 0"));
    }

    #[test]
    fn request_counters_exist_before_the_first_request() {
        let text = Metrics::default().encode();
        for verb in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let series = format!("kubespaces_kube_api_requests_total{{verb=\"{verb}\"}} 0");
            assert!(text.contains(&series), "{series} in\n{text}");
        }
    }
}
