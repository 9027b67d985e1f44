//! Ctrl-C and `ufo resume`, through the real binary: SIGINT during a step ends the session
//! CANCELLED (exit 130) with a valid `events.jsonl`, and `ufo resume` completes it.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::procs;
use common::*;
use nix::sys::signal::Signal;
use serde_json::Value;

/// The trajectory's complete lines: read while ufo writes, the last line may be cut short
/// (a long line is written in more than one piece), and it is not a record yet.
fn events(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid line {l:?}: {e}")))
        .collect()
}

fn start(out: &Path) -> Child {
    let dir = scenario_dir("cancel_resume");
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
    Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--out")
        .arg(out)
        .arg(request.trim())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts")
}

/// Wait until the app's slow step has begun: the trajectory shows the host's ASSIGN and the
/// checkpoint saved after that step is there. ufo writes a step's record before its
/// checkpoint, and a Ctrl-C between the two lands between steps, where it rightly ends the
/// session before the app's step (under load the save took long enough for the signal to
/// land there once).
fn wait_for_assign(out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let assign_seq = events(out)
            .iter()
            .find(|e| e["type"] == "step" && e["state"] == "ASSIGN")
            .and_then(|e| e["seq"].as_u64());
        if let Some(seq) = assign_seq {
            if checkpoint_seq(out).is_some_and(|saved| saved > seq) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no ASSIGN step and its checkpoint within 30 s");
}

/// The next record's number the last checkpoint holds (`None`: none yet, or being written).
fn checkpoint_seq(out: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(out.join("checkpoint.json")).ok()?;
    let cp: Value = serde_json::from_str(&text).ok()?;
    cp["seq"].as_u64()
}

fn sigint(child: &Child) {
    assert!(procs::signal(child.id(), Signal::SIGINT), "SIGINT not sent");
}

#[test]
fn ctrl_c_cancels_after_the_step_and_resume_completes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let child = start(&out);
    wait_for_assign(&out);
    sigint(&child);
    let output = child.wait_with_output().expect("ufo ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "stderr:\n{stderr}");
    let ev = events(&out);
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "session_end", "{ev:?}");
    assert_eq!(last["status"], "CANCELLED");
    // The step in progress finished (its action reached the desktop); nothing after it ran.
    let states: Vec<String> = ev
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| format!("{}:{}", s(&e["role"]), s(&e["state"])))
        .collect();
    assert_eq!(states, ["host:CONTINUE", "host:ASSIGN", "app:CONTINUE"]);
    let desktop: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("desktop_final.json")).expect("desktop_final"),
    )
    .expect("json");
    assert_eq!(desktop["actions"][0]["action"], "set_text");

    // Resume with the rest of the conversation: the host sees the cancelled subtask and the
    // plan it had.
    let dir = scenario_dir("cancel_resume");
    let resumed = ufo()
        .arg("resume")
        .arg(&out)
        .arg("--llm")
        .arg(format!("script:{}", dir.join("resume.jsonl").display()))
        .output()
        .expect("resume runs");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "stderr:\n{stderr}");
    let ev = events(&out);
    let starts: Vec<&Value> = ev.iter().filter(|e| e["type"] == "session_start").collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["resumed"], true);
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "session_end");
    assert_eq!(last["status"], "FINISH");
    // Sequence numbers go on where the cancelled session stopped.
    let seqs: Vec<u64> = ev
        .iter()
        .filter(|e| e["type"] == "step")
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_second_ctrl_c_aborts_at_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let child = start(&out);
    wait_for_assign(&out);
    let t = Instant::now();
    sigint(&child);
    std::thread::sleep(Duration::from_millis(100));
    sigint(&child);
    let output = child.wait_with_output().expect("ufo ends");
    assert_eq!(output.status.code(), Some(130));
    assert!(
        t.elapsed() < Duration::from_millis(2000),
        "the abort waited for the slow step: {:?}",
        t.elapsed()
    );
    // Whatever was written is whole lines of JSON.
    let _ = events(&out);
}

/// A scenario in `dir`: a slow Writer (each observation takes 2.5 s) whose body the AppAgent
/// reads with `read_text` and FINISHes on in one step; `resume.jsonl` continues it.
fn finished_read_scenario(dir: &Path) {
    let desktop = serde_json::json!({"apps": [{
        "name": "Writer", "process": "writer", "title": "notes.txt - Writer", "running": true,
        "launch": "writer", "delay_ms": 2500,
        "controls": [{"id": "body", "role": "edit", "name": "Body", "value": "the code is 4711"}]}]});
    let script = [
        serde_json::json!({"agent": "host", "response": {"Observation": "Writer is open.",
            "Thought": "Assign.", "Current Sub-Task": "Read the body", "ControlLabel": "1",
            "ControlText": "Writer", "Status": "ASSIGN"}}),
        serde_json::json!({"agent": "app", "response": {"Observation": "A body.",
            "Thought": "Read it; that completes the subtask.", "ControlLabel": "1",
            "ControlText": "Body", "Function": "read_text", "Args": {}, "Status": "FINISH"}}),
        serde_json::json!({"agent": "host", "response": {"Observation": "Must not be reached",
            "Thought": "x", "Status": "FINISH"}}),
    ];
    // The resumed host sees the subtask done, with its result, and finishes.
    let resume = serde_json::json!({"agent": "host", "response": {"Observation": "Read.",
        "Thought": "Done.", "Status": "FINISH"},
        "expect": ["[FINISH] Read the body", "the code is 4711"]});
    let lines = |v: &[Value]| {
        v.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    };
    std::fs::write(dir.join("desktop.json"), desktop.to_string()).expect("desktop");
    std::fs::write(dir.join("script.jsonl"), lines(&script)).expect("script");
    std::fs::write(dir.join("resume.jsonl"), lines(&[resume])).expect("resume");
}

