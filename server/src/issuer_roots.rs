//! The certificate authorities the server trusts for the OIDC issuer: the web's roots built into
//! the binary, plus those of `--oidc-ca-file` for an issuer whose certificate a private CA signed
//! (a platform's own IdP, the local Dex).

use std::path::{Path, PathBuf};

/// Why `--oidc-ca-file` cannot be used. The server stops before it serves anything.
#[derive(Debug, thiserror::Error)]
pub enum IssuerRootsError {
    #[error("cannot read --oidc-ca-file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "--oidc-ca-file {path} holds no PEM certificate ({reason}): give the CA certificate(s) \
         that signed the issuer's, as PEM"
    )]
    NoCertificate { path: PathBuf, reason: String },
}

/// Extra roots for requests to the issuer (none: the built-in roots alone).
#[derive(Clone, Default)]
pub struct IssuerRoots(Vec<reqwest::Certificate>);

impl IssuerRoots {
    /// The certificates of a PEM file (one or several).
    pub fn from_file(path: &Path) -> Result<IssuerRoots, IssuerRootsError> {
        let pem = std::fs::read(path).map_err(|source| IssuerRootsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let no_certificate = |reason: String| IssuerRootsError::NoCertificate {
            path: path.to_owned(),
            reason,
        };
        let certificates = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| no_certificate(e.to_string()))?;
        if certificates.is_empty() {
            return Err(no_certificate("the file is empty".into()));
        }
        // Parsed only when a client is built: build one now, so a bad certificate stops the
        // server at start, naming the flag.
        let roots = IssuerRoots(certificates);
        roots
            .apply(reqwest::Client::builder())
            .build()
            .map_err(|e| no_certificate(e.to_string()))?;
        Ok(roots)
    }

    /// `--oidc-ca-file`'s roots, or none without the flag.
    pub fn for_flag(path: Option<&Path>) -> Result<IssuerRoots, IssuerRootsError> {
        path.map_or_else(|| Ok(IssuerRoots::default()), IssuerRoots::from_file)
    }

    /// `builder` trusting these roots too.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        self.0
            .iter()
            .cloned()
            .fold(builder, reqwest::ClientBuilder::add_root_certificate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_certificate_is_refused_naming_the_flag() {
        let dir = std::env::temp_dir().join(format!("issuer-roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let garbage = dir.join("garbage.pem");
        std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let not_der = dir.join("not-der.pem");
        std::fs::write(
            &not_der,
            "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for path in [&empty, &garbage, &not_der] {
            let e = IssuerRoots::from_file(path)
                .err()
                .expect("refused")
                .to_string();
            assert!(e.starts_with("--oidc-ca-file"), "{e}");
        }
        let missing = IssuerRoots::from_file(&dir.join("missing.pem"))
            .err()
            .expect("refused");
        assert!(
            matches!(missing, IssuerRootsError::Read { .. }),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
