//! AutoMTLS as go-plugin does it, with the two traps found by running Terraform 1.11.4
//! (tfplugin reference §8):
//!
//! * Terraform's client certificate (`PLUGIN_CLIENT_CERT`) is a self-signed **CA** cert with
//!   a **P-521** key. rustls-webpki's standard verifier rejects a CA cert used as an end
//!   entity, and ring cannot verify P-521. If the server does not advertise
//!   `ecdsa_secp521r1_sha512`, Go silently sends no certificate at all.
//! * So we pin the exact certificate Terraform gave us, advertise P-521, and check the
//!   handshake signature with the RustCrypto `p521` crate. Pinning alone would prove nothing
//!   (the certificate is not secret); the signature check proves possession of its key.
//!
//! The server certificate copies go-plugin's template: self-signed, SAN `localhost`
//! (go-plugin dials with ServerName `localhost`; a CN-only cert is refused).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, PrivateKeyDer, PrivatePkcs8KeyDer,
    SignatureVerificationAlgorithm, UnixTime, alg_id,
};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("PLUGIN_CLIENT_CERT does not hold a PEM certificate: {0}")]
    ClientCert(String),
    #[error("generating the server certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("building the TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The server's certificate (sent to Terraform in the handshake line) and its key.
pub struct ServerIdentity {
    pub cert_der: CertificateDer<'static>,
    key_der: PrivateKeyDer<'static>,
}

impl ServerIdentity {
    pub fn generate() -> Result<Self, TlsError> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::new(vec!["localhost".to_owned()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "KubeSpaces");
        // rcgen's default validity (1975–4096) is expressed in UTC, so a machine with a
        // positive UTC offset cannot produce a not-yet-valid certificate.
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyAgreement,
            KeyUsagePurpose::KeyCertSign,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ClientAuth,
            ExtendedKeyUsagePurpose::ServerAuth,
        ];
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_der: cert.der().clone(),
            key_der: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }
}

/// A rustls server config that requires exactly the client certificate in `client_pem`
/// and negotiates ALPN `h2` (newer grpc-go clients refuse a TLS peer without it).
pub fn server_config(
    identity: &ServerIdentity,
    client_pem: &str,
) -> Result<rustls::ServerConfig, TlsError> {
    let verifier = Arc::new(PinnedClientCert::from_pem(client_pem)?);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![identity.cert_der.clone()],
            identity.key_der.clone_key(),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// ECDSA P-521 with SHA-512, the scheme of go-plugin's client key, which ring lacks.
#[derive(Debug)]
struct EcdsaP521Sha512;

impl SignatureVerificationAlgorithm for EcdsaP521Sha512 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use p521::ecdsa::signature::Verifier;
        let key =
            p521::ecdsa::VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let sig = p521::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        key.verify(message, &sig).map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P521
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_SHA512
    }
}

static P521_SHA512: &dyn SignatureVerificationAlgorithm = &EcdsaP521Sha512;

/// P-521 first (what go-plugin uses), then ring's usual algorithms in case a future
/// go-plugin changes its key type.
static CLIENT_ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        P521_SHA512,
        webpki::ring::ECDSA_P384_SHA384,
        webpki::ring::ECDSA_P256_SHA256,
        webpki::ring::ED25519,
    ],
    mapping: &[
        (SignatureScheme::ECDSA_NISTP521_SHA512, &[P521_SHA512]),
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &[webpki::ring::ECDSA_P384_SHA384],
        ),
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &[webpki::ring::ECDSA_P256_SHA256],
        ),
        (SignatureScheme::ED25519, &[webpki::ring::ED25519]),
    ],
};

#[derive(Debug)]
struct PinnedClientCert {
    pinned: CertificateDer<'static>,
}

impl PinnedClientCert {
    fn from_pem(pem: &str) -> Result<Self, TlsError> {
        let pinned = CertificateDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| TlsError::ClientCert(e.to_string()))?;
        Ok(Self { pinned })
    }
}

impl ClientCertVerifier for PinnedClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.pinned.as_ref() {
            Ok(ClientCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &CLIENT_ALGORITHMS)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &CLIENT_ALGORITHMS)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        CLIENT_ALGORITHMS.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem_of(der: &CertificateDer<'_>) -> String {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")
    }

    #[test]
    fn only_the_pinned_certificate_is_accepted() {
        let terraform = ServerIdentity::generate().unwrap();
        let intruder = ServerIdentity::generate().unwrap();
        let v = PinnedClientCert::from_pem(&pem_of(&terraform.cert_der)).unwrap();
        let now = UnixTime::now();
        assert!(v.verify_client_cert(&terraform.cert_der, &[], now).is_ok());
        assert!(v.verify_client_cert(&intruder.cert_der, &[], now).is_err());
        assert!(
            v.client_auth_mandatory(),
            "a connection without a cert is refused"
        );
    }

    #[test]
    fn p521_is_advertised_first_so_go_sends_its_certificate() {
        let v = PinnedClientCert::from_pem(&pem_of(&ServerIdentity::generate().unwrap().cert_der))
            .unwrap();
        assert_eq!(
            v.supported_verify_schemes().first(),
            Some(&SignatureScheme::ECDSA_NISTP521_SHA512)
        );
    }

    #[test]
    fn p521_signatures_are_checked_not_just_parsed() {
        use p521::ecdsa::signature::Signer;
        // A fixed scalar below the group order: deterministic (RFC 6979), no RNG needed.
        let mut secret = [0x01u8; 66];
        secret[0] = 0x00;
        let signing = p521::ecdsa::SigningKey::from_slice(&secret).unwrap();
        let public = p521::ecdsa::VerifyingKey::from(&signing)
            .to_encoded_point(false)
            .as_bytes()
            .to_vec();
        let sig: p521::ecdsa::Signature = signing.sign(b"tls transcript");
        let der = sig.to_der();
        let alg = EcdsaP521Sha512;
        assert!(
            alg.verify_signature(&public, b"tls transcript", der.as_bytes())
                .is_ok()
        );
        assert!(
            alg.verify_signature(&public, b"tampered", der.as_bytes())
                .is_err()
        );
        assert!(
            alg.verify_signature(&public[1..], b"tls transcript", der.as_bytes())
                .is_err()
        );
    }

    #[test]
    fn server_config_offers_h2() {
        let id = ServerIdentity::generate().unwrap();
        let cfg = server_config(&id, &pem_of(&id.cert_der)).unwrap();
        assert_eq!(cfg.alpn_protocols, vec![b"h2".to_vec()]);
    }

    #[test]
    fn garbage_client_cert_is_a_clear_error() {
        assert!(matches!(
            PinnedClientCert::from_pem("not a certificate"),
            Err(TlsError::ClientCert(_))
        ));
    }
}
