//! Hostile servers and hostile configuration (issue "Hardening"): a `Retry-After` that does
//! not fit in a duration, an endless body, credentials in the base URL, bad timeouts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use ufo_core::ports::LlmClient;
use ufo_llm::{
    from_spec, redact_url, AnthropicClient, AnthropicConfig, Env, HttpSettings, LlmOptions,
    OpenAiClient, OpenAiConfig, RetryPolicy,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn completion() -> serde_json::Value {
    json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    })
}

fn anthropic_message() -> serde_json::Value {
    json!({
        "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 1, "output_tokens": 1}
    })
}

fn openai(base_url: String, settings: HttpSettings) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url,
        api_key: None,
        key_hint: "OPENAI_API_KEY".into(),
        settings,
    })
    .unwrap()
}

fn anthropic(base_url: String, settings: HttpSettings) -> AnthropicClient {
    AnthropicClient::new(AnthropicConfig {
        model: "m".into(),
        base_url,
        api_key: None,
        key_hint: "ANTHROPIC_API_KEY".into(),
        settings,
    })
    .unwrap()
}

/// A server answering 429 with `name: value` once, then `ok`.
async fn throttling_server(name: &str, value: &str, ok: serde_json::Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header(name, value))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// Defect 3: `Retry-After: 1e20` and `retry-after-ms` beyond 2^64 s used to panic converting
/// to a `Duration`, with both providers. Now the wait is clamped to `max_retry_after`.
#[tokio::test]
async fn a_retry_after_beyond_any_duration_is_clamped_for_both_providers() {
    let headers = [
        ("retry-after", "1e20"),
        ("retry-after", "inf"),
        ("retry-after-ms", "18446744073709551616000"),
        ("retry-after-ms", "1e300"),
        ("retry-after", "NaN"),
        ("retry-after", "-5"),
    ];
    for (name, value) in headers {
        let server = throttling_server(name, value, completion()).await;
        let r = openai(format!("{}/v1", server.uri()), quick_settings())
            .complete(&text_request("x"))
            .await
            .unwrap();
        assert_eq!(r.text, "ok", "openai, {name}: {value}");

        let server = throttling_server(name, value, anthropic_message()).await;
        let r = anthropic(server.uri(), quick_settings())
            .complete(&text_request("x"))
            .await
            .unwrap();
        assert_eq!(r.text, "ok", "anthropic, {name}: {value}");
    }
}

/// A loopback HTTP server that answers every request with a 200 whose chunked body never
/// ends (up to a safety limit of 1 GiB, so a broken client cannot exhaust the machine).
/// Returns its port, the number of connections and the bytes it managed to send.
async fn endless_server() -> (u16, Arc<AtomicUsize>, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let (c, s) = (connections.clone(), sent.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            tokio::spawn(async move {
                // Read the request head (the body is small and ignored).
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let start = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                             transfer-encoding: chunked\r\n\r\n";
                if stream.write_all(start.as_bytes()).await.is_err() {
                    return;
                }
                let payload = vec![b' '; 64 * 1024];
                let chunk = [
                    format!("{:x}\r\n", payload.len()).into_bytes(),
                    payload,
                    b"\r\n".to_vec(),
                ]
                .concat();
                while s.load(Ordering::SeqCst) < (1 << 30) {
                    if stream.write_all(&chunk).await.is_err() {
                        return;
                    }
                    s.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                }
                let _ = stream.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    (port, connections, sent)
}

/// Defect 4 (HTTP): an endless 200 body used to be buffered whole (abort at 4 GB). Now it
/// is read up to 16 MiB, then the call fails at once with a clear, non-retried error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_body_is_cut_at_the_cap_and_not_retried() {
    let (port, connections, sent) = endless_server().await;
    // Long timeouts: only the cap can end this call early.
    let settings = HttpSettings {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            read_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
            ..RetryPolicy::default()
        },
        ..HttpSettings::default()
    };
    let client = openai(format!("http://127.0.0.1:{port}/v1"), settings);
    let e = tokio::time::timeout(
        Duration::from_secs(120),
        client.complete(&text_request("x")),
    )
    .await
    .expect("the call ends long before the safety timeout")
    .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("larger than 16 MiB"), "{msg}");
    assert!(msg.contains("/v1/chat/completions"), "{msg}");
    assert_eq!(connections.load(Ordering::SeqCst), 1, "not retried");
    // The client hung up: the server could not push anywhere near its 1 GiB limit.
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent < 256 << 20, "the server sent {sent} bytes");
}

