//! ValidatingAdmissionPolicies that close what RBAC alone leaves open in a tenant namespace.
//! The owner may write RoleBindings, Services, Ingresses and pods there, and so may its
//! vCluster's syncer (which also writes Endpoints and routes); these policies refuse the few
//! shapes of them that would reach past the namespace (`control_plane_guard` keeps both off the
//! control plane's own objects). CEL, evaluated inside the API server: no
//! webhook to run or to fail open.

use k8s_openapi::{
    api::admissionregistration::v1::{
        MatchCondition, MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
        ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingSpec,
        ValidatingAdmissionPolicySpec, Validation, Variable,
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
};

use crate::names;

/// Groups that stand for everyone, or for every ServiceAccount of some or all namespaces, and
/// the user every unauthenticated request runs as: a binding to any of them hands the
/// namespace to people nobody chose.
const EVERYONE_GROUPS: [&str; 3] = [
    "system:authenticated",
    "system:unauthenticated",
    "system:serviceaccounts",
];
const SERVICE_ACCOUNTS_GROUP_PREFIX: &str = "system:serviceaccounts:";
const ANONYMOUS_USER: &str = "system:anonymous";
/// The user name a ServiceAccount's tokens authenticate as: `system:serviceaccount:<ns>:<name>`.
const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";
/// Who writes Endpoints and EndpointSlices, and the control plane's pods, for the cluster: the
/// controller-manager, as itself or (with `--use-service-account-credentials`) as each
/// controller's ServiceAccount.
const ENDPOINTS_WRITERS: [&str; 4] = [
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:endpoint-controller",
    "system:serviceaccount:kube-system:endpointslice-controller",
    "system:serviceaccount:kube-system:endpointslicemirroring-controller",
];
pub(super) const STATEFULSET_WRITERS: [&str; 2] = [
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:statefulset-controller",
];
/// True for requesters who may not both create ClusterRoleBindings and bind every ClusterRole.
/// Whoever may can already grant anyone anything cluster-wide, so the guard would stop nothing
/// there; it would only get in the way of platform administrators, e.g. binding a CI
/// ServiceAccount to read one Secret of a tenant namespace. Tenant owners hold no such right, and
/// neither does the operator: it creates ClusterRoleBindings but may bind only its own two roles
/// (and `bounds` pins which bindings), so these guards hold for its account too.
const CLUSTER_WIDE_GRANTOR: &str = "!(authorizer.group('rbac.authorization.k8s.io').resource('clusterrolebindings').check('create').allowed() && authorizer.group('rbac.authorization.k8s.io').resource('clusterroles').check('bind').allowed())";

/// Creates and updates of `group/resource` in namespaces that carry the tenant label.
pub(super) fn in_tenant_namespaces(group: &str, resource: &str) -> MatchResources {
    MatchResources {
        namespace_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: names::TENANT_LABEL.into(),
                operator: "Exists".into(),
                values: None,
            }]),
            ..LabelSelector::default()
        }),
        resource_rules: Some(vec![NamedRuleWithOperations {
            api_groups: Some(vec![group.into()]),
            api_versions: Some(vec!["*".into()]),
            operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
            resources: Some(vec![resource.into()]),
            ..NamedRuleWithOperations::default()
        }]),
        ..MatchResources::default()
    }
}

/// `['a', 'b']`, a CEL list of strings.
pub(super) fn cel_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// Requests by none of `users` and by nobody who may grant as much cluster-wide anyway.
pub(super) fn requester_not_in(users: &[&str]) -> Vec<MatchCondition> {
    vec![
        requester_cannot_grant_cluster_wide(),
        MatchCondition {
            name: "requester-is-no-controller-of-the-cluster".into(),
            expression: format!("!(request.userInfo.username in {})", cel_list(users)),
        },
    ]
}

/// Requests by nobody who may grant as much cluster-wide anyway ([`CLUSTER_WIDE_GRANTOR`]).
pub(super) fn requester_cannot_grant_cluster_wide() -> MatchCondition {
    MatchCondition {
        name: "requester-cannot-grant-cluster-wide".into(),
        expression: CLUSTER_WIDE_GRANTOR.into(),
    }
}

pub(super) fn variable(name: &str, expression: String) -> Variable {
    Variable {
        name: name.into(),
        expression,
    }
}

