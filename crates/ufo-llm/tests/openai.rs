//! The OpenAI-compatible and Azure clients against a local fake server speaking their wire
//! format.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use ufo_core::ports::LlmClient;
use ufo_llm::{ApiKey, AzureConfig, OpenAiClient, OpenAiConfig};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn completion(content: serde_json::Value) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168}
    })
}

fn client(server: &MockServer, key: Option<&str>) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        model: "gpt-test".into(),
        base_url: format!("{}/v1", server.uri()),
        api_key: key.map(ApiKey::new),
        key_hint: "OPENAI_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: quick_settings(),
    })
    .unwrap()
}

#[tokio::test]
async fn success_with_usage_and_wire_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(completion(json!("{\"Status\":\"FINISH\"}"))),
        )
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server, Some("sk-test"));
    assert_eq!(c.describe(), "openai:gpt-test");
    let r = c.complete(&text_request("hello")).await.unwrap();
    assert_eq!(r.text, "{\"Status\":\"FINISH\"}");
    assert_eq!(r.usage.prompt_tokens, 123);
    assert_eq!(r.usage.completion_tokens, 45);
    let body = &bodies(&server).await[0];
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(
        body["messages"][0]["content"],
        "You are the HostAgent. Answer in JSON."
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hello"})
    );
}

#[tokio::test]
async fn no_key_no_auth_header_and_no_json_mode_when_not_asked() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .mount(&server)
        .await;
    let c = client(&server, None);
    let mut req = text_request("x");
    req.json_mode = false;
    c.complete(&req).await.unwrap();
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    let body: serde_json::Value = serde_json::from_slice(&received[0].body).unwrap();
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn extra_headers_temperature_max_tokens_and_allow_json_mode_off() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-gateway", "abc"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .expect(1)
        .mount(&server)
        .await;
    let mut settings = quick_settings();
    settings
        .extra_headers
        .push(("X-Gateway".into(), "abc".into()));
    settings.temperature = Some(0.0);
    settings.max_tokens = Some(800);
    settings.allow_json_mode = false;
    let c = OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: format!("{}/v1/", server.uri()),
        api_key: None,
        key_hint: "OPENAI_API_KEY".into(),
        settings,
    })
    .unwrap();
    c.complete(&text_request("x")).await.unwrap();
    let body = &bodies(&server).await[0];
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 800);
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn image_is_sent_as_base64_png_data_url() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .mount(&server)
        .await;
    client(&server, Some("k"))
        .complete(&image_request())
        .await
        .unwrap();
    let body = &bodies(&server).await[0];
    let parts = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": "Controls: [1] OK"})
    );
    assert_eq!(
        parts[1],
        json!({"type": "text", "text": "annotated screenshot"})
    );
    assert_eq!(parts[2]["type"], "image_url");
    assert_eq!(
        parts[2]["image_url"]["url"],
        format!("data:image/png;base64,{}", png_b64())
    );
    assert_eq!(parts[2]["image_url"]["detail"], "high");
    assert_eq!(
        parts[3],
        json!({"type": "text", "text": "Choose an action."})
    );
}

#[tokio::test]
async fn a_429_then_success_is_retried_honouring_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "120")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
                ),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .with_priority(2)
        .mount(&server)
        .await;
    let start = Instant::now();
    let r = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
    assert!(
        start.elapsed() >= Duration::from_millis(110),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_long_retry_after_is_capped() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "30"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .with_priority(2)
        .mount(&server)
        .await;
    let start = Instant::now();
    client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap();
    // max_retry_after is 200 ms in the quick settings.
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_500_storm_exhausts_the_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_json(json!({"error": {"message": "The server had an error"}})),
        )
        .mount(&server)
        .await;
    let e = client(&server, Some("k"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("HTTP 500"), "{msg}");
    assert!(msg.contains("The server had an error"), "{msg}");
    assert!(msg.contains("3 time(s)"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_timeout_is_retried_then_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion(json!("late")))
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let start = Instant::now();
    let e = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("timed out"), "{msg}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn connection_refused_is_unavailable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: None,
        key_hint: "OPENAI_API_KEY".into(),
        settings: quick_settings(),
    })
    .unwrap();
    let e = c.complete(&text_request("x")).await.unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable", "{msg}");
    assert!(msg.contains("cannot connect"), "{msg}");
}

#[tokio::test]
async fn a_malformed_body_is_fatal() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>welcome</html>"))
        .mount(&server)
        .await;
    let e = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("not a chat completion"), "{msg}");
    assert!(msg.contains("<html>welcome</html>"), "{msg}");
    assert!(msg.contains("/v1/chat/completions"), "{msg}");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"choices": []})))
        .mount(&server)
        .await;
    let e = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    assert!(err_text(&e).1.contains("no choices[0].message"));
}

