//! The URL the portal is reached at. Its OIDC redirect URI (`<URL>/auth/callback`) is built from
//! this and from nothing a request carries: a redirect URI taken from the Host header would let
//! whoever controls that header (a misrouted proxy, a DNS rebinding page) choose where the
//! issuer sends the authorization code.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PublicUrlError {
    #[error(
        "--public-url (KUBESPACES_PUBLIC_URL) is required when --listen ({listen}) is not a \
         loopback address: the portal's OIDC redirect URI is built from it, never from a \
         request's Host header"
    )]
    Required { listen: SocketAddr },
    #[error("--public-url {url:?} is not a URL: {reason}")]
    Invalid { url: String, reason: String },
    #[error(
        "--public-url {url:?} must be https (http only on a loopback address): the portal's \
         session cookie is Secure, and the login must not cross the network in the clear"
    )]
    NotHttps { url: String },
    #[error("--public-url {url:?} must be a base URL: no user, password, query or fragment")]
    NotBase { url: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// Without a trailing slash.
    base: String,
    https: bool,
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl PublicUrl {
    /// `--public-url` when given (validated); otherwise `http://<listen>` when the server
    /// listens on loopback only (the browser is on this machine and uses that very address);
    /// otherwise an error naming the flag. `listen` is the bound address (port 0 resolved).
    pub fn resolve(flag: Option<&str>, listen: SocketAddr) -> Result<PublicUrl, PublicUrlError> {
        let Some(given) = flag.map(str::trim).filter(|u| !u.is_empty()) else {
            if listen.ip().is_loopback() {
                return Ok(PublicUrl {
                    base: format!("http://{listen}"),
                    https: false,
                });
            }
            return Err(PublicUrlError::Required { listen });
        };
        let url = Url::parse(given).map_err(|e| PublicUrlError::Invalid {
            url: given.to_owned(),
            reason: e.to_string(),
        })?;
        let host = url.host_str().ok_or_else(|| PublicUrlError::Invalid {
            url: given.to_owned(),
            reason: "it has no host".into(),
        })?;
        let https = match url.scheme() {
            "https" => true,
            "http" if is_loopback(host) => false,
            _ => {
                return Err(PublicUrlError::NotHttps {
                    url: given.to_owned(),
                });
            }
        };
        if !url.username().is_empty()
            || url.password().is_some()
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(PublicUrlError::NotBase {
                url: given.to_owned(),
            });
        }
        Ok(PublicUrl {
            base: url.as_str().trim_end_matches('/').to_owned(),
            https,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// Whether browsers reach the portal over TLS only (then it sends Strict-Transport-Security).
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// Where the issuer sends the browser back with the authorization code.
    pub fn redirect_uri(&self) -> String {
        format!("{}/auth/callback", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn without_the_flag_only_a_loopback_listener_has_a_default() {
        let url = PublicUrl::resolve(None, addr("127.0.0.1:8080")).unwrap();
        assert_eq!(url.redirect_uri(), "http://127.0.0.1:8080/auth/callback");
        assert!(!url.is_https());
        let url = PublicUrl::resolve(Some(" "), addr("[::1]:8080")).unwrap();
        assert_eq!(url.as_str(), "http://[::1]:8080");
        for listen in ["0.0.0.0:8080", "[::]:8080", "10.0.0.5:8080"] {
            let e = PublicUrl::resolve(None, addr(listen)).unwrap_err();
            assert_eq!(
                e,
                PublicUrlError::Required {
                    listen: addr(listen)
                }
            );
            assert!(e.to_string().starts_with("--public-url"), "{e}");
        }
    }

    #[test]
    fn the_flag_wins_and_is_validated() {
        let any = addr("0.0.0.0:8080");
        let url = PublicUrl::resolve(Some("https://kubespaces.example.com/"), any).unwrap();
        assert_eq!(
            url.redirect_uri(),
            "https://kubespaces.example.com/auth/callback"
        );
        assert!(url.is_https());
        let url = PublicUrl::resolve(Some("https://example.com/kubespaces"), any).unwrap();
        assert_eq!(
            url.redirect_uri(),
            "https://example.com/kubespaces/auth/callback"
        );
        assert!(
            !PublicUrl::resolve(Some("http://localhost:9000"), any)
                .unwrap()
                .is_https()
        );
        assert!(PublicUrl::resolve(Some("http://[::1]:9000"), any).is_ok());
        assert!(matches!(
            PublicUrl::resolve(Some("http://kubespaces.example.com"), any),
            Err(PublicUrlError::NotHttps { .. })
        ));
        assert!(matches!(
            PublicUrl::resolve(Some("ftp://kubespaces.example.com"), any),
            Err(PublicUrlError::NotHttps { .. })
        ));
        assert!(matches!(
            PublicUrl::resolve(Some("kubespaces.example.com"), any),
            Err(PublicUrlError::Invalid { .. })
        ));
        for base in [
            "https://u:p@kubespaces.example.com",
            "https://kubespaces.example.com/?next=/",
            "https://kubespaces.example.com/#x",
        ] {
            assert!(
                matches!(
                    PublicUrl::resolve(Some(base), any),
                    Err(PublicUrlError::NotBase { .. })
                ),
                "{base}"
            );
        }
    }
}