/// A refusal: `expression` must hold; `message_expression` says what was refused and what to
/// do instead (`message` is the fallback should that expression fail).
pub(super) fn deny_unless(
    expression: &str,
    message_expression: String,
    message: &str,
) -> Validation {
    Validation {
        expression: expression.into(),
        message_expression: Some(message_expression),
        message: Some(message.into()),
        reason: Some("Forbidden".into()),
    }
}

/// The policy with `validations` over `matching`, and its binding (deny, everywhere it matches).
pub(super) fn policy(
    name: &str,
    matching: MatchResources,
    conditions: Vec<MatchCondition>,
    variables: Vec<Variable>,
    validations: Vec<Validation>,
) -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let policy = ValidatingAdmissionPolicy {
        metadata: super::install_meta(name),
        spec: Some(ValidatingAdmissionPolicySpec {
            // A policy that cannot be evaluated refuses: these are the isolation's last line.
            failure_policy: Some("Fail".into()),
            match_constraints: Some(matching),
            match_conditions: (!conditions.is_empty()).then_some(conditions),
            variables: (!variables.is_empty()).then_some(variables),
            validations: Some(validations),
            ..ValidatingAdmissionPolicySpec::default()
        }),
        status: None,
    };
    let binding = ValidatingAdmissionPolicyBinding {
        metadata: super::install_meta(name),
        spec: ValidatingAdmissionPolicyBindingSpec {
            policy_name: name.into(),
            validation_actions: vec!["Deny".into()],
            ..ValidatingAdmissionPolicyBindingSpec::default()
        },
    };
    (policy, binding)
}

/// RoleBindings in a tenant namespace may not grant their role to everyone (the groups of all
/// users, of unauthenticated requests, of ServiceAccounts, or the anonymous user), nor to
/// ServiceAccounts of other namespaces: either would let people outside the tenant act inside
/// it with the owner's rights. It holds for everyone who could not grant as much cluster-wide
/// anyway ([`CLUSTER_WIDE_GRANTOR`]): tenant owners and their workloads, not the platform's admins.
pub fn role_binding_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let groups = EVERYONE_GROUPS
        .iter()
        .map(|g| format!("'{g}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let everyone = format!(
        "has(object.subjects) ? object.subjects.filter(s, \
         (s.kind == 'Group' && (s.name in [{groups}] || s.name.startsWith('{SERVICE_ACCOUNTS_GROUP_PREFIX}'))) || \
         (s.kind == 'User' && s.name == '{ANONYMOUS_USER}')) : []"
    );
    // An empty namespace on a ServiceAccount subject of a RoleBinding means the binding's own.
    // `s.namespace`, not the escaped `s.__namespace__` of CRD rules: admission policies on
    // Kubernetes 1.37 do not find the latter.
    // A ServiceAccount may also be named as a User, `system:serviceaccount:<ns>:<name>`: the
    // API server authenticates its tokens under that user name.
    let foreign = format!(
        "has(object.subjects) ? object.subjects.filter(s, \
         (s.kind == 'ServiceAccount' && has(s.namespace) && s.namespace != '' && \
         s.namespace != request.namespace) || \
         (s.kind == 'User' && s.name.startsWith('{SERVICE_ACCOUNT_USER_PREFIX}') && \
         !s.name.startsWith('{SERVICE_ACCOUNT_USER_PREFIX}' + request.namespace + ':'))) : []"
    );
    policy(
        names::ROLE_BINDING_GUARD,
        in_tenant_namespaces("rbac.authorization.k8s.io", "rolebindings"),
        vec![
            requester_cannot_grant_cluster_wide(),
            // The operator binds its control-plane role to its own ServiceAccount (in the
            // platform's namespace) in each tenant namespace. Only it may: binding that role
            // takes `bind` on it or holding all of its permissions (RBAC escalation check).
            MatchCondition {
                name: "not-the-operators-control-plane-binding".into(),
                expression: format!(
                    "!(object.roleRef.kind == 'ClusterRole' && object.roleRef.name == '{}')",
                    crate::build::access::CONTROL_PLANE_ROLE
                ),
            },
        ],
        vec![
            variable("everyone", everyone),
            variable("foreign", foreign),
        ],
        vec![
            deny_unless(
                "size(variables.everyone) == 0",
                "'RoleBinding ' + object.metadata.name + ' may not grant its role to ' + \
                 variables.everyone.map(s, s.kind + ' ' + s.name).join(', ') + \
                 ': in a tenant namespace, bind named users or groups, or ServiceAccounts of this namespace'"
                    .into(),
                "a RoleBinding in a tenant namespace may not grant its role to everyone \
                 (system:authenticated, system:unauthenticated, system:serviceaccounts*, \
                 system:anonymous)",
            ),
            deny_unless(
                "size(variables.foreign) == 0",
                "'RoleBinding ' + object.metadata.name + ' may not grant its role to ' + \
                 variables.foreign.map(s, s.kind == 'User' ? 'User ' + s.name : \
                 'ServiceAccount ' + s.namespace + '/' + s.name).join(', ') + \
                 ': in a tenant namespace, bind only ServiceAccounts of this namespace'"
                    .into(),
                "a RoleBinding in a tenant namespace may not grant its role to ServiceAccounts of \
                 other namespaces",
            ),
        ],
    )
}

