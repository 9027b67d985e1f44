//! Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! Wire format: system messages are joined into the top-level `system` field; the other
//! messages alternate `user` / `assistant` (consecutive messages of one role are merged, and a
//! conversation that starts with the assistant gets an empty user turn first); images are
//! `{"type":"image","source":{"type":"base64","media_type":"image/png","data":...}}` blocks
//! preceded by their caption. Headers `x-api-key` and `anthropic-version`. Usage comes from
//! `usage.input_tokens` / `usage.output_tokens`. The API has no JSON mode: a request's
//! response schema is sent as one tool the model must call (`tools: [{name, description,
//! input_schema}]`, `tool_choice: {type: "tool", name}`) and the answer is the `input` of its
//! `tool_use` block, as JSON text; without a schema (or with `structured_output` `json` or
//! `off`, or once the server refused the tool, [`crate::learn`]) the prompt asks for JSON.

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use ufo_core::ports::{
    ChatRequest, ChatResponse, ContentPart, LlmClient, LlmError, MessageRole, Usage,
};

use crate::learn::{Format, Learnt, Sent};
use crate::openai::png_base64;
use crate::options::{endpoint_url, ApiKey, ConfigError, HttpSettings};
use crate::retry::{short, Endpoint};
use crate::script::estimate_tokens;
use crate::stream::{AnthropicSink, Rate};

/// The default base URL of the Anthropic API.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings of the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Model name (`claude-sonnet-4-5`, ...).
    pub model: String,
    /// Base URL without the path (`https://api.anthropic.com`); a trailing `/v1` is accepted.
    pub base_url: String,
    /// Key sent in `x-api-key`.
    pub api_key: Option<ApiKey>,
    /// Where the key comes from, named in a 401/403 error (e.g. `ANTHROPIC_API_KEY`).
    pub key_hint: String,
    /// Timeouts, retries, headers, sampling (`max_tokens` defaults to
    /// [`HttpSettings::ANTHROPIC_DEFAULT_MAX_TOKENS`]).
    pub settings: HttpSettings,
}

/// A client of the Anthropic Messages API.
pub struct AnthropicClient {
    endpoint: Endpoint,
    model: String,
    learnt: Learnt,
    rate: Rate,
}

impl AnthropicClient {
    /// Set up a client.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        let base = config.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(ConfigError::EmptyUrl {
                what: "Anthropic base URL",
                fix: format!("leave ANTHROPIC_BASE_URL unset for {ANTHROPIC_DEFAULT_BASE_URL}"),
            });
        }
        let path_part = base.split('?').next().unwrap_or(base).trim_end_matches('/');
        let path = if path_part.ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        };
        let url = endpoint_url(base, path, None);
        let learnt = Learnt::new(config.settings.structured_output, false);
        let mut endpoint = Endpoint::new(
            url,
            config.settings,
            config.api_key.as_ref(),
            HeaderName::from_static("x-api-key"),
            str::to_string,
            config.key_hint,
        )?;
        endpoint.headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(Self {
            endpoint,
            model: config.model,
            learnt,
            rate: Rate::default(),
        })
    }

    /// The endpoint URL requests go to, credentials included: never print it (print
    /// [`redact_url`](crate::redact_url) of it).
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    /// The JSON body sent for `request` now (with what the server was found to accept).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let request = self.learnt.shaped(request);
        let streamed = self.endpoint.settings.stream.enabled && self.learnt.streams();
        self.body_with(&request, self.learnt.format(&request), streamed)
    }

    /// The JSON body of `request` sent with `format` (a forced tool call for
    /// [`Format::Schema`]; nothing else changes the body).
    fn body_with(&self, request: &ChatRequest, format: Format, streamed: bool) -> Value {
        let mut system = Vec::new();
        let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for message in &request.messages {
            let role = match message.role {
                MessageRole::System => {
                    let text = message.text_content();
                    if !text.is_empty() {
                        system.push(text);
                    }
                    continue;
                }
                MessageRole::User => "user",
                MessageRole::Assistant => "assistant",
            };
            let blocks = blocks(&message.content);
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        if turns.first().is_some_and(|(role, _)| *role == "assistant") || turns.is_empty() {
            turns.insert(
                0,
                ("user", vec![json!({"type": "text", "text": "(no prompt)"})]),
            );
        }
        let messages: Vec<Value> = turns
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "max_tokens".into(),
            json!(self
                .endpoint
                .settings
                .max_tokens
                .unwrap_or(HttpSettings::ANTHROPIC_DEFAULT_MAX_TOKENS)
                .min(request.max_tokens.unwrap_or(u32::MAX))),
        );
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), Value::Array(messages));
        if let Some(t) = self.endpoint.settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if streamed {
            body.insert("stream".into(), json!(true));
        }
        if let (Format::Schema, Some(schema)) = (format, &request.response_schema) {
            body.insert(
                "tools".into(),
                json!([{
                    "name": schema.name,
                    "description": "Give your answer: call this tool with the fields the \
                                    instructions ask for.",
                    "input_schema": schema.schema,
                }]),
            );
            body.insert(
                "tool_choice".into(),
                json!({"type": "tool", "name": schema.name}),
            );
        }
        Value::Object(body)
    }
}

