//! MCP tools, `ufo mcp serve` and third-party agents, through the real `ufo` binary on the
//! simulated desktop with a scripted model.
//!
//! The MCP tests run against servers no one here wrote: `@modelcontextprotocol/server-filesystem`
//! and `@modelcontextprotocol/server-everything` (npm), and the Python `mcp` package as an
//! independent client of `ufo mcp serve`. `scripts/test-deps.sh install_mcp_servers` and
//! `install_python_mcp` install them under `target/test-deps/`. When one is missing the test
//! prints why and skips, unless `UFO_PEER_TESTS=1`, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use ufo_desktop::testing::require_peer;

use serde_json::{json, Value};

use common::{repo_root, run_args, Run};

fn mcp_bin(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("UFO_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-deps/mcp"));
    require_peer(
        dir.join("node_modules/.bin").join(name),
        &format!("the MCP server {name}"),
        "install_mcp_servers",
    )
}

fn python_mcp() -> Option<PathBuf> {
    let venv = std::env::var_os("UFO_PY_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-deps/py"));
    let python = venv.join("bin/python");
    // A virtual environment without the package counts as absent.
    let usable = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    let path = if usable {
        python
    } else {
        venv.join("bin/python-with-mcp")
    };
    require_peer(path, "the Python mcp package", "install_python_mcp")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
}

fn host(status: &str, target: &str, subtask: &str, expect: &[&str]) -> Value {
    json!({"agent": "host", "expect": expect, "response": {
        "Observation": "the desktop", "Thought": "next", "Current Sub-Task": subtask,
        "ControlText": target, "Status": status}})
}

fn line(agent: &str, response: Value, expect: &[&str]) -> Value {
    let mut r = response;
    r["Observation"] = "seen".into();
    r["Thought"] = "go".into();
    json!({"agent": agent, "expect": expect, "response": r})
}

/// Write the script and config into `dir`, then run `ufo run` on the peers fixture desktop.
fn run_session(dir: &Path, script: &[Value], config: &str, extra: &[&str]) -> Run {
    let script_path = dir.join("script.jsonl");
    let text: Vec<String> = script.iter().map(Value::to_string).collect();
    std::fs::write(&script_path, text.join("\n") + "\n").expect("write script");
    let config_path = dir.join("ufo.toml");
    std::fs::write(&config_path, config).expect("write config");
    let mut args: Vec<String> = vec![
        "--desktop".into(),
        format!("sim:{}", fixture("desktop.json").display()),
        "--llm".into(),
        format!("script:{}", script_path.display()),
        "--config".into(),
        config_path.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    run_args("mcp", "do the work", &args)
}

fn toml_str(p: &Path) -> String {
    Value::String(p.display().to_string()).to_string()
}

#[test]
fn an_app_agent_writes_and_reads_a_file_through_the_filesystem_server() {
    let Some(fs) = mcp_bin("mcp-server-filesystem") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let files = tmp.path().join("files");
    std::fs::create_dir(&files).expect("mkdir");
    let files = files.canonicalize().expect("canonical");
    let target = files.join("sales.txt");
    let path = target.display().to_string();
    let config = format!(
        "[mcp.servers.fs]\ncommand = {}\nargs = [{}]\napps = [\"Writer\"]\ntimeout_ms = 30000\n",
        toml_str(&fs),
        toml_str(&files)
    );
    let script = vec![
        host(
            "ASSIGN",
            "Writer",
            "Save the sales table to sales.txt and read it back",
            &["Writer"],
        ),
        // The tools are listed beside the GUI functions; Args missing `content` are sent back.
        line(
            "app",
            json!({"Function": "write_file", "Args": {"path": path}, "Status": "CONTINUE"}),
            &["write_file", "read_text_file", "click"],
        ),
        line(
            "app",
            json!({"Function": "write_file", "Args": {"path": path, "content": "Q1,10\nQ2,20"},
                   "Status": "CONTINUE"}),
            &["\"content\" is a required property"],
        ),
        line(
            "app",
            json!({"Function": "read_text_file", "Args": {"path": path}, "Status": "FINISH"}),
            &["Successfully wrote"],
        ),
        host("FINISH", "", "", &["Q1,10"]),
    ];
    let run = run_session(tmp.path(), &script, &config, &[]);
    run.assert_code(0);
    run.assert_sequence(&[
        ("host", "CONTINUE"),
        ("host", "ASSIGN"),
        ("app", "CONTINUE"),
        ("app", "CONTINUE"),
        ("app", "FINISH"),
        ("host", "CONTINUE"),
        ("host", "FINISH"),
    ]);
    assert_eq!(
        std::fs::read_to_string(&target).expect("the server wrote the file"),
        "Q1,10\nQ2,20"
    );
    let steps = run.steps();
    let tool_steps: Vec<&Value> = steps
        .iter()
        .filter(|s| s["action"]["tool"] == true)
        .collect();
    assert_eq!(tool_steps.len(), 2, "{}", run.ctx());
    assert_eq!(tool_steps[1]["result"], "Q1,10\nQ2,20", "{}", run.ctx());
}

#[test]
fn a_hung_tool_is_a_failed_action_and_bad_args_are_re_asked() {
    let Some(everything) = mcp_bin("mcp-server-everything") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[mcp.servers.everything]\ncommand = {}\nargs = [\"stdio\"]\ntimeout_ms = 3000\n",
        toml_str(&everything)
    );
    let long = "trigger-long-running-operation";
    let script = vec![
        host("ASSIGN", "Writer", "Run the long operation", &[]),
        line(
            "app",
            json!({"Function": long, "Args": {"duration": "ten"}, "Status": "CONTINUE"}),
            &[long, "echo"],
        ),
        line(
            "app",
            json!({"Function": long, "Args": {"duration": 30, "steps": 3}, "Status": "CONTINUE"}),
            &["is not of type \"number\""],
        ),
        line(
            "app",
            json!({"Function": "echo", "Args": {"message": "still alive"}, "Status": "FINISH"}),
            &["did not answer within 3000 ms"],
        ),
        host("FINISH", "", "", &["still alive"]),
    ];
    let started = Instant::now();
    let run = run_session(tmp.path(), &script, &config, &[]);
    run.assert_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the session waited for the hung tool: {:?}",
        started.elapsed()
    );
    let steps = run.steps();
    let timed_out = steps
        .iter()
        .find(|s| s["action"]["function"] == long)
        .expect("the long operation step");
    assert!(
        timed_out["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("action failed") && r.contains("3000 ms")),
        "{}",
        run.ctx()
    );
}

#[test]
fn a_server_that_cannot_start_is_a_failed_action_not_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A server that exits at once: its tools cannot be listed; the GUI functions still work.
    let config =
        "[mcp.servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 1\"]\ntimeout_ms = 3000\n";
    let script = vec![
        host("ASSIGN", "Writer", "Read the table", &[]),
        line(
            "app",
            json!({"ControlText": "Sales", "Function": "read_text", "Status": "FINISH"}),
            &["Sales"],
        ),
        host("FINISH", "", "", &["Q1,10"]),
    ];
    let run = run_session(tmp.path(), &script, config, &[]);
    run.assert_code(0);
    let steps = run.steps();
    assert!(
        steps
            .iter()
            .any(|s| s["artifacts"]["tool_warning"].as_str().is_some()),
        "{}",
        run.ctx()
    );
}

