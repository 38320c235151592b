//! The token file: `<config dir>/kubespaces/credentials.json` (`$KUBESPACES_CONFIG_DIR` overrides
//! the directory), created 0600 and replaced atomically so a crash never leaves half a token.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// The KubeSpaces server these tokens are for.
    pub server: String,
    pub issuer: String,
    pub client_id: String,
    pub id_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
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
    write_private(&path, text.as_bytes())
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

/// Writes `bytes` to `path` with mode 0600 via a temporary file in the same directory.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: std::io::Error| CliError::Other(format!("cannot write {}: {e}", path.display()));
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn private_files_are_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/credentials.json");
        write_private(&path, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
