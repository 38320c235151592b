//! What the operator puts on the host for every tenant, beyond the tenant's own spec: flags,
//! each with an environment fallback (`KUBESPACES_*`) so the chart can set them either way, read
//! into plain values the builders take.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use clap::Args;

/// Defaults, shared by the flags and by `HostConfig::default()`.
const DEFAULT_BASE_DOMAIN: &str = "kubespaces.localhost";
const DEFAULT_POD_SECURITY: &str = "restricted";
const DEFAULT_CPU_LIMIT: &str = "500m";
const DEFAULT_MEMORY_LIMIT: &str = "512Mi";
const DEFAULT_CPU_REQUEST: &str = "100m";
const DEFAULT_EPHEMERAL_STORAGE: &str = "10Gi";
const DEFAULT_EPHEMERAL_STORAGE_LIMIT: &str = "512Mi";
const DEFAULT_EPHEMERAL_STORAGE_REQUEST: &str = "64Mi";
const DEFAULT_MEMORY_REQUEST: &str = "128Mi";
/// The Pod Security Standards of the Kubernetes release the operator is tested against: a
/// cluster upgrade does not tighten or loosen what tenants may run until this is raised.
const DEFAULT_POD_SECURITY_VERSION: &str = "v1.37";
/// Addresses no tenant pod may reach even when the internet is open to them: private networks
/// (where the nodes, other clusters and the company network live), carrier-grade NAT,
/// link-local (the cloud metadata service at 169.254.169.254) and loopback.
const DEFAULT_EGRESS_EXCEPT: [&str; 6] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "127.0.0.0/8",
];
/// 53 is where DNS pods usually listen; 1053 where CoreDNS runs unprivileged (as in the local
/// cluster). NetworkPolicy sees the pod's port, after the Service's port 53 is translated.
const DEFAULT_DNS_PORTS: [u16; 2] = [53, 1053];
/// Object counts per tenant namespace: generous for real workloads, but a bound on what one
/// tenant can pile into the shared etcd.
const DEFAULT_MAX_PODS: u32 = 200;
const DEFAULT_MAX_SERVICES: u32 = 50;
const DEFAULT_MAX_SECRETS: u32 = 200;
const DEFAULT_MAX_CONFIGMAPS: u32 = 200;
const DEFAULT_MAX_PVCS: u32 = 50;

