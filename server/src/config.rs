//! The server's settings (flags, or the environment variables named after them).

use std::net::SocketAddr;

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

    /// The portal's public URL (its OIDC redirect is <URL>/auth/callback). Default: the URL the
    /// browser used (its Host header), which suits loopback; set it behind a proxy.
    #[arg(long, env = "KUBESPACES_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Clock skew tolerated on exp and nbf, in seconds.
    #[arg(long, env = "KUBESPACES_OIDC_LEEWAY_SECS", default_value_t = 30)]
    pub oidc_leeway_secs: u64,
}
