//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI itself, and
//! local servers that speak the same API (Ollama, vLLM, llama.cpp's server, LM Studio); and
//! the Azure OpenAI variant (deployment URL, `api-version`, `api-key` header).
//!
//! Wire format: text-only messages are sent with a plain string `content`; messages with
//! screenshots as a list of parts, each image as
//! `{"type":"image_url","image_url":{"url":"data:image/png;base64,...","detail":"high"}}`
//! preceded by its caption as a text part. The response format follows `structured_output`
//! ([`crate::learn`]): a request's response schema is sent as
//! `"response_format":{"type":"json_schema","json_schema":{"name":...,"strict":true,
//! "schema":{...}}}` (OpenAI, Azure, vLLM, llama.cpp's server, Ollama's OpenAI-compatible
//! API), or, to a server that refused that form, as `{"type":"json_object","schema":{...}}`
//! with every string bounded too (llama-cpp-python's server;
//! [`with_length_bounds`](ufo_core::response::with_length_bounds)); JSON mode as
//! `"response_format":{"type":"json_object"}`. Usage comes from
//! `usage.prompt_tokens` / `usage.completion_tokens` (estimated as `ceil(chars/4)` when the
//! server reports none). A leading `<think>...</think>` block (local reasoning models) is
//! dropped from the answer.

use async_trait::async_trait;
use base64::Engine as _;
use reqwest::header::{HeaderName, AUTHORIZATION};
use serde_json::{json, Map, Value};
use ufo_core::ports::{
    ChatMessage, ChatRequest, ChatResponse, ContentPart, LlmClient, LlmError, MessageRole, Usage,
};

use crate::learn::{Format, Learnt, SchemaStyle, Sent};
use crate::options::{endpoint_url, ApiKey, ConfigError, HttpSettings};
use crate::retry::{short, Endpoint};
use crate::script::estimate_tokens;
use crate::stream::{OpenAiSink, Rate};

/// The default base URL of the OpenAI API.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default Azure OpenAI `api-version`.
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Settings of an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Model name sent in the body (`gpt-4o`, `llama3.1:8b`, ...).
    pub model: String,
    /// Base URL up to and including `/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Bearer key; `None` for local servers that need none.
    pub api_key: Option<ApiKey>,
    /// Where the key comes from, named in a 401/403 error (e.g. `OPENAI_API_KEY`).
    pub key_hint: String,
    /// Timeouts, retries, headers, image detail, sampling.
    pub settings: HttpSettings,
}

/// Settings of an Azure OpenAI deployment.
#[derive(Debug, Clone)]
pub struct AzureConfig {
    /// Resource endpoint, e.g. `https://my-resource.openai.azure.com`.
    pub endpoint: String,
    /// Deployment name.
    pub deployment: String,
    /// `api-version` query parameter.
    pub api_version: String,
    /// Key sent in the `api-key` header.
    pub api_key: Option<ApiKey>,
    /// Where the key comes from, named in a 401/403 error (e.g. `AZURE_OPENAI_API_KEY`).
    pub key_hint: String,
    /// Timeouts, retries, headers, image detail, sampling.
    pub settings: HttpSettings,
}

/// A client of an OpenAI-compatible (or Azure OpenAI) chat completions endpoint.
pub struct OpenAiClient {
    endpoint: Endpoint,
    /// `Some(model)` for OpenAI-compatible servers; `None` for Azure (the deployment decides).
    model: Option<String>,
    provider: &'static str,
    description: String,
    learnt: Learnt,
    rate: Rate,
}

