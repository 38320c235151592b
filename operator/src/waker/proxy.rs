//! One connection through the waker: its ClientHello read (not answered), its tenant found from
//! the server name, its activity noted, and the bytes carried both ways to the tenant's control
//! plane; when that runs no pod, the connection is held while the tenant wakes.

use std::{
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::TcpStream,
    time::{Instant, timeout},
};
use tracing::{debug, info, warn};

use super::{Waker, hello};
use crate::names;

/// How long a client has to send its whole ClientHello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// How long a held connection waits, at most, before it tries the control plane again.
const RETRY_AT_MOST: Duration = Duration::from_millis(250);
/// How long one attempt to reach the control plane may take: a refused one ends at once (no
/// ready pod behind its Service); one that is dropped (a NetworkPolicy not programmed yet) is
/// tried again after this.
const CONNECT_WITHIN: Duration = Duration::from_secs(3);
/// The same, while a connection is held: on the pod network a connect takes milliseconds, and a
/// dropped one must not keep the held connection from its pod for seconds.
const HELD_CONNECT_WITHIN: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("no ClientHello within {HELLO_WITHIN:?}")]
    HelloTimeout,
    #[error(transparent)]
    Hello(#[from] hello::HelloError),
    #[error("the ClientHello names no tenant API ({0:?})")]
    UnknownHost(Option<String>),
    #[error(transparent)]
    NoSuchTenant(#[from] super::backends::NoSuchTenant),
    #[error("tenant {tenant}'s control plane did not answer within {held:?} of the wake")]
    WakeTimeout { tenant: String, held: Duration },
    #[error("tenant {0} sleeps, and the connection does not count as activity")]
    AsleepQuiet(String),
    #[error(transparent)]
    Held(#[from] super::held::HeldError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ProxyError {
    /// The `outcome` label of the connection metric.
    pub fn outcome(&self) -> &'static str {
        match self {
            ProxyError::HelloTimeout | ProxyError::Hello(_) => "not_tls",
            ProxyError::UnknownHost(_) | ProxyError::NoSuchTenant(_) => "unknown_tenant",
            ProxyError::WakeTimeout { .. } => "wake_timeout",
            ProxyError::AsleepQuiet(_) => "asleep_quiet",
            ProxyError::Held(_) => "wake_tls",
            ProxyError::Io(_) => "io_error",
        }
    }
}

pub async fn handle(mut client: TcpStream, waker: Arc<Waker>) -> Result<&'static str, ProxyError> {
    let (prefix, hello) = read_hello(&mut client).await?;
    let tenant = hello
        .server_name
        .as_deref()
        .and_then(|h| names::tenant_of_api_host(h, &waker.base_domain))
        .ok_or_else(|| ProxyError::UnknownHost(hello.server_name.clone()))?;
    let quiet = hello.alpn.iter().any(|p| waker.quiet_alpn.contains(p));
    let backend = waker.backends.address(&tenant).await?;
    if !quiet {
        waker.activity.touch(&tenant);
    }
    let mut upstream = match connect(backend, CONNECT_WITHIN).await {
        Ok(s) => s,
        Err(_) if quiet => {
            waker.backends.forget(&tenant);
            return Err(ProxyError::AsleepQuiet(tenant));
        }
        Err(_) => {
            // Looked up again: the address kept may be of a Service since made again.
            waker.backends.forget(&tenant);
            let backend = waker.backends.address(&tenant).await?;
            held(client, prefix, hello, &tenant, backend, &waker).await?;
            return Ok("woke");
        }
    };
    let _ = upstream.set_nodelay(true);
    upstream.write_all(&prefix).await?;
    let mut client = Touching {
        inner: client,
        on_read: &|| touch(&waker, &tenant, quiet),
    };
    splice(&mut client, &mut upstream, &tenant).await?;
    Ok("passed")
}

fn touch(waker: &Waker, tenant: &str, quiet: bool) {
    if !quiet {
        waker.activity.touch(tenant);
    }
}

