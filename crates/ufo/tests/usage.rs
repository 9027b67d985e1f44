//! Usage errors that must stop `ufo` before anything runs (exit 2): a blank request, a resume
//! of a session that already ended, a batch with no desktop to run on.

mod common;

use common::*;

fn word_excel(out: &std::path::Path, request: &str) -> std::process::Output {
    let ex = repo_root().join("examples").join("word_excel");
    ufo()
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", ex.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", ex.join("script.jsonl").display()))
        .arg("--out")
        .arg(out)
        .arg(request)
        .output()
        .expect("ufo runs")
}

#[test]
fn a_blank_request_is_a_usage_error_and_nothing_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for request in ["", "   \n\t"] {
        let out = tmp.path().join("out");
        let output = word_excel(&out, request);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("the request is empty"), "{stderr}");
        assert!(!out.join("events.jsonl").exists(), "nothing may run");
    }
}

#[test]
fn resuming_a_session_that_ended_is_a_usage_error_and_runs_nothing_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let first = word_excel(
        &out,
        "Extract the sales table from Word and create a bar chart in Excel",
    );
    assert_eq!(first.status.code(), Some(0));
    let before = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let resumed = ufo().arg("resume").arg(&out).output().expect("ufo runs");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already ended FINISH"), "{stderr}");
    let after = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    assert_eq!(before, after, "the trajectory is untouched");
}

#[test]
fn a_batch_without_a_desktop_stops_before_the_first_task() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    for display in [None, Some(":4243")] {
        let mut cmd = ufo();
        cmd.arg("batch")
            .arg(repo_root().join("tests").join("batch"))
            .arg("--out")
            .arg(&out)
            .arg("--quiet");
        match display {
            Some(d) => cmd.env("DISPLAY", d),
            None => cmd.env_remove("DISPLAY"),
        };
        let output = cmd.output().expect("ufo runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{display:?}: {stderr}");
        assert!(stderr.contains("no desktop to run job 1 on"), "{stderr}");
        assert!(
            !out.join("results.jsonl").exists(),
            "no task may run: {stderr}"
        );
    }
}

/// Issue 14: `run.json` kept the paths as typed, relative to where the run started, so a
/// `ufo resume` from another folder failed with "cannot read script ...". They are absolute now.
#[test]
fn a_session_started_with_relative_paths_resumes_from_another_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let start = tmp.path().join("start");
    std::fs::create_dir(&start).expect("mkdir");
    let ex = repo_root().join("examples").join("word_excel");
    std::fs::copy(ex.join("desktop.json"), start.join("desktop.json")).expect("copy");
    // only the host's first answer and the app's: the script runs out, the session ends ERROR
    let script = std::fs::read_to_string(ex.join("script.jsonl")).expect("script");
    let head: Vec<&str> = script.lines().take(2).collect();
    std::fs::write(start.join("script.jsonl"), head.join("\n") + "\n").expect("write");
    let first = ufo()
        .current_dir(&start)
        .args([
            "run",
            "--desktop",
            "sim:desktop.json",
            "--llm",
            "script:script.jsonl",
        ])
        .args([
            "--out",
            "out",
            "Extract the sales table from Word and create a bar chart in Excel",
        ])
        .output()
        .expect("ufo runs");
    assert_eq!(
        first.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let out = start.join("out");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json"))
            .expect("json");
    let desktop = record["desktop"].as_str().expect("desktop");
    assert_eq!(
        desktop,
        format!("sim:{}", start.join("desktop.json").display()),
        "{record}"
    );
    let resumed = ufo()
        .current_dir(tmp.path())
        .arg("resume")
        .arg(&out)
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(!stderr.contains("cannot read"), "{stderr}");
    // the resumed session really ran: a second session_start, and the script ran out again
    let events = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let starts = events
        .lines()
        .filter(|l| l.contains("\"type\":\"session_start\""))
        .count();
    assert_eq!(starts, 2, "{stderr}");
    assert_eq!(resumed.status.code(), Some(3), "{stderr}");
}

/// Issue 14: `--max-steps -1` got clap's tip "to pass '-1' as a value, use '-- -1'", which
/// sends the user the wrong way; it is now a plain message about the count.
#[test]
fn a_negative_count_says_what_a_count_is() {
    for flag in ["--max-steps", "--max-rounds"] {
        let output = ufo()
            .args(["run", flag, "-1", "a request"])
            .output()
            .expect("ufo runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("is not a count"), "{stderr}");
        assert!(!stderr.contains("-- -1"), "{stderr}");
    }
}

/// Issue 14: `ufo inspect` without a display spoke of `--desktop live`, an option it does not
/// have.
#[test]
fn inspect_without_a_display_names_no_option_it_lacks() {
    let output = ufo()
        .arg("inspect")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("DISPLAY is not set"), "{stderr}");
    assert!(!stderr.contains("--desktop"), "{stderr}");
}

/// Issue 14: `ufo follow` had no `-v` and its `--quiet` lacked the conflict rule; the output
/// options are now one set shared by `run`, `resume` and `follow`.
#[test]
fn follow_takes_the_output_options_of_run() {
    let dir = repo_root().join("tests").join("follow");
    let tmp = tempfile::tempdir().expect("tempdir");
    let follow = |extra: &[&str], out: &str| {
        ufo()
            .arg("follow")
            .arg(dir.join("plan.json"))
            .arg("--desktop")
            .arg(format!("sim:{}", dir.join("desktop.json").display()))
            .arg("--llm")
            .arg(format!("script:{}", dir.join("script.jsonl").display()))
            .arg("--out")
            .arg(tmp.path().join(out))
            .args(extra)
            .output()
            .expect("ufo runs")
    };
    let verbose = follow(&["-v", "--report"], "v");
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert_eq!(verbose.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("thought:"), "{stderr}");
    assert!(tmp.path().join("v").join("report.html").is_file());
    let both = follow(&["-q", "-v"], "q");
    assert_eq!(both.status.code(), Some(2));
    assert!(!tmp.path().join("q").join("events.jsonl").exists());
}
