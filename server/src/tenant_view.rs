//! What the portal shows of a tenant, computed once from the Tenant: its checklist (the detail
//! conditions in the operator's order, the blocking one marked), its quota as bars, the control
//! plane's footprint, its sleep (which request the page offers), its teardown. Pure: the pages
//! render it as HTML, and the portal's live stream sends it beside the tenant so the pages'
//! scripts only copy it into the page (they parse no quantities and decide nothing). Text here is
//! tenant-influenced: whoever renders it escapes it (HTML) or sets it as text (scripts).

use k8s_openapi::{
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition},
    jiff::Timestamp,
};
use kubespaces_api::{api::Tenant, conditions, quantity};
use serde::Serialize;

/// The tenant as its pages show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantView {
    pub name: String,
    pub owner: String,
    /// Pending until the operator writes one.
    pub phase: String,
    pub api: String,
    pub apps: String,
    /// The detail conditions, in the order the operator writes them.
    pub checks: Vec<Check>,
    /// While the tenant is being deleted: what the teardown waits for.
    pub teardown: Option<Teardown>,
    /// The request the page offers: to sleep (awake) or to wake (asleep); none on the way
    /// between the two, or before the tenant is Ready.
    pub sleep_action: Option<SleepAction>,
    /// The `Asleep` condition's message, while it has one: why the tenant sleeps, what waking
    /// waits for, or a request that cannot be read.
    pub sleep_message: String,
    /// `status.quota`, one bar per key, in [`QUOTA_ORDER`] (then the rest by name).
    pub quota: Vec<Bar>,
    /// `status.controlPlane.footprint`: what the control plane takes, by quota key.
    pub footprint: Vec<Share>,
    pub chart_version: String,
    pub kubernetes_version: String,
    /// How old the tenant is, as `kubectl get` writes it (`5m`, `3h`, `2d`).
    pub age: String,
    /// The resourceVersion this view was made from: the page carries it (`data-version`), so
    /// which write of the tenant a page shows can be told (the portal's benchmark).
    pub version: String,
}

/// One detail condition, as a checklist item.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// The condition type (`NamespaceReady`).
    #[serde(rename = "type")]
    pub type_: String,
    /// What a person calls it (`Namespace`).
    pub label: String,
    /// `True`, `False` or `Unknown`, as written.
    pub status: String,
    pub state: CheckState,
    pub reason: String,
    pub message: String,
}

/// Where a checklist item stands.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    Done,
    /// The first item not done, in the operator's order: what the tenant waits for now.
    Blocking,
    Waiting,
}

impl CheckState {
    /// The word shown beside the item (never colour alone).
    pub fn word(self) -> &'static str {
        match self {
            CheckState::Done => "Done",
            CheckState::Blocking => "Blocking",
            CheckState::Waiting => "Waiting",
        }
    }
}

/// A request the tenant page offers ([`sleep_action`]).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SleepAction {
    Sleep,
    Wake,
}

/// Which request the page offers for a tenant in `phase` whose `Asleep` condition is `asleep`:
/// Sleep to an awake tenant, Wake to a sleeping one, nothing while it falls asleep or wakes (the
/// request is being carried out), before it is Ready or while it is deleted.
pub fn sleep_action(phase: &str, asleep: Option<&Condition>) -> Option<SleepAction> {
    let on_the_way = asleep.is_some_and(|c| {
        c.status != "True"
            && [conditions::FALLING_ASLEEP, conditions::WAKING].contains(&c.reason.as_str())
    });
    match phase {
        p if p == conditions::Phase::Asleep.as_str() => Some(SleepAction::Wake),
        p if p == conditions::Phase::Ready.as_str() && !on_the_way => Some(SleepAction::Sleep),
        _ => None,
    }
}

/// A tenant being deleted: what holds the teardown back (`DeletionBlocked`), if anything.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Teardown {
    pub reason: String,
    pub message: String,
}

