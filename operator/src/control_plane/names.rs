//! Names of the control plane's objects. The chart derives its own from the release name
//! (StatefulSet and Service `<release>`, Secret `vc-<release>`, ClusterRole
//! `vc-<release>-v-<namespace>`): one fixed, short release name keeps all of them within 63
//! characters for every admitted tenant name (see the test in `crate::names`).

/// The helm release name of every tenant's vCluster (one per tenant namespace).
pub const RELEASE: &str = crate::names::CONTROL_PLANE_RELEASE;
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