#[test]
fn ufo_mcp_serve_answers_an_independent_python_client() {
    let Some(python) = python_mcp() else {
        return;
    };
    let ufo = assert_cmd::cargo::cargo_bin("ufo");
    let script = fixture("mcp_client.py");
    let run = |allow: bool| -> Value {
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(&script).arg(&ufo).arg(fixture("desktop.json"));
        if allow {
            cmd.arg("--allow-actions");
        }
        let out = cmd.output().expect("python runs");
        assert!(
            out.status.success(),
            "the Python client failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("the client prints JSON")
    };
    let refused = run(false);
    assert_eq!(
        refused["tools"],
        json!([
            "act",
            "launch_app",
            "list_windows",
            "observe_window",
            "type_text"
        ])
    );
    let windows = refused["list_windows"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(windows.contains("report - Writer"), "{windows}");
    assert!(windows.contains("\"Calc\""), "{windows}");
    let observe = &refused["observe"];
    assert_eq!(observe["is_error"], false);
    assert!(observe["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("File name") && t.contains("\"label\":3")));
    assert_eq!(observe["content"][1]["type"], "image");
    assert_eq!(observe["content"][1]["mime"], "image/png");
    assert_eq!(observe["content"][1]["png"], true);
    assert_eq!(refused["act"]["is_error"], true);
    assert!(refused["act"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("refused") && t.contains("--allow-actions")));
    assert!(!refused["after"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .contains("from python"));

    let allowed = run(true);
    assert_eq!(allowed["act"]["is_error"], false, "{}", allowed["act"]);
    assert!(allowed["after"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("from python")));
}

fn agents_config(workdir: &Path, extra: &str) -> String {
    format!(
        "[agents]\nshell = true\nshell_workdir = {}\n{extra}",
        toml_str(workdir)
    )
}

#[test]
fn the_host_assigns_a_subtask_to_the_shell_agent_then_one_to_an_app() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let script = vec![
        // The shell agent is listed after the windows, with its description.
        host(
            "ASSIGN",
            "shell",
            "Create notes.txt in the working directory",
            &["shell", "Linux shell agent"],
        ),
        line(
            "shell",
            json!({"Command": "touch notes.txt", "Status": "CONTINUE"}),
            &["Create notes.txt", work.to_str().expect("utf-8 path")],
        ),
        line(
            "shell",
            json!({"Command": "ls", "Status": "FINISH", "Result": "notes.txt created"}),
            &["exit 0"],
        ),
        host("ASSIGN", "Writer", "Name the file", &["notes.txt created"]),
        line(
            "app",
            json!({"ControlText": "File name", "Function": "set_text",
                   "Args": {"text": "notes.txt"}, "Status": "FINISH"}),
            &["File name"],
        ),
        host("FINISH", "", "", &[]),
    ];
    let run = run_session(tmp.path(), &script, &agents_config(&work, ""), &[]);
    run.assert_code(0);
    run.assert_sequence(&[
        ("host", "CONTINUE"),
        ("host", "ASSIGN"),
        ("shell", "CONTINUE"),
        ("shell", "CONTINUE"),
        ("shell", "FINISH"),
        ("host", "CONTINUE"),
        ("host", "ASSIGN"),
        ("app", "CONTINUE"),
        ("app", "FINISH"),
        ("host", "CONTINUE"),
        ("host", "FINISH"),
    ]);
    assert!(work.join("notes.txt").exists(), "{}", run.ctx());
    let steps = run.steps();
    assert_eq!(steps[2]["agent"], "ShellAgent");
    assert_eq!(steps[2]["action"]["args"]["command"], "touch notes.txt");
    assert_eq!(steps[2]["action"]["executed"], true);
}

#[test]
fn a_shell_agent_command_off_the_allow_list_is_held_and_not_run_when_rejected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    std::fs::write(work.join("keep.txt"), "precious").expect("write");
    let script = vec![
        host("ASSIGN", "shell", "Clean up", &[]),
        line(
            "shell",
            json!({"Command": "rm -f keep.txt", "Status": "CONTINUE"}),
            &[],
        ),
        host("FINISH", "", "", &["REJECTED"]),
    ];
    let run = run_session(
        tmp.path(),
        &script,
        &agents_config(&work, ""),
        &["--confirm", "no"],
    );
    run.assert_code(0);
    run.assert_sequence(&[
        ("host", "CONTINUE"),
        ("host", "ASSIGN"),
        ("shell", "CONTINUE"),
        ("shell", "CONFIRM"),
        ("shell", "FINISH"),
        ("host", "CONTINUE"),
        ("host", "FINISH"),
    ]);
    assert!(
        work.join("keep.txt").exists(),
        "the command ran: {}",
        run.ctx()
    );
    let steps = run.steps();
    assert_eq!(steps[2]["action"]["held"], true);
    assert!(steps[2]["action"]["sensitive"]
        .as_str()
        .is_some_and(|s| s.contains("allow-list")));
    assert_eq!(steps[3]["action"]["decision"], "Reject");
}

