//! From the host objects of a tenant, as observed, to what the status says about them. Pure.
//! The control plane's objects: [`control_plane`].

pub mod control_plane;
pub mod drift;

use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace, ResourceQuota},
    networking::v1::NetworkPolicy,
    rbac::v1::RoleBinding,
};

use crate::{
    api::{QuotaStatus, Tenant},
    build::{self, settings::HostConfig},
    conditions::{self, Desired},
    names, quantity,
};

/// The host objects of one tenant, as last seen (from the caches, or from an apply response).
#[derive(Debug, Clone, Default)]
pub struct HostObjects {
    pub namespace: Option<Namespace>,
    pub quota: Option<ResourceQuota>,
    pub limit_range: Option<LimitRange>,
    pub owner_binding: Option<RoleBinding>,
    pub network_policy: Option<NetworkPolicy>,
}

/// A permanent problem: the namespace the tenant needs belongs to someone else.
pub fn namespace_conflict(
    tenant: &Tenant,
    namespace: Option<&Namespace>,
) -> Option<(String, String)> {
    let ns = namespace?;
    let tenant_name = tenant.metadata.name.as_deref().unwrap_or_default();
    let name = names::namespace(tenant_name);
    let conflict = |held_by: String| {
        Some((
            "NamespaceConflict".to_owned(),
            format!("namespace {name} already exists and {held_by}"),
        ))
    };
    let label = ns
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(names::TENANT_LABEL));
    match label {
        Some(l) if l == tenant_name => {}
        Some(other) => {
            return conflict(format!(
                "is labelled for tenant {other}; delete that namespace or choose another tenant name"
            ));
        }
        None => {
            return conflict(format!(
                "was not created by KubeSpaces (it has no {} label); delete that namespace or \
                 choose another tenant name",
                names::TENANT_LABEL
            ));
        }
    }
    // Held by a Tenant object (this one, or one whose deletion the garbage collector is about to
    // follow with the namespace's): the namespace is this tenant's.
    let held = ns
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == "Tenant" && r.api_version.starts_with("kubespaces.io/"));
    let same_owner = ns
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(names::OWNER_ANNOTATION))
        == Some(&tenant.spec.owner);
    if held || same_owner {
        return None;
    }
    // Left in place by an earlier Tenant of that name (deletionPolicy: Orphan), with its
    // workloads, Secrets and the old owner's RoleBinding: handing that to someone else would give
    // them another person's data. The earlier owner is not named: the status is not theirs.
    conflict(
        "was left in place (deletionPolicy: Orphan) by an earlier tenant of another owner; only a \
         tenant of the same owner takes it over, with what it holds: delete that namespace or \
         choose another tenant name"
            .to_owned(),
    )
}

fn phase_of(ns: &Namespace) -> &str {
    ns.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Active")
}

/// Why a terminating namespace is still there, in the namespace controller's own words.
pub fn terminating_reason(ns: &Namespace) -> String {
    let name = ns.metadata.name.clone().unwrap_or_default();
    let detail: Vec<String> = ns
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.status == "True")
        .filter_map(|c| c.message.clone())
        .collect();
    if detail.is_empty() {
        format!("namespace {name} is terminating")
    } else {
        format!("namespace {name} is terminating: {}", detail.join("; "))
    }
}

/// True when the quota controller has computed the quota's status for the current spec: only
/// then does the API server enforce the new limits.
pub fn quota_enforced(tenant: &Tenant, config: &HostConfig, quota: &ResourceQuota) -> bool {
    let Some(hard) = quota.status.as_ref().and_then(|s| s.hard.as_ref()) else {
        return false;
    };
    build::quota_hard(tenant, config).iter().all(|(k, want)| {
        hard.get(k)
            .is_some_and(|have| quantity::same(&have.0, &want.0))
    })
}

