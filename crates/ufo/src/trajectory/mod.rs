//! Reading a trajectory folder back (`events.jsonl`, `blackboard.json`, artifacts), tolerant
//! of partial and broken folders: what cannot be read is reported, never a panic.
//!
//! Everything is read through [`crate::folder`] (no link followed, regular files only) and
//! `events.jsonl` is read as a stream, line by line with a longest line: the summary (start,
//! end, totals) covers the whole file, while only a bounded first part of its records is kept
//! in memory ([`Keep`]), so a file of any size is read in bounded memory.

pub(crate) mod report;
pub(crate) mod runs;

use std::io::BufReader;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use ufo_core::events::{End, Record, SessionStart, Step};

use crate::folder;

/// The longest `events.jsonl` line read (bytes); a longer one is skipped with a note.
pub const MAX_LINE: usize = 16 << 20;

/// The largest `blackboard.json` read (bytes).
const MAX_BLACKBOARD: u64 = 16 << 20;

/// How much of a trajectory's records [`Trajectory::load`] keeps in memory: the records from
/// the start of the file while both limits hold; the rest is counted (and summed), not kept.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// Step records kept at most.
    pub steps: usize,
    /// Bytes of record lines kept at most.
    pub bytes: usize,
}

impl Keep {
    /// Nothing but the summary (`ufo runs`, the checks of `ufo resume`).
    pub const SUMMARY: Keep = Keep { steps: 0, bytes: 0 };
    /// What one report shows at most.
    pub const REPORT: Keep = Keep {
        steps: 2_000,
        bytes: 32 << 20,
    };
}

/// The records of one `events.jsonl`, with what was wrong while reading it.
#[derive(Debug, Default)]
pub struct Trajectory {
    /// The trajectory folder.
    pub dir: PathBuf,
    /// The records kept (see [`Keep`]), in file order: a first part of the file.
    pub records: Vec<Record>,
    /// Problems met (a line that is not JSON, a missing `session_end`, ...).
    pub problems: Vec<String>,
    /// Records read in all (kept or not).
    pub record_count: usize,
    /// Step records read but not kept.
    pub omitted_steps: usize,
    first_start: Option<SessionStart>,
    final_end: Option<End>,
    starts: usize,
    last_steps: Option<u32>,
    llm: (u64, u64, f64),
}

/// Why a folder is not a trajectory at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No `events.jsonl` in the folder.
    #[error("no events.jsonl in {0}")]
    NoEvents(PathBuf),
    /// `events.jsonl` exists but cannot be read (a link, a FIFO, no permission, ...).
    #[error("cannot read {path}: {err}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        err: std::io::Error,
    },
}

