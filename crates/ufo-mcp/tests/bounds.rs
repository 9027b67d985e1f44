//! What an MCP server sends is bounded (issue 21, item 8): a tool result that never ends is
//! cut at 16 MiB, the call fails with a clear message, the server is stopped and the next
//! call starts it again. The server is `servers/flood.py` (python3). A streamable HTTP
//! server's replies are bounded the same way: a JSON reply, or one event of an event stream,
//! that never ends (loopback servers here).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use ufo_core::{ToolError, ToolProvider};
use ufo_mcp::{McpServerConfig, McpTools};

/// The peak resident memory of this test process, in KiB (`VmHWM`).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn an_endless_tool_result_is_cut_the_server_restarted_and_the_session_goes_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let pidfile = tmp.path().join("pid");
    let sent = tmp.path().join("sent");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/flood.py");
    let tools = McpTools::new([(
        "flood".to_string(),
        McpServerConfig {
            command: Some("python3".into()),
            args: vec![script.display().to_string()],
            env: [
                ("FLOOD_PIDFILE".to_string(), pidfile.display().to_string()),
                ("FLOOD_SENT".to_string(), sent.display().to_string()),
            ]
            .into(),
            timeout_ms: Some(20_000),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    let echoed = tools
        .call("Writer", "echo", &json!({"text": "one"}))
        .await
        .expect("echo answers");
    assert_eq!(echoed, "one");
    let first = std::fs::read_to_string(&pidfile).expect("pid");

    let started = Instant::now();
    let e = tools
        .call("Writer", "flood", &json!({}))
        .await
        .expect_err("an endless result is an error");
    let took = started.elapsed();
    let sent_bytes: u64 = std::fs::read_to_string(&sent)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let peak = peak_rss_kib();
    eprintln!(
        "error after {took:?}, server wrote {} MiB, test peak {} MiB: {e}",
        sent_bytes >> 20,
        peak / 1024
    );
    let ToolError::Failed { message, .. } = &e else {
        panic!("a failed call, not {e:?}");
    };
    assert!(message.contains("longer than 16 MiB"), "{message}");
    assert!(message.contains("started again"), "{message}");
    assert!(
        took < Duration::from_secs(15),
        "cut at the cap, not by the timeout"
    );
    assert!(sent_bytes < 64 << 20, "the server wrote {sent_bytes} bytes");
    assert!(
        peak < 200 * 1024,
        "the client peaked at {} MiB",
        peak / 1024
    );

    // the next call starts a new server
    let echoed = tools
        .call("Writer", "echo", &json!({"text": "two"}))
        .await
        .expect("started again");
    assert_eq!(echoed, "two");
    let second = std::fs::read_to_string(&pidfile).expect("pid");
    assert_ne!(first, second, "a new server process");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&first) {
        assert!(
            Instant::now() < deadline,
            "the flooding server was not stopped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tools.shutdown().await;
}

/// The tools of one streamable HTTP MCP server, `name` at `url`, each call bounded by
/// `timeout_ms`.
fn http_tools(name: &str, url: &str, timeout_ms: u64) -> McpTools {
    McpTools::new([(
        name.to_string(),
        McpServerConfig {
            url: Some(url.to_string()),
            timeout_ms: Some(timeout_ms),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config")
}

/// Read a request's head (up to the blank line); whether it came whole.
fn read_head(stream: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// A loopback HTTP server that answers every request with `answer`; returns its port and the
/// number of requests it received.
fn http_server(answer: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("addr").port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            read_head(&mut stream);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, count)
}

/// Issue 21, item 6 for MCP: a streamable HTTP server that answers `307` to another origin
/// used to have the JSON-RPC message re-POSTed there. Now no redirect is followed: the other
/// origin receives nothing and connecting fails.
#[tokio::test]
async fn an_mcp_http_redirect_to_another_origin_is_not_followed() {
    let (elsewhere, received) = http_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
            .to_string(),
    );
    let (port, _) = http_server(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{elsewhere}/steal\r\n\
         content-length: 0\r\n\r\n"
    ));
    let tools = http_tools(
        "remote",
        &format!("http://user:secret@127.0.0.1:{port}/mcp"),
        5_000,
    );
    let e = tools
        .tools_for("Writer")
        .await
        .expect_err("a redirect is not followed");
    eprintln!("{e}");
    assert_eq!(
        received.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the other origin was called"
    );
    assert!(e.to_string().contains("redirect"), "{e}");
    assert!(!e.to_string().contains("secret"), "{e}");
    tools.shutdown().await;
}

/// A loopback HTTP server answering every request with `head`, then `chunk` again and again
/// until the client goes away; returns its port and the body bytes it wrote in all.
fn endless_http_server(
    head: &'static str,
    chunk: &'static [u8],
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("addr").port();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = written.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                if !read_head(&mut stream) || stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                // at most 1 GiB: a client that reads without end is stopped by the test's
                // own timeout, not by this server
                for _ in 0..(1usize << 30) / chunk.len() {
                    if stream.write_all(chunk).is_err() {
                        return;
                    }
                    count.fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    (port, written)
}

/// Connect to an HTTP MCP server that answers the handshake with a body that never ends: the
/// connection fails within 30 s, saying the message was too long, and the server could
/// write little more than the cap before the client stopped reading.
async fn endless_reply_is_cut(head: &'static str, chunk: &'static [u8]) {
    let (port, written) = endless_http_server(head, chunk);
    let tools = http_tools("endless", &format!("http://127.0.0.1:{port}/mcp"), 60_000);
    let started = Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(30), tools.tools_for("Writer"))
        .await
        .expect("the endless reply was read for 30 s: it is not bounded")
        .expect_err("an endless reply is no handshake");
    eprintln!("{e} ({} ms)", started.elapsed().as_millis());
    assert!(e.to_string().contains("longer than 16 MiB"), "{e}");
    // the client stopped reading: the server's writes end at the cap plus what the
    // sockets hold
    tokio::time::sleep(Duration::from_millis(500)).await;
    let n = written.load(std::sync::atomic::Ordering::SeqCst);
    assert!(n < 64 << 20, "the server wrote {n} bytes");
    assert!(
        n >= 16 << 20,
        "the server wrote only {n} bytes: the cap was not reached"
    );
    tools.shutdown().await;
}

/// A JSON reply that never ends is cut at 16 MiB.
#[tokio::test]
async fn an_endless_json_reply_over_http_is_cut() {
    endless_reply_is_cut(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n[",
        &[b' '; 64 * 1024],
    )
    .await;
}

/// An event of an event stream that never ends (data lines, never the blank line that ends
/// an event) is cut at 16 MiB.
#[tokio::test]
async fn an_endless_event_over_http_is_cut() {
    const LINE: &[u8] =
        b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
    endless_reply_is_cut(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        LINE,
    )
    .await;
}
