//! What the tenant's control plane itself takes from its namespace (pure): the quota grows by
//! this much, so the tenant's budget is the tenant's alone, and the status shows it apart.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, LimitRangeItem, PodSpec, Secret},
    apimachinery::pkg::api::resource::Quantity,
};
use kube::api::DynamicObject;

use crate::quantity::{self, Nanos};

const NANO: i128 = 1_000_000_000;

/// The resources a quota budgets per pod, each as `requests.<r>` and `limits.<r>`.
const RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// The quota keys a control plane consumes: the requests and limits of its pods (containers
/// that state none get `defaults`, the namespace's LimitRange item) and the storage of its
/// volume claims.
pub fn of(objects: &[DynamicObject], defaults: &LimitRangeItem) -> BTreeMap<String, Quantity> {
    let mut sum: BTreeMap<String, i128> = BTreeMap::new();
    for o in objects {
        let Some(kind) = o.types.as_ref().map(|t| t.kind.as_str()) else {
            continue;
        };
        if kind == "Secret" {
            // The control plane's own CoreDNS runs as a pod in the namespace too (synced from
            // inside the tenant): its resources are in the values the chart stored.
            for (key, n) in coredns(o, defaults) {
                *sum.entry(key).or_default() += n;
            }
            continue;
        }
        if !matches!(kind, "StatefulSet" | "Deployment") {
            continue;
        }
        let replicas = o.data["spec"]["replicas"].as_i64().unwrap_or(1) as i128;
        let Ok(pod) = serde_json::from_value::<PodSpec>(o.data["spec"]["template"]["spec"].clone())
        else {
            continue;
        };
        for (key, n) in pod_effective(&pod, defaults) {
            *sum.entry(key).or_default() += n * replicas;
        }
        for claim in o.data["spec"]["volumeClaimTemplates"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(size) = claim["spec"]["resources"]["requests"]["storage"].as_str()
                && let Ok(Nanos(n)) = quantity::parse(size)
            {
                *sum.entry("requests.storage".to_owned()).or_default() += n * replicas;
            }
        }
    }
    sum.into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| {
            let q = format_nanos(&k, n);
            (k, q)
        })
        .collect()
}

/// The CoreDNS the vCluster runs (unless embedded or off), per quota key, from the values in
/// the chart's config Secret `vc-config-<release>`.
fn coredns(secret: &DynamicObject, defaults: &LimitRangeItem) -> Vec<(String, i128)> {
    if !secret
        .metadata
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with("vc-config-"))
    {
        return vec![];
    }
    let Some(parsed) = serde_json::to_value(secret)
        .ok()
        .and_then(|v| serde_json::from_value::<Secret>(v).ok())
    else {
        return vec![];
    };
    let Some(config) = parsed.data.as_ref().and_then(|d| d.get("config.yaml")) else {
        return vec![];
    };
    let Ok(values) = serde_yaml::from_slice::<serde_json::Value>(&config.0) else {
        return vec![];
    };
    let dns = &values["controlPlane"]["coredns"];
    if dns["enabled"] == false || dns["embedded"] == true {
        return vec![];
    }
    let replicas = dns["deployment"]["replicas"].as_i64().unwrap_or(1) as i128;
    let container: Container = serde_json::from_value(serde_json::json!({
        "name": "coredns",
        "resources": dns["deployment"]["resources"],
    }))
    .unwrap_or_default();
    let pod = PodSpec {
        containers: vec![container],
        ..PodSpec::default()
    };
    pod_effective(&pod, defaults)
        .into_iter()
        .map(|(k, n)| (k, n * replicas))
        .collect()
}

/// A pod's charge per quota key: the larger of its containers' sum and its largest init
/// container, as the quota controller counts it.
fn pod_effective(pod: &PodSpec, defaults: &LimitRangeItem) -> Vec<(String, i128)> {
    let mut charge = vec![];
    for resource in RESOURCES {
        for limit in [false, true] {
            let one = |c: &Container| container_value(c, resource, limit, defaults);
            let main: i128 = pod.containers.iter().map(one).sum();
            let init = pod
                .init_containers
                .iter()
                .flatten()
                .map(one)
                .max()
                .unwrap_or(0);
            let kind = if limit { "limits" } else { "requests" };
            charge.push((format!("{kind}.{resource}"), main.max(init)));
        }
    }
    charge
}

