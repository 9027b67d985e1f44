//! The bearer tokens of `ufo serve`: one per client, kept as SHA-256 digests in a JSON file
//! readable by its owner only, each with its name and [`Role`] (docs/security.md, "Who may do
//! what"). A token is 256 random bits, so a plain digest is enough (no password hashing
//! needed); a presented token is compared with every digest in constant time.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use ufo_core::access::{Principal, Role};

/// Largest token file read (a few thousand clients).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Errors of the token file.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read or written.
    #[error("cannot {action} the token file {path}: {source}; check the folder's permissions")]
    Io {
        /// read / write
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a token file.
    #[error("the token file {path} is damaged ({reason}); remove it and add the tokens again")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Others than the owner may read the file.
    #[error("the token file {0} may be read by other users; run `chmod 600 {0}`")]
    Exposed(PathBuf),
    /// A name given twice.
    #[error("a token named {0:?} exists already; revoke it first or choose another name")]
    Exists(String),
    /// No token of that name.
    #[error("no token named {0:?}; `ufo serve token list` shows the names")]
    Unknown(String),
    /// A name that is empty, too long or has characters other than letters, digits, `-_.@`.
    #[error("invalid token name {0:?}: use 1 to 64 letters, digits or `-_.@`")]
    BadName(String),
    /// No randomness from the system.
    #[error("cannot get random bytes for a token: {0}")]
    Random(String),
}

/// One client's token, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenEntry {
    /// The client's name.
    pub name: String,
    /// SHA-256 of the token, lower-case hex.
    pub sha256: String,
    /// When it was made (seconds since the epoch).
    pub created: u64,
    /// What its holder may do (files written before roles existed hold users).
    #[serde(default)]
    pub role: Role,
}

/// A token that [`TokenFile::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its name and role.
    pub principal: Principal,
    /// The SHA-256 of the token (hex), which names this very token: a token revoked and made
    /// again under the same name has another.
    pub token_id: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFileData {
    tokens: Vec<TokenEntry>,
}

