//! Install manifests generated from the Rust types: the Tenant CRD, the tenant-owner
//! ClusterRole, the admission policies and the operator's own RBAC. They are committed under `operator/manifests/`; a
//! test fails when they are stale.

use kube::CustomResourceExt;
use serde::Serialize;

use crate::{
    api::Tenant,
    build::{self, access},
};

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
    render_all(what, header, &[object])
}

/// `objects` as one YAML stream under a header comment.
fn render_all(
    what: &'static str,
    header: &str,
    objects: &[&dyn erased::Yaml],
) -> Result<String, RenderError> {
    let mut documents = Vec::with_capacity(objects.len());
    for object in objects {
        documents.push(
            object
                .to_yaml()
                .map_err(|source| RenderError { what, source })?,
        );
    }
    Ok(format!(
        "# {header}\n# Generated from the Rust types by `kubespaces-operator manifests`; do not edit.\n{}",
        documents.join("---\n")
    ))
}

/// Serialize as a trait object, so one stream can hold objects of several kinds.
mod erased {
    pub trait Yaml {
        fn to_yaml(&self) -> Result<String, serde_yaml::Error>;
    }

    impl<T: serde::Serialize> Yaml for T {
        fn to_yaml(&self) -> Result<String, serde_yaml::Error> {
            serde_yaml::to_string(self)
        }
    }
}

