//! The API server's refusals (a `Status` object) in words a person reads, shared by every client
//! so the operator's conditions, Terraform diagnostics and the CLI say the same thing.

use kube::core::Status;

/// The API server's own words for a refused request, without a debug dump of the response,
/// e.g. `tenants.kubespaces.io "a" already exists (HTTP 409 AlreadyExists)`.
pub fn describe(status: &Status) -> String {
    format!(
        "{} (HTTP {} {})",
        status.message, status.code, status.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_message_code_and_reason() {
        let status =
            Status::failure("tenants.kubespaces.io \"a\" not found", "NotFound").with_code(404);
        assert_eq!(
            describe(&status),
            "tenants.kubespaces.io \"a\" not found (HTTP 404 NotFound)"
        );
    }
}
