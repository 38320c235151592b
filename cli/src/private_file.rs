//! Files only their owner may read (the token file, kubeconfigs holding tenant tokens), written
//! so that no one else ever gets a look and no link steers the write elsewhere.
//!
//! The bytes go to a fresh temporary file in the target's directory, created exclusively
//! (`O_CREAT|O_EXCL`, plus `O_NOFOLLOW`) with mode 0600, synced, then renamed over the target. So:
//! - the file is 0600 from its first byte, even when the target existed with a wider mode (a
//!   0644 kubeconfig ends 0600);
//! - a symlink planted at a temporary name is never opened through (`O_EXCL` fails on any existing
//!   name, dangling links included; the next name is tried), and one planted at the target is
//!   replaced, not followed (`rename` acts on the link itself);
//! - a crash leaves the old file or the new one, never half of one.

use std::{
    fs::{DirBuilder, File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
};

/// Temporary names tried before giving up (each taken name is something planted or a crashed
/// run's leftover).
const TEMP_ATTEMPTS: u32 = 16;

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    path: PathBuf,
    source: io::Error,
}

/// Writes `bytes` to `path`, mode 0600, atomically. A directory it has to create is 0700.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let fail = |source| WriteError {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| fail(io::Error::new(io::ErrorKind::InvalidInput, "no file name")))?;
    create_dir(dir).map_err(fail)?;
    let (tmp, mut file) = create_temp(dir, name).map_err(fail)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    // The rename is durable once the directory is synced. Some filesystems refuse to sync a
    // directory; the file itself is complete either way, so that is not an error.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The directory and its missing parents, each created 0700 (existing ones are left as they are:
/// they are the user's).
fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// `.<name>.tmp.<pid>.<attempt>` in `dir`: hidden, and distinct per process so two concurrent
/// runs never share one.
fn temp_path(dir: &Path, name: &str, attempt: u32) -> PathBuf {
    dir.join(format!(".{name}.tmp.{}.{attempt}", std::process::id()))
}

fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    for attempt in 0..TEMP_ATTEMPTS {
        let tmp = temp_path(dir, name, attempt);
        match open_new(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{TEMP_ATTEMPTS} temporary names in {} are taken (remove the .{name}.tmp.* files)",
            dir.display()
        ),
    ))
}

fn open_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    // The umask may have taken bits from 0600 (never added any); the file is exactly 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_new_file_is_0600_in_a_new_0700_directory() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("a/b/credentials.json");
        write(&path, b"{}").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&root.path().join("a/b")), 0o700);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
    }

    #[test]
    fn an_existing_0644_file_is_replaced_and_ends_0600() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            mode(dir.path()),
            0o755,
            "an existing directory is the user's"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "config")
            .collect();
        assert!(
            leftovers.is_empty(),
            "no temporary file left: {leftovers:?}"
        );
    }

    #[test]
    fn a_symlink_planted_at_a_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let missing = dir.path().join("would-be-created");
        // The first name points at an existing file, the second nowhere (a dangling link).
        symlink(&victim, temp_path(dir.path(), "credentials.json", 0)).unwrap();
        symlink(&missing, temp_path(dir.path(), "credentials.json", 1)).unwrap();
        let path = dir.path().join("credentials.json");
        write(&path, b"token").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(
            !missing.exists(),
            "nothing created through the dangling link"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "token");
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_symlink_planted_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = dir.path().join("config");
        symlink(&victim, &path).unwrap();
        write(&path, b"tenant token").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(mode(&victim), 0o644);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file(), "the link itself was replaced");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "tenant token");
    }
}
