//! The `kubespaces_tenant` resource and data source schemas (SPEC §3).

use std::sync::LazyLock;

use crate::schema::{Attribute, Block, Mode, NestedBlock};
use crate::value::{Type, Value};

pub const TYPE_NAME: &str = "kubespaces_tenant";

/// Bump together with an `UpgradeResourceState` step when stored state changes shape.
pub const SCHEMA_VERSION: i64 = 0;

/// `wait_for_ready` when the configuration leaves it out. (The default `deletion_policy` is
/// the shared `DeletionPolicy::default()`.)
pub const DEFAULT_WAIT_FOR_READY: bool = true;

/// Attributes that are the tenant's spec: changing one is an API update.
const SPEC_ATTRS: [&str; 5] = ["owner", "cpu", "memory", "storage", "deletion_policy"];

/// Whether `planned` changes the tenant's spec, i.e. whether apply has anything to write.
pub fn spec_changed(prior: &Value, planned: &Value) -> bool {
    SPEC_ATTRS.iter().any(|a| planned.get(a) != prior.get(a))
}

fn computed_attrs(kubeconfig_description: &'static str) -> Vec<Attribute> {
    vec![
        Attribute::new(
            "phase",
            Type::String,
            Mode::Computed,
            "Lifecycle phase reported by the operator: `Pending`, `Provisioning`, `Ready`, `Failed` or `Deleting`.",
        ),
        Attribute::new(
            "api_endpoint",
            Type::String,
            Mode::Computed,
            "Public URL of the tenant's Kubernetes API, e.g. `https://team-atlas.api.example.com:443`.",
        ),
        Attribute::new(
            "apps_domain",
            Type::String,
            Mode::Computed,
            "Wildcard domain for the tenant's applications, e.g. `*.team-atlas.apps.example.com`.",
        ),
        Attribute::new(
            "namespace",
            Type::String,
            Mode::Computed,
            "Host namespace that holds the tenant (`kubespaces-tenant-<name>`).",
        ),
        Attribute::new(
            "kubeconfig",
            Type::String,
            Mode::Computed,
            kubeconfig_description,
        )
        .sensitive(),
    ]
}

fn timeouts() -> NestedBlock {
    let t = |name, what| Attribute::new(name, Type::String, Mode::Optional, what);
    NestedBlock {
        name: "timeouts",
        block: Block {
            attributes: vec![
                t(
                    "create",
                    "How long to wait for a new tenant to become Ready, as a Go duration (`30s`, `10m`, `1h30m`). Default `20m`.",
                ),
                t(
                    "update",
                    "How long to wait for a changed tenant to become Ready again. Default `20m`.",
                ),
                t(
                    "delete",
                    "How long to wait for the tenant to be gone. Default `20m`.",
                ),
            ],
            blocks: vec![],
            description: "Limits on how long Terraform waits for the operator.",
        },
    }
}

pub static RESOURCE: LazyLock<Block> = LazyLock::new(|| {
    let mut attributes = vec![
        Attribute::new("id", Type::String, Mode::Computed, "Same as `name`."),
        Attribute::new(
            "name",
            Type::String,
            Mode::Required,
            "Tenant name: a DNS label. Changing it replaces the tenant.",
        ),
        Attribute::new(
            "owner",
            Type::String,
            Mode::Required,
            "Email address of the tenant's owner.",
        ),
        Attribute::new(
            "cpu",
            Type::String,
            Mode::Required,
            "CPU quota as a Kubernetes quantity, e.g. `8` or `500m`.",
        ),
        Attribute::new(
            "memory",
            Type::String,
            Mode::Required,
            "Memory quota as a Kubernetes quantity, e.g. `16Gi`.",
        ),
        Attribute::new(
            "storage",
            Type::String,
            Mode::Optional,
            "Storage quota as a Kubernetes quantity, e.g. `50Gi`. Without it the tenant cannot claim persistent volumes.",
        ),
        Attribute::new(
            "deletion_policy",
            Type::String,
            Mode::OptionalComputed,
            "`Delete` (default) removes everything the tenant owns on destroy; `Orphan` leaves it in place.",
        ),
        Attribute::new(
            "wait_for_ready",
            Type::Bool,
            Mode::OptionalComputed,
            "Wait for the tenant to be Ready at its current generation on create and update. Default `true`.",
        ),
    ];
    attributes.extend(computed_attrs(
        "Kubeconfig for the tenant's own API, with cluster-admin inside the tenant. Empty until the operator has published it.",
    ));
    Block {
        attributes,
        blocks: vec![timeouts()],
        description: "A KubeSpaces tenant: a namespace on the host cluster capped by a quota, plus the tenant's own Kubernetes control plane at a public URL.",
    }
});

pub static RESOURCE_TYPE: LazyLock<Type> = LazyLock::new(|| RESOURCE.implied_type());

pub static DATA_SOURCE: LazyLock<Block> = LazyLock::new(|| {
    let c = |name, what| Attribute::new(name, Type::String, Mode::Computed, what);
    let mut attributes = vec![
        Attribute::new("id", Type::String, Mode::Computed, "Same as `name`."),
        Attribute::new(
            "name",
            Type::String,
            Mode::Required,
            "Name of an existing tenant.",
        ),
        c("owner", "Email address of the tenant's owner."),
        c("cpu", "CPU quota."),
        c("memory", "Memory quota."),
        c("storage", "Storage quota, null when unset."),
        c("deletion_policy", "`Delete` or `Orphan`."),
    ];
    attributes.extend(computed_attrs("Kubeconfig for the tenant's own API."));
    Block {
        attributes,
        blocks: vec![],
        description: "Reads an existing KubeSpaces tenant.",
    }
});

pub static DATA_SOURCE_TYPE: LazyLock<Type> = LazyLock::new(|| DATA_SOURCE.implied_type());

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Mode;

    #[test]
    fn resource_has_every_spec_attribute_with_the_right_mode() {
        let mode = |n| RESOURCE.attribute(n).map(|a| a.mode);
        assert_eq!(mode("name"), Some(Mode::Required));
        assert_eq!(mode("storage"), Some(Mode::Optional));
        assert_eq!(mode("wait_for_ready"), Some(Mode::OptionalComputed));
        for c in [
            "id",
            "phase",
            "api_endpoint",
            "apps_domain",
            "namespace",
            "kubeconfig",
        ] {
            assert_eq!(mode(c), Some(Mode::Computed), "{c}");
        }
        assert!(
            RESOURCE
                .attribute("kubeconfig")
                .is_some_and(|a| a.sensitive)
        );
        assert!(
            RESOURCE
                .attribute("wait_for_ready")
                .is_some_and(|a| a.ty == Type::Bool)
        );
    }

    #[test]
    fn timeouts_is_a_single_block_of_three_durations() {
        let Type::Object(attrs) = &*RESOURCE_TYPE else {
            panic!("object")
        };
        assert_eq!(
            attrs.get("timeouts"),
            Some(&Type::object([
                ("create", Type::String),
                ("delete", Type::String),
                ("update", Type::String)
            ]))
        );
    }

    #[test]
    fn data_source_requires_only_the_name() {
        let required: Vec<_> = DATA_SOURCE
            .attributes
            .iter()
            .filter(|a| a.mode == Mode::Required)
            .map(|a| a.name)
            .collect();
        assert_eq!(required, vec!["name"]);
        assert!(
            DATA_SOURCE
                .attribute("kubeconfig")
                .is_some_and(|a| a.sensitive)
        );
    }
}
