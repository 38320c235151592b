//! The binary as Terraform starts it: cookie check, the handshake line, and AutoMTLS that
//! accepts exactly the client certificate named in `PLUGIN_CLIENT_CERT`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use base64::Engine as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

const BIN: &str = env!("CARGO_BIN_EXE_terraform-provider-kubespaces");
const COOKIE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

struct ClientCert {
    pem: String,
    der: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

/// Like go-plugin's client certificate, but P-256 (ring cannot make P-521 keys).
fn client_cert() -> ClientCert {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    ClientCert {
        pem: cert.pem(),
        der: cert.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

struct Plugin(Child);

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(client_pem: &str) -> (Plugin, Vec<String>) {
    let mut child = Command::new(BIN)
        .env("TF_PLUGIN_MAGIC_COOKIE", COOKIE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "5,6")
        .env("PLUGIN_CLIENT_CERT", client_pem)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let fields = line.trim_end().split('|').map(str::to_owned).collect();
    (Plugin(child), fields)
}

/// Trusts exactly the certificate from the handshake line, as go-plugin does.
#[derive(Debug)]
struct PinnedServer(CertificateDer<'static>);

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        assert_eq!(end_entity.as_ref(), self.0.as_ref());
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = rustls::crypto::ring::default_provider().signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(m, c, d, &algs)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = rustls::crypto::ring::default_provider().signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(m, c, d, &algs)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS handshake over the plugin's socket; `Ok(alpn)` when the server accepted us.
async fn connect(
    socket: &str,
    server_der: CertificateDer<'static>,
    me: &ClientCert,
) -> Result<Option<Vec<u8>>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedServer(server_der)))
        .with_client_auth_cert(vec![me.der.clone()], me.key.clone_key())
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), stream)
        .await
        .map_err(|e| e.to_string())?;
    // In TLS 1.3 the server judges the client certificate after the client finished; a
    // refusal arrives as an alert on the first read.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 9];
    tls.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
    Ok(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec))
}

#[test]
fn run_by_hand_it_explains_itself_and_exits() {
    let out = Command::new(BIN)
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: it is the handshake channel"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("This binary is a plugin."), "{stderr}");
}

#[tokio::test]
async fn handshake_line_and_mutual_tls() {
    let terraform = client_cert();
    let (_plugin, f) = start(&terraform.pem);
    assert_eq!(f.len(), 6, "{f:?}");
    assert_eq!(
        (f[0].as_str(), f[1].as_str(), f[2].as_str(), f[4].as_str()),
        ("1", "6", "unix", "grpc")
    );
    assert!(f[3].starts_with('/'), "absolute socket path");
    assert!(!f[5].ends_with('='), "unpadded base64");
    let der = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(&f[5])
        .unwrap();
    let server = CertificateDer::from(der);

    let alpn = connect(&f[3], server.clone(), &terraform).await.unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));

    // Someone else on the machine, with a certificate of their own, is refused.
    let intruder = client_cert();
    // The refusal shows as a TLS alert or as the server closing the socket, depending on
    // timing; either way the only difference from the accepted connection is the certificate.
    let refused = connect(&f[3], server, &intruder).await;
    assert!(refused.is_err(), "intruder accepted: {refused:?}");
}
