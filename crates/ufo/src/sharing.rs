//! `--share NAME`: which tokens of `ufo serve` may reach a session or a batch started in a
//! terminal, kept in the folder's `share.json` (`{"shared": ["alice"]}`), which the web console
//! reads to decide (docs/security.md, "Who may do what"). Every session and batch writes it at
//! its start, empty when nothing is shared, so a resume without `--share` shares nothing even
//! when an earlier run of the folder did.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in a trajectory or batch folder.
pub const SHARE_FILE: &str = "share.json";
/// Largest `share.json` read.
const MAX_BYTES: u64 = 64 * 1024;
/// Most names kept.
const MAX_NAMES: usize = 64;

#[derive(Debug, Default, Serialize, Deserialize)]
struct ShareFile {
    shared: Vec<String>,
}

/// The bytes of `share.json` for `names`.
fn contents(names: &[String]) -> Vec<u8> {
    serde_json::to_vec_pretty(&ShareFile {
        shared: names.to_vec(),
    })
    .unwrap_or_else(|_| b"{\"shared\":[]}".to_vec())
}

/// Write `share.json` through the session's recorder (a temporary file renamed, as every
/// trajectory file).
pub fn record(
    names: &[String],
    recorder: &mut dyn ufo_core::Recorder,
) -> Result<(), ufo_core::RecorderError> {
    recorder.artifact(SHARE_FILE, &contents(names)).map(|_| ())
}

/// Write `share.json` into `dir` (a batch folder).
pub fn write(dir: &Path, names: &[String]) -> std::io::Result<()> {
    crate::folder::write_bytes(&dir.join(SHARE_FILE), &contents(names))
}

/// The token names `dir`'s `share.json` shares with: none when it is missing, unreadable,
/// too large or malformed (a damaged file shares nothing); names that are not token names are
/// left out.
pub fn read(dir: &Path) -> Vec<String> {
    let Ok(bytes) = crate::folder::read_capped(&dir.join(SHARE_FILE), MAX_BYTES) else {
        return Vec::new();
    };
    let Ok(file) = serde_json::from_slice::<ShareFile>(&bytes) else {
        return Vec::new();
    };
    file.shared
        .into_iter()
        .filter(|n| ufo_core::access::valid_token_name(n))
        .take(MAX_NAMES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_is_read_and_a_damaged_file_shares_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(read(dir.path()).is_empty(), "no file: nothing shared");
        write(dir.path(), &["alice".into(), "bob".into()]).expect("write");
        assert_eq!(read(dir.path()), ["alice", "bob"]);
        write(dir.path(), &[]).expect("write");
        assert!(read(dir.path()).is_empty());
        for bad in [&b"not json"[..], br#"{"shared":"alice"}"#, br#"["alice"]"#] {
            std::fs::write(dir.path().join(SHARE_FILE), bad).expect("write");
            assert!(
                read(dir.path()).is_empty(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        std::fs::write(
            dir.path().join(SHARE_FILE),
            br#"{"shared":["ok","a b","../x",""]}"#,
        )
        .expect("write");
        assert_eq!(read(dir.path()), ["ok"], "only token names");
    }
}
