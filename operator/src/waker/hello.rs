//! The TLS ClientHello at the start of a connection, read without answering it (rustls parses
//! it): the server name says which tenant the connection is for, the ALPN protocols whether it
//! counts as activity. The bytes are kept and sent on unchanged, so TLS stays end to end.

use rustls::server::Acceptor;

/// A ClientHello larger than this is refused: real ones are a few hundred bytes (a few KiB with
/// post-quantum key shares), and a client that never finishes one must not hold memory.
pub const MAX_HELLO: usize = 16 * 1024;

/// What the waker needs of a ClientHello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub server_name: Option<String>,
    pub alpn: Vec<Vec<u8>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HelloError {
    #[error("not a TLS ClientHello: {0}")]
    NotTls(String),
    #[error("the ClientHello is larger than {MAX_HELLO} bytes")]
    TooLarge,
}

/// The ClientHello in `bytes` (what the client sent so far): None while it is incomplete.
pub fn parse(bytes: &[u8]) -> Result<Option<Hello>, HelloError> {
    let mut acceptor = Acceptor::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        match acceptor.read_tls(&mut rest) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(HelloError::NotTls(e.to_string())),
        }
    }
    match acceptor.accept() {
        Ok(Some(accepted)) => {
            let hello = accepted.client_hello();
            Ok(Some(Hello {
                server_name: hello.server_name().map(str::to_owned),
                alpn: hello
                    .alpn()
                    .map(|protocols| protocols.map(<[u8]>::to_vec).collect())
                    .unwrap_or_default(),
            }))
        }
        Ok(None) if bytes.len() >= MAX_HELLO => Err(HelloError::TooLarge),
        Ok(None) => Ok(None),
        Err((e, _)) => Err(HelloError::NotTls(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::{ClientConfig, ClientConnection, RootCertStore, pki_types::ServerName};

    use super::*;

    /// The ClientHello a rustls client sends for `name`, offering `alpn`.
    fn client_hello(name: &str, alpn: &[&[u8]]) -> Vec<u8> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(RootCertStore::empty())
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let name = ServerName::try_from(name.to_owned()).unwrap();
        let mut conn = ClientConnection::new(Arc::new(config), name).unwrap();
        let mut out = vec![];
        while conn.wants_write() {
            conn.write_tls(&mut out).unwrap();
        }
        out
    }

    #[test]
    fn the_server_name_and_protocols_are_read_from_a_complete_hello_only() {
        let bytes = client_hello("team-atlas.api.example.com", &[b"h2", b"http/1.1"]);
        let hello = parse(&bytes).unwrap().unwrap();
        assert_eq!(
            hello.server_name.as_deref(),
            Some("team-atlas.api.example.com")
        );
        assert_eq!(hello.alpn, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
        // Cut anywhere before its end: not yet.
        for cut in [1, 5, 40, bytes.len() - 1] {
            assert_eq!(parse(&bytes[..cut]).unwrap(), None, "cut at {cut}");
        }
        let plain = client_hello("x.api.example.com", &[]);
        assert!(parse(&plain).unwrap().unwrap().alpn.is_empty());
    }

    #[test]
    fn anything_else_is_refused() {
        let http = b"GET / HTTP/1.1\r\nHost: team-atlas.api.example.com\r\n\r\n";
        assert!(matches!(parse(http), Err(HelloError::NotTls(_))));
        // A record header announcing a handshake that never ends.
        let mut endless = vec![0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0xff, 0xff];
        endless.resize(MAX_HELLO, 0);
        assert!(parse(&endless).is_err());
    }
}
