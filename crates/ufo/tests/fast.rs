//! Fast live steps (issue 13) through the real binary: with `multi_action` on, gnome-calculator
//! computes 12 × 7 with one AppAgent model call for the five clicks, each action checked on
//! the screen before the next. The result is read by a fresh `ufo inspect` process.
//!
//! Run when `UFO_LIVE_TESTS=1` or when a `DISPLAY` is set; skipped with a message otherwise.

mod common;

use serde_json::{json, Value};
use ufo_desktop::testing::require_live;

use common::procs;
use common::{live_run_args, ufo_live};
use nix::sys::signal::Signal;

#[test]
fn multi_action_computes_12_times_7_in_one_model_call() {
    if !require_live("multi_action_computes_12_times_7_in_one_model_call") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let out = tmp.path().join("out");
    let script = tmp.path().join("script.jsonl");
    let config = tmp.path().join("ufo.toml");
    std::fs::write(&config, "multi_action = true\n").expect("config");
    let a = |t: &str| json!({"ControlText": t, "Function": "click", "Args": {}});
    let lines = [
        json!({"agent": "host", "response": {"Observation": "No calculator.", "Thought": "Launch it.",
               "Current Sub-Task": "Compute 12 x 7", "ControlText": "calculator", "Status": "ASSIGN"}}),
        json!({"agent": "app", "response": {"Observation": "The calculator.", "Thought": "All five at once.",
               "Actions": [a("1"), a("2"), a("×"), a("7"), a("=")], "Status": "FINISH"}}),
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&script, text.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(
            &script,
            &out,
            &["--config", &config.display().to_string(), "Compute 12 x 7"],
        ),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let shown = ufo_live(&home, &["inspect".into(), "Calculator".into()], &[]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    let pid: Option<u32> = shown
        .lines()
        .next()
        .and_then(|l| l.split(" pid ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok());
    if let Some(pid) = pid {
        procs::signal(pid, Signal::SIGTERM);
    }
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    let steps: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .collect();
    let calls: u64 = steps
        .iter()
        .filter_map(|e| e["llm"]["calls"].as_u64())
        .sum();
    assert_eq!(calls, 1, "one AppAgent model call: {steps:?}");
    let batch = steps
        .iter()
        .find(|e| e["action"]["function"] == "batch")
        .expect("a batch step");
    assert_eq!(batch["action"]["completed"], 5, "{batch}");
    assert!(
        shown
            .lines()
            .any(|l| l.contains("text") && l.contains("value=\"84\"")),
        "the display does not show 84:\n{shown}"
    );
}
