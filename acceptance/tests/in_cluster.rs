//! A pod talks to the API server the way an operator pod will: kubectl inside the pod with nothing
//! but the in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT, the projected ServiceAccount
//! token and CA), through the `kubernetes` Service and kube-proxy, authenticated as its
//! ServiceAccount and authorized by RBAC.

use std::time::Duration;

use kubespaces_acceptance::{Env, wait_for};

const NS: &str = "node-in-cluster";

#[tokio::test]
async fn a_pod_uses_the_api_with_its_service_account() {
    let env = Env::get();
    let image =
        std::env::var("KUBESPACES_KUBECTL_IMAGE").expect("KUBESPACES_KUBECTL_IMAGE (harness env)");
    env.kubectl(&["delete", "namespace", NS, "--wait=true"], None);
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---
apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: reader, namespace: {NS}}}\n---
apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding
metadata: {{name: reader-view, namespace: {NS}}}
subjects: [{{kind: ServiceAccount, name: reader, namespace: {NS}}}]
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}\n---
apiVersion: v1\nkind: Pod\nmetadata: {{name: client, namespace: {NS}}}
spec:
  serviceAccountName: reader
  restartPolicy: Never
  containers:
  - name: kubectl
    image: {image}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'kubectl auth whoami -o jsonpath={{.status.userInfo.username}}; echo; kubectl get pods -o name; kubectl get secrets 2>&1 | tail -1']
"
    ));
    let phase = wait_for(
        "the client pod to finish",
        Duration::from_secs(120),
        || async {
            let phase = env.kubectl_ok(
                &[
                    "-n",
                    NS,
                    "get",
                    "pod",
                    "client",
                    "-o",
                    "jsonpath={.status.phase}",
                ],
                None,
            );
            matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase)
        },
    )
    .await;
    let logs = env.kubectl_ok(&["-n", NS, "logs", "client"], None);
    assert_eq!(phase, "Succeeded", "kubectl in the pod failed: {logs}");
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(format!("system:serviceaccount:{NS}:reader").as_str()),
        "the pod is its ServiceAccount: {logs}"
    );
    assert!(
        lines.contains(&"pod/client"),
        "RBAC lets it list pods: {logs}"
    );
    assert!(
        lines.last().is_some_and(|l| l.contains("Forbidden")),
        "and nothing more (view cannot read Secrets): {logs}"
    );
    env.kubectl_ok(&["delete", "namespace", NS, "--wait=false"], None);
}
