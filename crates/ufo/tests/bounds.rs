//! Outside input is bounded (issue 21): a model answer whose keys expand into millions of
//! presses is a failed action, not an out-of-memory abort; the session goes on and ends with
//! its `session_end` record.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use ufo_desktop::testing::script::{app_line, host_assign, host_finish, line, write_script};

/// The peak resident memory of a running process in KiB (`VmHWM`), if it can be read.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Where a watched run is stopped: 1 GiB resident.
const LIMIT_KIB: u64 = 1024 * 1024;

/// Run `ufo run` with `args` in `dir` (output in `dir/out`), watching its peak memory.
/// Returns the exit code, stderr and the last peak seen (KiB). A run above [`LIMIT_KIB`]
/// or longer than 60 s is killed and fails the test.
fn run_watched(dir: &Path, args: &[String], request: &str) -> (Option<i32>, String, u64) {
    let stderr_path = dir.join("stderr.txt");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd
        .current_dir(dir)
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(dir.join("out"))
        .arg(request)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("ufo starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        // a runaway is stopped before it can strain the machine
        if peak > LIMIT_KIB || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "ufo did not end within 60 s below {} MiB (peak {} MiB)",
                LIMIT_KIB / 1024,
                peak / 1024
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    (status.code(), stderr, peak)
}

/// Issue 21, item 7: `{x 1000}` repeated 125,000 times (a 1 MB answer) expanded to 125 M key
/// presses and aborted ufo on a 4 GiB allocation, with no `session_end`. Now it is a failed
/// action the model is told about, and the session ends normally in little memory.
#[test]
fn a_type_keys_of_millions_of_presses_is_a_failed_action_and_the_session_ends() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let desktop = json!({"apps": [{
        "name": "Writer", "process": "writer", "title": "notes.odt - Writer", "running": true,
        "controls": [{"id": "body", "role": "edit", "name": "Body", "value": ""}]
    }]});
    std::fs::write(tmp.path().join("desktop.json"), desktop.to_string()).expect("desktop");
    let huge = "{x 1000}".repeat(125_000);
    let lines = [
        host_assign("Type the notes", "Writer"),
        app_line("Body", "", "type_keys", json!({ "keys": huge }), "CONTINUE"),
        // the model is told why the action failed
        line(
            "app",
            json!({"Observation": "Too many keys.", "Thought": "Give up.",
                   "Status": "FAIL", "Result": "the keys were refused"}),
            &["more than 100000 key presses"],
        ),
        host_finish(),
    ];
    let script = write_script(tmp.path(), &lines);
    let args = vec![
        "--desktop".to_string(),
        format!("sim:{}", tmp.path().join("desktop.json").display()),
        "--llm".to_string(),
        format!("script:{}", script.display()),
    ];
    let (code, stderr, peak_kib) = run_watched(tmp.path(), &args, "Type the notes");
    eprintln!("peak resident memory: {} MiB", peak_kib / 1024);
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl"))
        .unwrap_or_else(|e| panic!("no events.jsonl ({e}); exit {code:?}\n{stderr}"));
    let last: serde_json::Value = events
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    assert_eq!(last["type"], "session_end", "exit {code:?}\n{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    let final_desktop: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/desktop_final.json")).expect("final"),
    )
    .expect("json");
    let typed = &final_desktop["actions"][0];
    assert_eq!(typed["action"], "type_keys", "{final_desktop}");
    assert_eq!(typed["ok"], false, "{final_desktop}");
    assert_eq!(
        final_desktop["apps"][0]["controls"][0]["value"], "",
        "nothing was typed"
    );
    // Four 1 MB copies of the answer are expected; 125 M presses would be 4 GiB.
    assert!(
        peak_kib < 256 * 1024,
        "ufo peaked at {} MiB",
        peak_kib / 1024
    );
}
