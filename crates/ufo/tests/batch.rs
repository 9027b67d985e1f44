//! `ufo batch` and `ufo follow` through the real binary.
//!
//! - `ufo follow` on the simulated desktop: the `(role,state)` sequence of follower mode.
//! - `ufo batch` without a desktop: unsupported and broken tasks are skipped / errors.
//! - `ufo batch tests/batch` on the live desktop (calculator, mousepad, shell tasks) with the
//!   tasks' scripted models, each judged by its evaluator; `--jobs 2` on two displays gives the
//!   same results as `--jobs 1`; with `save_experience = auto` only the tasks whose evaluator
//!   passed are saved as experience. Live tests run when `UFO_LIVE_TESTS=1` or `DISPLAY` is set,
//!   else they are skipped with a message.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;
use ufo_desktop::testing::require_live;

use common::*;
use serde_json::{json, Value};

/// Live batch runs share the display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn follow_runs_the_given_plan_and_the_app_finish_ends_the_round() {
    let dir = repo_root().join("tests").join("follow");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let output = ufo()
        .current_dir(tmp.path())
        .arg("follow")
        .arg(dir.join("plan.json"))
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let seq: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| (s(&e["role"]), s(&e["state"])))
        .collect();
    let want = [HC, HA, AC, AC, AFIN, HFIN];
    assert_eq!(
        seq,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>(),
        "{stderr}"
    );
    let start = events.iter().find(|e| e["type"] == "session_start");
    assert_eq!(
        start.map(|e| s(&e["mode"])).as_deref(),
        Some("follower"),
        "{start:?}"
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "session_end")
        .expect("session_end");
    assert_eq!(end["status"], "FINISH");
    let desktop: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("desktop_final.json")).expect("final state"),
    )
    .expect("json");
    let controls = &desktop["apps"][0]["controls"];
    assert_eq!(controls[0]["value"], "Quarterly Report");
    assert_eq!(controls[1]["value"], "report-final");
}

#[test]
fn follow_rejects_a_plan_that_is_not_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plan = tmp.path().join("plan.json");
    std::fs::write(&plan, r#"{"steps": ["a"]}"#).expect("write");
    let output = ufo()
        .arg("follow")
        .arg(&plan)
        .arg("--desktop")
        .arg("sim:nowhere.json")
        .output()
        .expect("ufo runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a plan"), "{stderr}");
}

fn read_results(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("{}/results.jsonl: {e}", out.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// What the AppAgent did in the tasks whose status is not the one wanted (each step's result
/// and the change the next observation saw), for an assertion's message: a live run that
/// fails under load is told apart from a logic error by its trajectory, which the temporary
/// directory takes with it.
fn diagnose(out: &Path, got: &BTreeMap<String, String>, want: &BTreeMap<String, String>) -> String {
    let mut text = String::new();
    for (id, status) in got {
        if want.get(id) == Some(status) {
            continue;
        }
        text.push_str(&format!("\n{id}: {status}, wanted {:?}\n", want.get(id)));
        let events = out
            .join("tasks")
            .join(id)
            .join("trajectory")
            .join("events.jsonl");
        for e in std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "step")
        {
            text.push_str(&format!(
                "  {} {}: {} | {} | {:.0} ms\n",
                s(&e["role"]),
                e["seq"],
                s(&e["result"]),
                s(&e["artifacts"]["observation_changes"]),
                e["timings_ms"]["action_execution"]
                    .as_f64()
                    .unwrap_or(f64::NAN)
            ));
        }
    }
    text
}

fn statuses(results: &[Value]) -> BTreeMap<String, String> {
    results
        .iter()
        .map(|r| (s(&r["id"]), s(&r["status"])))
        .collect()
}

#[test]
fn unsupported_and_broken_tasks_are_skipped_or_errors_never_a_crash() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir_all(&tasks).expect("dir");
    std::fs::write(tasks.join("broken.json"), "{ not json").expect("write");
    let task = |id: &str, step: &str, func: &str| {
        json!({"id": id, "instruction": "x", "config": [{"type": step, "parameters": {}}],
               "evaluator": {"func": func}})
        .to_string()
    };
    std::fs::write(tasks.join("a.json"), task("dl", "download", "exact_match")).expect("write");
    std::fs::write(tasks.join("b.json"), task("pdf", "sleep", "compare_pdfs")).expect("write");
    // supported, but no ufo_script and no --llm: skipped too
    std::fs::write(tasks.join("c.json"), task("nomodel", "sleep", "infeasible")).expect("write");
    let out = tmp.path().join("out");
    let output = ufo()
        .arg("batch")
        .arg(&tasks)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let results = read_results(&out);
    let st = statuses(&results);
    assert_eq!(st["dl"], "skipped");
    assert_eq!(st["pdf"], "skipped");
    assert_eq!(st["nomodel"], "skipped");
    assert_eq!(st["broken"], "error");
    let reason = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| s(&r["reason"]))
            .unwrap_or_default()
    };
    assert!(reason("dl").contains("unsupported config step `download`"));
    assert!(reason("pdf").contains("unsupported evaluator function `compare_pdfs`"));
    assert!(stdout.contains("TOTAL"), "{stdout}");
    assert!(out.join("summary.txt").is_file());
}

