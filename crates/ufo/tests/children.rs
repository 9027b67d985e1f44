//! What ufo's gates and child processes guarantee, through the real binary on the simulated
//! desktop with a scripted model: provider keys never reach a command's output (nor any file
//! of the trajectory), and a click at a point is judged by the control under it.

mod common;

use std::path::Path;

use serde_json::{json, Value};

use common::procs;
use common::*;
use nix::sys::signal::Signal;

/// Defect 1: the shell agent's `echo $OPENAI_API_KEY` (allow-listed: it runs unconfirmed)
/// printed the key into events.jsonl, the log, the checkpoint and the next prompt. The key is
/// in ufo's environment; it is in no file of `--out` and not on stderr.
#[test]
fn the_shell_agent_cannot_print_the_provider_keys() {
    const OPENAI: &str = "sk-openai-leak-probe-7f3a9c";
    const ANTHROPIC: &str = "sk-ant-leak-probe-2b8e41";
    const UFO: &str = "sk-ufo-leak-probe-5d0c77";
    // the token of a served desktop is a credential too
    const REMOTE: &str = "remote-token-leak-probe-91e2";
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let config = tmp.path().join("ufo.toml");
    std::fs::write(
        &config,
        format!(
            "[agents]\nshell = true\nshell_workdir = {}\n",
            Value::String(work.display().to_string())
        ),
    )
    .expect("write config");
    let script = write_script(
        tmp.path(),
        &[
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Current Sub-Task": "Print the keys", "ControlText": "shell", "Status": "ASSIGN"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": "echo [$OPENAI_API_KEY] [$ANTHROPIC_API_KEY] [$UFO_LLM_API_KEY] [$UFO_REMOTE_TOKEN]",
                "Status": "CONTINUE"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": "", "Status": "FINISH", "Result": "printed"}}),
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}}),
        ],
    );
    let out = tmp.path().join("out");
    let output = ufo()
        .current_dir(tmp.path())
        .env("OPENAI_API_KEY", OPENAI)
        .env("ANTHROPIC_API_KEY", ANTHROPIC)
        .env("UFO_LLM_API_KEY", UFO)
        .env("UFO_REMOTE_TOKEN", REMOTE)
        .args(["run", "--desktop"])
        .arg(format!(
            "sim:{}",
            scenario_dir("sensitive_click")
                .join("desktop.json")
                .display()
        ))
        .arg("--llm")
        .arg(format!("script:{script}"))
        .arg("--config")
        .arg(&config)
        .args(["--confirm", "no", "--out"])
        .arg(&out)
        .arg("print the keys")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    // the command ran (unconfirmed) and printed empty brackets
    assert!(events.contains("[] [] [] []"), "{events}");
    let all = files_under(&out);
    assert!(all.len() > 3, "{all:?}");
    for key in [OPENAI, ANTHROPIC, UFO, REMOTE] {
        assert!(!stderr.contains(key), "{key} on stderr");
        assert!(
            !String::from_utf8_lossy(&output.stdout).contains(key),
            "{key} on stdout"
        );
        for f in &all {
            let bytes = std::fs::read(f).expect("read");
            assert!(
                !String::from_utf8_lossy(&bytes).contains(key),
                "{key} in {}",
                f.display()
            );
        }
    }
}

/// Defect 6: `click` on "Delete All" was held, `click_at` on the same spot was not. The app
/// agent's `click_at` at window pixels (100, 80) — on Delete All — is held for CONFIRM;
/// rejected, it never reaches the desktop.
#[test]
fn a_click_at_on_a_sensitive_control_is_held() {
    let run = run_scenario("sensitive_click_at", &["--confirm", "no"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AFIN, HC, HFIN])
        .assert_actions(&[]);
    let step = &run.steps()[2];
    assert_eq!(step["action"]["held"], true, "{}", run.ctx());
    assert!(
        s(&step["action"]["sensitive"]).contains("Delete All"),
        "{}",
        run.ctx()
    );
    assert_eq!(
        s(&run.final_control("Writer", "title")["value"]),
        "Q3 report"
    );
}

