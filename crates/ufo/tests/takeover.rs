//! Watching and taking over (issue 15), on the simulated desktop through the real binary: the
//! scenario's `"takeover"` stands for the person, who takes the desktop over right after the
//! agent observed the window (so the model's answer is made on a stale screen), types into a
//! field and hands the desktop back. The agent must not execute that answer's action, must
//! record the hand-over, and must observe again so that its model sees what the person did.

mod common;

use std::path::Path;

use common::procs;
use common::*;
use nix::sys::signal::Signal;
use serde_json::{json, Value};

fn host(status: &str, subtask: &str, control: &str) -> Value {
    json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
        "Current Sub-Task": subtask, "ControlLabel": "", "ControlText": control,
        "Status": status}})
}

/// A folder with the scenario (Writer: a title field and a "Delete All" button), the script
/// and the request.
fn scenario(dir: &Path, hand_back_after: Value, script: &[Value]) {
    let desktop = json!({
        "apps": [{"name": "Writer", "controls": [
            {"id": "title", "role": "edit", "name": "Title", "value": ""},
            {"id": "delete_all", "role": "button", "name": "Delete All"}]}],
        "takeover": {"after_observations": 1, "app": "Writer", "control": "title",
                     "value": "Typed by the person", "hand_back_after": hand_back_after}
    });
    std::fs::write(dir.join("desktop.json"), desktop.to_string()).expect("desktop.json");
    let lines: Vec<String> = script.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("script.jsonl"), lines.join("\n")).expect("script.jsonl");
    std::fs::write(dir.join("request.txt"), "Tidy the report").expect("request.txt");
}

#[test]
fn a_take_over_pauses_the_agent_and_its_stale_action_never_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scenario(
        tmp.path(),
        json!(1),
        &[
            host("ASSIGN", "Tidy the report", "Writer"),
            // decided on the first observation; the person took over right after it
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "ControlLabel": "2", "ControlText": "Delete All", "Function": "click",
                "Args": {}, "Status": "CONTINUE"}}),
            // after the hand-back the window is observed again: the model sees the person's text
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH", "Result": "the person typed the title"},
                "expect": ["Typed by the person"]}),
            host("FINISH", "", ""),
        ],
    );
    let run = run_dir(tmp.path(), &[]);
    run.assert_code(0).assert_well_formed();
    // the stale click never reached the desktop
    assert!(
        run.actions()
            .iter()
            .all(|(_, control, _, _)| control != "delete_all"),
        "{:?}\n{}",
        run.actions(),
        run.ctx()
    );
    assert_eq!(
        run.final_control("Writer", "title")["value"],
        "Typed by the person"
    );
    // the records: the discarded step, then takeover and handback, then the new observation
    let events = run.events();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e["type"].as_str() {
            Some("step") => format!("{}:{}", s(&e["role"]), s(&e["state"])),
            other => other.unwrap_or("").to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session_start",
            "host:CONTINUE",
            "host:ASSIGN",
            "app:CONTINUE",
            "takeover",
            "handback",
            "app:CONTINUE",
            "app:FINISH",
            "host:CONTINUE",
            "host:FINISH",
            "round_end",
            "session_end"
        ],
        "{}",
        run.ctx()
    );
    let discarded = &events[3];
    assert_eq!(discarded["action"]["executed"], false, "{discarded}");
    assert_eq!(discarded["action"]["discarded"], "takeover", "{discarded}");
    assert_eq!(discarded["status"], "CONTINUE", "{discarded}");
    assert!(
        s(&discarded["result"]).contains("the person took the desktop over"),
        "{discarded}"
    );
    let (takeover, handback) = (&events[4], &events[5]);
    assert_eq!(takeover["seq"], events[6]["seq"], "{takeover}");
    assert!(takeover["ts"].is_string() && takeover["input"].is_string());
    assert_eq!(handback["how"], "handed_back", "{handback}");
    assert!(handback["paused_ms"].is_u64(), "{handback}");
    // the progress shows both
    assert!(
        run.stderr.contains("the person took the desktop over")
            && run.stderr.contains("handed the desktop back"),
        "{}",
        run.stderr
    );
    // the report and the run list read the new records
    let report = ufo()
        .arg("report")
        .arg(&run.out)
        .output()
        .expect("ufo report");
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let html = std::fs::read_to_string(run.out.join("report.html")).unwrap_or_default();
    assert!(
        html.contains("took the desktop over"),
        "report without the hand-over"
    );
}

#[test]
fn a_take_over_that_is_never_handed_back_ends_the_round_after_the_limit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scenario(
        tmp.path(),
        Value::Null,
        &[
            host("ASSIGN", "Tidy the report", "Writer"),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "ControlLabel": "2", "ControlText": "Delete All", "Function": "click",
                "Args": {}, "Status": "CONTINUE"}}),
            // must not be reached
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}}),
        ],
    );
    std::fs::write(tmp.path().join("ufo.toml"), "takeover_limit_s = 1\n").expect("ufo.toml");
    let run = run_dir(tmp.path(), &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_round_end("FAIL", Some("takeover_timeout"));
    assert!(run.actions().is_empty(), "{:?}", run.actions());
    let handback = run.record("handback");
    assert_eq!(handback["how"], "timeout", "{handback}");
    assert!(
        handback["paused_ms"].as_u64().unwrap_or(0) >= 1000,
        "{handback}"
    );
    let end = run.record("session_end");
    assert!(s(&end["message"]).contains("Pause"), "{end}");
}

