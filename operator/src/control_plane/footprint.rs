//! What the tenant's control plane itself takes from its namespace (pure): the quota grows by
//! this much, so the tenant's budget is the tenant's alone, and the status shows it apart.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, PodSpec, Secret},
    apimachinery::pkg::api::resource::Quantity,
};
use kube::api::DynamicObject;

use crate::quantity::{self, Nanos};

const NANO: i128 = 1_000_000_000;

/// The quota keys a control plane consumes: the requests and limits of its pods (containers
/// without a limit get the namespace's defaults) and the storage of its volume claims.
pub fn of(
    objects: &[DynamicObject],
    default_cpu_limit: &str,
    default_memory_limit: &str,
) -> BTreeMap<String, Quantity> {
    let mut sum: BTreeMap<&str, i128> = BTreeMap::new();
    for o in objects {
        let Some(kind) = o.types.as_ref().map(|t| t.kind.as_str()) else {
            continue;
        };
        if kind == "Secret" {
            // The control plane's own CoreDNS runs as a pod in the namespace too (synced from
            // inside the tenant): its resources are in the values the chart stored.
            for (key, n) in coredns(o, default_cpu_limit, default_memory_limit) {
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
        for (key, n) in pod_effective(&pod, default_cpu_limit, default_memory_limit) {
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
                *sum.entry("requests.storage").or_default() += n * replicas;
            }
        }
    }
    sum.into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (k.to_owned(), format_nanos(k, n)))
        .collect()
}

/// The CoreDNS the vCluster runs (unless embedded or off), per quota key, from the values in
/// the chart's config Secret `vc-config-<release>`.
fn coredns(
    secret: &DynamicObject,
    default_cpu_limit: &str,
    default_memory_limit: &str,
) -> Vec<(&'static str, i128)> {
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
    pod_effective(&pod, default_cpu_limit, default_memory_limit)
        .into_iter()
        .map(|(k, n)| (k, n * replicas))
        .collect()
}

/// A pod's charge per quota key: the larger of its containers' sum and its largest init
/// container, as the quota controller counts it.
fn pod_effective(
    pod: &PodSpec,
    default_cpu_limit: &str,
    default_memory_limit: &str,
) -> Vec<(&'static str, i128)> {
    let keys: [(&'static str, &str, bool, &str); 4] = [
        ("requests.cpu", "cpu", false, default_cpu_limit),
        ("limits.cpu", "cpu", true, default_cpu_limit),
        ("requests.memory", "memory", false, default_memory_limit),
        ("limits.memory", "memory", true, default_memory_limit),
    ];
    keys.iter()
        .map(|(key, resource, limit, default)| {
            let one = |c: &Container| container_value(c, resource, *limit, default);
            let main: i128 = pod.containers.iter().map(one).sum();
            let init = pod
                .init_containers
                .iter()
                .flatten()
                .map(one)
                .max()
                .unwrap_or(0);
            (*key, main.max(init))
        })
        .collect()
}

/// A container's request or limit; a missing limit is the namespace default, a missing request
/// its limit (as the API server defaults them).
fn container_value(c: &Container, resource: &str, limit: bool, default_limit: &str) -> i128 {
    let get = |m: Option<&BTreeMap<String, Quantity>>| {
        m.and_then(|m| m.get(resource))
            .and_then(|q| quantity::parse(&q.0).ok())
            .map(|n| n.0)
    };
    let r = c.resources.as_ref();
    let lim = get(r.and_then(|r| r.limits.as_ref()))
        .or_else(|| quantity::parse(default_limit).ok().map(|n| n.0))
        .unwrap_or(0);
    if limit {
        lim
    } else {
        get(r.and_then(|r| r.requests.as_ref())).unwrap_or(lim)
    }
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
        let f = of(&[sts], "500m", "512Mi");
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
        let g = of(&[config], "500m", "512Mi");
        assert_eq!(g["limits.cpu"].0, "100m");
        assert_eq!(g["requests.memory"].0, "64Mi");
    }
}
