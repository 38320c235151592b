//! Sealed cookies: what the portal keeps of a browser (its session, its login in progress)
//! travels in that browser's cookies, encrypted and authenticated with the server's session keys
//! (ChaCha20-Poly1305, from `ring`). Every replica holding the same keys opens them, and a
//! restart loses none. A value sealed for one purpose does not open for another (the purpose is
//! the associated data), and a value with one bit changed does not open at all.
//!
//! Keys: `--session-keys-file`, one base64 key of 32 bytes per line. The first seals, every one
//! opens, so a key is rotated by putting a new one first and dropping the old one a session
//! lifetime later. Without the file, the server makes a key of its own at start.

use std::path::{Path, PathBuf};

use base64::{Engine, engine::general_purpose::STANDARD, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Serialize, de::DeserializeOwned};
use tracing::info;

use crate::random;

/// The length of a session key: 256 bits.
pub const KEY_LEN: usize = 32;

/// What a sealed value is for: the associated data it is sealed with.
#[derive(Clone, Copy)]
pub enum Purpose {
    Session,
    Login,
}

impl Purpose {
    fn aad(self) -> Aad<&'static [u8]> {
        Aad::from(match self {
            Purpose::Session => b"kubespaces portal session v1".as_slice(),
            Purpose::Login => b"kubespaces portal login v1".as_slice(),
        })
    }
}

/// Why `--session-keys-file` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("--session-keys-file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "--session-keys-file {path}, line {line}: not a base64 key of 32 bytes \
         (make one with `head -c 32 /dev/urandom | base64`)"
    )]
    Malformed { path: PathBuf, line: usize },
    #[error(
        "--session-keys-file {path}: no key (one base64 key of 32 bytes per line; the first \
         seals, every one opens)"
    )]
    Empty { path: PathBuf },
}

/// Seals and opens the portal's cookies.
pub struct Sealer {
    /// Never empty: the first seals.
    keys: Vec<LessSafeKey>,
}

