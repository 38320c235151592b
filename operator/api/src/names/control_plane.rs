//! Names of the control plane's objects. The chart derives its own from the release name
//! (StatefulSet and Service `<release>`, Secret `vc-<release>`, ClusterRole
//! `vc-<release>-v-<namespace>`): one fixed, short release name keeps all of them within 63
//! characters for every admitted tenant name (the operator's test `derived_names` checks it).

/// The helm release name of every tenant's vCluster (one per tenant namespace).
pub const RELEASE: &str = super::CONTROL_PLANE_RELEASE;
/// The label (and its value) on every object of the rendered chart, besides the tenant's: the
/// apply's sweep finds by it what a new render no longer has, even when the inventory in the
/// status lost track of it.
pub const RENDERED_LABEL: &str = "kubespaces.io/rendered";
pub const RENDERED_CHART: &str = "control-plane-chart";
/// The Secret vCluster writes with its admin kubeconfig.
pub const ADMIN_SECRET: &str = "vc-vcluster";
/// The key of the kubeconfig in [`ADMIN_SECRET`].
pub const ADMIN_SECRET_KEY: &str = "config";
/// The operator's RoleBinding (to its control-plane ClusterRole) in each tenant namespace.
pub const OPERATOR_BINDING: &str = "kubespaces-operator";
/// The NetworkPolicy that lets the control plane's pod reach the host's API server.
pub const CONTROL_PLANE_POLICY: &str = "tenant-control-plane";
/// The TLSRoute that exposes the tenant's API server at its public host.
pub const API_ROUTE: &str = "tenant-api";
/// The tenant's apps Gateway (HTTPS for `*.<name>.apps.<domain>`), its listener, and the
/// cert-manager Certificate whose Secret (same name) the listener serves.
pub const APPS_GATEWAY: &str = "apps";
pub const APPS_LISTENER: &str = "https";
pub const APPS_CERTIFICATE: &str = "apps-tls";
/// Where the apps Gateway appears inside the tenant (`namespace/name`), for the tenant's
/// HTTPRoutes' parentRefs: vCluster imports it there, read-only.
pub const APPS_GATEWAY_IN_TENANT_NAMESPACE: &str = "kubespaces";
/// Inside the tenant: the ServiceAccount (in kube-system) whose tokens the tenant kubeconfig
/// carries, and its ClusterRoleBinding to cluster-admin. Deleting the ServiceAccount revokes
/// every kubeconfig handed out so far.
pub const OWNER_ACCOUNT: &str = "kubespaces-owner";
pub const OWNER_ACCOUNT_NAMESPACE: &str = "kube-system";
/// Annotations on the tenant kubeconfig Secret: when its credential was issued and expires.
pub const ISSUED_AT_ANNOTATION: &str = "kubespaces.io/credential-issued-at";
pub const EXPIRES_AT_ANNOTATION: &str = "kubespaces.io/credential-expires-at";
/// ...and the uid of the ServiceAccount it was issued for.
pub const ACCOUNT_UID_ANNOTATION: &str = "kubespaces.io/credential-account-uid";

/// The control plane's pod (the StatefulSet's only replica), and its data volume's claim.
pub const CONTROL_PLANE_POD: &str = "vcluster-0";
pub const DATA_CLAIM: &str = "data-vcluster-0";
/// The syncer's ServiceAccount (the chart binds its Role and ClusterRole to it), and the one the
/// syncer gives the tenant's pods on the host.
pub const SYNCER_ACCOUNT: &str = "vc-vcluster";
pub const WORKLOAD_ACCOUNT: &str = "vc-workload-vcluster";
/// The vCluster's PKI (CA key included), and its configuration, which the chart renders.
pub const CERTS_SECRET: &str = "vcluster-certs";
pub const CONFIG_SECRET: &str = "vc-config-vcluster";

/// The objects in a tenant namespace that make up or steer its control plane, by resource:
/// what the chart renders, what the vCluster and the StatefulSet controller make from it, and
/// what the operator writes there. the operator's `control_plane_objects_guard` keeps the
/// tenant's hands off them.
pub fn control_plane_objects() -> [(&'static str, &'static str, Vec<&'static str>); 7] {
    let secrets = control_plane_secrets().to_vec();
    [
        ("", "secrets", secrets),
        ("", "services", vec![RELEASE, "vcluster-headless"]),
        (
            "",
            "serviceaccounts",
            vec![SYNCER_ACCOUNT, WORKLOAD_ACCOUNT],
        ),
        ("", "persistentvolumeclaims", vec![DATA_CLAIM]),
        ("apps", "statefulsets", vec![RELEASE]),
        ("rbac.authorization.k8s.io", "roles", vec![SYNCER_ACCOUNT]),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            vec![SYNCER_ACCOUNT, OPERATOR_BINDING],
        ),
    ]
}

/// The Secrets of the control plane: its admin kubeconfig, PKI and configuration, and the tenant
/// kubeconfig the operator issues.
pub fn control_plane_secrets() -> [&'static str; 4] {
    [
        ADMIN_SECRET,
        CERTS_SECRET,
        CONFIG_SECRET,
        crate::api::KUBECONFIG_SECRET,
    ]
}

/// The names the chart derives from the release in a tenant namespace `ns`, for the length
/// check: the longest is the ClusterRole's.
pub fn chart_derived(ns: &str) -> Vec<String> {
    vec![
        RELEASE.to_owned(),
        format!("{RELEASE}-headless"),
        format!("vc-{RELEASE}"),
        format!("vc-workload-{RELEASE}"),
        format!("vc-config-{RELEASE}"),
        format!("{RELEASE}-certs"),
        format!("data-{RELEASE}-0"),
        format!("vc-{RELEASE}-v-{ns}"),
        format!("vc-mn-{RELEASE}-v-{ns}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed names above are the chart's, derived from [`RELEASE`].
    #[test]
    fn the_fixed_names_are_the_charts() {
        let derived = chart_derived("kubespaces-tenant-x");
        for name in [
            CONTROL_PLANE_POD.trim_end_matches("-0"),
            DATA_CLAIM,
            SYNCER_ACCOUNT,
            WORKLOAD_ACCOUNT,
            CERTS_SECRET,
            CONFIG_SECRET,
            ADMIN_SECRET,
        ] {
            assert!(derived.iter().any(|d| d == name), "{name}");
        }
        assert_eq!(CONTROL_PLANE_POD, format!("{RELEASE}-0"));
    }
}