impl Trajectory {
    /// Read `<dir>/events.jsonl` as a stream, keeping what `keep` allows. Lines that are not
    /// JSON objects, or longer than [`MAX_LINE`], are skipped and reported in
    /// [`Trajectory::problems`]; a trailing partial line (a killed process) is reported too.
    pub fn load(dir: &Path, keep: Keep) -> Result<Self, LoadError> {
        let path = dir.join("events.jsonl");
        let file = match folder::open_read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::NoEvents(dir.to_path_buf()))
            }
            Err(err) => return Err(LoadError::Unreadable { path, err }),
        };
        let mut t = Trajectory {
            dir: dir.to_path_buf(),
            ..Trajectory::default()
        };
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let mut buf = Vec::new();
        let mut kept = Kept {
            bytes: 0,
            steps: 0,
            keeping: true,
        };
        for n in 1.. {
            let line = folder::read_line(&mut reader, &mut buf, MAX_LINE).map_err(|err| {
                LoadError::Unreadable {
                    path: path.clone(),
                    err,
                }
            })?;
            match line {
                folder::Line::Eof => break,
                folder::Line::TooLong(len) => {
                    t.problems.push(format!(
                        "events.jsonl line {n} is {len} bytes long, more than the {MAX_LINE} \
                         bytes read of a line: skipped"
                    ));
                    continue;
                }
                folder::Line::Text => {}
            }
            let text = String::from_utf8_lossy(&buf);
            if text.trim().is_empty() {
                continue;
            }
            match parse_record(&text) {
                Ok(record) => t.take(record, buf.len(), keep, &mut kept),
                Err(why) => t.problems.push(format!("events.jsonl line {n} {why}")),
            }
        }
        t.check_whole();
        Ok(t)
    }

    /// Sums one `record` (a line of `len` bytes) and keeps it while both limits of `keep`
    /// hold, counting the steps left out after that.
    fn take(&mut self, record: Record, len: usize, keep: Keep, kept: &mut Kept) {
        self.sum(&record);
        // Kept: the records from the start of the file while both limits hold.
        let is_step = matches!(record, Record::Step(_));
        kept.keeping =
            kept.keeping && kept.bytes + len <= keep.bytes && (!is_step || kept.steps < keep.steps);
        if kept.keeping {
            kept.bytes += len;
            kept.steps += usize::from(is_step);
            self.records.push(record);
        } else if is_step {
            self.omitted_steps += 1;
        }
    }

    /// Reports a file without records, or without its session's start or end.
    fn check_whole(&mut self) {
        if self.record_count == 0 {
            self.problems.push("events.jsonl has no records".into());
        } else {
            if self.first_start.is_none() {
                self.problems.push("no session_start record".into());
            }
            if self.final_end.is_none() {
                self.problems.push(
                    "no session_end record: the session was interrupted or is still running".into(),
                );
            }
        }
    }

    /// Add one record to the summary of the whole file.
    fn sum(&mut self, record: &Record) {
        self.record_count += 1;
        match record {
            Record::SessionStart(s) => {
                self.starts += 1;
                // a resumed session's part: its end is still to come
                self.final_end = None;
                if self.first_start.is_none() {
                    self.first_start = Some(s.clone());
                }
            }
            Record::SessionEnd(e) => self.final_end = Some(e.clone()),
            Record::Step(s) => {
                self.last_steps = Some(s.steps);
                self.add_llm(&s.llm);
            }
            // asked after the session's end, and paid for all the same
            Record::ExperienceSummary(e) => self.add_llm(&e.llm),
            // the knowledge reranker's calls are made within steps, recorded apart
            Record::KnowledgeRerank(k) => self.add_llm(&k.llm),
            Record::RoundEnd(_)
            | Record::Takeover(_)
            | Record::Handback(_)
            | Record::Ask(_)
            | Record::Answered(_)
            | Record::Other => {}
        }
    }

    fn add_llm(&mut self, llm: &ufo_core::events::LlmStats) {
        self.llm.0 += llm.calls;
        self.llm.1 += llm.prompt_tokens + llm.completion_tokens;
        self.llm.2 += llm.cost;
    }

    /// The first `session_start` of the file.
    pub fn first_start(&self) -> Option<&SessionStart> {
        self.first_start.as_ref()
    }

    /// The `steps` count of the last `step` record of the file.
    pub fn last_step_steps(&self) -> Option<u32> {
        self.last_steps
    }

    /// The `session_end` that closes the last session segment (a resumed session appends a
    /// new `session_start` ... `session_end` to the same file); `None` while it is running or
    /// after it was killed.
    pub fn final_end(&self) -> Option<&End> {
        self.final_end.as_ref()
    }

    /// How many times the session was resumed (`session_start` records after the first).
    pub fn resumes(&self) -> usize {
        self.starts.saturating_sub(1)
    }

    /// Model use summed over every step, experience-summary and knowledge-rerank record of
    /// the file: calls,
    /// prompt + completion tokens, cost.
    pub fn llm_totals(&self) -> (u64, u64, f64) {
        self.llm
    }

    /// The `step` records kept, in order.
    #[allow(dead_code)]
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
        match folder::read_capped(&path, MAX_BLACKBOARD) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("blackboard.json is not valid JSON: {e}")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read blackboard.json: {e}")),
        }
    }

    /// Read at most `max` bytes of an artifact named in a step record (and whether that is
    /// all of it), refusing paths that leave the folder, links and anything but a regular file.
    pub fn artifact(&self, rel: &str, max: u64) -> Result<(Vec<u8>, bool), String> {
        let p = Path::new(rel);
        if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(format!(
                "artifact path {rel:?} leaves the trajectory folder"
            ));
        }
        folder::read_prefix(&self.dir.join(p), max)
            .map_err(|e| format!("cannot read artifact {rel}: {e}"))
    }
}

/// How much [`Trajectory::load`] has kept so far, and whether it still keeps.
struct Kept {
    bytes: usize,
    steps: usize,
    keeping: bool,
}

