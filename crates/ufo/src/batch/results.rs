//! A batch's folder: each task's folder and result file, and the results and summary table
//! the coordinator and `ufo batch merge` write.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use ufo_batch::{Task, TaskResult, TaskStatus};

/// Name of a worker's result file in its task folder.
pub(crate) const RESULT_FILE: &str = "result.json";

/// A task's folder, `<out>/tasks/<name>`: always a folder of its own inside `tasks` (see
/// [`ufo_batch::folder_name`]), whatever the id (`..`, `.`, `a/b`, controls).
pub(crate) fn task_dir(out: &Path, id: &str) -> PathBuf {
    out.join("tasks").join(ufo_batch::folder_name(id))
}

/// Tasks waiting for a job: each with its slot in the results and its file.
pub(crate) type Queue = VecDeque<(usize, PathBuf, Task)>;

/// Write `results.jsonl` and `summary.txt` (with `notes` after the table, e.g. a merge's
/// duplicates), print the table; exit 1 when a task failed or ended in error.
pub(crate) fn write_results(
    quiet: bool,
    out: &Path,
    results: &[TaskResult],
    notes: &str,
) -> Result<ExitCode> {
    let mut jsonl = String::new();
    for r in results {
        jsonl.push_str(&serde_json::to_string(r)?);
        jsonl.push('\n');
    }
    crate::folder::write_bytes(&out.join("results.jsonl"), jsonl.as_bytes())
        .with_context(|| format!("cannot write {}/results.jsonl", out.display()))?;
    let table = ufo_batch::summary_table(results);
    let lines = ufo_batch::task_lines(results);
    crate::folder::write_bytes(
        &out.join("summary.txt"),
        format!("{table}\n{notes}{lines}").as_bytes(),
    )
    .with_context(|| format!("cannot write {}/summary.txt", out.display()))?;
    crate::output::outln!("{table}");
    if let Some(line) = ufo_batch::llm_eval_line(results) {
        crate::output::outln!("{line}\n");
    }
    if !quiet {
        crate::output::outln!("{lines}");
    }
    eprintln!("results: {}", out.join("results.jsonl").display());
    let bad = results
        .iter()
        .any(|r| matches!(r.status, TaskStatus::Failed | TaskStatus::Error));
    Ok(ExitCode::from(u8::from(bad)))
}