/// Each committed manifest: (file name under `operator/manifests/`, content).
pub fn all() -> Result<Vec<(&'static str, String)>, RenderError> {
    let (policy, binding) = build::finalizer_admission_policy();
    let (bindings_policy, bindings_binding) = build::role_binding_guard();
    let (services_policy, services_binding) = build::service_guard();
    let (routes_policy, routes_binding) = build::route_guard();
    let (ingresses_policy, ingresses_binding) = build::ingress_guard();
    let (endpoints_policy, endpoints_binding) = build::endpoints_guard();
    let (pods_policy, pods_binding) = build::control_plane_pod_guard();
    let (certificate_policy, certificate_binding) = build::apps_certificate_guard();
    let (placement_policy, placement_binding) = build::placement_guard();
    let (claims_policy, claims_binding) = build::volume_claim_guard();
    let (cp_objects_policy, cp_objects_binding) = build::control_plane_objects_guard();
    let (cp_references_policy, cp_references_binding) = build::control_plane_references_guard();
    let bounds = build::operator_bounds();
    let bounds: Vec<&dyn erased::Yaml> = bounds
        .iter()
        .flat_map(|(p, b)| [p as &dyn erased::Yaml, b as &dyn erased::Yaml])
        .collect();
    Ok(vec![
        (
            "tenant-finalizer-admission.yaml",
            render_all(
                "the finalizer admission policy",
                "Puts the teardown finalizer on every new Tenant, inside the API server.",
                &[&policy, &binding],
            )?,
        ),
        (
            "tenant-guard-admission.yaml",
            render_all(
                "the tenant guard admission policies",
                "Refuses, in tenant namespaces, RoleBindings that grant to everyone or to other \
                 namespaces' ServiceAccounts, Services with externalIPs, routes and Ingresses for \
                 hostnames outside the tenant's apps domain or attached to other namespaces' \
                 Gateways, Endpoints and EndpointSlices not written by Kubernetes, pods with \
                 the labels of the tenant's control plane, the apps certificate written by \
                 anyone but cert-manager, pods that tolerate more than node conditions or name \
                 their node, claims that name their volume, writes of the control plane's objects \
                 (and exec into its pod, tokens of its ServiceAccounts) by the tenant, and pods \
                 that run as the control plane's ServiceAccount or mount its Secrets or volume.",
                &[
                    &bindings_policy,
                    &bindings_binding,
                    &services_policy,
                    &services_binding,
                    &routes_policy,
                    &routes_binding,
                    &ingresses_policy,
                    &ingresses_binding,
                    &endpoints_policy,
                    &endpoints_binding,
                    &pods_policy,
                    &pods_binding,
                    &certificate_policy,
                    &certificate_binding,
                    &placement_policy,
                    &placement_binding,
                    &claims_policy,
                    &claims_binding,
                    &cp_objects_policy,
                    &cp_objects_binding,
                    &cp_references_policy,
                    &cp_references_binding,
                ],
            )?,
        ),
        (
            "operator-bounds-admission.yaml",
            render_all(
                "the operator's bounds",
                "Keeps the operator's own account inside tenant namespaces: namespaces, quotas, \
                 limit ranges, network policies and role bindings only in kubespaces-tenant-*, \
                 ClusterRoles and ClusterRoleBindings only the tenant control planes' own, by \
                 name. RBAC cannot say this; a stolen operator token can do no more.",
                &bounds,
            )?,
        ),
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
        (
            "operator-clusterrole.yaml",
            render(
                "the operator ClusterRole",
                "What the operator may do, cluster-wide: derived from the table of its API calls \
                 (operator/src/build/access.rs).",
                &access::operator_cluster_role(),
            )?,
        ),
        (
            "operator-control-plane-clusterrole.yaml",
            render(
                "the operator's control-plane ClusterRole",
                "What the operator may do inside each tenant namespace to run the tenant's control \
                 plane: it binds this role to itself there (never cluster-wide). Derived from \
                 operator/src/build/access.rs.",
                &access::control_plane_role(),
            )?,
        ),
        (
            "operator-connection-secrets-role.yaml",
            render(
                "the connection Secrets Role",
                "Secrets for writeConnectionSecretToRef, in each namespace the operator may write \
                 them to (bind it there): derived from operator/src/build/access.rs.",
                &access::connection_secrets_role(),
            )?,
        ),
        (
            "operator-lease-role.yaml",
            render(
                "the leader election Role",
                "The leader Lease, in the operator's own namespace (bind it there): derived from \
                 operator/src/build/access.rs.",
                &access::leader_election_role(),
            )?,
        ),
        (
            "operator-waker-namespace-role.yaml",
            render(
                "the operator's Role in the waker's namespace",
                "The waker's activity Leases and each tenant's ReferenceGrant to the waker, in the \
                 waker's namespace (bind it there): derived from operator/src/build/access.rs.",
                &access::waker_namespace_role(),
            )?,
        ),
        (
            "waker-role.yaml",
            render(
                "the waker's Role",
                "The activity Leases the waker writes, in its own namespace (bind it there to the \
                 waker's account): derived from operator/src/build/access.rs.",
                &access::waker_role(),
            )?,
        ),
        (
            "waker-clusterrole.yaml",
            render(
                "the waker's ClusterRole",
                "The control planes' certificates Secrets and pods, read in tenant namespaces for \
                 a connection held while its tenant wakes (bind it to the waker's account): \
                 derived from operator/src/build/access.rs.",
                &access::waker_tenants_role(),
            )?,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde::Deserialize;

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
    fn the_guards_ship_as_served_v1_policies_with_their_bindings() {
        let all = all().unwrap();
        for (file, count) in [
            ("tenant-guard-admission.yaml", 11),
            ("operator-bounds-admission.yaml", 5),
        ] {
            let (_, guards) = all.iter().find(|(f, _)| *f == file).unwrap();
            let kinds: Vec<(String, String)> = serde_yaml::Deserializer::from_str(guards)
                .map(|document| {
                    let v = serde_yaml::Value::deserialize(document).unwrap();
                    let field = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                    (field("apiVersion"), field("kind"))
                })
                .collect();
            let v1 = "admissionregistration.k8s.io/v1".to_owned();
            let policy = (v1.clone(), "ValidatingAdmissionPolicy".to_owned());
            let binding = (v1, "ValidatingAdmissionPolicyBinding".to_owned());
            let expected: Vec<_> = [policy, binding]
                .iter()
                .cycle()
                .take(2 * count)
                .cloned()
                .collect();
            assert_eq!(kinds, expected, "{file}");
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
