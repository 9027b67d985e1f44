//! `ufo serve` through the real binary on a simulated desktop: tokens, MCP over streamable
//! HTTP, and every refusal (no or wrong token, foreign Host or Origin, oversized body, unsafe
//! listen address, wrong certificate pin, too many bad tokens, acting without
//! --allow-actions), and a clean stop on SIGTERM.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

mod common;
use common::served::Served;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

fn desktop_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/host_fail/desktop.json")
}

/// `ufo` with its data and configuration in `home` and no `UFO_*` settings of the caller.
fn ufo(home: &Path) -> Command {
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

/// `ufo serve token add NAME`: the token, from the last line of stdout.
fn add_token(home: &Path, name: &str) -> String {
    let out = ufo(home)
        .args(["serve", "token", "add", name])
        .output()
        .expect("ufo runs");
    assert!(out.status.success(), "token add: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().last().expect("a line").trim().to_string()
}

/// `ufo serve --desktop sim:... --listen 127.0.0.1:0 EXTRA...`, once it prints its address.
fn serve(home: &Path, extra: &[&str]) -> Served {
    serve_on(home, &format!("sim:{}", desktop_file().display()), extra)
}

/// `ufo serve --desktop DESKTOP --listen 127.0.0.1:0 EXTRA...`, once it prints its address.
fn serve_on(home: &Path, desktop: &str, extra: &[&str]) -> Served {
    serve_on_with(ufo(home), desktop, extra)
}

/// [`serve_on`] with the command `cmd` (its environment set by the test).
fn serve_on_with(cmd: Command, desktop: &str, extra: &[&str]) -> Served {
    Served::start(cmd, desktop, extra)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// POST an MCP `initialize` with `token` (if any) and extra headers; the status.
async fn post_init(server: &Served, token: Option<&str>, headers: &[(&str, &str)]) -> u16 {
    let mut req = http()
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("an answer").status().as_u16()
}

#[test]
fn token_add_prints_the_token_last_and_stores_only_its_hash() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    assert!(token.starts_with("ufo_") && token.len() >= 40, "{token}");
    let file = home.path().join("data/ufo/serve/tokens.json");
    let text = std::fs::read_to_string(&file).expect("the token file");
    assert!(
        !text.contains(&token),
        "the token itself is not stored: {text}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let list = ufo(home.path())
        .args(["serve", "token", "list"])
        .output()
        .expect("list");
    assert!(String::from_utf8_lossy(&list.stdout).contains("laptop"));
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&token));
    let again = ufo(home.path())
        .args(["serve", "token", "add", "laptop"])
        .output()
        .expect("add");
    assert_eq!(
        again.status.code(),
        Some(2),
        "a name given twice is a usage error"
    );
    let revoke = ufo(home.path())
        .args(["serve", "token", "revoke", "laptop"])
        .output()
        .expect("revoke");
    assert!(revoke.status.success());
    let list = ufo(home.path())
        .args(["serve", "token", "list"])
        .output()
        .expect("list");
    assert!(!String::from_utf8_lossy(&list.stdout).contains("laptop"));
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_and_the_log_never_shows_the_token() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    assert_eq!(post_init(&server, None, &[]).await, 401);
    let wrong = "ufo_this-is-a-wrong-token-that-must-not-be-logged";
    assert_eq!(post_init(&server, Some(wrong), &[]).await, 401);
    // revoked: refused from the next request on
    let second = add_token(home.path(), "other");
    assert_eq!(post_init(&server, Some(&second), &[]).await, 200);
    let out = ufo(home.path())
        .args(["serve", "token", "revoke", "other"])
        .output()
        .expect("revoke");
    assert!(out.status.success());
    assert_eq!(post_init(&server, Some(&second), &[]).await, 401);
    assert_eq!(post_init(&server, Some(&token), &[]).await, 200);

    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.stderr().contains("authentication failed") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = server.stderr();
    assert!(
        log.contains("authentication failed"),
        "the refusal is logged: {log}"
    );
    assert!(!log.contains(wrong), "the log shows no token: {log}");
    assert!(!log.contains(&second) && !log.contains(&token), "{log}");
}

/// A valid token in the URL instead of the `Authorization` header (`?token=`,
/// `?access_token=` and the like, or as a path segment) is no token: 401 as without one, and
/// the log, at its most verbose (`UFO_LOG=trace`, every library's lines too), names the
/// refusal but never the token.
#[tokio::test]
async fn a_token_in_the_url_is_refused_and_never_logged() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let mut cmd = ufo(home.path());
    cmd.env("UFO_LOG", "trace");
    let server = serve_on_with(cmd, &format!("sim:{}", desktop_file().display()), &[]);
    for query in [
        "token",
        "access_token",
        "bearer",
        "authorization",
        "api_key",
    ] {
        let url = format!("{}?{query}={token}", server.url);
        let status = http()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .send()
            .await
            .expect("an answer")
            .status()
            .as_u16();
        assert_eq!(status, 401, "?{query}=TOKEN");
    }
    let in_path = format!("{}/{token}", server.url);
    let status = http()
        .post(&in_path)
        .body(INITIALIZE)
        .send()
        .await
        .expect("an answer")
        .status()
        .as_u16();
    assert!(status == 401 || status == 404, "{status}");
    // the same token in its header is served
    assert_eq!(post_init(&server, Some(&token), &[]).await, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    // both lines are written after the answers went out: wait for the refusals' and the
    // valid token's
    let logged = |log: &str| {
        log.matches("authentication failed").count() >= 5 && log.contains("authenticated")
    };
    while !logged(&server.stderr()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = server.stderr();
    assert!(
        log.matches("authentication failed").count() >= 5,
        "each refusal is logged: {log}"
    );
    // (the log is at its most verbose: the valid token's debug line is there, without it)
    assert!(log.contains("authenticated"), "{log}");
    assert!(!log.contains(&token), "the log shows the token: {log}");
    // (nor a part of it long enough to matter)
    let half = &token[token.len() / 2..];
    assert!(
        !log.contains(half),
        "the log shows part of the token: {log}"
    );
}

#[tokio::test]
async fn mcp_over_streamable_http_lists_and_calls_tools_with_a_token() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let transport = StreamableHttpClientTransport::with_client(
        http(),
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(token),
    );
    let client = ().serve(transport).await.expect("initialize over HTTP");
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for n in [
        "list_windows",
        "observe_window",
        "act",
        "type_text",
        "launch_app",
    ] {
        assert!(names.contains(&n.to_string()), "{names:?}");
    }
    let call = |v: serde_json::Value| -> CallToolRequestParams {
        serde_json::from_value(v).expect("params")
    };
    let windows = client
        .call_tool(call(json!({"name": "list_windows"})))
        .await
        .expect("tools/call list_windows");
    let text = serde_json::to_string(&windows.content).expect("json");
    assert_ne!(windows.is_error, Some(true), "{text}");
    assert!(text.contains("Writer"), "{text}");

    let act = client
        .call_tool(call(json!({"name": "act", "arguments": {
            "window": "Writer", "control": "Export", "function": "click"}})))
        .await
        .expect("tools/call act");
    let text = serde_json::to_string(&act.content).expect("json");
    assert_eq!(act.is_error, Some(true), "{text}");
    assert!(text.contains("--allow-actions"), "{text}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_foreign_host_or_origin_or_an_oversized_body_is_refused() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let server = serve(home.path(), &["--host-name", "lab.example"]);
    let port = server
        .url
        .rsplit(':')
        .next()
        .expect("port")
        .trim_end_matches("/mcp");
    let t = Some(token.as_str());
    assert_eq!(
        post_init(&server, t, &[("Host", "evil.example")]).await,
        403
    );
    let evil = format!("evil.example:{port}");
    assert_eq!(post_init(&server, t, &[("Host", &evil)]).await, 403);
    let named = format!("lab.example:{port}");
    assert_eq!(post_init(&server, t, &[("Host", &named)]).await, 200);
    let local = format!("localhost:{port}");
    assert_eq!(post_init(&server, t, &[("Host", &local)]).await, 200);
    assert_eq!(
        post_init(&server, t, &[("Origin", "http://evil.example")]).await,
        403
    );
    let own = server.origin();
    assert_eq!(post_init(&server, t, &[("Origin", &own)]).await, 200);

    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat((1 << 20) + 1024)
    );
    let status = http()
        .post(&server.url)
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(big)
        .send()
        .await
        .expect("an answer")
        .status();
    assert_eq!(status.as_u16(), 413);
}

#[tokio::test]
async fn after_too_many_bad_tokens_the_address_gets_429() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    for i in 0..10 {
        let wrong = format!("ufo_wrong{i}");
        assert_eq!(
            post_init(&server, Some(&wrong), &[]).await,
            401,
            "attempt {i}"
        );
    }
    assert_eq!(post_init(&server, Some("ufo_wrong"), &[]).await, 429);
    // locked out while it lasts, whatever the token
    assert_eq!(post_init(&server, Some(&token), &[]).await, 429);
}