/// What the operator puts on the host for every tenant, beyond the tenant's own spec.
#[derive(Args, Debug, Clone)]
pub struct HostConfig {
    /// Base domain of the public tenant URLs (`<tenant>.api.<domain>`).
    #[arg(
        long,
        env = "KUBESPACES_BASE_DOMAIN",
        default_value = DEFAULT_BASE_DOMAIN
    )]
    pub base_domain: String,
    /// Pod Security Standard enforced in tenant namespaces and inside each tenant's vCluster
    /// (restricted or baseline).
    /// `privileged` is not offered: it enforces nothing, so a tenant's pods could run
    /// privileged, use host namespaces and mount host paths, i.e. take over the node and every
    /// tenant on it (and the operator's bounds refuse such a namespace).
    #[arg(long, env = "KUBESPACES_POD_SECURITY", default_value = DEFAULT_POD_SECURITY, value_parser = ["baseline", "restricted"])]
    pub pod_security: String,
    /// Version of the Pod Security Standards enforced and warned about (`v1.N`, or `latest`,
    /// which follows every cluster upgrade).
    #[arg(long, env = "KUBESPACES_POD_SECURITY_VERSION", default_value = DEFAULT_POD_SECURITY_VERSION, value_parser = parse_pod_security_version)]
    pub pod_security_version: String,
    /// Default CPU limit for containers that set none.
    #[arg(long, env = "KUBESPACES_DEFAULT_CPU_LIMIT", default_value = DEFAULT_CPU_LIMIT, value_parser = parse_quantity)]
    pub default_cpu_limit: String,
    /// Default memory limit for containers that set none.
    #[arg(long, env = "KUBESPACES_DEFAULT_MEMORY_LIMIT", default_value = DEFAULT_MEMORY_LIMIT, value_parser = parse_quantity)]
    pub default_memory_limit: String,
    /// Default CPU request for containers that set none.
    #[arg(long, env = "KUBESPACES_DEFAULT_CPU_REQUEST", default_value = DEFAULT_CPU_REQUEST, value_parser = parse_quantity)]
    pub default_cpu_request: String,
    /// Default memory request for containers that set none.
    #[arg(long, env = "KUBESPACES_DEFAULT_MEMORY_REQUEST", default_value = DEFAULT_MEMORY_REQUEST, value_parser = parse_quantity)]
    pub default_memory_request: String,
    /// Ephemeral storage each tenant may request and use (both are capped): its containers'
    /// writable layers, logs and emptyDir volumes, on node disks that tenants share. Its control
    /// plane's is added on top.
    #[arg(long = "tenant-ephemeral-storage", env = "KUBESPACES_TENANT_EPHEMERAL_STORAGE", default_value = DEFAULT_EPHEMERAL_STORAGE, value_parser = parse_quantity)]
    pub ephemeral_storage: String,
    /// Default ephemeral-storage limit for containers that set none (the kubelet evicts a pod
    /// that writes more than its containers' limits).
    #[arg(long, env = "KUBESPACES_DEFAULT_EPHEMERAL_STORAGE_LIMIT", default_value = DEFAULT_EPHEMERAL_STORAGE_LIMIT, value_parser = parse_quantity)]
    pub default_ephemeral_storage_limit: String,
    /// Default ephemeral-storage request for containers that set none.
    #[arg(long, env = "KUBESPACES_DEFAULT_EPHEMERAL_STORAGE_REQUEST", default_value = DEFAULT_EPHEMERAL_STORAGE_REQUEST, value_parser = parse_quantity)]
    pub default_ephemeral_storage_request: String,
    #[command(flatten)]
    pub egress: EgressConfig,
    #[command(flatten)]
    pub counts: CountLimits,
    /// What the tenant's control plane takes from its namespace's quota (derived per tenant
    /// from the rendered chart, never a flag): the quota grows by it.
    #[arg(skip)]
    pub control_plane_footprint: BTreeMap<String, Quantity>,
}

impl HostConfig {
    /// This configuration for a tenant whose control plane takes `footprint`.
    pub fn with_footprint(&self, footprint: BTreeMap<String, Quantity>) -> Self {
        Self {
            control_plane_footprint: footprint,
            ..self.clone()
        }
    }
}

/// Where tenant pods may open connections to, besides their own namespace and cluster DNS.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct EgressConfig {
    /// Let tenant pods reach the internet: every IPv4 address outside
    /// `--tenant-egress-except`. With `false` they reach only their namespace and cluster DNS.
    #[arg(long = "tenant-egress-internet", env = "KUBESPACES_TENANT_EGRESS_INTERNET", default_value_t = true, action = clap::ArgAction::Set)]
    pub internet: bool,
    /// IPv4 ranges tenant pods never reach, even with the internet open (comma-separated).
    /// They must cover the cluster's nodes, pods and Services, and the cloud metadata address.
    #[arg(long = "tenant-egress-except", env = "KUBESPACES_TENANT_EGRESS_EXCEPT", value_delimiter = ',', default_values = DEFAULT_EGRESS_EXCEPT, value_parser = parse_ipv4_cidr)]
    pub except: Vec<String>,
    /// Ports the cluster DNS pods (`k8s-app=kube-dns` in kube-system) listen on, which tenant
    /// pods may reach over UDP and TCP (comma-separated).
    #[arg(long = "tenant-dns-ports", env = "KUBESPACES_TENANT_DNS_PORTS", value_delimiter = ',', default_values_t = DEFAULT_DNS_PORTS)]
    pub dns_ports: Vec<u16>,
}

