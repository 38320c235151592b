//! Pure builders of the host objects of a tenant: from the Tenant and the operator
//! configuration to complete objects ready for server-side apply. No client here.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        admissionregistration::v1::{
            JSONPatch, MatchResources, MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding,
            MutatingAdmissionPolicyBindingSpec, MutatingAdmissionPolicySpec, Mutation,
            NamedRuleWithOperations,
        },
        core::v1::{
            LimitRange, LimitRangeItem, LimitRangeSpec, Namespace, ResourceQuota, ResourceQuotaSpec,
        },
        networking::v1::{
            IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule,
            NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
        },
        rbac::v1::{ClusterRole, PolicyRule, RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, ObjectMeta},
        util::intstr::IntOrString,
    },
};
use kube::Resource;

use crate::{api::Tenant, names};
use settings::HostConfig;

pub mod access;
mod bounds;
pub mod control_plane;
mod control_plane_guard;
pub mod desired;
mod guards;
mod placement;
pub mod settings;
pub mod sleep;
pub use bounds::{CHART_CLUSTER_ROLE_READS, operator_bounds};
pub use control_plane_guard::{control_plane_objects_guard, control_plane_references_guard};
pub use guards::{
    apps_certificate_guard, control_plane_pod_guard, endpoints_guard, ingress_guard,
    role_binding_guard, route_guard, service_guard,
};
pub use placement::{placement_guard, volume_claim_guard};

/// Labels on every object the operator creates for `tenant`.
pub fn labels(tenant: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::TENANT_LABEL.to_owned(), tenant.to_owned()),
        (
            names::MANAGED_BY_LABEL.to_owned(),
            names::MANAGED_BY.to_owned(),
        ),
    ])
}

/// Metadata of an install object the operator generates (roles, admission policies): its name and
/// the managed-by label, nothing tenant-specific.
pub fn install_meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([(
            names::MANAGED_BY_LABEL.to_owned(),
            names::MANAGED_BY.to_owned(),
        )])),
        ..ObjectMeta::default()
    }
}

fn meta(tenant: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(names::namespace(tenant)),
        labels: Some(labels(tenant)),
        ..ObjectMeta::default()
    }
}

/// The tenant namespace. It carries an owner reference to the Tenant so the garbage collector
/// removes it even if the finalizer is forced off; with `deletionPolicy: Orphan` the operator
/// removes that reference before letting go.
pub fn namespace(tenant: &Tenant, host: &HostConfig) -> Namespace {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let mut labels = labels(&name);
    // Each level is pinned to a version of the standards: a cluster upgrade that tightens or
    // loosens them changes nothing here until the operator is configured to.
    for mode in ["enforce", "audit", "warn"] {
        let level = if mode == "enforce" {
            host.pod_security.as_str()
        } else {
            "restricted"
        };
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            level.to_owned(),
        );
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}-version"),
            host.pod_security_version.clone(),
        );
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(names::namespace(&name)),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([
                (
                    names::OWNER_ANNOTATION.to_owned(),
                    tenant.spec.owner.clone(),
                ),
                (
                    names::APPS_DOMAIN_ANNOTATION.to_owned(),
                    names::apps_domain(&name, &host.base_domain),
                ),
            ])),
            owner_references: tenant.controller_owner_ref(&()).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// Quota keys and values for a tenant's spec: each budget caps both requests and limits, so a
/// tenant can never use more than it was given; without a storage budget no storage is claimable.
/// Object counts are capped too (the shared etcd is a budget of its own), and node ports and
/// load balancers, which would expose the tenant past its NetworkPolicy and the platform's
/// gateway, are none unless configured.
pub fn quota_hard(tenant: &Tenant, host: &HostConfig) -> BTreeMap<String, Quantity> {
    let r = &tenant.spec.resources;
    let storage = r.storage.clone().unwrap_or_else(|| Quantity("0".into()));
    let c = &host.counts;
    let count = |n: u32| Quantity(n.to_string());
    let mut hard = BTreeMap::from([
        ("requests.cpu".to_owned(), r.cpu.clone()),
        ("limits.cpu".to_owned(), r.cpu.clone()),
        ("requests.memory".to_owned(), r.memory.clone()),
        ("limits.memory".to_owned(), r.memory.clone()),
        ("requests.storage".to_owned(), storage),
        // The node's disk is shared too: containers' writable layers, logs and emptyDirs.
        (
            "requests.ephemeral-storage".to_owned(),
            Quantity(host.ephemeral_storage.clone()),
        ),
        (
            "limits.ephemeral-storage".to_owned(),
            Quantity(host.ephemeral_storage.clone()),
        ),
        ("pods".to_owned(), count(c.pods)),
        ("services".to_owned(), count(c.services)),
        ("secrets".to_owned(), count(c.secrets)),
        ("configmaps".to_owned(), count(c.configmaps)),
        (
            "persistentvolumeclaims".to_owned(),
            count(c.persistentvolumeclaims),
        ),
        ("services.nodeports".to_owned(), count(c.nodeports)),
        ("services.loadbalancers".to_owned(), count(c.loadbalancers)),
    ]);
    // The control plane runs in the namespace but is not the tenant's to pay for.
    for (key, extra) in &host.control_plane_footprint {
        if let Some(v) = hard.get_mut(key) {
            *v = crate::build::control_plane::footprint::add(key, v, extra);
        }
    }
    hard
}

