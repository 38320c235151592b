//! The one place that derives names, labels and annotations from a tenant's name.
//!
//! The longest derived name bounds the tenant name: every derived name must be a valid
//! DNS label (63 characters), and the tenant name is validated at admission against that bound.

pub mod control_plane;

/// Prefix of the host namespace of every tenant.
pub const NAMESPACE_PREFIX: &str = "kubespaces-tenant-";

/// The helm release name of every tenant's vCluster (one per tenant namespace). The chart
/// derives its object names from it: StatefulSet and Service `<release>`, Secret
/// `vc-<release>`, and, the longest, the ClusterRole `vc-<release>-v-<namespace>` (rendered
/// when a sync needs cluster-wide reads; the chart cuts it at 63 characters, so two long tenant
/// names could share it).
pub const CONTROL_PLANE_RELEASE: &str = "vcluster";
/// The prefix of that ClusterRole's name before the tenant name.
pub const CONTROL_PLANE_CLUSTER_ROLE_PREFIX: &str = "vc-vcluster-v-kubespaces-tenant-";

/// Longest tenant name for which every derived name still fits in a DNS label: the longest
/// derived name is the vCluster chart's ClusterRole [`control_plane_cluster_role`].
pub const MAX_TENANT_NAME_LEN: usize = 63 - CONTROL_PLANE_CLUSTER_ROLE_PREFIX.len();

/// CEL rule on the Tenant's `metadata.name` (must agree with [`MAX_TENANT_NAME_LEN`]; a unit
/// test checks it).
pub const NAME_LENGTH_RULE: &str = "self.metadata.name.size() <= 31";
pub const NAME_LENGTH_MESSAGE: &str = "metadata.name must be at most 31 characters, so that every name derived from it fits in 63 (the longest is the tenant control plane's ClusterRole vc-vcluster-v-kubespaces-tenant-<name>)";
pub const NAME_LABEL_RULE: &str = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')";
/// Why `spec.owner` is immutable, and what to do instead (the CEL rule's message).
pub const OWNER_IMMUTABLE_MESSAGE: &str = "spec.owner cannot change: an owner keeps what it could copy from the tenant namespace (the control plane's admin certificate cannot be revoked), so a tenant is never handed to someone else; create a new Tenant for the new owner and move the workloads";
pub const NAME_LABEL_MESSAGE: &str = "metadata.name must be a DNS label: start with a lowercase letter, then lowercase letters, digits or '-', ending in a letter or digit";

/// Label on every object the operator creates for a tenant, and on the namespace itself.
pub const TENANT_LABEL: &str = "kubespaces.io/tenant";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "kubespaces-operator";

/// Finalizer that holds a Tenant until its host objects are torn down.
pub const FINALIZER: &str = "kubespaces.io/teardown";

/// Crossplane's pause annotation, honoured as is.
pub const PAUSED_ANNOTATION: &str = "crossplane.io/paused";
/// On the tenant namespace: the owner it was made for. A namespace left in place by
/// `deletionPolicy: Orphan` is taken over only by a new Tenant of that same owner.
pub const OWNER_ANNOTATION: &str = "kubespaces.io/owner";
/// On the tenant namespace: the domain its routes' hostnames must lie under
/// (`<tenant>.apps.<base domain>`), which the route admission policy reads.
pub const APPS_DOMAIN_ANNOTATION: &str = "kubespaces.io/apps-domain";
/// Reconcile-request tokens from Crossplane and Flux.
pub const RECONCILE_REQUEST_ANNOTATIONS: [&str; 2] = [
    "crossplane.io/reconcile-requested-at",
    "reconcile.fluxcd.io/requestedAt",
];

/// Sleep and wake requests, from any door (kubectl, GitOps, the CLI, the portal): an RFC 3339
/// time each. The later of the two wins, so a request is never undone by an older one and the
/// object a GitOps tool applies stays as written (the operator never removes them).
pub const SLEEP_REQUESTED_ANNOTATION: &str = "kubespaces.io/sleep-requested-at";
pub const WAKE_REQUESTED_ANNOTATION: &str = "kubespaces.io/wake-requested-at";

