//! Streamed answers: bounded by the time to the first token and the silence between tokens,
//! not by one total; a stalled stream is a retried timeout; dropping the call closes the
//! connection at once. Every server is a real loopback listener ([`common::LocalServer`]).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{completion, delta, err_text, quick_settings, sse, text_request, LocalServer, Reply};
use serde_json::json;
use ufo_core::ports::LlmClient;
use ufo_llm::{AnthropicClient, AnthropicConfig, HttpSettings, OpenAiClient, OpenAiConfig};

const ANSWER: &str = r#"{"Observation":"o","Thought":"t","Status":"FINISH"}"#;

/// Streaming on: 300 ms to the first token, 300 ms of silence at most; the whole-attempt
/// timeout of the quick settings (600 ms) would cut every answer below.
fn streaming() -> HttpSettings {
    let mut s = quick_settings();
    s.stream.enabled = true;
    s.stream.first_token = Duration::from_millis(300);
    s.stream.silence = Duration::from_millis(300);
    s
}

fn openai(url: &str, settings: HttpSettings) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: format!("{url}/v1"),
        api_key: None,
        key_hint: "UFO_LLM_API_KEY".into(),
        settings,
    })
    .unwrap()
}

/// The answer in pieces 150 ms apart: 1.2 s in all, twice the whole-attempt timeout, and
/// never 300 ms without a token.
fn slow_answer() -> Vec<(u64, String)> {
    let mut events: Vec<(u64, String)> = ANSWER
        .as_bytes()
        .chunks(7)
        .map(|c| (150, delta(std::str::from_utf8(c).unwrap())))
        .collect();
    events.push((
        0,
        json!({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 8}}).to_string(),
    ));
    events.push((0, "[DONE]".into()));
    events
}

#[tokio::test]
async fn a_slow_stream_within_its_bounds_is_read_whole() {
    let server = LocalServer::start(|_| sse(&slow_answer())).await;
    let client = openai(&server.url, streaming());
    let started = Instant::now();
    let answer = client.complete(&text_request("hi")).await.unwrap();
    assert!(
        started.elapsed() > Duration::from_millis(600),
        "slower than one total"
    );
    assert_eq!(answer.text, ANSWER);
    assert_eq!(
        (answer.usage.prompt_tokens, answer.usage.completion_tokens),
        (20, 8)
    );
    let body = &server.bodies()[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    // 7 tokens over ~1 s of generation
    let rate = client.throughput().unwrap();
    assert!(rate > 2.0 && rate < 20.0, "{rate}");
}

#[tokio::test]
async fn a_stream_that_stalls_is_a_retried_timeout() {
    let server = LocalServer::start(|_| {
        sse(&[
            (0, delta("{\"Obs")),
            (0, delta("ervation")),
            (2_000, delta("\"}")),
        ])
    })
    .await;
    let client = openai(&server.url, streaming());
    let started = Instant::now();
    let e = client.complete(&text_request("hi")).await.unwrap_err();
    let (kind, message) = err_text(&e);
    assert_eq!(kind, "unavailable", "{message}");
    assert!(message.contains("no token for 0.3 s"), "{message}");
    assert_eq!(server.bodies().len(), 3, "retried as the policy says");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn no_first_token_in_time_is_a_retried_timeout() {
    let server = LocalServer::start(|_| sse(&[(2_000, delta("late"))])).await;
    let client = openai(&server.url, streaming());
    let e = client.complete(&text_request("hi")).await.unwrap_err();
    let (_, message) = err_text(&e);
    assert!(message.contains("no first token within 0.3 s"), "{message}");
    assert_eq!(server.bodies().len(), 3);
}

/// Ctrl-C drops the call: the connection closes at once and the server's next write fails.
#[tokio::test]
async fn dropping_the_call_cuts_the_stream_at_once() {
    let server =
        LocalServer::start(|_| sse(&(0..200).map(|_| (50, delta("x"))).collect::<Vec<_>>())).await;
    let url = server.url.clone();
    let call = tokio::spawn(async move {
        openai(&url, streaming())
            .complete(&text_request("hi"))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    call.abort();
    let aborted = Instant::now();
    while server.broken.load(Ordering::SeqCst) == 0 {
        assert!(
            aborted.elapsed() < Duration::from_secs(2),
            "the server kept streaming"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        aborted.elapsed() < Duration::from_millis(500),
        "{:?}",
        aborted.elapsed()
    );
}

/// A server that answers a stream request with one JSON body is read as before.
#[tokio::test]
async fn a_whole_answer_to_a_stream_request_is_read_as_before() {
    let server = LocalServer::start(|_| Reply::json(200, completion(ANSWER))).await;
    let client = openai(&server.url, streaming());
    assert_eq!(
        client.complete(&text_request("hi")).await.unwrap().text,
        ANSWER
    );
    assert_eq!(client.throughput(), None);
}

#[tokio::test]
async fn anthropic_streams_the_forced_tool_input() {
    let events = |kind: &str, data: serde_json::Value| -> (Duration, String) {
        (
            Duration::from_millis(50),
            format!("event: {kind}\ndata: {data}\n\n"),
        )
    };
    let server = LocalServer::start(move |_| Reply {
        status: 200,
        content_type: "text/event-stream; charset=utf-8",
        chunks: vec![
            events("message_start", json!({"type": "message_start",
                "message": {"usage": {"input_tokens": 30}}})),
            events("content_block_start", json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "name": "host_response", "input": {}}})),
            events("ping", json!({"type": "ping"})),
            events("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta",
                    "partial_json": "{\"Status\": \"FINISH\", \"Thought\""}})),
            events("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": ": \"t\", \"Observation\": \"o\"}"}})),
            events("message_delta", json!({"type": "message_delta", "usage": {"output_tokens": 11}})),
            events("message_stop", json!({"type": "message_stop"})),
        ],
    })
    .await;
    let client = AnthropicClient::new(AnthropicConfig {
        model: "claude-test".into(),
        base_url: server.url.clone(),
        api_key: None,
        key_hint: "ANTHROPIC_API_KEY".into(),
        settings: streaming(),
    })
    .unwrap();
    let mut request = text_request("hi");
    request.response_schema = Some(ufo_core::response::host_schema());
    let answer = client.complete(&request).await.unwrap();
    assert_eq!(answer.text, ANSWER);
    assert_eq!(
        (answer.usage.prompt_tokens, answer.usage.completion_tokens),
        (30, 11)
    );
    assert_eq!(server.bodies()[0]["stream"], true);
    assert!(client.throughput().is_some());
}

