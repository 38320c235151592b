//! Hand-written schema fragments for fields whose derived schema would be too loose or too noisy.
//! Every CEL rule carries a message a person understands; the API server prefixes it with the
//! field path, so the error names both the field and the fix.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A positive Kubernetes quantity written as a string (`"8"`, `"500m"`, `"16Gi"`) or an integer.
/// k8s-openapi's own `Quantity` schema has no validation at all and a 2 KB description.
pub fn positive_quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A Kubernetes quantity, such as 8, 500m, 16Gi or 50Gi.",
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 64}],
        "x-kubernetes-validations": [
            {
                "rule": "type(self) == int || isQuantity(self)",
                "message": "must be a Kubernetes quantity such as 8, 500m, 16Gi or 50Gi"
            },
            {
                "rule": "type(self) == int ? self > 0 : (!isQuantity(self) || quantity(self).isGreaterThan(quantity('0')))",
                "message": "must be greater than zero"
            }
        ]
    })
}

/// Same as [`positive_quantity`], for an optional field (the schema is identical; absence is
/// expressed by the field not being required).
pub fn optional_positive_quantity(generator: &mut SchemaGenerator) -> Schema {
    positive_quantity(generator)
}

/// The owner's email address, which becomes the RBAC user name on the host.
pub fn owner_email(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Email address of the person who owns the tenant. It becomes the user name bound to the tenant namespace on the host, so it must match the email claim the cluster authenticates.",
        "type": "string",
        "maxLength": 254,
        "x-kubernetes-validations": [{
            "rule": "self.matches('^[^@\\\\s]+@[^@\\\\s]+\\\\.[^@\\\\s]+$')",
            "message": "must be an email address such as alice@example.com"
        }]
    })
}

/// A DNS-1123 label (namespace names).
pub fn dns_label(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 63,
        "x-kubernetes-validations": [{
            "rule": "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
            "message": "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"
        }]
    })
}

/// A DNS-1123 subdomain (Secret names).
pub fn dns_subdomain(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 253,
        "x-kubernetes-validations": [{
            "rule": "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
            "message": "must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
        }]
    })
}

/// How long a tenant API may go without activity before its control plane sleeps.
pub fn idle_duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A duration such as 30s, 45m, 2h or 1h30m, or never.",
        "type": "string",
        "maxLength": 32,
        "x-kubernetes-validations": [{
            "rule": "self == 'never' || self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$') && self != '' && !self.matches('^(0+[hms])+$')",
            "message": "must be a duration such as 30m, 2h or 1h30m (hours h, minutes m, seconds s, more than zero), or never"
        }]
    })
}
