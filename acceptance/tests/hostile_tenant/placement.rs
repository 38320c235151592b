//! Step 10. Where a tenant's pods run and what its claims bind to. A cluster keeps nodes for
//! other uses with taints: a pod that tolerates every taint, or names its node and so skips the
//! scheduler, would land there anyway; a claim that names a volume would take it whoever's it
//! is; a pod that may write a terabyte to the node's disk would fill it for every tenant there.
//! Played inside the vCluster (its syncer makes the host pod) and as the owner on the host.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kubespaces_acceptance::{
    hostile::{As, refused_by, tenant_warnings, try_create},
    pods::{RESTRICTED_CONTAINER, RESTRICTED_POD},
    tenant_cluster::{owner_kubectl, text},
    wait_for,
};
use kubespaces_operator::names;

use super::{OWNER, Scene};

pub async fn placement_and_volumes(s: &Scene) -> Vec<String> {
    let mut open = vec![];
    open.extend(tolerate_everything_from_inside(s).await);

    let node = s.nodes.first().expect("a real node");
    let owner = As::Owner(OWNER);
    let pod = |name: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  {extra}\n  securityContext: {RESTRICTED_POD}\n  containers: [{{name: main, image: {image}, command: [sleep, \"3600\"], securityContext: {RESTRICTED_CONTAINER}}}]\n",
            ns = s.ns,
            image = s.env.busybox_image(),
        )
    };
    let tries = [
        (
            pod("tolerate-all", "tolerations: [{operator: Exists}]"),
            names::PLACEMENT_GUARD,
            "every taint",
            "a pod on the host that tolerates every taint",
        ),
        (
            pod("pinned", &format!("nodeName: {node}")),
            names::PLACEMENT_GUARD,
            "spec.nodeName",
            "a pod on the host that names its node",
        ),
        (
            format!(
                "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: taken, namespace: {ns}}}\nspec:\n  accessModes: [ReadWriteOnce]\n  volumeName: someone-elses\n  resources: {{requests: {{storage: 1Gi}}}}\n",
                ns = s.ns
            ),
            names::VOLUME_CLAIM_GUARD,
            "spec.volumeName",
            "a claim that names the volume it binds to",
        ),
        (
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: disk-hog, namespace: {ns}}}\nspec:\n  securityContext: {RESTRICTED_POD}\n  containers: [{{name: main, image: {image}, command: [sleep, \"3600\"], securityContext: {RESTRICTED_CONTAINER}, resources: {{limits: {{ephemeral-storage: 1Ti}}}}}}]\n",
                ns = s.ns,
                image = s.env.busybox_image(),
            ),
            "exceeded quota",
            "ephemeral-storage",
            "a pod that may write 1Ti to the node's disk",
        ),
    ];
    for (manifest, policy, names, what) in tries {
        let out = try_create(&s.env, owner, &manifest);
        open.extend(refused_by(&out, policy, names, what).err());
    }
    // The node conditions stay tolerable (DaemonSets and DefaultTolerationSeconds add them).
    let conditions = pod(
        "conditions",
        "tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}]",
    );
    let out = try_create(&s.env, owner, &conditions);
    assert!(out.status.success(), "node conditions: {}", text(&out));
    open
}

/// Inside the vCluster: a pod that tolerates every taint. The syncer's copy on the host is
/// refused and the tenant sees why, or the host pod carries the toleration (the attack).
async fn tolerate_everything_from_inside(s: &Scene) -> Option<String> {
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: anywhere, namespace: default}}\nspec:\n  tolerations: [{{operator: Exists}}]\n  securityContext: {RESTRICTED_POD}\n  containers: [{{name: main, image: {image}, command: [sleep, \"3600\"], securityContext: {RESTRICTED_CONTAINER}}}]\n",
        image = s.env.busybox_image(),
    );
    let out = owner_kubectl(
        &s.env,
        &s.kubeconfig,
        &["apply", "-f", "-"],
        Some(&manifest),
    );
    assert!(out.status.success(), "inside the tenant: {}", text(&out));
    let host_pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.ns);
    let outcome = wait_for(
        "the tolerate-everything pod to be refused on the host, with a Warning the tenant sees",
        Duration::from_secs(120),
        || async {
            let listed = host_pods.list(&Default::default()).await.ok()?.items;
            let copy = listed.iter().find(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("anywhere"))
            });
            if let Some(p) = copy {
                let all = p
                    .spec
                    .as_ref()?
                    .tolerations
                    .iter()
                    .flatten()
                    .any(|t| t.key.is_none());
                return Some(if all {
                    Err(format!(
                        "a pod made inside the tenant tolerates every taint on the host: {:?}",
                        p.metadata.name
                    ))
                } else {
                    Ok("the syncer dropped the toleration".to_owned())
                });
            }
            tenant_warnings(&s.env, &s.kubeconfig)
                .lines()
                .find(|l| l.contains("anywhere") && l.contains(names::PLACEMENT_GUARD))
                .map(|l| Ok(l.to_owned()))
        },
    )
    .await;
    match outcome {
        Err(e) => Some(e),
        Ok(warning) => {
            assert!(
                warning.contains("every taint") || warning.contains("dropped"),
                "the tenant is told why: {warning}"
            );
            None
        }
    }
}
