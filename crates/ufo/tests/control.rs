//! The control socket (`<out>/control.sock`, docs/console.md "The control socket") on the
//! real binary with the simulated desktop and scripted models: CONFIRM and PENDING answered
//! through the socket, the first answer winning over a late one, cancel as Ctrl-C, the
//! socket's mode and lifetime, and `--confirm ask` without a terminal unchanged when the
//! session is not the console's.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    for f in ["desktop.json", "ufo.toml"] {
        std::fs::copy(scenario_dir("app_pending_answer").join(f), dir.join(f)).expect("copy");
    }
    std::fs::write(dir.join("request.txt"), "Export the report").expect("request");
    std::fs::write(dir.join("answers.txt"), "from-the-file.pdf\n").expect("answers");
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
                "Args": {}, "Status": "CONFIRM"}, "expect": ["from-the-file.pdf"]}),
            json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH", "Result": "done"}}),
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}}),
        ],
    );
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
            (json!(1), json!("answers_file"), json!("from-the-file.pdf")),
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
