//! `ufo runs`: the past sessions in a runs folder, newest first, one line each; a broken or
//! partial folder gets a line saying what is wrong with it.

use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};

use ufo_core::{inert, text::one_line};

use crate::trajectory::{Keep, LoadError, Trajectory};

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

/// Files one of which every trajectory folder holds (ufo writes `.lock` and `run.json` first).
const TRAJECTORY_FILES: &[&str] = &["events.jsonl", "run.json", "checkpoint.json", ".lock"];

/// Whether `path` looks like a trajectory folder (whole, partial or broken), not some
/// unrelated folder that happens to sit in the runs folder.
fn is_trajectory(path: &Path) -> bool {
    TRAJECTORY_FILES
        .iter()
        .any(|f| crate::folder::exists(&path.join(f)))
}

/// The listing of a runs folder.
#[derive(Debug, Default)]
pub struct Scan {
    /// One row per trajectory folder, newest first.
    pub rows: Vec<RunRow>,
    /// Sub-folders left out because they hold no trajectory at all.
    pub skipped: usize,
}

/// Read every sub-folder of `dir` that holds a trajectory; `dir` itself when it is one (the
/// `--out` folder of a run). Errors only when `dir` itself cannot be listed.
pub fn scan(dir: &Path) -> Result<Scan> {
    if crate::folder::exists(&dir.join("events.jsonl")) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let mtime = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        return Ok(Scan {
            rows: vec![row(dir, name, mtime)],
            skipped: 0,
        });
    }
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot list the runs folder {}; pass --dir with the folder your trajectories are in",
            dir.display()
        )
    })?;
    let mut rows = Vec::new();
    let mut skipped = 0;
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
        if !is_trajectory(&path) {
            skipped += 1;
            continue;
        }
        rows.push(row(&path, name, mtime));
    }
    rows.sort_by(|a, b| b.sort.cmp(&a.sort));
    Ok(Scan { rows, skipped })
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
    let t = match Trajectory::load(path, Keep::SUMMARY) {
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
    let start = t.first_start();
    let end = t.final_end();
    let ts = start.and_then(|s| s.ts.clone()).unwrap_or_default();
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
        Some(e) => e.status.clone(),
        None if t.record_count == 0 => "BROKEN".to_string(),
        None => "INCOMPLETE".to_string(),
    };
    // Steps counted so far: the session_end's count, else the last step record's.
    let steps = end
        .map(|e| u64::from(e.steps))
        .or_else(|| t.last_step_steps().map(u64::from))
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

/// Text from a trajectory for a column `width` characters wide: on one line, cut with "…" to
/// fit, and made inert (escape sequences in a request or a folder name are shown, not obeyed).
fn fit(s: &str, width: usize) -> String {
    let flat = one_line(s, usize::MAX);
    let cut = if flat.chars().count() <= width {
        flat
    } else {
        one_line(&flat, width.saturating_sub(1))
    };
    inert(&cut).into_owned()
}

/// Render the listing as text lines (a header, one line per run, problems indented below, and
/// how many folders without a trajectory were left out).
pub fn render(dir: &Path, scan: &Scan) -> String {
    let skipped = match scan.skipped {
        0 => String::new(),
        1 => "(1 folder without a trajectory left out)\n".to_string(),
        n => format!("({n} folders without a trajectory left out)\n"),
    };
    let rows = &scan.rows;
    if rows.is_empty() {
        return format!("no sessions in {}\n{skipped}", dir.display());
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
            fit(&r.name, name_w),
            r.status,
            r.steps,
            r.calls,
            r.tokens,
            r.cost,
            fit(&r.request, 60)
        ));
        if r.resumes > 0 {
            out.push_str(&format!("    resumed {} time(s)\n", r.resumes));
        }
        for p in &r.problems {
            out.push_str(&format!("    ! {}\n", fit(p, 200)));
        }
    }
    out.push_str(&skipped);
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
        // a run that died before its first event: listed as broken
        mk("empty", None);
        std::fs::write(root.path().join("empty").join("run.json"), "{}").expect("write");
        // an unrelated folder: left out, and counted
        mk("photos", None);
        std::fs::write(root.path().join("stray.txt"), "x").expect("write");
        let listing = scan(root.path()).expect("scan");
        let rows = &listing.rows;
        assert_eq!(rows.len(), 3);
        assert_eq!(listing.skipped, 1);
        let text = render(root.path(), &listing);
        assert!(!text.contains("photos"), "{text}");
        assert!(
            text.contains("1 folder without a trajectory left out"),
            "{text}"
        );
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
        // the --out folder of a run, given itself: that one session
        let one = scan(&root.path().join("old")).expect("scan");
        assert_eq!(one.rows.len(), 1);
        assert_eq!(one.rows[0].name, "old");
        assert_eq!(one.rows[0].status, "FINISH");
    }
}
