//! From the tenant control plane's live objects, as read, to the conditions the status says about
//! them: its workload, its route and its apps listener. Pure; the credential's condition comes
//! from requests through the route and is made where they are sent
//! (`reconcile::control_plane`).

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::DynamicObject;

use crate::{
    build::control_plane::{apps, route, settings::ParentRef},
    conditions::{
        API_ROUTE_ACCEPTED, APPS_CERTIFICATE_READY, APPS_LISTENER_PROGRAMMED, CONTROL_PLANE_READY,
        Desired,
    },
    names::control_plane as names,
};

/// Whether the control plane's StatefulSet runs the current revision on every replica.
pub fn running(statefulset: Option<&StatefulSet>) -> bool {
    statefulset.is_some_and(|s| {
        let status = s.status.as_ref();
        let want = s.spec.replicas.unwrap_or(1);
        status.and_then(|st| st.ready_replicas).unwrap_or(0) >= want
            && status.and_then(|st| st.observed_generation) >= s.metadata.generation
            && status.and_then(|st| st.updated_replicas).unwrap_or(0) >= want
    })
}

/// `ControlPlaneReady`: the workload runs and has written its admin kubeconfig.
pub fn workload(ns: &str, running: bool, admin_written: bool, chart_version: &str) -> Desired {
    match (running, admin_written) {
        (false, _) => Desired::new(
            CONTROL_PLANE_READY,
            false,
            "Starting",
            format!("StatefulSet {ns}/{} is not ready yet", names::RELEASE),
        ),
        (true, false) => Desired::new(
            CONTROL_PLANE_READY,
            false,
            "WaitingForAdminSecret",
            format!(
                "the control plane runs; waiting for it to write Secret {ns}/{}",
                names::ADMIN_SECRET
            ),
        ),
        (true, true) => Desired::new(
            CONTROL_PLANE_READY,
            true,
            "Running",
            format!(
                "vCluster {} (chart {chart_version}) runs in {ns}",
                names::RELEASE
            ),
        ),
    }
}

/// Whether the platform Gateway accepted the route (reason and message when not).
pub fn route_accepted(
    route: Option<&DynamicObject>,
    ns: &str,
    gateway: &ParentRef,
) -> Result<(), (String, String)> {
    match route {
        Some(r) => route::accepted(r, gateway),
        None => Err((
            "Creating".into(),
            format!("TLSRoute {ns}/{} does not exist yet", names::API_ROUTE),
        )),
    }
}

/// `ApiRouteAccepted`, from [`route_accepted`].
pub fn route(accepted: &Result<(), (String, String)>, ns: &str, host: &str) -> Desired {
    match accepted {
        Ok(()) => Desired::new(
            API_ROUTE_ACCEPTED,
            true,
            "Accepted",
            format!(
                "TLSRoute {ns}/{} routes {host} to the control plane",
                names::API_ROUTE
            ),
        ),
        Err((reason, message)) => {
            Desired::new(API_ROUTE_ACCEPTED, false, reason.clone(), message.clone())
        }
    }
}

/// `AppsCertificateReady` and `AppsListenerProgrammed`: the apps certificate issued, and the
/// apps listener programmed with it, serving `served`.
pub fn apps(
    certificate: Option<&DynamicObject>,
    gateway: Option<&DynamicObject>,
    ns: &str,
    served: &str,
) -> [Desired; 2] {
    let certificate = match apps::certificate_ready(certificate) {
        Ok(()) => Desired::new(
            APPS_CERTIFICATE_READY,
            true,
            "Issued",
            format!(
                "Certificate {ns}/{} is issued and current",
                names::APPS_CERTIFICATE
            ),
        ),
        Err((reason, message)) => Desired::new(APPS_CERTIFICATE_READY, false, reason, message),
    };
    let listener = match apps::listener_programmed(gateway) {
        Ok(()) => Desired::new(
            APPS_LISTENER_PROGRAMMED,
            true,
            "Programmed",
            format!("Gateway {ns}/{} serves {served}", names::APPS_GATEWAY),
        ),
        Err((reason, message)) => Desired::new(APPS_LISTENER_PROGRAMMED, false, reason, message),
    };
    [certificate, listener]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{StatefulSetSpec, StatefulSetStatus};

    fn set(generation: i64, status: StatefulSetStatus) -> StatefulSet {
        StatefulSet {
            metadata: kube::api::ObjectMeta {
                generation: Some(generation),
                ..Default::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(1),
                ..Default::default()
            },
            status: Some(status),
        }
    }

    #[test]
    fn the_workload_runs_only_when_every_replica_is_ready_and_updated_at_its_generation() {
        let current = StatefulSetStatus {
            ready_replicas: Some(1),
            updated_replicas: Some(1),
            observed_generation: Some(2),
            ..Default::default()
        };
        assert!(running(Some(&set(2, current.clone()))));
        assert!(!running(None));
        // A new revision the controller has not seen yet, one not rolled out, one not ready.
        assert!(!running(Some(&set(3, current.clone()))));
        let rolling = StatefulSetStatus {
            updated_replicas: Some(0),
            ..current.clone()
        };
        assert!(!running(Some(&set(2, rolling))));
        let starting = StatefulSetStatus {
            ready_replicas: None,
            ..current
        };
        assert!(!running(Some(&set(2, starting))));
    }

    #[test]
    fn control_plane_ready_says_what_it_waits_for() {
        let ns = "kubespaces-tenant-a";
        let starting = workload(ns, false, true, "0.36.1");
        assert_eq!(
            (starting.status, starting.reason.as_str()),
            (false, "Starting")
        );
        let waiting = workload(ns, true, false, "0.36.1");
        assert_eq!(waiting.reason, "WaitingForAdminSecret");
        assert!(waiting.message.contains(names::ADMIN_SECRET));
        let running = workload(ns, true, true, "0.36.1");
        assert!(running.status && running.message.contains("chart 0.36.1"));
    }

    #[test]
    fn a_missing_route_is_being_created() {
        let gateway = ParentRef {
            namespace: "kubespaces-system".into(),
            name: "platform".into(),
            section: "tenant-api".into(),
        };
        let accepted = route_accepted(None, "kubespaces-tenant-a", &gateway);
        let condition = route(&accepted, "kubespaces-tenant-a", "a.api.example.com");
        assert_eq!(
            (condition.status, condition.reason.as_str()),
            (false, "Creating")
        );
        let condition = route(&Ok(()), "kubespaces-tenant-a", "a.api.example.com");
        assert!(condition.status && condition.message.contains("a.api.example.com"));
    }
}
