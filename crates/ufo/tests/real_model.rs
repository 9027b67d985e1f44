//! ufo against a real model server (issue 45): llama.cpp's OpenAI-compatible server
//! (llama-cpp-python) serving SmolLM2-135M-Instruct on loopback, the real `ufo` binary driving
//! a small simulated desktop with `--llm openai:<model>`. Installed by
//! `scripts/test-deps.sh install_llama`; without it the tests say so and pass, unless
//! `UFO_MODEL_TESTS=1` (scripts/test.sh), where they fail.
//!
//! What ufo sent is read on the wire, by a proxy of the test's own in front of the server
//! (common/llama.rs); what the server answered, from the server's own log; what happened on
//! the desktop, from desktop_final.json. A re-ask is a request that carries the model's
//! previous answer back (an assistant message): the wire count must equal the re-asks ufo
//! wrote into its prompt transcripts (`--- re-ask ---`, docs/formats.md).
//!
//! - `schema_session_every_answer_parses`: `UFO_STRUCTURED_OUTPUT=schema`, every request
//!   carries the response schema and no answer is re-asked for its form (a re-ask is for a
//!   move the state machine refused, if any: the re-ask's words tell them apart);
//! - `off_session_records_its_reasks`: `off`, no `response_format` sent; the number of re-asks
//!   it took is printed and must match on the wire and in the trajectory;
//! - `recorded_session_replays_offline`: a session recorded with `--record` replays with
//!   `--llm replay:DIR`, the server stopped, with the same steps and desktop actions;
//! - `server_killed_mid_answer_then_resume`: the server killed while the second call is in
//!   flight ends the session ERROR (exit 3) with a message naming the server; started again on
//!   the same port, `ufo resume` goes on from the trajectory.
//!
//! Measured on 2 cores busy with other builds: 61 to 86 s for the four tests (84 s the last
//! time, the schema session 0 re-asks, the `off` one 3). Before
//! `structured_output` was built each session here ended ERROR after 3 re-asks on its first
//! step (SmolLM2 leaves out required fields when only held to JSON).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::llama::{self, Installed, LlamaServer, Proxy, DESKTOP, MODEL_NAME, REQUEST};
use serde_json::Value;

/// Steps a session may take (a small model may never say FINISH).
const MAX_STEPS: &str = "6";

/// A session's longest run (each call takes seconds on 2 cores).
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// The `ufo` binary with the environment cleared of the person's settings, pointed at
/// `base_url`, in `mode` (`UFO_STRUCTURED_OUTPUT`).
fn ufo(base_url: &str, mode: &str) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") || key.starts_with("OPENAI_") {
            cmd.env_remove(key);
        }
    }
    cmd.env(
        "XDG_DATA_HOME",
        std::env::temp_dir().join(format!("ufo-tests-no-data-{}", std::process::id())),
    )
    .env("UFO_LLM_BASE_URL", base_url)
    .env("UFO_STRUCTURED_OUTPUT", mode)
    // a server that is gone is retried once, not for a minute
    .env("UFO_LLM_MAX_ATTEMPTS", "2")
    .stdin(Stdio::null());
    cmd
}

/// `ufo run` arguments for the test desktop written into `dir`.
fn run_args(dir: &Path, out: &Path, llm: &str, record: Option<&Path>) -> Vec<String> {
    let desktop = dir.join("desktop.json");
    let config = dir.join("ufo.toml");
    if !desktop.exists() {
        std::fs::write(&desktop, DESKTOP).expect("write desktop.json");
        std::fs::write(&config, llama::CONFIG).expect("write ufo.toml");
    }
    let mut a = vec![
        "run".to_string(),
        "--config".into(),
        config.display().to_string(),
        "--desktop".into(),
        format!("sim:{}", desktop.display()),
        "--llm".into(),
        llm.to_string(),
        "--max-steps".into(),
        MAX_STEPS.into(),
        "--out".into(),
        out.display().to_string(),
    ];
    if let Some(rec) = record {
        a.push("--record".into());
        a.push(rec.display().to_string());
    }
    a.push(REQUEST.into());
    a
}

/// A started `ufo`, its output going to files (a pipe nobody reads while it runs could fill
/// and stop it).
struct Running {
    child: std::process::Child,
    stdout: tempfile::NamedTempFile,
    stderr: tempfile::NamedTempFile,
}

fn start(mut cmd: Command) -> Running {
    let stdout = tempfile::NamedTempFile::new().expect("stdout file");
    let stderr = tempfile::NamedTempFile::new().expect("stderr file");
    let child = cmd
        .stdout(stdout.reopen().expect("stdout file"))
        .stderr(stderr.reopen().expect("stderr file"))
        .spawn()
        .expect("ufo starts");
    Running {
        child,
        stdout,
        stderr,
    }
}

