//! The settings of the tenant control plane: which chart, pinned how, reached through which
//! Gateway, with what credential lifetime.

use std::{path::PathBuf, time::Duration};

use clap::{Args, ValueEnum};

/// What gives every tenant its own control plane.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlPlaneKind {
    /// A vCluster from the pinned chart, exposed through the API Gateway.
    Vcluster,
    /// None: tenants get the host side only (namespace, quota, access, isolation).
    None,
}

/// A Service in another namespace: `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
}

/// How long a tenant API may go without a connection before its control plane sleeps; None:
/// never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterIdle(pub Option<Duration>);

/// A Gateway listener a route attaches to: `namespace/name/sectionName`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentRef {
    pub namespace: String,
    pub name: String,
    pub section: String,
}

#[derive(Args, Debug, Clone)]
pub struct ControlPlaneConfig {
    /// What gives every tenant its own control plane: `vcluster` (the pinned chart; needs the
    /// `--vcluster-*` and `--api-gateway` settings) or `none` (host side only).
    #[arg(
        long = "control-plane",
        env = "KUBESPACES_CONTROL_PLANE",
        value_enum,
        default_value = "vcluster"
    )]
    pub kind: ControlPlaneKind,
    /// The pinned vCluster chart archive (a `helm package` .tgz) on the operator's file system.
    #[arg(long = "vcluster-chart", env = "KUBESPACES_VCLUSTER_CHART")]
    pub chart: Option<PathBuf>,
    /// The chart version the archive must hold (e.g. 0.36.1).
    #[arg(
        long = "vcluster-chart-version",
        env = "KUBESPACES_VCLUSTER_CHART_VERSION"
    )]
    pub chart_version: Option<String>,
    /// The sha256 digest the archive must have (`sha256:<64 hex digits>`). A mismatch installs
    /// nothing: every tenant's control plane stalls until the pin or the archive is fixed.
    #[arg(long = "vcluster-chart-digest", env = "KUBESPACES_VCLUSTER_CHART_DIGEST", value_parser = parse_digest)]
    pub chart_digest: Option<String>,
    /// Platform values files for the chart (images, resources), applied before the values the
    /// operator derives per tenant (comma-separated).
    #[arg(
        long = "vcluster-values",
        env = "KUBESPACES_VCLUSTER_VALUES",
        value_delimiter = ','
    )]
    pub values: Vec<PathBuf>,
    /// The helm binary that renders the chart (`helm template`).
    #[arg(long = "helm", env = "KUBESPACES_HELM", default_value = "helm")]
    pub helm: PathBuf,
    /// The Gateway listener tenant API routes attach to: `namespace/name/sectionName`. It must
    /// pass TLS through (`protocol: TLS`, `tls.mode: Passthrough`) for `*.api.<base domain>`.
    #[arg(long = "api-gateway", env = "KUBESPACES_API_GATEWAY", value_parser = parse_parent_ref)]
    pub api_gateway: Option<ParentRef>,
    /// Where the operator reaches the Gateway (`host:port`), e.g. its in-cluster Service, when
    /// the public names do not resolve where the operator runs. The public name still goes in
    /// the TLS server name, so the route and the certificate checked are the public ones.
    #[arg(long = "gateway-address", env = "KUBESPACES_GATEWAY_ADDRESS")]
    pub gateway_address: Option<String>,
    /// StorageClass of the control plane's volume (its datastore). Empty: the cluster default.
    #[arg(long = "control-plane-storage-class", env = "KUBESPACES_STORAGE_CLASS")]
    pub storage_class: Option<String>,
    /// Lifetime of the credential in the tenant kubeconfig (e.g. `24h`). The operator issues a
    /// new one when two thirds of it have passed.
    #[arg(long = "kubeconfig-lifetime", env = "KUBESPACES_KUBECONFIG_LIFETIME", default_value = "24h", value_parser = parse_lifetime)]
    pub credential_lifetime: Duration,
    /// The GatewayClass of each tenant's apps Gateway (HTTPS for `*.<name>.apps.<base domain>`,
    /// terminated there). With `--apps-cluster-issuer`; without both, tenants get no apps URL.
    #[arg(long = "apps-gateway-class", env = "KUBESPACES_APPS_GATEWAY_CLASS")]
    pub apps_gateway_class: Option<String>,
    /// The cert-manager ClusterIssuer that signs each tenant's `*.<name>.apps.<base domain>`
    /// certificate. With `--apps-gateway-class`.
    #[arg(long = "apps-cluster-issuer", env = "KUBESPACES_APPS_CLUSTER_ISSUER")]
    pub apps_cluster_issuer: Option<String>,
    /// The port of the apps listener: one the Gateway implementation serves (Traefik: an
    /// entry point's port).
    #[arg(
        long = "apps-port",
        env = "KUBESPACES_APPS_PORT",
        default_value_t = 443
    )]
    pub apps_port: u16,
    /// How many tenant control planes may restart at once when what they run changes (new
    /// chart values, a new chart): the others keep running the old template until their turn.
    /// A first start is no restart and does not count.
    #[arg(
        long = "max-restarting-control-planes",
        env = "KUBESPACES_MAX_RESTARTING_CONTROL_PLANES",
        default_value_t = 2,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub max_restarting: u16,
    /// How long a restarted control plane may take to run again; one that takes longer halts
    /// the roll for every tenant until it runs (or the change is undone).
    #[arg(long = "control-plane-restart-deadline", env = "KUBESPACES_CONTROL_PLANE_RESTART_DEADLINE", default_value = "10m", value_parser = crate::build::settings::parse_duration)]
    pub restart_deadline: Duration,
    /// The waker's Service (`namespace/name`, port 443): every tenant API route sends its
    /// connections there, so the waker notes each tenant's activity and wakes a sleeping tenant
    /// on the first connection. The activity Leases are read in that namespace. Unset: routes go
    /// straight to each control plane, and tenants sleep and wake only on request.
    #[arg(long = "waker-service", env = "KUBESPACES_WAKER_SERVICE", value_parser = parse_service_ref)]
    pub waker_service: Option<ServiceRef>,
    /// How long a tenant API may go without a connection before its control plane sleeps, for
    /// tenants whose `spec.sleep.afterIdle` is unset: a duration such as `1h`, or `never`.
    /// Only with `--waker-service` (nothing else counts connections).
    #[arg(long = "sleep-after-idle", env = "KUBESPACES_SLEEP_AFTER_IDLE", default_value = "never", value_parser = parse_after_idle)]
    pub sleep_after_idle: AfterIdle,
}