/// Services in a tenant namespace may not set `spec.externalIPs`: kube-proxy on every node
/// would send traffic for those addresses, whoever's they are, to the tenant's pods
/// (CVE-2020-8554).
pub fn service_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    policy(
        names::SERVICE_GUARD,
        in_tenant_namespaces("", "services"),
        vec![],
        vec![],
        vec![deny_unless(
            "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
            "'Service ' + object.metadata.name + ' may not set spec.externalIPs (' + \
             object.spec.externalIPs.join(', ') + \
             '): in a tenant namespace a Service could capture traffic meant for those addresses \
             (CVE-2020-8554); expose it through the platform gateway instead'"
                .into(),
            "a Service in a tenant namespace may not set spec.externalIPs (CVE-2020-8554); expose \
             it through the platform gateway instead",
        )],
    )
}

/// HTTPRoutes and GRPCRoutes in a tenant namespace (the tenant's own, which its vCluster syncs
/// there) may only name hostnames under the tenant's apps domain, which the operator writes on
/// the namespace ([`names::APPS_DOMAIN_ANNOTATION`]; none there: every hostname is refused),
/// and may only attach to Gateways of their own namespace: one tenant can never take another's
/// app names or the API names. vCluster refuses such routes first; this holds even if it did
/// not. It applies to everyone, the platform's admins included: a route for another name
/// belongs in another namespace.
pub fn route_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let mut matching = in_tenant_namespaces("gateway.networking.k8s.io", "httproutes");
    if let Some(rule) = matching.resource_rules.as_mut().and_then(|r| r.first_mut()) {
        rule.resources = Some(vec!["httproutes".into(), "grpcroutes".into()]);
    }
    let domain = apps_domain_of_namespace();
    let foreign_hosts = "has(object.spec.hostnames) ? object.spec.hostnames.filter(h, \
         variables.domain == '' || !h.lowerAscii().endsWith('.' + variables.domain)) : []"
        .to_owned();
    // `p.namespace`, as for RoleBinding subjects above.
    let foreign_parents = "has(object.spec.parentRefs) ? object.spec.parentRefs.filter(p, \
         has(p.namespace) && p.namespace != '' && p.namespace != request.namespace) : []"
        .to_owned();
    policy(
        names::ROUTE_GUARD,
        matching,
        vec![],
        vec![
            variable("domain", domain),
            variable("foreignHosts", foreign_hosts),
            variable("foreignParents", foreign_parents),
        ],
        vec![
            deny_unless(
                "size(variables.foreignHosts) == 0",
                "request.kind.kind + ' ' + object.metadata.name + ': spec.hostnames ' + \
                 variables.foreignHosts.join(', ') + (variables.domain == '' ? \
                 ' refused: this namespace has no apps domain' : \
                 ' not under *.' + variables.domain + \
                 ': a tenant may route only its own apps hostnames (<app>.' + variables.domain + ')')"
                    .into(),
                "a route in a tenant namespace may only use hostnames under the tenant's apps \
                 domain (<app>.<tenant>.apps.<base domain>)",
            ),
            deny_unless(
                "size(variables.foreignParents) == 0",
                "request.kind.kind + ' ' + object.metadata.name + ': spec.parentRefs may only \
                 name Gateways of namespace ' + request.namespace + ', not ' + \
                 variables.foreignParents.map(p, p.namespace + '/' + p.name).join(', ')"
                    .into(),
                "a route in a tenant namespace may only attach to Gateways of its own namespace",
            ),
        ],
    )
}