impl Running {
    /// Whether it has ended.
    fn ended(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Wait for the end, bounded by [`RUN_TIMEOUT`] (then it is killed and the test fails).
    fn wait(mut self) -> Output {
        let deadline = Instant::now() + RUN_TIMEOUT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "ufo did not end within {RUN_TIMEOUT:?}; stderr:\n{}",
                        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
                    );
                }
            }
        };
        Output {
            status,
            stdout: std::fs::read(self.stdout.path()).unwrap_or_default(),
            stderr: std::fs::read(self.stderr.path()).unwrap_or_default(),
        }
    }
}

/// Run to the end, bounded by [`RUN_TIMEOUT`].
fn finish(cmd: Command) -> Output {
    start(cmd).wait()
}

fn events(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap_or_else(|e| panic!("{}/events.jsonl: {e}", out.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("events.jsonl line is JSON"))
        .collect()
}

/// What a run did, for comparing a run with its replay.
fn behaviour(out: &Path) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| {
            format!(
                "{} {} {} {} {}",
                e["role"], e["state"], e["status"], e["action"], e["result"]
            )
        })
        .collect()
}

/// The trajectory's prompt transcripts (`step_NNNN_*_prompt.txt`).
fn transcripts(out: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name.starts_with("step_") && name.ends_with("_prompt.txt") {
                found.push(p);
            }
        }
    }
    found
}

/// Re-asks ufo recorded in its transcripts.
fn recorded_reasks(out: &Path) -> usize {
    transcripts(out)
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .matches("--- re-ask ---")
                .count()
        })
        .sum()
}

/// What each re-ask in the transcripts told the model (the parser's or the state machine's
/// error), in order.
fn reask_reasons(out: &Path) -> Vec<String> {
    let mut reasons = Vec::new();
    for p in transcripts(out) {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        for part in text.split("--- re-ask ---\n").skip(1) {
            let told = part.split("\n\n--- ").next().unwrap_or_default();
            let told = told
                .strip_prefix("Your answer could not be used: ")
                .unwrap_or(told);
            reasons.push(told.to_string());
        }
    }
    reasons
}

/// Re-asks seen on the wire: requests that send the model's previous answer back.
fn wire_reasks(bodies: &[Value]) -> usize {
    bodies
        .iter()
        .filter(|b| {
            b["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "assistant"))
        })
        .count()
}

/// Model calls the step records count.
fn recorded_calls(out: &Path) -> u64 {
    events(out)
        .iter()
        .filter(|e| e["type"] == "step")
        .filter_map(|e| e["llm"]["calls"].as_u64())
        .sum()
}

/// The session's end record (the last one of the file).
fn session_end(out: &Path) -> Value {
    events(out)
        .into_iter()
        .rev()
        .find(|e| e["type"] == "session_end")
        .unwrap_or_else(|| panic!("no session_end in {}/events.jsonl", out.display()))
}

/// The desktop's recorded actions (desktop_final.json, written by the simulated desktop).
fn desktop_actions(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("desktop_final.json")).expect("desktop_final");
    serde_json::from_str::<Value>(&text).expect("desktop_final is JSON")["actions"].clone()
}

/// ufo reads `UFO_STRUCTURED_OUTPUT`: a value it cannot mean is a configuration error
/// (exit 2) naming the variable.
fn assert_structured_output_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = ufo("http://127.0.0.1:9/v1", "not-a-mode");
    cmd.args(run_args(
        dir.path(),
        &dir.path().join("out"),
        "openai:x",
        None,
    ));
    let output = finish(cmd);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code() == Some(2) && stderr.contains("UFO_STRUCTURED_OUTPUT"),
        "a bad UFO_STRUCTURED_OUTPUT: exit {:?}, stderr:\n{stderr}",
        output.status.code()
    );
}

/// One session against a fresh server: the output, the request bodies on the wire, the
/// server (still running) and the trajectory folder.
struct Session {
    output: Output,
    bodies: Vec<Value>,
    server: LlamaServer,
    out: PathBuf,
    rec: PathBuf,
    dir: tempfile::TempDir,
}

fn session(inst: &Installed, mode: &str) -> Session {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = LlamaServer::start(inst, dir.path());
    let proxy = Proxy::start(server.port);
    let out = dir.path().join("out");
    let rec = dir.path().join("rec");
    let mut cmd = ufo(&proxy.base_url(), mode);
    cmd.args(run_args(
        dir.path(),
        &out,
        &format!("openai:{MODEL_NAME}"),
        Some(&rec),
    ));
    let output = finish(cmd);
    let bodies = proxy.bodies();
    Session {
        output,
        bodies,
        server,
        out,
        rec,
        dir,
    }
}

