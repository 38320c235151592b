//! Guards on where a tenant's pods run and what its volume claims bind to. A tenant shares the
//! host's nodes and volumes with the platform and with other tenants: nodes kept for others are
//! tainted, and volumes are matched to claims by the cluster. Both hold only if a tenant's pod
//! cannot tolerate every taint or name its node (which skips the scheduler and with it every
//! NoSchedule taint), and its claim cannot name the volume it wants.

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};

use super::guards::{
    deny_unless, in_tenant_namespaces, policy, requester_cannot_grant_cluster_wide,
    requester_not_in, variable,
};
use crate::names;

/// Taints a tenant's pod may tolerate: the node conditions Kubernetes itself sets (not ready,
/// unreachable, memory pressure, ...), which the DaemonSet controller and the
/// DefaultTolerationSeconds admission plugin add to pods. Tolerating them keeps a pod on an
/// unhealthy node for a while; it opens no node that was kept for someone else.
const NODE_CONDITION_TAINTS: &str = "node.kubernetes.io/";

/// Who binds claims to volumes: the controller-manager's persistent-volume binder.
const VOLUME_BINDERS: [&str; 2] = [
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:persistent-volume-binder",
];

/// Pods in a tenant namespace tolerate node-condition taints only, and do not name their node
/// when created. Applies to every requester who could not grant as much cluster-wide anyway: the
/// vCluster syncer's copies, and the host controllers' pods of the owner's own workloads.
pub fn placement_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let foreign = format!(
        "has(object.spec.tolerations) ? object.spec.tolerations.filter(t, \
         !has(t.key) || !t.key.startsWith('{NODE_CONDITION_TAINTS}')) : []"
    );
    policy(
        names::PLACEMENT_GUARD,
        in_tenant_namespaces("", "pods"),
        vec![requester_cannot_grant_cluster_wide()],
        vec![variable("foreign", foreign)],
        vec![
            deny_unless(
                "size(variables.foreign) == 0",
                format!(
                    "'Pod ' + object.metadata.name + ': spec.tolerations may tolerate only the \
                     node conditions ({NODE_CONDITION_TAINTS}*), not ' + \
                     variables.foreign.map(t, has(t.key) ? t.key : 'every taint (no key)').join(', ') + \
                     ': tainted nodes are kept for the platform or other tenants; remove the toleration'"
                ),
                "a pod in a tenant namespace may tolerate only node-condition taints \
                 (node.kubernetes.io/*)",
            ),
            deny_unless(
                "request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''",
                "'Pod ' + object.metadata.name + ': spec.nodeName ' + object.spec.nodeName + \
                 ' refused: a pod that names its node skips the scheduler and every taint; in a \
                 tenant namespace let the scheduler place it (nodeSelector or affinity)'"
                    .into(),
                "a pod in a tenant namespace may not name its node (spec.nodeName); use a \
                 nodeSelector or affinity",
            ),
        ],
    )
}

/// Claims in a tenant namespace do not name the volume they bind to: the cluster's binder does,
/// from the claim's size and class. Naming one would take a volume made for someone else (a
/// pre-provisioned one, or another tenant's retained one made available again).
pub fn volume_claim_guard() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let mut conditions = requester_not_in(&VOLUME_BINDERS);
    conditions.push(MatchCondition {
        name: "names-a-volume".into(),
        expression: "has(object.spec.volumeName) && object.spec.volumeName != '' && \
             (request.operation == 'CREATE' || !has(oldObject.spec.volumeName) || \
             oldObject.spec.volumeName != object.spec.volumeName)"
            .into(),
    });
    policy(
        names::VOLUME_CLAIM_GUARD,
        in_tenant_namespaces("", "persistentvolumeclaims"),
        conditions,
        vec![],
        vec![deny_unless(
            "false",
            "'PersistentVolumeClaim ' + object.metadata.name + ': spec.volumeName ' + \
             object.spec.volumeName + ' refused: in a tenant namespace the cluster binds a claim \
             to a volume; ask for a size and storage class instead'"
                .into(),
            "a volume claim in a tenant namespace may not name its volume (spec.volumeName); ask \
             for a size and storage class instead",
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_condition_taints_are_tolerated_and_no_node_is_named() {
        let spec = placement_guard().0.spec.unwrap();
        let conditions = spec.match_conditions.unwrap();
        assert_eq!(conditions.len(), 1, "every requester but a cluster admin");
        assert!(conditions[0].expression.contains("clusterrolebindings"));
        let foreign = &spec.variables.unwrap()[0].expression;
        assert!(
            foreign.contains("!has(t.key) ||") && foreign.contains("'node.kubernetes.io/'"),
            "a toleration without a key tolerates every taint: {foreign}"
        );
        let validations = spec.validations.unwrap();
        assert!(
            validations[1]
                .expression
                .contains("request.operation != 'CREATE'")
        );
    }

    #[test]
    fn only_the_binder_names_a_claims_volume() {
        let spec = volume_claim_guard().0.spec.unwrap();
        let conditions = spec.match_conditions.unwrap();
        assert!(
            conditions[1]
                .expression
                .contains("persistent-volume-binder")
        );
        assert!(
            conditions[2]
                .expression
                .contains("oldObject.spec.volumeName")
        );
        assert_eq!(spec.validations.unwrap()[0].expression, "false");
    }
}
