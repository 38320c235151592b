//! Pure builders of a tenant's control plane: the chart values, the API route, the apps
//! Gateway and Certificate, the control plane's NetworkPolicy, its footprint on the quota, and
//! the operator's own RoleBinding in the tenant namespace. No client here.

pub mod apps;
pub mod footprint;
pub mod network;
pub mod route;
pub mod settings;
pub mod values;

use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};

pub use settings::{ControlPlaneConfig, VclusterSettings};

use crate::names::control_plane as names;

/// The operator's RoleBinding in a tenant namespace (pure).
pub fn self_binding(tenant: &str, operator: &Subject) -> RoleBinding {
    let mut meta = crate::build::install_meta(names::OPERATOR_BINDING);
    meta.namespace = Some(crate::names::namespace(tenant));
    meta.labels = Some(crate::build::labels(tenant));
    RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: crate::build::access::CONTROL_PLANE_ROLE.into(),
        },
        subjects: Some(vec![operator.clone()]),
    }
}

/// The RBAC subject of a user name as the API server reports it.
pub fn subject_of(username: &str) -> Subject {
    match username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((namespace, name)) => Subject {
            kind: "ServiceAccount".into(),
            name: name.into(),
            namespace: Some(namespace.into()),
            api_group: None,
        },
        None => Subject {
            kind: "User".into(),
            name: username.into(),
            namespace: None,
            api_group: Some("rbac.authorization.k8s.io".into()),
        },
    }
}