impl Session {
    fn ctx(&self) -> String {
        format!(
            "exit {:?}\n--- ufo stderr ---\n{}\n--- server log (tail) ---\n{}",
            self.output.status.code(),
            String::from_utf8_lossy(&self.output.stderr),
            self.server.log_tail(30)
        )
    }

    /// The checks every session passes: it ended with a status, its calls were all sent
    /// and answered, and its re-asks agree between the wire and the trajectory. Returns
    /// the re-asks.
    fn check_common(&self) -> usize {
        let end = session_end(&self.out);
        let status = end["status"].as_str().unwrap_or_default();
        assert!(
            ["FINISH", "FAIL", "ERROR"].contains(&status),
            "session_end without a status: {end}\n{}",
            self.ctx()
        );
        let expected_code = match status {
            "FINISH" => 0,
            "FAIL" => 1,
            _ => 3,
        };
        assert_eq!(
            self.output.status.code(),
            Some(expected_code),
            "{}",
            self.ctx()
        );
        // every call ufo counted went over the wire, and the server answered each
        assert!(
            !self.bodies.is_empty(),
            "no request reached the server\n{}",
            self.ctx()
        );
        // llama-cpp-python's server refuses OpenAI's `json_schema` form (HTTP 500, "Input
        // should be 'text' or 'json_object'"): ufo learns it once per model client and sends
        // the schema in the server's own form; the refused request is no model call
        let refused = self
            .bodies
            .iter()
            .filter(|b| b["response_format"]["type"] == "json_schema")
            .count();
        assert!(
            refused <= 2,
            "the schema's form refused {refused} times: learnt once per client\n{}",
            self.ctx()
        );
        assert_eq!(
            recorded_calls(&self.out),
            (self.bodies.len() - refused) as u64,
            "calls in the step records vs requests on the wire\n{}",
            self.ctx()
        );
        assert_eq!(
            self.server.answered(),
            self.bodies.len() - refused,
            "requests answered 200 in the server's log\n{}",
            self.ctx()
        );
        for b in &self.bodies {
            assert_eq!(b["model"], MODEL_NAME, "request for another model: {b}");
        }
        let reasks = recorded_reasks(&self.out);
        assert_eq!(
            reasks,
            wire_reasks(&self.bodies),
            "re-asks in the transcripts vs on the wire\n{}",
            self.ctx()
        );
        reasks
    }
}

#[test]
fn schema_session_every_answer_parses() {
    let Some(inst) = llama::installed() else {
        return;
    };
    let _turn = llama::one_at_a_time();
    let s = session(&inst, "schema");
    let reasks = s.check_common();
    eprintln!(
        "schema: {} calls, {reasks} re-asks, ended {}",
        s.bodies.len(),
        session_end(&s.out)["status"]
    );
    assert_structured_output_is_read();
    // The schema went to the server with every request (llama.cpp's server turns it into a
    // grammar), so every answer has the required fields.
    let answered = s
        .bodies
        .iter()
        .filter(|b| b["response_format"]["type"] != "json_schema");
    for b in answered {
        let rf = &b["response_format"];
        assert!(
            rf["schema"].is_object(),
            "a request without the response schema: {rf}\n{}",
            s.ctx()
        );
    }
    // Every answer has the schema's form: no re-ask for it (a move the state machine
    // refuses is re-asked whatever the form, and only printed).
    let reasons = reask_reasons(&s.out);
    assert_eq!(reasons.len(), reasks);
    let (format, moves): (Vec<&String>, Vec<&String>) =
        reasons.iter().partition(|r| llama::is_format_reask(r));
    eprintln!(
        "schema: {} re-asks for a refused move: {moves:?}",
        moves.len()
    );
    assert!(
        format.is_empty(),
        "{} re-asks for the answer's form with the schema sent: {format:?}\n{}",
        format.len(),
        s.ctx()
    );
}