/// The detail conditions for the host side of a tenant.
pub fn details(tenant: &Tenant, config: &HostConfig, host: &HostObjects) -> Vec<Desired> {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let ns = names::namespace(&name);
    let namespace = match &host.namespace {
        None => Desired::new(
            conditions::NAMESPACE_READY,
            false,
            "Creating",
            format!("namespace {ns} does not exist yet"),
        ),
        Some(n) if phase_of(n) != "Active" => Desired::new(
            conditions::NAMESPACE_READY,
            false,
            "Terminating",
            format!("{}; waiting to recreate it", terminating_reason(n)),
        ),
        Some(_) => Desired::new(
            conditions::NAMESPACE_READY,
            true,
            "Active",
            format!("namespace {ns} is active"),
        ),
    };
    let quota = match (&host.quota, &host.limit_range) {
        (None, _) => Desired::new(
            conditions::QUOTA_READY,
            false,
            "Creating",
            format!("ResourceQuota {ns}/{} does not exist yet", names::QUOTA),
        ),
        (_, None) => Desired::new(
            conditions::QUOTA_READY,
            false,
            "Creating",
            format!("LimitRange {ns}/{} does not exist yet", names::LIMIT_RANGE),
        ),
        (Some(q), Some(_)) if !quota_enforced(tenant, config, q) => Desired::new(
            conditions::QUOTA_READY,
            false,
            "WaitingForQuotaController",
            format!(
                "ResourceQuota {ns}/{} is not enforced yet: the quota controller has not computed its status for the current limits",
                names::QUOTA
            ),
        ),
        _ => Desired::new(
            conditions::QUOTA_READY,
            true,
            "Enforced",
            format!(
                "ResourceQuota {ns}/{} and LimitRange {ns}/{} are enforced",
                names::QUOTA,
                names::LIMIT_RANGE
            ),
        ),
    };
    let rbac = match &host.owner_binding {
        None => Desired::new(
            conditions::RBAC_READY,
            false,
            "Creating",
            format!(
                "RoleBinding {ns}/{} does not exist yet",
                names::OWNER_ROLE_BINDING
            ),
        ),
        Some(_) => Desired::new(
            conditions::RBAC_READY,
            true,
            "Bound",
            format!(
                "{} is bound to ClusterRole {} in namespace {ns} only",
                tenant.spec.owner,
                names::OWNER_CLUSTER_ROLE
            ),
        ),
    };
    let policy = match &host.network_policy {
        None => Desired::new(
            conditions::NETWORK_POLICY_READY,
            false,
            "Creating",
            format!(
                "NetworkPolicy {ns}/{} does not exist yet",
                names::NETWORK_POLICY
            ),
        ),
        Some(_) => Desired::new(
            conditions::NETWORK_POLICY_READY,
            true,
            "Isolated",
            format!(
                "NetworkPolicy {ns}/{} admits traffic only from the namespace and platform namespaces, \
                 and lets pods reach only the namespace, cluster DNS{}",
                names::NETWORK_POLICY,
                if config.egress.internet {
                    " and internet addresses outside private ranges"
                } else {
                    ""
                }
            ),
        ),
    };
    vec![namespace, quota, rbac, policy]
}

/// The Ready message. Until the tenant control plane is provisioned by the operator, Ready
/// means the host side is in place, and the message says so.
pub fn ready_message(tenant: &Tenant) -> String {
    let ns = names::namespace(tenant.metadata.name.as_deref().unwrap_or_default());
    format!(
        "host side ready: namespace {ns} with its quota, container defaults, owner access and network isolation; \
         the tenant control plane is not provisioned by this version yet"
    )
}