/// How tenants' apps are exposed: a Gateway per tenant and a wildcard certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppsSettings {
    pub gateway_class: String,
    pub cluster_issuer: String,
    pub port: u16,
}

/// How tenant control planes restart when what they run changes
/// (`reconcile::control_plane::roll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollPolicy {
    /// At most this many restarting at once.
    pub max_rolling: usize,
    /// A control plane that does not run again this long after its restart halts the roll.
    pub deadline: Duration,
}

/// What a vcluster control plane needs, checked at start-up.
#[derive(Debug, Clone)]
pub struct VclusterSettings {
    pub chart: PathBuf,
    pub chart_version: String,
    pub chart_digest: String,
    pub values: Vec<PathBuf>,
    pub helm: PathBuf,
    pub api_gateway: ParentRef,
    pub gateway_address: Option<String>,
    pub storage_class: Option<String>,
    pub credential_lifetime: Duration,
    /// None: no apps exposure (the platform has no apps Gateway or issuer).
    pub apps: Option<AppsSettings>,
    /// How control planes restart when what they run changes.
    pub roll: RollPolicy,
    /// The waker every tenant API route goes through; None: straight to the control plane.
    pub waker: Option<ServiceRef>,
    /// The platform's default for `spec.sleep.afterIdle`.
    pub sleep_after_idle: AfterIdle,
}

