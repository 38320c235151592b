//! The plugin's Unix socket: where it lives and who may connect.
//!
//! go-plugin honours `PLUGIN_UNIX_SOCKET_DIR` (where to create it) and
//! `PLUGIN_UNIX_SOCKET_GROUP` (a group, by name or id, that gets read/write access, for a
//! client running as another user in that group). OpenTofu's provider-authoring guide asks
//! non-Go plugins to do the same.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("PLUGIN_UNIX_SOCKET_GROUP={0:?} names no group on this machine")]
    NoSuchGroup(String),
    #[error("giving group access to {path}: {source}")]
    Permissions {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Removes the socket file however the server ends.
pub struct SocketFile(pub PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn path() -> PathBuf {
    let dir = std::env::var_os("PLUGIN_UNIX_SOCKET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    dir.join(format!("plugin-kubespaces-{}-{nanos}", std::process::id()))
}

/// A group id from `PLUGIN_UNIX_SOCKET_GROUP`: a number, or a name from `group_file`
/// (the text of /etc/group).
pub fn resolve_group(spec: &str, group_file: &str) -> Option<u32> {
    if let Ok(gid) = spec.parse() {
        return Some(gid);
    }
    group_file.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let gid = fields.nth(1)?;
        (name == spec).then(|| gid.parse().ok()).flatten()
    })
}

/// Applies `PLUGIN_UNIX_SOCKET_GROUP`, if set: group ownership and mode 0660.
pub fn apply_group(socket: &Path) -> Result<(), SocketError> {
    let Some(spec) = std::env::var("PLUGIN_UNIX_SOCKET_GROUP")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        return Ok(());
    };
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    let gid =
        resolve_group(&spec, &groups).ok_or_else(|| SocketError::NoSuchGroup(spec.clone()))?;
    let permissions = |source| SocketError::Permissions {
        path: socket.to_owned(),
        source,
    };
    std::os::unix::fs::chown(socket, None, Some(gid)).map_err(permissions)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o660)).map_err(permissions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUPS: &str = "root:x:0:\nterraform:x:1042:alice,bob\nbroken\n";

    #[test]
    fn groups_by_id_or_name() {
        assert_eq!(resolve_group("7", GROUPS), Some(7));
        assert_eq!(resolve_group("terraform", GROUPS), Some(1042));
        assert_eq!(resolve_group("root", GROUPS), Some(0));
        assert_eq!(resolve_group("nobody-here", GROUPS), None);
        assert_eq!(resolve_group("broken", GROUPS), None);
    }
}
