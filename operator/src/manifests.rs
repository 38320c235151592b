//! Install manifests generated from the Rust types: the Tenant CRD and the tenant-owner
//! ClusterRole. They are committed under `operator/manifests/`; a test fails when they are stale.

use kube::CustomResourceExt;
use serde::Serialize;

use crate::{api::Tenant, build};

#[derive(Debug, thiserror::Error)]
#[error("could not render {what} as YAML: {source}")]
pub struct RenderError {
    what: &'static str,
    #[source]
    source: serde_yaml::Error,
}

fn render(
    what: &'static str,
    header: &str,
    object: &impl Serialize,
) -> Result<String, RenderError> {
    let body = serde_yaml::to_string(object).map_err(|source| RenderError { what, source })?;
    Ok(format!(
        "# {header}\n# Generated from the Rust types by `kubespaces-operator manifests`; do not edit.\n{body}"
    ))
}

/// Each committed manifest: (file name under `operator/manifests/`, content).
pub fn all() -> Result<Vec<(&'static str, String)>, RenderError> {
    let (policy, binding) = build::finalizer_admission_policy();
    let admission = format!(
        "{}---\n{}",
        render(
            "the finalizer admission policy",
            "Puts the teardown finalizer on every new Tenant, inside the API server.",
            &policy
        )?,
        serde_yaml::to_string(&binding).map_err(|source| RenderError {
            what: "the policy binding",
            source
        })?
    );
    Ok(vec![
        ("tenant-finalizer-admission.yaml", admission),
        (
            "tenants.kubespaces.io.yaml",
            render("the Tenant CRD", "The Tenant CRD.", &Tenant::crd())?,
        ),
        (
            "tenant-owner-clusterrole.yaml",
            render(
                "the tenant-owner ClusterRole",
                "What a tenant owner may do in their own namespace (bound there by the operator).",
                &build::owner_cluster_role(),
            )?,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Fails when a committed manifest differs from what the types generate. Run with
    /// `KUBESPACES_UPDATE_MANIFESTS=1` to rewrite them.
    #[test]
    fn committed_manifests_are_up_to_date() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
        let update = std::env::var_os("KUBESPACES_UPDATE_MANIFESTS").is_some();
        for (file, generated) in all().unwrap() {
            let path = dir.join(file);
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &generated).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == generated,
                "{} is stale; regenerate with `KUBESPACES_UPDATE_MANIFESTS=1 cargo test -p kubespaces-operator manifests`",
                path.display()
            );
        }
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_the_spec_columns() {
        let crd = Tenant::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        let columns: Vec<_> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .filter(|c| c.priority.unwrap_or(0) == 0)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["Phase", "API", "Owner", "Age"]);
        assert_eq!(crd.spec.names.short_names, Some(vec!["tn".to_owned()]));
        assert_eq!(
            crd.spec.names.categories,
            Some(vec!["kubespaces".to_owned()])
        );
    }
}
