//! The control plane's teardown as a plan (pure): what the apply wrote, in reverse and in steps, so
//! that users stop being served before what serves them goes. First the route (the public host
//! stops answering), then the apps listener, its Certificate and the certificate's Secret (the apps
//! hosts stop answering), then the vCluster, its volume claims and the cluster-scoped objects of
//! the inventory. The namespace, which holds everything else, goes after the plan.

use kube::api::GroupVersionKind;

use super::plan::{entry_of, is_cluster_scoped_entry};
use crate::build::control_plane::{apps, route};
use crate::names::control_plane as names;

/// One step of the teardown.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// The teardown waits at this step until none of its objects is left, and says so with
    /// this reason; a step without one deletes and goes on.
    pub waits: Option<&'static str>,
    /// Inventory entries ([`super::plan::entry`]): namespaced ones in the tenant's namespace, or
    /// cluster-scoped ones; each deleted only if it carries the tenant's label.
    pub objects: Vec<String>,
    /// Objects others made from ours, in the tenant's namespace, by label selector: the volume
    /// claims of the StatefulSet.
    pub labelled: Vec<(GroupVersionKind, &'static str)>,
}

/// The steps that take down `tenant`'s control plane, whose last apply left `inventory`; `apps`:
/// whether the platform exposes tenants' apps.
pub fn control_plane(tenant: &str, inventory: &[String], apps: bool) -> Vec<Step> {
    let ns = crate::names::namespace(tenant);
    let named = |(group, version, kind): apps::Gvk, name: &str| {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        entry_of(&gvk.api_version(), kind, &ns, name)
    };
    let mut steps = vec![Step {
        waits: Some("RemovingRoute"),
        objects: vec![named(
            (route::GROUP, route::VERSION, route::KIND),
            names::API_ROUTE,
        )],
        labelled: vec![],
    }];
    if apps {
        steps.push(Step {
            waits: Some("RemovingAppsListener"),
            // cert-manager does not delete the Secret with the Certificate.
            objects: vec![
                named(apps::GATEWAY, names::APPS_GATEWAY),
                named(apps::CERTIFICATE, names::APPS_CERTIFICATE),
                named(("", "v1", "Secret"), names::APPS_CERTIFICATE),
            ],
            labelled: vec![],
        });
    }
    // Cluster-scoped objects of the inventory (none with the default values; the chart renders
    // ClusterRoles for some syncs). The namespace takes the namespaced ones.
    let cluster_scoped = inventory
        .iter()
        .filter(|e| is_cluster_scoped_entry(e))
        .cloned();
    steps.push(Step {
        waits: None,
        objects: std::iter::once(named(("apps", "v1", "StatefulSet"), names::RELEASE))
            .chain(cluster_scoped)
            .collect(),
        labelled: vec![(
            GroupVersionKind::gvk("", "v1", "PersistentVolumeClaim"),
            "app=vcluster",
        )],
    });
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_goes_first_then_the_apps_listener_then_the_rest_without_waiting() {
        let inventory = [
            "apps/v1/StatefulSet/kubespaces-tenant-a/vcluster".to_owned(),
            "rbac.authorization.k8s.io/v1/ClusterRole//vc-a".to_owned(),
            "v1/Service/kubespaces-tenant-a/vcluster".to_owned(),
        ];
        let steps = control_plane("a", &inventory, true);
        let waits: Vec<_> = steps.iter().map(|s| s.waits).collect();
        assert_eq!(
            waits,
            [Some("RemovingRoute"), Some("RemovingAppsListener"), None]
        );
        assert_eq!(
            steps[0].objects,
            ["gateway.networking.k8s.io/v1/TLSRoute/kubespaces-tenant-a/tenant-api"]
        );
        assert_eq!(
            steps[1].objects,
            [
                "gateway.networking.k8s.io/v1/Gateway/kubespaces-tenant-a/apps",
                "cert-manager.io/v1/Certificate/kubespaces-tenant-a/apps-tls",
                "v1/Secret/kubespaces-tenant-a/apps-tls",
            ]
        );
        assert_eq!(
            steps[2].objects,
            [
                "apps/v1/StatefulSet/kubespaces-tenant-a/vcluster",
                "rbac.authorization.k8s.io/v1/ClusterRole//vc-a",
            ],
            "the namespaced objects of the inventory go with the namespace"
        );
        assert_eq!(steps[2].labelled.len(), 1);
    }

    #[test]
    fn without_apps_there_is_no_apps_step() {
        let steps = control_plane("a", &[], false);
        let waits: Vec<_> = steps.iter().map(|s| s.waits).collect();
        assert_eq!(waits, [Some("RemovingRoute"), None]);
    }
}