/// Field managers: children and status are owned separately so each apply is complete.
pub const CHILD_FIELD_MANAGER: &str = "kubespaces-operator/tenant";
pub const STATUS_FIELD_MANAGER: &str = "kubespaces-operator/tenant-status";

/// Names of the objects inside the tenant namespace.
pub const QUOTA: &str = "tenant-quota";
pub const LIMIT_RANGE: &str = "tenant-defaults";
pub const OWNER_ROLE_BINDING: &str = "tenant-owner";
pub const NETWORK_POLICY: &str = "tenant-isolation";

/// The ClusterRole bound to the owner inside their namespace (shipped with the CRD).
pub const OWNER_CLUSTER_ROLE: &str = "kubespaces:tenant-owner";

/// Namespaces labelled with this may reach every tenant (ingress gateways, monitoring).
pub const PLATFORM_NAMESPACE_LABEL: &str = "kubespaces.io/platform";

/// Cluster DNS, the one thing outside their namespace that tenant pods may always reach: the
/// pods labelled `k8s-app=kube-dns` in `kube-system` (CoreDNS and kube-dns both carry it).
pub const DNS_NAMESPACE: &str = "kube-system";
pub const DNS_POD_LABEL: (&str, &str) = ("k8s-app", "kube-dns");
/// Label the API server puts on every namespace, naming it: how a policy selects one namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The admission policies that close the ways out of a tenant namespace (shipped with the CRD).
pub const ROLE_BINDING_GUARD: &str = "kubespaces-tenant-role-bindings";
pub const SERVICE_GUARD: &str = "kubespaces-tenant-services";
pub const ROUTE_GUARD: &str = "kubespaces-tenant-routes";
pub const INGRESS_GUARD: &str = "kubespaces-tenant-ingresses";
pub const ENDPOINTS_GUARD: &str = "kubespaces-tenant-endpoints";
pub const CONTROL_PLANE_POD_GUARD: &str = "kubespaces-tenant-control-plane-pods";
pub const CONTROL_PLANE_OBJECTS_GUARD: &str = "kubespaces-tenant-control-plane-objects";
pub const CONTROL_PLANE_REFERENCES_GUARD: &str = "kubespaces-tenant-control-plane-references";
pub const APPS_CERTIFICATE_GUARD: &str = "kubespaces-tenant-apps-certificate";
pub const PLACEMENT_GUARD: &str = "kubespaces-tenant-placement";
pub const VOLUME_CLAIM_GUARD: &str = "kubespaces-tenant-volume-claims";
/// The admission policies that keep the operator's own account inside tenant namespaces (one
/// per kind it writes beyond them): `<prefix>namespaces`, `<prefix>clusterroles`, ...
pub const OPERATOR_BOUNDS_PREFIX: &str = "kubespaces-operator-bounds-";

/// The host namespace of a tenant.
pub fn namespace(tenant: &str) -> String {
    format!("{NAMESPACE_PREFIX}{tenant}")
}

/// The tenant a host namespace belongs to, if it follows the naming scheme.
pub fn tenant_of_namespace(namespace: &str) -> Option<&str> {
    namespace
        .strip_prefix(NAMESPACE_PREFIX)
        .filter(|t| !t.is_empty())
}

/// Public host name of the tenant API.
pub fn api_host(tenant: &str, base_domain: &str) -> String {
    format!("{tenant}.api.{base_domain}")
}

/// The tenant whose API `host` names (`<tenant>.api.<base domain>`, any letter case, as TLS
/// clients may send it), if it names one.
pub fn tenant_of_api_host(host: &str, base_domain: &str) -> Option<String> {
    let host = host.to_ascii_lowercase();
    let suffix = format!(".api.{}", base_domain.to_ascii_lowercase());
    let tenant = host.strip_suffix(&suffix)?;
    let label = tenant.starts_with(|c: char| c.is_ascii_lowercase())
        && !tenant.ends_with('-')
        && tenant.len() <= MAX_TENANT_NAME_LEN
        && tenant
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    label.then(|| tenant.to_owned())
}