/// The person may hand the desktop back from ufo's terminal too: Enter there ends the pause
/// (the scenario's desktop never hands back by itself).
#[test]
fn enter_on_the_terminal_hands_the_desktop_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scenario(
        tmp.path(),
        Value::Null,
        &[
            host("ASSIGN", "Tidy the report", "Writer"),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "ControlLabel": "2", "ControlText": "Delete All", "Function": "click",
                "Args": {}, "Status": "CONTINUE"}}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}, "expect": ["Typed by the person"]}),
            host("FINISH", "", ""),
        ],
    );
    std::fs::write(tmp.path().join("ufo.toml"), "takeover_limit_s = 20\n").expect("ufo.toml");
    let out = tmp.path().join("out");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    for (k, _) in std::env::vars() {
        if k.starts_with("UFO_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", tmp.path().join("desktop.json").display()))
        .arg("--llm")
        .arg(format!(
            "script:{}",
            tmp.path().join("script.jsonl").display()
        ))
        .arg("--config")
        .arg(tmp.path().join("ufo.toml"))
        .arg("--out")
        .arg(&out)
        .arg("Tidy the report");
    let mut p = rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn in a pty");
    p.exp_string("Press Enter here")
        .expect("the terminal says how to hand back");
    p.send_line("").expect("send");
    p.exp_string("handed the desktop back")
        .expect("the pause ends");
    let rest = p.exp_eof().unwrap_or_default();
    let code = match p.process.wait() {
        Ok(rexpect::process::wait::WaitStatus::Exited(_, c)) => c,
        other => panic!("ufo did not exit normally: {other:?}\n{rest}"),
    };
    assert_eq!(code, 0, "{rest}");
    let events = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    assert_eq!(
        events.matches("\"type\":\"takeover\"").count(),
        1,
        "{events}"
    );
    assert!(events.contains("\"how\":\"handed_back\""), "{events}");
}

/// Ctrl-C still cancels while the agent waits for the person: the pause ends `cancelled`, the
/// session CANCELLED (exit 130), and nothing was executed.
#[test]
fn ctrl_c_during_a_take_over_cancels_the_session() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scenario(
        tmp.path(),
        Value::Null,
        &[
            host("ASSIGN", "Tidy the report", "Writer"),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "ControlLabel": "2", "ControlText": "Delete All", "Function": "click",
                "Args": {}, "Status": "CONTINUE"}}),
        ],
    );
    let out = tmp.path().join("out");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .env_remove("UFO_TAKEOVER_LIMIT_S")
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
        .arg("Tidy the report")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ufo starts");
    let events = || std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !events().contains("\"takeover\"") {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no take-over:\n{}", events());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(procs::signal(child.id(), Signal::SIGINT), "SIGINT not sent");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("Ctrl-C did not end the pause:\n{}", events());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{}", events());
    let text = events();
    assert!(text.contains("\"how\":\"cancelled\""), "{text}");
    assert!(text.contains("\"status\":\"CANCELLED\""), "{text}");
    let final_state: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("desktop_final.json")).unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    assert_eq!(final_state["actions"], json!([]), "{final_state}");
}

/// Multi-action: the person takes over between two actions of a list; the rest of the list
/// is not run (it was decided on the screen before), and after the hand-back the model
/// decides anew.
#[test]
fn a_take_over_stops_a_list_of_actions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scenario(
        tmp.path(),
        json!(1),
        &[
            host("ASSIGN", "Tidy the report", "Writer"),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Actions": [
                    {"ControlLabel": "1", "ControlText": "Title", "Function": "set_text",
                     "Args": {"text": "Draft"}},
                    {"ControlLabel": "1", "ControlText": "Title", "Function": "set_text",
                     "Args": {"text": "Final"}}],
                "Status": "CONTINUE"}}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"},
                "expect": ["Typed by the person", "stopped before action 2"]}),
            host("FINISH", "", ""),
        ],
    );
    // the person takes over at the re-observation before the list's second action
    let path = tmp.path().join("desktop.json");
    let mut desktop: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("desktop")).expect("json");
    desktop["takeover"]["after_observations"] = json!(2);
    std::fs::write(&path, desktop.to_string()).expect("desktop.json");
    std::fs::write(tmp.path().join("ufo.toml"), "multi_action = true\n").expect("ufo.toml");
    let run = run_dir(tmp.path(), &[]);
    run.assert_code(0).assert_well_formed();
    let actions = run.actions();
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!(
        (actions[0].1.as_str(), actions[0].2.as_str()),
        ("title", "set_text")
    );
    assert_eq!(run.record("takeover")["type"], "takeover");
    assert_eq!(run.record("handback")["how"], "handed_back");
}