#[test]
fn the_operator_agent_clicks_and_types_at_coordinates() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = "[agents]\noperator_apps = [\"Writer\"]\n";
    // In the fixture, Writer's third control (File name) is at window y 100..124.
    let script = vec![
        host("ASSIGN", "Writer", "Type the file name", &[]),
        line(
            "operator",
            json!({"Action": "click", "X": 200, "Y": 110, "Status": "CONTINUE"}),
            &["Type the file name", "480x"],
        ),
        line(
            "operator",
            json!({"Action": "type", "X": 200, "Y": 110, "Text": "q3.csv", "Status": "FINISH",
                   "Result": "typed"}),
            &["clicked at (200, 110)"],
        ),
        host("FINISH", "", "", &["typed"]),
    ];
    let run = run_session(tmp.path(), &script, config, &[]);
    run.assert_code(0);
    run.assert_sequence(&[
        ("host", "CONTINUE"),
        ("host", "ASSIGN"),
        ("operator", "CONTINUE"),
        ("operator", "CONTINUE"),
        ("operator", "FINISH"),
        ("host", "CONTINUE"),
        ("host", "FINISH"),
    ]);
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(run.out.join("desktop_final.json")).expect("final state"),
    )
    .expect("json");
    let actions = state["actions"].as_array().expect("actions");
    assert_eq!(actions[0]["action"], "click_at", "{state}");
    assert_eq!(actions[1]["action"], "type_keys", "{state}");
    assert_eq!(actions[1]["control"], "name", "{state}");
}

#[test]
fn bad_mcp_and_agents_config_exit_2_saying_what_to_fix() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = vec![host("FINISH", "", "", &[])];
    for (config, says) in [
        (
            "[mcp.servers.x]\napps = [\"Writer\"]\n",
            "exactly one of `command`",
        ),
        (
            "[agents]\nshell = true\nshell_workdir = \"/nonexistent/dir\"\n",
            "not a directory",
        ),
        ("[agents]\nshel = true\n", "shel"),
    ] {
        let run = run_session(tmp.path(), &script, config, &[]);
        run.assert_code(2);
        assert!(run.stderr.contains(says), "{config}: {}", run.stderr);
    }
}
