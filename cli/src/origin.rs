//! Where a token may travel. Every URL the CLI sends a token or a code to (the KubeSpaces server,
//! the OIDC issuer and the endpoints its discovery document names) must be https://: a bearer
//! token on plain http is readable and replayable by anyone on the path. Plain http is accepted
//! for loopback addresses only (127.0.0.0/8, ::1, `localhost`), where nothing crosses a network;
//! the tests run the server and Dex there.
//!
//! Servers are compared by origin (scheme, host, port), the boundary browsers use for the same
//! reason: a different path on the same origin is the same server, anything else is not.

use std::{fmt, net::IpAddr};

use reqwest::Url;

/// What a URL is for: it names the URL in errors and says how to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `--server` or `KUBESPACES_SERVER`.
    Server,
    /// The server recorded in the credentials file.
    StoredServer,
    /// The issuer the server publishes (also recorded in the credentials file).
    Issuer,
    /// From the issuer's discovery document.
    DeviceAuthorization,
    /// From the issuer's discovery document.
    Token,
}

impl Endpoint {
    fn describe(self) -> &'static str {
        match self {
            Endpoint::Server => "--server (or KUBESPACES_SERVER)",
            Endpoint::StoredServer => "the server of the stored login",
            Endpoint::Issuer => "the OIDC issuer the KubeSpaces server publishes",
            Endpoint::DeviceAuthorization => "the issuer's device authorization endpoint",
            Endpoint::Token => "the issuer's token endpoint",
        }
    }

    /// How to fix a URL refused for `self`; `https` is the URL with https:// when there is one.
    fn fix(self, https: Option<&str>) -> String {
        let https = https.unwrap_or("https://<server>");
        match self {
            Endpoint::Server => format!("use --server {https}"),
            Endpoint::StoredServer => format!("log in again: kubespaces login --server {https}"),
            Endpoint::Issuer => "the KubeSpaces server must publish an https:// issuer \
                                 (kubespaces-server --oidc-issuer https://...), then log in again"
                .into(),
            Endpoint::DeviceAuthorization | Endpoint::Token => {
                "the identity provider must publish https:// endpoints in its discovery document"
                    .into()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{what} {url:?} is not an http(s) URL ({reason}): {fix}")]
    Invalid {
        what: &'static str,
        url: String,
        reason: String,
        fix: String,
    },
    #[error(
        "{what} {url} must use https:// (plain http:// only to a loopback address: \
         127.0.0.0/8, ::1, localhost): {fix}"
    )]
    NotHttps {
        what: &'static str,
        url: String,
        fix: String,
    },
}

/// Scheme, host and port (the scheme's default when the URL names none), normalised as the URL
/// parser does (lower-case host, canonical IP addresses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

impl Origin {
    /// None for what is not an http(s) URL with a host.
    pub fn of(text: &str) -> Option<Origin> {
        let url = Url::parse(text).ok()?;
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        Some(Origin {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_owned(),
            port: url.port_or_known_default()?,
        })
    }
}

/// `host` as the URL parser writes it (IPv6 in brackets) is a loopback address.
pub fn is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    // Ipv4Addr::is_loopback is 127.0.0.0/8; Ipv6Addr::is_loopback is exactly ::1.
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `text` if it may carry a token: http(s) with a host, and https unless the host is loopback.
/// Returns it normalised, without a trailing slash (paths are appended to it).
pub fn checked(text: &str, what: Endpoint) -> Result<String, UrlError> {
    let invalid = |reason: String| UrlError::Invalid {
        what: what.describe(),
        url: text.to_owned(),
        reason,
        fix: what.fix(None),
    };
    let url = Url::parse(text).map_err(|e| invalid(e.to_string()))?;
    let host = url
        .host_str()
        .ok_or_else(|| invalid("no host".into()))?
        .to_owned();
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&host) => {}
        "http" => {
            let mut https = url.clone();
            // http and https are both special schemes, so this cannot fail; without it the fix
            // falls back to a placeholder.
            let https = https
                .set_scheme("https")
                .ok()
                .map(|()| https.as_str().trim_end_matches('/').to_owned());
            return Err(UrlError::NotHttps {
                what: what.describe(),
                url: text.to_owned(),
                fix: what.fix(https.as_deref()),
            });
        }
        other => {
            return Err(invalid(format!(
                "scheme {other}: is neither https nor http"
            )));
        }
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_127_slash_8_ipv6_one_and_localhost_only() {
        for host in [
            "localhost",
            "LocalHost",
            "127.0.0.1",
            "127.255.0.9",
            "[::1]",
            "::1",
        ] {
            assert!(is_loopback(host), "{host} is loopback");
        }
        for host in [
            "128.0.0.1",
            "10.0.0.1",
            "0.0.0.0",
            "[::]",
            "[::ffff:10.0.0.1]",
            "localhost.example.com",
            "127.0.0.1.nip.io",
            "example.com",
        ] {
            assert!(!is_loopback(host), "{host} is not loopback");
        }
    }

    #[test]
    fn http_is_refused_except_on_loopback() {
        for ok in [
            "https://kubespaces.example.com",
            "http://127.0.0.1:5556/dex",
            "http://127.1:8080",
            "http://localhost:8080/",
            "http://[::1]:8080",
        ] {
            assert!(checked(ok, Endpoint::Server).is_ok(), "{ok}");
        }
        let e = checked("http://kubespaces.example.com/", Endpoint::Server).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--server (or KUBESPACES_SERVER) http://kubespaces.example.com/ must use https:// \
             (plain http:// only to a loopback address: 127.0.0.0/8, ::1, localhost): \
             use --server https://kubespaces.example.com"
        );
        for refused in [
            "http://10.0.0.1:5556",
            "http://[::2]",
            "http://localhost.evil.com",
        ] {
            assert!(
                matches!(
                    checked(refused, Endpoint::Token),
                    Err(UrlError::NotHttps { .. })
                ),
                "{refused}"
            );
        }
        for invalid in [
            "kubespaces.example.com",
            "ftp://example.com",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(
                    checked(invalid, Endpoint::Issuer),
                    Err(UrlError::Invalid { .. })
                ),
                "{invalid}"
            );
        }
    }

    #[test]
    fn checked_urls_are_normalised_without_a_trailing_slash() {
        assert_eq!(
            checked("HTTPS://KubeSpaces.Example.COM:443/", Endpoint::Server).unwrap(),
            "https://kubespaces.example.com"
        );
        assert_eq!(
            checked("http://127.0.0.1:8080/prefix/", Endpoint::Server).unwrap(),
            "http://127.0.0.1:8080/prefix"
        );
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        let o = |s| Origin::of(s).unwrap();
        assert_eq!(o("https://a.example.com"), o("https://A.example.com:443/x"));
        assert_eq!(o("http://127.0.0.1:80/"), o("http://127.0.0.1"));
        assert_ne!(o("https://a.example.com"), o("http://a.example.com"));
        assert_ne!(o("https://a.example.com"), o("https://a.example.com:8443"));
        assert_ne!(o("https://a.example.com"), o("https://b.example.com"));
        assert_ne!(
            o("https://a.example.com"),
            o("https://a.example.com.evil.com")
        );
        assert_ne!(o("http://127.0.0.1:8080"), o("http://127.0.0.1:9"));
        assert_eq!(
            o("https://a.example.com").to_string(),
            "https://a.example.com:443"
        );
        assert_eq!(Origin::of("not a url"), None);
        assert_eq!(Origin::of("file:///etc/passwd"), None);
    }
}
