//! The body bound of `ufo_mcp::http::serve`, made small: a body over the cap is 413 on every
//! route, however the route reads it.

use std::sync::Arc;

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
        max_body_bytes: 64 * 1024,
        ..Limits::default()
    }
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