impl OpenAiClient {
    /// A client of an OpenAI-compatible server.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let base = config.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(ConfigError::EmptyUrl {
                what: "base URL",
                fix: "set UFO_LLM_BASE_URL to e.g. http://127.0.0.1:11434/v1".into(),
            });
        }
        let url = endpoint_url(base, "/chat/completions", None);
        let learnt = Learnt::new(config.settings.structured_output, true);
        let endpoint = Endpoint::new(
            url,
            config.settings,
            config.api_key.as_ref(),
            AUTHORIZATION,
            |key| format!("Bearer {key}"),
            config.key_hint,
        )?;
        Ok(Self {
            endpoint,
            description: format!("openai:{}", config.model),
            model: Some(config.model),
            provider: "the OpenAI-compatible server",
            learnt,
            rate: Rate::default(),
        })
    }

    /// A client of an Azure OpenAI deployment.
    pub fn azure(config: AzureConfig) -> Result<Self, ConfigError> {
        let endpoint = config.endpoint.trim().trim_end_matches('/');
        if endpoint.is_empty() {
            return Err(ConfigError::EmptyUrl {
                what: "Azure endpoint",
                fix: "set AZURE_OPENAI_ENDPOINT to https://<resource>.openai.azure.com".into(),
            });
        }
        let url = endpoint_url(
            endpoint,
            &format!("/openai/deployments/{}/chat/completions", config.deployment),
            Some(&format!("api-version={}", config.api_version)),
        );
        let learnt = Learnt::new(config.settings.structured_output, true);
        let endpoint = Endpoint::new(
            url,
            config.settings,
            config.api_key.as_ref(),
            HeaderName::from_static("api-key"),
            str::to_string,
            config.key_hint,
        )?;
        Ok(Self {
            endpoint,
            description: format!("azure:{}", config.deployment),
            model: None,
            provider: "Azure OpenAI",
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

    /// The JSON body of `request` sent with `format`.
    fn body_with(&self, request: &ChatRequest, format: Format, streamed: bool) -> Value {
        let mut body = Map::new();
        if let Some(model) = &self.model {
            body.insert("model".into(), json!(model));
        }
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| message_json(m, &self.endpoint.settings))
            .collect();
        body.insert("messages".into(), Value::Array(messages));
        let format = if self.endpoint.settings.allow_json_mode {
            format
        } else {
            Format::Off
        };
        match (format, &request.response_schema) {
            (Format::Schema, Some(schema)) => {
                let format = match self.learnt.style() {
                    SchemaStyle::JsonSchema => json!({"type": "json_schema", "json_schema": {
                        "name": schema.name, "strict": true, "schema": schema.schema,
                    }}),
                    // this form takes any JSON Schema: strings bounded too, so every
                    // answer its grammar allows has an end
                    SchemaStyle::JsonObject => json!({"type": "json_object",
                        "schema": ufo_core::response::with_length_bounds(&schema.schema)}),
                };
                body.insert("response_format".into(), format);
            }
            (Format::Schema | Format::Json, _) => {
                body.insert("response_format".into(), json!({"type": "json_object"}));
            }
            (Format::Off, _) => {}
        }
        if let Some(t) = self.endpoint.settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        // a request's own bound (the knowledge rerank) only ever lowers the setting
        let max_tokens = match (self.endpoint.settings.max_tokens, request.max_tokens) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(n) = max_tokens {
            body.insert("max_tokens".into(), json!(n));
        }
        if streamed {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }
}

/// The wire name of a role.
pub(crate) fn role_name(role: MessageRole) -> &'static str {
    match role {
        MessageRole::System => "system",
        MessageRole::User => "user",
        MessageRole::Assistant => "assistant",
    }
}

/// Standard base64 of PNG bytes.
pub(crate) fn png_base64(png: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(png)
}

fn message_json(message: &ChatMessage, settings: &HttpSettings) -> Value {
    let role = role_name(message.role);
    let has_image = message
        .content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image {
        return json!({"role": role, "content": message.text_content()});
    }
    let mut parts = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text(text) => parts.push(json!({"type": "text", "text": text})),
            ContentPart::Image { png, caption } => {
                if !caption.trim().is_empty() {
                    parts.push(json!({"type": "text", "text": caption}));
                }
                parts.push(json!({
                    "type": "image_url",
                    "image_url": {
                        "url": format!("data:image/png;base64,{}", png_base64(png)),
                        "detail": settings.image_detail.as_str(),
                    }
                }));
            }
        }
    }
    json!({"role": role, "content": parts})
}

