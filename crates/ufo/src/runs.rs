//! `ufo runs`: the past sessions in a runs folder, newest first, one line each; a broken or
//! partial folder gets a line saying what is wrong with it.

use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};

use crate::trajectory::{num, text, LoadError, Trajectory};

/// One row of the listing.
#[derive(Debug)]
pub struct RunRow {
    /// Folder name.
    pub name: String,
    /// When it started (`session_start.ts`), else the folder's modification time.
    pub when: String,
    /// Sort key (newest first).
    sort: (String, Option<SystemTime>),
    /// The request.
    pub request: String,
    /// FINISH / FAIL / ERROR, `INCOMPLETE` without a session_end, `BROKEN` when unreadable.
    pub status: String,
    /// Steps counted (session_end, else the last step record's `steps`).
    pub steps: u64,
    /// Model calls and tokens (prompt + completion).
    pub calls: u64,
    /// Tokens, prompt + completion.
    pub tokens: u64,
    /// What the model calls cost (price table currency; 0 when unpriced).
    pub cost: f64,
    /// How many times the session was resumed.
    pub resumes: usize,
    /// What is wrong with the folder, if anything.
    pub problems: Vec<String>,
}

/// Read every sub-folder of `dir`. Errors only when `dir` itself cannot be listed.
pub fn scan(dir: &Path) -> Result<Vec<RunRow>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot list the runs folder {}; pass --dir with the folder your trajectories are in",
            dir.display()
        )
    })?;
    let mut rows = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                rows.push(broken(
                    String::from("?"),
                    None,
                    format!("cannot read entry: {e}"),
                ));
                continue;
            }
        };
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata().ok();
        let mtime = meta.as_ref().and_then(|m| m.modified().ok());
        if !meta.as_ref().is_some_and(|m| m.is_dir()) {
            continue;
        }
        rows.push(row(&path, name, mtime));
    }
    rows.sort_by(|a, b| b.sort.cmp(&a.sort));
    Ok(rows)
}

fn fmt_time(t: Option<SystemTime>) -> String {
    t.map(|t| {
        chrono::DateTime::<chrono::Local>::from(t)
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    })
    .unwrap_or_else(|| "?".into())
}

fn broken(name: String, mtime: Option<SystemTime>, why: String) -> RunRow {
    RunRow {
        when: fmt_time(mtime),
        sort: (
            mtime
                .map(|m| chrono::DateTime::<chrono::Utc>::from(m).to_rfc3339())
                .unwrap_or_default(),
            mtime,
        ),
        name,
        request: String::new(),
        status: "BROKEN".into(),
        steps: 0,
        calls: 0,
        tokens: 0,
        cost: 0.0,
        resumes: 0,
        problems: vec![why],
    }
}