/// A `Content-Length` above the cap is refused before reading anything.
#[tokio::test]
async fn an_announced_oversized_body_is_refused() {
    let server = MockServer::start().await;
    let big = vec![b' '; ufo_llm::retry::MAX_BODY_BYTES + 1];
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(big))
        .mount(&server)
        .await;
    let e = anthropic(server.uri(), quick_settings())
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("larger than 16 MiB"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

fn assert_no_secret(text: &str) {
    for secret in ["secret", "SECRET", "hunter2"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}

/// Defect 13: credentials in the base URL (userinfo, `key=` query) never appear in errors,
/// `Debug` output or `describe()`, for failures of every kind and both providers.
#[tokio::test]
async fn credentials_in_the_base_url_never_appear_in_errors() {
    // 500 storm, 404, then a malformed 200.
    for (status, body) in [
        (500, "internal error"),
        (404, "no such route"),
        (200, "<html>x</html>"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_string(body))
            .mount(&server)
            .await;
        let authority = server.uri().replace("http://", "");
        let base = format!("http://user:secret@{authority}/v1?key=SECRET&token=hunter2");
        let o = openai(base.clone(), quick_settings());
        let a = anthropic(base, quick_settings());
        for (name, client) in [("openai", &o as &dyn LlmClient), ("anthropic", &a)] {
            let e = client.complete(&text_request("x")).await.unwrap_err();
            let (_, msg) = err_text(&e);
            assert_no_secret(&msg);
            assert!(msg.contains("***"), "{name} {status}: {msg}");
            assert!(msg.contains(&authority), "{name} {status}: {msg}");
            assert_no_secret(&client.describe());
        }
        assert_no_secret(&format!("{o:?} {a:?}"));
        // The query still reaches the server, after the path.
        let reqs = server.received_requests().await.unwrap();
        assert!(
            reqs.iter()
                .all(|r| r.url.query() == Some("key=SECRET&token=hunter2")),
            "{:?}",
            reqs.iter().map(|r| r.url.to_string()).collect::<Vec<_>>()
        );
    }
    // Connection refused: reqwest's own message quotes the URL.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://user:secret@127.0.0.1:{port}/v1?key=SECRET");
    let e = openai(base, quick_settings())
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable");
    assert_no_secret(&msg);
    assert!(msg.contains("cannot connect"), "{msg}");
    assert_eq!(
        redact_url("http://user:secret@h/v1?key=SECRET"),
        "http://***@h/v1?key=***"
    );
}

fn spec_error(vars: &[(&str, &str)]) -> String {
    let opts = LlmOptions {
        env: Env::from_pairs(vars.iter().copied()),
        ..LlmOptions::default()
    };
    match from_spec("openai:m", &opts) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// Defect 3: `UFO_LLM_TIMEOUT_SECS=1e30` used to panic; NaN, infinities, negatives, zero
/// and values above one day are configuration errors that say what to write.
#[test]
fn bad_timeouts_and_attempts_are_configuration_errors() {
    let base = ("UFO_LLM_BASE_URL", "http://127.0.0.1:9/v1");
    for bad in ["1e30", "NaN", "inf", "-inf", "-1", "0", "86401", "ten"] {
        let e = spec_error(&[base, ("UFO_LLM_TIMEOUT_SECS", bad)]);
        assert!(e.contains("UFO_LLM_TIMEOUT_SECS"), "{bad}: {e}");
        assert!(e.contains("above 0 and at most 86400"), "{bad}: {e}");
    }
    for good in ["0.5", "120", "86400"] {
        assert_eq!(spec_error(&[base, ("UFO_LLM_TIMEOUT_SECS", good)]), "");
    }
    for bad in ["0", "101", "4294967296", "-1", "2.5"] {
        let e = spec_error(&[base, ("UFO_LLM_MAX_ATTEMPTS", bad)]);
        assert!(e.contains("from 1 to 100"), "{bad}: {e}");
    }
    assert_eq!(spec_error(&[base, ("UFO_LLM_MAX_ATTEMPTS", "100")]), "");
}

/// Issue 21, item 6: a model server that answers `307` to another origin used to get the
/// prompt re-POSTed there with the key (`x-api-key` for Anthropic) and the `UFO_LLM_HEADERS`
/// headers. Now no redirect is followed: the other origin receives nothing and the call fails
/// at once with a message that says to set the base URL to the final address.
#[tokio::test]
async fn a_redirect_to_another_origin_gets_no_credentials_and_is_a_clear_error() {
    for provider in ["openai", "anthropic"] {
        for status in [307, 308, 301, 302, 303] {
            let elsewhere = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(completion()))
                .mount(&elsewhere)
                .await;
            Mock::given(method("GET"))
                .respond_with(ResponseTemplate::new(200).set_body_json(completion()))
                .mount(&elsewhere)
                .await;
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(status).insert_header(
                    "location",
                    format!("{}/steal?token=SECRET", elsewhere.uri()).as_str(),
                ))
                .mount(&server)
                .await;
            let settings = HttpSettings {
                extra_headers: vec![("X-Team-Token".into(), "hunter2".into())],
                ..quick_settings()
            };
            let key = Some(ufo_llm::ApiKey::new("sk-secret-key"));
            let client: Box<dyn LlmClient> = if provider == "openai" {
                Box::new(
                    OpenAiClient::new(OpenAiConfig {
                        model: "m".into(),
                        base_url: format!("{}/v1", server.uri()),
                        api_key: key,
                        key_hint: "OPENAI_API_KEY".into(),
                        settings,
                    })
                    .unwrap(),
                )
            } else {
                Box::new(
                    AnthropicClient::new(AnthropicConfig {
                        model: "m".into(),
                        base_url: server.uri(),
                        api_key: key,
                        key_hint: "ANTHROPIC_API_KEY".into(),
                        settings,
                    })
                    .unwrap(),
                )
            };
            let result = client.complete(&text_request("x")).await;
            let received: Vec<String> = elsewhere
                .received_requests()
                .await
                .unwrap()
                .iter()
                .map(|r| format!("{} {:?}", r.method, r.headers))
                .collect();
            assert!(
                received.is_empty(),
                "{provider} {status}: the other origin was called: {received:?}"
            );
            let (kind, msg) = err_text(result.as_ref().unwrap_err());
            let ctx = format!("{provider} {status}: {msg}");
            assert_eq!(kind, "fatal", "{ctx}");
            assert!(
                msg.contains("answered a redirect to"),
                "the message says what happened: {ctx}"
            );
            assert!(msg.contains(&format!("{}/steal", elsewhere.uri())), "{ctx}");
            assert!(
                msg.contains("set the base URL to the final address"),
                "{ctx}"
            );
            assert_no_secret(&msg);
            assert_eq!(server.received_requests().await.unwrap().len(), 1, "{ctx}");
        }
    }
}
