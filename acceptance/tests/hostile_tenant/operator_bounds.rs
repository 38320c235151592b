//! Step 8. The operator's token, in the hands of an attacker (stolen through any path of
//! docs/security.md): everything its roles grant beyond tenant namespaces, tried with a real
//! token of the chart's operator ServiceAccount. Each try is a server-side dry run, so admission
//! decides and nothing is kept (a working attack here would otherwise delete the platform).

use kubespaces_acceptance::{
    hostile::{As, kubectl_as, refused_by, try_create},
    operator::{CHART_NAMESPACE, CHART_SERVICE_ACCOUNT},
    pods::HTTP_PORT,
    tenant_cluster::text,
};
use kubespaces_operator::{
    build::access::CONTROL_PLANE_ROLE, names, names::control_plane as cp_names,
};

use super::{MALLORY, Scene};

/// The admission policy that bounds the operator's writes of `kind`.
fn bound(kind: &str) -> String {
    format!("{}{kind}", names::OPERATOR_BOUNDS_PREFIX)
}

pub fn stolen_operator_token(s: &Scene) -> Vec<String> {
    let env = &s.env;
    let minted = env.kubectl(
        &[
            "-n",
            CHART_NAMESPACE,
            "create",
            "token",
            CHART_SERVICE_ACCOUNT,
            "--duration",
            "10m",
        ],
        None,
    );
    let token = String::from_utf8_lossy(&minted.stdout).trim().to_owned();
    assert!(!token.is_empty(), "the operator's token: {}", text(&minted));
    let operator = As::Token(&token);
    let mallory_account = format!(
        "{{kind: ServiceAccount, name: default, namespace: {}}}",
        s.ns
    );
    let mut open = vec![];
    let mut refused = |manifest: &str, policy: &str, names: &str, what: &str| {
        let out = try_create(env, operator, manifest);
        open.extend(refused_by(&out, policy, names, what).err());
    };

    // Its control-plane role (pods, exec, Secrets) bound for mallory in the platform's
    // namespace, and in another tenant's.
    for ns in [CHART_NAMESPACE, s.victim_ns.as_str()] {
        let binding = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: lend, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: \"{CONTROL_PLANE_ROLE}\"}}\nsubjects: [{mallory_account}]\n"
        );
        let what = format!("the operator's control-plane role bound for {MALLORY} in {ns}");
        refused(&binding, &bound("rolebindings"), ns, &what);
    }
    // A ClusterRole of any name, and one of a control plane's name granting more than reads.
    let role = |name: &str, verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: \"{name}\"}}\nrules: [{{apiGroups: [\"\"], resources: [namespaces], verbs: [{verbs}]}}]\n"
        )
    };
    refused(
        &role("kubespaces-escape", "get"),
        &bound("clusterroles"),
        "kubespaces-escape",
        "a ClusterRole of the operator's choosing",
    );
    // (A tenant that does not exist: mallory's own role exists, and a create of it would only
    // say so.)
    let disguised = names::control_plane_cluster_role("nobody");
    refused(
        &role(&disguised, "get, delete"),
        &bound("clusterroles"),
        &disguised,
        "a control plane's ClusterRole that deletes namespaces",
    );
    // The operator's own ClusterRole (namespace deletes, quotas, bindings) bound for mallory.
    let binding = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: kubespaces-escape}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: \"kubespaces:operator\"}}\nsubjects: [{mallory_account}]\n"
    );
    refused(
        &binding,
        &bound("clusterrolebindings"),
        "kubespaces-escape",
        "the operator's ClusterRole bound for mallory cluster-wide",
    );
    // A deny-all NetworkPolicy in the platform's namespace (and so every quota, limit range).
    let deny_all = format!(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {{name: deny-all, namespace: {CHART_NAMESPACE}}}\nspec: {{podSelector: {{}}, policyTypes: [Ingress, Egress]}}\n"
    );
    refused(
        &deny_all,
        &bound("namespaced"),
        CHART_NAMESPACE,
        "a deny-all NetworkPolicy in the platform's namespace",
    );

    // Namespaces: delete the platform's, make it a "tenant" one, lift a tenant's Pod Security.
    let privileged = "pod-security.kubernetes.io/enforce=privileged";
    let tenant_label = format!("{}=x", names::TENANT_LABEL);
    let tries: [(&[&str], &str, &str); 3] = [
        (
            &["delete", "namespace", CHART_NAMESPACE],
            CHART_NAMESPACE,
            "the platform's namespace deleted",
        ),
        (
            &["label", "namespace", CHART_NAMESPACE, &tenant_label],
            CHART_NAMESPACE,
            "the platform's namespace labelled as a tenant's",
        ),
        (
            &["label", "--overwrite", "namespace", &s.ns, privileged],
            "pod-security.kubernetes.io/enforce",
            "Pod Security privileged on mallory's namespace (its pods could take the node)",
        ),
    ];
    for (args, names, what) in tries {
        let out = kubectl_as(env, operator, &[args, &["--dry-run=server"]].concat(), None);
        open.extend(refused_by(&out, &bound("namespaces"), names, what).err());
    }

    // The tenant guards hold for the operator's account too: an EndpointSlice pointing a
    // Service of mallory's at the victim's pod.
    let slice = format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: steal-operator, namespace: {ns}, labels: {{kubernetes.io/service-name: {release}}}}}\naddressType: IPv4\nendpoints: [{{addresses: [\"{ip}\"]}}]\nports: [{{name: http, port: {HTTP_PORT}, protocol: TCP}}]\n",
        ns = s.ns,
        release = cp_names::RELEASE,
        ip = s.victim_ip,
    );
    let out = try_create(env, operator, &slice);
    let what = "an EndpointSlice with the operator's token";
    open.extend(refused_by(&out, names::ENDPOINTS_GUARD, "steal-operator", what).err());
    open
}
