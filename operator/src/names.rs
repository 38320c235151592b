//! The one place that derives names, labels and annotations from a tenant's name.
//!
//! The longest derived name bounds the tenant name: every derived name must be a valid
//! DNS label (63 characters), and the tenant name is validated at admission against that bound.

/// Prefix of the host namespace of every tenant.
pub const NAMESPACE_PREFIX: &str = "kubespaces-tenant-";

/// Longest tenant name for which every derived name still fits in a DNS label.
pub const MAX_TENANT_NAME_LEN: usize = 63 - NAMESPACE_PREFIX.len();

/// CEL rule on the Tenant's `metadata.name` (must agree with [`MAX_TENANT_NAME_LEN`]; a unit
/// test checks it).
pub const NAME_LENGTH_RULE: &str = "self.metadata.name.size() <= 45";
pub const NAME_LENGTH_MESSAGE: &str = "metadata.name must be at most 45 characters, so that the tenant namespace kubespaces-tenant-<name> fits in 63";
pub const NAME_LABEL_RULE: &str = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')";
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
/// Reconcile-request tokens from Crossplane and Flux.
pub const RECONCILE_REQUEST_ANNOTATIONS: [&str; 2] = [
    "crossplane.io/reconcile-requested-at",
    "reconcile.fluxcd.io/requestedAt",
];

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

/// Wildcard host name of the tenant's apps.
pub fn apps_host(tenant: &str, base_domain: &str) -> String {
    format!("*.{tenant}.apps.{base_domain}")
}

/// Every name derived from a tenant name that must be a DNS label.
pub fn derived_labels(tenant: &str) -> Vec<String> {
    vec![namespace(tenant), tenant.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cel_rule_enforces_the_computed_bound() {
        assert_eq!(MAX_TENANT_NAME_LEN, 45);
        assert!(NAME_LENGTH_RULE.ends_with(&format!("<= {MAX_TENANT_NAME_LEN}")));
        assert!(NAME_LENGTH_MESSAGE.contains(&format!("at most {MAX_TENANT_NAME_LEN}")));
    }

    /// The longest tenant name admission lets through: the bound in the CEL rule the API server
    /// enforces, read from the rule itself (not from `MAX_TENANT_NAME_LEN`, whose derivation
    /// this test must not repeat).
    fn longest_admitted_name() -> String {
        let (_, bound) = NAME_LENGTH_RULE.rsplit_once("<=").expect("a `<=` bound");
        let len: usize = bound.trim().parse().expect("a number");
        // A valid DNS label of that length, as NAME_LABEL_RULE admits: a letter first and last.
        format!("t{}", "x".repeat(len - 1))
    }

    /// RFC 1123 label: what a namespace name and each label of a host name must be.
    fn is_dns_label(s: &str) -> bool {
        (1..=63).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    }

    /// A Kubernetes label value: at most 63 characters, alphanumeric at both ends, `-_.` inside.
    fn is_label_value(s: &str) -> bool {
        s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
    }

    #[test]
    fn every_name_built_for_the_longest_admitted_tenant_fits_a_dns_label() {
        use crate::api::{Tenant, TenantSpec};
        use crate::config::HostConfig;

        let tenant = longest_admitted_name();
        let t = Tenant::new(&tenant, TenantSpec::new("a@example.com", "1", "1Gi", None));
        // What the operator actually builds and names for this tenant: DNS labels...
        let ns = crate::build::namespace(&t, &HostConfig::default());
        let mut dns_labels: Vec<(String, String)> = vec![(
            "the namespace".into(),
            ns.metadata.name.clone().unwrap_or_default(),
        )];
        for name in derived_labels(&tenant) {
            dns_labels.push(("a derived name".into(), name));
        }
        // (the tenant name is the first label of its public host names)
        for host in [
            api_host(&tenant, "example.com"),
            apps_host(&tenant, "example.com"),
        ] {
            for label in host.split('.').filter(|l| *l != "*") {
                dns_labels.push((format!("a label of {host}"), label.to_owned()));
            }
        }
        // ...and label values, on the namespace and on every object in it.
        let mut label_values: Vec<(String, String)> = vec![];
        for (key, value) in ns.metadata.labels.iter().flatten() {
            label_values.push((format!("namespace label {key}"), value.clone()));
        }
        for (key, value) in crate::build::labels(&tenant) {
            label_values.push((format!("object label {key}"), value));
        }

        for checked in [&dns_labels, &label_values] {
            assert!(
                checked.iter().any(|(_, v)| v.contains(&tenant)),
                "the tenant name is in what was checked: {checked:?}"
            );
        }
        for (what, value) in &dns_labels {
            assert!(
                is_dns_label(value),
                "{what} {value:?} ({} characters) is not a DNS label",
                value.len()
            );
        }
        for (what, value) in &label_values {
            assert!(
                is_label_value(value),
                "{what} {value:?} ({} characters) is not a label value",
                value.len()
            );
        }

        // The bound is the real one, not merely a safe one: one character more and the namespace
        // no longer fits, so admission refuses exactly the names that would fail later.
        let one_more = format!("{tenant}x");
        assert!(!is_dns_label(&namespace(&one_more)));
        assert!(is_dns_label(&namespace(&tenant)));
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