/// A connection to a sleeping tenant: TLS completed here ([`held`](super::held)), the tenant
/// woken, and the plaintext carried to its control plane over TLS once it answers.
async fn held(
    client: TcpStream,
    prefix: Vec<u8>,
    hello: hello::Hello,
    tenant: &str,
    backend: SocketAddr,
    waker: &Waker,
) -> Result<(), ProxyError> {
    let host = hello.server_name.unwrap_or_default();
    let alpn = super::held::agreed(&hello.alpn);
    let tls = waker
        .certificates
        .for_tenant(&waker.client, tenant, &host, alpn)
        .await?;
    // The wake is written before the handshake: the control plane starts while the client
    // completes it.
    let started = Instant::now();
    waker.metrics.holding.inc();
    let _holding = scopeguard(|| {
        waker.metrics.holding.dec();
    });
    if let Err(error) = waker.activity.wake(tenant).await {
        warn!(%tenant, %error, "could not write the wake; the connection waits anyway");
    }
    info!(%tenant, "holding a connection while the tenant wakes");
    let replay = Replay {
        prefix,
        read: 0,
        inner: Touching {
            inner: client,
            on_read: &|| touch(waker, tenant, false),
        },
    };
    let mut client = tokio_rustls::TlsAcceptor::from(tls.server.clone())
        .accept(replay)
        .await?;
    let upstream = hold(tenant, backend, waker, &tls, started).await?;
    let _ = upstream.set_nodelay(true);
    let mut upstream = tokio_rustls::TlsConnector::from(tls.client)
        .connect(tls.host, upstream)
        .await?;
    let held = started.elapsed();
    waker.metrics.held.observe(held.as_secs_f64());
    info!(%tenant, held_ms = held.as_millis() as u64, "woken; carrying the connection through");
    splice(&mut client, &mut upstream, tenant).await?;
    Ok(())
}

/// Reads until a whole ClientHello has arrived; returns the bytes read and what it says.
async fn read_hello(client: &mut TcpStream) -> Result<(Vec<u8>, hello::Hello), ProxyError> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        loop {
            let mut chunk = [0u8; 2048];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Err(ProxyError::Hello(hello::HelloError::NotTls(
                    "the connection ended before its ClientHello".into(),
                )));
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(h) = hello::parse(&buf)? {
                return Ok(h);
            }
        }
    };
    let hello = timeout(HELLO_WITHIN, read)
        .await
        .map_err(|_| ProxyError::HelloTimeout)??;
    Ok((buf, hello))
}

async fn connect(backend: SocketAddr, within: Duration) -> std::io::Result<TcpStream> {
    match timeout(within, TcpStream::connect(backend)).await {
        Ok(connected) => connected,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// Tries the control plane until it accepts a connection, through its Service or, sooner, at
/// its pod once that answers its readiness check ([`ready`](super::ready)); or until the
/// waker's `hold` has passed since `started`.
async fn hold(
    tenant: &str,
    backend: SocketAddr,
    waker: &Waker,
    tls: &super::held::TenantTls,
    started: Instant,
) -> Result<TcpStream, ProxyError> {
    let mut pause = Duration::from_millis(100);
    loop {
        match connect(backend, HELD_CONNECT_WITHIN).await {
            Ok(s) => return Ok(s),
            // Refused: no ready pod behind the Service yet; timed out: one that the network
            // does not reach yet (its policy not programmed).
            Err(error) => {
                let after_ms = started.elapsed().as_millis() as u64;
                debug!(%tenant, %error, after_ms, "its Service does not answer yet");
            }
        }
        if let Some(pod) = super::ready::ready_pod(&waker.client, tenant, tls).await
            && let Ok(s) = connect(pod, HELD_CONNECT_WITHIN).await
        {
            debug!(%tenant, %pod, "its pod answers before its Service");
            return Ok(s);
        }
        if started.elapsed() >= waker.hold {
            return Err(ProxyError::WakeTimeout {
                tenant: tenant.to_owned(),
                held: waker.hold,
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_AT_MOST);
    }
}

/// Carries bytes both ways until either side ends.
async fn splice<A, B>(client: &mut A, upstream: &mut B, tenant: &str) -> std::io::Result<()>
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    tokio::io::copy_bidirectional(client, upstream).await?;
    debug!(%tenant, "connection closed");
    Ok(())
}

/// The client's stream with the ClientHello already read from it put back in front, for the
/// TLS handshake the waker completes itself.
struct Replay<S> {
    prefix: Vec<u8>,
    read: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.read < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.read);
            let start = self.read;
            buf.put_slice(&self.prefix[start..start + n]);
            self.read += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replay<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A stream that calls `on_read` whenever bytes are read from it (the client's: what it sends
/// is activity).
struct Touching<'a> {
    inner: TcpStream,
    on_read: &'a (dyn Fn() + Sync),
}

impl AsyncRead for Touching<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            (self.on_read)();
        }
        polled
    }
}

impl AsyncWrite for Touching<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Runs `f` when dropped (the held-connections gauge goes down however the hold ends).
fn scopeguard<F: FnOnce()>(f: F) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}