/// What the control plane takes of one quota key.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Share {
    pub key: String,
    pub label: String,
    pub amount: String,
}

/// One quota key: used of hard, as written and as numbers for a `<meter>`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    pub key: String,
    pub label: String,
    pub used: String,
    pub hard: String,
    pub used_value: f64,
    pub hard_value: f64,
}

/// The quota keys the operator sets, in the order the page shows them: compute, storage,
/// objects.
pub const QUOTA_ORDER: [&str; 14] = [
    "requests.cpu",
    "limits.cpu",
    "requests.memory",
    "limits.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// What a person calls a quota key.
pub fn quota_label(key: &str) -> String {
    match key {
        "requests.cpu" => "CPU requests",
        "limits.cpu" => "CPU limits",
        "requests.memory" => "Memory requests",
        "limits.memory" => "Memory limits",
        "requests.storage" => "Storage (volume claims)",
        "requests.ephemeral-storage" => "Ephemeral storage requests",
        "limits.ephemeral-storage" => "Ephemeral storage limits",
        "pods" => "Pods",
        "services" => "Services",
        "configmaps" => "ConfigMaps",
        "secrets" => "Secrets",
        "persistentvolumeclaims" => "PersistentVolumeClaims",
        "services.nodeports" => "NodePort Services",
        "services.loadbalancers" => "LoadBalancer Services",
        other => other,
    }
    .to_owned()
}

/// What a person calls a condition type.
pub fn check_label(type_: &str) -> String {
    match type_ {
        conditions::NAMESPACE_READY => "Namespace",
        conditions::QUOTA_READY => "Quota",
        conditions::RBAC_READY => "Owner access (RBAC)",
        conditions::NETWORK_POLICY_READY => "Network isolation",
        conditions::CONTROL_PLANE_READY => "Control plane running",
        conditions::API_ROUTE_ACCEPTED => "API route accepted by the Gateway",
        conditions::API_REACHABLE => "API reachable with the kubeconfig",
        conditions::APPS_CERTIFICATE_READY => "Apps certificate issued",
        conditions::APPS_LISTENER_PROGRAMMED => "Apps listener programmed",
        conditions::CONNECTION_SECRET_READY => "Connection Secret written",
        other => other,
    }
    .to_owned()
}

/// The summary conditions: they say what the operator does, not a step of the tenant's. (And
/// `Asleep`, a state the phase badge and the sleep section show, which holds nothing back.)
const SUMMARY: [&str; 6] = [
    conditions::READY,
    conditions::SYNCED,
    conditions::RECONCILING,
    conditions::STALLED,
    conditions::DELETION_BLOCKED,
    conditions::ASLEEP,
];

/// The checklist: every detail condition in the operator's order; the first one not True
/// (among those that hold Ready back: not the connection Secret's) is the blocking one.
pub fn checklist(conditions: &[Condition]) -> Vec<Check> {
    let mut blocking_found = false;
    conditions
        .iter()
        .filter(|c| !SUMMARY.contains(&c.type_.as_str()))
        .map(|c| {
            let state = if c.status == "True" {
                CheckState::Done
            } else if !blocking_found && c.type_ != conditions::CONNECTION_SECRET_READY {
                blocking_found = true;
                CheckState::Blocking
            } else {
                CheckState::Waiting
            };
            Check {
                type_: c.type_.clone(),
                label: check_label(&c.type_),
                status: c.status.clone(),
                state,
                reason: c.reason.clone(),
                message: c.message.clone(),
            }
        })
        .collect()
}

/// A quantity as a number of units (cores, bytes, objects); 0 for what does not parse.
pub fn amount(q: &str) -> f64 {
    quantity::parse(q).map_or(0.0, |n| n.0 as f64 / 1e9)
}

/// `status.quota` as bars, in [`QUOTA_ORDER`] then the other keys by name.
pub fn bars(tenant: &Tenant) -> Vec<Bar> {
    let Some(quota) = tenant.status.as_ref().and_then(|s| s.quota.as_ref()) else {
        return vec![];
    };
    let rank = |key: &str| {
        QUOTA_ORDER
            .iter()
            .position(|k| *k == key)
            .unwrap_or(QUOTA_ORDER.len())
    };
    let mut keys: Vec<&String> = quota.hard.keys().collect();
    keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    keys.into_iter()
        .map(|key| {
            let hard = quota.hard.get(key).map_or("0", |q| q.0.as_str());
            let used = quota.used.get(key).map_or("0", |q| q.0.as_str());
            Bar {
                key: key.clone(),
                label: quota_label(key),
                used: used.to_owned(),
                hard: hard.to_owned(),
                used_value: amount(used),
                hard_value: amount(hard),
            }
        })
        .collect()
}

/// `kubectl get`'s AGE: the largest whole unit of the time since `created`.
pub fn age(created: Option<&Timestamp>, now: Timestamp) -> String {
    let Some(created) = created else {
        return String::new();
    };
    let secs = now.as_second().saturating_sub(created.as_second()).max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

impl TenantView {
    pub fn of(tenant: &Tenant, now: Timestamp) -> TenantView {
        let status = tenant.status.as_ref();
        let endpoints = status.and_then(|s| s.endpoints.as_ref());
        let control_plane = status.and_then(|s| s.control_plane.as_ref());
        let deleting = tenant.metadata.deletion_timestamp.is_some();
        // Deleting from the moment the API server marks it, before the operator's next write.
        let phase = match tenant.phase() {
            _ if deleting => conditions::Phase::Deleting.as_str(),
            Some(p) => p,
            None => conditions::Phase::Pending.as_str(),
        }
        .to_owned();
        let teardown = deleting.then(|| {
            tenant
                .condition(conditions::DELETION_BLOCKED)
                .filter(|c| c.status == "True")
                .map_or_else(
                    || Teardown {
                        reason: "TearingDown".into(),
                        message: "removing the tenant's namespace, control plane and access".into(),
                    },
                    |c| Teardown {
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                    },
                )
        });
        let text = |q: Option<&String>| q.cloned().unwrap_or_default();
        let asleep = tenant.condition(conditions::ASLEEP);
        let offered = sleep_action(&phase, asleep);
        TenantView {
            name: tenant.metadata.name.clone().unwrap_or_default(),
            owner: tenant.spec.owner.clone(),
            phase,
            api: text(endpoints.and_then(|e| e.api.as_ref())),
            apps: text(endpoints.and_then(|e| e.apps.as_ref())),
            checks: checklist(tenant.conditions()),
            sleep_action: offered,
            sleep_message: asleep.map(|c| c.message.clone()).unwrap_or_default(),
            teardown,
            quota: bars(tenant),
            footprint: control_plane
                .map(|c| {
                    c.footprint
                        .iter()
                        .map(|(k, Quantity(v))| Share {
                            key: k.clone(),
                            label: quota_label(k),
                            amount: v.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            chart_version: text(control_plane.and_then(|c| c.chart_version.as_ref())),
            kubernetes_version: text(control_plane.and_then(|c| c.kubernetes_version.as_ref())),
            age: age(
                tenant.metadata.creation_timestamp.as_ref().map(|t| &t.0),
                now,
            ),
            version: tenant.metadata.resource_version.clone().unwrap_or_default(),
        }
    }

    /// The bar of quota key `key`, if the quota has it.
    pub fn bar(&self, key: &str) -> Option<&Bar> {
        self.quota.iter().find(|b| b.key == key)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kubespaces_api::api::{ControlPlaneStatus, QuotaStatus, TenantSpec, TenantStatus};

    use super::*;

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }
    }

    fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    #[test]
    fn the_checklist_keeps_the_operators_order_and_marks_the_first_unmet_step() {
        let c = [
            condition(conditions::READY, "False", "Creating", "waiting"),
            condition(conditions::SYNCED, "True", "ReconcileSuccess", ""),
            condition(conditions::RECONCILING, "True", "Progressing", "x"),
            condition(conditions::NAMESPACE_READY, "True", "Created", "ns ok"),
            condition(conditions::QUOTA_READY, "True", "Enforced", ""),
            condition(
                conditions::CONNECTION_SECRET_READY,
                "False",
                "Pending",
                "not yet",
            ),
            condition(
                conditions::CONTROL_PLANE_READY,
                "False",
                "Starting",
                "<b>1/2</b>",
            ),
            condition(conditions::API_REACHABLE, "Unknown", "NotChecked", ""),
        ];
        let list = checklist(&c);
        let seen: Vec<(&str, CheckState)> =
            list.iter().map(|c| (c.type_.as_str(), c.state)).collect();
        assert_eq!(
            seen,
            [
                ("NamespaceReady", CheckState::Done),
                ("QuotaReady", CheckState::Done),
                ("ConnectionSecretReady", CheckState::Waiting),
                ("ControlPlaneReady", CheckState::Blocking),
                ("APIReachable", CheckState::Waiting),
            ],
            "no summary condition; the connection Secret never blocks"
        );
        assert_eq!(list[3].label, "Control plane running");
        assert_eq!(
            list[3].message, "<b>1/2</b>",
            "kept as written: escaped when shown"
        );
        assert!(
            checklist(&c[..5])
                .iter()
                .all(|c| c.state == CheckState::Done)
        );
    }

    #[test]
    fn bars_follow_the_quota_in_a_fixed_order_with_numbers_for_the_meters() {
        let mut t = Tenant::new("a", TenantSpec::new("a@example.com", "2", "4Gi", None));
        assert!(bars(&t).is_empty(), "no quota status yet: no bars");
        t.status = Some(TenantStatus {
            quota: Some(QuotaStatus {
                hard: quantities(&[
                    ("pods", "50"),
                    ("requests.memory", "5Gi"),
                    ("requests.cpu", "3"),
                    ("example.com/gpu", "1"),
                ]),
                used: quantities(&[("requests.cpu", "1500m"), ("requests.memory", "512Mi")]),
            }),
            ..TenantStatus::default()
        });
        let b = bars(&t);
        let keys: Vec<&str> = b.iter().map(|b| b.key.as_str()).collect();
        assert_eq!(
            keys,
            ["requests.cpu", "requests.memory", "pods", "example.com/gpu"]
        );
        assert_eq!(
            (b[0].used.as_str(), b[0].hard.as_str()),
            ("1500m", "3"),
            "as written"
        );
        assert_eq!((b[0].used_value, b[0].hard_value), (1.5, 3.0));
        assert_eq!(b[1].used_value, 512.0 * 1024.0 * 1024.0);
        assert_eq!(
            (b[2].used.as_str(), b[2].used_value),
            ("0", 0.0),
            "nothing used yet"
        );
        assert_eq!(b[3].label, "example.com/gpu");
    }

    #[test]
    fn the_view_of_a_tenant_being_deleted_says_what_holds_the_teardown_back() {
        let mut t = Tenant::new("a", TenantSpec::new("a@example.com", "2", "4Gi", None));
        let now = Timestamp::from_second(10_000).unwrap();
        t.metadata.creation_timestamp = Some(Time(Timestamp::from_second(10_000 - 7200).unwrap()));
        let v = TenantView::of(&t, now);
        assert_eq!((v.phase.as_str(), v.age.as_str()), ("Pending", "2h"));
        assert_eq!(v.teardown, None);
        t.metadata.deletion_timestamp = Some(Time(now));
        assert_eq!(
            TenantView::of(&t, now).teardown.map(|t| t.reason),
            Some("TearingDown".into())
        );
        t.status = Some(TenantStatus {
            phase: Some("Deleting".into()),
            conditions: vec![condition(
                conditions::DELETION_BLOCKED,
                "True",
                "NamespaceTerminating",
                "2 pods left",
            )],
            control_plane: Some(ControlPlaneStatus {
                footprint: quantities(&[("requests.cpu", "1")]),
                chart_version: Some("0.30.0".into()),
                ..ControlPlaneStatus::default()
            }),
            ..TenantStatus::default()
        });
        let v = TenantView::of(&t, now);
        assert_eq!(
            v.teardown,
            Some(Teardown {
                reason: "NamespaceTerminating".into(),
                message: "2 pods left".into()
            })
        );
        assert!(v.checks.is_empty(), "DeletionBlocked is not a step");
        assert_eq!(
            v.footprint,
            [Share {
                key: "requests.cpu".into(),
                label: "CPU requests".into(),
                amount: "1".into()
            }]
        );
        assert_eq!(v.chart_version, "0.30.0");
    }

    #[test]
    fn sleep_is_offered_when_awake_and_wake_when_asleep_and_neither_on_the_way() {
        let asleep = |status: &str, reason: &str| condition(conditions::ASLEEP, status, reason, "");
        let cases = [
            ("Ready", None, Some(SleepAction::Sleep)),
            (
                "Ready",
                Some(asleep("False", "SleepRequestInvalid")),
                Some(SleepAction::Sleep),
            ),
            (
                "Ready",
                Some(asleep("False", conditions::FALLING_ASLEEP)),
                None,
            ),
            (
                "Asleep",
                Some(asleep("True", "SleepRequested")),
                Some(SleepAction::Wake),
            ),
            ("Waking", Some(asleep("False", conditions::WAKING)), None),
            ("Provisioning", None, None),
            ("Deleting", Some(asleep("True", "Idle")), None),
        ];
        for (phase, condition, offered) in cases {
            assert_eq!(
                sleep_action(phase, condition.as_ref()),
                offered,
                "{phase} {condition:?}"
            );
        }
        // Asleep is a state, not a step: the checklist leaves it out, and it blocks nothing.
        let c = [
            condition(conditions::NAMESPACE_READY, "True", "Created", ""),
            condition(
                conditions::ASLEEP,
                "False",
                conditions::WAKING,
                "waking: ControlPlaneReady",
            ),
            condition(conditions::CONTROL_PLANE_READY, "False", "Starting", ""),
        ];
        let list = checklist(&c);
        let seen: Vec<(&str, CheckState)> =
            list.iter().map(|c| (c.type_.as_str(), c.state)).collect();
        assert_eq!(
            seen,
            [
                ("NamespaceReady", CheckState::Done),
                ("ControlPlaneReady", CheckState::Blocking)
            ]
        );
        let mut t = Tenant::new("a", TenantSpec::new("a@example.com", "2", "4Gi", None));
        t.status = Some(TenantStatus {
            phase: Some("Waking".into()),
            conditions: c.to_vec(),
            ..TenantStatus::default()
        });
        let v = TenantView::of(&t, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (v.sleep_action, v.sleep_message.as_str()),
            (None, "waking: ControlPlaneReady")
        );
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(
            (&json["sleepAction"], &json["sleepMessage"]),
            (
                &serde_json::Value::Null,
                &serde_json::json!("waking: ControlPlaneReady")
            )
        );
        t.status = Some(TenantStatus {
            phase: Some("Ready".into()),
            ..TenantStatus::default()
        });
        let v = serde_json::to_value(TenantView::of(&t, Timestamp::UNIX_EPOCH)).unwrap();
        assert_eq!(v["sleepAction"], "sleep", "what the page's script compares");
    }

    #[test]
    fn ages_read_like_kubectls() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let ago = |s: i64| age(Some(&Timestamp::from_second(1_000_000 - s).unwrap()), now);
        assert_eq!(
            [ago(5), ago(61), ago(3601), ago(90000)],
            ["5s", "1m", "1h", "1d"]
        );
        assert_eq!(age(None, now), "");
    }
}
