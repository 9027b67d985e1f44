//! Where the portal's restore token is kept between sessions (docs/security.md, "GNOME's
//! portals"): `$XDG_DATA_HOME/ufo/gnome-portal-token` (default
//! `~/.local/share/ufo/gnome-portal-token`), one line, the file 0600 in a folder made 0700.
//! Deleting the file makes the next session ask again. The token is only a name the portal gave
//! for a grant it keeps itself: it is read back only when it looks like one (at most
//! [`MOST`] bytes of letters, digits and dashes; the portal's are UUIDs).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The longest token read back.
const MOST: usize = 128;
/// The file's name in ufo's data folder.
pub(crate) const FILE: &str = "gnome-portal-token";

/// The restore token's file.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: Option<PathBuf>,
}

impl TokenFile {
    /// The file in this user's data folder (`None` when neither `XDG_DATA_HOME` nor `HOME` is
    /// set: nothing is kept).
    pub(crate) fn of_user() -> TokenFile {
        let data = match std::env::var_os("XDG_DATA_HOME") {
            Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
            _ => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")),
        };
        TokenFile {
            path: data.map(|d| d.join("ufo").join(FILE)),
        }
    }

    /// The file at `path`.
    #[cfg(test)]
    pub(crate) fn at(path: &Path) -> TokenFile {
        TokenFile {
            path: Some(path.to_path_buf()),
        }
    }

    /// Where it is.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The kept token, when there is one that looks like a token.
    pub(crate) fn load(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.path.as_ref()?).ok()?;
        let t = text.trim();
        let fits = !t.is_empty()
            && t.len() <= MOST
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        fits.then(|| t.to_string())
    }

    /// Keep `token` (replacing the last one), readable by this user only.
    pub(crate) fn save(&self, token: &str) -> std::io::Result<()> {
        let path = self.path.as_ref().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no data folder (set XDG_DATA_HOME or HOME)",
            )
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let tmp = path.with_extension("new");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        // a file left by an older run may have had another mode
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        writeln!(f, "{token}")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = TokenFile::at(&dir.path().join("ufo").join(FILE));
        assert_eq!(f.load(), None, "nothing kept yet");
        f.save("1b4e28ba-2fa1-11d2-883f-0016d3cca427").unwrap();
        assert_eq!(
            f.load().as_deref(),
            Some("1b4e28ba-2fa1-11d2-883f-0016d3cca427")
        );
        let mode = std::fs::metadata(f.path().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("ufo"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }

    #[test]
    fn what_does_not_look_like_a_token_is_not_offered() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let f = TokenFile::at(&p);
        std::fs::write(&p, "not a token; rm -rf /\n").unwrap();
        assert_eq!(f.load(), None);
        std::fs::write(&p, "a".repeat(MOST + 1)).unwrap();
        assert_eq!(f.load(), None, "too long");
    }
}
