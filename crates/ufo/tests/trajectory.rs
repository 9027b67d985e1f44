//! Trajectories are never lost, through the real binary: `--out` refuses a folder that holds
//! a trajectory (exit 2, or `--force` replaces it), a lock keeps a second run out of a folder
//! in use, and a write failure (a file-size limit standing in for a full disk) ends the
//! session ERROR, reason `io`, exit 3, with whole lines only and no temporary files.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn events(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "events.jsonl ends in a partial line"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid line {l:?}: {e}")))
        .collect()
}

/// `ufo run` arguments for a scenario, `--out` last but one and the request last.
fn scenario_args(name: &str, out: &Path) -> Vec<String> {
    let dir = scenario_dir(name);
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request.txt");
    let mut args = vec![
        "run".to_string(),
        "--desktop".into(),
        format!("sim:{}", dir.join("desktop.json").display()),
        "--llm".into(),
        format!("script:{}", dir.join("script.jsonl").display()),
    ];
    if dir.join("ufo.toml").exists() {
        args.push("--config".into());
        args.push(dir.join("ufo.toml").display().to_string());
    }
    args.push("--out".into());
    args.push(out.display().to_string());
    args.push(request.trim().to_string());
    args
}

fn run(args: &[String], extra: &[&str]) -> std::process::Output {
    let tmp = tempfile::tempdir().expect("tempdir");
    ufo()
        .current_dir(tmp.path())
        .args(args)
        .args(extra)
        .output()
        .expect("ufo runs")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn reusing_out_is_refused_and_the_first_trajectory_is_kept() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let first = run(&scenario_args("app_fail_replan", &out), &[]);
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let before = std::fs::read(out.join("events.jsonl")).expect("events");
    let files_before = names(&out);

    let second = run(&scenario_args("host_fail", &out), &[]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("already holds a trajectory")
            && stderr.contains("another folder")
            && stderr.contains("--force"),
        "{stderr}"
    );
    // Nothing ran: the first trajectory is as it was.
    assert_eq!(
        std::fs::read(out.join("events.jsonl")).expect("events"),
        before
    );
    assert_eq!(names(&out), files_before);
}

#[test]
fn force_replaces_the_old_trajectory_and_keeps_other_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    // The first run has more steps than the second: its later step files must not survive.
    let first = run(&scenario_args("app_fail_replan", &out), &[]);
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let first_steps = events(&out).iter().filter(|e| e["type"] == "step").count();
    std::fs::write(out.join("notes.txt"), "mine").expect("write");

    let second = run(&scenario_args("host_fail", &out), &["--force"]);
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    let ev = events(&out);
    let starts = ev.iter().filter(|e| e["type"] == "session_start").count();
    assert_eq!(starts, 1, "one session in the folder: {ev:?}");
    let steps = ev.iter().filter(|e| e["type"] == "step").count();
    assert!(steps < first_steps, "{steps} vs {first_steps}");
    // Every step file belongs to the second run.
    for name in names(&out) {
        if let Some(rest) = name.strip_prefix("step_") {
            let seq: usize = rest[..4].parse().expect("step number");
            assert!(seq < steps, "{name} is left from the first run");
        }
    }
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).expect("kept"),
        "mine"
    );
    assert!(
        !out.join(".lock").exists(),
        "the lock is removed at the end"
    );
}

fn start_slow(out: &Path) -> Child {
    let args = scenario_args("cancel_resume", out);
    Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(&args)
        .env_remove("UFO_LLM")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts")
}

#[test]
fn a_second_run_in_a_folder_in_use_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let child = start_slow(&out);
    // Wait until the first run is inside its slow step (2.5 s).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !events(&out)
        .iter()
        .any(|e| e["type"] == "step" && e["state"] == "ASSIGN")
    {
        assert!(Instant::now() < deadline, "no ASSIGN step within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    for extra in [&[][..], &["--force"][..]] {
        let second = run(&scenario_args("host_fail", &out), extra);
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("another ufo") && stderr.contains(&child.id().to_string()),
            "{stderr}"
        );
    }
    let output = child.wait_with_output().expect("ufo ends");
    assert!(output.status.code().is_some(), "{output:?}");
    // One session, every line whole.
    let ev = events(&out);
    let starts = ev.iter().filter(|e| e["type"] == "session_start").count();
    assert_eq!(starts, 1, "{ev:?}");
    assert_eq!(
        ev.last().map(|e| e["type"].clone()),
        Some("session_end".into())
    );
    assert!(
        !out.join(".lock").exists(),
        "the lock is removed at the end"
    );
}

