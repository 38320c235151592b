//! Errors, each printed as one line, and the exit code each maps to (documented in `--help`).
//! Modules with errors of their own ([`crate::origin::UrlError`],
//! [`crate::private_file::WriteError`]) convert into [`CliError`], which decides the exit code.
//! The errors of the stored login's server ([`ServerError`]) and of a kubeconfig merge
//! ([`Conflict`]) are defined here, so this module needs nothing of the modules that raise them.

use crate::origin::UrlError;

/// Exit codes. Stable: scripts depend on them.
pub mod exit {
    pub const OK: i32 = 0;
    /// Anything not listed below.
    pub const ERROR: i32 = 1;
    /// Bad command line (clap's own code).
    pub const USAGE: i32 = 2;
    /// Not logged in, or the login expired and could not be refreshed.
    pub const NOT_LOGGED_IN: i32 = 3;
    /// The server (or the OIDC issuer) could not be reached.
    pub const UNREACHABLE: i32 = 4;
    /// No such tenant (or not yours).
    pub const NOT_FOUND: i32 = 5;
    /// The tenant already exists.
    pub const EXISTS: i32 = 6;
    /// The server refused the input (e.g. an invalid quantity or name).
    pub const INVALID: i32 = 7;
    /// --wait gave up (--timeout), or the tenant failed.
    pub const TIMEOUT: i32 = 8;
    /// The tenant has no kubeconfig yet (its control plane is not ready).
    pub const NOT_READY: i32 = 9;
    /// The server refused the action (403).
    pub const FORBIDDEN: i32 = 10;
    /// The stored login is for another server (--server, KUBESPACES_SERVER): its token was not
    /// sent.
    pub const OTHER_SERVER: i32 = 11;
}

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   success
  1   other error
  2   invalid command line
  3   not logged in (run: kubespaces login --server URL)
  4   server or OIDC issuer unreachable
  5   tenant not found
  6   tenant already exists
  7   invalid input refused by the server (name, quantity)
  8   --wait timed out, or the tenant failed
  9   tenant has no kubeconfig yet (not Ready)
  10  not allowed
  11  the stored login is for another server (run: kubespaces login --server URL)";

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("not logged in: run `kubespaces login --server URL`")]
    NotLoggedIn,
    #[error("your login expired and could not be refreshed ({0}): run `kubespaces login` again")]
    LoginExpired(String),
    #[error("cannot reach {what} at {url}: {reason}")]
    Unreachable {
        what: &'static str,
        url: String,
        reason: String,
    },
    #[error("tenant {0:?} not found")]
    NotFound(String),
    #[error("tenant {0:?} already exists")]
    Exists(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    NotReady(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Other(String),
    /// The live stream ended in the middle of an event (a server replica went away, a proxy
    /// closed the connection): the waits open it again.
    #[error("the live stream broke: {0}")]
    StreamBroken(String),
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A URL a token would travel to that is refused (plain http, not a URL).
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Write(#[from] crate::private_file::WriteError),
    #[error(transparent)]
    Conflict(#[from] Conflict),
}

/// Why the stored login is not used for a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "the stored login is for {issued_for}, not {requested}; its token goes only to the server \
         it was issued for: to use {requested}, run `kubespaces login --server {requested}`"
    )]
    Elsewhere {
        issued_for: String,
        requested: String,
    },
    /// A file that records no server: its tokens are not sent anywhere.
    #[error("{}", not_recorded(requested.as_deref()))]
    NotRecorded { requested: Option<String> },
    #[error(transparent)]
    Url(#[from] UrlError),
}

fn not_recorded(requested: Option<&str>) -> String {
    match requested {
        Some(server) => format!(
            "not logged in to {server}: the stored login does not record which server it was \
             issued for, so its token is not sent there: run `kubespaces login --server {server}`"
        ),
        None => "not logged in: the stored login does not record which server it was issued \
                 for: run `kubespaces login --server URL`"
            .into(),
    }
}

/// Entries of the tenant's name in the user's kubeconfig that kubespaces did not write.
#[derive(Debug, thiserror::Error)]
#[error(
    "the kubeconfig already has {} that kubespaces did not write for tenant {tenant}; nothing was \
     changed: --force replaces {}",
    entries.join(" and "),
    if entries.len() == 1 { "it" } else { "them" }
)]
pub struct Conflict {
    pub tenant: String,
    /// `context "prod"`, ...
    pub entries: Vec<String>,
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::NotLoggedIn | CliError::LoginExpired(_) => exit::NOT_LOGGED_IN,
            CliError::Unreachable { .. } => exit::UNREACHABLE,
            CliError::NotFound(_) => exit::NOT_FOUND,
            CliError::Exists(_) => exit::EXISTS,
            CliError::Invalid(_) => exit::INVALID,
            CliError::Timeout(_) => exit::TIMEOUT,
            CliError::NotReady(_) => exit::NOT_READY,
            CliError::Forbidden(_) => exit::FORBIDDEN,
            CliError::Server(ServerError::Elsewhere { .. }) => exit::OTHER_SERVER,
            // No server recorded: not logged in to any.
            CliError::Server(ServerError::NotRecorded { .. }) => exit::NOT_LOGGED_IN,
            CliError::Server(ServerError::Url(_)) | CliError::Url(_) => exit::ERROR,
            CliError::Write(_)
            | CliError::Conflict(_)
            | CliError::Other(_)
            | CliError::StreamBroken(_) => exit::ERROR,
        }
    }

    /// The message on one line (server messages may carry newlines).
    /// `what` at `url` could not be reached: the innermost error of the failure ("Connection
    /// refused", "invalid peer certificate: UnknownIssuer"), not the HTTP client's wrapper, and
    /// for a certificate the flag that trusts a private CA.
    pub fn unreachable(
        what: &'static str,
        url: &str,
        e: &(dyn std::error::Error + 'static),
    ) -> CliError {
        let mut cause = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        let mut reason = cause.to_string();
        if reason.contains("certificate") {
            reason
                .push_str(" (signed by a private CA? trust it with --certificate-authority FILE)");
        }
        CliError::Unreachable {
            what,
            url: url.to_owned(),
            reason,
        }
    }

    pub fn one_line(&self) -> String {
        self.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_server_has_an_exit_code_of_its_own() {
        let elsewhere = CliError::from(ServerError::Elsewhere {
            issued_for: "https://a.example.com".into(),
            requested: "https://b.example.com".into(),
        });
        assert_eq!(elsewhere.exit_code(), exit::OTHER_SERVER);
        let unrecorded = CliError::from(ServerError::NotRecorded { requested: None });
        assert_eq!(unrecorded.exit_code(), exit::NOT_LOGGED_IN);
        assert!(EXIT_CODES_HELP.contains("\n  11  the stored login is for another server"));
    }
}
