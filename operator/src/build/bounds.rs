//! ValidatingAdmissionPolicies that keep the operator's own account inside tenant namespaces.
//!
//! The operator must create namespaces, bind roles in them and create the ClusterRole and
//! ClusterRoleBinding the vCluster chart renders for each tenant; RBAC cannot say "only in
//! namespaces named kubespaces-tenant-*" or "only ClusterRoles named vc-vcluster-v-<tenant
//! namespace>", so its roles grant those verbs cluster-wide. Whoever holds its token (stolen
//! through any path of docs/security.md) could then bind its control-plane role (pods, exec,
//! Secrets) in kube-system, make ClusterRoles and bindings of any name, or delete and relabel any
//! namespace. These policies draw the line RBAC cannot: for the operator's account, exactly the
//! objects it owns, by name.
//!
//! The operator's account is recognised by what it holds, not by its name (the chart's release
//! namespace and ServiceAccount are values, and tests run operators under other accounts):
//! `bind` on [`CONTROL_PLANE_ROLE`], without being able to bind every ClusterRole (a cluster
//! admin, who may grant anything anyway).

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, Validation,
};

use super::access::CONTROL_PLANE_ROLE;
use super::guards::{cel_list, deny_unless, policy};
use crate::names;

/// Requests by an account that holds the operator's `bind` on its control-plane ClusterRole and
/// cannot bind every ClusterRole.
pub(super) const OPERATOR_ACCOUNT: &str = "authorizer.group('rbac.authorization.k8s.io').resource('clusterroles')\
     .name('kubespaces:operator-control-plane').check('bind').allowed() && \
     !authorizer.group('rbac.authorization.k8s.io').resource('clusterroles').check('bind').allowed()";

