//! `ufo mcp serve` over its real stdio: malformed input lines are answered with JSON-RPC
//! errors and the server keeps serving.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `ufo mcp serve` on the peers fixture desktop, with its stdout lines on a channel.
fn serve() -> (Child, mpsc::Receiver<Value>) {
    let desktop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/desktop.json");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    cmd.args(["mcp", "serve", "--desktop"])
        .arg(format!("sim:{}", desktop.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd.spawn().expect("ufo starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v = serde_json::from_str(&line)
                .unwrap_or_else(|e| json!({"not_json": line, "error": e.to_string()}));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The next answer, within a generous bound (a dead server fails the test instead of hanging).
fn next(rx: &mpsc::Receiver<Value>, what: &str) -> Value {
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("no answer to {what}: {e} (the server stopped serving)"))
}

#[test]
fn ufo_mcp_serve_answers_a_garbage_line_with_a_parse_error_and_keeps_serving() {
    let (mut child, rx) = serve();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut send = |line: &str| {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server still reads its input");
    };

    send("this is not json {");
    let error = next(&rx, "the garbage line");
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    assert_eq!(error["id"], Value::Null, "{error}");
    assert_eq!(error["error"]["code"], -32700, "{error}");

    send(INITIALIZE);
    let init = next(&rx, "initialize");
    assert_eq!(init["id"], 1, "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "ufo", "{init}");

    send(INITIALIZED);
    send(r#"{"jsonrpc":"2.0","id":"x","#);
    let error = next(&rx, "a truncated request");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let tools = next(&rx, "tools/list");
    assert_eq!(tools["id"], 2, "{tools}");
    assert_eq!(
        tools["result"]["tools"].as_array().map(Vec::len),
        Some(5),
        "{tools}"
    );

    drop(stdin);
    let status = wait(&mut child);
    assert_eq!(
        status,
        Some(0),
        "the server ends cleanly when its input closes"
    );
}

/// The exit code, within 30 s (killed and `None` otherwise).
fn wait(child: &mut Child) -> Option<i32> {
    for _ in 0..300 {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_request_with_an_id_json_rpc_does_not_allow_is_answered_invalid_request() {
    let (mut child, rx) = serve();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut send = |line: &str| {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server still reads its input");
    };
    send(INITIALIZE);
    let init = next(&rx, "initialize");
    assert_eq!(init["id"], 1, "{init}");
    send(INITIALIZED);
    // an object, a float, a bool, null, and numbers too large for any integer type
    for id in [
        r#"{"a":1}"#,
        "[1]",
        "1.5",
        "true",
        "null",
        "9223372036854775808",
        "18446744073709551616",
    ] {
        send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ));
        let error = next(&rx, &format!("a request with id {id}"));
        assert_eq!(error["jsonrpc"], "2.0", "id {id}: {error}");
        assert_eq!(error["id"], Value::Null, "id {id}: {error}");
        assert_eq!(error["error"]["code"], -32600, "id {id}: {error}");
    }
    // and it still serves
    send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
    let tools = next(&rx, "tools/list");
    assert_eq!(tools["id"], 9, "{tools}");
    drop(stdin);
    assert_eq!(wait(&mut child), Some(0));
}
