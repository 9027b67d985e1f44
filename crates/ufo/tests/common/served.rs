//! `ufo serve` started by a test: its child process, the address it printed (`listening
//! URL`), the certificate fingerprint it printed with `--tls`, and its stderr; ended when
//! dropped.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

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
    /// End the server as a person would (SIGTERM), so that it ends its private desktop and
    /// the console's sessions; SIGKILL only when it has not ended within 30 s.
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        super::procs::signal(self.child.id(), Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ufo` with its data and configuration in `home`, run there, and no `UFO_*` settings of the
/// caller.
pub fn ufo_at(home: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    cmd.env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .current_dir(home);
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// `ufo serve token add NAME` with its data in `home`: the token it printed on its last line.
pub fn new_token(home: &Path, name: &str) -> String {
    new_token_with_role(home, name, "user")
}

/// `ufo serve token add NAME --role ROLE` with its data in `home`: the token it printed on its
/// last line.
pub fn new_token_with_role(home: &Path, name: &str, role: &str) -> String {
    let out = ufo_at(home)
        .args(["serve", "token", "add", name, "--role", role])
        .output()
        .expect("ufo runs");
    assert!(out.status.success(), "token add: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("a line")
        .trim()
        .to_string()
}

/// [`new_token`], written to `home/NAME.token`: the file's path.
pub fn token_file(home: &Path, name: &str) -> PathBuf {
    let file = home.join(format!("{name}.token"));
    std::fs::write(&file, format!("{}\n", new_token(home, name))).expect("write the token file");
    file
}
