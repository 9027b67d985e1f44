//! `ufo run --desktop live` on real applications under the headless desktop session
//! (scripts/desktop-session.sh), with scripted models. Each result is checked afterwards
//! through a path that is not the agent's own: a fresh `ufo inspect` of the window, or the
//! file on disk.
//!
//! Run when `UFO_LIVE_TESTS=1` (scripts/test.sh sets it after starting the session) or when a
//! `DISPLAY` is set; skipped with a message otherwise.

mod common;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ufo_desktop::testing::require_live;
use ufo_desktop::testing::script::{app, app_line, line};

use common::procs;
use common::*;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// `ufo inspect WINDOW`: (stdout, pid of the window's process).
fn inspect(home: &Path, window: &str, png: &Path) -> (String, Option<u32>) {
    let text = inspect_window(home, window, png);
    let pid = text
        .lines()
        .next()
        .and_then(|l| l.split(" pid ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok());
    (text, pid)
}

fn kill(pid: Option<u32>) {
    if let Some(pid) = pid {
        procs::signal(pid, Signal::SIGTERM);
    }
}

fn sequence(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step")
        .map(|e| format!("{} {}", s(&e["role"]), s(&e["state"])))
        .collect()
}

#[test]
fn ufo_computes_a_sum_on_the_calculator() {
    if !require_live("ufo_computes_a_sum_on_the_calculator") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let out = tmp.path().join("out");
    let script = tmp.path().join("script.jsonl");
    let click = |name: &str, status: &str| app_line(name, "", "click", json!({}), status);
    let lines = [
        line(
            "host",
            json!({"Observation": "No calculator is open.", "Thought": "Launch it and assign.",
                   "Current Sub-Task": "Compute 12+30", "ControlText": "calculator",
                   "Status": "ASSIGN"}),
            &["Compute 12 + 30", "gnome-calculator"],
        ),
        line(
            "app",
            app("1", "", "click", json!({}), "CONTINUE"),
            &["button \"1\"", "button \"+\""],
        ),
        click("2", "CONTINUE"),
        click("+", "CONTINUE"),
        click("3", "CONTINUE"),
        click("0", "CONTINUE"),
        click("=", "FINISH"),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(&script, &out, &["Compute 12 + 30"]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let (shown, pid) = inspect(&home, "Calculator", &tmp.path().join("calc.png"));
    kill(pid);
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        sequence(&out),
        [
            "host CONTINUE",
            "host ASSIGN",
            "app CONTINUE",
            "app CONTINUE",
            "app CONTINUE",
            "app CONTINUE",
            "app CONTINUE",
            "app CONTINUE",
            "app FINISH",
            "host CONTINUE",
            "host FINISH"
        ]
    );
    // A fresh observation by another process shows the result on the display.
    assert!(
        shown
            .lines()
            .any(|l| l.contains("text") && l.contains("value=\"42\"")),
        "the display does not show 42:\n{shown}"
    );
    // Issue 14: the live desktop logs its observations and actions (with timings) to ufo.log
    let log = std::fs::read_to_string(out.join("ufo.log")).expect("ufo.log");
    assert!(log.contains("observed") && log.contains("acted"), "{log}");
    // Issue 14: live screenshots are drawn by the shared annotator, so the report highlights
    // the button each of the six app steps clicked.
    let report = ufo_live(&home, &["report".into(), out.display().to_string()], &[]);
    assert_eq!(
        report.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert_eq!(
        html.matches("class=\"hl\" data-highlight=").count(),
        6,
        "every clicked button is highlighted on the live screenshots"
    );
}

#[test]
fn ufo_types_and_saves_a_file_in_mousepad() {
    if !require_live("ufo_types_and_saves_a_file_in_mousepad") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let out = tmp.path().join("out");
    let file = tmp.path().join("note.txt");
    let script = tmp.path().join("script.jsonl");
    let lines = [
        line(
            "host",
            json!({"Observation": "No editor is open.", "Thought": "Launch it and assign.",
                   "Current Sub-Task": "Write the note and save it", "ControlText": "text editor",
                   "Status": "ASSIGN"}),
            &[],
        ),
        // Mousepad's menus come first, then its text area: label 7.
        line(
            "app",
            app(
                "",
                "7",
                "type_keys",
                json!({"keys": "Hello from ufo-rs{ENTER}bye"}),
                "CONTINUE",
            ),
            &["[7] text"],
        ),
        // Ctrl+S opens the Save As dialog: re-annotate.
        app_line(
            "",
            "7",
            "type_keys",
            json!({"keys": "{ctrl+s}"}),
            "SCREENSHOT",
        ),
        line(
            "app",
            app(
                "Name",
                "",
                "set_text",
                json!({"text": file.display().to_string()}),
                "CONTINUE",
            ),
            &["fresh capture", "text \"Name\""],
        ),
        line(
            "app",
            app("Save", "", "click", json!({}), "FINISH"),
            &["button \"Save\""],
        ),
        line(
            "host",
            json!({"Observation": "Saved.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(&script, &out, &["Write a note and save it"]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    // Checked on disk, not through the agent.
    let deadline = Instant::now() + Duration::from_secs(10);
    let content = loop {
        match std::fs::read_to_string(&file) {
            Ok(s) if !s.is_empty() => break s,
            _ if Instant::now() > deadline => break String::new(),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let (_, pid) = inspect(&home, "Mousepad", &tmp.path().join("m.png"));
    kill(pid);
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        sequence(&out),
        [
            "host CONTINUE",
            "host ASSIGN",
            "app CONTINUE",
            "app CONTINUE",
            "app SCREENSHOT",
            "app CONTINUE",
            "app FINISH",
            "host CONTINUE",
            "host FINISH"
        ]
    );
    assert_eq!(
        content.trim_end(),
        "Hello from ufo-rs\nbye",
        "{}",
        file.display()
    );
}