fn blocks(parts: &[ContentPart]) -> Vec<Value> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            ContentPart::Text(text) => {
                // The API rejects empty text blocks.
                if !text.is_empty() {
                    out.push(json!({"type": "text", "text": text}));
                }
            }
            ContentPart::Image { png, caption } => {
                if !caption.trim().is_empty() {
                    out.push(json!({"type": "text", "text": caption}));
                }
                out.push(json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png_base64(png)}
                }));
            }
        }
    }
    out
}

/// Read a Messages API body: the `input` of the first `tool_use` block as JSON text (the
/// forced answer tool), else the text blocks joined; an empty text when there are none (a
/// refusal with no text included).
fn parse_message(body: &str, request: &ChatRequest, url: &str) -> Result<ChatResponse, LlmError> {
    let malformed = |why: String| {
        LlmError::Fatal(format!(
            "Anthropic answered with something that is not a message ({why}; body begins: \
             {:?}); check that {url} is the Anthropic Messages API",
            short(body, 200)
        ))
    };
    let value: Value =
        serde_json::from_str(body).map_err(|e| malformed(format!("invalid JSON: {e}")))?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(LlmError::Fatal(format!(
            "Anthropic answered with an error: {}",
            crate::retry::error_message(body)
        )));
    }
    let Some(content) = value.get("content").and_then(Value::as_array) else {
        return Err(malformed("no content array".into()));
    };
    let tool_input = content
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .and_then(|b| b.get("input"));
    let text = match tool_input {
        Some(input) => crate::wire::ordered_json(input),
        None => content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
    };
    let usage = value.get("usage");
    let count = |field: &str| usage.and_then(|u| u.get(field)).and_then(Value::as_u64);
    let usage = Usage {
        // Cached prompt tokens are reported apart from `input_tokens`; all are prompt tokens.
        prompt_tokens: count("input_tokens")
            .map(|n| {
                n + count("cache_creation_input_tokens").unwrap_or(0)
                    + count("cache_read_input_tokens").unwrap_or(0)
            })
            .unwrap_or_else(|| estimate_tokens(&request.prompt_text())),
        completion_tokens: count("output_tokens").unwrap_or_else(|| estimate_tokens(&text)),
    };
    Ok(ChatResponse { text, usage })
}

/// Shows the redacted URL only: the real one may carry credentials.
impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("url", &self.endpoint.shown_url)
            .field("model", &self.model)
            .field("settings", &self.endpoint.settings)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LlmClient for AnthropicClient {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut sink = AnthropicSink::default();
        let sent = crate::learn::send(
            &self.learnt,
            &self.endpoint,
            "Anthropic",
            request,
            |shaped, format, streamed| self.body_with(shaped, format, streamed),
            &mut sink,
        )
        .await?;
        match sent {
            Sent::Whole(text) => parse_message(&text, request, &self.endpoint.shown_url)
                .map_err(|e| self.endpoint.secrets.scrub_error(e)),
            Sent::Streamed { first, last } => {
                let text = match sink.tool_input.take() {
                    // the forced tool's input, streamed as JSON text in pieces
                    Some(input) => match serde_json::from_str::<Value>(&input) {
                        Ok(v) => crate::wire::ordered_json(&v),
                        Err(_) => input,
                    },
                    None => std::mem::take(&mut sink.text),
                };
                let usage = Usage {
                    prompt_tokens: sink
                        .input_tokens
                        .unwrap_or_else(|| estimate_tokens(&request.prompt_text())),
                    completion_tokens: sink.output_tokens.unwrap_or_else(|| estimate_tokens(&text)),
                };
                self.rate.record(first, last, usage.completion_tokens);
                Ok(ChatResponse { text, usage })
            }
        }
    }

    fn throughput(&self) -> Option<f64> {
        self.rate.get()
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.learnt.take_notes()
    }

    fn describe(&self) -> String {
        format!("anthropic:{}", self.model)
    }
}