pub fn quota(tenant: &Tenant, host: &HostConfig) -> ResourceQuota {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    ResourceQuota {
        metadata: meta(&name, names::QUOTA),
        spec: Some(ResourceQuotaSpec {
            hard: Some(quota_hard(tenant, host)),
            ..ResourceQuotaSpec::default()
        }),
        ..ResourceQuota::default()
    }
}

/// Container defaults, so pods that state no resources still fit the quota (which requires
/// requests and limits for cpu, memory and ephemeral storage on every pod).
pub fn limit_range(tenant: &Tenant, host: &HostConfig) -> LimitRange {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    LimitRange {
        metadata: meta(&name, names::LIMIT_RANGE),
        spec: Some(LimitRangeSpec {
            limits: vec![container_defaults(host)],
        }),
    }
}

/// The LimitRange's one item; the control plane's footprint is counted with it too.
pub fn container_defaults(host: &HostConfig) -> LimitRangeItem {
    let quantities = |cpu: &str, memory: &str, ephemeral: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
            (
                "ephemeral-storage".to_owned(),
                Quantity(ephemeral.to_owned()),
            ),
        ])
    };
    LimitRangeItem {
        type_: "Container".into(),
        default: Some(quantities(
            &host.default_cpu_limit,
            &host.default_memory_limit,
            &host.default_ephemeral_storage_limit,
        )),
        default_request: Some(quantities(
            &host.default_cpu_request,
            &host.default_memory_request,
            &host.default_ephemeral_storage_request,
        )),
        ..LimitRangeItem::default()
    }
}

/// The owner's access on the host: the tenant-owner ClusterRole, bound in the tenant namespace
/// only.
pub fn owner_binding(tenant: &Tenant) -> RoleBinding {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    RoleBinding {
        metadata: meta(&name, names::OWNER_ROLE_BINDING),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: names::OWNER_CLUSTER_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "User".into(),
            name: tenant.spec.owner.clone(),
            namespace: None,
        }]),
    }
}

/// Isolation both ways. In: pods accept connections only from their own namespace and from
/// platform namespaces (ingress gateways, monitoring). Out: pods open connections only to their
/// own namespace, to cluster DNS, and (when configured) to the internet — every IPv4 address
/// outside the configured private and special ranges, so never to other tenants, the nodes,
/// the control plane, kube-system or the cloud metadata service.
pub fn network_policy(tenant: &Tenant, host: &HostConfig) -> NetworkPolicy {
    let name = tenant.metadata.name.clone().unwrap_or_default();
    let selector = |labels: &[(&str, &str)]| LabelSelector {
        match_labels: Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..LabelSelector::default()
    };
    let same_namespace = NetworkPolicyPeer {
        pod_selector: Some(LabelSelector::default()),
        ..NetworkPolicyPeer::default()
    };
    let platform = NetworkPolicyPeer {
        namespace_selector: Some(selector(&[(names::PLATFORM_NAMESPACE_LABEL, "true")])),
        ..NetworkPolicyPeer::default()
    };
    let dns = NetworkPolicyPeer {
        namespace_selector: Some(selector(&[(
            names::NAMESPACE_NAME_LABEL,
            names::DNS_NAMESPACE,
        )])),
        pod_selector: Some(selector(&[names::DNS_POD_LABEL])),
        ..NetworkPolicyPeer::default()
    };
    let dns_ports = host
        .egress
        .dns_ports
        .iter()
        .flat_map(|&port| {
            ["UDP", "TCP"].map(|protocol| NetworkPolicyPort {
                port: Some(IntOrString::Int(port.into())),
                protocol: Some(protocol.into()),
                end_port: None,
            })
        })
        .collect();
    let mut egress = vec![
        NetworkPolicyEgressRule {
            to: Some(vec![same_namespace.clone()]),
            ports: None,
        },
        NetworkPolicyEgressRule {
            to: Some(vec![dns]),
            ports: Some(dns_ports),
        },
    ];
    if host.egress.internet {
        egress.push(NetworkPolicyEgressRule {
            to: Some(vec![NetworkPolicyPeer {
                ip_block: Some(IPBlock {
                    cidr: "0.0.0.0/0".into(),
                    except: Some(host.egress.except.clone()),
                }),
                ..NetworkPolicyPeer::default()
            }]),
            ports: None,
        });
    }
    NetworkPolicy {
        metadata: meta(&name, names::NETWORK_POLICY),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![same_namespace, platform]),
                ports: None,
            }]),
            egress: Some(egress),
        }),
    }
}

