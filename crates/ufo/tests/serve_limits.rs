//! The bounds of `ufo serve` an adversary on the network tries first, through the real
//! binary on a simulated desktop (docs/serve.md, "Security defaults"): connections held open
//! without a token, token guesses spread over many source addresses, an oversized request
//! head and a chunked body over the cap.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::served::{new_token, ufo_at, Served};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

fn desktop_spec() -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/host_fail/desktop.json");
    format!("sim:{}", file.display())
}

fn serve(home: &Path, extra: &[&str]) -> Served {
    Served::start(ufo_at(home), &desktop_spec(), extra)
}

/// A client that connects from `from` (any 127.x.y.z is this machine on Linux).
fn client_from(from: Option<IpAddr>) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .local_address(from)
        .build()
        .expect("client")
}

/// POST an MCP `initialize` with `token`; the status.
async fn initialize(client: &reqwest::Client, url: &str, token: &str) -> u16 {
    client
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or_else(|e| panic!("no answer to an initialize: {e}"))
}

/// Send `head` (a request's head, ending in a blank line) and `body` on a new connection; the
/// status of the answer (0 when the server closed without one).
fn raw_status(port: u16, head: &str, body: &[u8]) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // the server may answer (and close) before it read everything: a failed write is fine
    let _ = s
        .write_all(head.as_bytes())
        .and_then(|()| s.write_all(body));
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// An attacker without a token opens more connections than the server serves at once and
/// sends nothing: a client with a valid token that comes next is still served at once (the
/// oldest connection that never showed a token gives way), not refused until the idle
/// timeout frees a slot.
#[tokio::test]
async fn idle_connections_without_a_token_never_lock_a_token_holder_out() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let port = server.port();
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    // let the server accept them all
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let status = initialize(&client_from(None), &server.url, &token).await;
    let took = started.elapsed();
    eprintln!(
        "served after {took:?} with {} idle connections open",
        idle.len()
    );
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // the server gave way to it by closing idle ones (the oldest first), never by hanging
    let closed = idle.iter().any(|s| {
        let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
        matches!((&mut &*s).read(&mut [0u8; 1]), Ok(0))
    });
    assert!(closed, "no idle connection was closed");
}

/// 500 guesses, ten from each of 127.0.0.2 … 127.0.0.51: no address reaches its own
/// lockout, but the network's count (loopback is one network) turns the guesses into 429s;
/// a valid token from a neighbour address is served all along.
#[tokio::test]
async fn guesses_from_fifty_addresses_get_429_and_a_valid_token_still_passes() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let mut counts = std::collections::BTreeMap::<u16, usize>::new();
    for host in 2..=51u8 {
        let from = IpAddr::from([127, 0, 0, host]);
        let client = client_from(Some(from));
        for i in 0..10 {
            let guess = format!("ufo_guess-{host}-{i}");
            *counts
                .entry(initialize(&client, &server.url, &guess).await)
                .or_default() += 1;
        }
    }
    eprintln!("500 guesses answered: {counts:?}");
    let locked = counts.get(&429).copied().unwrap_or(0);
    let unauthorized = counts.get(&401).copied().unwrap_or(0);
    assert_eq!(locked + unauthorized, 500, "{counts:?}");
    assert!(unauthorized <= 30, "{counts:?}");
    assert!(locked >= 470, "{counts:?}");
    // an address that failed ten times itself is locked out, whatever it sends
    let guesser = client_from(Some(IpAddr::from([127, 0, 0, 2])));
    assert_eq!(initialize(&guesser, &server.url, &token).await, 429);
    // a valid token from any other address of the network passes
    for from in [[127, 0, 0, 1], [127, 0, 0, 52], [127, 1, 2, 3]] {
        let client = client_from(Some(IpAddr::from(from)));
        assert_eq!(
            initialize(&client, &server.url, &token).await,
            200,
            "a valid token from {from:?}"
        );
    }
}

/// The request line and headers together may be 32 KiB (docs/serve.md); one byte more is
/// 431, whether in one header or many.
#[tokio::test]
async fn the_request_head_is_capped_at_32_kib_with_431() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let port = server.port();
    let head = |pad: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n{pad}\r\n",
            INITIALIZE.len()
        )
    };
    let one = |n: usize| format!("X-Pad: {}\r\n", "a".repeat(n));
    let fine = head(&one(30 * 1024));
    assert_eq!(raw_status(port, &fine, INITIALIZE.as_bytes()), 200);
    let big = head(&one(40 * 1024));
    assert_eq!(raw_status(port, &big, INITIALIZE.as_bytes()), 431);
    let many: String = (0..10)
        .map(|i| format!("X-Pad-{i}: {}\r\n", "b".repeat(4000)))
        .collect();
    assert_eq!(raw_status(port, &head(&many), INITIALIZE.as_bytes()), 431);
    // exactly at the cap is accepted, one byte over is not
    let base = head("").len();
    let exact = head(&one(32 * 1024 - base - "X-Pad: \r\n".len()));
    assert_eq!(exact.len(), 32 * 1024);
    assert_eq!(raw_status(port, &exact, INITIALIZE.as_bytes()), 200);
    let over = head(&one(32 * 1024 - base - "X-Pad: \r\n".len() + 1));
    assert_eq!(raw_status(port, &over, INITIALIZE.as_bytes()), 431);
}

/// A chunked body (no Content-Length) past 1 MiB is 413, as a declared one is: on `/mcp`
/// and on the console's routes.
#[tokio::test]
async fn a_chunked_body_over_1_mib_gets_413() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let port = server.port();
    let chunked = |path: &str, auth: &str| {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        let chunk = vec![b' '; 64 * 1024];
        let mut body = Vec::new();
        for _ in 0..32 {
            body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            body.extend_from_slice(&chunk);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"0\r\n\r\n");
        raw_status(port, &head, &body)
    };
    let auth = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(chunked("/mcp", &auth), 413);
    assert_eq!(chunked("/login", ""), 413);
    // a chunked body under the cap is served
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let body = format!("{:x}\r\n{INITIALIZE}\r\n0\r\n\r\n", INITIALIZE.len());
    assert_eq!(raw_status(port, &head, body.as_bytes()), 200);
}
