//! Test-owned operators that run tenant control planes (the pinned vCluster chart, as the chart's
//! operator does), and what a tenant's control plane left in its namespace.

use std::path::Path;

use kubespaces_operator::{
    api::Tenant,
    names::{self, control_plane::RENDERED_LABEL},
};

use crate::{Env, tenant_cluster::platform_var};

/// The flags of a test-owned operator that runs tenant control planes with the pinned chart,
/// the local platform values and `extra_values` files laid over them.
pub fn vcluster_flags(digest: &str, extra_values: &[&Path]) -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The local images too: the chart's operator gets those from its `registry` value instead.
    let mut values: Vec<String> = ["values-local.yaml", "values-local-images.yaml"]
        .iter()
        .map(|f| {
            repo.join("acceptance/harness/manifests/vcluster")
                .join(f)
                .display()
                .to_string()
        })
        .collect();
    values.extend(extra_values.iter().map(|p| p.display().to_string()));
    vec![
        "--control-plane=vcluster".into(),
        format!(
            "--vcluster-chart={}",
            repo.join("charts/vcluster/vcluster-0.36.1.tgz").display()
        ),
        "--vcluster-chart-version=0.36.1".into(),
        format!("--vcluster-chart-digest={digest}"),
        format!("--vcluster-values={}", values.join(",")),
        format!("--helm={}", platform_var("KUBESPACES_HELM")),
        format!("--api-gateway={}", platform_var("KUBESPACES_API_GATEWAY")),
        format!("--base-domain={}", platform_var("KUBESPACES_DOMAIN")),
        format!(
            "--control-plane-storage-class={}",
            platform_var("KUBESPACES_STORAGE_CLASS")
        ),
    ]
}

/// The pinned vCluster chart's digest (`charts/vcluster/SHA256SUMS`).
pub fn pinned_digest() -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(repo.join("charts/vcluster/SHA256SUMS"))
        .expect("charts/vcluster/SHA256SUMS")
        .split_whitespace()
        .next()
        .map(|d| format!("sha256:{d}"))
        .expect("a digest")
}

/// What the last apply left, as the Tenant's status lists it (`status.controlPlane.objects`).
pub fn inventory_of(tenant: Tenant) -> Vec<String> {
    tenant
        .status
        .and_then(|s| s.control_plane)
        .map(|c| c.objects)
        .unwrap_or_default()
}

/// After an operator was killed mid-apply and another took over: the objects there at the kill
/// (`at_kill`, from [`labelled_objects`]) are kept with their uids (nothing recreated), and
/// every object rendered into the namespace is in the `ready` Tenant's inventory (nothing
/// orphaned).
pub fn assert_apply_resumed(env: &Env, tenant: &str, at_kill: &[(String, String)], ready: Tenant) {
    let after = labelled_objects(env, tenant);
    let recreated: Vec<_> = at_kill.iter().filter(|o| !after.contains(o)).collect();
    assert!(
        recreated.is_empty(),
        "objects there at the kill are kept (same uid), not recreated: {recreated:?}"
    );
    let ns = names::namespace(tenant);
    let inventory = inventory_of(ready);
    for (object, _) in rendered_objects(env, tenant) {
        let (kind, object_name) = object.split_once('/').expect("kind/name");
        let suffix = format!("/{kind}/{ns}/{object_name}");
        assert!(
            inventory.iter().any(|e| e.ends_with(&suffix)),
            "{object} is in the inventory {inventory:?}"
        );
    }
    println!(
        "{tenant}: {} of its objects in its namespace at the kill, {} once Ready",
        at_kill.len(),
        after.len()
    );
}

/// The objects of the tenant's namespace that carry its label, as `kind/name uid`.
pub fn labelled_objects(env: &Env, tenant: &str) -> Vec<(String, String)> {
    objects_with(env, tenant, &format!("{}={tenant}", names::TENANT_LABEL))
}

/// The objects of the tenant's namespace rendered from the vCluster chart (they carry
/// [`RENDERED_LABEL`]), as `kind/name uid`.
pub fn rendered_objects(env: &Env, tenant: &str) -> Vec<(String, String)> {
    objects_with(env, tenant, RENDERED_LABEL)
}

/// The objects of the kinds a tenant's namespace holds that match `selector`, sorted.
fn objects_with(env: &Env, tenant: &str, selector: &str) -> Vec<(String, String)> {
    let out = env.kubectl_ok(
        &[
            "get",
            "serviceaccounts,secrets,configmaps,services,statefulsets,roles,rolebindings,networkpolicies,poddisruptionbudgets,tlsroutes",
            "-n",
            &names::namespace(tenant),
            "-l",
            selector,
            "-o",
            "jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{\"\\n\"}{end}",
        ],
        None,
    );
    let mut v: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, u)| (k.to_owned(), u.to_owned()))
        .collect();
    v.sort();
    v
}
