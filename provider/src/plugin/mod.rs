//! go-plugin server side: what makes a process a Terraform/OpenTofu plugin.
//!
//! Order matters and was checked against Terraform 1.11.4: ignore SIGINT (Terraform sends
//! StopProvider and waits for the in-flight apply instead; dying would lose its result),
//! bind the socket, print the handshake line and flush, then serve until
//! `GRPCController/Shutdown` (without it, every launch ends in a SIGKILL 2 s later).

pub mod handshake;
mod incoming;
pub mod socket;
pub mod tls;

use std::io::Write as _;
use std::path::PathBuf;

use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_stream::wrappers::UnixListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;

use crate::proto::plugin::Empty;
use crate::proto::plugin::grpc_controller_server::{GrpcController, GrpcControllerServer};
use crate::proto::tfplugin6::provider_server::{Provider, ProviderServer};

/// Terraform's own limit (`grpcMaxMessageSize = 256 << 20`); tonic's default is 4 MiB.
const MAX_MESSAGE_SIZE: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Handshake(#[from] handshake::HandshakeError),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error(transparent)]
    SocketGroup(#[from] socket::SocketError),
    #[error("socket {path}: {source}")]
    Socket {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("installing the signal handler: {0}")]
    Signal(std::io::Error),
    #[error("writing the handshake line: {0}")]
    Stdout(std::io::Error),
    #[error("gRPC server: {0}")]
    Serve(#[from] tonic::transport::Error),
}

/// How the process was started.
pub enum Mode {
    /// Launched by Terraform/OpenTofu: cookie checked, AutoMTLS if a client cert is given.
    Managed,
    /// `--debug`: plaintext (reattach skips AutoMTLS), prints `TF_REATTACH_PROVIDERS`,
    /// and Ctrl-C stops it since a developer, not Terraform, owns this process.
    Debug { provider_address: String },
}

struct Controller {
    shutdown: CancellationToken,
}

#[tonic::async_trait]
impl GrpcController for Controller {
    async fn shutdown(
        &self,
        _request: tonic::Request<Empty>,
    ) -> Result<tonic::Response<Empty>, tonic::Status> {
        tracing::debug!("Shutdown requested by the plugin client");
        self.shutdown.cancel();
        Ok(tonic::Response::new(Empty {}))
    }
}

fn print_stdout(line: &str) -> Result<(), PluginError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(PluginError::Stdout)
}

pub async fn serve<P: Provider>(provider: P, mode: Mode) -> Result<(), PluginError> {
    let debug = matches!(mode, Mode::Debug { .. });
    if !debug {
        handshake::check_cookie(std::env::var(handshake::MAGIC_COOKIE_KEY).ok().as_deref())?;
        handshake::negotiate(std::env::var("PLUGIN_PROTOCOL_VERSIONS").ok().as_deref())?;
    }

    let shutdown = CancellationToken::new();
    let mut sigint = signal(SignalKind::interrupt()).map_err(PluginError::Signal)?;
    let on_sigint = shutdown.clone();
    tokio::spawn(async move {
        while sigint.recv().await.is_some() {
            if debug {
                on_sigint.cancel();
            } else {
                tracing::info!(
                    "plugin received interrupt signal, ignoring: Terraform will stop us"
                );
            }
        }
    });

    let path = socket::path();
    let listener = UnixListener::bind(&path).map_err(|source| PluginError::Socket {
        path: path.clone(),
        source,
    })?;
    let _cleanup = socket::SocketFile(path.clone());
    socket::apply_group(&path)?;
    let addr = path.to_string_lossy().into_owned();

    let router = Server::builder()
        .add_service(
            ProviderServer::new(provider)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
        )
        .add_service(GrpcControllerServer::new(Controller {
            shutdown: shutdown.clone(),
        }));

    let client_cert = std::env::var("PLUGIN_CLIENT_CERT")
        .ok()
        .filter(|pem| !debug && !pem.trim().is_empty());
    match (mode, client_cert) {
        (Mode::Debug { provider_address }, _) => {
            let reattach = handshake::reattach_json(&provider_address, std::process::id(), &addr);
            print_stdout(&format!(
                "Provider started. To attach Terraform or OpenTofu, set in your shell:\n\n\
                 \tTF_REATTACH_PROVIDERS='{reattach}'\n\nPress Ctrl-C to stop."
            ))?;
            let incoming = UnixListenerStream::new(listener);
            router
                .serve_with_incoming_shutdown(incoming, shutdown.cancelled())
                .await?;
        }
        (Mode::Managed, Some(pem)) => {
            let identity = tls::ServerIdentity::generate()?;
            let config = tls::server_config(&identity, &pem)?;
            let incoming = incoming::tls_incoming(listener, config);
            print_stdout(&handshake::handshake_line(
                "unix",
                &addr,
                Some(identity.cert_der.as_ref()),
            ))?;
            router
                .serve_with_incoming_shutdown(incoming, shutdown.cancelled())
                .await?;
        }
        (Mode::Managed, None) => {
            // TF_DISABLE_PLUGIN_TLS: Terraform gave no certificate and expects plaintext.
            tracing::warn!("PLUGIN_CLIENT_CERT is not set: serving without TLS");
            print_stdout(&handshake::handshake_line("unix", &addr, None))?;
            let incoming = UnixListenerStream::new(listener);
            router
                .serve_with_incoming_shutdown(incoming, shutdown.cancelled())
                .await?;
        }
    }
    tracing::debug!("plugin server stopped");
    Ok(())
}
