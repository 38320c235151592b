//! The server's settings (flags, or the environment variables named after them).

use std::{net::SocketAddr, num::NonZeroUsize, path::PathBuf};

use clap::{Args, Parser};

use crate::{
    max_quantity::MaxQuantity,
    rate::{Per, Rate},
};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "kubespaces-server",
    version,
    about = "KubeSpaces REST API and portal"
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "KUBESPACES_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// OIDC issuer URL, exactly as it appears in the `iss` claim (e.g. https://dex.example.com/dex).
    #[arg(long, env = "KUBESPACES_OIDC_ISSUER")]
    pub oidc_issuer: String,

    /// OIDC client id: the `aud` every accepted ID token must carry, and what the CLI asks for.
    #[arg(long, env = "KUBESPACES_OIDC_CLIENT_ID")]
    pub oidc_client_id: String,

    /// Scopes the CLI and the portal request (published at /.well-known/kubespaces).
    #[arg(
        long,
        env = "KUBESPACES_OIDC_SCOPES",
        value_delimiter = ',',
        default_value = "openid,email,groups,profile,offline_access"
    )]
    pub oidc_scopes: Vec<String>,

    /// CA certificates (PEM) to trust for the issuer besides the built-in web roots: for an
    /// issuer whose certificate a private CA signed.
    #[arg(long, env = "KUBESPACES_OIDC_CA_FILE")]
    pub oidc_ca_file: Option<PathBuf>,

    /// Members of this group (the `groups` claim) see and manage every tenant.
    #[arg(long, env = "KUBESPACES_ADMIN_GROUP")]
    pub admin_group: Option<String>,

    /// Shortest time between two JWKS fetches caused by an unknown key id (key rotation), so
    /// tokens with made-up key ids cannot make the server hammer the issuer.
    #[arg(long, env = "KUBESPACES_JWKS_MIN_REFRESH_SECS", default_value_t = 30)]
    pub jwks_min_refresh_secs: u64,

    /// The portal's public URL, https (http only on loopback); its OIDC redirect URI is
    /// <URL>/auth/callback. Required unless --listen is a loopback address, when it defaults to
    /// http://<listen>. Never taken from a request (its Host header).
    #[arg(long, env = "KUBESPACES_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// The keys that seal the portal's cookies (its sessions and logins in progress): a file of
    /// base64 keys of 32 bytes, one per line; the first seals, every one opens. Replicas that
    /// share it share their sessions, and a restart ends none. Without it the server makes a key
    /// of its own at start.
    #[arg(long, env = "KUBESPACES_SESSION_KEYS_FILE")]
    pub session_keys_file: Option<PathBuf>,

    /// Time a user has to finish a portal login at the issuer, in seconds.
    #[arg(
        long,
        env = "KUBESPACES_PENDING_LOGIN_TTL_SECS",
        default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub pending_login_ttl_secs: u64,

    /// Clock skew tolerated on exp and nbf, in seconds.
    #[arg(long, env = "KUBESPACES_OIDC_LEEWAY_SECS", default_value_t = 30)]
    pub oidc_leeway_secs: u64,

    #[command(flatten)]
    pub limits: Limits,
}

pub const DEFAULT_MAX_TENANTS_PER_OWNER: usize = 5;
pub const DEFAULT_CREATE_RATE: Rate = Rate::new(10, Per::Minute);
pub const DEFAULT_RATE_LIMIT: Rate = Rate::new(50, Per::Second);
pub const DEFAULT_RATE_LIMIT_BURST: u32 = 500;
pub const DEFAULT_ANONYMOUS_RATE_LIMIT: Rate = Rate::new(20, Per::Second);
pub const DEFAULT_ANONYMOUS_RATE_LIMIT_BURST: u32 = 200;
pub const DEFAULT_MAX_STREAMS_PER_USER: NonZeroUsize = match NonZeroUsize::new(8) {
    Some(n) => n,
    None => NonZeroUsize::MIN,
};

