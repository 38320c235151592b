//! The tenant's control plane shares the owner's namespace (the pinned vCluster runs its
//! workloads where it runs), so RBAC alone lets the owner write what steers it: the StatefulSet
//! and its pod (an image of the owner's would run with the syncer's token), the API Service's
//! selector (the public API route's backend), the vCluster's configuration and PKI, the admin and
//! tenant kubeconfigs the operator reads, and the syncer's identity (its token, a pod running as
//! it, a pod mounting its Secrets or volume). These policies take all of that out of the owner's
//! hands, and out of every tenant workload's: what the owner changes in its cluster, it changes
//! through the tenant's API.

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};

use super::{
    bounds::OPERATOR_ACCOUNT,
    guards::{
        STATEFULSET_WRITERS, cel_list, deny_unless, in_tenant_namespaces, policy,
        requester_cannot_grant_cluster_wide, variable,
    },
};
use crate::names::{self, control_plane as cp};

/// Who runs the control plane besides the operator and the tenant's own syncer: the cluster's
/// controllers (StatefulSet, garbage collector, namespace deletion, service-account tokens), as
/// the controller-manager or as their ServiceAccounts in `kube-system`, where no tenant acts; and
/// the nodes, whose kubelet asks for the token of the control plane's pod (the node authorizer
/// lets a node ask only for the pods bound to it, and no other pod may run as that account).
const CLUSTER_CONTROLLERS: &str = "request.userInfo.username == 'system:kube-controller-manager' || \
     request.userInfo.username.startsWith('system:serviceaccount:kube-system:') || \
     request.userInfo.username.startsWith('system:node:')";

/// Writes, in tenant namespaces, of the control plane's objects by name
/// ([`cp::control_plane_objects`]), updates of its pod, `exec`/`attach` into it, tokens of its
/// ServiceAccounts (minted, or asked of the token controller with a Secret), by anyone but the
/// operator, the namespace's own syncer, the cluster's controllers and nodes, and cluster admins.
/// Deleting the pod stays allowed: the StatefulSet makes it again (a restart).
pub fn control_plane_objects_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding)
{
    let objects = cp::control_plane_objects();
    let rule = |group: &str, resources: Vec<String>, operations: &[&str]| NamedRuleWithOperations {
        api_groups: Some(vec![group.into()]),
        api_versions: Some(vec!["*".into()]),
        operations: Some(operations.iter().map(|o| o.to_string()).collect()),
        resources: Some(resources),
        ..NamedRuleWithOperations::default()
    };
    let mut rules: Vec<NamedRuleWithOperations> = objects
        .iter()
        .map(|(group, resource, _)| {
            rule(
                group,
                vec![resource.to_string()],
                &["CREATE", "UPDATE", "DELETE"],
            )
        })
        .collect();
    rules.push(rule("", vec!["pods".into()], &["UPDATE"]));
    rules.push(rule(
        "",
        vec!["pods/exec".into(), "pods/attach".into()],
        &["CONNECT"],
    ));
    rules.push(rule("", vec!["serviceaccounts/token".into()], &["CREATE"]));
    // The tenant namespaces' selector, with these rules.
    let mut matching = in_tenant_namespaces("", "pods");
    matching.resource_rules = Some(rules);

    // {'secrets': ['vc-vcluster', ...], ...}: the names per resource, the pod's among them.
    let by_resource: Vec<String> = objects
        .iter()
        .map(|(_, resource, names)| format!("'{resource}': {}", cel_list(names)))
        .chain(std::iter::once(format!(
            "'pods': {}",
            cel_list(&[cp::CONTROL_PLANE_POD])
        )))
        .collect();
    let accounts = cel_list(&[cp::SYNCER_ACCOUNT, cp::WORKLOAD_ACCOUNT]);
    let names_map = format!("{{{}}}", by_resource.join(", "));
    let named = format!(
        "request.resource.resource in {names_map} && \
         request.name in {names_map}[request.resource.resource]"
    );
    // A Secret of type service-account-token has the token controller write a token of the
    // account it names into it.
    let asks_a_token = format!(
        "request.resource.resource == 'secrets' && request.operation != 'DELETE' && \
         has(object.type) && object.type == 'kubernetes.io/service-account-token' && \
         has(object.metadata.annotations) && \
         'kubernetes.io/service-account.name' in object.metadata.annotations && \
         object.metadata.annotations['kubernetes.io/service-account.name'] in {accounts}"
    );
    // Cheapest first: most requests that match the rules (the syncer's pod updates) touch no
    // control-plane object, and the authorizer checks are the costly ones.
    let conditions = vec![
        MatchCondition {
            name: "touches-the-control-plane".into(),
            expression: format!("({named}) || ({asks_a_token})"),
        },
        MatchCondition {
            name: "requester-is-not-the-namespaces-syncer".into(),
            expression: format!(
                "request.userInfo.username != 'system:serviceaccount:' + request.namespace + ':{}'",
                cp::SYNCER_ACCOUNT
            ),
        },
        MatchCondition {
            name: "requester-is-no-controller-of-the-cluster".into(),
            expression: format!("!({CLUSTER_CONTROLLERS})"),
        },
        MatchCondition {
            name: "requester-is-not-the-operator".into(),
            expression: format!("!({OPERATOR_ACCOUNT})"),
        },
        requester_cannot_grant_cluster_wide(),
    ];
    let variables = vec![
        variable("named", named),
        variable("asks_a_token", asks_a_token),
    ];
    let what = "(request.operation == 'CONNECT' ? request.subResource + ' into' : \
                (has(request.subResource) && request.subResource != '' ? request.operation + ' of ' + request.subResource + ' of' : \
                request.operation + ' of')) + ' ' + request.resource.resource + ' ' + request.name";
    policy(
        names::CONTROL_PLANE_OBJECTS_GUARD,
        matching,
        conditions,
        variables,
        vec![
            deny_unless(
                "!variables.named",
                format!(
                    "{what} + ' refused for ' + request.userInfo.username + ': it is part of the \
                     tenant\\'s control plane, which the platform runs in this namespace (only the \
                     operator, the vCluster and the cluster\\'s controllers write it); change the \
                     tenant\\'s cluster through its API with the tenant kubeconfig, or delete pod {} \
                     to restart it'",
                    cp::CONTROL_PLANE_POD
                ),
                "in a tenant namespace the control plane's objects (its StatefulSet, pod, \
                 Services, ServiceAccounts, Role, RoleBindings, Secrets and volume) are the \
                 platform's to write; change the tenant's cluster through its API",
            ),
            deny_unless(
                "!variables.asks_a_token",
                "'Secret ' + request.name + ' refused: a token of ServiceAccount ' + \
                 object.metadata.annotations['kubernetes.io/service-account.name'] + ' \
                 (the tenant\\'s control plane, in a tenant namespace) is for the control \
                 plane only; use a ServiceAccount of your own, or one inside the tenant'"
                    .into(),
                "in a tenant namespace a token Secret may not name the control plane's \
                 ServiceAccounts; use a ServiceAccount of your own",
            ),
        ],
    )
}