#[cfg(test)]
impl VclusterSettings {
    /// Settings for unit tests: a pinned chart, a Gateway, no apps exposure.
    pub fn for_tests() -> Self {
        VclusterSettings {
            chart: "c.tgz".into(),
            chart_version: "0.36.1".into(),
            chart_digest: "sha256:00".into(),
            values: vec![],
            helm: "helm".into(),
            api_gateway: ParentRef {
                namespace: "gw".into(),
                name: "g".into(),
                section: "api".into(),
            },
            gateway_address: None,
            storage_class: Some("local-path".into()),
            credential_lifetime: Duration::from_secs(86400),
            apps: None,
            roll: RollPolicy {
                max_rolling: 2,
                deadline: Duration::from_secs(600),
            },
            waker: None,
            sleep_after_idle: AfterIdle(None),
        }
    }
}

impl ControlPlaneConfig {
    /// The vcluster settings, or None for `--control-plane=none`; an error names the missing
    /// flag.
    pub fn vcluster(&self) -> Result<Option<VclusterSettings>, String> {
        if self.kind == ControlPlaneKind::None {
            return Ok(None);
        }
        fn need<T: Clone>(v: &Option<T>, flag: &str) -> Result<T, String> {
            v.clone().ok_or_else(|| {
                format!("--control-plane=vcluster needs {flag} (or --control-plane=none for tenants without their own control plane)")
            })
        }
        Ok(Some(VclusterSettings {
            chart: need(&self.chart, "--vcluster-chart")?,
            chart_version: need(&self.chart_version, "--vcluster-chart-version")?,
            chart_digest: need(&self.chart_digest, "--vcluster-chart-digest")?,
            values: self.values.clone(),
            helm: self.helm.clone(),
            api_gateway: need(&self.api_gateway, "--api-gateway")?,
            gateway_address: self.gateway_address.clone().filter(|a| !a.is_empty()),
            storage_class: self.storage_class.clone().filter(|s| !s.is_empty()),
            credential_lifetime: self.credential_lifetime,
            apps: self.apps()?,
            roll: RollPolicy {
                max_rolling: usize::from(self.max_restarting),
                deadline: self.restart_deadline,
            },
            waker: self.waker_service.clone(),
            sleep_after_idle: match &self.waker_service {
                Some(_) => self.sleep_after_idle,
                None if self.sleep_after_idle.0.is_some() => {
                    return Err("--sleep-after-idle needs --waker-service: only the waker sees the connections that keep a tenant awake (or set --sleep-after-idle=never)".into());
                }
                None => AfterIdle(None),
            },
        }))
    }

    fn apps(&self) -> Result<Option<AppsSettings>, String> {
        let class = self.apps_gateway_class.clone().filter(|c| !c.is_empty());
        let issuer = self.apps_cluster_issuer.clone().filter(|i| !i.is_empty());
        match (class, issuer) {
            (Some(gateway_class), Some(cluster_issuer)) => Ok(Some(AppsSettings {
                gateway_class,
                cluster_issuer,
                port: self.apps_port,
            })),
            (None, None) => Ok(None),
            (Some(_), None) => Err("--apps-gateway-class needs --apps-cluster-issuer (the ClusterIssuer of the tenants' apps certificates), or drop both for tenants without an apps URL".into()),
            (None, Some(_)) => Err("--apps-cluster-issuer needs --apps-gateway-class (the GatewayClass of the tenants' apps Gateways), or drop both for tenants without an apps URL".into()),
        }
    }
}

fn parse_digest(s: &str) -> Result<String, String> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
    } else {
        Err(format!(
            "{s:?} is not a sha256 digest: give `sha256:` and 64 hex digits (sha256sum of the archive)"
        ))
    }
}

fn parse_parent_ref(s: &str) -> Result<ParentRef, String> {
    match s.split('/').collect::<Vec<_>>()[..] {
        [namespace, name, section] if [namespace, name, section].iter().all(|p| !p.is_empty()) => {
            Ok(ParentRef {
                namespace: namespace.into(),
                name: name.into(),
                section: section.into(),
            })
        }
        _ => Err(format!(
            "{s:?} is not a Gateway listener: give namespace/name/sectionName, e.g. kubespaces-gateway/kubespaces/api"
        )),
    }
}

