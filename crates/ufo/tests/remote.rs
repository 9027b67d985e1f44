//! `--desktop remote:URL` through the real binaries: `ufo serve` on a simulated desktop, and
//! `ufo run` / `ufo inspect` driving it over MCP streamable HTTP with a token (and a pinned
//! certificate), against the same scenario run on the simulated desktop directly; a wrong
//! token and a wrong pin refused clearly; the server killed mid-step ends the session ERROR
//! `device_lost` with a whole trajectory; a hostile server (a dripped reply, garbage, a
//! redirect, a 1 GB reply), mid-step or from the start, ends it within the bounds.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::procs;
use common::served::{token_file, ufo_at as ufo, Served};
use nix::sys::signal::Signal;

fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/word_excel")
        .join(file)
}

const REQUEST: &str = "Extract the sales table from Word and create a bar chart in Excel";

/// `ufo serve --desktop sim:<word_excel> --listen 127.0.0.1:0 --allow-actions EXTRA`.
fn serve(home: &Path, extra: &[&str]) -> Served {
    let mut args = vec!["--allow-actions"];
    args.extend_from_slice(extra);
    let desktop = format!("sim:{}", example("desktop.json").display());
    Served::start(ufo(home), &desktop, &args)
}

/// `ufo run` of the Word→Excel example on `desktop`, into `home/out`.
fn run_example(home: &Path, desktop: &str, extra: &[&str]) -> (Output, PathBuf) {
    let out = home.join("out");
    let output = ufo(home)
        .args(["run", "--desktop", desktop, "--llm"])
        .arg(format!("script:{}", example("script.jsonl").display()))
        .arg(REQUEST)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .expect("ufo runs");
    (output, out)
}

