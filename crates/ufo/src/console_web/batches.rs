//! `GET /api/batches` and `/api/batches/{id}`: the progress of the batch folders under the
//! runs folder that the caller may follow (a batch is started in a terminal: only the tokens
//! its `--share` names see it), read as they fill: each finished task's
//! `tasks/<name>/result.json` (or the whole `results.jsonl` once the batch is done), with
//! `ufo_batch`'s types and summary table.

use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;
use ufo_batch::{TaskResult, TaskStatus};
use ufo_core::access::{self, Caller, Owner, SessionOp};

/// Most batch folders listed, and most task folders read per batch.
const MAX_BATCHES: usize = 100;
const MAX_TASKS: usize = 5000;
/// Largest result file read.
const MAX_RESULT: u64 = 4 << 20;

/// One batch's progress.
#[derive(Debug, Serialize)]
pub struct Progress {
    /// The folder name under the runs folder.
    pub id: String,
    /// Whether `results.jsonl` is written (the batch is over).
    pub finished: bool,
    /// Tasks known: task folders, or the results once finished.
    pub total: usize,
    /// Tasks with a result.
    pub done: usize,
    /// Of them: passed, failed, skipped, error.
    pub passed: usize,
    /// See `passed`.
    pub failed: usize,
    /// See `passed`.
    pub skipped: usize,
    /// See `passed`.
    pub error: usize,
    /// Finished tasks per minute since the first task folder appeared.
    pub per_minute: f64,
    /// The summary table so far (`ufo batch`'s), plain text.
    pub summary: String,
    /// The results so far (without their logs).
    pub results: Vec<TaskResult>,
}

/// Whether `dir` is a batch folder (it has a `tasks` folder).
fn is_batch(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("tasks")).is_ok_and(|m| m.is_dir())
}

/// Whether `caller` may follow the batch in `dir` (shared with it by `ufo batch --share`).
fn may_follow(dir: &Path, caller: &Caller) -> bool {
    let owner = Owner::Terminal {
        shared: crate::sharing::read(dir),
    };
    access::on_session(caller, &owner, SessionOp::Watch).allowed()
}

