//! The control socket (`<out>/control.sock`, docs/console.md "The control socket") on the
//! real binary with the simulated desktop and scripted models: CONFIRM and PENDING answered
//! through the socket, the first answer winning over a late one, cancel as Ctrl-C, the
//! socket's mode and lifetime, its limits (connections, watches, request lines) and its uid
//! check (another user's process), and `--confirm ask` without a terminal unchanged when the
//! session is not the console's.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::calculator::*;
use common::*;
use serde_json::{json, Value};

/// Longest wait for anything the session does (the machine may be loaded).
const WAIT: Duration = Duration::from_secs(60);

/// A running `ufo run` in a temporary folder.
struct Session {
    child: Child,
    out: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Session {
    /// Start `ufo run` on scenario folder `dir` with `extra` options; `console`: with
    /// `UFO_CONSOLE=1` as `ufo serve` starts its sessions.
    fn start(dir: &Path, extra: &[&str], console: bool) -> Session {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out = tmp.path().join("out");
        let request = std::fs::read_to_string(dir.join("request.txt")).expect("request.txt");
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
        for (k, _) in std::env::vars() {
            if k.starts_with("UFO_") {
                cmd.env_remove(k);
            }
        }
        if console {
            cmd.env("UFO_CONSOLE", "1");
        }
        cmd.env("UFO_PROMPT_TIMEOUT_SECS", "60")
            .env(
                "XDG_DATA_HOME",
                std::env::temp_dir().join(format!("ufo-tests-no-data-{}", std::process::id())),
            )
            .current_dir(tmp.path())
            .arg("run")
            .arg("--desktop")
            .arg(format!("sim:{}", dir.join("desktop.json").display()))
            .arg("--llm")
            .arg(format!("script:{}", dir.join("script.jsonl").display()))
            .arg("--config")
            .arg(dir.join("ufo.toml"))
            .args(extra)
            .arg("--out")
            .arg(&out)
            .arg(request.trim())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("ufo starts");
        Session {
            child,
            out,
            _tmp: tmp,
        }
    }

    fn socket(&self) -> PathBuf {
        self.out.join("control.sock")
    }

    /// A connection to the session's socket, once it is there.
    fn connect(&mut self) -> Conn {
        let start = Instant::now();
        loop {
            if let Ok(s) = UnixStream::connect(self.socket()) {
                s.set_read_timeout(Some(WAIT)).expect("timeout");
                return Conn {
                    reader: BufReader::new(s.try_clone().expect("clone")),
                    writer: s,
                };
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the session ended ({status}) before its control socket was there");
            }
            assert!(start.elapsed() < WAIT, "no control socket within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The open question, once the session asks one (polling `state`).
    fn wait_asking(&mut self, conn: &mut Conn) -> Value {
        let start = Instant::now();
        loop {
            let state = conn.call(json!({"op": "state"}));
            assert_eq!(state["ok"], true, "{state}");
            if !state["asking"].is_null() {
                return state["asking"].clone();
            }
            assert!(start.elapsed() < WAIT, "no question within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait for the end: the exit code and stderr.
    fn finish(mut self) -> Finished {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if start.elapsed() > WAIT {
                let _ = self.child.kill();
                panic!("the session did not end within {WAIT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        Finished {
            code: status.code().unwrap_or(-1),
            stderr,
            out: self.out.clone(),
            _session: self,
        }
    }
}

struct Finished {
    code: i32,
    stderr: String,
    out: PathBuf,
    _session: Session,
}

impl Finished {
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.out.join("events.jsonl"))
            .expect("events.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }

    fn records(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// The simulated desktop's actions as (control, action).
    fn actions(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.out.join("desktop_final.json"))
            .expect("desktop_final.json");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        v["actions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|a| (s(&a["control"]), s(&a["action"])))
            .collect()
    }

    fn final_value(&self, app: &str, control: &str) -> Value {
        let text = std::fs::read_to_string(self.out.join("desktop_final.json"))
            .expect("desktop_final.json");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        v["apps"]
            .as_array()
            .and_then(|apps| apps.iter().find(|a| a["name"] == app))
            .and_then(|a| a["controls"].as_array())
            .and_then(|cs| cs.iter().find(|c| c["id"] == control))
            .map(|c| c["value"].clone())
            .unwrap_or(Value::Null)
    }

    fn ctx(&self) -> String {
        format!("exit {}\n{}", self.code, self.stderr)
    }
}

struct Conn {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Conn {
    fn send_raw(&mut self, line: &[u8]) -> Value {
        self.writer.write_all(line).expect("send");
        self.writer.write_all(b"\n").expect("send");
        self.read()
    }

    fn call(&mut self, request: Value) -> Value {
        self.send_raw(request.to_string().as_bytes())
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a response line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }
}

/// Whether the held click on Delete All reached the simulated desktop.
fn clicked_delete_all(f: &Finished) -> bool {
    f.actions()
        .iter()
        .any(|(c, func)| c == "delete_all" && func == "click")
}

#[test]
fn a_confirm_approved_through_the_socket_runs_the_held_action() {
    let mut session = Session::start(
        &scenario_dir("app_confirm_approved"),
        &["--confirm", "ask"],
        true,
    );
    let mut conn = session.connect();
    // the socket is the user's alone
    let mode = std::fs::metadata(session.socket())
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    let asking = session.wait_asking(&mut conn);
    assert_eq!(asking["id"], 1, "{asking}");
    assert_eq!(asking["kind"], "confirm", "{asking}");
    assert_eq!(asking["agent"], "AppAgent/Writer", "{asking}");
    assert!(s(&asking["text"]).contains("Delete All"), "{asking}");
    let state = conn.call(json!({"op": "state"}));
    assert_eq!(state["desktop"], "sim", "{state}");
    assert_eq!(state["cancelled"], false, "{state}");
    assert!(state["pid"].is_u64() && state["taken"].is_null(), "{state}");
    // a bad line and the private-desktop ops are refused, the connection goes on
    let bad = conn.send_raw(b"{\"op\":\"fly\"}");
    assert_eq!(bad["ok"], false, "{bad}");
    assert!(s(&bad["error"]).contains("unknown op"), "{bad}");
    for op in ["takeover", "view"] {
        let r = conn.call(json!({"op": op}));
        assert_eq!(r["ok"], false, "{r}");
        assert!(s(&r["error"]).contains("--desktop private"), "{r}");
    }
    let r = conn.call(json!({"op": "answer", "id": 1, "text": "yes"}));
    assert_eq!(r["ok"], false, "a text does not answer a confirm: {r}");
    let r = conn.call(json!({"op": "answer", "id": 2, "approve": true}));
    assert!(s(&r["error"]).contains("not the open question"), "{r}");
    let r = conn.call(json!({"op": "answer", "id": 1, "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    let socket = session.socket();
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert!(clicked_delete_all(&f), "{:?}\n{}", f.actions(), f.ctx());
    let ask = &f.records("ask")[0];
    assert_eq!(
        (
            ask["id"].clone(),
            ask["kind"].clone(),
            ask["ts"].is_string()
        ),
        (json!(1), json!("confirm"), true),
        "{ask}"
    );
    let answered = &f.records("answered")[0];
    assert_eq!(answered["id"], 1, "{answered}");
    assert_eq!(answered["by"], "console", "{answered}");
    assert_eq!(answered["value"], true, "{answered}");
    // gone after the session
    assert!(!socket.exists(), "the socket outlived the session");
    // the report shows the question and who answered it
    let report = ufo()
        .arg("report")
        .arg(&f.out)
        .output()
        .expect("ufo report");
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let html = std::fs::read_to_string(f.out.join("report.html")).unwrap_or_default();
    assert!(
        html.contains("Question 1 answered from the console: approved"),
        "the report lacks the answer"
    );
}

#[test]
fn a_confirm_rejected_through_the_socket_never_runs() {
    let mut session = Session::start(
        &scenario_dir("app_confirm_rejected"),
        &["--confirm", "ask"],
        true,
    );
    let mut conn = session.connect();
    let asking = session.wait_asking(&mut conn);
    let r = conn.call(json!({"op": "answer", "id": asking["id"], "approve": false}));
    assert_eq!(r, json!({"ok": true}));
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert!(!clicked_delete_all(&f), "{:?}", f.actions());
    let answered = &f.records("answered")[0];
    assert_eq!(
        (answered["by"].clone(), answered["value"].clone()),
        (json!("console"), json!(false))
    );
    let confirm = f
        .records("step")
        .into_iter()
        .find(|e| e["state"] == "CONFIRM")
        .expect("a CONFIRM step");
    assert_eq!(confirm["action"]["decision"], "Reject", "{confirm}");
}

#[test]
fn a_pending_question_answered_through_the_socket_reaches_the_blackboard() {
    // the scenario's answers.txt is not given: only the socket answers
    let mut session = Session::start(&scenario_dir("app_pending_answer"), &[], true);
    let mut conn = session.connect();
    let asking = session.wait_asking(&mut conn);
    assert_eq!(asking["kind"], "pending", "{asking}");
    assert_eq!(asking["text"], "Which file name should the export use?");
    let r = conn.call(json!({"op": "answer", "id": asking["id"], "approve": true}));
    assert_eq!(r["ok"], false, "a decision does not answer a question: {r}");
    let r = conn
        .call(json!({"op": "answer", "id": asking["id"], "text": "quarterly-summary-2026.pdf"}));
    assert_eq!(r, json!({"ok": true}));
    let f = session.finish();
    // the script's next prompt `expect`s the answer: it reached the blackboard
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert_eq!(
        f.final_value("Writer", "file_name"),
        "quarterly-summary-2026.pdf"
    );
    let pending = f
        .records("step")
        .into_iter()
        .find(|e| e["state"] == "PENDING")
        .expect("a PENDING step");
    assert_eq!(
        pending["action"]["answers"],
        json!(["quarterly-summary-2026.pdf"]),
        "{pending}"
    );
    let answered = &f.records("answered")[0];
    assert_eq!(answered["by"], "console", "{answered}");
}

/// A question, then a confirmation: the answers file answers the first at once, so the
/// socket's answer to it comes second and is refused; the second waits for the socket.
#[test]
fn an_answers_file_first_makes_the_sockets_answer_late() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    question_then_confirm(dir);
    std::fs::write(dir.join("answers.txt"), "typed.pdf\n").expect("answers");
    let answers = dir.join("answers.txt").display().to_string();
    let mut session = Session::start(dir, &["--confirm", "ask", "--answers", &answers], true);
    let mut conn = session.connect();
    // the confirmation (question 2) is open once the file answered question 1
    let asking = session.wait_asking(&mut conn);
    assert_eq!(
        (asking["id"].clone(), asking["kind"].clone()),
        (json!(2), json!("confirm"))
    );
    let late = conn.call(json!({"op": "answer", "id": 1, "text": "from-the-console.pdf"}));
    assert_eq!(late["ok"], false, "{late}");
    assert_eq!(
        late["error"],
        "question 1 was already answered (by the answers file)"
    );
    let r = conn.call(json!({"op": "answer", "id": 2, "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    let by: Vec<(Value, Value, Value)> = f
        .records("answered")
        .iter()
        .map(|a| (a["id"].clone(), a["by"].clone(), a["value"].clone()))
        .collect();
    assert_eq!(
        by,
        [
            (json!(1), json!("answers_file"), json!("typed.pdf")),
            (json!(2), json!("console"), json!(true)),
        ]
    );
    assert!(clicked_delete_all(&f), "{:?}", f.actions());
}

#[test]
fn cancel_through_the_socket_ends_the_session_as_ctrl_c() {
    let mut session = Session::start(
        &scenario_dir("app_confirm_approved"),
        &["--confirm", "ask"],
        true,
    );
    let mut conn = session.connect();
    // a watcher sees the question, then the cancellation
    let mut watcher = session.connect();
    let first = watcher.call(json!({"op": "watch"}));
    assert_eq!(first["ok"], true, "{first}");
    session.wait_asking(&mut conn);
    let r = conn.call(json!({"op": "cancel"}));
    assert_eq!(r, json!({"ok": true}));
    let start = Instant::now();
    loop {
        let pushed = watcher.read();
        if pushed["cancelled"] == true {
            break;
        }
        assert!(start.elapsed() < WAIT, "no cancelled state pushed");
    }
    let f = session.finish();
    assert_eq!(f.code, 130, "{}", f.ctx());
    let events = f.events();
    let end = events.last().expect("records");
    assert_eq!(end["type"], "session_end", "{end}");
    assert_eq!(end["status"], "CANCELLED", "{end}");
    assert!(!clicked_delete_all(&f), "{:?}", f.actions());
    let answered = &f.records("answered")[0];
    assert_eq!(answered["by"], "cancelled", "{answered}");
    assert!(
        f.out.join("checkpoint.json").exists(),
        "no checkpoint to resume"
    );
}

/// Without `UFO_CONSOLE` nothing changes: `--confirm ask` without a terminal rejects at once
/// (it does not wait out the prompt timeout for the socket), recorded as the policy's answer.
#[test]
fn without_the_console_ask_without_a_terminal_still_rejects_at_once() {
    let started = Instant::now();
    let session = Session::start(
        &scenario_dir("app_confirm_rejected"),
        &["--confirm", "ask"],
        false,
    );
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "it waited for an answer: {:?}",
        started.elapsed()
    );
    assert!(!clicked_delete_all(&f), "{:?}", f.actions());
    let answered = &f.records("answered")[0];
    assert_eq!(
        (answered["by"].clone(), answered["value"].clone()),
        (json!("policy"), json!(false))
    );
    assert!(!f.out.join("control.sock").exists());
}

/// A stale socket file a killed session left behind is replaced.
#[test]
fn a_stale_socket_file_is_replaced() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).expect("out");
    let stale = std::os::unix::net::UnixListener::bind(out.join("control.sock")).expect("bind");
    drop(stale);
    let dir = scenario_dir("app_confirm_approved");
    let r = ufo()
        .current_dir(tmp.path())
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--confirm")
        .arg("yes")
        .arg("--force")
        .arg("--out")
        .arg(&out)
        .arg("Delete all content of the report")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("control socket"), "{stderr}");
    assert!(!out.join("control.sock").exists());
}

/// The scenario of [`an_answers_file_first_makes_the_sockets_answer_late`]: a question, then
/// a confirmation, in folder `dir`.
fn question_then_confirm(dir: &Path) {
    for f in ["desktop.json", "ufo.toml"] {
        std::fs::copy(scenario_dir("app_pending_answer").join(f), dir.join(f)).expect("copy");
    }
    std::fs::write(dir.join("request.txt"), "Export the report").expect("request");
    write_script(
        dir,
        &[
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Current Sub-Task": "Export the report", "ControlLabel": "1",
                "ControlText": "Writer", "Status": "ASSIGN"}}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "PENDING", "Questions": ["Which file name?"]}}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "ControlLabel": "3", "ControlText": "Delete All", "Function": "click",
                "Args": {}, "Status": "CONFIRM"}, "expect": ["typed.pdf"]}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH", "Result": "done"}}),
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}}),
        ],
    );
}

/// With a terminal, the terminal and the socket race: the terminal answers the question, so
/// the socket's answer to it is refused; the socket answers the confirmation, and the
/// terminal's prompt says so and stops waiting.
#[test]
fn the_terminal_and_the_socket_race_and_each_is_told_when_it_lost() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    question_then_confirm(dir);
    let out = dir.join("out");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    for (k, _) in std::env::vars() {
        if k.starts_with("UFO_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env("UFO_PROMPT_TIMEOUT_SECS", "60")
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--config")
        .arg(dir.join("ufo.toml"))
        .arg("--confirm")
        .arg("ask")
        .arg("--out")
        .arg(&out)
        .arg("Export the report");
    let mut pty = rexpect::session::spawn_command(cmd, Some(60_000)).expect("spawn in a pty");
    pty.exp_string("asks: Which file name?")
        .expect("the question on the terminal");
    pty.send_line("typed.pdf").expect("type");
    pty.exp_string("Approve? [y/N]")
        .expect("the confirmation on the terminal");
    let stream = UnixStream::connect(out.join("control.sock")).expect("the socket");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut conn = Conn {
        reader: BufReader::new(stream.try_clone().expect("clone")),
        writer: stream,
    };
    let late = conn.call(json!({"op": "answer", "id": 1, "text": "console.pdf"}));
    assert_eq!(
        late["error"], "question 1 was already answered (by the terminal)",
        "{late}"
    );
    let r = conn.call(json!({"op": "answer", "id": 2, "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    pty.exp_string("(answered from the console)")
        .expect("the terminal is told");
    pty.exp_string("approved").expect("the decision shown");
    pty.exp_eof().expect("the end");
    let code = match pty.process.wait() {
        Ok(rexpect::process::wait::WaitStatus::Exited(_, c)) => c,
        other => panic!("ufo did not exit normally: {other:?}"),
    };
    assert_eq!(code, 0);
    let answered: Vec<String> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "answered")
        .map(|e| format!("{}:{}:{}", e["id"], s(&e["by"]), e["value"]))
        .collect();
    assert_eq!(answered, ["1:terminal:\"typed.pdf\"", "2:console:true"]);
}

// ---------------------------------------------------------------------------------------------
// Live: the console takes a private desktop over (UFO_LIVE_TESTS=1)
// ---------------------------------------------------------------------------------------------

/// Issue 28: the console takes the private desktop over while the model decides the click on
/// "3" (its answer comes late, so the take-over lands between the observation and the
/// action). The agent drops that answer and pauses; the console views the screen, clicks the
/// calculator's "3" itself (found through pyatspi, not ufo) and hands back; the agent observes
/// again and goes on with "0" and "=": the display shows 42 (12 + 30, with the person's 3),
/// not 342 (had the dropped answer run too).
#[tokio::test]
async fn the_console_takes_a_private_desktop_over_clicks_and_hands_back() {
    if !ufo_desktop::testing::require_live(
        "the_console_takes_a_private_desktop_over_clicks_and_hands_back",
    ) {
        return;
    }
    let (server, seen, slow, last) =
        twelve_plus_thirty_model(Duration::from_secs(4), Duration::from_secs(3)).await;
    let base = format!("{}/v1", server.uri());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let o = out.clone();
    let (code, stderr, texts_at_end) = tokio::task::spawn_blocking(move || {
        let mut child = Killed(
            Command::new(assert_cmd::cargo::cargo_bin("ufo"))
                .args(["run", "--desktop", "private", "--scratch-home"])
                .args(["--llm", "openai:fake-model", "--out"])
                .arg(&o)
                .arg("Compute 12 + 30")
                .env("UFO_LLM_BASE_URL", base)
                .env("OPENAI_API_KEY", "sk-ufo-test-not-a-key")
                .env_remove("UFO_LLM_API_KEY")
                .env_remove("UFO_LLM")
                .env_remove("UFO_CONSOLE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("ufo starts"),
        );
        let events = || std::fs::read_to_string(o.join("events.jsonl")).unwrap_or_default();
        let requests = || seen.load(std::sync::atomic::Ordering::SeqCst);
        // the slow answer is being awaited: the observation is made, the action not yet
        wait_value("the slow model call", Duration::from_secs(120), || {
            (requests() > slow).then_some(())
        });
        let stream = UnixStream::connect(o.join("control.sock")).expect("the control socket");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut conn = Conn {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        };
        let state = conn.call(json!({"op": "state"}));
        assert_eq!(state["desktop"], "private", "{state}");
        // not taken yet: no view, no hand-back
        for op in ["view", "handback"] {
            let r = conn.call(json!({"op": op}));
            assert_eq!(r["ok"], false, "{r}");
            assert!(s(&r["error"]).contains("takeover"), "{r}");
        }
        let r = conn.call(json!({"op": "takeover"}));
        assert_eq!(r["ok"], true, "{r}");
        wait_value("the takeover record", Duration::from_secs(30), || {
            events().contains("\"takeover\"").then_some(())
        });
        assert_eq!(conn.call(json!({"op": "state"}))["taken"], "console");
        // the whole private screen
        let view = conn.call(json!({"op": "view"}));
        assert_eq!(view["ok"], true, "{}", s(&view["error"]));
        let png = base64_decode(&s(&view["png"]));
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let info = decoder.read_info().expect("a PNG");
        let (w, h) = (info.info().width, info.info().height);
        assert_eq!((w, h), (1280, 1024), "the private screen's size");
        assert_eq!(
            (view["width"].as_u64(), view["height"].as_u64()),
            (Some(1280), Some(1024))
        );
        // the console clicks the calculator's 3
        let (x, y) = wait_value(
            "the 3 button in ufo inspect",
            Duration::from_secs(30),
            || button_centre("3"),
        );
        let steps = events().matches("\"type\":\"step\"").count();
        let r = conn.call(json!({"op": "input", "click": {"x": x, "y": y, "button": 1}}));
        assert_eq!(r, json!({"ok": true}));
        wait_value("12+3 on the display", Duration::from_secs(30), || {
            display_texts().filter(|t| t.iter().any(|t| t.contains("12+3")))
        });
        // keys (in ufo's key syntax) and text go to the focused calculator too: the 3 is
        // taken back and typed again
        let r = conn.call(json!({"op": "input", "keys": "{backspace}"}));
        assert_eq!(r, json!({"ok": true}), "{r}");
        wait_value("12+ on the display", Duration::from_secs(30), || {
            display_texts().filter(|t| t.iter().any(|t| t.trim() == "12+"))
        });
        let r = conn.call(json!({"op": "input", "text": "3"}));
        assert_eq!(r, json!({"ok": true}), "{r}");
        wait_value("12+3 on the display again", Duration::from_secs(30), || {
            display_texts().filter(|t| t.iter().any(|t| t.contains("12+3")))
        });
        // while taken over, nothing runs
        assert_eq!(events().matches("\"type\":\"step\"").count(), steps);
        assert!(!events().contains("\"handback\""));
        let r = conn.call(json!({"op": "handback"}));
        assert_eq!(r, json!({"ok": true}));
        // the agent goes on with 0 and =; its FINISH is awaited while the display is read
        wait_value("the last model call", Duration::from_secs(120), || {
            (requests() > last).then_some(())
        });
        let texts = wait_value(
            "the display after =",
            Duration::from_secs(30),
            display_texts,
        );
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Ok(Some(status)) = child.0.try_wait() {
                break status;
            }
            if Instant::now() > deadline {
                panic!("the session did not end after the hand-back:\n{}", events());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut stderr = String::new();
        if let Some(mut e) = child.0.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        (status.code(), stderr, texts)
    })
    .await
    .expect("join");
    assert_eq!(code, Some(0), "{stderr}");
    // the person's change is respected: 12 + 30 with their 3, not 12 + 330
    assert!(
        texts_at_end.iter().any(|t| t.trim() == "42"),
        "the display does not show 42: {texts_at_end:?}"
    );
    let events: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |kind: &str| {
        events
            .iter()
            .position(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} record: {events:?}"))
    };
    let (t, h) = (at("takeover"), at("handback"));
    assert_eq!(h, t + 1, "a step ran while taken over: {events:?}");
    assert_eq!(events[t]["input"], "taken over from the console");
    assert_eq!(events[h]["how"], "handed_back", "{}", events[h]);
    let dropped = &events[t - 1];
    assert_eq!(dropped["action"]["discarded"], "takeover", "{dropped}");
    assert_eq!(dropped["action"]["executed"], false, "{dropped}");
    assert!(
        !out.join("control.sock").exists(),
        "the socket outlived the session"
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

/// The socket's bounds: 16 connections at once (the 17th is told so), request lines of at
/// most 64 KiB (a longer one is refused and its connection closed).
#[test]
fn the_socket_bounds_its_connections_and_request_lines() {
    let mut session = Session::start(
        &scenario_dir("app_confirm_approved"),
        &["--confirm", "ask"],
        true,
    );
    let mut first = session.connect();
    let asking = session.wait_asking(&mut first);
    let mut open = Vec::new();
    for _ in 1..16 {
        let mut c = session.connect();
        assert_eq!(c.call(json!({"op": "state"}))["ok"], true);
        open.push(c);
    }
    let mut extra = session.connect();
    let refused = extra.read();
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(s(&refused["error"]).contains("at most 16"), "{refused}");
    drop(open);
    drop(extra);
    // once the server has seen them close, a connection is served again
    let start = Instant::now();
    let mut conn = loop {
        let mut c = session.connect();
        if c.call(json!({"op": "state"}))["ok"] == true {
            break c;
        }
        assert!(
            start.elapsed() < WAIT,
            "the closed connections were not freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // a line over 64 KiB: refused, and the connection closed
    let long = format!("{{\"op\":\"state\",\"pad\":\"{}\"}}", "x".repeat(70_000));
    let r = conn.send_raw(long.as_bytes());
    assert_eq!(r["ok"], false, "{r}");
    assert!(s(&r["error"]).contains("longer than 65536 bytes"), "{r}");
    let mut rest = String::new();
    assert_eq!(conn.reader.read_line(&mut rest).unwrap_or(0), 0, "{rest}");
    // the session still answers
    let r = first.call(json!({"op": "answer", "id": asking["id"], "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
}

/// Of the 16 connections, at most 12 may `watch`: the 13th watch is told so and closed, while
/// the connections left over still serve requests, and an answer gets through.
#[test]
fn the_thirteenth_watch_is_refused_and_an_answer_still_gets_through() {
    let mut session = Session::start(
        &scenario_dir("app_confirm_approved"),
        &["--confirm", "ask"],
        true,
    );
    let mut first = session.connect();
    let asking = session.wait_asking(&mut first);
    let mut watches = Vec::new();
    for k in 0..12 {
        let mut w = session.connect();
        let state = w.call(json!({"op": "watch"}));
        assert_eq!(state["ok"], true, "watch {k}: {state}");
        assert_eq!(state["asking"]["id"], asking["id"], "watch {k}: {state}");
        watches.push(w);
    }
    // 14 connections in all, 2 below the bound: only the watch is refused
    let mut thirteenth = session.connect();
    let refused = thirteenth.call(json!({"op": "watch"}));
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        s(&refused["error"]).contains("at most 12 watches"),
        "{refused}"
    );
    let mut rest = String::new();
    assert_eq!(
        thirteenth.reader.read_line(&mut rest).unwrap_or(0),
        0,
        "the refused watch is closed: {rest}"
    );
    let mut other = session.connect();
    assert_eq!(other.call(json!({"op": "state"}))["ok"], true);
    let r = first.call(json!({"op": "answer", "id": asking["id"], "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    // a watch sees the question go
    let mut seen = watches[0].read();
    for _ in 0..20 {
        if seen["asking"].is_null() {
            break;
        }
        seen = watches[0].read();
    }
    assert!(seen["asking"].is_null(), "{seen}");
    drop(watches);
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert!(clicked_delete_all(&f), "{:?}\n{}", f.actions(), f.ctx());
}

/// The variable that makes [`peer_of_another_user`] act: the socket to connect to.
const PEER_SOCKET: &str = "UFO_TEST_PEER_SOCKET";
/// The user the peer becomes (`nobody`).
const PEER_UID: u32 = 65534;

/// The other user's side of [`another_users_process_is_closed_without_an_answer`]: that test
/// runs this binary again, as root, with [`PEER_SOCKET`] set; this drops to uid and gid
/// 65534 (`nobody`), connects, asks for the state and prints one `peer:` line saying what came
/// back. Without the variable (every ordinary run) it does nothing.
#[test]
fn peer_of_another_user() {
    let Some(path) = std::env::var_os(PEER_SOCKET) else {
        return;
    };
    use nix::unistd::{setgid, setgroups, setuid, Gid, Uid};
    setgroups(&[]).expect("drop the groups");
    setgid(Gid::from_raw(PEER_UID)).expect("setgid");
    setuid(Uid::from_raw(PEER_UID)).expect("setuid");
    assert_eq!(nix::unistd::geteuid().as_raw(), PEER_UID);
    match UnixStream::connect(&path) {
        Err(e) => println!("peer: cannot connect: {e}"),
        Ok(mut stream) => {
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            // (the server may have closed already: then the write fails, which is the point)
            let _ = stream.write_all(b"{\"op\":\"state\"}\n");
            let mut got = Vec::new();
            let read = std::io::Read::read_to_end(&mut stream, &mut got);
            println!(
                "peer: connected; read {:?}; answer {:?}",
                read.map_err(|e| e.kind()),
                String::from_utf8_lossy(&got)
            );
        }
    }
}

/// A process of another user that reaches the socket file (here its mode is widened on
/// purpose) is closed without a word: the socket checks each peer's uid (SO_PEERCRED), not
/// only the file's mode. The session still serves its own user. Needs root, to run a
/// process as `nobody`.
#[test]
fn another_users_process_is_closed_without_an_answer() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "skipped: another_users_process_is_closed_without_an_answer runs a process as \
             another user (nobody), which needs root"
        );
        return;
    }
    let mut session = Session::start(
        &scenario_dir("app_confirm_approved"),
        &["--confirm", "ask"],
        true,
    );
    let mut conn = session.connect();
    let asking = session.wait_asking(&mut conn);
    let socket = session.socket();
    // open every folder on the way and the socket itself to everyone: the uid check alone
    // stands between the other user and the session
    let tmp = session
        .out
        .parent()
        .expect("the temporary folder")
        .to_path_buf();
    for (path, mode) in [(&tmp, 0o755), (&session.out, 0o755), (&socket, 0o666)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let peer = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "peer_of_another_user", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(PEER_SOCKET, &socket)
        .output()
        .expect("the peer runs");
    let said = String::from_utf8_lossy(&peer.stdout).into_owned();
    // (libtest may print its own `test NAME ... ` before it on the line)
    let line = said
        .lines()
        .find_map(|l| l.find("peer: ").map(|at| &l[at..]))
        .unwrap_or_else(|| {
            panic!(
                "the peer printed no line: {said}{}",
                String::from_utf8_lossy(&peer.stderr)
            )
        });
    assert!(line.starts_with("peer: connected;"), "{line}");
    assert!(
        line.ends_with("answer \"\""),
        "another user got an answer: {line}"
    );
    // the session's own user is still served, and the held action runs once approved
    let r = conn.call(json!({"op": "answer", "id": asking["id"], "approve": true}));
    assert_eq!(r, json!({"ok": true}));
    let f = session.finish();
    assert_eq!(f.code, 0, "{}", f.ctx());
    assert!(clicked_delete_all(&f), "{:?}\n{}", f.actions(), f.ctx());
}