/// How many objects of each kind a tenant namespace may hold (part of its ResourceQuota).
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct CountLimits {
    /// Most pods (not yet finished) in a tenant namespace.
    #[arg(long = "tenant-max-pods", env = "KUBESPACES_TENANT_MAX_PODS", default_value_t = DEFAULT_MAX_PODS)]
    pub pods: u32,
    /// Most Services in a tenant namespace.
    #[arg(long = "tenant-max-services", env = "KUBESPACES_TENANT_MAX_SERVICES", default_value_t = DEFAULT_MAX_SERVICES)]
    pub services: u32,
    /// Most Secrets in a tenant namespace.
    #[arg(long = "tenant-max-secrets", env = "KUBESPACES_TENANT_MAX_SECRETS", default_value_t = DEFAULT_MAX_SECRETS)]
    pub secrets: u32,
    /// Most ConfigMaps in a tenant namespace.
    #[arg(long = "tenant-max-configmaps", env = "KUBESPACES_TENANT_MAX_CONFIGMAPS", default_value_t = DEFAULT_MAX_CONFIGMAPS)]
    pub configmaps: u32,
    /// Most PersistentVolumeClaims in a tenant namespace.
    #[arg(long = "tenant-max-pvcs", env = "KUBESPACES_TENANT_MAX_PVCS", default_value_t = DEFAULT_MAX_PVCS)]
    pub persistentvolumeclaims: u32,
    /// Most NodePort Services in a tenant namespace. 0 by default: a node port opens the same
    /// port on every node, for everyone who reaches a node, past the tenant's NetworkPolicy.
    #[arg(
        long = "tenant-max-nodeports",
        env = "KUBESPACES_TENANT_MAX_NODEPORTS",
        default_value_t = 0
    )]
    pub nodeports: u32,
    /// Most LoadBalancer Services in a tenant namespace. 0 by default: each costs a cloud load
    /// balancer and exposes the tenant outside the platform's gateway.
    #[arg(
        long = "tenant-max-loadbalancers",
        env = "KUBESPACES_TENANT_MAX_LOADBALANCERS",
        default_value_t = 0
    )]
    pub loadbalancers: u32,
}

/// `v1.N` or `latest`, as the Pod Security admission labels take them.
fn parse_pod_security_version(s: &str) -> Result<String, String> {
    let minor = s.strip_prefix("v1.");
    if s == "latest"
        || minor.is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
    {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a Pod Security version; use v1.N (such as {DEFAULT_POD_SECURITY_VERSION}) or latest"
        ))
    }
}

/// An IPv4 range in canonical form (`a.b.c.d/n`, no bits set past the prefix, n from 1 to 32),
/// as NetworkPolicy's `ipBlock.except` takes it inside `0.0.0.0/0`.
fn parse_ipv4_cidr(s: &str) -> Result<String, String> {
    let err = |why: &str| format!("{s:?} is not an IPv4 range such as 10.0.0.0/8: {why}");
    let (address, prefix) = s.trim().split_once('/').ok_or_else(|| err("no /prefix"))?;
    let address: std::net::Ipv4Addr = address.parse().map_err(|_| err("bad address"))?;
    let prefix: u32 = prefix
        .parse()
        .ok()
        .filter(|p| (1..=32).contains(p))
        .ok_or_else(|| err("the prefix must be 1 to 32"))?;
    let host_bits = u32::MAX.checked_shr(prefix).unwrap_or(0);
    if u32::from(address) & host_bits != 0 {
        return Err(err("bits are set past the prefix"));
    }
    Ok(format!("{address}/{prefix}"))
}

fn parse_quantity(s: &str) -> Result<String, String> {
    match crate::quantity::parse(s) {
        Ok(q) if q.is_positive() => Ok(s.to_owned()),
        Ok(_) => Err(format!("{s:?} must be greater than zero")),
        Err(e) => Err(e.to_string()),
    }
}

/// Durations like `30s`, `10m`, `1h` or `1h30m` (jiff's friendly format).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let err =
        || format!("{s:?} is not a duration; use a number with s, m or h, such as 30s or 10m");
    let span: jiff::SignedDuration = s.parse().map_err(|_| err())?;
    Duration::try_from(span).map_err(|_| format!("{s:?} must not be negative"))
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            base_domain: DEFAULT_BASE_DOMAIN.into(),
            pod_security: DEFAULT_POD_SECURITY.into(),
            default_cpu_limit: DEFAULT_CPU_LIMIT.into(),
            default_memory_limit: DEFAULT_MEMORY_LIMIT.into(),
            default_cpu_request: DEFAULT_CPU_REQUEST.into(),
            default_memory_request: DEFAULT_MEMORY_REQUEST.into(),
            ephemeral_storage: DEFAULT_EPHEMERAL_STORAGE.into(),
            default_ephemeral_storage_limit: DEFAULT_EPHEMERAL_STORAGE_LIMIT.into(),
            default_ephemeral_storage_request: DEFAULT_EPHEMERAL_STORAGE_REQUEST.into(),
            pod_security_version: DEFAULT_POD_SECURITY_VERSION.into(),
            egress: EgressConfig::default(),
            counts: CountLimits::default(),
            control_plane_footprint: BTreeMap::new(),
        }
    }
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            internet: true,
            except: DEFAULT_EGRESS_EXCEPT.map(String::from).to_vec(),
            dns_ports: DEFAULT_DNS_PORTS.to_vec(),
        }
    }
}

