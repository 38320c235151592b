//! A connection to a sleeping tenant, held while it wakes. The control plane takes longer to
//! start than a client waits for a TLS handshake (kubectl: 10 s), so the waker completes the
//! handshake itself, as the tenant's API server would: with a certificate for the tenant's public
//! host, signed by the tenant's server CA (the one its kubeconfig trusts), minted from the control
//! plane's certificates Secret. The client's first request then waits for its answer as it would
//! from any slow server. Once the control plane accepts connections, the waker opens TLS to it
//! (checked against the same CA, with the protocol agreed with the client) and carries the
//! plaintext both ways. What the waker cannot carry: a client certificate (it cannot present one
//! it does not hold), so a kubeconfig that authenticates with one is anonymous on a connection
//! that waited for a wake; the kubeconfig KubeSpaces hands out authenticates with a token.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use rcgen::{CertificateParams, ExtendedKeyUsagePurpose, Issuer, KeyPair, PKCS_RSA_SHA256};
use rustls::{
    ClientConfig, RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, pem::PemObject},
};

use crate::names;

/// The keys of the control plane's certificates Secret the waker reads.
const SERVER_CA_CERT: &str = "server-ca.crt";
const SERVER_CA_KEY: &str = "server-ca.key";
/// How long a minted certificate is valid (a held connection lasts minutes at most; the margin
/// is for clocks that differ).
const VALID_FOR: Duration = Duration::from_secs(24 * 3600);

/// The application protocols the tenant API server speaks, in the waker's preference.
const SPOKEN: [&[u8]; 2] = [b"h2", b"http/1.1"];

#[derive(Debug, thiserror::Error)]
pub enum HeldError {
    #[error("cannot read the control plane's certificates Secret {namespace}/{secret}: {source}")]
    Secret {
        namespace: String,
        secret: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("the control plane's certificates Secret {namespace}/{secret} has no usable {key}")]
    Missing {
        namespace: String,
        secret: &'static str,
        key: &'static str,
    },
    #[error("cannot mint the waker's certificate for {host}: {0}", host = .1)]
    Mint(String, String),
    #[error("TLS settings for {host}: {message}")]
    Tls { host: String, message: String },
}

/// TLS on both sides of a held connection to one tenant.
pub struct TenantTls {
    /// Toward the client: the minted certificate.
    pub server: Arc<ServerConfig>,
    /// Toward the control plane: its server CA as the only root.
    pub client: Arc<ClientConfig>,
    /// The same, with no protocol offered: the waker's own readiness checks (HTTP/1.1).
    pub probe: Arc<ClientConfig>,
    pub host: ServerName<'static>,
}

/// The TLS of held connections. Each reads the tenant's server CA afresh and mints its own
/// certificate: held connections are few (one per wake, and what arrives during it), and a
/// tenant made again under the same name has another CA.
#[derive(Default)]
pub struct Certificates;

/// The protocol to agree with the client: its first choice among those the API server speaks;
/// None when it offered none (then none is agreed with the control plane either).
pub fn agreed(offered: &[Vec<u8>]) -> Option<Vec<u8>> {
    offered
        .iter()
        .find(|p| SPOKEN.contains(&p.as_slice()))
        .cloned()
}

impl Certificates {
    /// TLS for a held connection to `tenant` at `host`, agreeing `alpn` with both sides.
    pub async fn for_tenant(
        &self,
        client: &Client,
        tenant: &str,
        host: &str,
        alpn: Option<Vec<u8>>,
    ) -> Result<TenantTls, HeldError> {
        let server_name = ServerName::try_from(host.to_owned()).map_err(|e| HeldError::Tls {
            host: host.to_owned(),
            message: e.to_string(),
        })?;
        let (ca_pem, key_pem) = read_server_ca(client, tenant).await?;
        let (mut server, mut client_config) = configs(host, &ca_pem, &key_pem)?;
        let probe = Arc::new(client_config.clone());
        server.alpn_protocols = alpn.iter().cloned().collect();
        client_config.alpn_protocols = alpn.into_iter().collect();
        Ok(TenantTls {
            server: Arc::new(server),
            client: Arc::new(client_config),
            probe,
            host: server_name,
        })
    }
}

/// The server CA (certificate and key, PEM) from the control plane's certificates Secret in the
/// tenant's own namespace.
async fn read_server_ca(client: &Client, tenant: &str) -> Result<(String, String), HeldError> {
    let namespace = names::namespace(tenant);
    let secret = names::control_plane::CERTS_SECRET;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let found = secrets
        .get(secret)
        .await
        .map_err(|source| HeldError::Secret {
            namespace: namespace.clone(),
            secret,
            source,
        })?;
    let data = found.data.unwrap_or_default();
    let text = |key: &'static str| {
        data.get(key)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
            .ok_or_else(|| HeldError::Missing {
                namespace: namespace.clone(),
                secret,
                key,
            })
    };
    Ok((text(SERVER_CA_CERT)?, text(SERVER_CA_KEY)?))
}

