//! The certificate authorities the CLI trusts: the web's roots built into the binary, plus the
//! CA of `--certificate-authority` for a server or issuer whose certificate a private CA signed
//! (a platform's own CA, the local cluster's). The login records that CA with the tokens (in the
//! 0600 credentials file), so later commands and token refreshes trust it without the flag, and
//! nothing is added to the machine's trust store.

use serde::{Deserialize, Serialize};

/// One or more CA certificates, PEM, checked to hold at least one certificate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CertificateAuthority(String);

impl CertificateAuthority {
    /// `--certificate-authority FILE` (clap's value parser: a bad file is a usage error).
    pub fn from_flag(path: &str) -> Result<CertificateAuthority, String> {
        let pem = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        CertificateAuthority::try_from(pem).map_err(|e| format!("{path}: {e}"))
    }

    fn certificates(&self) -> Vec<reqwest::Certificate> {
        reqwest::Certificate::from_pem_bundle(self.0.as_bytes()).unwrap_or_default()
    }
}

impl TryFrom<String> for CertificateAuthority {
    type Error = String;

    fn try_from(pem: String) -> Result<Self, String> {
        let fix = "give the CA certificate(s), as PEM";
        let certificates = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .map_err(|e| format!("not a PEM certificate ({e}): {fix}"))?;
        if certificates.is_empty() {
            return Err(format!("no PEM certificate in it: {fix}"));
        }
        // The roots are parsed only when a client is built: build one now, so a certificate that
        // is not one fails here, with the flag named, rather than at the first request.
        let ca = CertificateAuthority(pem);
        client(Some(&ca))
            .build()
            .map_err(|e| format!("not a usable CA certificate ({e}): {fix}"))?;
        Ok(ca)
    }
}

impl From<CertificateAuthority> for String {
    fn from(ca: CertificateAuthority) -> String {
        ca.0
    }
}

/// A client builder trusting `ca` besides the built-in roots.
pub fn client(ca: Option<&CertificateAuthority>) -> reqwest::ClientBuilder {
    ca.into_iter()
        .flat_map(CertificateAuthority::certificates)
        .fold(
            reqwest::Client::builder(),
            reqwest::ClientBuilder::add_root_certificate,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anything_but_a_pem_certificate_is_refused() {
        for text in [
            "",
            "hello",
            "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
        ] {
            let e = CertificateAuthority::try_from(text.to_owned()).unwrap_err();
            assert!(
                e.contains("give the CA certificate(s), as PEM"),
                "{text:?}: {e}"
            );
        }
        let e = CertificateAuthority::from_flag("/nonexistent/ca.crt").unwrap_err();
        assert!(e.starts_with("cannot read /nonexistent/ca.crt"), "{e}");
    }
}