/// Pods in a tenant namespace, made by anyone (the owner directly, its workloads' controllers,
/// its vCluster's syncer) may not run as the syncer's ServiceAccount, mount or read from the
/// env the control plane's Secrets, or mount its data volume: each would hand the pod the
/// control plane's identity, PKI or datastore. The control plane's own pod, made by the
/// StatefulSet controller, does.
pub fn control_plane_references_guard()
-> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let pod = cp::CONTROL_PLANE_POD;
    let secrets = cel_list(&cp::control_plane_secrets());
    let conditions = vec![
        MatchCondition {
            name: "not-the-control-planes-own-pod".into(),
            expression: format!(
                "!(object.metadata.name == '{pod}' && (request.operation == 'UPDATE' || \
                 request.userInfo.username in {}))",
                cel_list(&STATEFULSET_WRITERS)
            ),
        },
        requester_cannot_grant_cluster_wide(),
    ];
    let variables = vec![
        variable("secrets", secrets),
        variable(
            "volumes",
            "has(object.spec.volumes) ? object.spec.volumes : []".into(),
        ),
        variable(
            "containers",
            "(has(object.spec.containers) ? object.spec.containers : []) + \
             (has(object.spec.initContainers) ? object.spec.initContainers : []) + \
             (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
                .into(),
        ),
        variable(
            "mounted",
            "variables.volumes.filter(v, \
             (has(v.secret) && has(v.secret.secretName) && v.secret.secretName in variables.secrets) || \
             (has(v.projected) && has(v.projected.sources) && v.projected.sources.exists(s, \
               has(s.secret) && has(s.secret.name) && s.secret.name in variables.secrets)) || \
             (has(v.persistentVolumeClaim) && v.persistentVolumeClaim.claimName == '"
                .to_owned()
                + cp::DATA_CLAIM
                + "')).map(v, v.name)",
        ),
        variable(
            "read",
            "variables.containers.filter(c, \
             (has(c.env) && c.env.exists(e, has(e.valueFrom) && has(e.valueFrom.secretKeyRef) && \
               has(e.valueFrom.secretKeyRef.name) && e.valueFrom.secretKeyRef.name in variables.secrets)) || \
             (has(c.envFrom) && c.envFrom.exists(f, has(f.secretRef) && has(f.secretRef.name) && \
               f.secretRef.name in variables.secrets))).map(c, c.name)"
                .into(),
        ),
    ];
    let account = cp::SYNCER_ACCOUNT;
    policy(
        names::CONTROL_PLANE_REFERENCES_GUARD,
        in_tenant_namespaces("", "pods"),
        conditions,
        variables,
        vec![
            deny_unless(
                &format!(
                    "!(has(object.spec.serviceAccountName) && object.spec.serviceAccountName == '{account}') && \
                     !(has(object.spec.serviceAccount) && object.spec.serviceAccount == '{account}')"
                ),
                format!(
                    "'Pod ' + object.metadata.name + ': spec.serviceAccountName {account} refused: \
                     it is the identity of the tenant\\'s control plane (its syncer) in this tenant \
                     namespace; use a ServiceAccount of your own'"
                ),
                "a pod in a tenant namespace may not run as the control plane's ServiceAccount; \
                 use a ServiceAccount of your own",
            ),
            deny_unless(
                "variables.mounted.size() == 0",
                "'Pod ' + object.metadata.name + ': volumes ' + variables.mounted.join(', ') + \
                 ' refused: they mount a Secret or the data volume of the tenant\\'s control plane \
                 (its kubeconfigs, PKI, configuration or datastore), which only the control plane \
                 may; mount Secrets and claims of your own'"
                    .into(),
                "a pod in a tenant namespace may not mount the control plane's Secrets or data \
                 volume; mount Secrets and claims of your own",
            ),
            deny_unless(
                "variables.read.size() == 0",
                "'Pod ' + object.metadata.name + ': containers ' + variables.read.join(', ') + \
                 ' refused: their env reads a Secret of the tenant\\'s control plane (its \
                 kubeconfigs, PKI or configuration), which only the control plane may; use \
                 Secrets of your own'"
                    .into(),
                "a pod in a tenant namespace may not read the control plane's Secrets into its \
                 env; use Secrets of your own",
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_plane_object_is_named_and_the_platform_exempt() {
        let spec = control_plane_objects_guard().0.spec.unwrap();
        let names = &spec.variables.as_ref().unwrap()[0].expression;
        assert_eq!(
            &spec.match_conditions.as_ref().unwrap()[0].expression,
            &format!(
                "({names}) || ({})",
                spec.variables.as_ref().unwrap()[1].expression
            )
        );
        for (_, resource, objects) in cp::control_plane_objects() {
            for object in objects {
                assert!(
                    names.contains(&format!("'{object}'")),
                    "{resource}/{object}"
                );
            }
        }
        assert!(names.contains("'pods': ['vcluster-0']"), "{names}");
        let rules = spec.match_constraints.unwrap().resource_rules.unwrap();
        let connect = rules
            .iter()
            .find(|r| r.operations.as_deref() == Some(&["CONNECT".to_owned()][..]))
            .unwrap();
        assert_eq!(
            connect.resources.as_deref(),
            Some(&["pods/exec".to_owned(), "pods/attach".to_owned()][..])
        );
        let exempt: Vec<String> = spec
            .match_conditions
            .unwrap()
            .into_iter()
            .map(|c| c.expression)
            .collect();
        assert!(exempt[1].contains("':vc-vcluster'"));
        assert!(exempt[2].contains("system:serviceaccount:kube-system:"));
        assert!(
            exempt[3].starts_with("!(authorizer") && exempt[3].contains("operator-control-plane")
        );
        assert!(exempt[4].contains("clusterrolebindings"));
    }

    #[test]
    fn messages_are_well_formed_cel_strings() {
        let spec = control_plane_objects_guard().0.spec.unwrap();
        let message = spec.validations.unwrap()[0]
            .message_expression
            .clone()
            .unwrap();
        // One string concatenation: the operation, the object, then the quoted rest.
        assert!(
            message.starts_with("(request.operation == 'CONNECT'")
                && message.contains("request.name + ' refused for ' + request.userInfo.username"),
            "{message}"
        );
        let unescaped = message.replace("\\'", "");
        assert_eq!(unescaped.matches('\'').count() % 2, 0, "{message}");
    }

    #[test]
    fn only_the_statefulset_controller_makes_the_control_planes_pod() {
        let spec = control_plane_references_guard().0.spec.unwrap();
        let own = &spec.match_conditions.unwrap()[0].expression;
        assert!(own.contains("'vcluster-0'") && own.contains("statefulset-controller"));
        let variables = spec.variables.unwrap();
        for secret in cp::control_plane_secrets() {
            assert!(variables[0].expression.contains(&format!("'{secret}'")));
        }
        let mounted = &variables[3].expression;
        assert!(mounted.contains("v.persistentVolumeClaim.claimName == 'data-vcluster-0'"));
        assert!(mounted.contains("s.secret.name in variables.secrets"));
    }
}
