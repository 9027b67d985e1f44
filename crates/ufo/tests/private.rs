//! `--desktop private` (issue 15): the agent works on a desktop of its own. The session's own
//! display stands for the person's desktop: its windows and pointer are recorded before and
//! must be the same after; no process of the private desktop may remain, also after
//! `kill -9` of ufo in the middle of a session.
//!
//! Live tests: they need the programs of a desktop session (Xvfb, dbus, at-spi2-core, openbox,
//! gnome-calculator) and run when `DISPLAY` is set or `UFO_LIVE_TESTS=1`.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{repo_root, ufo};
use serde_json::{json, Value};
use ufo_desktop::testing::require_live;

/// The tests take turns: each checks that no private desktop is left, which another test's
/// running desktop would spoil.
static SERIAL: Mutex<()> = Mutex::new(());

/// Processes that carry a private desktop's mark.
fn marked() -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(b"UFO_SESSION_MARK=ufo-private-"))
        {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!("{name} {}", comm.trim()));
        }
    }
    out
}

/// Wait (up to `within`) until no private desktop process is left; the ones left otherwise.
fn none_left(within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = marked();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The person's desktop as seen from outside: its client windows and the pointer.
fn outer_state() -> (String, String) {
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    (
        run(&["xprop", "-root", "_NET_CLIENT_LIST"]),
        run(&["xdotool", "getmouselocation"]),
    )
}

fn calculator_script(dir: &Path, then_wait: bool) -> std::path::PathBuf {
    let app = |name: &str, status: &str| {
        json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
               "ControlText": name, "Function": "click", "Args": {}, "Status": status}})
        .to_string()
    };
    let mut lines = vec![json!({"agent": "host",
        "response": {"Observation": "No calculator is open.", "Thought": "Launch it.",
                     "Current Sub-Task": "Compute 12+30", "ControlText": "calculator",
                     "Status": "ASSIGN"}})
    .to_string()];
    for b in ["1", "2", "+", "3", "0", "="] {
        lines.push(app(b, "CONTINUE"));
    }
    if then_wait {
        // many more steps: the test kills ufo during them
        for _ in 0..40 {
            lines.push(app("0", "CONTINUE"));
        }
    }
    // the display of the private desktop's calculator shows the sum
    lines.push(
        json!({"agent": "app", "response": {"Observation": "42", "Thought": "done",
               "Status": "FINISH"}, "expect": ["\"42\""]})
        .to_string(),
    );
    lines.push(
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.",
               "Status": "FINISH"}})
        .to_string(),
    );
    let path = dir.join("script.jsonl");
    std::fs::write(&path, lines.join("\n")).expect("script");
    path
}

#[test]
fn a_private_desktop_computes_and_leaves_the_persons_desktop_alone() {
    if !require_live("a_private_desktop_computes_and_leaves_the_persons_desktop_alone") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        none_left(Duration::from_secs(5)).is_empty(),
        "{:?}",
        marked()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), false);
    let out = tmp.path().join("out");
    let before = outer_state();
    let started = Instant::now();
    let run = ufo()
        .args(["run", "--desktop", "private", "--scratch-home", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 + 30")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // the private desktop's daemons log to its folder, not to the person's terminal
    assert!(!stderr.contains("dbus-daemon"), "{stderr}");
    println!(
        "whole private session: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // the person's windows and pointer did not change
    assert_eq!(outer_state(), before);
    // nothing of the private desktop remains
    let left = none_left(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    // a resume of it would start a private desktop again
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json"))
            .expect("json");
    assert_eq!(record["desktop"], "private");
}

#[test]
fn nothing_of_a_private_desktop_survives_a_killed_ufo() {
    if !require_live("nothing_of_a_private_desktop_survives_a_killed_ufo") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        none_left(Duration::from_secs(5)).is_empty(),
        "{:?}",
        marked()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), true);
    let out = tmp.path().join("out");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", "private", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 + 30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ufo starts");
    // wait until the AppAgent works in the private desktop's calculator
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
        if events.matches("\"role\":\"app\"").count() >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session did not get going:\n{events}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!marked().is_empty(), "the private desktop runs");
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let left = none_left(Duration::from_secs(10));
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
}

#[test]
fn a_batch_runs_its_jobs_on_private_desktops() {
    if !require_live("a_batch_runs_its_jobs_on_private_desktops") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let started = Instant::now();
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(repo_root().join("tests").join("batch"))
        .args(["--confirm", "yes", "--task-timeout", "120"])
        .args(["--jobs", "2", "--desktop", "private", "--out"])
        .arg(&out)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // calc_wrong fails by design: exit 1
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let status = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    for (id, want) in [
        ("calc_sum", "passed"),
        ("calc_wrong", "failed"),
        ("infeasible_fax", "passed"),
        ("mousepad_append", "passed"),
        ("shell_delete", "passed"),
        ("shell_list", "passed"),
        ("shell_write", "passed"),
        ("skip_download", "skipped"),
    ] {
        assert_eq!(status(id), want, "{id}\n{stdout}\n{stderr}");
    }
    println!(
        "batch --jobs 2 --desktop private: {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    let left = none_left(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn watch_without_a_private_desktop_is_a_usage_error() {
    let output = ufo()
        .args(["run", "--watch", "--desktop", "sim:x.json", "a request"])
        .output()
        .expect("ufo runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--desktop private"));
}

/// Issue 15: a private desktop that cannot start (its programs missing) stops ufo before
/// anything runs, with exit 2 and the packages to install.
#[test]
fn missing_programs_are_named_with_their_packages() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = ufo()
        .env("PATH", tmp.path())
        .args(["run", "--desktop", "private", "--llm", "script:none.jsonl"])
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("a request")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("apt-get install") && stderr.contains("xvfb"),
        "{stderr}"
    );
    assert!(!tmp.path().join("out").join("events.jsonl").exists());
}
