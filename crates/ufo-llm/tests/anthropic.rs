//! The Anthropic client against a local fake server speaking the Messages API.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use ufo_core::ports::{ChatMessage, ChatRequest, LlmClient, MessageRole};
use ufo_llm::{AnthropicClient, AnthropicConfig, ApiKey};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn message(text: Option<&str>, stop: &str) -> serde_json::Value {
    let content = match text {
        Some(t) => json!([{"type": "text", "text": t}]),
        None => json!([]),
    };
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": 321, "output_tokens": 54}
    })
}

fn client(server: &MockServer, key: Option<&str>) -> AnthropicClient {
    AnthropicClient::new(AnthropicConfig {
        model: "claude-test".into(),
        base_url: server.uri(),
        api_key: key.map(ApiKey::new),
        key_hint: "ANTHROPIC_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: quick_settings(),
    })
    .unwrap()
}

#[tokio::test]
async fn success_with_usage_and_wire_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "ak-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(message(Some("{\"Status\":\"FINISH\"}"), "end_turn")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server, Some("ak-test"));
    assert_eq!(c.describe(), "anthropic:claude-test");
    let r = c.complete(&text_request("hello")).await.unwrap();
    assert_eq!(r.text, "{\"Status\":\"FINISH\"}");
    assert_eq!(r.usage.prompt_tokens, 321);
    assert_eq!(r.usage.completion_tokens, 54);
    let body = &bodies(&server).await[0];
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["system"], "You are the HostAgent. Answer in JSON.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hello"}]}])
    );
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn roles_are_merged_and_alternate() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(Some("ok"), "end_turn")))
        .mount(&server)
        .await;
    let req = ChatRequest {
        agent: "app".into(),
        messages: vec![
            ChatMessage::text(MessageRole::System, "sys one"),
            ChatMessage::text(MessageRole::User, "prompt"),
            ChatMessage::text(MessageRole::Assistant, "bad answer"),
            ChatMessage::text(MessageRole::User, "error: not JSON"),
            ChatMessage::text(MessageRole::User, "try again"),
            ChatMessage::text(MessageRole::System, "sys two"),
        ],
        json_mode: true,
        response_schema: None,
        max_tokens: None,
    };
    client(&server, Some("k")).complete(&req).await.unwrap();
    let body = &bodies(&server).await[0];
    assert_eq!(body["system"], "sys one\n\nsys two");
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn image_is_sent_as_a_base64_block() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(Some("ok"), "end_turn")))
        .mount(&server)
        .await;
    client(&server, Some("k"))
        .complete(&image_request())
        .await
        .unwrap();
    let body = &bodies(&server).await[0];
    let blocks = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(
        blocks[0],
        json!({"type": "text", "text": "Controls: [1] OK"})
    );
    assert_eq!(
        blocks[1],
        json!({"type": "text", "text": "annotated screenshot"})
    );
    assert_eq!(
        blocks[2],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": png_b64()}})
    );
    assert_eq!(body["system"], "You are the AppAgent.");
}

#[tokio::test]
async fn a_429_then_success_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"type": "error",
                    "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(Some("ok"), "end_turn")))
        .with_priority(2)
        .mount(&server)
        .await;
    let r = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn an_overloaded_storm_exhausts_the_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_json(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ))
        .mount(&server)
        .await;
    let e = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("HTTP 529: Overloaded"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_500_storm_exhausts_the_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_json(
            json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
        ))
        .mount(&server)
        .await;
    let e = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("Internal server error"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_timeout_is_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(message(Some("late"), "end_turn"))
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let e = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("timed out"), "{msg}");
}

#[tokio::test]
async fn a_malformed_body_is_fatal() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_string("{\"type\": \"message\", \"content\": "),
        )
        .mount(&server)
        .await;
    let e = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("not a message"), "{msg}");
}

#[tokio::test]
async fn refusal_and_empty_content_give_empty_text() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(None, "refusal")))
        .mount(&server)
        .await;
    let r = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap();
    assert_eq!(r.text, "");
    assert_eq!(r.usage.completion_tokens, 54);
}

#[tokio::test]
async fn a_401_is_fatal_and_names_the_variable() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"}
        })))
        .mount(&server)
        .await;
    let e = client(&server, Some("ak-wrong"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
    assert!(msg.contains("invalid x-api-key"), "{msg}");
    assert!(!msg.contains("ak-wrong"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn base_url_with_v1_and_cached_usage() {
    let server = MockServer::start().await;
    let mut body = message(Some("ok"), "end_turn");
    body["usage"] = json!({"input_tokens": 10, "output_tokens": 2,
        "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100});
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let c = AnthropicClient::new(AnthropicConfig {
        model: "m".into(),
        base_url: format!("{}/v1/", server.uri()),
        api_key: None,
        key_hint: "ANTHROPIC_API_KEY".into(),
        settings: quick_settings(),
    })
    .unwrap();
    let r = c.complete(&text_request("x")).await.unwrap();
    assert_eq!(r.usage.prompt_tokens, 115);
    assert_eq!(r.usage.completion_tokens, 2);
}