fn events(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

fn sequence(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| {
            (
                e["role"].as_str().unwrap_or_default().to_string(),
                e["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn final_state(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("desktop_final.json")).expect("final state"))
        .expect("JSON")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_run_on_a_remote_desktop_matches_the_same_run_on_the_desktop_itself() {
    let local = tempfile::tempdir().expect("tempdir");
    let (o, local_out) = run_example(
        local.path(),
        &format!("sim:{}", example("desktop.json").display()),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let home = tempfile::tempdir().expect("tempdir");
    let token = token_file(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let remote = format!("remote:{}", server.url.trim_end_matches("/mcp"));
    let (o, remote_out) = run_example(
        home.path(),
        &remote,
        &["--token-file", token.to_str().expect("utf-8")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let token_text = std::fs::read_to_string(&token).expect("token");
    assert!(!text(&o).contains(token_text.trim()), "the token is shown");
    let trajectory = std::fs::read_to_string(remote_out.join("events.jsonl")).expect("events");
    assert!(
        !trajectory.contains(token_text.trim()),
        "the token is recorded"
    );

    assert_eq!(
        sequence(&events(&remote_out)),
        sequence(&events(&local_out))
    );
    let (want, got) = (final_state(&local_out), final_state(&remote_out));
    assert_eq!(got["actions"], want["actions"]);
    assert_eq!(got, want);

    // the same desktop, listed and observed remotely, with the token from the environment
    let listed = ufo(home.path())
        .args(["inspect", "--desktop", &remote])
        .env("UFO_REMOTE_TOKEN", token_text.trim())
        .output()
        .expect("ufo runs");
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(stdout.contains("Sales Report.docx - Word"), "{stdout}");
    assert!(stdout.contains("Book1 - Excel"), "{stdout}");
    let png = home.path().join("w.png");
    let window = ufo(home.path())
        .args(["inspect", "--desktop", &remote, "Word", "--png"])
        .arg(&png)
        .env("UFO_REMOTE_TOKEN", token_text.trim())
        .output()
        .expect("ufo runs");
    assert_eq!(window.status.code(), Some(0), "{}", text(&window));
    assert!(
        String::from_utf8_lossy(&window.stdout).contains("[1] "),
        "{}",
        text(&window)
    );
}

#[test]
fn a_wrong_or_missing_token_is_a_clear_error() {
    let home = tempfile::tempdir().expect("tempdir");
    token_file(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let remote = format!("remote:{}", server.url);
    let wrong = home.path().join("wrong");
    std::fs::write(&wrong, "ufo_not_the_token").expect("write");
    let (o, _) = run_example(
        home.path(),
        &remote,
        &["--token-file", wrong.to_str().expect("utf-8")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused the token"), "{err}");
    assert!(!err.contains("ufo_not_the_token"), "{err}");

    let none = ufo(home.path())
        .args(["inspect", "--desktop", &remote])
        .output()
        .expect("ufo runs");
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(text(&none).contains("UFO_REMOTE_TOKEN"), "{}", text(&none));
}

#[test]
fn plain_http_to_another_machine_is_refused() {
    let home = tempfile::tempdir().expect("tempdir");
    let o = ufo(home.path())
        .args(["inspect", "--desktop", "remote:http://lab.example:8377"])
        .env("UFO_REMOTE_TOKEN", "ufo_x")
        .output()
        .expect("ufo runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--tls"), "{}", text(&o));
}

#[test]
fn the_printed_fingerprint_connects_and_a_wrong_one_fails_clearly() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = token_file(home.path(), "laptop");
    let server = serve(home.path(), &["--tls"]);
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let printed = server.fingerprint.clone().expect("a fingerprint line");
    let remote = format!("remote:{}", server.url);
    let inspect = |fp: &str| {
        ufo(home.path())
            .args(["inspect", "--desktop", &remote, "--fingerprint", fp])
            .arg("--token-file")
            .arg(&token)
            .output()
            .expect("ufo runs")
    };
    let ok = inspect(&printed);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    assert!(
        text(&ok).contains("Sales Report.docx - Word"),
        "{}",
        text(&ok)
    );

    let mut wrong: Vec<char> = printed.chars().collect();
    wrong[0] = if wrong[0] == 'A' { 'B' } else { 'A' };
    let wrong: String = wrong.into_iter().collect();
    let bad = inspect(&wrong);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("cannot reach"), "{}", text(&bad));
    assert!(text(&bad).contains("--fingerprint"), "{}", text(&bad));

    // without a pin, a self-signed certificate is not trusted
    let unpinned = ufo(home.path())
        .args(["inspect", "--desktop", &remote, "--token-file"])
        .arg(&token)
        .output()
        .expect("ufo runs");
    assert_eq!(unpinned.status.code(), Some(2), "{}", text(&unpinned));
}

/// A TCP relay to `upstream` that, once the client sends an `act` call, kills the server
/// (`pid`) and drops the connection: the server dies in the middle of a step. The `Host`
/// header is rewritten to the server's own address (it refuses any other).
fn killing_relay(upstream: String, pid: u32) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (from, to) = (format!("Host: {addr}"), format!("Host: {upstream}"));
    let (from_lower, to_lower) = (from.to_lowercase(), to.to_lowercase());
    let killed = Arc::new(AtomicBool::new(false));
    let flag = killed.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            if flag.load(Ordering::SeqCst) {
                continue; // the server is gone: the connection is dropped
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let flag = flag.clone();
            let (from, to, from_lower, to_lower) = (
                from.clone(),
                to.clone(),
                from_lower.clone(),
                to_lower.clone(),
            );
            let (mut c_in, mut s_out) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_in, &mut c_out);
                let _ = c_out.shutdown(Shutdown::Both);
            });
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                let mut tail = Vec::new();
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    tail.extend_from_slice(&buf[..n]);
                    let seen = String::from_utf8_lossy(&tail).contains("\"name\":\"act\"");
                    if seen && !flag.swap(true, Ordering::SeqCst) {
                        procs::signal(pid, Signal::SIGKILL);
                    }
                    if flag.load(Ordering::SeqCst) {
                        let _ = c_in.shutdown(Shutdown::Both);
                        let _ = s_out.shutdown(Shutdown::Both);
                        break;
                    }
                    let chunk = String::from_utf8_lossy(&buf[..n])
                        .replace(&from, &to)
                        .replace(&from_lower, &to_lower);
                    if s_out.write_all(chunk.as_bytes()).is_err() {
                        break;
                    }
                    let keep = tail.len().saturating_sub(64);
                    tail.drain(..keep);
                }
            });
        }
    });
    (format!("http://{addr}"), killed)
}

#[test]
fn the_server_killed_mid_step_ends_the_session_error_device_lost() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = token_file(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let upstream = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let (relay, killed) = killing_relay(upstream, server.child.id());
    let t = Instant::now();
    let (o, out) = run_example(
        home.path(),
        &format!("remote:{relay}"),
        &["--token-file", token.to_str().expect("utf-8")],
    );
    assert!(
        killed.load(Ordering::SeqCst),
        "the relay saw no act call: {}",
        text(&o)
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let events = events(&out);
    let end = events.last().expect("events");
    assert_eq!(end["type"], "session_end", "{end}");
    assert_eq!(end["status"], "ERROR", "{end}");
    assert_eq!(end["reason"], "device_lost", "{end}");
    assert!(text(&o).contains("remote desktop is lost"), "{}", text(&o));
    let last_step = events
        .iter()
        .rev()
        .find(|e| e["type"] == "step")
        .expect("a step");
    assert_eq!(last_step["role"], "app", "{last_step}");
}

/// How a hostile server answers the request that sets it off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hostile {
    /// A plausible reply, one byte every 300 ms, without end.
    Drip,
    /// Bytes that are not HTTP at all, then the connection closed.
    NotHttp,
    /// An HTTP 200 whose JSON body is no MCP message.
    NotMcp,
    /// An HTTP 200 whose body is not JSON.
    NotJson,
    /// A redirect (307) to another listener of the test.
    Redirect,
    /// `Content-Length: 1000000000`, then bytes as fast as the client takes them.
    Huge,
}