#[test]
fn an_id_that_cannot_name_a_task_is_an_error_naming_its_file_and_no_folder_starts_with_a_dash() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir_all(&tasks).expect("dir");
    let task = |id: &str, step: &str| {
        json!({"id": id, "instruction": "x", "ufo_script": "s.jsonl",
               "config": [{"type": step, "parameters": {"seconds": 0}}],
               "evaluator": {"func": "infeasible"}})
        .to_string()
    };
    std::fs::write(tasks.join("s.jsonl"), "").expect("write");
    std::fs::write(tasks.join("nul.json"), task("a\u{0}b", "sleep")).expect("write");
    std::fs::write(tasks.join("dots.json"), task("..", "sleep")).expect("write");
    std::fs::write(tasks.join("long.json"), task(&"x".repeat(600), "sleep")).expect("write");
    let uuid = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4";
    std::fs::write(tasks.join("uuid.json"), task(uuid, "download")).expect("write");
    // a valid id that reads as an option: the task runs (and fails: no X server answers)
    std::fs::write(tasks.join("dash.json"), task("-rf", "sleep")).expect("write");
    let out = tmp.path().join("out");
    let output = ufo()
        .arg("batch")
        .arg(&tasks)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        // a display the check accepts and no server answers: no task needs a desktop here
        .env("DISPLAY", "127.0.0.1:99")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let results = read_results(&out);
    let reason = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| (s(&r["status"]), s(&r["reason"])))
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    for (file, says) in [
        ("nul", "holds the control character U+0000"),
        ("dots", "reads as a folder"),
        ("long", "is 600 bytes long"),
    ] {
        let (status, why) = reason(file);
        assert_eq!(status, "error", "{file}: {why}");
        assert!(why.contains(&format!("{file}.json")), "{file}: {why}");
        assert!(why.contains(says), "{file}: {why}");
    }
    assert_eq!(reason(uuid).0, "skipped");
    assert_eq!(reason("-rf").0, "error");
    let folders: Vec<String> = std::fs::read_dir(out.join("tasks"))
        .expect("tasks folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        folders,
        ["%2Drf"],
        "the one task that ran has a safe folder"
    );
}

#[test]
fn jobs_without_a_display_per_job_is_a_usage_error() {
    let output = ufo()
        .arg("batch")
        .arg(repo_root().join("tests").join("batch"))
        .arg("--jobs")
        .arg("2")
        .output()
        .expect("ufo runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--display-env"), "{stderr}");
}

