//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use ufo_core::ports::{ChatMessage, ChatRequest, ContentPart, MessageRole};
use ufo_llm::{HttpSettings, RetryPolicy};

/// Settings that make retries and timeouts quick and deterministic.
pub fn quick_settings() -> HttpSettings {
    HttpSettings {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            max_retry_after: Duration::from_millis(200),
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_millis(400),
            request_timeout: Duration::from_millis(600),
        },
        ..HttpSettings::default()
    }
}

/// A tiny "PNG" (the bytes need not decode; providers only encode them).
pub fn png() -> Arc<Vec<u8>> {
    Arc::new(vec![
        0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 1, 2, 3, 250, 251,
    ])
}

/// A host request with a system prompt and a user prompt.
pub fn text_request(prompt: &str) -> ChatRequest {
    ChatRequest {
        agent: "host".into(),
        messages: vec![
            ChatMessage::text(
                MessageRole::System,
                "You are the HostAgent. Answer in JSON.",
            ),
            ChatMessage::text(MessageRole::User, prompt),
        ],
        json_mode: true,
    }
}

/// An app request whose user message carries a screenshot between two texts.
pub fn image_request() -> ChatRequest {
    ChatRequest {
        agent: "app".into(),
        messages: vec![
            ChatMessage::text(MessageRole::System, "You are the AppAgent."),
            ChatMessage {
                role: MessageRole::User,
                content: vec![
                    ContentPart::Text("Controls: [1] OK".into()),
                    ContentPart::Image {
                        png: png(),
                        caption: "annotated screenshot".into(),
                    },
                    ContentPart::Text("Choose an action.".into()),
                ],
            },
        ],
        json_mode: true,
    }
}

/// The base64 of [`png`].
pub fn png_b64() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(png().as_slice())
}

/// The JSON bodies the server received.
pub async fn bodies(server: &wiremock::MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The error text, whatever its kind, with the kind.
pub fn err_text(e: &ufo_core::ports::LlmError) -> (&'static str, String) {
    match e {
        ufo_core::ports::LlmError::Fatal(m) => ("fatal", m.clone()),
        ufo_core::ports::LlmError::Unavailable(m) => ("unavailable", m.clone()),
    }
}