/// What the hostile server saw.
#[derive(Debug, Default)]
struct Seen {
    /// When it was set off.
    at: Option<Instant>,
    /// Bytes of the huge body the client took before it stopped.
    sent: u64,
    /// The client's peak memory (VmHWM, KiB) when it stopped taking the huge body.
    peak_kib: Option<u64>,
    /// Connections the redirect's target got.
    redirected_to: usize,
}

/// One HTTP/1.1 request from `from`: its head (without the blank line) and its body, by
/// `Content-Length` (the MCP client sends no chunked bodies); `None` at the end or on a
/// request too large for a test.
fn read_request(from: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if from.read(&mut byte).ok()? == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head[..head.len() - 4]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    if length > 16 << 20 {
        return None;
    }
    let mut body = vec![0u8; length];
    from.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// The peak memory of process `pid` so far (VmHWM, KiB).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Answer one request as `how` says.
fn misbehave(
    mut client: TcpStream,
    how: Hostile,
    redirect_to: &str,
    seen: &Mutex<Seen>,
    pid: &AtomicU32,
) {
    let write = |client: &mut TcpStream, bytes: &[u8]| {
        let _ = client.write_all(bytes);
        let _ = client.shutdown(Shutdown::Both);
    };
    match how {
        Hostile::Drip => {
            let reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: 100000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":";
            let deadline = Instant::now() + Duration::from_secs(120);
            for &b in reply.as_bytes().iter().chain(std::iter::repeat(&b' ')) {
                if client.write_all(&[b]).is_err() || Instant::now() > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        Hostile::NotHttp => write(
            &mut client,
            b"SSH-2.0-OpenSSH_9.2\r\n\x00\xff\xfe garbage \x1b[2J\r\n\r\n",
        ),
        Hostile::NotMcp => {
            let body = r#"{"hello":"world","result":[1,2,3]}"#;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            write(&mut client, reply.as_bytes());
        }
        Hostile::NotJson => {
            let body = "<html><body>502 Bad Gateway</body></html>";
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            write(&mut client, reply.as_bytes());
        }
        Hostile::Redirect => {
            let reply = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {redirect_to}\r\n\
                 Content-Length: 0\r\n\r\n"
            );
            write(&mut client, reply.as_bytes());
        }
        Hostile::Huge => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                        Content-Length: 1000000000\r\n\r\n";
            if client.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = vec![b' '; 64 * 1024];
            let mut sent = 0u64;
            while sent < 1_000_000_000 && client.write_all(&chunk).is_ok() {
                sent += chunk.len() as u64;
            }
            // the client stopped taking it: how much it holds now tells whether it kept it
            let peak = peak_kib(pid.load(Ordering::SeqCst));
            if let Ok(mut s) = seen.lock() {
                s.sent = sent;
                s.peak_kib = peak;
            }
        }
    }
}

/// A server on loopback that relays to `upstream` (a `ufo serve`, its `Host` header
/// rewritten) and answers every request whose body holds `trigger` as `how` says; without
/// `upstream` it answers every request so. `pid` is the client's, for its memory.
fn hostile_server(
    upstream: Option<String>,
    trigger: &'static str,
    how: Hostile,
    pid: Arc<AtomicU32>,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Seen::default()));
    // where the redirect points: a listener that only counts who comes
    let target = TcpListener::bind("127.0.0.1:0").expect("bind");
    let redirect_to = format!("http://{}/mcp", target.local_addr().expect("addr"));
    let counted = seen.clone();
    std::thread::spawn(move || {
        for c in target.incoming() {
            if c.is_err() {
                break;
            }
            if let Ok(mut s) = counted.lock() {
                s.redirected_to += 1;
            }
        }
    });
    let shared = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let (upstream, seen, pid, redirect_to) = (
                upstream.clone(),
                shared.clone(),
                pid.clone(),
                redirect_to.clone(),
            );
            std::thread::spawn(move || {
                relay_or_misbehave(client, upstream, trigger, how, &redirect_to, &seen, &pid)
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// Serve one client connection of [`hostile_server`].
fn relay_or_misbehave(
    mut client: TcpStream,
    upstream: Option<String>,
    trigger: &str,
    how: Hostile,
    redirect_to: &str,
    seen: &Mutex<Seen>,
    pid: &AtomicU32,
) {
    let mut server: Option<TcpStream> = None;
    // set once this connection misbehaved: the server's later bytes are not passed on
    let stopped = Arc::new(AtomicBool::new(false));
    while let Some((head, body)) = read_request(&mut client) {
        let hit = String::from_utf8_lossy(&body).contains(trigger);
        let Some(upstream) = upstream.as_deref().filter(|_| !hit) else {
            stopped.store(true, Ordering::SeqCst);
            if let Ok(mut s) = seen.lock() {
                s.at.get_or_insert_with(Instant::now);
            }
            misbehave(client, how, redirect_to, seen, pid);
            return;
        };
        if server.is_none() {
            let Ok(s) = TcpStream::connect(upstream) else {
                return;
            };
            let (mut from, mut to) = (
                s.try_clone().expect("clone"),
                client.try_clone().expect("clone"),
            );
            let stopped = stopped.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 || stopped.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err()
                    {
                        break;
                    }
                }
                if !stopped.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Both);
                }
            });
            server = Some(s);
        }
        let head: Vec<String> = head
            .lines()
            .map(|l| match l.split_once(':') {
                Some((name, _)) if name.eq_ignore_ascii_case("host") => format!("Host: {upstream}"),
                _ => l.to_string(),
            })
            .collect();
        let mut request = format!("{}\r\n\r\n", head.join("\r\n")).into_bytes();
        request.extend_from_slice(&body);
        if server
            .as_mut()
            .is_none_or(|s| s.write_all(&request).is_err())
        {
            return;
        }
    }
    if let Some(s) = server {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// What became of a `ufo run` of the example against a hostile server.
struct Hostility {
    code: Option<i32>,
    output: String,
    events: Vec<Value>,
    /// From the moment the server misbehaved to the end of `ufo run`.
    after: Duration,
    seen: Arc<Mutex<Seen>>,
}

/// Run the example on a served desktop reached through a [`hostile_server`] that misbehaves
/// as `how` at the first `act` call (`mid_step`), else at the first request; each call
/// bounded by `timeout_ms`.
fn run_against(how: Hostile, mid_step: bool, timeout_ms: u64) -> Hostility {
    let home = tempfile::tempdir().expect("tempdir");
    let token = token_file(home.path(), "laptop");
    let server = mid_step.then(|| serve(home.path(), &[]));
    let upstream = server.as_ref().map(|s| {
        s.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    });
    let trigger = if mid_step { "\"name\":\"act\"" } else { "" };
    let pid = Arc::new(AtomicU32::new(0));
    let (url, seen) = hostile_server(upstream, trigger, how, pid.clone());
    let out = home.path().join("out");
    let mut child = ufo(home.path())
        .args(["run", "--desktop", &format!("remote:{url}"), "--llm"])
        .arg(format!("script:{}", example("script.jsonl").display()))
        .arg(REQUEST)
        .arg("--out")
        .arg(&out)
        .arg("--token-file")
        .arg(&token)
        .env("UFO_REMOTE_TIMEOUT_MS", timeout_ms.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ufo runs");
    pid.store(child.id(), Ordering::SeqCst);
    // read both pipes while it runs (a full pipe would stall it)
    fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    }
    let mut pipes = [
        child.stdout.take().map(drain),
        child.stderr.take().map(drain),
    ];
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ufo run against a {how:?} server did not end within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ended = Instant::now();
    let output: String = pipes
        .iter_mut()
        .filter_map(|p| p.take().and_then(|t| t.join().ok()))
        .collect();
    let at = seen.lock().ok().and_then(|s| s.at);
    let after = at.map_or(Duration::ZERO, |at| ended.saturating_duration_since(at));
    assert!(
        at.is_some(),
        "the {how:?} server was never set off: {output}"
    );
    let events = std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    drop(server);
    Hostility {
        code: status.code(),
        output,
        events,
        after,
        seen,
    }
}

impl Hostility {
    /// The session ended ERROR `device_lost` after the step that met the server, its
    /// trajectory whole, no panic.
    fn assert_device_lost(&self, how: Hostile) {
        let ctx = format!("{how:?}: exit {:?}\n{}", self.code, self.output);
        assert!(!self.output.contains("panicked"), "{ctx}");
        assert_eq!(self.code, Some(3), "{ctx}");
        let end = self.events.last().expect("events");
        assert_eq!(end["type"], "session_end", "{end}\n{ctx}");
        assert_eq!(end["status"], "ERROR", "{end}\n{ctx}");
        assert_eq!(end["reason"], "device_lost", "{end}\n{ctx}");
        assert!(self.output.contains("remote desktop is lost"), "{ctx}");
        let last_step = self
            .events
            .iter()
            .rev()
            .find(|e| e["type"] == "step")
            .expect("a step");
        assert_eq!(last_step["role"], "app", "{last_step}\n{ctx}");
    }
}

/// A server that starts to drip its answer a byte at a time (each byte well within any read
/// timeout, the whole never) at the first `act`: the call ends at its bound, the session
/// ERROR `device_lost`, nothing hangs.
#[test]
fn a_server_dripping_its_answer_loses_the_device_at_the_call_bound() {
    let r = run_against(Hostile::Drip, true, 6_000);
    r.assert_device_lost(Hostile::Drip);
    assert!(r.output.contains("within 6 s"), "{}", r.output);
    assert!(
        r.after >= Duration::from_secs(5) && r.after < Duration::from_secs(30),
        "ended {:?} after the drip began",
        r.after
    );
}

/// Garbage for an answer at the first `act` (bytes that are not HTTP, a body that is not
/// JSON, JSON that is no MCP message): the session ends ERROR `device_lost` within the
/// bound, no panic.
#[test]
fn a_server_answering_garbage_loses_the_device() {
    for how in [Hostile::NotHttp, Hostile::NotJson, Hostile::NotMcp] {
        let r = run_against(how, true, 8_000);
        r.assert_device_lost(how);
        assert!(
            r.after < Duration::from_secs(30),
            "{how:?}: ended {:?} after the garbage",
            r.after
        );
    }
}

/// A redirect at the first `act` is not followed: its target gets no connection (so no
/// token), and the session ends ERROR `device_lost`.
#[test]
fn a_redirect_from_the_server_is_not_followed() {
    let r = run_against(Hostile::Redirect, true, 8_000);
    r.assert_device_lost(Hostile::Redirect);
    let seen = r.seen.lock().expect("seen");
    assert_eq!(seen.redirected_to, 0, "the redirect was followed");
}

/// A reply announcing 1 GB and sending it as fast as it is taken, at the first `act`: the
/// client stops at its 16 MiB cap, long before the call's bound, its memory stays small, and
/// the session ends ERROR `device_lost`.
#[test]
fn a_gigabyte_reply_is_cut_without_filling_memory() {
    let r = run_against(Hostile::Huge, true, 30_000);
    r.assert_device_lost(Hostile::Huge);
    assert!(r.output.contains("longer than 16 MiB"), "{}", r.output);
    assert!(
        r.after < Duration::from_secs(20),
        "ended {:?} after the reply began: cut at the timeout, not the cap",
        r.after
    );
    let seen = r.seen.lock().expect("seen");
    assert!(
        seen.sent < 256 << 20,
        "the client took {} MiB of the reply",
        seen.sent >> 20
    );
    let peak = seen.peak_kib.expect("the client's memory was read");
    assert!(peak < 256 * 1024, "ufo run peaked at {} MiB", peak / 1024);
    println!(
        "a 1 GB reply: the client took {} MiB, peaked at {} MiB",
        seen.sent >> 20,
        peak / 1024
    );
}

/// The same servers from the first request on: `ufo run` exits 2 at the start, saying it
/// cannot reach the served desktop, within the handshake's bound; a redirect's target gets
/// nothing.
#[test]
fn a_hostile_server_from_the_start_is_exit_2_within_the_bound() {
    for how in [
        Hostile::NotHttp,
        Hostile::NotJson,
        Hostile::NotMcp,
        Hostile::Redirect,
        Hostile::Huge,
        Hostile::Drip,
    ] {
        let r = run_against(how, false, 4_000);
        let ctx = format!("{how:?}: exit {:?}\n{}", r.code, r.output);
        assert_eq!(r.code, Some(2), "{ctx}");
        assert!(!r.output.contains("panicked"), "{ctx}");
        assert!(
            r.output.contains("cannot reach the served desktop"),
            "{ctx}"
        );
        assert!(
            r.after < Duration::from_secs(20),
            "{ctx}\ntook {:?}",
            r.after
        );
        assert_eq!(r.seen.lock().expect("seen").redirected_to, 0, "{ctx}");
    }
}