/// One line of `events.jsonl` as a record, or what is wrong with it (said after "line N").
fn parse_record(text: &str) -> Result<Record, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => {
            serde_json::from_value::<Record>(v).map_err(|e| format!("is not a valid record: {e}"))
        }
        Ok(_) => Err("is not a JSON object".into()),
        Err(e) => Err(format!("is not JSON: {e}")),
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
        let t = Trajectory::load(dir.path(), Keep::REPORT).expect("loads");
        assert_eq!(t.records.len(), 1);
        assert_eq!(t.request(), Some("x"));
        let all = t.problems.join("\n");
        assert!(all.contains("line 2 is not JSON"), "{all}");
        assert!(all.contains("line 3 is not a JSON object"), "{all}");
        assert!(all.contains("line 4 is not JSON"), "{all}");
        assert!(all.contains("no session_end"), "{all}");
    }

    /// A summary model's calls come after `session_end`; `ufo runs` and the report count them.
    #[test]
    fn the_experience_summary_calls_count_in_the_totals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lines = [
            r#"{"type":"session_start","request":"x"}"#,
            r#"{"type":"step","llm":{"calls":2,"prompt_tokens":100,"completion_tokens":10,"cost":0.5}}"#,
            r#"{"type":"session_end","status":"FINISH"}"#,
            r#"{"type":"experience_summary","subtask":"s","model":"m","llm":{"calls":1,"prompt_tokens":40,"completion_tokens":5,"cost":0.25},"summary":"tip"}"#,
        ];
        std::fs::write(dir.path().join("events.jsonl"), lines.join("\n")).expect("write");
        let t = Trajectory::load(dir.path(), Keep::REPORT).expect("loads");
        assert_eq!(t.llm_totals(), (3, 155, 0.75));
        assert!(t.problems.is_empty(), "{:?}", t.problems);
    }

    /// The knowledge reranker's calls are records of their own, within the session.
    #[test]
    fn the_knowledge_rerank_calls_count_in_the_totals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lines = [
            r#"{"type":"session_start","request":"x"}"#,
            r#"{"type":"knowledge_rerank","seq":1,"query":"q","model":"m","llm":{"calls":1,"prompt_tokens":300,"completion_tokens":9,"cost":0.125},"offered":["docs:1","docs:2"],"order":["docs:2","docs:1"],"ms":800}"#,
            r#"{"type":"step","seq":1,"knowledge_reranked":true,"llm":{"calls":1,"prompt_tokens":100,"completion_tokens":10,"cost":0.5}}"#,
            r#"{"type":"session_end","status":"FINISH"}"#,
        ];
        std::fs::write(dir.path().join("events.jsonl"), lines.join("\n")).expect("write");
        let t = Trajectory::load(dir.path(), Keep::REPORT).expect("loads");
        assert_eq!(t.llm_totals(), (2, 419, 0.625));
        assert!(t.problems.is_empty(), "{:?}", t.problems);
        assert!(t.steps().all(|s| s.knowledge_reranked));
    }

    #[test]
    fn missing_folder_and_escaping_artifacts() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            Trajectory::load(&dir.path().join("nope"), Keep::REPORT),
            Err(LoadError::NoEvents(_))
        ));
        std::fs::write(dir.path().join("events.jsonl"), "").expect("write");
        let t = Trajectory::load(dir.path(), Keep::REPORT).expect("loads");
        assert!(t.artifact("../etc/passwd", 10).is_err());
        assert!(t.artifact("/etc/passwd", 10).is_err());
        assert!(t.artifact("missing.png", 10).is_err());
    }

    #[test]
    fn only_a_first_part_is_kept_and_the_summary_covers_the_whole_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut text = String::from("{\"type\":\"session_start\",\"request\":\"r\"}\n");
        for i in 0..10 {
            text.push_str(&format!(
                "{{\"type\":\"step\",\"steps\":{i},\"llm\":{{\"calls\":1,\"prompt_tokens\":1,\"completion_tokens\":1}}}}\n"
            ));
        }
        text.push_str(&format!(
            "{{\"type\":\"step\",\"thought\":\"{}\"}}\n",
            "x".repeat(MAX_LINE)
        ));
        text.push_str("{\"type\":\"session_end\",\"status\":\"FINISH\",\"steps\":9}\n");
        std::fs::write(dir.path().join("events.jsonl"), text).expect("write");
        let t = Trajectory::load(
            dir.path(),
            Keep {
                steps: 3,
                bytes: 1 << 20,
            },
        )
        .expect("loads");
        assert_eq!(t.steps().count(), 3);
        assert_eq!(t.omitted_steps, 7);
        assert_eq!(t.llm_totals().0, 10);
        assert_eq!(t.last_step_steps(), Some(9));
        assert_eq!(t.final_end().map(|e| e.status.as_str()), Some("FINISH"));
        assert_eq!(t.request(), Some("r"));
        let all = t.problems.join("\n");
        assert!(
            all.contains("line 12 is") && all.contains("skipped"),
            "{all}"
        );
        let s = Trajectory::load(dir.path(), Keep::SUMMARY).expect("loads");
        assert!(s.records.is_empty());
        assert_eq!(s.record_count, 12);
    }
}