/// The Lease, in the platform's namespace, whose renew time is the tenant API's last activity:
/// the waker renews it as connections pass, the operator reads it to put the tenant to sleep.
pub fn activity_lease(tenant: &str) -> String {
    format!("activity-{tenant}")
}

/// The ReferenceGrant, in the platform's namespace, that lets the tenant's API route send its
/// connections to the waker's Service there.
pub fn api_route_grant(tenant: &str) -> String {
    format!("tenant-api-{tenant}")
}

/// The label of the waker's pods, which each tenant's control-plane NetworkPolicy admits from
/// the waker's namespace.
pub const WAKER_POD_LABEL: (&str, &str) = ("app.kubernetes.io/component", "waker");

/// The ALPN protocol name a TLS client offers (beside its real protocols) so that its
/// connections do not count as activity: the operator's own checks, a monitoring probe. The API
/// server ignores it and picks the real protocol.
pub const QUIET_ALPN: &str = "kubespaces-not-activity";

/// Wildcard host name of the tenant's apps.
pub fn apps_host(tenant: &str, base_domain: &str) -> String {
    format!("*.{}", apps_domain(tenant, base_domain))
}

/// The domain a tenant's apps hostnames lie under: `<tenant>.apps.<base domain>`.
pub fn apps_domain(tenant: &str, base_domain: &str) -> String {
    format!("{tenant}.apps.{base_domain}")
}

/// The ClusterRole the vCluster chart derives for a tenant's release, when it renders one.
pub fn control_plane_cluster_role(tenant: &str) -> String {
    format!("vc-{CONTROL_PLANE_RELEASE}-v-{}", namespace(tenant))
}

/// Every name derived from a tenant name that must be a DNS label.
pub fn derived_labels(tenant: &str) -> Vec<String> {
    vec![
        namespace(tenant),
        tenant.to_owned(),
        control_plane_cluster_role(tenant),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cel_rule_enforces_the_computed_bound() {
        assert_eq!(MAX_TENANT_NAME_LEN, 31);
        assert_eq!(
            CONTROL_PLANE_CLUSTER_ROLE_PREFIX,
            format!("vc-{CONTROL_PLANE_RELEASE}-v-{NAMESPACE_PREFIX}")
        );
        assert!(NAME_LENGTH_RULE.ends_with(&format!("<= {MAX_TENANT_NAME_LEN}")));
        assert!(NAME_LENGTH_MESSAGE.contains(&format!("at most {MAX_TENANT_NAME_LEN}")));
    }

    #[test]
    fn namespace_round_trips_to_the_tenant() {
        assert_eq!(namespace("team-atlas"), "kubespaces-tenant-team-atlas");
        assert_eq!(
            tenant_of_namespace("kubespaces-tenant-team-atlas"),
            Some("team-atlas")
        );
        assert_eq!(tenant_of_namespace("kube-system"), None);
        assert_eq!(tenant_of_namespace(NAMESPACE_PREFIX), None);
    }

    #[test]
    fn the_tenant_of_an_api_host_is_read_back_from_it_alone() {
        let host = api_host("team-atlas", "example.com");
        assert_eq!(
            tenant_of_api_host(&host, "example.com").as_deref(),
            Some("team-atlas")
        );
        assert_eq!(
            tenant_of_api_host("TEAM-atlas.API.Example.com", "example.com").as_deref(),
            Some("team-atlas")
        );
        for other in [
            "team-atlas.apps.example.com",
            "a.b.api.example.com",
            ".api.example.com",
            "team-atlas.api.example.com.evil",
            "team-atlas.api.example.org",
        ] {
            assert_eq!(tenant_of_api_host(other, "example.com"), None, "{other}");
        }
    }

    #[test]
    fn public_hosts_follow_the_spec() {
        assert_eq!(
            api_host("team-atlas", "example.com"),
            "team-atlas.api.example.com"
        );
        assert_eq!(
            apps_host("team-atlas", "example.com"),
            "*.team-atlas.apps.example.com"
        );
    }
}