/// Ingresses in a tenant namespace may only name hosts under the tenant's apps domain, and must
/// name one in every rule: an Ingress controller serves an Ingress without a host for every
/// name, another tenant's and the platform's included. As [`route_guard`], for everyone.
pub fn ingress_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    // A rule without a host is '' here, and refused.
    let foreign_hosts = "(has(object.spec.rules) ? object.spec.rules.map(r, has(r.host) ? r.host : '') : [])\
         .filter(h, variables.domain == '' || h == '' || !h.lowerAscii().endsWith('.' + variables.domain))"
        .to_owned();
    // TLS hosts apart: a list of lists, and CEL here has no flatten.
    let tls_foreign = "has(object.spec.tls) ? object.spec.tls.exists(t, has(t.hosts) && \
         t.hosts.exists(h, variables.domain == '' || !h.lowerAscii().endsWith('.' + variables.domain))) : false"
        .to_owned();
    policy(
        names::INGRESS_GUARD,
        in_tenant_namespaces("networking.k8s.io", "ingresses"),
        vec![],
        vec![
            variable("domain", apps_domain_of_namespace()),
            variable("foreignHosts", foreign_hosts),
            variable("foreignTls", tls_foreign),
        ],
        vec![
            deny_unless(
                "!has(object.spec.defaultBackend) && size(variables.foreignHosts) == 0",
                "'Ingress ' + object.metadata.name + ': ' + (has(object.spec.defaultBackend) ? \
                 'spec.defaultBackend refused (it would answer for every hostname)' : \
                 'spec.rules[].host ' + variables.foreignHosts.map(h, h == '' ? '(none: every hostname)' : h).join(', ') + \
                 ' refused') + (variables.domain == '' ? ': this namespace has no apps domain' : \
                 ': a tenant may serve only its own apps hostnames (<app>.' + variables.domain + '), one in every rule')"
                    .into(),
                "an Ingress in a tenant namespace must name a host under the tenant's apps domain \
                 (<app>.<tenant>.apps.<base domain>) in every rule, and may not set a default backend",
            ),
            deny_unless(
                "!variables.foreignTls",
                "'Ingress ' + object.metadata.name + ': spec.tls[].hosts may only name hosts under ' + \
                 (variables.domain == '' ? 'an apps domain, which this namespace has not' : '*.' + variables.domain)"
                    .into(),
                "an Ingress in a tenant namespace may only name TLS hosts under the tenant's apps domain",
            ),
        ],
    )
}

/// Endpoints and EndpointSlices in a tenant namespace are written only by the cluster's
/// controllers, from each Service's selector, i.e. they only ever point at the namespace's own
/// pods. Anyone else's, the tenant's vCluster syncer included (whose token the owner can mint),
/// would point a Service, and through it the platform's Gateway, at any address: another
/// tenant's pod, a platform service, the node (CVE-2021-25740). A selector-less Service of the
/// tenant therefore has no endpoints on the host.
pub fn endpoints_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let mut matching = in_tenant_namespaces("", "endpoints");
    if let Some(rules) = matching.resource_rules.as_mut() {
        let mut slices = rules[0].clone();
        slices.api_groups = Some(vec!["discovery.k8s.io".into()]);
        slices.resources = Some(vec!["endpointslices".into()]);
        rules.push(slices);
    }
    policy(
        names::ENDPOINTS_GUARD,
        matching,
        requester_not_in(&ENDPOINTS_WRITERS),
        vec![],
        vec![deny_unless(
            "false",
            "request.kind.kind + ' ' + object.metadata.name + ' refused for ' + \
             request.userInfo.username + ': in a tenant namespace only Kubernetes writes \
             Endpoints and EndpointSlices, from a Service\\'s selector; give the Service a \
             selector (a Service without one has no endpoints on the host)'"
                .into(),
            "in a tenant namespace only Kubernetes writes Endpoints and EndpointSlices, from a \
             Service's selector; give the Service a selector",
        )],
    )
}

