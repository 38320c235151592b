//! Errors, each printed as one line, and the exit code each maps to (documented in `--help`).

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
  10  not allowed";

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
            CliError::Other(_) => exit::ERROR,
        }
    }

    /// The message on one line (server messages may carry newlines).
    pub fn one_line(&self) -> String {
        self.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;
