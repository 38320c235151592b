//! Accepting connections on the plugin's Unix socket, with TLS terminated here rather than
//! by tonic: tonic's TLS offers no hook for the pinned-certificate verifier (see `tls.rs`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;

/// A bad client must not hold a handshake slot forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One accepted, TLS-established connection, in the shape tonic wants.
pub struct TlsConn(TlsStream<UnixStream>);

impl tonic::transport::server::Connected for TlsConn {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for TlsConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

/// Accepts connections and runs each TLS handshake in its own task, so one slow or failing
/// handshake does not hold up the others. Failed handshakes are logged and dropped instead
/// of being passed to tonic.
pub fn tls_incoming(
    listener: UnixListener,
    config: rustls::ServerConfig,
) -> ReceiverStream<io::Result<TlsConn>> {
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::error!(error = %e, "accepting a plugin connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let (_, session) = tls.get_ref();
                        tracing::debug!(
                            version = ?session.protocol_version(),
                            alpn = ?session.alpn_protocol().map(String::from_utf8_lossy),
                            client_certs = session.peer_certificates().map_or(0, <[_]>::len),
                            "TLS connection established"
                        );
                        // The receiver is gone only when the server has stopped.
                        let _ = tx.send(Ok(TlsConn(tls))).await;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "TLS handshake with the client failed")
                    }
                    Err(_) => tracing::warn!("TLS handshake with the client timed out"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}
