//! The connection and body bounds of `ufo_mcp::http::serve`, with bounds made small so each
//! case takes a second (docs/serve.md, "Connections"): a connection that shows no valid token
//! in time is closed while an authenticated one keeps the longer idle timeout; a full table
//! gives the oldest unauthenticated slot to a newcomer and never an authenticated one; a body
//! over the cap is 413 on every route, however the route reads it.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use ufo_core::access::Role;
use ufo_desktop::SimDesktop;
use ufo_mcp::http::tokens::TokenFile;
use ufo_mcp::http::{serve, Gate, HttpServe, Limits};

/// A server on a free loopback port with `limits`: its port and a valid token; it stops when
/// the returned sender is dropped.
async fn start(
    limits: Limits,
) -> (
    u16,
    String,
    tokio::sync::oneshot::Sender<()>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = TokenFile::new(dir.path().join("tokens.json"));
    let token = tokens.add("laptop", Role::User, 1).expect("a token");
    let desktop = Arc::new(
        SimDesktop::from_json_str(r#"{"apps": [{"name": "Term", "controls": []}]}"#)
            .expect("scenario"),
    );
    // a route of the binary's that reads the whole body and, as rmcp does, answers a failed
    // read with 500
    let routes = axum::Router::new().route(
        "/echo",
        axum::routing::post(|body: Body| async move {
            match axum::body::to_bytes(body, usize::MAX).await {
                Ok(b) => (StatusCode::OK, format!("{} bytes", b.len())).into_response(),
                Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("addr").port();
    let gate = Arc::new(Gate::new(tokens, &limits));
    let config = HttpServe {
        desktop,
        allow_actions: false,
        allow_shell: false,
        host_names: Vec::new(),
        tls: None,
        gate,
        limits,
        routes: Some(routes),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(listener, config, async move {
        let _ = stopped.await;
    }));
    (port, token, stop, dir)
}

fn small() -> Limits {
    Limits {
        first_request_timeout: Duration::from_millis(800),
        idle_timeout: Duration::from_secs(30),
        max_connections: 4,
        max_body_bytes: 64 * 1024,
        ..Limits::default()
    }
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

/// `GET /mcp` with `token` on `s`, kept alive: the status. Without `Accept: text/event-stream`
/// it is answered at once (406) after the token check, with a body of known length.
fn authenticated_request(s: &mut TcpStream, port: u16, token: &str) -> u16 {
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .expect("write");
    read_answer(s)
}

/// Read one answer with a `Content-Length` body: its status (0 when closed first).
fn read_answer(s: &mut TcpStream) -> u16 {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(0) | Err(_) => return 0,
            Ok(_) => got.push(byte[0]),
        }
    }
    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    if s.read_exact(&mut body).is_err() {
        return 0;
    }
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Whether the server closed `s` within `within` (it reads end-of-file).
fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    s.set_read_timeout(Some(within)).expect("timeout");
    match s.read(&mut [0u8; 1]) {
        Ok(0) => Some(started.elapsed()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(started.elapsed()),
        _ => None,
    }
}

#[tokio::test]
async fn a_connection_without_a_valid_token_is_closed_at_the_first_request_deadline() {
    let (port, token, _stop, _dir) = start(small()).await;
    tokio::task::spawn_blocking(move || {
        let mut idle = connect(port);
        let closed = closed_within(&mut idle, Duration::from_secs(5));
        eprintln!("an idle connection was closed after {closed:?}");
        assert!(
            closed.is_some_and(|t| t < Duration::from_secs(2)),
            "still open: {closed:?}"
        );
        // a bad token does not count as one
        let mut bad = connect(port);
        assert_eq!(authenticated_request(&mut bad, port, "ufo_wrong"), 401);
        assert!(closed_within(&mut bad, Duration::from_secs(2)).is_some());
        // an authenticated connection idles past the deadline and is still served
        let mut good = connect(port);
        assert_eq!(authenticated_request(&mut good, port, &token), 406);
        assert_eq!(closed_within(&mut good, Duration::from_secs(2)), None);
        assert_eq!(authenticated_request(&mut good, port, &token), 406);
    })
    .await
    .expect("the client");
}

#[tokio::test]
async fn a_full_table_evicts_the_oldest_unauthenticated_connection_never_an_authenticated_one() {
    let limits = Limits {
        first_request_timeout: Duration::from_secs(30),
        ..small()
    };
    let (port, token, _stop, _dir) = start(limits).await;
    tokio::task::spawn_blocking(move || {
        // two authenticated, two idle: the table (4) is full
        let mut a = connect(port);
        let mut b = connect(port);
        assert_eq!(authenticated_request(&mut a, port, &token), 406);
        assert_eq!(authenticated_request(&mut b, port, &token), 406);
        let mut idle1 = connect(port);
        std::thread::sleep(Duration::from_millis(100));
        let mut idle2 = connect(port);
        std::thread::sleep(Duration::from_millis(100));
        // a newcomer takes the oldest idle slot and is served
        let mut c = connect(port);
        assert_eq!(authenticated_request(&mut c, port, &token), 406);
        assert!(closed_within(&mut idle1, Duration::from_secs(2)).is_some());
        assert_eq!(closed_within(&mut idle2, Duration::from_millis(300)), None);
        // then idle2 goes for the next
        let mut d = connect(port);
        assert_eq!(authenticated_request(&mut d, port, &token), 406);
        assert!(closed_within(&mut idle2, Duration::from_secs(2)).is_some());
        // all four authenticated: a fifth is refused, the four are still served
        let mut e = connect(port);
        assert!(closed_within(&mut e, Duration::from_secs(2)).is_some());
        for s in [&mut a, &mut b, &mut c, &mut d] {
            assert_eq!(authenticated_request(s, port, &token), 406);
        }
    })
    .await
    .expect("the client");
}

#[tokio::test]
async fn a_body_over_the_cap_is_413_however_the_route_reads_it() {
    let (port, token, _stop, _dir) = start(small()).await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let chunked = |n: usize| {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            (0..n).map(|_| Ok(vec![b' '; 16 * 1024])).collect();
        reqwest::Body::wrap_stream(futures::stream::iter(chunks))
    };
    for path in ["/echo", "/mcp"] {
        let status = |body: reqwest::Body| {
            http.post(format!("{base}{path}"))
                .bearer_auth(&token)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .body(body)
                .send()
        };
        let big = status(chunked(8)).await.expect("an answer").status();
        assert_eq!(big.as_u16(), 413, "{path}: 128 KiB chunked");
        let declared = status(vec![b' '; 128 * 1024].into())
            .await
            .expect("an answer")
            .status();
        assert_eq!(declared.as_u16(), 413, "{path}: 128 KiB declared");
    }
    let small_echo = http
        .post(format!("{base}/echo"))
        .body(chunked(2))
        .send()
        .await
        .expect("an answer");
    assert_eq!(small_echo.status().as_u16(), 200);
    assert_eq!(small_echo.text().await.expect("text"), "32768 bytes");
}