#[test]
fn a_non_loopback_address_without_tls_or_token_refuses_to_start() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = |extra: &[&str]| {
        ufo(home.path())
            .args(["serve", "--desktop"])
            .arg(format!("sim:{}", desktop_file().display()))
            .args(["--listen", "0.0.0.0:0"])
            .args(extra)
            .output()
            .expect("ufo runs")
    };
    let plain = run(&[]);
    assert_eq!(plain.status.code(), Some(2), "{plain:?}");
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("--tls"),
        "{plain:?}"
    );
    let no_token = run(&["--tls"]);
    assert_eq!(no_token.status.code(), Some(2), "{no_token:?}");
    assert!(
        String::from_utf8_lossy(&no_token.stderr).contains("ufo serve token add"),
        "{no_token:?}"
    );
}

#[tokio::test]
async fn a_client_pinning_the_printed_fingerprint_connects_and_a_wrong_pin_fails() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = add_token(home.path(), "laptop");
    let server = serve(home.path(), &["--tls"]);
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let printed = server.fingerprint.clone().expect("a fingerprint line");
    let pin = ufo_mcp::http::tls::parse_fingerprint(&printed).expect("a SHA-256 fingerprint");
    let client = |pin: [u8; 32]| {
        reqwest::Client::builder()
            .use_preconfigured_tls(ufo_mcp::http::tls::pinned_client_config(pin))
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client")
    };
    let ok = client(pin)
        .post(&server.url)
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .expect("the pinned client connects");
    assert_eq!(ok.status().as_u16(), 200);

    let mut wrong = pin;
    wrong[0] ^= 0xff;
    let refused = client(wrong)
        .post(&server.url)
        .body(INITIALIZE)
        .send()
        .await;
    assert!(refused.is_err(), "a wrong pin must fail the handshake");
    // a plain-HTTP client to the TLS port gets no answer
    let plain = server.url.replacen("https://", "http://", 1);
    assert!(http().post(&plain).body(INITIALIZE).send().await.is_err());

    // the certificate is kept: a second start prints the same fingerprint
    drop(server);
    let again = serve(home.path(), &["--tls"]);
    assert_eq!(again.fingerprint.as_deref(), Some(printed.as_str()));
}

