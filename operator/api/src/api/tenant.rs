use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema;
use crate::names;

/// A tenant: one namespace on the host, capped by a quota, owned by one person.
///
/// The operator never writes `spec`: GitOps tools and Crossplane own it. It writes `status`,
/// and the finalizer in `metadata`.
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "kubespaces.io",
    version = "v1alpha1",
    kind = "Tenant",
    status = "TenantStatus",
    shortname = "tn",
    category = "kubespaces",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase", description = "Pending, Provisioning, Ready, Asleep, Waking, Failed or Deleting"),
    printcolumn(name = "API", type_ = "string", json_path = ".status.endpoints.api", description = "Public URL of the tenant's API server"),
    printcolumn(name = "Owner", type_ = "string", json_path = ".spec.owner"),
    printcolumn(name = "Ready", type_ = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].status", priority = 1),
    printcolumn(name = "Synced", type_ = "string", json_path = ".status.conditions[?(@.type==\"Synced\")].status", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = kube::core::Rule::new(names::NAME_LENGTH_RULE).message(names::NAME_LENGTH_MESSAGE),
    validation = kube::core::Rule::new(names::NAME_LABEL_RULE).message(names::NAME_LABEL_MESSAGE)
)]
#[serde(rename_all = "camelCase")]
pub struct TenantSpec {
    /// Email address of the person who owns the tenant. It cannot change: an owner keeps what
    /// it could copy from the tenant namespace, so a new owner gets a new Tenant.
    #[schemars(schema_with = "schema::owner_email")]
    #[x_kube(validation = kube::core::Rule::new("self == oldSelf").message(names::OWNER_IMMUTABLE_MESSAGE))]
    pub owner: String,

    /// The tenant's budget on the host: the hard limits of its quota.
    pub resources: TenantResources,

    /// What happens to the host objects when the Tenant is deleted: `Delete` removes them all,
    /// `Orphan` leaves the namespace and everything in it in place.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,

    /// Where to write a Secret holding the tenant's connection details (Crossplane convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_connection_secret_to_ref: Option<SecretReference>,

    /// When the tenant's control plane sleeps: it runs no pod while the tenant's workloads keep
    /// running, and the first connection to the tenant API wakes it. Unset: the platform's
    /// default (the operator's `--sleep-after-idle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<SleepSpec>,
}

#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SleepSpec {
    /// How long the tenant API may go without a connection before the control plane sleeps,
    /// such as `30m` or `2h`, or `never`. Unset: the platform's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::idle_duration")]
    pub after_idle: Option<String>,
}

/// Quota hard limits. Each applies to both requests and limits of the tenant's workloads.
#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantResources {
    /// CPU for the tenant's workloads, e.g. "8" or "500m".
    #[schemars(schema_with = "schema::positive_quantity")]
    pub cpu: Quantity,
    /// Memory for the tenant's workloads, e.g. "16Gi".
    #[schemars(schema_with = "schema::positive_quantity")]
    pub memory: Quantity,
    /// Persistent storage the tenant may claim, e.g. "50Gi". Without it the tenant cannot claim
    /// persistent volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::optional_positive_quantity")]
    pub storage: Option<Quantity>,
}

#[derive(JsonSchema, Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeletionPolicy {
    #[default]
    Delete,
    Orphan,
}

/// A reference to a Secret in a namespace.
#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    #[schemars(schema_with = "schema::dns_subdomain")]
    pub name: String,
    #[schemars(schema_with = "schema::dns_label")]
    pub namespace: String,
}

/// Observed state. One shape that kstatus, Flux, Argo CD and Crossplane all understand.
#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    /// Pending, Provisioning, Ready, Asleep, Waking, Failed or Deleting. Informational, derived from the
    /// conditions; automation should use the `Ready` condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The generation last brought to Ready (or to a permanent failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The host namespace that holds the tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Public URLs of the tenant, set once the tenant control plane is exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<TenantEndpoints>,
    /// The Secret holding the tenant kubeconfig, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<SecretReference>,
    /// Facts about the tenant control plane, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<ControlPlaneStatus>,
    /// Hard limits and current usage of the tenant quota, as the host computes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<QuotaStatus>,
    /// The last `crossplane.io/reconcile-requested-at` or `reconcile.fluxcd.io/requestedAt`
    /// token handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    #[serde(default)]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TenantEndpoints {
    /// `https://<name>.api.<domain>:443`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// `https://*.<name>.apps.<domain>`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apps: Option<String>,
}

#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneStatus {
    /// The version of the pinned vCluster chart the control plane runs from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_version: Option<String>,
    /// The sha256 digest of that chart's archive, as checked before it was rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_digest: Option<String>,
    /// The Kubernetes version the tenant's API server reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// What the control plane itself takes from the tenant namespace (requests and limits of
    /// its pods, the storage of its volume): the namespace's quota is the tenant's budget plus
    /// this, so the control plane is not paid for from the tenant's budget.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub footprint: BTreeMap<String, Quantity>,
    /// The host objects applied for the control plane, as `apiVersion/Kind/namespace/name`
    /// (the inventory): what a new render no longer has is deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
}

