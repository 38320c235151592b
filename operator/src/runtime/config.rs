//! How the operator runs: the flags beyond what it builds for tenants ([`HostConfig`]), each
//! with an environment fallback (`KUBESPACES_*`), so the chart can set them either way.

use std::{net::SocketAddr, time::Duration};

use clap::Args;

use crate::build::settings::{HostConfig, parse_duration};

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
    /// the operator's caches (and, for a Tenant with writeConnectionSecretToRef, its two Secrets
    /// from the API server); nothing is written unless something drifted.
    #[arg(long, env = "KUBESPACES_RESYNC", default_value = "10m", value_parser = parse_duration)]
    pub resync: Duration,
    /// Namespaces where a Tenant's `spec.writeConnectionSecretToRef` may have the operator
    /// write a copy of the tenant kubeconfig (comma-separated). None by default: that Secret is
    /// the tenant's admin credential, and anyone allowed to create a Tenant could otherwise have
    /// it written into any namespace. A Tenant pointing elsewhere gets a
    /// `ConnectionSecretReady=False` condition and nothing is written. The operator needs the
    /// Role `kubespaces:operator-connection-secrets` bound in each of these namespaces.
    #[arg(
        long = "connection-secret-namespaces",
        env = "KUBESPACES_CONNECTION_SECRET_NAMESPACES",
        value_delimiter = ','
    )]
    pub connection_secret_namespaces: Vec<String>,
    #[command(flatten)]
    pub leader: super::leader::LeaderConfig,
    #[command(flatten)]
    pub control_plane: crate::build::control_plane::ControlPlaneConfig,
}