#[test]
fn sigterm_stops_the_server_with_exit_0() {
    let home = tempfile::tempdir().expect("tempdir");
    add_token(home.path(), "laptop");
    let mut server = serve(home.path(), &[]);
    let pid = nix::unistd::Pid::from_raw(server.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = server.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "ufo serve still runs 15 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "stderr: {}", server.stderr());
}

/// The processes of the private desktop a `ufo` of process id `pid` started (they carry its
/// mark in their environment).
fn marked_by(pid: u32) -> Vec<String> {
    common::procs::carrying(&format!("UFO_SESSION_MARK=ufo-private-{pid}-"))
}

/// A service manager stops `ufo serve --desktop private` with a SIGTERM to the process it
/// started: the server inside the private desktop stops at once (it used to run on until the
/// 10 s grace ran out and was then killed), and nothing of the desktop is left.
#[test]
fn sigterm_stops_a_server_on_a_private_desktop_at_once_leaving_nothing() {
    if !ufo_desktop::testing::require_live(
        "sigterm_stops_a_server_on_a_private_desktop_at_once_leaving_nothing",
    ) {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    add_token(home.path(), "laptop");
    let mut server = serve_on(home.path(), "private", &[]);
    let outer = server.child.id();
    assert!(
        !marked_by(outer).is_empty(),
        "no private desktop was started"
    );
    let pid = nix::unistd::Pid::from_raw(outer as i32);
    let signalled = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let status = loop {
        if let Some(s) = server.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(8),
            "ufo serve --desktop private still runs 8 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "stderr: {}", server.stderr());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = marked_by(outer);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