#[tokio::test]
async fn empty_and_refusal_content() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!(null))))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    let mut refusal = completion(json!(null));
    refusal["choices"][0]["message"]["refusal"] = json!("I can't help with that.");
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(refusal))
        .with_priority(2)
        .mount(&server)
        .await;
    let c = client(&server, None);
    let empty = c.complete(&text_request("x")).await.unwrap();
    assert_eq!(empty.text, "");
    let refused = c.complete(&text_request("x")).await.unwrap();
    assert_eq!(refused.text, "I can't help with that.");
}

#[tokio::test]
async fn content_as_parts_and_missing_usage_is_estimated() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant",
                "content": [{"type": "text", "text": "ab"}, {"type": "text", "text": "cd"}]}}]
        })))
        .mount(&server)
        .await;
    let r = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap();
    assert_eq!(r.text, "abcd");
    assert_eq!(r.usage.completion_tokens, 1);
    assert!(r.usage.prompt_tokens > 0);
}

#[tokio::test]
async fn a_401_is_fatal_names_the_variable_and_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                      "code": "invalid_api_key"}
        })))
        .mount(&server)
        .await;
    let e = client(&server, Some("sk-wrong"))
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("OPENAI_API_KEY"), "{msg}");
    assert!(msg.contains("Incorrect API key provided"), "{msg}");
    assert!(!msg.contains("sk-wrong"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    // Without a key the message says none was set.
    let e = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    assert!(err_text(&e).1.contains("none was set"));
}

#[tokio::test]
async fn other_4xx_are_fatal_without_retry() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({
            "error": "model 'nope' not found, try pulling it first"
        })))
        .mount(&server)
        .await;
    let e = client(&server, None)
        .complete(&text_request("x"))
        .await
        .unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal", "{msg}");
    assert!(msg.contains("HTTP 404"), "{msg}");
    assert!(msg.contains("not found, try pulling it"), "{msg}");
    assert!(msg.contains("model"), "{msg}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

fn azure(server: &MockServer) -> OpenAiClient {
    OpenAiClient::azure(AzureConfig {
        endpoint: server.uri(),
        deployment: "gpt4o-dep".into(),
        api_version: "2024-10-21".into(),
        api_key: Some(ApiKey::new("az-key")),
        key_hint: "AZURE_OPENAI_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: quick_settings(),
    })
    .unwrap()
}

#[tokio::test]
async fn azure_success_uses_deployment_url_api_version_and_api_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt4o-dep/chat/completions"))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("api-key", "az-key"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .expect(1)
        .mount(&server)
        .await;
    let c = azure(&server);
    assert_eq!(c.describe(), "azure:gpt4o-dep");
    let r = c.complete(&text_request("x")).await.unwrap();
    assert_eq!(r.text, "ok");
    assert_eq!(r.usage.prompt_tokens, 123);
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    let body: serde_json::Value = serde_json::from_slice(&received[0].body).unwrap();
    assert!(body.get("model").is_none());
}

#[tokio::test]
async fn azure_retry_image_and_401() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"))))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"code": "401", "message": "Access denied due to invalid subscription key"}
        })))
        .with_priority(3)
        .mount(&server)
        .await;
    let c = azure(&server);
    assert_eq!(c.complete(&image_request()).await.unwrap().text, "ok");
    let body = &bodies(&server).await[1];
    assert_eq!(
        body["messages"][1]["content"][2]["image_url"]["url"],
        format!("data:image/png;base64,{}", png_b64())
    );
    let e = c.complete(&text_request("x")).await.unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "fatal");
    assert!(msg.contains("AZURE_OPENAI_API_KEY"), "{msg}");
    assert!(!msg.contains("az-key"), "{msg}");
}

#[test]
fn debug_output_hides_the_key() {
    let c = OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key: Some(ApiKey::new("sk-very-secret")),
        key_hint: "OPENAI_API_KEY".into(),
        settings: quick_settings(),
    })
    .unwrap();
    let text = format!("{c:?}");
    assert!(!text.contains("sk-very-secret"), "{text}");
}

#[test]
fn bad_settings_are_config_errors() {
    let mut settings = quick_settings();
    settings
        .extra_headers
        .push(("bad header".into(), "v".into()));
    let e = OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key: None,
        key_hint: "OPENAI_API_KEY".into(),
        settings,
    })
    .unwrap_err();
    assert!(e.to_string().contains("bad header"));
    let e = OpenAiClient::new(OpenAiConfig {
        model: "m".into(),
        base_url: " ".into(),
        api_key: None,
        key_hint: "OPENAI_API_KEY".into(),
        settings: quick_settings(),
    })
    .unwrap_err();
    assert!(e.to_string().contains("UFO_LLM_BASE_URL"));
}

#[tokio::test]
async fn a_key_echoed_by_the_server_is_scrubbed_from_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "error": {"message": "key sk-echoed-secret-999 is not allowed here"}
        })))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).set_body_string("upstream said: sk-echoed-secret-999"),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    let c = client(&server, Some("sk-echoed-secret-999"));
    for _ in 0..2 {
        let e = c.complete(&text_request("x")).await.unwrap_err();
        let msg = err_text(&e).1;
        assert!(!msg.contains("sk-echoed-secret-999"), "{msg}");
        assert!(msg.contains("***"), "{msg}");
    }
}