/// A container's request or limit as the API server and the LimitRange admit it: a missing
/// limit is the default limit; a missing request is the container's own limit if it states
/// one, else the default request (the default limit where the LimitRange has none).
fn container_value(c: &Container, resource: &str, limit: bool, defaults: &LimitRangeItem) -> i128 {
    let get = |m: Option<&BTreeMap<String, Quantity>>| {
        m.and_then(|m| m.get(resource))
            .and_then(|q| quantity::parse(&q.0).ok())
            .map(|n| n.0)
    };
    let r = c.resources.as_ref();
    let own_limit = get(r.and_then(|r| r.limits.as_ref()));
    let default_limit = get(defaults.default.as_ref());
    if limit {
        return own_limit.or(default_limit).unwrap_or(0);
    }
    get(r.and_then(|r| r.requests.as_ref()))
        .or(own_limit)
        .or_else(|| get(defaults.default_request.as_ref()))
        .or(default_limit)
        .unwrap_or(0)
}

/// Nanos as a quantity: CPU in millicores, bytes in Gi or Mi when whole, else bytes.
fn format_nanos(key: &str, n: i128) -> Quantity {
    if key.ends_with("cpu") {
        let milli = (n + 999_999) / 1_000_000;
        return Quantity(format!("{milli}m"));
    }
    let bytes = (n + NANO - 1) / NANO;
    if bytes % (1 << 30) == 0 {
        Quantity(format!("{}Gi", bytes >> 30))
    } else if bytes % (1 << 20) == 0 {
        Quantity(format!("{}Mi", bytes >> 20))
    } else {
        Quantity(bytes.to_string())
    }
}

/// `a + b` for quantities of one quota key.
pub fn add(key: &str, a: &Quantity, b: &Quantity) -> Quantity {
    match (quantity::parse(&a.0), quantity::parse(&b.0)) {
        (Ok(x), Ok(y)) => format_nanos(key, x.0 + y.0),
        _ => a.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_counts_containers_init_containers_defaults_and_volumes() {
        let sts: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "vcluster"},
            "spec": {
                "replicas": 1,
                "template": {"spec": {
                    "initContainers": [{"name": "k", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
                    "containers": [
                        {"name": "syncer", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}},
                    ],
                }},
                "volumeClaimTemplates": [{"spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
            }
        }))
        .unwrap();
        let f = of(&[sts], &defaults());
        assert_eq!(
            f["requests.cpu"].0, "2000m",
            "the init container's limit is its request"
        );
        assert_eq!(f["limits.cpu"].0, "2000m");
        assert_eq!(f["requests.memory"].0, "1Gi");
        assert_eq!(f["limits.memory"].0, "1Gi");
        assert_eq!(f["requests.storage"].0, "1Gi");
        assert_eq!(
            add(
                "limits.cpu",
                &Quantity("8".into()),
                &Quantity("500m".into())
            )
            .0,
            "8500m"
        );
        assert_eq!(
            add(
                "limits.memory",
                &Quantity("16Gi".into()),
                &Quantity("256Mi".into())
            )
            .0,
            "16640Mi"
        );
        // The chart's stored values: CoreDNS with its own resources counts too.
        let values = "controlPlane:\n  coredns:\n    enabled: true\n    deployment:\n      replicas: 1\n      resources:\n        limits: {cpu: 100m, memory: 128Mi}\n        requests: {cpu: 20m, memory: 64Mi}\n";
        let config: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vc-config-vcluster"},
            "data": {"config.yaml": k8s_openapi::ByteString(values.as_bytes().to_vec())},
        }))
        .unwrap();
        let g = of(&[config], &defaults());
        assert_eq!(g["limits.cpu"].0, "100m");
        assert_eq!(g["requests.memory"].0, "64Mi");
        // Nothing states ephemeral storage: the LimitRange's defaults count, request and limit.
        assert_eq!(g["requests.ephemeral-storage"].0, "64Mi");
        assert_eq!(g["limits.ephemeral-storage"].0, "512Mi");
        assert_eq!(f["requests.ephemeral-storage"].0, "64Mi");
    }

    fn defaults() -> LimitRangeItem {
        let pairs = |items: &[(&str, &str)]| {
            Some(
                items
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect(),
            )
        };
        LimitRangeItem {
            type_: "Container".into(),
            default: pairs(&[
                ("cpu", "500m"),
                ("memory", "512Mi"),
                ("ephemeral-storage", "512Mi"),
            ]),
            default_request: pairs(&[
                ("cpu", "100m"),
                ("memory", "128Mi"),
                ("ephemeral-storage", "64Mi"),
            ]),
            ..LimitRangeItem::default()
        }
    }
}
