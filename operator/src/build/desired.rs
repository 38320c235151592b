//! The whole desired state of one tenant, built in one place before anything is applied (pure):
//! the host objects and, when the platform gives tenants a control plane, the rendered chart with
//! the operator's own access to the namespace, the route and the apps objects. The quota is built
//! once, grown by what the rendered control plane takes.
//!
//! What cannot be built without the cluster stays out: the tenant kubeconfig (its token is issued
//! by the tenant's own API server) and its copy in the connection Secret.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::{LimitRange, Namespace, ResourceQuota},
        networking::v1::NetworkPolicy,
        rbac::v1::{RoleBinding, Subject},
    },
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{ResourceExt, api::DynamicObject};

use super::control_plane::{VclusterSettings, apps, footprint, network, route, self_binding};
use super::settings::HostConfig;
use super::sleep;
use crate::api::Tenant;

/// One tenant's desired state.
pub struct DesiredState {
    /// The host settings for this tenant (the quota grown by the control plane's footprint),
    /// against which the applied host objects are observed.
    pub config: HostConfig,
    pub host: Host,
    pub control_plane: Option<ControlPlane>,
}

/// The tenant's host objects.
pub struct Host {
    pub namespace: Namespace,
    pub quota: ResourceQuota,
    pub limit_range: LimitRange,
    pub owner_binding: RoleBinding,
    pub network_policy: NetworkPolicy,
}

/// The tenant's control plane.
pub struct ControlPlane {
    /// The operator's RoleBinding in the namespace, applied before what needs it.
    pub operator_binding: RoleBinding,
    /// The control plane pod's path to the host's API server.
    pub network_policy: NetworkPolicy,
    /// The objects the chart rendered.
    pub chart: Vec<DynamicObject>,
    pub route: DynamicObject,
    /// With a waker: the ReferenceGrant in its namespace that lets the route reach it.
    pub waker_grant: Option<DynamicObject>,
    /// The apps Gateway and its Certificate (empty without apps settings).
    pub apps: Vec<DynamicObject>,
    /// What the control plane takes from the namespace's quota.
    pub footprint: BTreeMap<String, Quantity>,
    /// The chart archive's sha256.
    pub digest: String,
    /// Whether it sleeps (its StatefulSet scaled to no pod) and why, and when it will.
    pub sleep: sleep::Decision,
}

/// What the platform gives every tenant's control plane.
pub struct Platform<'a> {
    pub settings: &'a VclusterSettings,
    /// Who the operator is, bound in each tenant namespace.
    pub operator: &'a Subject,
    pub api_server: &'a network::ApiServer,
    pub base_domain: &'a str,
}

/// The chart as helm rendered it for one tenant (the one subprocess, in [`crate::helm`]).
pub struct Rendered {
    pub objects: Vec<DynamicObject>,
    pub digest: String,
}