impl Default for CountLimits {
    fn default() -> Self {
        Self {
            pods: DEFAULT_MAX_PODS,
            services: DEFAULT_MAX_SERVICES,
            secrets: DEFAULT_MAX_SECRETS,
            configmaps: DEFAULT_MAX_CONFIGMAPS,
            persistentvolumeclaims: DEFAULT_MAX_PVCS,
            nodeports: 0,
            loadbalancers: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("10").unwrap_err().contains("30s"));
        assert!(parse_duration("ten minutes").is_err());
    }

    /// The flags as the operator would parse them from `args` (no environment involved unless
    /// the test process has KUBESPACES_* set, which it does not).
    fn parse(args: &[&str]) -> Result<HostConfig, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            host: HostConfig,
        }
        let argv = std::iter::once("kubespaces-operator").chain(args.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.host)
    }

    #[test]
    fn flag_defaults_are_the_default_configuration() {
        let parsed = parse(&[]).unwrap();
        let default = HostConfig::default();
        assert_eq!(parsed.egress, default.egress);
        assert_eq!(parsed.counts, default.counts);
        assert_eq!(parsed.pod_security_version, default.pod_security_version);
        assert_eq!(parsed.pod_security, default.pod_security);
        assert!(default.egress.internet);
        assert_eq!(
            (default.counts.nodeports, default.counts.loadbalancers),
            (0, 0)
        );
    }

    #[test]
    fn egress_and_counts_are_configurable() {
        let parsed = parse(&[
            "--tenant-egress-internet=false",
            "--tenant-egress-except=10.0.0.0/8,169.254.169.254/32",
            "--tenant-dns-ports=53",
            "--tenant-max-pods=10",
            "--tenant-max-nodeports=2",
        ])
        .unwrap();
        assert!(!parsed.egress.internet);
        assert_eq!(parsed.egress.except, ["10.0.0.0/8", "169.254.169.254/32"]);
        assert_eq!(parsed.egress.dns_ports, [53]);
        assert_eq!((parsed.counts.pods, parsed.counts.nodeports), (10, 2));
        assert_eq!(parsed.counts.services, DEFAULT_MAX_SERVICES);
    }

    #[test]
    fn ranges_must_be_canonical_ipv4() {
        assert_eq!(parse_ipv4_cidr("100.64.0.0/10"), Ok("100.64.0.0/10".into()));
        assert_eq!(parse_ipv4_cidr("1.2.3.4/32"), Ok("1.2.3.4/32".into()));
        for bad in [
            "10.0.0.1/8",
            "10.0.0.0",
            "10.0.0.0/0",
            "10.0.0.0/33",
            "fd00::/8",
            "x/8",
        ] {
            let e = parse_ipv4_cidr(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn pod_security_versions() {
        assert!(parse_pod_security_version("v1.37").is_ok());
        assert!(parse_pod_security_version("latest").is_ok());
        for bad in ["1.37", "v1.", "v2.0", "v1.37.1", "newest"] {
            assert!(parse_pod_security_version(bad).is_err(), "{bad}");
        }
        assert!(parse(&["--pod-security-version=v1.x"]).is_err());
    }

    #[test]
    fn privileged_pod_security_is_refused() {
        let refused = parse(&["--pod-security=privileged"])
            .unwrap_err()
            .to_string();
        assert!(refused.contains("baseline"), "{refused}");
        assert!(parse(&["--pod-security=restricted"]).is_ok());
    }

    #[test]
    fn quantities_must_be_positive() {
        assert!(parse_quantity("500m").is_ok());
        assert!(
            parse_quantity("0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(parse_quantity("lots").is_err());
    }
}
