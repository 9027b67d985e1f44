//! Scripted sessions for tests and benchmarks: the lines of a scripted model
//! (`--llm script:FILE`, one JSON object a line, docs/formats.md) and the `ufo` binary that
//! runs them. One copy for every test crate, instead of a `line`/`app`/`host_finish` in each
//! test file.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One script line: `agent` (`host`, `app`, ...) answers `response`; every text in `expect`
/// must be in the prompt the line answers (empty: no check).
pub fn line(agent: &str, response: Value, expect: &[&str]) -> String {
    json!({"agent": agent, "response": response, "expect": expect}).to_string()
}

/// An AppAgent answer: `function` with `args` on the control labelled `label` (may be empty)
/// and named `text`, then `status`.
pub fn app(text: &str, label: &str, function: &str, args: Value, status: &str) -> Value {
    json!({"Observation": "the window", "Thought": "next action", "ControlLabel": label,
           "ControlText": text, "Function": function, "Args": args, "Status": status})
}

/// [`app`] as an `app` script line with no prompt check.
pub fn app_line(text: &str, label: &str, function: &str, args: Value, status: &str) -> String {
    line("app", app(text, label, function, args, status), &[])
}

/// A host line that assigns `task` to the window or application named `target` (the
/// application is launched when no window matches).
pub fn host_assign(task: &str, target: &str) -> String {
    line(
        "host",
        json!({"Observation": "It is not open.", "Thought": "Launch it and assign.",
               "Current Sub-Task": task, "ControlText": target, "Status": "ASSIGN"}),
        &[],
    )
}

/// A host line that ends the session with FINISH.
pub fn host_finish() -> String {
    line(
        "host",
        json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
        &[],
    )
}

/// Write `lines` as `dir/script.jsonl` and return its path.
///
/// # Panics
/// When the file cannot be written (a test's temporary folder).
pub fn write_script(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("script.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// The `ufo` binary of this build, next to the test or benchmark executable
/// (`target/<profile>/ufo`), for test crates that cannot ask Cargo for it.
///
/// # Panics
/// When it is not built yet: the message says to run `cargo build -p ufo`.
pub fn ufo_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("ufo"))
        .expect("the target folder");
    assert!(
        bin.exists(),
        "{} is missing: build it first with cargo build -p ufo",
        bin.display()
    );
    bin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_script_entries() {
        let l: Value = serde_json::from_str(&app_line("Save", "3", "click", json!({}), "FINISH"))
            .expect("json");
        assert_eq!(l["agent"], "app");
        assert_eq!(l["response"]["ControlText"], "Save");
        assert_eq!(l["response"]["ControlLabel"], "3");
        assert_eq!(l["expect"], json!([]));
        let h: Value = serde_json::from_str(&host_assign("type", "editor")).expect("json");
        assert_eq!(h["response"]["Status"], "ASSIGN");
        assert_eq!(h["response"]["ControlText"], "editor");
    }
}