/// What the chart's per-tenant ClusterRole may grant (the vCluster's import of the tenant's apps
/// Gateway): reads of these, nothing else. `access::CONTROLLER` holds the same reads, which the
/// API server requires of whoever creates the role.
pub const CHART_CLUSTER_ROLE_READS: [(&str, &str); 3] = [
    ("gateway.networking.k8s.io", "gateways"),
    ("gateway.networking.k8s.io", "gatewayclasses"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
];
const READ_VERBS: [&str; 3] = ["get", "list", "watch"];
/// The ServiceAccount the vCluster chart binds its ClusterRole to (`vc-<release>`).
const CHART_SERVICE_ACCOUNT: &str = "vc-vcluster";

/// Every policy that bounds the operator's account, with its binding.
pub fn operator_bounds() -> Vec<(ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding)> {
    vec![
        namespaces(),
        namespaced_writes(),
        role_bindings(),
        cluster_roles(),
        cluster_role_bindings(),
    ]
}

/// Creates, updates and deletes of `group/resources` by the operator's account.
fn bounded(name: &str, group: &str, resources: &[&str], validations: Vec<Validation>) -> Bound {
    let matching = MatchResources {
        resource_rules: Some(vec![NamedRuleWithOperations {
            api_groups: Some(vec![group.into()]),
            api_versions: Some(vec!["*".into()]),
            operations: Some(vec!["CREATE".into(), "UPDATE".into(), "DELETE".into()]),
            resources: Some(resources.iter().map(|r| r.to_string()).collect()),
            ..NamedRuleWithOperations::default()
        }]),
        ..MatchResources::default()
    };
    let conditions = vec![MatchCondition {
        name: "requester-holds-the-operators-roles".into(),
        expression: OPERATOR_ACCOUNT.into(),
    }];
    policy(
        &format!("{}{name}", names::OPERATOR_BOUNDS_PREFIX),
        matching,
        conditions,
        vec![],
        validations,
    )
}
type Bound = (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding);

/// `'<what> refused for <user>: the operator's account ' + because`, a CEL string.
fn refusal(what: &str, because: &str) -> String {
    format!(
        "{what} + ' refused for ' + request.userInfo.username + ': the KubeSpaces operator\\'s \
         account (it may bind {CONTROL_PLANE_ROLE}) {because}'"
    )
}

/// Creates and updates: the object; deletes: `true` (nothing to check but the name).
fn on_write(check: &str) -> String {
    format!("request.operation == 'DELETE' || ({check})")
}

/// Tenant namespaces only, each labelled for the tenant its name names, never with Pod Security
/// `privileged` (which would let its pods take the node).
fn namespaces() -> Bound {
    let prefix = names::NAMESPACE_PREFIX;
    let label = names::TENANT_LABEL;
    let enforce = "pod-security.kubernetes.io/enforce";
    bounded(
        "namespaces",
        "",
        &["namespaces"],
        vec![
            deny_unless(
                &format!("request.name.startsWith('{prefix}')"),
                refusal(
                    "'Namespace ' + request.name",
                    &format!("creates, changes and deletes only tenant namespaces ({prefix}*)"),
                ),
                "the operator's account may write only tenant namespaces",
            ),
            deny_unless(
                &on_write(&format!(
                    "has(object.metadata.labels) && '{label}' in object.metadata.labels && \
                     '{prefix}' + object.metadata.labels['{label}'] == request.name"
                )),
                refusal(
                    "'Namespace ' + request.name",
                    &format!(
                        "labels a namespace {label}=<tenant> for the tenant it is named after, only"
                    ),
                ),
                "the operator's account labels a namespace only for the tenant it is named after",
            ),
            deny_unless(
                &on_write(&format!(
                    "has(object.metadata.labels) && '{enforce}' in object.metadata.labels && \
                     object.metadata.labels['{enforce}'] in ['baseline', 'restricted']"
                )),
                refusal(
                    "'Namespace ' + request.name",
                    &format!("sets {enforce} to baseline or restricted, never less"),
                ),
                "the operator's account enforces Pod Security baseline or restricted in tenant \
                 namespaces",
            ),
        ],
    )
}

/// `request.namespace` is a tenant namespace.
fn in_tenant_namespace() -> String {
    format!(
        "request.namespace.startsWith('{}')",
        names::NAMESPACE_PREFIX
    )
}

fn namespace_refusal() -> Validation {
    deny_unless(
        &in_tenant_namespace(),
        refusal(
            "request.kind.kind + ' ' + request.namespace + '/' + request.name",
            &format!(
                "writes these only in tenant namespaces ({}*)",
                names::NAMESPACE_PREFIX
            ),
        ),
        "the operator's account writes quotas, limit ranges, network policies and role bindings \
         only in tenant namespaces",
    )
}

/// Quotas, limit ranges and network policies: in tenant namespaces only (a quota or a deny-all
/// policy in kube-system would stop the cluster).
fn namespaced_writes() -> Bound {
    let mut bound = bounded(
        "namespaced",
        "",
        &["resourcequotas", "limitranges"],
        vec![namespace_refusal()],
    );
    if let Some(rules) = bound
        .0
        .spec
        .as_mut()
        .and_then(|s| s.match_constraints.as_mut())
        .and_then(|m| m.resource_rules.as_mut())
    {
        let mut policies = rules[0].clone();
        policies.api_groups = Some(vec!["networking.k8s.io".into()]);
        policies.resources = Some(vec!["networkpolicies".into()]);
        rules.push(policies);
    }
    bound
}

/// RoleBindings: in tenant namespaces only, to a Role of that namespace, to the owners' role, or
/// to the control-plane role for the operator's account itself (never handed on).
fn role_bindings() -> Bound {
    let itself = "has(object.subjects) && object.subjects.all(s, \
         (s.kind == 'ServiceAccount' && 'system:serviceaccount:' + s.namespace + ':' + s.name == request.userInfo.username) || \
         (s.kind == 'User' && s.name == request.userInfo.username))";
    let role = format!(
        "object.roleRef.kind == 'Role' || object.roleRef.name == '{owner}' || \
         (object.roleRef.name == '{CONTROL_PLANE_ROLE}' && {itself})",
        owner = names::OWNER_CLUSTER_ROLE,
    );
    bounded(
        "rolebindings",
        "rbac.authorization.k8s.io",
        &["rolebindings"],
        vec![
            namespace_refusal(),
            deny_unless(
                &on_write(&role),
                refusal(
                    "'RoleBinding ' + request.namespace + '/' + request.name + ' (to ' + \
                     object.roleRef.kind + ' ' + object.roleRef.name + ')'",
                    &format!(
                        "binds a Role of the namespace, {owner}, or {CONTROL_PLANE_ROLE} to \
                         itself, nothing else",
                        owner = names::OWNER_CLUSTER_ROLE
                    ),
                ),
                "the operator's account binds only a Role of the namespace, the owners' role, or \
                 its control-plane role to itself",
            ),
        ],
    )
}

/// `request.name` is the chart's per-tenant ClusterRole name.
fn chart_cluster_role_name() -> String {
    format!(
        "request.name.matches('^{}[a-z]([-a-z0-9]*[a-z0-9])?$')",
        names::CONTROL_PLANE_CLUSTER_ROLE_PREFIX
    )
}

fn cluster_name_refusal(kind: &str) -> Validation {
    deny_unless(
        &chart_cluster_role_name(),
        refusal(
            &format!("'{kind} ' + request.name"),
            &format!(
                "creates, changes and deletes only those of tenant control planes, \
                 {}<tenant>",
                names::CONTROL_PLANE_CLUSTER_ROLE_PREFIX
            ),
        ),
        "the operator's account writes only the tenant control planes' ClusterRoles and \
         ClusterRoleBindings",
    )
}

/// ClusterRoles: only the chart's per-tenant one, granting only the reads of
/// [`CHART_CLUSTER_ROLE_READS`], never aggregated (an aggregated role gathers rules the creator
/// was never checked for).
fn cluster_roles() -> Bound {
    let groups: Vec<&str> = CHART_CLUSTER_ROLE_READS.iter().map(|(g, _)| *g).collect();
    let resources: Vec<&str> = CHART_CLUSTER_ROLE_READS.iter().map(|(_, r)| *r).collect();
    let reads = format!(
        "!has(object.aggregationRule) && (!has(object.rules) || object.rules.all(r, \
         !has(r.nonResourceURLs) && r.verbs.all(v, v in {verbs}) && \
         has(r.apiGroups) && r.apiGroups.all(g, g in {groups}) && \
         has(r.resources) && r.resources.all(x, x in {resources})))",
        verbs = cel_list(&READ_VERBS),
        groups = cel_list(&groups),
        resources = cel_list(&resources),
    );
    bounded(
        "clusterroles",
        "rbac.authorization.k8s.io",
        &["clusterroles"],
        vec![
            cluster_name_refusal("ClusterRole"),
            deny_unless(
                &on_write(&reads),
                refusal(
                    "'ClusterRole ' + request.name",
                    &format!(
                        "grants in it only get, list and watch of {}, and no aggregation",
                        resources.join(", ")
                    ),
                ),
                "the operator's account may create only read-only ClusterRoles for the tenant \
                 control planes",
            ),
        ],
    )
}

/// ClusterRoleBindings: only the chart's per-tenant one, binding the ClusterRole of the same name
/// to the chart's ServiceAccount of that tenant's namespace.
fn cluster_role_bindings() -> Bound {
    let pinned = format!(
        "object.roleRef.kind == 'ClusterRole' && object.roleRef.name == request.name && \
         has(object.subjects) && object.subjects.all(s, s.kind == 'ServiceAccount' && \
         s.name == '{CHART_SERVICE_ACCOUNT}' && request.name == 'vc-vcluster-v-' + s.namespace)"
    );
    bounded(
        "clusterrolebindings",
        "rbac.authorization.k8s.io",
        &["clusterrolebindings"],
        vec![
            cluster_name_refusal("ClusterRoleBinding"),
            deny_unless(
                &on_write(&pinned),
                refusal(
                    "'ClusterRoleBinding ' + request.name",
                    &format!(
                        "binds the ClusterRole of the same name to ServiceAccount \
                         {CHART_SERVICE_ACCOUNT} of that tenant namespace, nothing else"
                    ),
                ),
                "the operator's account binds a tenant control plane's ClusterRole only to that \
                 control plane's ServiceAccount",
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::access::{CONTROLLER, covers, request_attributes};

    #[test]
    fn every_bound_applies_to_the_operators_account_only_and_fails_closed() {
        for (policy, binding) in operator_bounds() {
            let name = policy.metadata.name.clone().unwrap();
            assert!(name.starts_with(names::OPERATOR_BOUNDS_PREFIX), "{name}");
            let spec = policy.spec.unwrap();
            assert_eq!(spec.failure_policy.as_deref(), Some("Fail"), "{name}");
            let condition = &spec.match_conditions.unwrap()[0].expression;
            assert!(
                condition.contains(".name('kubespaces:operator-control-plane').check('bind')")
                    && condition.contains("&& !authorizer"),
                "{name}: {condition}"
            );
            let rules = spec.match_constraints.unwrap().resource_rules.unwrap();
            for rule in rules {
                assert_eq!(
                    rule.operations.as_deref(),
                    Some(
                        &[
                            "CREATE".to_owned(),
                            "UPDATE".to_owned(),
                            "DELETE".to_owned()
                        ][..]
                    ),
                    "{name}: deletes are bounded too"
                );
            }
            assert_eq!(binding.spec.validation_actions, ["Deny"]);
            for v in spec.validations.unwrap() {
                assert!(v.message_expression.unwrap().contains("operator"), "{name}");
            }
        }
    }

    /// Every message is one CEL expression: its quotes pair up (an apostrophe in the prose
    /// must be escaped), or the API server refuses the policy.
    #[test]
    fn every_message_expression_quotes_its_strings() {
        for (policy, _) in operator_bounds()
            .into_iter()
            .chain([super::super::apps_certificate_guard()])
        {
            for v in policy.spec.unwrap().validations.unwrap() {
                let expression = v.message_expression.unwrap();
                let unescaped = expression.replace("\\'", "").matches('\'').count();
                assert_eq!(unescaped % 2, 0, "{expression}");
            }
        }
    }

    /// The CEL text names the same control-plane role the access table binds (it is written
    /// out once in [`OPERATOR_ACCOUNT`] for readability).
    #[test]
    fn the_operators_account_is_the_holder_of_its_bind() {
        assert!(OPERATOR_ACCOUNT.contains(&format!("'{CONTROL_PLANE_ROLE}'")));
    }

    /// The chart's ClusterRole may grant only what the operator itself holds cluster-wide.
    #[test]
    fn the_chart_cluster_role_reads_are_the_operators_own() {
        for (group, resource) in CHART_CLUSTER_ROLE_READS {
            for verb in READ_VERBS {
                let prefix = if group.is_empty() {
                    "/api/v1".to_owned()
                } else {
                    format!("/apis/{group}/v1")
                };
                let uri = match verb {
                    "get" => format!("{prefix}/{resource}/x"),
                    "watch" => format!("{prefix}/{resource}?watch=true"),
                    _ => format!("{prefix}/{resource}"),
                };
                let attrs = request_attributes(&http::Method::GET, &uri.parse().unwrap()).unwrap();
                assert!(covers(CONTROLLER, &attrs), "{verb} {group}/{resource}");
            }
        }
    }

    #[test]
    fn cluster_wide_objects_are_pinned_to_the_chart_names() {
        let name = chart_cluster_role_name();
        assert!(name.contains("^vc-vcluster-v-kubespaces-tenant-"), "{name}");
        let bindings = cluster_role_bindings().0.spec.unwrap().validations.unwrap();
        let pinned = &bindings[1].expression;
        assert!(
            pinned.contains("object.roleRef.name == request.name")
                && pinned.contains("s.name == 'vc-vcluster'"),
            "{pinned}"
        );
        let roles = cluster_roles().0.spec.unwrap().validations.unwrap();
        assert!(roles[1].expression.contains("!has(object.aggregationRule)"));
    }
}