/// Read a chat completion body. Empty content gives an empty text; a refusal gives the
/// refusal text (the engine then treats it as an invalid answer and re-asks).
fn parse_completion(
    body: &str,
    request: &ChatRequest,
    provider: &str,
    url: &str,
) -> Result<ChatResponse, LlmError> {
    let malformed = |why: String| {
        LlmError::Fatal(format!(
            "{provider} answered with something that is not a chat completion ({why}; body \
             begins: {:?}); check that {url} is an OpenAI-compatible chat completions endpoint",
            short(body, 200)
        ))
    };
    let value: Value =
        serde_json::from_str(body).map_err(|e| malformed(format!("invalid JSON: {e}")))?;
    let Some(message) = value.pointer("/choices/0/message") else {
        if let Some(err) = value.get("error") {
            return Err(LlmError::Fatal(format!(
                "{provider} answered with an error: {}",
                short(&err.to_string(), 300)
            )));
        }
        return Err(malformed("no choices[0].message".into()));
    };
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let refusal = message.get("refusal").and_then(Value::as_str);
    Ok(answer(text, refusal, value.get("usage"), request))
}

/// The answer from its text (a leading think block dropped; the refusal when the text is
/// empty) and the server's usage (estimated when absent).
fn answer(
    text: String,
    refusal: Option<&str>,
    usage: Option<&Value>,
    request: &ChatRequest,
) -> ChatResponse {
    let mut text = strip_think(text);
    if text.trim().is_empty() {
        if let Some(refusal) = refusal.filter(|r| !r.is_empty()) {
            text = refusal.to_string();
        }
    }
    let count = |field: &str| usage.and_then(|u| u.get(field)).and_then(Value::as_u64);
    let usage = Usage {
        prompt_tokens: count("prompt_tokens")
            .unwrap_or_else(|| estimate_tokens(&request.prompt_text())),
        completion_tokens: count("completion_tokens").unwrap_or_else(|| estimate_tokens(&text)),
    };
    ChatResponse { text, usage }
}

/// Drop a leading `<think>...</think>` block (reasoning models served by Ollama, vLLM or
/// llama.cpp put their reasoning there, braces and all, before the JSON answer).
fn strip_think(text: String) -> String {
    let start = text.trim_start();
    if let Some(rest) = start.strip_prefix("<think>") {
        if let Some(end) = rest.find("</think>") {
            return rest[end + "</think>".len()..].trim_start().to_string();
        }
    }
    text
}

/// Shows the redacted URL only: the real one may carry credentials.
impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("url", &self.endpoint.shown_url)
            .field("model", &self.model)
            .field("provider", &self.provider)
            .field("settings", &self.endpoint.settings)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LlmClient for OpenAiClient {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut sink = OpenAiSink::default();
        let sent = crate::learn::send(
            &self.learnt,
            &self.endpoint,
            self.provider,
            request,
            |shaped, format, streamed| self.body_with(shaped, format, streamed),
            &mut sink,
        )
        .await?;
        let response = match sent {
            Sent::Whole(text) => {
                parse_completion(&text, request, self.provider, &self.endpoint.shown_url)
                    .map_err(|e| self.endpoint.secrets.scrub_error(e))?
            }
            Sent::Streamed { first, last } => {
                let response = answer(
                    std::mem::take(&mut sink.text),
                    Some(sink.refusal.as_str()),
                    sink.usage.as_ref(),
                    request,
                );
                self.rate
                    .record(first, last, response.usage.completion_tokens);
                response
            }
        };
        Ok(response)
    }

    fn throughput(&self) -> Option<f64> {
        self.rate.get()
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.learnt.take_notes()
    }
}

#[cfg(test)]
mod tests {
    use super::strip_think;

    #[test]
    fn think_blocks_are_dropped() {
        assert_eq!(
            strip_think("<think>use {x}?</think>\n{\"Status\":\"FINISH\"}".into()),
            "{\"Status\":\"FINISH\"}"
        );
        assert_eq!(strip_think("<think>unfinished".into()), "<think>unfinished");
        assert_eq!(strip_think("plain".into()), "plain");
    }
}
