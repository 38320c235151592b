//! Operator configuration: flags, each with an environment fallback (`KUBESPACES_*`), so the
//! chart can set them either way.

use std::{net::SocketAddr, time::Duration};

use clap::Args;

/// Defaults, shared by the flags and by `HostConfig::default()`.
const DEFAULT_BASE_DOMAIN: &str = "kubespaces.localhost";
const DEFAULT_POD_SECURITY: &str = "baseline";
const DEFAULT_CPU_LIMIT: &str = "500m";
const DEFAULT_MEMORY_LIMIT: &str = "512Mi";
const DEFAULT_CPU_REQUEST: &str = "100m";
const DEFAULT_MEMORY_REQUEST: &str = "128Mi";

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
    /// Pod Security Standard enforced in tenant namespaces (privileged, baseline, restricted).
    #[arg(long, env = "KUBESPACES_POD_SECURITY", default_value = DEFAULT_POD_SECURITY, value_parser = ["privileged", "baseline", "restricted"])]
    pub pod_security: String,
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
}

/// How the controller runs.
#[derive(Args, Debug, Clone)]
pub struct RunConfig {
    #[command(flatten)]
    pub host: HostConfig,
    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "KUBESPACES_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Only reconcile Tenants matching this label selector (to shard tenants across operators).
    #[arg(long, env = "KUBESPACES_SELECTOR")]
    pub selector: Option<String>,
    /// How many tenants are reconciled at once.
    #[arg(long, env = "KUBESPACES_CONCURRENCY", default_value_t = 32)]
    pub concurrency: u16,
    /// How often a Ready tenant is checked again for drift that no watch reported. Checks read
    /// only the operator's caches; nothing is written unless something drifted.
    #[arg(long, env = "KUBESPACES_RESYNC", default_value = "10m", value_parser = parse_duration)]
    pub resync: Duration,
}

fn parse_quantity(s: &str) -> Result<String, String> {
    match crate::quantity::parse(s) {
        Ok(q) if q.is_positive() => Ok(s.to_owned()),
        Ok(_) => Err(format!("{s:?} must be greater than zero")),
        Err(e) => Err(e.to_string()),
    }
}

/// Durations like `30s`, `10m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let err =
        || format!("{s:?} is not a duration; use a number with s, m or h, such as 30s or 10m");
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?);
    let n: u64 = number.parse().map_err(|_| err())?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(err()),
    };
    Ok(Duration::from_secs(secs))
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