fn parse_service_ref(s: &str) -> Result<ServiceRef, String> {
    match s.split('/').collect::<Vec<_>>()[..] {
        [namespace, name] if !namespace.is_empty() && !name.is_empty() => Ok(ServiceRef {
            namespace: namespace.into(),
            name: name.into(),
        }),
        _ => Err(format!(
            "{s:?} is not a Service: give namespace/name, e.g. kubespaces-system/kubespaces-waker"
        )),
    }
}

/// `never`, or a duration (`30m`, `2h`) as `spec.sleep.afterIdle` takes it.
pub fn parse_after_idle(s: &str) -> Result<AfterIdle, String> {
    if s == "never" {
        return Ok(AfterIdle(None));
    }
    match crate::build::settings::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(AfterIdle(Some(d))),
        _ => Err(format!(
            "{s:?} is not an idle period: give a duration such as 30m or 2h, or never"
        )),
    }
}

fn parse_lifetime(s: &str) -> Result<Duration, String> {
    let d = crate::build::settings::parse_duration(s)?;
    // The API server refuses token lifetimes under 10 minutes.
    if d < Duration::from_secs(600) {
        return Err(format!("{s:?} is too short: the least is 10m"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked_with_messages_that_name_the_fix() {
        assert_eq!(
            parse_digest(&format!("sha256:{}", "A".repeat(64))).unwrap(),
            format!("sha256:{}", "a".repeat(64))
        );
        assert!(parse_digest("sha256:abc").unwrap_err().contains("64 hex"));
        assert_eq!(
            parse_parent_ref("gw/kubespaces/api").unwrap().section,
            "api"
        );
        assert!(parse_parent_ref("gw/kubespaces").is_err());
        assert_eq!(parse_lifetime("24h").unwrap(), Duration::from_secs(86400));
        assert!(parse_lifetime("1m").unwrap_err().contains("10m"));
        assert!(parse_lifetime("soon").is_err());
        assert_eq!(parse_after_idle("never").unwrap(), AfterIdle(None));
        assert_eq!(
            parse_after_idle("1h30m").unwrap(),
            AfterIdle(Some(Duration::from_secs(5400)))
        );
        assert!(parse_after_idle("0s").unwrap_err().contains("never"));
        assert_eq!(
            parse_service_ref("kubespaces-system/kubespaces-waker")
                .unwrap()
                .name,
            "kubespaces-waker"
        );
        assert!(
            parse_service_ref("kubespaces-waker")
                .unwrap_err()
                .contains("namespace/name")
        );
    }

    #[test]
    fn apps_exposure_needs_both_its_class_and_its_issuer() {
        // Built directly, not parsed: the flags' environment variables may be set where the
        // tests run (the harness's env).
        let settings = |class: Option<&str>, issuer: Option<&str>| {
            ControlPlaneConfig {
                kind: ControlPlaneKind::Vcluster,
                chart: Some("c.tgz".into()),
                chart_version: Some("0.36.1".into()),
                chart_digest: Some(format!("sha256:{}", "0".repeat(64))),
                values: vec![],
                helm: "helm".into(),
                api_gateway: parse_parent_ref("gw/kubespaces/api").ok(),
                gateway_address: None,
                storage_class: None,
                credential_lifetime: Duration::from_secs(86400),
                apps_gateway_class: class.map(Into::into),
                apps_cluster_issuer: issuer.map(Into::into),
                apps_port: 443,
                max_restarting: 2,
                restart_deadline: Duration::from_secs(600),
                waker_service: None,
                sleep_after_idle: AfterIdle(None),
            }
            .vcluster()
        };
        assert_eq!(settings(None, None).unwrap().unwrap().apps, None);
        let apps = settings(Some("traefik"), Some("ca"))
            .unwrap()
            .unwrap()
            .apps
            .unwrap();
        assert_eq!((apps.gateway_class.as_str(), apps.port), ("traefik", 443));
        let missing = settings(Some("traefik"), None).unwrap_err();
        assert!(missing.contains("--apps-cluster-issuer"), "{missing}");
        let missing = settings(None, Some("ca")).unwrap_err();
        assert!(missing.contains("--apps-gateway-class"), "{missing}");
    }
}