/// The environment turns streaming on and sets its bounds; bad values say what to write.
#[test]
fn streaming_from_the_environment() {
    use ufo_llm::spec::settings_from_env;
    use ufo_llm::{Env, LlmOptions};
    let opts = |pairs: &[(&str, &str)]| LlmOptions {
        env: Env::from_pairs(pairs.iter().copied()),
        ..LlmOptions::default()
    };
    let s = settings_from_env(&opts(&[])).unwrap();
    assert!(
        !s.stream.enabled,
        "the library's default is off; ufo's [streaming] is on"
    );
    let s = settings_from_env(&opts(&[
        ("UFO_LLM_STREAM", "true"),
        ("UFO_LLM_FIRST_TOKEN_SECS", "600"),
        ("UFO_LLM_SILENCE_SECS", "2.5"),
    ]))
    .unwrap();
    assert!(s.stream.enabled);
    assert_eq!(s.stream.first_token, Duration::from_secs(600));
    assert_eq!(s.stream.silence, Duration::from_millis(2500));
    let e = settings_from_env(&opts(&[("UFO_LLM_STREAM", "maybe")])).unwrap_err();
    assert!(e.to_string().contains("true or false"), "{e}");
    let e = settings_from_env(&opts(&[("UFO_LLM_SILENCE_SECS", "0")])).unwrap_err();
    assert!(e.to_string().contains("UFO_LLM_SILENCE_SECS"), "{e}");
}

/// A server that refuses a stream (or its `stream_options`) is asked for whole answers from
/// then on, said once.
#[tokio::test]
async fn a_server_that_refuses_streams_gets_whole_answers() {
    let server = LocalServer::start(|body: &str| {
        if body.contains("stream_options") {
            Reply::json(
                400,
                json!({"error": {"message": "Unrecognized request argument: stream_options"}}),
            )
        } else {
            Reply::json(200, completion(ANSWER))
        }
    })
    .await;
    let client = openai(&server.url, streaming());
    assert_eq!(
        client.complete(&text_request("hi")).await.unwrap().text,
        ANSWER
    );
    client.complete(&text_request("hi")).await.unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["stream"], true);
    assert!(bodies[1].get("stream").is_none() && bodies[2].get("stream").is_none());
    let notes = client.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        (notes[0].about.as_str(), notes[0].now.as_str()),
        ("streaming", "off")
    );
}