/// Pods in a tenant namespace that carry the labels of the tenant's control plane (which its
/// API Service selects, and through it the public API route) are made by the StatefulSet
/// controller only: a pod of the tenant's with those labels would become a backend of the
/// tenant's API and answer the operator's and every user's requests to it.
pub fn control_plane_pod_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let (app, release) = (
        "'app' in object.metadata.labels && object.metadata.labels['app'] == 'vcluster'",
        format!(
            "'release' in object.metadata.labels && object.metadata.labels['release'] == '{}'",
            names::CONTROL_PLANE_RELEASE
        ),
    );
    let had = |side: &str| {
        format!(
            "has({side}.metadata.labels) && {} && {}",
            app.replace("object.", &format!("{side}.")),
            release.replace("object.", &format!("{side}."))
        )
    };
    let mut conditions = requester_not_in(&STATEFULSET_WRITERS);
    // Only a pod that gains the labels: the controllers (garbage collector, scheduler) update
    // the control plane's own pod.
    conditions.push(MatchCondition {
        name: "gains-the-control-plane-labels".into(),
        expression: format!(
            "{} && (request.operation == 'CREATE' || !({}))",
            had("object"),
            had("oldObject")
        ),
    });
    policy(
        names::CONTROL_PLANE_POD_GUARD,
        in_tenant_namespaces("", "pods"),
        conditions,
        vec![],
        vec![deny_unless(
            "false",
            format!(
                "'Pod ' + object.metadata.name + ' may not carry the labels app=vcluster and \
                 release={}: they make a pod a backend of the tenant\\'s API, and only its \
                 control plane may be one; use other labels'",
                names::CONTROL_PLANE_RELEASE
            ),
            "a pod in a tenant namespace may not carry the labels of the tenant's control plane \
             (app=vcluster, release=vcluster); use other labels",
        )],
    )
}

/// The Secret the tenant's apps listener serves (`apps-tls`, written by cert-manager from the
/// operator's Certificate for exactly `*.<tenant>.apps.<domain>`) is not the tenant's to write:
/// the Gateway serves every listener's certificate from one store, by the name a client asks
/// for, so a certificate the owner put there for another tenant's app names would be served to
/// that tenant's users. Writers outside the tenant (cert-manager, a cluster admin) are left;
/// the owner, and every ServiceAccount of a tenant namespace (its vCluster's syncer, tokens the
/// owner mints), are refused. Deleting it stays allowed: cert-manager issues it again.
pub fn apps_certificate_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let certificate = crate::names::control_plane::APPS_CERTIFICATE;
    let tenant_accounts = format!("{SERVICE_ACCOUNT_USER_PREFIX}{}", names::NAMESPACE_PREFIX);
    policy(
        names::APPS_CERTIFICATE_GUARD,
        in_tenant_namespaces("", "secrets"),
        vec![
            MatchCondition {
                name: "the-apps-certificate".into(),
                expression: format!("object.metadata.name == '{certificate}'"),
            },
            requester_cannot_grant_cluster_wide(),
            // A ServiceAccount outside every tenant namespace is the platform's (cert-manager's).
            MatchCondition {
                name: "requester-is-the-tenants".into(),
                expression: format!(
                    "!request.userInfo.username.startsWith('{SERVICE_ACCOUNT_USER_PREFIX}') || \
                     request.userInfo.username.startsWith('{tenant_accounts}')"
                ),
            },
        ],
        vec![],
        vec![deny_unless(
            "false",
            format!(
                "'Secret {certificate} refused for ' + request.userInfo.username + ': in a tenant \
                 namespace the apps certificate is written by cert-manager only, for this \
                 tenant\\'s apps domain, and renewed by it; delete the Secret to have it issued \
                 again'"
            ),
            "in a tenant namespace the apps certificate (Secret apps-tls) is written by \
             cert-manager only",
        )],
    )
}

