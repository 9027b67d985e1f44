//! MCP sessions of `ufo serve` and the tokens they belong to, through the real binary on a
//! simulated desktop (docs/serve.md, "MCP sessions"): a session is its token's alone, a token
//! keeps a bounded number of them, revoking the token ends them and their streams, and a
//! viewer token only observes.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

mod common;
use common::served::{new_token, ufo_at, Served};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const SESSION: &str = "mcp-session-id";

fn serve(home: &Path, extra: &[&str]) -> Served {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/host_fail/desktop.json");
    Served::start(ufo_at(home), &format!("sim:{}", file.display()), extra)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// A new MCP session of `token`: its id.
async fn open_session(http: &reqwest::Client, url: &str, token: &str) -> String {
    let r = http
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .expect("an answer to initialize");
    assert_eq!(r.status().as_u16(), 200);
    let id = r
        .headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_string();
    let _ = r.bytes().await;
    id
}

/// POST `notifications/initialized` to session `id` with `token`: 202 while the session is
/// the token's and alive.
async fn notify(http: &reqwest::Client, url: &str, token: &str, id: &str) -> u16 {
    http.post(url)
        .bearer_auth(token)
        .header(SESSION, id)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZED)
        .send()
        .await
        .expect("an answer")
        .status()
        .as_u16()
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Another token's session id is answered as an unknown one (404), for every method; it
/// cannot be used, followed or closed.
#[tokio::test]
async fn an_mcp_session_is_reached_only_with_the_token_that_opened_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let alice = new_token(home.path(), "alice");
    let bob = new_token(home.path(), "bob");
    let server = serve(home.path(), &[]);
    let http = client();
    let id = open_session(&http, &server.url, &alice).await;
    assert_eq!(notify(&http, &server.url, &alice, &id).await, 202);
    assert_eq!(notify(&http, &server.url, &bob, &id).await, 404);
    assert_eq!(
        notify(&http, &server.url, &bob, "no-such-session").await,
        404
    );
    let get = http
        .get(&server.url)
        .bearer_auth(&bob)
        .header(SESSION, &id)
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("an answer");
    assert_eq!(get.status().as_u16(), 404);
    let delete = http
        .delete(&server.url)
        .bearer_auth(&bob)
        .header(SESSION, &id)
        .send()
        .await
        .expect("an answer");
    assert_eq!(delete.status().as_u16(), 404);
    assert_eq!(
        notify(&http, &server.url, &alice, &id).await,
        202,
        "bob's DELETE did not close alice's session"
    );
}

/// 1,000 `initialize` with one token leave at most 16 of its MCP sessions: each new one past
/// the bound closes the token's least recently used one (a session kept in use survives), and
/// the server's memory stays flat.
#[tokio::test]
async fn a_token_keeps_at_most_16_mcp_sessions_and_memory_stays_flat() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let http = client();
    let kept = open_session(&http, &server.url, &token).await;
    // a first round, so the allocator's pools exist before measuring
    for i in 0..50 {
        open_session(&http, &server.url, &token).await;
        if i % 8 == 0 {
            assert_eq!(notify(&http, &server.url, &token, &kept).await, 202);
        }
    }
    let before = rss_kib(server.child.id());
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..1000 {
        ids.push(open_session(&http, &server.url, &token).await);
        if i % 8 == 0 {
            assert_eq!(notify(&http, &server.url, &token, &kept).await, 202);
        }
    }
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(server.child.id());
    let mut live = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if notify(&http, &server.url, &token, id).await == 202 {
            live.push(i);
        }
    }
    eprintln!(
        "1000 initializes in {took:?}; live afterwards: {live:?}; RSS {before} KiB -> {after} KiB"
    );
    assert_eq!(notify(&http, &server.url, &token, &kept).await, 202);
    assert!(live.len() <= 15, "{} live besides the kept one", live.len());
    assert!(live.contains(&999), "the newest session lives");
    assert!(
        after.saturating_sub(before) < 16 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
}

/// Read `stream` until it ends; how long that took (`None`: still open after `within`).
async fn ends_within(stream: &mut reqwest::Response, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    loop {
        let left = within.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, stream.chunk()).await {
            Err(_) => return None,
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None) | Err(_)) => return Some(started.elapsed()),
        }
    }
}