/// A copy of a scenario folder with its script edited.
fn edited_scenario(name: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = scenario_dir(name);
    let script = std::fs::read_to_string(dir.join("script.jsonl")).expect("script");
    std::fs::write(tmp.path().join("script.jsonl"), edit(&script)).expect("write");
    for f in ["desktop.json", "request.txt", "ufo.toml"] {
        if dir.join(f).exists() {
            std::fs::copy(dir.join(f), tmp.path().join(f)).expect("copy");
        }
    }
    tmp
}

/// Approved, the same `click_at` runs once; at a harmless point it runs unasked.
#[test]
fn a_click_at_runs_when_approved_or_harmless() {
    let approved = edited_scenario("sensitive_click_at", |script| {
        let mut lines: Vec<String> = script.lines().map(str::to_string).collect();
        let done = json!({"agent": "app", "response": {"Observation": "Cleared.",
            "Thought": "Done.", "ControlLabel": "", "ControlText": "", "Function": "",
            "Args": {}, "Status": "FINISH", "Result": "cleared"}});
        lines.insert(2, done.to_string());
        lines.join("\n") + "\n"
    });
    let run = run_dir(approved.path(), &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_sequence(&[HC, HA, AC, ACONF, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Writer", "", "click_at", true)]);
    // (100, 50) is on the Title field: nothing sensitive, no confirmation
    let harmless = edited_scenario("sensitive_click_at", |s| {
        s.replace("\"y\": 80", "\"y\": 50")
    });
    let run = run_dir(harmless.path(), &["--confirm", "no"]);
    run.assert_code(0)
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Writer", "", "click_at", true)]);
}

/// Defect 6, operator agent: its click at the point of "Delete All" is shown to the person;
/// rejected, it never reaches the desktop.
#[test]
fn the_operator_agents_click_on_a_sensitive_control_is_held() {
    let run = run_scenario("sensitive_operator_click", &["--confirm", "no"]);
    run.assert_code(0).assert_actions(&[]);
    let step = run
        .steps()
        .into_iter()
        .find(|s| {
            s["agent"]
                .as_str()
                .is_some_and(|a| a.starts_with("OperatorAgent"))
        })
        .expect("an operator step");
    assert_eq!(step["action"]["held"], true, "{}", run.ctx());
    assert_eq!(step["action"]["decision"], "Reject", "{}", run.ctx());
    assert_eq!(step["action"]["executed"], false, "{}", run.ctx());
    assert!(
        s(&step["action"]["sensitive"]).contains("Delete All"),
        "{}",
        run.ctx()
    );
    let run = run_scenario("sensitive_operator_click", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_actions(&[("Writer", "", "click_at", true)]);
}

/// Processes (not zombies) whose command line has the word `arg`.
fn alive_with_arg(arg: &str) -> usize {
    ufo_proc::live_processes_with_arg(arg).len()
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what}: not within {secs} s");
}

/// `ufo run` with the shell agent running `command` (approved), started in the background.
fn start_shell_command(tmp: &Path, command: &str) -> std::process::Child {
    let config = tmp.join("ufo.toml");
    std::fs::write(
        &config,
        format!(
            "[agents]\nshell = true\nshell_workdir = {}\n",
            Value::String(tmp.display().to_string())
        ),
    )
    .expect("write config");
    let script = write_script(
        tmp,
        &[
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Current Sub-Task": "Wait", "ControlText": "shell", "Status": "ASSIGN"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": command, "Status": "CONTINUE"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": "", "Status": "FINISH", "Result": "must not be reached"}}),
        ],
    );
    std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .current_dir(tmp)
        .args(["run", "--desktop"])
        .arg(format!(
            "sim:{}",
            scenario_dir("sensitive_click")
                .join("desktop.json")
                .display()
        ))
        .arg("--llm")
        .arg(format!("script:{script}"))
        .arg("--config")
        .arg(&config)
        .args(["--confirm", "yes", "--out"])
        .arg(tmp.join("out"))
        .arg("wait")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ufo starts")
}

fn sigint(child: &std::process::Child) {
    assert!(procs::signal(child.id(), Signal::SIGINT), "SIGINT not sent");
}

fn exit_code(child: &mut std::process::Child, secs: u64) -> Option<i32> {
    let mut code = None;
    wait_until("ufo exits", secs, || match child.try_wait() {
        Ok(Some(s)) => {
            code = s.code();
            true
        }
        _ => false,
    });
    code
}

/// Defect 10 and Ctrl-C: commands run in process groups of their own, which a terminal's
/// SIGINT no longer reaches; the first Ctrl-C interrupts them (the step ends at once, not at
/// the 60 s timeout) and nothing is left running.
#[test]
fn ctrl_c_interrupts_a_running_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut ufo = start_shell_command(tmp.path(), "sleep 4949");
    wait_until("sleep 4949 runs", 30, || alive_with_arg("4949") > 0);
    sigint(&ufo);
    assert_eq!(exit_code(&mut ufo, 20), Some(130));
    wait_until("sleep 4949 ends", 10, || alive_with_arg("4949") == 0);
}

/// A command that ignores SIGINT: the second Ctrl-C aborts ufo at once and kills the
/// command's whole process group on the way out.
#[test]
fn a_second_ctrl_c_kills_running_commands() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut ufo = start_shell_command(tmp.path(), "trap '' INT; sleep 5050; echo done");
    wait_until("sleep 5050 runs", 30, || alive_with_arg("5050") > 0);
    sigint(&ufo);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(alive_with_arg("5050") > 0, "it ignores SIGINT");
    sigint(&ufo);
    assert_eq!(exit_code(&mut ufo, 20), Some(130));
    wait_until("sleep 5050 ends", 10, || alive_with_arg("5050") == 0);
}

/// Defect 5: the allow-list matched the program's basename, so `./ls` ran a local script and
/// `date -s …` passed. Both are held now; rejected, neither runs, while `ls -la` still runs
/// unasked.
#[test]
fn a_local_script_named_like_an_allowed_program_is_held() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let marker = tmp.path().join("the-local-ls-ran");
    let script = work.join("ls");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).expect("write");
    let chmod = std::process::Command::new("chmod")
        .arg("755")
        .arg(&script)
        .status()
        .expect("chmod");
    assert!(chmod.success());
    let config = tmp.path().join("ufo.toml");
    std::fs::write(
        &config,
        format!(
            "[agents]\nshell = true\nshell_workdir = {}\n",
            Value::String(work.display().to_string())
        ),
    )
    .expect("write config");
    let shell = |command: &str, status: &str| {
        json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
            "Command": command, "Status": status}})
    };
    let host = |status: &str, subtask: &str| {
        json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Current Sub-Task": subtask, "ControlText": "shell", "Status": status}})
    };
    let lines = [
        host("ASSIGN", "List the folder"),
        shell("ls -la", "CONTINUE"),
        shell("./ls", "CONTINUE"),
        host("ASSIGN", "Set the clock"),
        shell("date -s 2020-01-01", "CONTINUE"),
        host("FINISH", ""),
    ];
    let script = write_script(tmp.path(), &lines);
    let output = ufo()
        .current_dir(tmp.path())
        .args(["run", "--desktop"])
        .arg(format!(
            "sim:{}",
            scenario_dir("sensitive_click")
                .join("desktop.json")
                .display()
        ))
        .arg("--llm")
        .arg(format!("script:{script}"))
        .arg("--config")
        .arg(&config)
        .args(["--confirm", "no", "--out"])
        .arg(tmp.path().join("out"))
        .arg("list and set the clock")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!marker.exists(), "./ls ran unconfirmed: {stderr}");
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).expect("events");
    let steps: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["agent"] == "ShellAgent")
        .filter(|e| e["action"]["args"]["command"].is_string() && e["state"] == "CONTINUE")
        .collect();
    let by_command = |c: &str| {
        steps
            .iter()
            .find(|e| e["action"]["args"]["command"] == c)
            .unwrap_or_else(|| panic!("no step ran {c}: {events}"))
            .clone()
    };
    assert_eq!(by_command("ls -la")["action"]["executed"], true, "{events}");
    let local = by_command("./ls");
    assert_eq!(local["action"]["held"], true, "{events}");
    assert!(
        s(&local["action"]["sensitive"]).contains("relative path"),
        "{local}"
    );
    let date = by_command("date -s 2020-01-01");
    assert_eq!(date["action"]["held"], true, "{events}");
    assert!(s(&date["action"]["sensitive"]).contains("clock"), "{date}");
}
