//! `--desktop remote:URL` through the real binaries: `ufo serve` on a simulated desktop, and
//! `ufo run` / `ufo inspect` driving it over MCP streamable HTTP with a token (and a pinned
//! certificate), against the same scenario run on the simulated desktop directly; a wrong
//! token and a wrong pin refused clearly; the server killed mid-step ends the session ERROR
//! `device_lost` with a whole trajectory.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
