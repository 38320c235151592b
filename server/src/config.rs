//! The server's settings (flags, or the environment variables named after them).

use std::{net::SocketAddr, num::NonZeroUsize};

use clap::Parser;

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

    /// Most portal logins begun (`/login`) and not yet finished that the server keeps; when
    /// full, a new login evicts the oldest. Anyone can begin a login, so this bounds what they
    /// can make the server hold.
    #[arg(long, env = "KUBESPACES_MAX_PENDING_LOGINS", default_value = "10000")]
    pub max_pending_logins: NonZeroUsize,

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
}