/// The bounds a platform team sets on what one user may have and do (docs/server-cli-portal.md,
/// "Limits"). Refusals name the limit and who can raise it.
#[derive(Args, Debug, Clone)]
pub struct Limits {
    /// Only members of this IdP group (the `groups` claim) may create tenants; repeat the flag
    /// (or separate with commas) for several groups. Unset: every user may. Members of
    /// --admin-group always may.
    #[arg(
        long = "creator-group",
        env = "KUBESPACES_CREATOR_GROUPS",
        value_delimiter = ','
    )]
    pub creator_groups: Vec<String>,

    /// Most tenants one owner may have; 0 for no limit. Admins may create beyond it.
    #[arg(long, env = "KUBESPACES_MAX_TENANTS_PER_OWNER", default_value_t = DEFAULT_MAX_TENANTS_PER_OWNER)]
    pub max_tenants_per_owner: usize,

    /// Most CPU one tenant may ask for (a Kubernetes quantity, e.g. 8 or 8000m). Unset: no limit.
    #[arg(long, env = "KUBESPACES_MAX_TENANT_CPU")]
    pub max_tenant_cpu: Option<MaxQuantity>,

    /// Most memory one tenant may ask for (e.g. 32Gi). Unset: no limit.
    #[arg(long, env = "KUBESPACES_MAX_TENANT_MEMORY")]
    pub max_tenant_memory: Option<MaxQuantity>,

    /// Most storage one tenant may ask for (e.g. 200Gi). Unset: no limit.
    #[arg(long, env = "KUBESPACES_MAX_TENANT_STORAGE")]
    pub max_tenant_storage: Option<MaxQuantity>,

    /// Tenant creates one user may make: COUNT/UNIT (s, min, h), up to COUNT at once, then one
    /// every UNIT/COUNT; or `unlimited`.
    #[arg(long, env = "KUBESPACES_CREATE_RATE", default_value_t = DEFAULT_CREATE_RATE)]
    pub create_rate: Rate,

    /// Requests one logged-in user may make (bearer token or portal session), sustained:
    /// COUNT/UNIT or `unlimited`.
    #[arg(long, env = "KUBESPACES_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
    pub rate_limit: Rate,

    /// Requests one logged-in user may make at once, above --rate-limit.
    #[arg(
        long,
        env = "KUBESPACES_RATE_LIMIT_BURST",
        default_value_t = DEFAULT_RATE_LIMIT_BURST,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub rate_limit_burst: u32,

    /// Requests without a valid login (/login, the OIDC callback, refused tokens, ...) one
    /// client address may make, sustained (an IPv6 client counts by its /64). Behind a proxy
    /// every client has the proxy's address: see docs/server-cli-portal.md.
    #[arg(
        long,
        env = "KUBESPACES_ANONYMOUS_RATE_LIMIT",
        default_value_t = DEFAULT_ANONYMOUS_RATE_LIMIT
    )]
    pub anonymous_rate_limit: Rate,

    /// Requests without a valid login one client address may make at once.
    #[arg(
        long,
        env = "KUBESPACES_ANONYMOUS_RATE_LIMIT_BURST",
        default_value_t = DEFAULT_ANONYMOUS_RATE_LIMIT_BURST,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub anonymous_rate_limit_burst: u32,

    /// Live streams (API watch and portal tenant pages together) one user may hold open.
    #[arg(
        long,
        env = "KUBESPACES_MAX_STREAMS_PER_USER",
        default_value_t = DEFAULT_MAX_STREAMS_PER_USER
    )]
    pub max_streams_per_user: NonZeroUsize,
}

impl Default for Limits {
    /// The flags' defaults.
    fn default() -> Self {
        Limits {
            creator_groups: vec![],
            max_tenants_per_owner: DEFAULT_MAX_TENANTS_PER_OWNER,
            max_tenant_cpu: None,
            max_tenant_memory: None,
            max_tenant_storage: None,
            create_rate: DEFAULT_CREATE_RATE,
            rate_limit: DEFAULT_RATE_LIMIT,
            rate_limit_burst: DEFAULT_RATE_LIMIT_BURST,
            anonymous_rate_limit: DEFAULT_ANONYMOUS_RATE_LIMIT,
            anonymous_rate_limit_burst: DEFAULT_ANONYMOUS_RATE_LIMIT_BURST,
            max_streams_per_user: DEFAULT_MAX_STREAMS_PER_USER,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_limits_default() {
        let config = Config::try_parse_from([
            "kubespaces-server",
            "--oidc-issuer",
            "https://dex.example.com",
            "--oidc-client-id",
            "kubespaces",
        ])
        .unwrap();
        let (flags, default) = (config.limits, Limits::default());
        assert_eq!(format!("{flags:?}"), format!("{default:?}"));
    }

    #[test]
    fn limits_parse_from_flags() {
        let config = Config::try_parse_from([
            "kubespaces-server",
            "--oidc-issuer=https://dex.example.com",
            "--oidc-client-id=kubespaces",
            "--creator-group=platform-users",
            "--creator-group=data,ml",
            "--max-tenants-per-owner=0",
            "--max-tenant-cpu=8",
            "--max-tenant-memory=32Gi",
            "--create-rate=5/min",
            "--rate-limit=unlimited",
            "--max-streams-per-user=2",
        ])
        .unwrap();
        let l = config.limits;
        assert_eq!(l.creator_groups, ["platform-users", "data", "ml"]);
        assert_eq!(l.max_tenants_per_owner, 0);
        assert_eq!(l.max_tenant_cpu.map(|q| q.to_string()), Some("8".into()));
        assert_eq!(l.create_rate, Rate::new(5, Per::Minute));
        assert_eq!(l.rate_limit, Rate::Unlimited);
        assert_eq!(l.max_streams_per_user.get(), 2);
        for bad in [
            "--max-tenant-cpu=lots",
            "--max-tenant-memory=0",
            "--create-rate=5",
            "--max-streams-per-user=0",
            "--rate-limit-burst=0",
        ] {
            assert!(
                Config::try_parse_from([
                    "kubespaces-server",
                    "--oidc-issuer=https://dex.example.com",
                    "--oidc-client-id=kubespaces",
                    bad,
                ])
                .is_err(),
                "{bad} is refused at start-up"
            );
        }
    }
}