/// The classification the schema test relies on, on the parser's own words.
#[test]
fn format_reasks_are_told_apart_from_refused_moves() {
    for (told, format) in [
        ("the answer is empty; answer with one JSON object", true),
        ("the answer is not valid JSON: EOF while parsing", true),
        ("the required field \"Status\" is missing", true),
        (
            "unknown Status \"GO\" for the HostAgent; use one of: CONTINUE",
            true,
        ),
        ("Args is a string that is not a JSON object: x", true),
        ("Actions[0] is not an object", true),
        (
            "Status FINISH is not allowed for the AppAgent in CONFIRM",
            false,
        ),
        (
            "Status ASSIGN needs ControlLabel or ControlText naming the window",
            false,
        ),
    ] {
        assert_eq!(llama::is_format_reask(told), format, "{told}");
    }
    // the parser's words are those the list above expects
    let e = ufo_core::response::HostResponse::parse("").unwrap_err();
    assert!(llama::is_format_reask(&e), "{e}");
    let e = ufo_core::response::HostResponse::parse(r#"{"Observation":"o"}"#).unwrap_err();
    assert!(llama::is_format_reask(&e), "{e}");
    let e = ufo_core::response::HostResponse::parse(
        r#"{"Observation":"o","Thought":"t","Status":"GO"}"#,
    )
    .unwrap_err();
    assert!(llama::is_format_reask(&e), "{e}");
}

#[test]
fn off_session_records_its_reasks() {
    let Some(inst) = llama::installed() else {
        return;
    };
    let _turn = llama::one_at_a_time();
    let s = session(&inst, "off");
    let reasks = s.check_common();
    eprintln!(
        "off: {} calls, {reasks} re-asks, ended {}",
        s.bodies.len(),
        session_end(&s.out)["status"]
    );
    assert_structured_output_is_read();
    for b in &s.bodies {
        assert!(
            b.get("response_format").is_none(),
            "structured_output = off sent {}\n{}",
            b["response_format"],
            s.ctx()
        );
    }
}

#[test]
fn recorded_session_replays_offline() {
    let Some(inst) = llama::installed() else {
        return;
    };
    let _turn = llama::one_at_a_time();
    // json mode: what the server constrains on every version of ufo
    let mut s = session(&inst, "json");
    s.check_common();
    s.server.kill();
    let out2 = s.dir.path().join("replayed");
    let mut cmd = ufo("http://127.0.0.1:9/v1", "json");
    cmd.args(run_args(
        s.dir.path(),
        &out2,
        &format!("replay:{}", s.rec.display()),
        None,
    ));
    let replayed = finish(cmd);
    assert_eq!(
        replayed.status.code(),
        s.output.status.code(),
        "replay's exit; its stderr:\n{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert_eq!(behaviour(&s.out), behaviour(&out2));
    assert_eq!(desktop_actions(&s.out), desktop_actions(&out2));
    assert_eq!(session_end(&s.out)["status"], session_end(&out2)["status"]);
}

#[test]
fn server_killed_mid_answer_then_resume() {
    let Some(inst) = llama::installed() else {
        return;
    };
    let _turn = llama::one_at_a_time();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = LlamaServer::start(&inst, dir.path());
    let port = server.port;
    let proxy = Proxy::start(port);
    let out = dir.path().join("out");
    let mut cmd = ufo(&proxy.base_url(), "json");
    cmd.args(run_args(
        dir.path(),
        &out,
        &format!("openai:{MODEL_NAME}"),
        None,
    ));
    let mut running = start(cmd);
    // The second call is on the wire: the server gets a moment to start answering, then dies.
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut second = false;
    while !second && !running.ended() && Instant::now() < deadline {
        second = proxy.wait_for_requests(2, Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(300));
    let answered_before = server.answered();
    server.kill();
    let output = running.wait();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        second,
        "ufo never made a second call; exit {:?}, stderr:\n{stderr}",
        output.status.code()
    );
    // the first call answered; the second one's streamed answer begun (its 200 is logged
    // when the stream starts) or not yet, but not ended: the exit below says it was cut
    assert!(
        (1..=2).contains(&answered_before),
        "the server had answered {answered_before} calls before it was killed"
    );
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    let server_addr = format!("127.0.0.1:{}", proxy.port);
    assert!(
        stderr.contains(&server_addr),
        "the error does not name the server ({server_addr}):\n{stderr}"
    );
    let end = session_end(&out);
    assert_eq!(end["status"], "ERROR", "{end}");
    let steps_before = behaviour(&out).len();

    // The server back on the same port: the session goes on from its trajectory.
    let server = LlamaServer::start_on(&inst, dir.path(), port);
    let mut cmd = ufo(&proxy.base_url(), "json");
    cmd.args(["resume".to_string(), out.display().to_string()]);
    let resumed = finish(cmd);
    let rstderr = String::from_utf8_lossy(&resumed.stderr).into_owned();
    let ev = events(&out);
    let starts: Vec<&Value> = ev.iter().filter(|e| e["type"] == "session_start").collect();
    assert_eq!(starts.len(), 2, "stderr:\n{rstderr}");
    assert_eq!(starts[1]["resumed"], true);
    let end = session_end(&out);
    let status = end["status"].as_str().unwrap_or_default().to_string();
    assert!(
        ["FINISH", "FAIL", "ERROR"].contains(&status.as_str()),
        "{end}"
    );
    assert!(
        server.answered() >= 1,
        "the resumed session asked the restarted server nothing; stderr:\n{rstderr}\n{}",
        server.log_tail(30)
    );
    assert!(
        behaviour(&out).len() > steps_before,
        "the resumed session took no step; stderr:\n{rstderr}"
    );
    eprintln!(
        "resume: {} steps before the kill, {} after, ended {status}",
        steps_before,
        behaviour(&out).len()
    );
}
