//! `ufo mcp serve` over stdio, started by a test: initialised, its tools called by name, each
//! answer awaited by its id within a bound that holds on a loaded machine; killed when
//! dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The longest wait for one answer.
const ANSWER: Duration = Duration::from_secs(90);

/// A running `ufo mcp serve`, initialised.
pub struct McpStdio {
    /// The server's process (the `ufo` itself when started through exec wrappers).
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    next_id: u64,
}

impl McpStdio {
    /// Run `command` (a `ufo` with its arguments up to `mcp serve ...`, or a wrapper that
    /// execs one) with piped stdio, and initialise the session.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ufo mcp serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v = serde_json::from_str(&line).unwrap_or_else(|_| json!({"not_json": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut s = Self {
            child,
            stdin,
            rx,
            next_id: 10,
        };
        s.send(INITIALIZE);
        let init = s.answer(1);
        assert_eq!(init["result"]["serverInfo"]["name"], "ufo", "{init}");
        s.send(INITIALIZED);
        s
    }

    /// `ufo mcp serve --allow-actions` of the build under test, with `HOME` set to `home`.
    pub fn ufo(home: &std::path::Path) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
        c.args(["mcp", "serve", "--allow-actions"])
            .env("HOME", home);
        c
    }

    /// Send one JSON-RPC line.
    pub fn send(&mut self, line: &str) {
        let stdin = self
            .stdin
            .as_mut()
            .expect("the server's input is still open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server reads its input");
    }

    /// The answer with this id.
    pub fn answer(&self, id: u64) -> Value {
        let end = Instant::now() + ANSWER;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(v) if v["id"] == id => return v,
                Ok(_) => continue,
                Err(e) => panic!("no answer to request {id}: {e}"),
            }
        }
        panic!("no answer to request {id} within {ANSWER:?}");
    }

    /// Call a tool: `(is_error, text)`.
    pub fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        self.next_id += 1;
        let id = self.next_id;
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
        self.send(&req.to_string());
        let a = self.answer(id);
        let result = &a["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| a.to_string());
        (result["isError"].as_bool().unwrap_or(false), text)
    }

    /// Close its input (the server ends) and wait for it.
    pub fn finish(mut self) {
        self.stdin.take();
        let _ = self.child.wait();
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
