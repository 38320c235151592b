//! Reconcile errors. The variant name is the Event reason and the metric label.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A request to the Kubernetes API failed; retried with backoff.
    #[error("Kubernetes API request failed: {}", describe(.0))]
    KubeApi(#[source] kube::Error),
    /// The API server's RBAC refused a request of the operator: its ClusterRole lacks a
    /// permission (retried with backoff, so granting it is enough).
    #[error(
        "permission missing: the operator may not {what}; the API server said: {message}. Grant it \
         in the operator's ClusterRole ({role}, or, for what it does inside tenant namespaces, \
         {control_plane}; in the waker's namespace, {waker})",
        role = crate::build::access::OPERATOR_CLUSTER_ROLE,
        control_plane = crate::build::access::CONTROL_PLANE_ROLE,
        waker = crate::build::access::WAKER_NAMESPACE_ROLE
    )]
    MissingPermission { what: String, message: String },
    /// An object could not be encoded for the API (a bug, not an input problem).
    #[error("could not encode {kind}: {source}")]
    Encoding {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The Tenant stored in the API server could not be read by this version of the operator.
    #[error("the Tenant cannot be read by this operator version: {0}")]
    InvalidObject(String),
    /// The pinned control-plane chart could not be read or rendered (retried).
    #[error(transparent)]
    Chart(#[from] crate::helm::ChartError),
    /// The rendered control plane holds something the operator does not apply.
    #[error("the rendered control plane is not valid: {0}")]
    Invalid(String),
}

impl Error {
    /// PascalCase reason for Events, conditions and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::KubeApi(_) => "KubeApi",
            Error::MissingPermission { .. } => "MissingPermission",
            Error::Encoding { .. } => "Encoding",
            Error::InvalidObject(_) => "InvalidObject",
            Error::Chart(e) => e.reason(),
            Error::Invalid(_) => "InvalidRender",
        }
    }

    /// The reason of the `Synced` condition while this error stands: a missing permission is
    /// named as such, everything else is a `ReconcileError`.
    pub fn condition_reason(&self) -> &'static str {
        match self {
            Error::MissingPermission { .. } => "MissingPermission",
            _ => "ReconcileError",
        }
    }
}

/// The API server's own words for a refused request, without kube's debug dump of the
/// response: this text ends up in conditions, Events and Terraform diagnostics that people read.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => kubespaces_api::status::describe(status),
        other => other.to_string(),
    }
}

/// What an RBAC refusal says the user may not do, e.g. `create networkpolicies.networking.k8s.io
/// in namespace kubespaces-tenant-a`, from the API server's message (`User "u" cannot create
/// resource "networkpolicies" in API group "networking.k8s.io" in the namespace "ns"`), or
/// `bind` for the escalation check's refusal. None for other 403s (admission policies refuse
/// with 403 too, and those are no permission of the operator's).
pub fn missing_permission(message: &str) -> Option<String> {
    if message.contains("is attempting to grant RBAC permissions not currently held") {
        return Some(format!(
            "bind the ClusterRole {} (or hold all of its permissions)",
            crate::names::OWNER_CLUSTER_ROLE
        ));
    }
    let rest = message.split_once("\" cannot ")?.1;
    let (verb, rest) = rest.split_once(' ')?;
    let quoted = |after: &str| -> Option<String> {
        let tail = rest.split_once(after)?.1;
        Some(tail.split('"').nth(1)?.to_owned())
    };
    let resource = quoted("resource ")?;
    let group = quoted("in API group ").unwrap_or_default();
    let mut what = match group.as_str() {
        "" => format!("{verb} {resource}"),
        g => format!("{verb} {resource}.{g}"),
    };
    if let Some(ns) = quoted("in the namespace ") {
        what.push_str(&format!(" in namespace {ns}"));
    } else {
        what.push_str(" cluster-wide");
    }
    Some(what)
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        match &e {
            kube::Error::Api(status) if status.code == 403 => {
                match missing_permission(&status.message) {
                    Some(what) => Error::MissingPermission {
                        what,
                        message: status.message.clone(),
                    },
                    None => Error::KubeApi(e),
                }
            }
            _ => Error::KubeApi(e),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(message: &str) -> Error {
        let status = kube::core::Status::failure(message, "Forbidden").with_code(403);
        Error::from(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn an_rbac_refusal_names_the_missing_permission() {
        let e = forbidden(
            "networkpolicies.networking.k8s.io is forbidden: User \"system:serviceaccount:ks:op\" \
             cannot create resource \"networkpolicies\" in API group \"networking.k8s.io\" in the \
             namespace \"kubespaces-tenant-a\"",
        );
        assert_eq!(e.reason(), "MissingPermission");
        assert_eq!(e.condition_reason(), "MissingPermission");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "permission missing: the operator may not create \
                 networkpolicies.networking.k8s.io in namespace kubespaces-tenant-a;"
            ),
            "{text}"
        );
        assert!(text.contains("kubespaces:operator"), "{text}");
        let e = forbidden(
            "namespaces is forbidden: User \"u\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope",
        );
        assert!(
            e.to_string()
                .contains("may not list namespaces cluster-wide"),
            "{e}"
        );
        let e = forbidden(
            "rolebindings.rbac.authorization.k8s.io \"tenant-owner\" is forbidden: user \"u\" (groups=[]) is attempting to grant RBAC permissions not currently held: ...",
        );
        assert!(
            e.to_string()
                .contains("may not bind the ClusterRole kubespaces:tenant-owner"),
            "{e}"
        );
    }

    #[test]
    fn an_admission_refusal_is_no_missing_permission() {
        let e = forbidden("namespaces \"kubespaces-tenant-a\" is forbidden: denied request: held");
        assert_eq!(e.reason(), "KubeApi");
        assert_eq!(e.condition_reason(), "ReconcileError");
    }

    #[test]
    fn refused_requests_read_as_the_api_server_wrote_them() {
        let status = kube::core::Status::failure(
            "namespaces \"kubespaces-tenant-a\" is forbidden: denied request: held",
            "Forbidden",
        )
        .with_code(403);
        let error = Error::from(kube::Error::Api(Box::new(status)));
        assert_eq!(
            error.to_string(),
            "Kubernetes API request failed: namespaces \"kubespaces-tenant-a\" is forbidden: \
             denied request: held (HTTP 403 Forbidden)"
        );
    }
}