/// What the suite in tests/batch must give.
fn expected_suite() -> BTreeMap<String, String> {
    [
        ("calc_sum", "passed"),
        // the scripted model presses 31: the evaluator must fail it
        ("calc_wrong", "failed"),
        ("infeasible_fax", "passed"),
        ("mousepad_append", "passed"),
        ("shell_delete", "passed"),
        ("shell_list", "passed"),
        ("shell_write", "passed"),
        ("skip_download", "skipped"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

fn run_suite(out: &Path, extra: &[String]) -> (Option<i32>, String, String) {
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(repo_root().join("tests").join("batch"))
        .arg("--confirm")
        .arg("yes")
        .arg("--task-timeout")
        .arg("120")
        .arg("--out")
        .arg(out)
        .args(extra)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_live_suite_is_judged_by_its_evaluators() {
    if !require_live("the_live_suite_is_judged_by_its_evaluators") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    // The LLM evaluation agent too, with a scripted model: each worker starts the script
    // afresh, so one line answers for every task.
    let eval = tmp.path().join("eval.jsonl");
    std::fs::write(
        &eval,
        json!({"agent": "evaluation",
               "response": {"reason": "the trajectory shows the task done",
                            "sub_scores": {"task": "yes"}, "complete": "yes"},
               "expect": ["Task: ", "What the agent did:", "session ended"]})
        .to_string(),
    )
    .expect("write");
    let (code, stdout, stderr) = run_suite(
        &out,
        &["--eval-llm".into(), format!("script:{}", eval.display())],
    );
    let results = read_results(&out);
    assert_eq!(
        statuses(&results),
        expected_suite(),
        "stdout:\n{stdout}\nstderr:\n{stderr}{}",
        diagnose(&out, &statuses(&results), &expected_suite())
    );
    // a failed task makes the exit status 1
    assert_eq!(code, Some(1), "{stderr}");
    for r in &results {
        if r["status"] != "skipped" {
            assert!(r["steps"].as_u64().unwrap_or(0) >= 1, "{r}");
            assert!(r["model_calls"].as_u64().unwrap_or(0) >= 1, "{r}");
            assert!(r["time_s"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
            assert_eq!(r["llm_eval"]["complete"], "yes", "{r}");
        }
    }
    assert!(
        stdout.contains("LLM evaluation agent: yes 7, no 0, unsure 0, error 0; agrees with the evaluators on 6 of 7"),
        "{stdout}"
    );
    // Print the table so the test log carries the numbers.
    println!("{stdout}");
}

/// A second headless desktop session, brought down when dropped.
struct ExtraSession {
    dir: PathBuf,
}

impl ExtraSession {
    fn up(dir: PathBuf) -> Option<ExtraSession> {
        let status = Command::new(repo_root().join("scripts").join("desktop-session.sh"))
            .arg("up")
            .env("UFO_SESSION_DIR", &dir)
            .stdout(std::process::Stdio::null())
            .status()
            .ok()?;
        let s = ExtraSession { dir };
        status.success().then_some(s)
    }
}

impl Drop for ExtraSession {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts").join("desktop-session.sh"))
            .arg("down")
            .env("UFO_SESSION_DIR", &self.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[test]
fn two_jobs_on_two_displays_give_the_same_results_as_one() {
    if !require_live("two_jobs_on_two_displays_give_the_same_results_as_one") {
        return;
    }
    let first = std::env::var("UFO_DESKTOP_SESSION")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/tmp/ufo-desktop-session"))
        .join("env");
    if !first.is_file() {
        eprintln!(
            "skipping two_jobs_on_two_displays_give_the_same_results_as_one: no session env \
             file {} (start scripts/desktop-session.sh)",
            first.display()
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let session = ExtraSession::up(tmp.path().join("session2"))
        .expect("a second desktop session starts (scripts/desktop-session.sh up)");
    let second = session.dir.join("env");
    let one = tmp.path().join("one");
    let two = tmp.path().join("two");
    let (_, out1, err1) = run_suite(&one, &[]);
    let started = std::time::Instant::now();
    let (_, out2, err2) = run_suite(
        &two,
        &[
            "--jobs".into(),
            "2".into(),
            "--display-env".into(),
            first.display().to_string(),
            "--display-env".into(),
            second.display().to_string(),
        ],
    );
    let wall2 = started.elapsed();
    drop(session);
    let r1 = statuses(&read_results(&one));
    let r2 = statuses(&read_results(&two));
    assert_eq!(
        r1,
        expected_suite(),
        "{out1}\n{err1}{}",
        diagnose(&one, &r1, &expected_suite())
    );
    assert_eq!(
        r2,
        r1,
        "--jobs 2:\n{out2}\n{err2}{}",
        diagnose(&two, &r2, &r1)
    );
    println!(
        "--jobs 1:\n{out1}\n--jobs 2 ({:.1} s):\n{out2}",
        wall2.as_secs_f64()
    );
    assert!(wall2 < Duration::from_secs(600));
}

/// A `--task-timeout` too large to add to a clock (it used to overflow `Instant + Duration`
/// when the first task started) is refused up front: exit 2, naming the flag.
#[test]
fn an_out_of_range_task_timeout_is_a_usage_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for bad in ["18446744073709551615", "0"] {
        let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .arg("batch")
            .arg(repo_root().join("tests").join("batch"))
            .arg("--task-timeout")
            .arg(bad)
            .arg("--out")
            .arg(tmp.path().join("out"))
            .env_remove("UFO_LLM")
            .output()
            .expect("ufo runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--task-timeout"), "{bad}: {stderr}");
        assert!(!tmp.path().join("out").exists(), "{bad}");
    }
}

/// A script with each run of AppAgent answers that go on (`CONTINUE`) merged, with the answer
/// that ends it, into one answer of `Actions` (the form a model answers in with
/// `multi_action` on); host lines and single answers stay as they are.
fn merge_app_answers(script: &str) -> String {
    let mut out: Vec<Value> = Vec::new();
    let mut run: Vec<Value> = Vec::new();
    let flush = |run: &mut Vec<Value>, out: &mut Vec<Value>| {
        if run.len() < 2 {
            out.append(run);
            return;
        }
        let actions: Vec<Value> = run
            .iter()
            .map(|l| {
                let r = &l["response"];
                json!({"ControlLabel": r["ControlLabel"], "ControlText": r["ControlText"],
                       "Function": r["Function"], "Args": r["Args"]})
            })
            .collect();
        let mut first = run[0].clone();
        let last = &run[run.len() - 1]["response"];
        first["response"]["Status"] = last["Status"].clone();
        first["response"]["Actions"] = Value::Array(actions);
        for k in ["ControlLabel", "ControlText", "Function", "Args"] {
            if let Some(o) = first["response"].as_object_mut() {
                o.remove(k);
            }
        }
        out.push(first);
        run.clear();
    };
    for l in script.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).expect("a script line");
        let ui = v["agent"] == "app" && v["response"]["Function"].is_string();
        if ui {
            let goes_on = v["response"]["Status"] == "CONTINUE";
            run.push(v);
            if !goes_on {
                flush(&mut run, &mut out);
            }
        } else {
            flush(&mut run, &mut out);
            out.push(v);
        }
    }
    flush(&mut run, &mut out);
    out.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn merging_app_answers_keeps_host_lines_and_the_last_status() {
    let script = [
        json!({"agent": "host", "response": {"Status": "ASSIGN"}}),
        json!({"agent": "app", "response": {"ControlLabel": "", "ControlText": "1", "Function": "click", "Args": {}, "Status": "CONTINUE"}, "expect": ["x"]}),
        json!({"agent": "app", "response": {"ControlLabel": "", "ControlText": "=", "Function": "click", "Args": {}, "Status": "FINISH"}}),
        json!({"agent": "host", "response": {"Status": "FINISH"}}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let merged: Vec<Value> = merge_app_answers(&script)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(merged.len(), 3);
    assert_eq!(merged[1]["response"]["Status"], "FINISH");
    assert_eq!(merged[1]["expect"], json!(["x"]));
    assert_eq!(merged[1]["response"]["Actions"][1]["ControlText"], "=");
    assert!(merged[1]["response"].get("Function").is_none());
}

/// Issue 13: the suite with `multi_action` on, its AppAgent answers merged into lists, gives
/// the same results with fewer model calls; the calls saved are printed.
#[test]
fn the_suite_with_multi_action_answers_gives_the_same_results_with_fewer_calls() {
    if !require_live("the_suite_with_multi_action_answers_gives_the_same_results_with_fewer_calls")
    {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = tmp.path().join("suite");
    let from = repo_root().join("tests").join("batch");
    let (mut single, mut merged_lines) = (BTreeMap::new(), 0usize);
    for sub in ["", "scripts", "expected"] {
        std::fs::create_dir_all(suite.join(sub)).expect("suite folder");
        for e in std::fs::read_dir(from.join(sub)).expect("suite").flatten() {
            let p = e.path();
            if !p.is_file() {
                continue;
            }
            let name = p.file_name().expect("name").to_owned();
            let text = std::fs::read_to_string(&p).expect("read");
            let text = if sub == "scripts" {
                let id = p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                single.insert(id, text.lines().filter(|l| !l.trim().is_empty()).count());
                let m = merge_app_answers(&text);
                merged_lines += m.lines().count();
                m
            } else {
                text
            };
            std::fs::write(suite.join(sub).join(name), text).expect("write");
        }
    }
    let cfg = tmp.path().join("multi.toml");
    std::fs::write(&cfg, "multi_action = true\n").expect("config");
    let out = tmp.path().join("out");
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(&suite)
        .args(["--confirm", "yes", "--task-timeout", "120", "--out"])
        .arg(&out)
        .arg("--config")
        .arg(&cfg)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = read_results(&out);
    assert_eq!(
        statuses(&results),
        expected_suite(),
        "stdout:\n{stdout}\nstderr:\n{stderr}{}",
        diagnose(&out, &statuses(&results), &expected_suite())
    );
    let calls: u64 = results
        .iter()
        .map(|r| r["model_calls"].as_u64().unwrap_or(0))
        .sum();
    let before: usize = single.values().sum();
    // every script line is one model call when a task passes with single answers
    assert_eq!(calls as usize, merged_lines, "{results:#?}");
    assert!((calls as usize) < before, "{calls} calls, {before} before");
    println!(
        "multi_action on the batch suite: {calls} model calls instead of {before} ({} saved)",
        before - calls as usize
    );
}

/// `save_experience = auto` in `ufo batch`: of two calculator tasks whose sessions both end
/// FINISH, only the one whose evaluator passed is saved as experience (the other presses a
/// wrong key, so its evaluator fails it). The store is this test's own (`XDG_DATA_HOME`).
#[test]
fn auto_saves_the_experience_of_passed_batch_tasks_only() {
    if !require_live("auto_saves_the_experience_of_passed_batch_tasks_only") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = repo_root().join("tests").join("batch");
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir_all(tasks.join("scripts")).expect("dir");
    for id in ["calc_sum", "calc_wrong"] {
        for file in [format!("{id}.json"), format!("scripts/{id}.jsonl")] {
            std::fs::copy(suite.join(&file), tasks.join(&file)).expect("copy a task");
        }
    }
    let data = tmp.path().join("data");
    let out = tmp.path().join("out");
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(&tasks)
        .args(["--confirm", "yes", "--task-timeout", "120", "--out"])
        .arg(&out)
        .env_remove("UFO_LLM")
        .env_remove("UFO_KNOWLEDGE_STORE")
        .env("XDG_DATA_HOME", &data)
        .env("UFO_SAVE_EXPERIENCE", "auto")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = read_results(&out);
    let want: BTreeMap<String, String> = [("calc_sum", "passed"), ("calc_wrong", "failed")]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(
        statuses(&results),
        want,
        "stdout:\n{stdout}\nstderr:\n{stderr}{}",
        diagnose(&out, &statuses(&results), &want)
    );
    // both sessions ended FINISH: only the evaluator tells them apart
    for r in &results {
        assert_eq!(r["session_status"], "FINISH", "{r}");
    }

    let list = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["knowledge", "list", "--kind", "experience", "--json"])
        .env_remove("UFO_KNOWLEDGE_STORE")
        .env("XDG_DATA_HOME", &data)
        .output()
        .expect("ufo runs");
    assert_eq!(
        list.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let saved: Vec<Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        saved.len(),
        1,
        "exactly the passed task's subtask: {saved:?}"
    );
    let location = s(&saved[0]["location"]);
    assert!(
        location.contains("calc_sum") && !location.contains("calc_wrong"),
        "{location}"
    );
    assert_eq!(saved[0]["kind"], "experience");
}

/// `ufo serve` with its data in `home` (the token's) and `ufo` on its `PATH` (the getters run
/// `ufo inspect` on the served machine).
fn serve_cmd(home: &Path) -> Command {
    let bin = assert_cmd::cargo::cargo_bin("ufo");
    let dir = bin.parent().expect("the binary's folder");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = common::served::ufo_at(home);
    cmd.env("PATH", path);
    cmd
}

/// A task file in `dir`: `config` steps, the `infeasible` evaluator, a script that ends FAIL
/// as an infeasible task must.
fn infeasible_task(dir: &Path, id: &str, config: Value) {
    let script = dir.join(format!("{id}.jsonl"));
    std::fs::write(
        &script,
        json!({"agent": "host", "response": {"Observation": "o", "Thought": "it cannot be done",
               "Status": "FAIL"}})
        .to_string(),
    )
    .expect("write");
    std::fs::write(
        dir.join(format!("{id}.json")),
        json!({"id": id, "instruction": "Send the document by fax", "related_apps": ["shell"],
               "config": config, "evaluator": {"func": "infeasible"},
               "ufo_script": script.file_name().expect("name").to_string_lossy()})
        .to_string(),
    )
    .expect("write");
}

/// A batch against a served desktop that runs no shell commands: a task that launches an
/// application by name runs and is judged; a task whose set-up needs a shell is skipped,
/// saying how to allow it; nothing runs on this machine's desktop (no DISPLAY is given).
#[test]
fn a_batch_runs_on_a_served_desktop_and_skips_what_needs_its_shell() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = tmp.path();
    let token = common::served::token_file(h, "batch");
    let desktop = h.join("desktop.json");
    std::fs::write(
        &desktop,
        r#"{"apps": [{"name": "Calculator", "process": "calc", "title": "Calculator",
  "running": false, "launch": "gnome-calculator",
  "controls": [{"id": "display", "role": "label", "name": "Result", "value": "0"}]}]}"#,
    )
    .expect("write");
    let served = common::served::Served::start(
        serve_cmd(h),
        &format!("sim:{}", desktop.display()),
        &["--allow-actions"],
    );
    let tasks = h.join("tasks");
    std::fs::create_dir(&tasks).expect("mkdir");
    infeasible_task(
        &tasks,
        "launches",
        json!([{"type": "launch", "parameters": {"command": ["gnome-calculator"]}}]),
    );
    infeasible_task(
        &tasks,
        "needs_shell",
        json!([{"type": "execute", "parameters": {"command": ["touch", "/tmp/x"]}}]),
    );
    let out = h.join("out");
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(&tasks)
        .args(["--desktop", &format!("remote:{}", served.url)])
        .arg("--token-file")
        .arg(&token)
        .arg("--out")
        .arg(&out)
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = read_results(&out);
    let by_id: BTreeMap<String, &Value> = results.iter().map(|r| (s(&r["id"]), r)).collect();
    assert_eq!(
        by_id["launches"]["status"], "passed",
        "{results:?}\n{stderr}"
    );
    assert!(
        s(&by_id["launches"]["log"]).contains("Calculator"),
        "the launch went through the served desktop: {results:?}"
    );
    assert_eq!(by_id["needs_shell"]["status"], "skipped", "{results:?}");
    assert!(
        s(&by_id["needs_shell"]["reason"]).contains("--allow-shell"),
        "{results:?}"
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");

    // one job only: parallel tasks would share the one served desktop
    let two = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(&tasks)
        .args([
            "--desktop",
            &format!("remote:{}", served.url),
            "--jobs",
            "2",
        ])
        .arg("--token-file")
        .arg(&token)
        .arg("--out")
        .arg(h.join("out2"))
        .output()
        .expect("ufo runs");
    assert_eq!(two.status.code(), Some(2), "{two:?}");
    assert!(
        String::from_utf8_lossy(&two.stderr).contains("one at a time"),
        "{two:?}"
    );
}

/// The suite on a private desktop served by `ufo serve --allow-shell` on this machine, the
/// batch run here against it: set-up, sessions and evaluators all run on the served machine,
/// and the verdicts are those of a local run.
#[test]
fn the_live_suite_runs_on_a_served_private_desktop() {
    if !require_live("the_live_suite_runs_on_a_served_private_desktop") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = tmp.path();
    let token = common::served::token_file(h, "batch");
    let served = common::served::Served::start(
        serve_cmd(h),
        "private",
        &["--scratch-home", "--allow-actions", "--allow-shell"],
    );
    let out = h.join("out");
    let (code, stdout, stderr) = run_suite(
        &out,
        &[
            "--desktop".into(),
            format!("remote:{}", served.url),
            "--token-file".into(),
            token.display().to_string(),
        ],
    );
    let results = read_results(&out);
    assert_eq!(
        statuses(&results),
        expected_suite(),
        "stdout:\n{stdout}\nstderr:\n{stderr}\nserver:\n{}{}",
        served.stderr(),
        diagnose(&out, &statuses(&results), &expected_suite())
    );
    assert_eq!(code, Some(1), "{stderr}");
    // the file task's result was copied from the served machine
    let append = results
        .iter()
        .find(|r| r["id"] == "mousepad_append")
        .expect("mousepad_append");
    let copies = Path::new(&s(&append["out"])).join("device-files");
    let copied: Vec<String> = std::fs::read_dir(&copies)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        copied.iter().any(|n| n.ends_with("note.txt")),
        "{copies:?}: {copied:?}"
    );
}