impl Sealer {
    /// The keys of `path`: one base64 key of 32 bytes per line; blank lines and `#` comments are
    /// left out.
    pub fn from_file(path: &Path) -> Result<Sealer, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut keys = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let key = STANDARD
                .decode(line)
                .ok()
                .and_then(|bytes| <[u8; KEY_LEN]>::try_from(bytes).ok())
                .ok_or_else(|| KeyError::Malformed {
                    path: path.to_owned(),
                    line: i + 1,
                })?;
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(Sealer::from_keys(&keys))
    }

    /// The sealer `--session-keys-file` asks for: its keys, or without it a key made now.
    pub fn for_flag(path: Option<&Path>) -> Result<Sealer, KeyError> {
        match path {
            Some(path) => Sealer::from_file(path),
            None => {
                info!(
                    "no --session-keys-file: portal sessions end with this process, and no \
                     other replica reads them"
                );
                Ok(Sealer::random())
            }
        }
    }

    /// A key made now, known to this process only.
    pub fn random() -> Sealer {
        let mut key = [0u8; KEY_LEN];
        random::fill(&mut key);
        Sealer::from_keys(&[key])
    }

    /// `keys`, the first sealing; at least one.
    pub fn from_keys(keys: &[[u8; KEY_LEN]]) -> Sealer {
        assert!(!keys.is_empty(), "a sealer needs a key");
        let keys = keys
            .iter()
            .map(|k| match UnboundKey::new(&CHACHA20_POLY1305, k) {
                Ok(key) => LessSafeKey::new(key),
                // A key of the algorithm's own length is always accepted.
                Err(_) => unreachable!("a 32-byte ChaCha20-Poly1305 key"),
            })
            .collect();
        Sealer { keys }
    }

    /// `value` sealed for `purpose` with the first key: URL-safe base64 of a random nonce, the
    /// ciphertext of its JSON and the tag.
    pub fn seal<T: Serialize>(&self, purpose: Purpose, value: &T) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        random::fill(&mut nonce);
        let mut data = serde_json::to_vec(value).expect("the portal's own types serialize");
        // Fails only past the algorithm's message size (256 GiB).
        if self.keys[0]
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                purpose.aad(),
                &mut data,
            )
            .is_err()
        {
            return String::new();
        }
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&data);
        URL_SAFE_NO_PAD.encode(sealed)
    }

    /// The value `sealed` holds, if one of the keys sealed it for `purpose` and it is intact.
    pub fn open<T: DeserializeOwned>(&self, purpose: Purpose, sealed: &str) -> Option<T> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, data) = bytes.split_at(NONCE_LEN);
        self.keys.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut data = data.to_vec();
            let plain = key.open_in_place(nonce, purpose.aad(), &mut data).ok()?;
            serde_json::from_slice(plain).ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn key(byte: u8) -> [u8; KEY_LEN] {
        [byte; KEY_LEN]
    }

    #[test]
    fn a_sealed_value_opens_with_its_key_and_purpose_only() {
        let sealer = Sealer::from_keys(&[key(1)]);
        let sealed = sealer.seal(Purpose::Session, &("alice@example.com", 42));
        assert!(!sealed.contains("alice"), "sealed, not encoded: {sealed}");
        assert_eq!(
            sealer.open::<(String, u32)>(Purpose::Session, &sealed),
            Some(("alice@example.com".into(), 42))
        );
        // Another purpose, another key, a changed bit, a cut: none opens.
        assert_eq!(sealer.open::<(String, u32)>(Purpose::Login, &sealed), None);
        let other = Sealer::from_keys(&[key(2)]);
        assert_eq!(other.open::<(String, u32)>(Purpose::Session, &sealed), None);
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let flipped = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(
            sealer.open::<(String, u32)>(Purpose::Session, &flipped),
            None
        );
        assert_eq!(
            sealer.open::<(String, u32)>(Purpose::Session, &sealed[..sealed.len() / 2]),
            None
        );
        assert_eq!(
            sealer.open::<(String, u32)>(Purpose::Session, "not base64!"),
            None
        );
    }

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let old = Sealer::from_keys(&[key(1)]);
        let rotated = Sealer::from_keys(&[key(2), key(1)]);
        let before = old.seal(Purpose::Session, &"before");
        assert_eq!(
            rotated.open::<String>(Purpose::Session, &before).as_deref(),
            Some("before")
        );
        let after = rotated.seal(Purpose::Session, &"after");
        assert_eq!(old.open::<String>(Purpose::Session, &after), None);
        assert_eq!(
            Sealer::from_keys(&[key(2)])
                .open::<String>(Purpose::Session, &after)
                .as_deref(),
            Some("after")
        );
    }

    #[test]
    fn two_seals_of_one_value_differ() {
        let sealer = Sealer::random();
        assert_ne!(
            sealer.seal(Purpose::Login, &"same"),
            sealer.seal(Purpose::Login, &"same")
        );
    }

    #[test]
    fn the_keys_file_names_the_line_that_is_wrong() {
        let dir = std::env::temp_dir().join(format!("kubespaces-seal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::File::create(&path)
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            path
        };
        let good = STANDARD.encode(key(7));
        let path = write("good", &format!("# rotated 2026-12\n{good}\n\n"));
        let sealer = Sealer::from_file(&path).expect("a keys file");
        let sealed = Sealer::from_keys(&[key(7)]).seal(Purpose::Session, &1);
        assert_eq!(sealer.open::<u8>(Purpose::Session, &sealed), Some(1));

        let short = write(
            "short",
            &format!("{good}\n{}\n", STANDARD.encode([1u8; 16])),
        );
        let e = Sealer::from_file(&short)
            .err()
            .expect("a 16-byte key is refused");
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(e.to_string().contains("/dev/urandom"), "{e}");
        let empty = write("empty", "# nothing yet\n");
        assert!(matches!(
            Sealer::from_file(&empty),
            Err(KeyError::Empty { .. })
        ));
        assert!(matches!(
            Sealer::from_file(&dir.join("absent")),
            Err(KeyError::Read { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
