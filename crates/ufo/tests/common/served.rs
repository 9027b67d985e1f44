//! `ufo serve` started by a test: its child process, the address it printed (`listening
//! URL`), the certificate fingerprint it printed with `--tls`, and its stderr; ended when
//! dropped.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `ufo serve`.
pub struct Served {
    /// The server's process.
    pub child: Child,
    /// `http://127.0.0.1:PORT/mcp` or `https://...`.
    pub url: String,
    /// The SHA-256 fingerprint it printed (with `--tls`).
    pub fingerprint: Option<String>,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Run `cmd` (a `ufo` command with the test's environment) as
    /// `serve --desktop DESKTOP --listen 127.0.0.1:0 EXTRA...`, and wait (at most 60 s) for
    /// the address it prints.
    pub fn start(mut cmd: Command, desktop: &str, extra: &[&str]) -> Served {
        let mut child = cmd
            .arg("serve")
            .args(["--desktop", desktop])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ufo starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut fingerprint = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|e| {
                let _ = child.kill();
                panic!(
                    "ufo serve printed no `listening` line: {e}; stderr: {}",
                    stderr.lock().map(|s| s.clone()).unwrap_or_default()
                )
            });
            if let Some(fp) = line.strip_prefix("fingerprint ") {
                fingerprint = Some(fp.to_string());
            }
            if let Some(url) = line.strip_prefix("listening ") {
                break url.to_string();
            }
        };
        Served {
            child,
            url,
            fingerprint,
            stderr,
        }
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The origin (`http://127.0.0.1:PORT`).
    pub fn origin(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// `remote:http(s)://127.0.0.1:PORT`, the spec a client gives.
    pub fn spec(&self) -> String {
        format!("remote:{}", self.origin())
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.origin()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
