//! The token file: `<config dir>/kubespaces/credentials.json` (`$KUBESPACES_CONFIG_DIR` overrides
//! the directory), written 0600 and atomically ([`crate::private_file`]) so a crash never leaves
//! half a token. The tokens go only to the server they were issued for ([`Credentials::server_for`]).

use std::path::PathBuf;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::{
    error::{CliError, Result, ServerError},
    origin::{self, Endpoint, Origin},
    private_file,
    trust::CertificateAuthority,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// The KubeSpaces server these tokens were issued for: the login's `--server`, normalised
    /// (refreshing never changes it). Empty in a file that does not record one.
    #[serde(default)]
    pub server: String,
    pub issuer: String,
    pub client_id: String,
    pub id_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// The CA the login trusted besides the built-in roots (`--certificate-authority`), trusted
    /// again by every later request of this login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<CertificateAuthority>,
}

impl Credentials {
    /// Seconds since the epoch at which the ID token expires (its `exp`, read without checking
    /// the signature: the server checks it; the CLI only decides when to refresh).
    pub fn expires_at(&self) -> Option<i64> {
        let payload = self.id_token.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        claims.get("exp")?.as_i64()
    }

    /// The email the token names (for `login`'s greeting).
    pub fn email(&self) -> Option<String> {
        let payload = self.id_token.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        Some(claims.get("email")?.as_str()?.to_owned())
    }

    /// Expired, or expiring within `margin` seconds.
    pub fn expires_within(&self, margin: i64) -> bool {
        let now = jiff::Timestamp::now().as_second();
        self.expires_at().is_none_or(|exp| exp - margin <= now)
    }

    /// The server requests with this login go to: `requested` (`--server`) when it has the origin
    /// the tokens were issued for, else the recorded server. Checked before any request, so the
    /// ID token (and, after a 401, its refreshed successor) never reaches another server: a
    /// server that is not the issuing one could replay it against the issuing one.
    pub fn server_for(&self, requested: Option<&str>) -> Result<String, ServerError> {
        if self.server.is_empty() {
            return Err(ServerError::NotRecorded {
                requested: requested.map(str::to_owned),
            });
        }
        let recorded = origin::checked(&self.server, Endpoint::StoredServer)?;
        let Some(requested) = requested else {
            return Ok(recorded);
        };
        let requested = origin::checked(requested, Endpoint::Server)?;
        let same = matches!(
            (Origin::of(&recorded), Origin::of(&requested)),
            (Some(a), Some(b)) if a == b
        );
        if !same {
            return Err(ServerError::Elsewhere {
                issued_for: recorded,
                requested,
            });
        }
        Ok(requested)
    }
}

pub fn dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("KUBESPACES_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    dirs::config_dir()
        .map(|d| d.join("kubespaces"))
        .ok_or_else(|| {
            CliError::Other(
                "no config directory (set HOME, XDG_CONFIG_HOME or KUBESPACES_CONFIG_DIR)".into(),
            )
        })
}

pub fn path() -> Result<PathBuf> {
    Ok(dir()?.join("credentials.json"))
}

pub fn load() -> Result<Credentials> {
    let path = path()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CliError::NotLoggedIn),
        Err(e) => {
            return Err(CliError::Other(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    serde_json::from_str(&text).map_err(|e| {
        CliError::Other(format!(
            "{} is damaged ({e}): run `kubespaces login` again",
            path.display()
        ))
    })
}

pub fn save(credentials: &Credentials) -> Result<()> {
    let path = path()?;
    let text = serde_json::to_string_pretty(credentials)
        .map_err(|e| CliError::Other(format!("cannot encode the credentials: {e}")))?;
    Ok(private_file::write(&path, text.as_bytes())?)
}

/// Removes the token file; true if there was one.
pub fn remove() -> Result<bool> {
    let path = path()?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CliError::Other(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::UrlError;

    fn token(claims: serde_json::Value) -> String {
        let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!(
            "{}.{}.sig",
            enc.encode(br#"{"alg":"RS256"}"#),
            enc.encode(claims.to_string())
        )
    }

    #[test]
    fn expiry_is_read_from_the_id_token() {
        let c = Credentials {
            server: "s".into(),
            issuer: "i".into(),
            client_id: "c".into(),
            id_token: token(serde_json::json!({"exp": 4_000_000_000i64, "email": "a@b.c"})),
            refresh_token: None,
            certificate_authority: None,
        };
        assert_eq!(c.expires_at(), Some(4_000_000_000));
        assert!(!c.expires_within(60));
        assert_eq!(c.email().as_deref(), Some("a@b.c"));
        let garbage = Credentials {
            id_token: "garbage".into(),
            ..c
        };
        assert!(
            garbage.expires_within(0),
            "an unreadable token counts as expired"
        );
    }

    fn login(server: &str) -> Credentials {
        Credentials {
            server: server.into(),
            issuer: "https://dex.example.com".into(),
            client_id: "kubespaces".into(),
            id_token: "t".into(),
            refresh_token: None,
            certificate_authority: None,
        }
    }

    #[test]
    fn the_token_goes_only_to_the_origin_it_was_issued_for() {
        let c = login("https://kubespaces.example.com");
        assert_eq!(
            c.server_for(None).unwrap(),
            "https://kubespaces.example.com"
        );
        // The same origin, spelt differently, is the same server.
        assert_eq!(
            c.server_for(Some("https://KubeSpaces.example.com:443/"))
                .unwrap(),
            "https://kubespaces.example.com"
        );
        for other in [
            "https://evil.example.com",
            "https://kubespaces.example.com:8443",
            "http://127.0.0.1",
            "https://kubespaces.example.com.evil.com",
        ] {
            let e = c.server_for(Some(other)).unwrap_err();
            assert!(matches!(e, ServerError::Elsewhere { .. }), "{other}: {e}");
        }
        let e = c.server_for(Some("https://evil.example.com")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the stored login is for https://kubespaces.example.com, not https://evil.example.com; \
             its token goes only to the server it was issued for: to use https://evil.example.com, \
             run `kubespaces login --server https://evil.example.com`"
        );
        // Loopback ports are servers of their own too.
        let local = login("http://127.0.0.1:8080");
        assert!(local.server_for(Some("http://127.0.0.1:9")).is_err());
        assert!(local.server_for(Some("http://127.0.0.1:8080/")).is_ok());
    }

    #[test]
    fn a_login_that_records_no_server_is_used_for_none() {
        let old: Credentials = serde_json::from_str(
            r#"{"issuer": "https://dex.example.com", "clientId": "c", "idToken": "t"}"#,
        )
        .unwrap();
        let e = old
            .server_for(Some("https://kubespaces.example.com"))
            .unwrap_err();
        assert!(matches!(e, ServerError::NotRecorded { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("run `kubespaces login --server https://kubespaces.example.com`"),
            "{e}"
        );
        assert!(matches!(
            old.server_for(None),
            Err(ServerError::NotRecorded { requested: None })
        ));
    }

    #[test]
    fn a_stored_plain_http_server_is_refused() {
        let c = login("http://kubespaces.example.com");
        assert!(matches!(
            c.server_for(None),
            Err(ServerError::Url(UrlError::NotHttps { .. }))
        ));
        assert!(matches!(
            c.server_for(Some("http://kubespaces.example.com")),
            Err(ServerError::Url(UrlError::NotHttps { .. }))
        ));
    }
}