/// What a tenant owner may do inside their namespace. Workloads and their configuration, yes;
/// the quota, the limits and the isolation policy the platform put there, read-only. Role
/// bindings inside the namespace are allowed: RBAC escalation checks keep them within this role,
/// and an admission policy ([`role_binding_guard`]) keeps them from granting it to everyone.
/// Endpoints and EndpointSlices are read-only and `services/proxy` is not granted: with them a
/// selector-less Service could be pointed at any address, another tenant's pod included, and
/// reached through the API server past every NetworkPolicy (the CVE-2021-25740 pattern).
pub fn owner_cluster_role() -> ClusterRole {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    let all = [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
    ];
    let read = ["get", "list", "watch"];
    ClusterRole {
        metadata: install_meta(names::OWNER_CLUSTER_ROLE),
        rules: Some(vec![
            rule(
                &[""],
                &[
                    "pods",
                    "pods/log",
                    "pods/exec",
                    "pods/attach",
                    "pods/portforward",
                    "pods/eviction",
                    "services",
                    "configmaps",
                    "secrets",
                    "persistentvolumeclaims",
                    "serviceaccounts",
                    "serviceaccounts/token",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                ],
                &all,
            ),
            rule(&["", "events.k8s.io"], &["events"], &read),
            rule(
                &[""],
                &[
                    "resourcequotas",
                    "limitranges",
                    "namespaces",
                    "pods/status",
                    "endpoints",
                ],
                &read,
            ),
            rule(
                &["apps"],
                &[
                    "deployments",
                    "deployments/scale",
                    "statefulsets",
                    "statefulsets/scale",
                    "daemonsets",
                    "replicasets",
                    "replicasets/scale",
                    "controllerrevisions",
                ],
                &all,
            ),
            rule(&["batch"], &["jobs", "cronjobs"], &all),
            rule(&["autoscaling"], &["horizontalpodautoscalers"], &all),
            rule(&["policy"], &["poddisruptionbudgets"], &all),
            rule(&["networking.k8s.io"], &["ingresses"], &all),
            rule(&["networking.k8s.io"], &["networkpolicies"], &read),
            rule(&["discovery.k8s.io"], &["endpointslices"], &read),
            rule(&["coordination.k8s.io"], &["leases"], &all),
            rule(
                &["rbac.authorization.k8s.io"],
                &["roles", "rolebindings"],
                &all,
            ),
        ]),
        ..ClusterRole::default()
    }
}