/// The apps domain the operator wrote on the namespace ([`names::APPS_DOMAIN_ANNOTATION`]), or
/// `''` (then every hostname is refused).
fn apps_domain_of_namespace() -> String {
    format!(
        "has(namespaceObject.metadata.annotations) && '{0}' in namespaceObject.metadata.annotations ? \
         namespaceObject.metadata.annotations['{0}'] : ''",
        names::APPS_DOMAIN_ANNOTATION
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_guard_denies_in_tenant_namespaces_only_and_fails_closed() {
        for (policy, binding) in [
            role_binding_guard(),
            service_guard(),
            route_guard(),
            ingress_guard(),
            endpoints_guard(),
            control_plane_pod_guard(),
            apps_certificate_guard(),
            crate::build::placement_guard(),
            crate::build::volume_claim_guard(),
            crate::build::control_plane_references_guard(),
        ] {
            let spec = policy.spec.unwrap();
            assert_eq!(spec.failure_policy.as_deref(), Some("Fail"));
            let matching = spec.match_constraints.unwrap();
            let required = &matching
                .namespace_selector
                .unwrap()
                .match_expressions
                .unwrap()[0];
            assert_eq!(
                (required.key.as_str(), required.operator.as_str()),
                (names::TENANT_LABEL, "Exists")
            );
            let rule = &matching.resource_rules.unwrap()[0];
            assert_eq!(
                rule.operations.as_deref(),
                Some(&["CREATE".to_owned(), "UPDATE".to_owned()][..])
            );
            let binding = binding.spec;
            assert_eq!(Some(binding.policy_name), policy.metadata.name);
            assert_eq!(binding.validation_actions, ["Deny"]);
            for v in spec.validations.unwrap() {
                assert_eq!(v.reason.as_deref(), Some("Forbidden"));
                assert!(v.message.is_some_and(|m| m.contains("tenant namespace")));
            }
        }
    }

    #[test]
    fn only_the_clusters_controllers_write_endpoints_and_control_plane_pods() {
        let endpoints = endpoints_guard().0.spec.unwrap();
        let rules = endpoints.match_constraints.unwrap().resource_rules.unwrap();
        let resources: Vec<_> = rules
            .iter()
            .flat_map(|r| r.resources.clone().unwrap())
            .collect();
        assert_eq!(resources, ["endpoints", "endpointslices"]);
        let conditions = endpoints.match_conditions.unwrap();
        assert!(conditions[0].expression.contains("clusterrolebindings"));
        for writer in ENDPOINTS_WRITERS {
            assert!(
                conditions[1].expression.contains(&format!("'{writer}'")),
                "{writer}"
            );
        }
        // Any other requester (the tenant's syncer, its owner) is refused.
        assert_eq!(endpoints.validations.unwrap()[0].expression, "false");

        let pods = control_plane_pod_guard().0.spec.unwrap();
        let conditions = pods.match_conditions.unwrap();
        assert!(conditions[1].expression.contains("statefulset-controller"));
        let gains = &conditions[2].expression;
        assert!(
            gains.contains("object.metadata.labels['app'] == 'vcluster'")
                && gains.contains("oldObject.metadata.labels['release'] == 'vcluster'")
                && gains.contains("request.operation == 'CREATE'"),
            "only a pod that gains the labels: {gains}"
        );
    }

    #[test]
    fn the_role_binding_guard_names_everyone_and_foreign_accounts() {
        let spec = role_binding_guard().0.spec.unwrap();
        let variables = spec.variables.unwrap();
        let everyone = &variables[0].expression;
        for name in [
            "'system:authenticated'",
            "'system:unauthenticated'",
            "'system:serviceaccounts'",
            "startsWith('system:serviceaccounts:')",
            "'system:anonymous'",
        ] {
            assert!(everyone.contains(name), "{name} in {everyone}");
        }
        let condition = &spec.match_conditions.unwrap()[0];
        assert!(
            condition.expression.starts_with('!')
                && condition
                    .expression
                    .contains("resource('clusterrolebindings')"),
            "applies to those who cannot bind cluster-wide: {}",
            condition.expression
        );
        // `namespace` is a CEL reserved word but works as a field name after a dot; admission
        // policies do not know the escaped `__namespace__` of CRD rules (on 1.37 has() is false).
        let foreign = &variables[1].expression;
        assert!(
            foreign.contains("s.namespace != request.namespace") && !foreign.contains("__"),
            "{foreign}"
        );
        // ...and a ServiceAccount of another namespace named as the User its tokens are.
        assert!(
            foreign.contains("s.kind == 'User' && s.name.startsWith('system:serviceaccount:')")
                && foreign.contains("'system:serviceaccount:' + request.namespace + ':'"),
            "{foreign}"
        );
    }
}