fn row(path: &Path, name: String, mtime: Option<SystemTime>) -> RunRow {
    let t = match Trajectory::load(path) {
        Ok(t) => t,
        Err(LoadError::NoEvents(_)) => {
            return broken(
                name,
                mtime,
                "no events.jsonl: not a trajectory folder".into(),
            )
        }
        Err(e) => return broken(name, mtime, e.to_string()),
    };
    let start = t.first("session_start");
    let end = t.final_end();
    let ts = start.map(|s| text(s, "ts").to_string()).unwrap_or_default();
    let when = chrono::DateTime::parse_from_rfc3339(&ts)
        .map(|d| {
            d.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| fmt_time(mtime));
    // Sort by the start time when known (RFC 3339 in UTC sorts as text), else by mtime.
    let sort_ts = chrono::DateTime::parse_from_rfc3339(&ts)
        .map(|d| d.with_timezone(&chrono::Utc).to_rfc3339())
        .unwrap_or_else(|_| {
            mtime
                .map(|m| chrono::DateTime::<chrono::Utc>::from(m).to_rfc3339())
                .unwrap_or_default()
        });
    let (calls, tokens, cost) = t.llm_totals();
    let status = match end {
        Some(e) => text(e, "status").to_string(),
        None if t.records.is_empty() => "BROKEN".to_string(),
        None => "INCOMPLETE".to_string(),
    };
    // Steps counted so far: the session_end's count, else the last step record's.
    let steps = end
        .map(|e| num(e, "steps"))
        .or_else(|| t.last("step").map(|s| num(s, "steps")))
        .unwrap_or(0);
    RunRow {
        name,
        when,
        sort: (sort_ts, mtime),
        request: t.request().unwrap_or("").to_string(),
        status,
        steps,
        calls,
        tokens,
        cost,
        resumes: t.resumes(),
        problems: t.problems,
    }
}

fn clip(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        format!(
            "{}…",
            flat.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// Render the listing as text lines (a header, one line per run, problems indented below).
pub fn render(dir: &Path, rows: &[RunRow]) -> String {
    if rows.is_empty() {
        return format!("no sessions in {}\n", dir.display());
    }
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(6, 40);
    let mut out = format!(
        "{:<19}  {:<name_w$}  {:<10}  {:>5}  {:>5}  {:>8}  {:>8}  REQUEST\n",
        "DATE", "FOLDER", "STATUS", "STEPS", "CALLS", "TOKENS", "COST"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<19}  {:<name_w$}  {:<10}  {:>5}  {:>5}  {:>8}  {:>8.4}  {}\n",
            r.when,
            clip(&r.name, name_w),
            r.status,
            r.steps,
            r.calls,
            r.tokens,
            r.cost,
            clip(&r.request, 60)
        ));
        if r.resumes > 0 {
            out.push_str(&format!("    resumed {} time(s)\n", r.resumes));
        }
        for p in &r.problems {
            out.push_str(&format!("    ! {}\n", clip(p, 200)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_good_partial_and_broken_folders_newest_first() {
        let root = tempfile::tempdir().expect("tempdir");
        let mk = |name: &str, body: Option<&str>| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            if let Some(b) = body {
                std::fs::write(d.join("events.jsonl"), b).expect("write");
            }
        };
        mk(
            "old",
            Some(concat!(
                "{\"type\":\"session_start\",\"request\":\"first\",\"ts\":\"2026-01-01T10:00:00+00:00\"}\n",
                "{\"type\":\"step\",\"steps\":4,\"llm\":{\"calls\":3,\"prompt_tokens\":10,\"completion_tokens\":5,\"cost\":0.25}}\n",
                "{\"type\":\"session_end\",\"status\":\"FINISH\",\"steps\":4,\"llm\":{\"calls\":3,\"prompt_tokens\":10,\"completion_tokens\":5}}\n"
            )),
        );
        mk(
            "new",
            Some(concat!(
                "{\"type\":\"session_start\",\"request\":\"second\",\"ts\":\"2026-02-01T10:00:00+00:00\"}\n",
                "{\"type\":\"step\",\"steps\":2,\"llm\":{\"calls\":1,\"prompt_tokens\":7,\"completion_tokens\":1}}\n",
                "{\"type\":\"st"
            )),
        );
        mk("empty", None);
        std::fs::write(root.path().join("stray.txt"), "x").expect("write");
        let rows = scan(root.path()).expect("scan");
        assert_eq!(rows.len(), 3);
        let text = render(root.path(), &rows);
        let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in\n{text}"));
        assert!(pos("second") < pos("first"), "{text}");
        assert!(text.contains("INCOMPLETE"), "{text}");
        assert!(text.contains("line 3 is not JSON"), "{text}");
        assert!(text.contains("BROKEN"), "{text}");
        assert!(text.contains("no events.jsonl"), "{text}");
        let old = rows.iter().find(|r| r.name == "old").expect("old");
        assert_eq!(
            (old.status.as_str(), old.steps, old.calls, old.tokens),
            ("FINISH", 4, 3, 15)
        );
        assert!((old.cost - 0.25).abs() < 1e-9, "{}", old.cost);
        assert!(scan(&root.path().join("missing")).is_err());
    }
}