/// `ufo serve token revoke` (another process editing the token file) ends the token's MCP
/// sessions and their open streams within about a second; another token's go on.
#[tokio::test]
async fn revoking_a_token_ends_its_mcp_sessions_and_streams_at_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let alice = new_token(home.path(), "alice");
    let bob = new_token(home.path(), "bob");
    let server = serve(home.path(), &[]);
    let http = reqwest::Client::new();
    let stream = |token: String, id: String| {
        let http = http.clone();
        let url = server.url.clone();
        async move {
            let r = http
                .get(&url)
                .bearer_auth(token)
                .header(SESSION, id)
                .header("Accept", "text/event-stream")
                .send()
                .await
                .expect("a stream");
            assert_eq!(r.status().as_u16(), 200);
            r
        }
    };
    let alice_id = open_session(&http, &server.url, &alice).await;
    let bob_id = open_session(&http, &server.url, &bob).await;
    assert_eq!(notify(&http, &server.url, &alice, &alice_id).await, 202);
    assert_eq!(notify(&http, &server.url, &bob, &bob_id).await, 202);
    let mut alice_stream = stream(alice.clone(), alice_id.clone()).await;
    let mut bob_stream = stream(bob.clone(), bob_id.clone()).await;

    let out = ufo_at(home.path())
        .args(["serve", "token", "revoke", "alice"])
        .output()
        .expect("revoke");
    assert!(out.status.success(), "{out:?}");
    let ended = ends_within(&mut alice_stream, Duration::from_secs(3)).await;
    eprintln!("alice's stream ended {ended:?} after the revoke");
    assert!(
        ended.is_some_and(|t| t < Duration::from_secs(2)),
        "alice's stream still open"
    );
    assert_eq!(
        ends_within(&mut bob_stream, Duration::from_secs(1)).await,
        None,
        "bob's stream goes on"
    );
    assert_eq!(notify(&http, &server.url, &bob, &bob_id).await, 202);
    // the revoked token is refused outright, and its session is gone for a new token of the
    // same name
    assert_eq!(notify(&http, &server.url, &alice, &alice_id).await, 401);
    let again = new_token(home.path(), "alice");
    assert_eq!(notify(&http, &server.url, &again, &alice_id).await, 404);
}

/// `ufo serve token add NAME --role ROLE`: the token.
fn token_with_role(home: &Path, name: &str, role: &str) -> String {
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

/// On a server started with `--allow-actions --allow-shell`, a viewer token lists and calls
/// only the observing tools: `act`, `type_text`, `launch_app` and `run_shell` are neither
/// listed nor run for it; a user token acts.
#[tokio::test]
async fn a_viewer_token_observes_and_never_acts() {
    let home = tempfile::tempdir().expect("tempdir");
    let viewer = token_with_role(home.path(), "watcher", "viewer");
    let user = token_with_role(home.path(), "worker", "user");
    let server = serve(home.path(), &["--allow-actions", "--allow-shell"]);
    let connect = |token: String| {
        StreamableHttpClientTransport::with_client(
            client(),
            StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(token),
        )
    };
    let call = |v: serde_json::Value| -> CallToolRequestParams {
        serde_json::from_value(v).expect("params")
    };
    let act = json!({"name": "act", "arguments": {
        "window": "Writer", "name": "Export", "function": "click"}});

    let watcher = ().serve(connect(viewer)).await.expect("initialize");
    let names: Vec<String> = watcher
        .list_all_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"list_windows".to_string()), "{names:?}");
    assert!(names.contains(&"observe_window".to_string()), "{names:?}");
    for hidden in ["act", "type_text", "launch_app", "run_shell"] {
        assert!(
            !names.contains(&hidden.to_string()),
            "{hidden} in {names:?}"
        );
    }
    let windows = watcher
        .call_tool(call(json!({"name": "list_windows"})))
        .await
        .expect("list_windows");
    assert_ne!(windows.is_error, Some(true));
    for refused in [
        act.clone(),
        json!({"name": "run_shell", "arguments": {"command": "touch should-not-exist"}}),
        json!({"name": "launch_app", "arguments": {"name": "writer"}}),
    ] {
        let r = watcher
            .call_tool(call(refused.clone()))
            .await
            .expect("an answer");
        let text = serde_json::to_string(&r.content).expect("json");
        assert_eq!(r.is_error, Some(true), "{refused}: {text}");
        assert!(text.contains("viewer"), "{refused}: {text}");
    }
    assert!(!home.path().join("should-not-exist").exists());
    let _ = watcher.cancel().await;

    let worker = ().serve(connect(user)).await.expect("initialize");
    let names: Vec<String> = worker
        .list_all_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"act".to_string()), "{names:?}");
    assert!(names.contains(&"run_shell".to_string()), "{names:?}");
    let r = worker.call_tool(call(act)).await.expect("an answer");
    let text = serde_json::to_string(&r.content).expect("json");
    assert_ne!(r.is_error, Some(true), "{text}");
    let _ = worker.cancel().await;
}