#[derive(KubeSchema, Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QuotaStatus {
    #[serde(default)]
    pub hard: BTreeMap<String, Quantity>,
    #[serde(default)]
    pub used: BTreeMap<String, Quantity>,
}

impl TenantSpec {
    /// A spec with the given owner and budget, and the default deletion policy.
    pub fn new(owner: impl Into<String>, cpu: &str, memory: &str, storage: Option<&str>) -> Self {
        TenantSpec {
            owner: owner.into(),
            resources: TenantResources {
                cpu: Quantity(cpu.to_owned()),
                memory: Quantity(memory.to_owned()),
                storage: storage.map(|s| Quantity(s.to_owned())),
            },
            deletion_policy: DeletionPolicy::default(),
            write_connection_secret_to_ref: None,
            sleep: None,
        }
    }
}

/// Name of the Secret, in the tenant's own namespace, that holds the tenant kubeconfig (see
/// [`Tenant::kubeconfig_secret`]).
pub const KUBECONFIG_SECRET: &str = "tenant-kubeconfig";
/// The key of [`KUBECONFIG_SECRET`] that holds the kubeconfig file: vCluster's key in the
/// Secrets it writes.
pub const KUBECONFIG_SECRET_KEY: &str = "config";

impl Tenant {
    /// The one place the tenant kubeconfig is published: Secret [`KUBECONFIG_SECRET`] in the
    /// tenant's own namespace, under [`KUBECONFIG_SECRET_KEY`]. `status.kubeconfigSecretRef`
    /// names it once it exists. Clients read the kubeconfig from there and nowhere else: the
    /// status is writable by more than the operator, and a reference to another Secret would
    /// have a client hand out whatever that Secret holds.
    pub fn kubeconfig_secret(&self) -> SecretReference {
        SecretReference {
            name: KUBECONFIG_SECRET.to_owned(),
            namespace: names::namespace(self.metadata.name.as_deref().unwrap_or_default()),
        }
    }

    /// The tenant's public API URL as the operator publishes it (`status.endpoints.api`), which
    /// the doors put in the kubeconfigs they hand out. Of the roles the chart ships, only the
    /// operator's may write `tenants/status`.
    pub fn api_url(&self) -> Option<&str> {
        self.status.as_ref()?.endpoints.as_ref()?.api.as_deref()
    }

    /// The tenant's conditions, empty before the first reconcile.
    pub fn conditions(&self) -> &[Condition] {
        self.status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }

    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions().iter().find(|c| c.type_ == type_)
    }

    /// Ready at the current generation: what `kubectl wait`, Terraform and the CLI wait for.
    pub fn is_ready(&self) -> bool {
        let generation = self.metadata.generation;
        self.condition(crate::conditions::READY)
            .is_some_and(|c| c.status == "True" && c.observed_generation == generation)
            && self.status.as_ref().and_then(|s| s.observed_generation) == generation
    }

    /// The phase shown in the PHASE column.
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref().and_then(|s| s.phase.as_deref())
    }

    /// True when the teardown finalizer ([`names::FINALIZER`]) holds the object.
    pub fn has_teardown_finalizer(&self) -> bool {
        self.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == names::FINALIZER)
    }
}

#[cfg(test)]
mod tests {
    use kube::core::DeserializeGuard;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tenant_this_version_cannot_read_is_isolated_not_fatal() {
        // What the operator's watch receives for an object written under another schema.
        let bad = json!({
            "apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant",
            "metadata": {"name": "odd"},
            "spec": {"owner": "a@example.com", "resources": "lots"}
        });
        let guard: DeserializeGuard<Tenant> = serde_json::from_value(bad).unwrap();
        let invalid = guard.0.unwrap_err();
        assert_eq!(invalid.metadata.name.as_deref(), Some("odd"));
        assert!(
            invalid.error.contains("resources") || invalid.error.contains("struct"),
            "{}",
            invalid.error
        );
    }

    #[test]
    fn integer_quantities_and_defaults_deserialize() {
        let t: Tenant = serde_json::from_value(json!({
            "apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant",
            "metadata": {"name": "n", "generation": 2},
            "spec": {"owner": "a@example.com", "resources": {"cpu": 8, "memory": "16Gi"}}
        }))
        .unwrap();
        assert_eq!(t.spec.resources.cpu.0, "8");
        assert_eq!(t.spec.deletion_policy, DeletionPolicy::Delete);
        assert!(!t.is_ready(), "no status: not ready");
    }

    #[test]
    fn the_kubeconfig_secret_is_in_the_tenants_own_namespace() {
        let t = Tenant::new(
            "team-atlas",
            TenantSpec::new("a@example.com", "1", "1Gi", None),
        );
        assert_eq!(
            t.kubeconfig_secret(),
            SecretReference {
                name: "tenant-kubeconfig".into(),
                namespace: "kubespaces-tenant-team-atlas".into(),
            }
        );
    }
}