/// The batch folders under `runs` that `caller` may follow, newest first, with their
/// progress.
pub fn list(runs: &Path, caller: &Caller) -> Vec<Progress> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    let mut found: Vec<(SystemTime, String)> = entries
        .flatten()
        .take(10_000)
        .filter(|e| {
            e.file_type().is_ok_and(|t| t.is_dir())
                && is_batch(&e.path())
                && may_follow(&e.path(), caller)
        })
        .map(|e| {
            let t = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (t, e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found
        .into_iter()
        .take(MAX_BATCHES)
        .filter_map(|(_, id)| progress(runs, &id, caller))
        .map(|mut p| {
            p.results.clear();
            p
        })
        .collect()
}

/// The progress of batch `id` under `runs`, `None` when it is not a batch folder or not one
/// `caller` may follow.
pub fn progress(runs: &Path, id: &str, caller: &Caller) -> Option<Progress> {
    if !super::sessions::valid_id(id) {
        return None;
    }
    let dir = runs.join(id);
    if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
        || !is_batch(&dir)
        || !may_follow(&dir, caller)
    {
        return None;
    }
    let (finished, mut results) = read_final_results(&dir);
    let scan = scan_task_folders(&dir, finished, &mut results);
    for r in &mut results {
        r.log.clear();
    }
    let count = |s: TaskStatus| results.iter().filter(|r| r.status == s).count();
    let done = results.len();
    Some(Progress {
        id: id.to_string(),
        finished,
        total: scan.folders.max(done),
        done,
        passed: count(TaskStatus::Passed),
        failed: count(TaskStatus::Failed),
        skipped: count(TaskStatus::Skipped),
        error: count(TaskStatus::Error),
        per_minute: scan.per_minute(done),
        summary: ufo_batch::results::summary_table(&results),
        results,
    })
}

/// The batch's `results.jsonl` once it is finished: `(true, its results)`, or `(false, none)`
/// while it still runs (the file is written at the end).
fn read_final_results(dir: &Path) -> (bool, Vec<TaskResult>) {
    match crate::folder::read_capped(&dir.join("results.jsonl"), 64 << 20) {
        Ok(bytes) => (
            true,
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|l| serde_json::from_str::<TaskResult>(l).ok())
                .collect(),
        ),
        Err(_) => (false, Vec::new()),
    }
}

/// What the task folders of a batch tell: how many there are and when the first started and
/// the last result was written.
struct TaskScan {
    folders: usize,
    first: Option<SystemTime>,
    last: Option<SystemTime>,
}

impl TaskScan {
    /// Tasks done per minute between the first start and the last result (0 when unknown).
    fn per_minute(&self, done: usize) -> f64 {
        let minutes = match (self.first, self.last) {
            (Some(f), Some(l)) => l
                .duration_since(f)
                .map(|d| d.as_secs_f64() / 60.0)
                .unwrap_or(0.0),
            _ => 0.0,
        };
        if minutes > 0.0 {
            done as f64 / minutes
        } else {
            0.0
        }
    }
}

/// Counts the task folders of the batch in `dir`; while it runs (`finished` false), adds each
/// task's own result file to `results`.
fn scan_task_folders(dir: &Path, finished: bool, results: &mut Vec<TaskResult>) -> TaskScan {
    let mut scan = TaskScan {
        folders: 0,
        first: None,
        last: None,
    };
    let Ok(entries) = std::fs::read_dir(dir.join("tasks")) else {
        return scan;
    };
    for e in entries.flatten().take(MAX_TASKS) {
        // a task folder that is a link is not the batch's: never read through it (the
        // entry's own type, not what it points to; docs/security.md)
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        scan.folders += 1;
        if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
            scan.first = Some(scan.first.map_or(t, |f| f.min(t)));
        }
        if finished {
            continue;
        }
        let file = e.path().join(crate::batch::results::RESULT_FILE);
        if let Ok(bytes) = crate::folder::read_capped(&file, MAX_RESULT) {
            if let Ok(r) = serde_json::from_slice::<TaskResult>(&bytes) {
                if let Ok(t) = std::fs::metadata(&file).and_then(|m| m.modified()) {
                    scan.last = Some(scan.last.map_or(t, |l| l.max(t)));
                }
                results.push(r);
            }
        }
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filling_batch_counts_the_results_written_so_far() {
        let runs = tempfile::tempdir().expect("tempdir");
        let b = runs.path().join("batch-1");
        for (name, status) in [("a", Some("passed")), ("b", Some("failed")), ("c", None)] {
            let t = b.join("tasks").join(name);
            std::fs::create_dir_all(&t).expect("mkdir");
            if let Some(s) = status {
                let r = format!(r#"{{"id":"{name}","app":"calc","status":"{s}","log":["x"]}}"#);
                std::fs::write(t.join("result.json"), r).expect("write");
            }
        }
        std::fs::create_dir_all(runs.path().join("not-a-batch")).expect("mkdir");
        let guest = Caller::Token(ufo_core::access::Principal {
            name: "guest".into(),
            role: ufo_core::access::Role::Admin,
        });
        assert!(
            progress(runs.path(), "batch-1", &guest).is_none(),
            "not shared"
        );
        assert!(list(runs.path(), &guest).is_empty(), "not listed");
        crate::sharing::write(&b, &["guest".into()]).expect("share");
        let p = progress(runs.path(), "batch-1", &guest).expect("a batch");
        assert!(!p.finished);
        assert_eq!((p.total, p.done, p.passed, p.failed), (3, 2, 1, 1));
        assert!(p.summary.contains("TOTAL"), "{}", p.summary);
        assert!(p.results.iter().all(|r| r.log.is_empty()));
        assert!(progress(runs.path(), "not-a-batch", &Caller::Owner).is_none());
        assert!(progress(runs.path(), "../x", &Caller::Owner).is_none());
        let all = list(runs.path(), &guest);
        assert_eq!(all.len(), 1);
        assert!(all[0].results.is_empty(), "the list carries counts only");
    }

    #[test]
    fn a_task_folder_that_is_a_link_is_never_read_through() {
        let runs = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let b = runs.path().join("batch-1");
        std::fs::create_dir_all(b.join("tasks/a")).expect("mkdir");
        let r = r#"{"id":"a","app":"calc","status":"passed"}"#;
        std::fs::write(b.join("tasks/a/result.json"), r).expect("write");
        let planted = r#"{"id":"planted","app":"calc","status":"failed"}"#;
        std::fs::write(outside.path().join("result.json"), planted).expect("write");
        std::os::unix::fs::symlink(outside.path(), b.join("tasks/b")).expect("link");
        std::fs::write(b.join("tasks/c"), "not a folder").expect("write");
        let p = progress(runs.path(), "batch-1", &Caller::Owner).expect("a batch");
        assert_eq!((p.total, p.done, p.failed), (1, 1, 0));
        assert!(p.results.iter().all(|r| r.id == "a"), "{:?}", p.results);
    }
}