/// The TLS settings toward the client (a certificate for `host` minted from the CA) and toward
/// the control plane (the CA as its root).
fn configs(
    host: &str,
    ca_pem: &str,
    key_pem: &str,
) -> Result<(ServerConfig, ClientConfig), HeldError> {
    let mint = |e: &dyn std::fmt::Display| HeldError::Mint(e.to_string(), host.to_owned());
    let tls = |e: &dyn std::fmt::Display| HeldError::Tls {
        host: host.to_owned(),
        message: e.to_string(),
    };
    let ca_key = ca_key_pair(key_pem).map_err(|e| mint(&e))?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key).map_err(|e| mint(&e))?;
    let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(|e| mint(&e))?;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + VALID_FOR;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().map_err(|e| mint(&e))?;
    let leaf = params.signed_by(&leaf_key, &issuer).map_err(|e| mint(&e))?;
    let ca_der = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| tls(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), ca_der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .map_err(|e| tls(&e))?;
    let mut roots = RootCertStore::empty();
    roots.add(ca_der).map_err(|e| tls(&e))?;
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((server, client))
}

/// The CA's RSA key: kubeadm writes PKCS#1, which ring (rcgen's signer here) reads only wrapped
/// in PKCS#8, so it is wrapped (the key itself unchanged).
fn ca_key_pair(pem: &str) -> Result<KeyPair, String> {
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| e.to_string())?;
    let pkcs8 = match der {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der().to_vec(),
        PrivateKeyDer::Pkcs1(k) => pkcs1_in_pkcs8(k.secret_pkcs1_der()),
        _ => return Err("the server CA key is not an RSA or PKCS#8 key".into()),
    };
    KeyPair::from_pkcs8_der_and_sign_algo(&PrivatePkcs8KeyDer::from(pkcs8), &PKCS_RSA_SHA256)
        .map_err(|e| e.to_string())
}

/// A PKCS#1 RSA key as a PKCS#8 PrivateKeyInfo (RFC 5208): version 0, rsaEncryption, the key.
fn pkcs1_in_pkcs8(pkcs1: &[u8]) -> Vec<u8> {
    const RSA_ENCRYPTION: &[u64] = &[1, 2, 840, 113549, 1, 1, 1];
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_u8(0);
            w.next().write_sequence(|w| {
                w.next()
                    .write_oid(&yasna::models::ObjectIdentifier::from_slice(RSA_ENCRYPTION));
                w.next().write_null();
            });
            w.next().write_bytes(pkcs1);
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_first_protocol_the_api_server_speaks_is_agreed() {
        let offer = |p: &[&[u8]]| p.iter().map(|x| x.to_vec()).collect::<Vec<_>>();
        assert_eq!(agreed(&offer(&[b"h2", b"http/1.1"])), Some(b"h2".to_vec()));
        let quiet = names::QUIET_ALPN.as_bytes();
        assert_eq!(
            agreed(&offer(&[quiet, b"http/1.1"])),
            Some(b"http/1.1".to_vec())
        );
        assert_eq!(agreed(&offer(&[])), None);
        assert_eq!(agreed(&offer(&[b"spdy/3"])), None);
    }

    #[test]
    fn a_certificate_for_the_host_is_minted_from_a_pkcs1_ca_and_verifies_against_it() {
        let (ca_pem, ca_key_pkcs1_pem) = test_ca();
        let (server, client) = configs("team-atlas.api.example.com", &ca_pem, &ca_key_pkcs1_pem)
            .expect("TLS settings");
        // A handshake between the two, in memory: the minted certificate verifies for the host
        // against the CA (what kubectl with the tenant kubeconfig checks).
        let mut s = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        let name = ServerName::try_from("team-atlas.api.example.com").unwrap();
        let mut c = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
        for _ in 0..10 {
            let mut buf = vec![];
            while c.wants_write() {
                c.write_tls(&mut buf).unwrap();
            }
            s.read_tls(&mut buf.as_slice()).unwrap();
            s.process_new_packets().unwrap();
            let mut back = vec![];
            while s.wants_write() {
                s.write_tls(&mut back).unwrap();
            }
            c.read_tls(&mut back.as_slice()).unwrap();
            c.process_new_packets()
                .expect("the client accepts the minted certificate");
        }
        assert!(!c.is_handshaking() && !s.is_handshaking());
    }

    /// A test CA as kubeadm writes one: an RSA key in PKCS#1 and its self-signed certificate,
    /// made once with openssl (ring cannot generate RSA keys). It signs nothing but test leaves.
    fn test_ca() -> (String, String) {
        (
            include_str!("testdata/server-ca.crt").to_owned(),
            include_str!("testdata/server-ca.key").to_owned(),
        )
    }
}