pub fn of(
    tenant: &Tenant,
    host: &HostConfig,
    control_plane: Option<(Platform<'_>, Rendered, sleep::Decision)>,
) -> DesiredState {
    let control_plane = control_plane.map(|(platform, rendered, decision)| {
        let defaults = super::container_defaults(host);
        let mut cp = control_plane_of(&tenant.name_any(), &platform, rendered, &defaults);
        // After the footprint: the quota keeps the sleeping control plane's share, so its wake
        // is never refused by a quota the tenant's workloads filled meanwhile.
        if decision.asleep.is_some() {
            cp.chart = sleep::scaled_to_zero(cp.chart);
        }
        cp.sleep = decision;
        cp
    });
    let config = match &control_plane {
        Some(cp) => host.with_footprint(cp.footprint.clone()),
        None => host.clone(),
    };
    DesiredState {
        host: Host {
            namespace: super::namespace(tenant, &config),
            quota: super::quota(tenant, &config),
            limit_range: super::limit_range(tenant, &config),
            owner_binding: super::owner_binding(tenant),
            network_policy: super::network_policy(tenant, &config),
        },
        config,
        control_plane,
    }
}

fn control_plane_of(
    tenant: &str,
    platform: &Platform<'_>,
    rendered: Rendered,
    defaults: &k8s_openapi::api::core::v1::LimitRangeItem,
) -> ControlPlane {
    let base_domain = platform.base_domain;
    let settings = platform.settings;
    let apps = match &settings.apps {
        Some(a) => vec![
            apps::certificate(tenant, base_domain, a),
            apps::gateway(tenant, base_domain, a),
        ],
        None => vec![],
    };
    ControlPlane {
        operator_binding: self_binding(tenant, platform.operator),
        network_policy: network::policy(tenant, platform.api_server, settings.waker.as_ref()),
        footprint: footprint::of(&rendered.objects, defaults),
        route: route::api_route(
            tenant,
            &crate::names::api_host(tenant, base_domain),
            &settings.api_gateway,
            settings.waker.as_ref(),
        ),
        waker_grant: settings
            .waker
            .as_ref()
            .map(|w| route::waker_grant(tenant, w)),
        apps,
        chart: rendered.objects,
        digest: rendered.digest,
        sleep: sleep::Decision::awake(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        api::TenantSpec,
        build::control_plane::{settings::AppsSettings, subject_of},
        names,
    };

    fn tenant() -> Tenant {
        let mut t = Tenant::new(
            "team-atlas",
            TenantSpec::new("alice@example.com", "8", "16Gi", Some("10Gi")),
        );
        t.metadata.uid = Some("uid-1".into());
        t
    }

    const OPERATOR: &str = "system:serviceaccount:kubespaces-system:kubespaces-operator";

    /// The desired state of `tenant()` with a control plane rendered as [`rendered`].
    fn with_control_plane(apps: bool) -> DesiredState {
        with_control_plane_deciding(apps, sleep::Decision::awake())
    }

    fn with_control_plane_deciding(apps: bool, decision: sleep::Decision) -> DesiredState {
        let settings = VclusterSettings {
            apps: apps.then(|| AppsSettings {
                gateway_class: "apps".into(),
                cluster_issuer: "ca".into(),
                port: 8443,
            }),
            ..VclusterSettings::for_tests()
        };
        let operator = subject_of(OPERATOR);
        let api_server = network::ApiServer {
            addresses: vec!["10.250.0.1".into()],
            ports: vec![6443],
        };
        let platform = Platform {
            settings: &settings,
            operator: &operator,
            api_server: &api_server,
            base_domain: "example.com",
        };
        of(
            &tenant(),
            &HostConfig::default(),
            Some((platform, rendered(), decision)),
        )
    }

    /// A chart of one StatefulSet asking for 1 CPU, 1Gi and a 2Gi volume.
    fn rendered() -> Rendered {
        let sts: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": names::control_plane::RELEASE, "namespace": "kubespaces-tenant-team-atlas"},
            "spec": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "syncer", "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                }}]}},
                "volumeClaimTemplates": [{"spec": {"resources": {"requests": {"storage": "2Gi"}}}}],
            }
        }))
        .expect("a StatefulSet");
        Rendered {
            objects: vec![sts],
            digest: "abc".into(),
        }
    }

    #[test]
    fn a_sleeping_control_plane_runs_no_pod_and_keeps_its_share_of_the_quota() {
        let awake = with_control_plane(false);
        let asleep = with_control_plane_deciding(
            false,
            sleep::Decision {
                asleep: Some(sleep::Cause::Idle),
                ..sleep::Decision::awake()
            },
        );
        let replicas = |d: &DesiredState| {
            d.control_plane.as_ref().unwrap().chart[0].data["spec"]["replicas"].clone()
        };
        assert_eq!((replicas(&awake), replicas(&asleep)), (1.into(), 0.into()));
        assert_eq!(hard(&awake), hard(&asleep));
    }

    fn hard(d: &DesiredState) -> BTreeMap<String, Quantity> {
        d.host.quota.spec.clone().unwrap().hard.unwrap()
    }

    #[test]
    fn without_a_control_plane_the_host_objects_are_the_tenants_alone() {
        let d = of(&tenant(), &HostConfig::default(), None);
        assert!(d.control_plane.is_none());
        assert_eq!(hard(&d)["requests.cpu"].0, "8");
        assert_eq!(hard(&d)["requests.storage"].0, "10Gi");
        assert!(d.config.control_plane_footprint.is_empty());
        let ns = names::namespace("team-atlas");
        assert_eq!(d.host.namespace.metadata.name.as_deref(), Some(ns.as_str()));
        for meta in [
            &d.host.quota.metadata,
            &d.host.limit_range.metadata,
            &d.host.owner_binding.metadata,
            &d.host.network_policy.metadata,
        ] {
            assert_eq!(meta.namespace.as_deref(), Some(ns.as_str()));
            assert_eq!(
                meta.labels.as_ref().unwrap()[names::TENANT_LABEL],
                "team-atlas"
            );
        }
    }

    #[test]
    fn the_quota_grows_once_by_what_the_rendered_control_plane_takes() {
        let d = with_control_plane(false);
        assert_eq!(
            hard(&d)["requests.cpu"].0,
            "9000m",
            "8 for the tenant, 1 for its control plane"
        );
        assert_eq!(hard(&d)["limits.memory"].0, "17Gi");
        assert_eq!(hard(&d)["requests.storage"].0, "12Gi");
        assert_eq!(d.config.control_plane_footprint["requests.cpu"].0, "1000m");

        let cp = d.control_plane.expect("a control plane");
        assert_eq!(cp.digest, "abc");
        assert_eq!(cp.chart.len(), 1);
        assert!(cp.apps.is_empty(), "no apps settings, no apps objects");
        assert_eq!(
            cp.operator_binding.subjects.as_deref(),
            Some(std::slice::from_ref(&subject_of(OPERATOR)))
        );
        assert_eq!(
            cp.route.data["spec"]["hostnames"],
            serde_json::json!(["team-atlas.api.example.com"])
        );
        let ns = names::namespace("team-atlas");
        for meta in [
            &cp.operator_binding.metadata,
            &cp.network_policy.metadata,
            &cp.route.metadata,
        ] {
            assert_eq!(meta.namespace.as_deref(), Some(ns.as_str()));
        }
    }

    #[test]
    fn apps_settings_add_the_apps_gateway_and_its_certificate() {
        let d = with_control_plane(true);
        let kinds: Vec<String> = d
            .control_plane
            .expect("a control plane")
            .apps
            .iter()
            .filter_map(|o| o.types.as_ref().map(|t| t.kind.clone()))
            .collect();
        assert_eq!(kinds, ["Certificate", "Gateway"]);
    }
}
