//! Reading a trajectory folder back (`events.jsonl`, `blackboard.json`, artifacts), tolerant
//! of partial and broken folders: what cannot be read is reported, never a panic.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use ufo_core::events::{End, Record, SessionStart, Step};

/// The records of one `events.jsonl`, with what was wrong while reading it.
#[derive(Debug, Default)]
pub struct Trajectory {
    /// The trajectory folder.
    pub dir: PathBuf,
    /// Every line that reads as a record, in file order.
    pub records: Vec<Record>,
    /// Problems met (a line that is not JSON, a missing `session_end`, ...).
    pub problems: Vec<String>,
}

/// Why a folder is not a trajectory at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No `events.jsonl` in the folder.
    #[error("no events.jsonl in {0}")]
    NoEvents(PathBuf),
    /// `events.jsonl` exists but cannot be read.
    #[error("cannot read {path}: {err}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        err: std::io::Error,
    },
}

impl Trajectory {
    /// Read `<dir>/events.jsonl`. Lines that are not JSON objects are skipped and reported in
    /// [`Trajectory::problems`]; a trailing partial line (a killed process) is reported too.
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        let path = dir.join("events.jsonl");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::NoEvents(dir.to_path_buf()))
            }
            Err(err) => return Err(LoadError::Unreadable { path, err }),
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut t = Trajectory {
            dir: dir.to_path_buf(),
            ..Trajectory::default()
        };
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(v) if v.is_object() => match serde_json::from_value::<Record>(v) {
                    Ok(r) => t.records.push(r),
                    Err(e) => t.problems.push(format!(
                        "events.jsonl line {} is not a valid record: {e}",
                        i + 1
                    )),
                },
                Ok(_) => t
                    .problems
                    .push(format!("events.jsonl line {} is not a JSON object", i + 1)),
                Err(e) => t
                    .problems
                    .push(format!("events.jsonl line {} is not JSON: {e}", i + 1)),
            }
        }
        if t.records.is_empty() {
            t.problems.push("events.jsonl has no records".into());
        } else {
            if t.first_start().is_none() {
                t.problems.push("no session_start record".into());
            }
            if t.final_end().is_none() {
                t.problems.push(
                    "no session_end record: the session was interrupted or is still running".into(),
                );
            }
        }
        Ok(t)
    }

    /// The first `session_start`.
    pub fn first_start(&self) -> Option<&SessionStart> {
        self.records.iter().find_map(|r| match r {
            Record::SessionStart(s) => Some(s),
            _ => None,
        })
    }

    /// The last `step`.
    pub fn last_step(&self) -> Option<&Step> {
        self.steps().last()
    }

    /// The `session_end` that closes the last session segment (a resumed session appends a
    /// new `session_start` ... `session_end` to the same file); `None` while it is running or
    /// after it was killed.
    pub fn final_end(&self) -> Option<&End> {
        let last_start = self
            .records
            .iter()
            .rposition(|r| matches!(r, Record::SessionStart(_)));
        self.records
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, r)| match r {
                Record::SessionEnd(e) if !matches!(last_start, Some(s) if i <= s) => Some(e),
                _ => None,
            })
    }

    /// How many times the session was resumed (`session_start` records after the first).
    pub fn resumes(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::SessionStart(_)))
            .count()
            .saturating_sub(1)
    }

    /// Model use summed over every step record: calls, prompt + completion tokens, cost.
    pub fn llm_totals(&self) -> (u64, u64, f64) {
        let mut t = (0, 0, 0.0);
        for s in self.steps() {
            t.0 += s.llm.calls;
            t.1 += s.llm.prompt_tokens + s.llm.completion_tokens;
            t.2 += s.llm.cost;
        }
        t
    }

    /// Every `step` record, in order.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.records.iter().filter_map(|r| match r {
            Record::Step(s) => Some(s.as_ref()),
            _ => None,
        })
    }

    /// The request of the session (`session_start.request`).
    pub fn request(&self) -> Option<&str> {
        self.first_start().map(|s| s.request.as_str())
    }

    /// `blackboard.json`, if present and valid JSON.
    pub fn blackboard(&self) -> Result<Option<Value>, String> {
        let path = self.dir.join("blackboard.json");
        match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("blackboard.json is not valid JSON: {e}")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read blackboard.json: {e}")),
        }
    }

    /// Read an artifact named in a step record, refusing paths that leave the folder.
    pub fn artifact(&self, rel: &str) -> Result<Vec<u8>, String> {
        let p = Path::new(rel);
        if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(format!(
                "artifact path {rel:?} leaves the trajectory folder"
            ));
        }
        std::fs::read(self.dir.join(p)).map_err(|e| format!("cannot read artifact {rel}: {e}"))
    }
}

/// A string field of a JSON object (an action, a blackboard entry), or `""`.
pub fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_lines_are_reported_not_fatal() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("events.jsonl"),
            "{\"type\":\"session_start\",\"request\":\"x\"}\nnot json\n[1]\n{\"type\":\"step\"",
        )
        .expect("write");
        let t = Trajectory::load(dir.path()).expect("loads");
        assert_eq!(t.records.len(), 1);
        assert_eq!(t.request(), Some("x"));
        let all = t.problems.join("\n");
        assert!(all.contains("line 2 is not JSON"), "{all}");
        assert!(all.contains("line 3 is not a JSON object"), "{all}");
        assert!(all.contains("line 4 is not JSON"), "{all}");
        assert!(all.contains("no session_end"), "{all}");
    }

    #[test]
    fn missing_folder_and_escaping_artifacts() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            Trajectory::load(&dir.path().join("nope")),
            Err(LoadError::NoEvents(_))
        ));
        std::fs::write(dir.path().join("events.jsonl"), "").expect("write");
        let t = Trajectory::load(dir.path()).expect("loads");
        assert!(t.artifact("../etc/passwd").is_err());
        assert!(t.artifact("/etc/passwd").is_err());
        assert!(t.artifact("missing.png").is_err());
    }
}