/// Defect: Ctrl-C while the AppAgent's step ran `read_text` and returned FINISH archived the
/// subtask CANCELLED without its result. Now the completed step keeps its result and status:
/// the FINISH state archives it, then the session ends CANCELLED (exit 130); the checkpoint has
/// the subtask FINISHED with its result, and `ufo resume` shows it to the host as done.
#[test]
fn ctrl_c_keeps_the_result_of_a_step_that_finished_the_subtask() {
    let tmp = tempfile::tempdir().expect("tempdir");
    finished_read_scenario(tmp.path());
    let out = tmp.path().join("out");
    let child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", tmp.path().join("desktop.json").display()))
        .arg("--llm")
        .arg(format!(
            "script:{}",
            tmp.path().join("script.jsonl").display()
        ))
        .arg("--out")
        .arg(&out)
        .arg("Read the notes")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    wait_for_assign(&out);
    sigint(&child);
    let output = child.wait_with_output().expect("ufo ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "stderr:\n{stderr}");
    let ev = events(&out);
    let states: Vec<String> = ev
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| format!("{}:{}:{}", s(&e["role"]), s(&e["state"]), s(&e["status"])))
        .collect();
    assert_eq!(
        states,
        [
            "host:CONTINUE:ASSIGN",
            "host:ASSIGN:ASSIGN",
            "app:CONTINUE:FINISH",
            "app:FINISH:FINISH"
        ],
        "{ev:?}"
    );
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "session_end");
    assert_eq!(last["status"], "CANCELLED");
    let checkpoint: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("checkpoint.json")).expect("checkpoint"),
    )
    .expect("json");
    let done = &checkpoint["previous_subtasks"]["recent"];
    assert_eq!(done.as_array().map(Vec::len), Some(1), "{checkpoint}");
    assert_eq!(done[0]["status"], "FINISH", "{checkpoint}");
    assert!(
        s(&done[0]["result"]).contains("the code is 4711"),
        "{checkpoint}"
    );

    let resumed = ufo()
        .arg("resume")
        .arg(&out)
        .arg("--llm")
        .arg(format!(
            "script:{}",
            tmp.path().join("resume.jsonl").display()
        ))
        .output()
        .expect("resume runs");
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "stderr:\n{stderr}");
    // The subtask was not run again: no AppAgent step after the resume.
    let ev = events(&out);
    let after: Vec<&Value> = ev
        .iter()
        .skip_while(|e| e.get("resumed").is_none())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .collect();
    assert!(after.is_empty(), "{after:?}");
}

/// Defect: while a model server hung, one Ctrl-C waited out every timeout and retry (62.7 s
/// with `UFO_LLM_TIMEOUT_SECS=15`, about 480 s with the defaults). Now the first Ctrl-C cuts
/// the call in flight and its retries: CANCELLED, exit 130, in well under the bound.
#[test]
fn ctrl_c_stops_a_hanging_model_call_and_its_retries() {
    // A server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            // Keep each connection open, unanswered, for as long as the test runs.
            if held_tx.send(conn).is_err() {
                return;
            }
        }
    });
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let dir = scenario_dir("cancel_resume");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg("openai:x")
        .arg("--out")
        .arg(&out)
        .arg("Write hello into the notes")
        .env("UFO_LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test-not-a-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    // The host's first model call is in flight once the server has its connection.
    held_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("ufo connects to the model server");
    std::thread::sleep(Duration::from_millis(1000));
    let signalled = Instant::now();
    sigint(&child);
    let bound = Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if signalled.elapsed() > bound + Duration::from_secs(25) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ufo still waits on the hanging server 30 s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = signalled.elapsed();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert_eq!(status.code(), Some(130), "stderr:\n{stderr}");
    assert!(
        took < bound,
        "ended {took:?} after Ctrl-C; stderr:\n{stderr}"
    );
    let ev = events(&out);
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "session_end", "{ev:?}");
    assert_eq!(last["status"], "CANCELLED", "{ev:?}");
    assert_eq!(last["reason"], "cancelled", "{ev:?}");
    eprintln!("ufo ended {took:?} after Ctrl-C");
}
