//! `kubespaces`, the command-line door into KubeSpaces: log in with OIDC (device authorization
//! grant), then create, inspect, wait for, put to sleep, wake and delete tenants and fetch their
//! kubeconfig.
//!
//! - [`credentials`]: the token file (0600, under the user's config directory), and the one
//!   server its tokens may go to.
//! - [`origin`]: https only (but for loopback), and servers compared by origin.
//! - [`trust`]: the CAs it trusts: the built-in roots and `--certificate-authority`.
//! - [`private_file`]: 0600 files written atomically, never through a planted link.
//! - [`login`]: the device flow and refreshing tokens.
//! - [`client`]: the server's REST API and live stream.
//! - [`kubeconfig`]: merging a tenant kubeconfig into the user's, leaving every other entry alone.
//! - [`wait`]: `--wait`, following the live stream until the tenant is Ready, Asleep, awake or
//!   gone.
//! - [`output`]: table, YAML and JSON.
//! - [`error`]: one-line errors and the exit codes.

pub mod client;
pub mod credentials;
pub mod error;
pub mod kubeconfig;
pub mod login;
pub mod origin;
pub mod output;
pub mod private_file;
pub mod trust;
pub mod wait;