#[test]
fn resume_appends_to_its_own_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    // A session that ran out of steps and was then cut off, resumed with a higher limit.
    let first = run(
        &scenario_args("app_fail_replan", &out),
        &["--max-steps", "2"],
    );
    assert_eq!(first.status.code(), Some(1), "{first:?}");
    // As if ufo had been killed before the end: a session that ended FAIL is not resumed.
    let path = out.join("events.jsonl");
    let text = std::fs::read_to_string(&path).expect("events");
    let kept: String = text
        .lines()
        .filter(|l| {
            !l.contains("\"type\":\"round_end\"") && !l.contains("\"type\":\"session_end\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kept, text, "the ends were there");
    std::fs::write(&path, kept).expect("write");
    let resumed = ufo()
        .arg("resume")
        .arg(&out)
        .arg("--max-steps")
        .arg("3")
        .output()
        .expect("resume runs");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        !stderr.contains("already holds a trajectory"),
        "resume was refused: {stderr}"
    );
    let ev = events(&out);
    let starts: Vec<&Value> = ev.iter().filter(|e| e["type"] == "session_start").collect();
    assert_eq!(starts.len(), 2, "{stderr}");
    assert_eq!(starts[1]["resumed"], true);
}

/// Run `ufo` under a file-size limit (`ulimit -f`, in 512-byte blocks under sh), with
/// SIGXFSZ ignored so that a write past the limit fails with EFBIG as on a full disk.
fn run_limited(blocks: u32, args: &[String]) -> std::process::Output {
    let tmp = tempfile::tempdir().expect("tempdir");
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f {blocks} && trap '' XFSZ && exec \"$@\""))
        .arg("sh")
        .arg(assert_cmd::cargo::cargo_bin("ufo"))
        .args(args)
        .current_dir(tmp.path())
        .env_remove("UFO_LLM")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            v.extend(all_files(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn a_write_failure_ends_the_session_error_io_with_a_whole_trajectory() {
    // The first screenshot is the first file over either limit: the session stops after
    // that step (events.jsonl's own write failures are covered by the recorder's unit test).
    for blocks in [4, 16] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out = tmp.path().join("out");
        let args = scenario_args("app_fail_replan", &out);
        let output = run_limited(blocks, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "limit {blocks}: {stderr}");
        assert!(
            stderr.contains("cannot write") && stderr.contains("ulimit"),
            "limit {blocks}: {stderr}"
        );
        let ev = events(&out);
        if let Some(end) = ev.iter().find(|e| e["type"] == "session_end") {
            assert_eq!(end["status"], "ERROR", "{end}");
            assert_eq!(end["reason"], "io", "{end}");
            assert!(
                end["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("cannot write")),
                "{end}"
            );
        }
        for f in all_files(&out) {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            assert!(!name.ends_with(".tmp"), "limit {blocks}: {name} left");
            if name.ends_with(".json") {
                let text = std::fs::read_to_string(&f).expect("read");
                serde_json::from_str::<Value>(&text)
                    .unwrap_or_else(|e| panic!("limit {blocks}: {name} is not whole: {e}"));
            }
        }
        assert!(!out.join(".lock").exists());
        // Nothing ran after the failed step.
        let steps = ev.iter().filter(|e| e["type"] == "step").count();
        assert_eq!(steps, 1, "limit {blocks}: {ev:?}");
    }
}

#[test]
fn a_batch_folder_with_results_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("batch");
    std::fs::create_dir_all(out.join("tasks").join("t1")).expect("mkdir");
    std::fs::write(out.join("results.jsonl"), "{\"id\":\"t1\"}\n").expect("write");
    std::fs::write(out.join("tasks").join("t1").join("result.json"), "{}").expect("write");
    let output = ufo()
        .current_dir(tmp.path())
        .arg("batch")
        .arg(
            repo_root()
                .join("tests")
                .join("batch")
                .join("calc_sum.json"),
        )
        .arg("--out")
        .arg(&out)
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--force") && stderr.contains("another folder"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.jsonl")).expect("kept"),
        "{\"id\":\"t1\"}\n"
    );
    assert!(out.join("tasks").join("t1").join("result.json").exists());
    assert!(!out.join(".lock").exists());
}