/// The token file (`$XDG_DATA_HOME/ufo/serve/tokens.json`).
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The token file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tokens (none when the file does not exist).
    pub fn list(&self) -> Result<Vec<TokenEntry>, TokenError> {
        Ok(self.read()?.tokens)
    }

    /// Make a token for `name` with `role` and store its digest; returns the token (shown
    /// once).
    pub fn add(&self, name: &str, role: Role, now: u64) -> Result<String, TokenError> {
        check_name(name)?;
        let mut data = self.read()?;
        if data.tokens.iter().any(|t| t.name == name) {
            return Err(TokenError::Exists(name.to_string()));
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let token = format!(
            "ufo_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        );
        data.tokens.push(TokenEntry {
            name: name.to_string(),
            sha256: hex(&Sha256::digest(token.as_bytes())),
            created: now,
            role,
        });
        self.write(&data)?;
        Ok(token)
    }

    /// Remove `name`'s token.
    pub fn revoke(&self, name: &str) -> Result<(), TokenError> {
        let mut data = self.read()?;
        let before = data.tokens.len();
        data.tokens.retain(|t| t.name != name);
        if data.tokens.len() == before {
            return Err(TokenError::Unknown(name.to_string()));
        }
        self.write(&data)
    }

    /// The holder of this token, if it is one of the file's. Every stored digest is compared
    /// in constant time, whichever matches.
    pub fn check(&self, token: &str) -> Result<Option<Holder>, TokenError> {
        let digest = Sha256::digest(token.as_bytes());
        let mut found = None;
        for entry in self.read()?.tokens {
            let Some(stored) = unhex32(&entry.sha256) else {
                continue;
            };
            if bool::from(stored.ct_eq(digest.as_slice())) && found.is_none() {
                found = Some(Holder {
                    principal: Principal {
                        name: entry.name,
                        role: entry.role,
                    },
                    token_id: entry.sha256,
                });
            }
        }
        Ok(found)
    }

    /// The name and role of the token whose digest is `token_id`, while the file still holds
    /// it: `None` once it was revoked (or revoked and made again).
    pub fn current(&self, token_id: &str) -> Result<Option<Principal>, TokenError> {
        Ok(self
            .read()?
            .tokens
            .into_iter()
            .find(|t| t.sha256 == token_id)
            .map(|t| Principal {
                name: t.name,
                role: t.role,
            }))
    }

    fn read(&self) -> Result<TokenFileData, TokenError> {
        let io = |source| TokenError::Io {
            action: "read",
            path: self.path.clone(),
            source,
        };
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TokenFileData::default())
            }
            Err(e) => return Err(io(e)),
        };
        let damaged = |reason: String| TokenError::Damaged {
            path: self.path.clone(),
            reason,
        };
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return Err(damaged(format!(
                "not a regular file of at most {MAX_FILE_BYTES} bytes"
            )));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(TokenError::Exposed(self.path.clone()));
        }
        let text = std::fs::read(&self.path).map_err(io)?;
        serde_json::from_slice(&text).map_err(|e| damaged(e.to_string()))
    }

    /// Write the whole file anew: a temporary file made 0600, then renamed over it.
    fn write(&self, data: &TokenFileData) -> Result<(), TokenError> {
        let io = |source| TokenError::Io {
            action: "write",
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
        let tmp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        let text = serde_json::to_vec_pretty(data).map_err(|e| io(std::io::Error::other(e)))?;
        f.write_all(&text).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

fn check_name(name: &str) -> Result<(), TokenError> {
    if ufo_core::access::valid_token_name(name) {
        Ok(())
    } else {
        Err(TokenError::BadName(name.to_string()))
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_check_revoke() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = TokenFile::new(dir.path().join("serve/tokens.json"));
        let token = file.add("laptop", Role::User, 1).expect("add");
        assert!(token.len() > 40);
        let mode = std::fs::metadata(file.path())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(file.path()).expect("read");
        assert!(!text.contains(&token), "the token itself is never stored");
        let holder = file.check(&token).expect("check").expect("found");
        assert_eq!(holder.principal.name, "laptop");
        assert_eq!(holder.principal.role, Role::User);
        assert_eq!(
            file.current(&holder.token_id).expect("current"),
            Some(holder.principal.clone())
        );
        assert_eq!(file.check("ufo_wrong").expect("check"), None);
        assert!(matches!(
            file.add("laptop", Role::User, 2),
            Err(TokenError::Exists(_))
        ));
        assert!(matches!(
            file.add("a b", Role::User, 2),
            Err(TokenError::BadName(_))
        ));
        file.revoke("laptop").expect("revoke");
        assert_eq!(file.check(&token).expect("check"), None);
        assert_eq!(file.current(&holder.token_id).expect("current"), None);
        let again = file.add("laptop", Role::Admin, 3).expect("made again");
        let new = file.check(&again).expect("check").expect("found");
        assert_ne!(
            new.token_id, holder.token_id,
            "a new token is another token"
        );
        assert_eq!(file.current(&holder.token_id).expect("current"), None);
        assert_eq!(new.principal.role, Role::Admin);
        file.revoke("laptop").expect("revoke");
        assert!(matches!(file.revoke("laptop"), Err(TokenError::Unknown(_))));
    }

    #[test]
    fn a_file_without_roles_holds_users() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.json");
        let digest = hex(&Sha256::digest(b"ufo_old"));
        std::fs::write(
            &path,
            format!(r#"{{"tokens":[{{"name":"old","sha256":"{digest}","created":1}}]}}"#),
        )
        .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let file = TokenFile::new(&path);
        let holder = file.check("ufo_old").expect("check").expect("found");
        assert_eq!(holder.principal.role, Role::User);
    }

    #[test]
    fn an_exposed_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = TokenFile::new(dir.path().join("tokens.json"));
        file.add("a", Role::User, 1).expect("add");
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        assert!(matches!(file.check("x"), Err(TokenError::Exposed(_))));
    }

    proptest::proptest! {
        /// Whatever bytes the token file holds, reading it is a token, none, or an error that
        /// names the file: never a panic, never a token the bytes do not name.
        #[test]
        fn any_token_file_reads_or_fails_clearly(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            json in "\\{\"tokens\":\\[(\\{\"name\":\"[a-z@.]{0,8}\",\"sha256\":\"[0-9a-f]{0,64}\",\"created\":[0-9]{1,3}(,\"role\":\"(admin|user|viewer|root)\")?\\},?){0,3}\\]\\}",
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("tokens.json");
            for content in [bytes.clone(), json.clone().into_bytes()] {
                std::fs::write(&path, &content).expect("write");
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .expect("chmod");
                let file = TokenFile::new(&path);
                match file.check("ufo_probe") {
                    Ok(None) => {}
                    Ok(Some(h)) => proptest::prop_assert!(
                        String::from_utf8_lossy(&content).contains(&h.token_id),
                        "a holder the file does not name"
                    ),
                    Err(e) => proptest::prop_assert!(
                        e.to_string().contains("tokens.json"),
                        "{e}"
                    ),
                }
                let _ = file.list();
            }
        }
    }
}
