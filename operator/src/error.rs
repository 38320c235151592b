//! Reconcile errors. The variant name is the Event reason and the metric label.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// A request to the Kubernetes API failed; retried with backoff.
    #[error("Kubernetes API request failed: {}", describe(.0))]
    KubeApi(#[source] kube::Error),
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
}

impl Error {
    /// PascalCase reason for Events, conditions and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::KubeApi(_) => "KubeApi",
            Error::Encoding { .. } => "Encoding",
            Error::InvalidObject(_) => "InvalidObject",
        }
    }
}

/// The API server's own words for a refused request, without kube's debug dump of the
/// response: this text ends up in conditions, Events and Terraform diagnostics that people read.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!(
            "{} (HTTP {} {})",
            status.message, status.code, status.reason
        ),
        other => other.to_string(),
    }
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        Error::KubeApi(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

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