/// A MutatingAdmissionPolicy (and its binding) that puts the teardown finalizer on every Tenant
/// as it is created, inside the API server: the operator then needs no write of its own for it.
/// Where the policy is not installed (or fails: `failurePolicy: Ignore`), the operator adds the
/// finalizer itself.
pub fn finalizer_admission_policy() -> (MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding) {
    let name = "kubespaces-tenant-finalizer";
    let meta = || install_meta(name);
    let policy = MutatingAdmissionPolicy {
        metadata: meta(),
        spec: Some(MutatingAdmissionPolicySpec {
            failure_policy: Some("Ignore".into()),
            reinvocation_policy: Some("Never".into()),
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![NamedRuleWithOperations {
                    api_groups: Some(vec![Tenant::group(&()).into()]),
                    api_versions: Some(vec!["*".into()]),
                    operations: Some(vec!["CREATE".into()]),
                    resources: Some(vec![Tenant::plural(&()).into()]),
                    ..NamedRuleWithOperations::default()
                }]),
                ..MatchResources::default()
            }),
            // A JSON patch, not an apply configuration: the latter needs the Tenant's OpenAPI
            // schema, which the API server publishes only seconds after the CRD is Established,
            // and creates fail with 503 until then.
            mutations: Some(vec![Mutation {
                patch_type: "JSONPatch".into(),
                json_patch: Some(JSONPatch {
                    expression: Some(format!(
                        "!has(object.metadata.finalizers) ? \
                         [JSONPatch{{op: \"add\", path: \"/metadata/finalizers\", value: [\"{f}\"]}}] : \
                         (\"{f}\" in object.metadata.finalizers ? [] : \
                         [JSONPatch{{op: \"add\", path: \"/metadata/finalizers/-\", value: \"{f}\"}}])",
                        f = names::FINALIZER
                    )),
                }),
                apply_configuration: None,
            }]),
            ..MutatingAdmissionPolicySpec::default()
        }),
    };
    let binding = MutatingAdmissionPolicyBinding {
        metadata: meta(),
        spec: Some(MutatingAdmissionPolicyBindingSpec {
            policy_name: Some(name.into()),
            ..Default::default()
        }),
    };
    (policy, binding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TenantSpec;

    fn tenant(storage: Option<&str>) -> Tenant {
        let mut t = Tenant::new(
            "team-atlas",
            TenantSpec::new("alice@example.com", "8", "16Gi", storage),
        );
        t.metadata.uid = Some("uid-1".into());
        t
    }

    #[test]
    fn namespace_is_named_labelled_owned_and_pod_security_enforced() {
        let ns = namespace(&tenant(None), &HostConfig::default());
        assert_eq!(
            ns.metadata.name.as_deref(),
            Some("kubespaces-tenant-team-atlas")
        );
        let labels = ns.metadata.labels.unwrap();
        assert_eq!(labels[names::TENANT_LABEL], "team-atlas");
        assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
        assert_eq!(labels["pod-security.kubernetes.io/warn"], "restricted");
        for mode in ["enforce", "audit", "warn"] {
            assert_eq!(
                labels[&format!("pod-security.kubernetes.io/{mode}-version")],
                "v1.37",
                "{mode} is pinned"
            );
        }
        let owner = &ns.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Tenant", "team-atlas", "uid-1")
        );
        assert_eq!(owner.controller, Some(true));
    }

    #[test]
    fn quota_caps_requests_and_limits_and_storage() {
        let host = HostConfig::default();
        let hard = quota(&tenant(Some("50Gi")), &host)
            .spec
            .unwrap()
            .hard
            .unwrap();
        assert_eq!(hard["requests.cpu"].0, "8");
        assert_eq!(hard["limits.cpu"].0, "8");
        assert_eq!(hard["requests.memory"].0, "16Gi");
        assert_eq!(hard["limits.memory"].0, "16Gi");
        assert_eq!(hard["requests.storage"].0, "50Gi");
        let no_storage = quota_hard(&tenant(None), &host);
        assert_eq!(
            no_storage["requests.storage"].0, "0",
            "no storage budget means no claimable storage"
        );
    }

    #[test]
    fn every_namespaced_child_lives_in_the_tenant_namespace_with_the_tenant_label() {
        let t = tenant(None);
        let host = HostConfig::default();
        let metas = [
            quota(&t, &host).metadata,
            limit_range(&t, &host).metadata,
            owner_binding(&t).metadata,
            network_policy(&t, &host).metadata,
        ];
        for m in metas {
            assert_eq!(m.namespace.as_deref(), Some("kubespaces-tenant-team-atlas"));
            assert_eq!(m.labels.unwrap()[names::TENANT_LABEL], "team-atlas");
        }
    }

    #[test]
    fn limit_range_defaults_come_from_the_configuration() {
        let host = HostConfig {
            default_cpu_limit: "1".into(),
            ..HostConfig::default()
        };
        let item = &limit_range(&tenant(None), &host).spec.unwrap().limits[0];
        assert_eq!(item.type_, "Container");
        assert_eq!(item.default.as_ref().unwrap()["cpu"].0, "1");
        assert_eq!(item.default_request.as_ref().unwrap()["memory"].0, "128Mi");
    }

    #[test]
    fn the_owner_is_bound_as_a_user_to_the_owner_role() {
        let b = owner_binding(&tenant(None));
        assert_eq!(b.role_ref.kind, "ClusterRole");
        assert_eq!(b.role_ref.name, names::OWNER_CLUSTER_ROLE);
        let s = &b.subjects.unwrap()[0];
        assert_eq!(
            (s.kind.as_str(), s.name.as_str()),
            ("User", "alice@example.com")
        );
    }

    #[test]
    fn quota_caps_object_counts_and_closes_node_ports_and_load_balancers() {
        let host = HostConfig::default();
        let hard = quota_hard(&tenant(None), &host);
        for (key, value) in [
            ("pods", "200"),
            ("services", "50"),
            ("secrets", "200"),
            ("configmaps", "200"),
            ("persistentvolumeclaims", "50"),
            ("services.nodeports", "0"),
            ("services.loadbalancers", "0"),
        ] {
            assert_eq!(hard[key].0, value, "{key}");
        }
        let mut open = host.clone();
        open.counts.nodeports = 3;
        open.counts.pods = 10;
        let hard = quota_hard(&tenant(None), &open);
        assert_eq!(
            (
                hard["services.nodeports"].0.as_str(),
                hard["pods"].0.as_str()
            ),
            ("3", "10")
        );
    }

    #[test]
    fn a_quota_read_back_from_the_api_server_is_not_drift() {
        // The API server stores the quota as sent, plus status; counts are plain integers that
        // it keeps as written. Nothing to write on the next resync.
        let host = HostConfig::default();
        let desired = serde_json::to_value(quota(&tenant(Some("50Gi")), &host)).unwrap();
        let mut observed = desired.clone();
        observed["metadata"]["uid"] = "u".into();
        observed["spec"]["hard"]["requests.cpu"] = "8000m".into();
        observed["status"] = serde_json::json!({"hard": observed["spec"]["hard"].clone()});
        assert!(!crate::observe::drift::needs_apply(
            &desired,
            Some(&observed)
        ));
        observed["spec"]["hard"]["services.nodeports"] = "1".into();
        assert!(crate::observe::drift::needs_apply(
            &desired,
            Some(&observed)
        ));
    }

    fn peer_labels(selector: &Option<LabelSelector>) -> BTreeMap<String, String> {
        selector
            .as_ref()
            .and_then(|s| s.match_labels.clone())
            .unwrap_or_default()
    }

    #[test]
    fn ingress_admits_only_the_namespace_and_the_platform() {
        let spec = network_policy(&tenant(None), &HostConfig::default())
            .spec
            .unwrap();
        assert_eq!(
            spec.pod_selector,
            Some(LabelSelector::default()),
            "selects every pod"
        );
        assert_eq!(
            spec.policy_types,
            Some(vec!["Ingress".to_owned(), "Egress".to_owned()]),
            "isolated both ways"
        );
        let ingress = spec.ingress.unwrap();
        assert_eq!(ingress.len(), 1);
        assert!(ingress[0].ports.is_none());
        let from = ingress[0].from.clone().unwrap();
        assert_eq!(from.len(), 2);
        assert_eq!(from[0].pod_selector, Some(LabelSelector::default()));
        assert!(
            from[0].namespace_selector.is_none(),
            "first peer: same namespace only"
        );
        assert_eq!(
            peer_labels(&from[1].namespace_selector),
            BTreeMap::from([(names::PLATFORM_NAMESPACE_LABEL.into(), "true".into())]),
            "second peer: platform namespaces"
        );
        assert!(from[1].pod_selector.is_none() && from[1].ip_block.is_none());
    }

    #[test]
    fn egress_reaches_the_namespace_dns_and_the_internet_only() {
        let spec = network_policy(&tenant(None), &HostConfig::default())
            .spec
            .unwrap();
        let egress = spec.egress.unwrap();
        assert_eq!(egress.len(), 3);

        // 1. Every pod of the same namespace, any port.
        let to = egress[0].to.clone().unwrap();
        assert_eq!(to.len(), 1);
        assert_eq!(to[0].pod_selector, Some(LabelSelector::default()));
        assert!(to[0].namespace_selector.is_none() && egress[0].ports.is_none());

        // 2. Only the DNS pods of kube-system, only on DNS ports.
        let to = egress[1].to.clone().unwrap();
        assert_eq!(to.len(), 1);
        assert_eq!(
            peer_labels(&to[0].namespace_selector),
            BTreeMap::from([("kubernetes.io/metadata.name".into(), "kube-system".into())])
        );
        assert_eq!(
            peer_labels(&to[0].pod_selector),
            BTreeMap::from([("k8s-app".into(), "kube-dns".into())])
        );
        let ports: Vec<(String, i32)> = egress[1]
            .ports
            .clone()
            .unwrap()
            .into_iter()
            .map(|p| {
                let Some(IntOrString::Int(n)) = p.port.clone() else {
                    panic!("numeric port expected: {p:?}")
                };
                assert!(p.end_port.is_none());
                (p.protocol.unwrap(), n)
            })
            .collect();
        assert_eq!(
            ports,
            [
                ("UDP".to_owned(), 53),
                ("TCP".to_owned(), 53),
                ("UDP".to_owned(), 1053),
                ("TCP".to_owned(), 1053)
            ]
        );

        // 3. The internet: everything but private, shared, link-local and loopback ranges.
        let to = egress[2].to.clone().unwrap();
        assert_eq!(to.len(), 1);
        assert!(to[0].pod_selector.is_none() && to[0].namespace_selector.is_none());
        let block = to[0].ip_block.clone().unwrap();
        assert_eq!(block.cidr, "0.0.0.0/0");
        let except = block.except.unwrap();
        for private in [
            "10.0.0.0/8",
            "172.16.0.0/12",
            "192.168.0.0/16",
            "100.64.0.0/10",
            "169.254.0.0/16",
            "127.0.0.0/8",
        ] {
            assert!(except.iter().any(|e| e == private), "{private} excepted");
        }
        assert!(egress[2].ports.is_none());
    }

    #[test]
    fn without_internet_egress_pods_reach_only_the_namespace_and_dns() {
        let mut host = HostConfig::default();
        host.egress.internet = false;
        host.egress.dns_ports = vec![53];
        let egress = network_policy(&tenant(None), &host)
            .spec
            .unwrap()
            .egress
            .unwrap();
        assert_eq!(egress.len(), 2);
        assert!(
            egress
                .iter()
                .all(|rule| { rule.to.iter().flatten().all(|peer| peer.ip_block.is_none()) })
        );
        assert_eq!(egress[1].ports.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn the_owner_cannot_change_what_the_platform_enforces() {
        let rules = owner_cluster_role().rules.unwrap();
        let can_write = |group: &str, resource: &str| {
            rules.iter().any(|r| {
                r.api_groups.as_ref().unwrap().iter().any(|g| g == group)
                    && r.resources.as_ref().unwrap().iter().any(|x| x == resource)
                    && r.verbs
                        .iter()
                        .any(|v| v == "update" || v == "delete" || v == "create")
            })
        };
        assert!(can_write("apps", "deployments"));
        assert!(can_write("", "secrets"));
        assert!(!can_write("", "resourcequotas"));
        assert!(!can_write("", "limitranges"));
        assert!(!can_write("networking.k8s.io", "networkpolicies"));
        assert!(!can_write("", "namespaces"));
    }

    #[test]
    fn the_owner_cannot_point_a_service_anywhere_or_proxy_through_the_api_server() {
        let rules = owner_cluster_role().rules.unwrap();
        let grants = |group: &str, resource: &str, verbs: &[&str]| {
            rules.iter().any(|r| {
                let groups = r.api_groups.clone().unwrap_or_default();
                let resources = r.resources.clone().unwrap_or_default();
                (groups.iter().any(|g| g == group || g == "*"))
                    && resources.iter().any(|x| x == resource || x == "*")
                    && r.verbs
                        .iter()
                        .any(|v| v == "*" || verbs.contains(&v.as_str()))
            })
        };
        let write = ["create", "update", "patch", "delete", "deletecollection"];
        assert!(!grants("", "endpoints", &write));
        assert!(!grants("discovery.k8s.io", "endpointslices", &write));
        // Any verb on services/proxy is a request through the API server to any endpoint.
        assert!(!grants(
            "",
            "services/proxy",
            &["get", "create", "update", "patch", "delete"]
        ));
        // Reading them still helps debugging.
        assert!(grants("", "endpoints", &["get"]));
        assert!(grants("discovery.k8s.io", "endpointslices", &["list"]));
        assert!(grants("", "services", &["create"]));
        assert!(
            rules.iter().all(|r| !r.verbs.iter().any(|v| v == "*")
                && !r.resources.iter().flatten().any(|x| x == "*")),
            "no wildcards"
        );
    }
}