/// Quota hard limits and usage as the host computed them.
pub fn quota_status(quota: Option<&ResourceQuota>) -> Option<QuotaStatus> {
    let status = quota?.status.as_ref()?;
    Some(QuotaStatus {
        hard: status.hard.clone().unwrap_or_default(),
        used: status.used.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::{
        api::core::v1::{NamespaceCondition, NamespaceStatus, ResourceQuotaStatus},
        apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
    };

    use super::*;
    use crate::api::TenantSpec;

    fn tenant() -> Tenant {
        Tenant::new(
            "team-atlas",
            TenantSpec::new("alice@example.com", "8", "16Gi", None),
        )
    }

    fn namespace_labelled(label: Option<&str>) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some("kubespaces-tenant-team-atlas".into()),
                labels: label
                    .map(|l| BTreeMap::from([(names::TENANT_LABEL.to_owned(), l.to_owned())])),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn enforced(mut q: ResourceQuota, t: &Tenant) -> ResourceQuota {
        let mut hard = build::quota_hard(t, &HostConfig::default());
        hard.insert("requests.cpu".into(), Quantity("8000m".into())); // canonical form differs
        q.status = Some(ResourceQuotaStatus {
            hard: Some(hard),
            used: None,
        });
        q
    }

    fn complete(t: &Tenant) -> HostObjects {
        let host = HostConfig::default();
        HostObjects {
            namespace: Some(namespace_labelled(Some("team-atlas"))),
            quota: Some(enforced(build::quota(t, &host), t)),
            limit_range: Some(build::limit_range(t, &host)),
            owner_binding: Some(build::owner_binding(t)),
            network_policy: Some(build::network_policy(t, &host)),
        }
    }

    #[test]
    fn a_namespace_of_another_tenant_or_nobody_is_a_conflict() {
        let t = tenant();
        assert!(namespace_conflict(&t, None).is_none());
        let made = build::namespace(&t, &HostConfig::default());
        assert!(namespace_conflict(&t, Some(&made)).is_none());
        let (reason, message) =
            namespace_conflict(&t, Some(&namespace_labelled(Some("other")))).unwrap();
        assert_eq!(reason, "NamespaceConflict");
        assert!(
            message.contains("kubespaces-tenant-team-atlas") && message.contains("tenant other"),
            "{message}"
        );
        let (_, message) = namespace_conflict(&t, Some(&namespace_labelled(None))).unwrap();
        assert!(message.contains("not created by KubeSpaces"), "{message}");
    }

    #[test]
    fn an_orphaned_namespace_goes_only_to_a_tenant_of_the_same_owner() {
        let t = tenant();
        // What deletionPolicy: Orphan leaves: labels and annotation, no owner reference.
        let mut orphaned = build::namespace(&t, &HostConfig::default());
        orphaned.metadata.owner_references = None;
        assert!(
            namespace_conflict(&t, Some(&orphaned)).is_none(),
            "same owner"
        );
        let mut other = t.clone();
        other.spec.owner = "mallory@example.com".into();
        let (reason, message) = namespace_conflict(&other, Some(&orphaned)).unwrap();
        assert_eq!(reason, "NamespaceConflict");
        assert!(
            message.contains("another owner") && !message.contains(&t.spec.owner),
            "names no one: {message}"
        );
        // Without the annotation (nothing says whose it was), nobody takes it over.
        assert!(namespace_conflict(&t, Some(&namespace_labelled(Some("team-atlas")))).is_some());
        // Held by a Tenant object: the tenant's, whatever the annotation says.
        other.metadata.uid = Some("uid-of-the-other".into());
        let made = build::namespace(&other, &HostConfig::default());
        assert!(made.metadata.owner_references.is_some());
        assert!(namespace_conflict(&t, Some(&made)).is_none());
    }

    #[test]
    fn everything_in_place_is_all_true() {
        let t = tenant();
        let d = details(&t, &HostConfig::default(), &complete(&t));
        assert!(d.iter().all(|c| c.status), "{d:?}");
    }

    #[test]
    fn each_missing_object_is_named() {
        let t = tenant();
        let mut host = complete(&t);
        host.limit_range = None;
        let d = details(&t, &HostConfig::default(), &host);
        let q = d
            .iter()
            .find(|c| c.type_ == conditions::QUOTA_READY)
            .unwrap();
        assert!(
            !q.status
                && q.message
                    .contains("LimitRange kubespaces-tenant-team-atlas/tenant-defaults"),
            "{q:?}"
        );
        host.network_policy = None;
        host.owner_binding = None;
        let d = details(&t, &HostConfig::default(), &host);
        assert!(d.iter().any(|c| {
            !c.status
                && c.message
                    .contains("NetworkPolicy kubespaces-tenant-team-atlas/tenant-isolation")
        }));
        assert!(d.iter().any(|c| {
            !c.status
                && c.message
                    .contains("RoleBinding kubespaces-tenant-team-atlas/tenant-owner")
        }));
    }

    #[test]
    fn a_quota_is_ready_only_once_computed_for_the_current_spec() {
        let mut t = tenant();
        let config = HostConfig::default();
        let q = enforced(build::quota(&t, &config), &t);
        assert!(quota_enforced(&t, &config, &q));
        assert!(
            !quota_enforced(&t, &config, &build::quota(&t, &config)),
            "no status yet"
        );
        t.spec.resources.cpu = Quantity("12".into());
        assert!(
            !quota_enforced(&t, &config, &q),
            "status still shows the old limit"
        );
        let mut more_pods = config.clone();
        more_pods.counts.pods += 1;
        assert!(
            !quota_enforced(&tenant(), &more_pods, &q),
            "status still shows the old object counts"
        );
    }

    #[test]
    fn a_terminating_namespace_says_what_is_left() {
        let mut ns = namespace_labelled(Some("team-atlas"));
        ns.status = Some(NamespaceStatus {
            phase: Some("Terminating".into()),
            conditions: Some(vec![NamespaceCondition {
                type_: "NamespaceContentRemaining".into(),
                status: "True".into(),
                message: Some(
                    "Some resources are remaining: pods. has 2 resource instances".into(),
                ),
                ..Default::default()
            }]),
        });
        assert_eq!(
            terminating_reason(&ns),
            "namespace kubespaces-tenant-team-atlas is terminating: Some resources are remaining: pods. has 2 resource instances"
        );
        let t = tenant();
        let mut host = complete(&t);
        host.namespace = Some(ns);
        let d = details(&t, &HostConfig::default(), &host);
        assert_eq!(d[0].reason, "Terminating");
    }
}
