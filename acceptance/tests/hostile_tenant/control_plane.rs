//! Step 11. The control plane shares mallory's namespace. As the owner, mallory tries to take it
//! over: become its syncer (a token of its ServiceAccount, minted or asked of the token
//! controller with a Secret; a pod running as it; exec into its pod), read its PKI and
//! kubeconfigs through a pod of its own (mounted, or in the env), mount its datastore, and
//! rewrite what steers it (the StatefulSet's image, the API Service's selector, the vCluster's
//! configuration, its Role, its pod's image). A Deployment's pods, made by the ReplicaSet
//! controller rather than by mallory, meet the same refusal.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use kube::{Api, api::ListParams};
use kubespaces_acceptance::{
    hostile::{As, kubectl_as, refused_by, try_create},
    pods::{RESTRICTED_CONTAINER, RESTRICTED_POD},
    tenant_cluster::text,
    wait_for,
};
use kubespaces_operator::{names, names::control_plane as cp};

use super::{OWNER, Scene};

pub async fn control_plane_takeover(s: &Scene) -> Vec<String> {
    let (env, ns, owner) = (&s.env, s.ns.as_str(), As::Owner(OWNER));
    let objects = names::CONTROL_PLANE_OBJECTS_GUARD;
    let references = names::CONTROL_PLANE_REFERENCES_GUARD;
    let mut open = vec![];
    let mut refused = |out: std::process::Output, policy: &str, names: &str, what: &str| {
        open.extend(refused_by(&out, policy, names, what).err());
    };
    let owner_runs = |args: &[&str]| {
        let mut all = vec!["-n", ns];
        all.extend(args);
        kubectl_as(env, owner, &all, None)
    };

    // The syncer's identity.
    refused(
        owner_runs(&["create", "token", cp::SYNCER_ACCOUNT, "--duration", "10m"]),
        objects,
        "serviceaccounts vc-vcluster",
        "the owner mints a token of the control plane's ServiceAccount",
    );
    let token_secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: syncer-token\n  namespace: {ns}\n  annotations: {{kubernetes.io/service-account.name: {}}}\ntype: kubernetes.io/service-account-token\n",
        cp::SYNCER_ACCOUNT
    );
    refused(
        try_create(env, owner, &token_secret),
        objects,
        "syncer-token",
        "a Secret that asks the token controller for the syncer's token",
    );
    // (--as before the command: kubectl_as would put it after `--`, as the command's.)
    let exec = [
        "-n",
        ns,
        "--as",
        OWNER,
        "exec",
        cp::CONTROL_PLANE_POD,
        "-c",
        "syncer",
        "--",
        "true",
    ];
    refused(
        env.kubectl(&exec, None),
        objects,
        "exec into pods vcluster-0",
        "exec into the control plane's pod",
    );

    // Pods of the owner's that would carry the control plane's identity, PKI or datastore.
    let pod = |name: &str, spec: &str, container: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  securityContext: {RESTRICTED_POD}\n{spec}  containers: [{{name: main, image: {image}, command: [sleep, \"3600\"], securityContext: {RESTRICTED_CONTAINER}{container}}}]\n",
            image = env.busybox_image(),
        )
    };
    let tries = [
        (
            pod(
                "as-syncer",
                &format!("  serviceAccountName: {}\n", cp::SYNCER_ACCOUNT),
                "",
            ),
            "spec.serviceAccountName vc-vcluster",
            "a pod that runs as the control plane's ServiceAccount",
        ),
        (
            pod(
                "pki-reader",
                &format!(
                    "  volumes: [{{name: pki, secret: {{secretName: {}}}}}]\n",
                    cp::CERTS_SECRET
                ),
                "",
            ),
            "volumes pki",
            "a pod that mounts the vCluster's PKI (its CA key)",
        ),
        (
            pod(
                "projected-reader",
                &format!(
                    "  volumes: [{{name: admin, projected: {{sources: [{{secret: {{name: {}}}}}]}}}}]\n",
                    cp::ADMIN_SECRET
                ),
                "",
            ),
            "volumes admin",
            "a pod that mounts the admin kubeconfig through a projected volume",
        ),
        (
            pod(
                "env-reader",
                "",
                &format!(
                    ", env: [{{name: CONFIG, valueFrom: {{secretKeyRef: {{name: {}, key: config.yaml}}}}}}]",
                    cp::CONFIG_SECRET
                ),
            ),
            "containers main",
            "a pod that reads the vCluster's configuration into its env",
        ),
        (
            pod(
                "datastore-reader",
                &format!(
                    "  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {}}}}}]\n",
                    cp::DATA_CLAIM
                ),
                "",
            ),
            "volumes data",
            "a pod that mounts the control plane's datastore",
        ),
    ];
    for (manifest, names, what) in tries {
        refused(try_create(env, owner, &manifest), references, names, what);
    }

    // What steers the control plane.
    let image = env.busybox_image();
    let sts_patch = format!(
        r#"{{"spec":{{"template":{{"spec":{{"containers":[{{"name":"syncer","image":"{image}"}}]}}}}}}}}"#
    );
    let pod_patch =
        format!(r#"{{"spec":{{"containers":[{{"name":"syncer","image":"{image}"}}]}}}}"#);
    let writes: [(&[&str], &str, &str); 6] = [
        (
            &["patch", "statefulset", cp::RELEASE, "-p", &sts_patch],
            "statefulsets vcluster",
            "the control plane's StatefulSet runs an image of the owner's",
        ),
        (
            &["patch", "pod", cp::CONTROL_PLANE_POD, "-p", &pod_patch],
            "pods vcluster-0",
            "the control plane's pod runs an image of the owner's",
        ),
        (
            &[
                "patch",
                "service",
                cp::RELEASE,
                "-p",
                r#"{"spec":{"selector":{"app":"impostor"}}}"#,
            ],
            "services vcluster",
            "the API Service (the public API route's backend) selects the owner's pods",
        ),
        (
            &[
                "patch",
                "secret",
                cp::CONFIG_SECRET,
                "-p",
                r#"{"stringData":{"config.yaml":"sync: {}"}}"#,
            ],
            "secrets vc-config-vcluster",
            "the vCluster's configuration rewritten",
        ),
        (
            &["delete", "role", cp::SYNCER_ACCOUNT],
            "roles vc-vcluster",
            "the syncer's Role deleted",
        ),
        (
            &[
                "patch",
                "secret",
                cp::CERTS_SECRET,
                "-p",
                r#"{"metadata":{"labels":{"mine":"yes"}}}"#,
            ],
            "secrets vcluster-certs",
            "the vCluster's PKI Secret written",
        ),
    ];
    for (args, names, what) in writes {
        let mut args = args.to_vec();
        args.push("--dry-run=server");
        refused(owner_runs(&args), objects, names, what);
    }

    // A Deployment's pods are made by the ReplicaSet controller, not the owner: refused all the
    // same, and the Deployment says why.
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: pki-thief, namespace: {ns}}}\nspec:\n  selector: {{matchLabels: {{app: pki-thief}}}}\n  template:\n    metadata: {{labels: {{app: pki-thief}}}}\n    spec:\n      securityContext: {RESTRICTED_POD}\n      volumes: [{{name: pki, secret: {{secretName: {}}}}}]\n      containers: [{{name: main, image: {image}, command: [sleep, \"3600\"], securityContext: {RESTRICTED_CONTAINER}}}]\n",
        cp::CERTS_SECRET
    );
    let made = kubectl_as(env, owner, &["create"], Some(&deployment));
    assert!(made.status.success(), "the Deployment: {}", text(&made));
    let sets: Api<ReplicaSet> = Api::namespaced(s.client.clone(), ns);
    let failure = wait_for(
        "the Deployment's ReplicaSet to report why it has no pod",
        Duration::from_secs(60),
        || async {
            let list = sets
                .list(&ListParams::default().labels("app=pki-thief"))
                .await
                .ok()?;
            let set = list.items.into_iter().next()?;
            let status = set.status?;
            if status.replicas > 0 {
                return Some(Err(format!(
                    "the ReplicaSet made a pod that mounts {}",
                    cp::CERTS_SECRET
                )));
            }
            status
                .conditions?
                .into_iter()
                .find(|c| c.type_.as_deref() == Some("ReplicaFailure"))
                .and_then(|c| c.message)
                .map(Ok)
        },
    )
    .await;
    match failure {
        Err(e) => open.push(e),
        Ok(message) => {
            if !message.contains(references) {
                open.push(format!(
                    "the Deployment's pods failed, but not by {references}: {message}"
                ));
            }
        }
    }
    env.kubectl_ok(&["-n", ns, "delete", "deployment", "pki-thief"], None);
    open
}
