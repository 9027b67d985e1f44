//! Streamed answers (server-sent events) of the OpenAI-compatible and Anthropic providers:
//! a call is bounded by the time to its first token and by the longest silence between two
//! tokens ([`StreamSettings`]), not by one total a slow CPU model always exceeds.
//!
//! - The request asks for a stream (`"stream": true`; OpenAI-compatible servers also
//!   `"stream_options": {"include_usage": true}`, for the usage). A server that answers with
//!   a whole JSON body instead is read as before.
//! - Waiting for the first token (prompt processing included) longer than `first_token`, or
//!   for the next one longer than `silence` after it, ends the attempt as a timeout; so does
//!   a stream that breaks off. Both are retried like any timeout ([`crate::retry`]); the
//!   next attempt starts the answer afresh. A stream longer than
//!   [`MAX_BODY_BYTES`](crate::retry::MAX_BODY_BYTES) ends the call, not retried.
//! - Dropping the call's future (Ctrl-C: the session drops the call at once) closes the
//!   connection, which ends the server's generation.
//! - Tokens per second of generation (first token to last) is kept for the status line
//!   ([`LlmClient::throughput`](ufo_core::LlmClient::throughput)).

use std::time::Duration;

use serde_json::Value;

/// How streamed calls are bounded (`[streaming]` in ufo.toml, `UFO_LLM_STREAM`,
/// `UFO_LLM_FIRST_TOKEN_SECS`, `UFO_LLM_SILENCE_SECS`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSettings {
    /// Ask for streamed answers. Off in the library's default (a caller that sets its own
    /// timeouts keeps them); `ufo` turns it on (`[streaming] enabled`, default `true`).
    pub enabled: bool,
    /// Longest wait from sending the request to the first token. Default 300 s (a small CPU
    /// model reads a 4,000-token prompt in a few minutes).
    pub first_token: Duration,
    /// Longest silence between two tokens. Default 60 s.
    pub silence: Duration,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            first_token: Duration::from_secs(300),
            silence: Duration::from_secs(60),
        }
    }
}

/// The message of an error event: `error.message`, `error` as text, or the event itself.
fn error_text(data: &str) -> String {
    let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    let message = value
        .pointer("/error/message")
        .or_else(|| value.get("error"))
        .and_then(Value::as_str)
        .unwrap_or(data);
    ufo_core::text::one_line(message, 300)
}

/// Tokens per second of a client's last streamed answer (first token to last).
#[derive(Debug, Default)]
pub(crate) struct Rate(std::sync::Mutex<Option<f64>>);

impl Rate {
    /// Keep the rate of an answer of `tokens` completion tokens streamed from `first` to
    /// `last` (nothing when it took no measurable time).
    pub(crate) fn record(
        &self,
        first: Option<std::time::Instant>,
        last: Option<std::time::Instant>,
        tokens: u64,
    ) {
        let (Some(first), Some(last)) = (first, last) else {
            return;
        };
        let secs = last.duration_since(first).as_secs_f64();
        if secs > 0.0 && tokens > 1 {
            let rate = (tokens - 1) as f64 / secs;
            *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(rate);
        }
    }

    /// The last rate kept.
    pub(crate) fn get(&self) -> Option<f64> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What an event of the stream did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// It carried this many tokens (pieces of the answer); 0 for the others.
    Tokens(u64),
    /// The answer is complete.
    Done,
}

/// An error event of the stream: its message, and whether a new attempt may help.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StreamError {
    /// What the server said.
    pub message: String,
    /// Whether the attempt may be repeated (the server is overloaded).
    pub retry: bool,
}

/// A provider's reader of its stream's events.
pub(crate) trait Sink: Send {
    /// Forget what an earlier attempt read.
    fn reset(&mut self);
    /// Take one event (`event` is empty when the stream names none).
    fn event(&mut self, event: &str, data: &str) -> Result<Step, StreamError>;
}

/// Split the complete events off the front of `buffer` (carriage returns already removed):
/// each as its `event:` name and its `data:` lines joined by newlines; comments and events
/// without data are dropped.
pub(crate) fn take_events(buffer: &mut Vec<u8>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
        let block: Vec<u8> = buffer.drain(..end + 2).collect();
        let text = String::from_utf8_lossy(&block);
        let mut name = String::new();
        let mut data: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if !data.is_empty() {
            out.push((name, data.join("\n")));
        }
    }
    out
}

/// The reader of an OpenAI-compatible stream: `choices[0].delta.content` pieces, the usage
/// of the last chunk, `[DONE]`.
#[derive(Debug, Default)]
pub(crate) struct OpenAiSink {
    /// The answer so far.
    pub text: String,
    /// The refusal so far (a model that refuses says so here).
    pub refusal: String,
    /// `usage` as the server reported it, if it did.
    pub usage: Option<Value>,
}

/// An event's data as JSON (not retried when it is not: the server sent something else).
fn event_json(data: &str) -> Result<Value, StreamError> {
    serde_json::from_str(data).map_err(|e| StreamError {
        message: format!(
            "a stream event is not JSON ({e}): {}",
            ufo_core::text::one_line(data, 200)
        ),
        retry: false,
    })
}

impl Sink for OpenAiSink {
    fn reset(&mut self) {
        *self = Self::default();
    }

    fn event(&mut self, _event: &str, data: &str) -> Result<Step, StreamError> {
        if data.trim() == "[DONE]" {
            return Ok(Step::Done);
        }
        let value = event_json(data)?;
        if value.get("error").is_some() {
            return Err(StreamError {
                message: error_text(data),
                retry: false,
            });
        }
        if let Some(usage) = value.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage.clone());
        }
        let delta = value.pointer("/choices/0/delta");
        let mut tokens = 0;
        if let Some(piece) = delta.and_then(|d| d.get("content")).and_then(Value::as_str) {
            if !piece.is_empty() {
                self.text.push_str(piece);
                tokens += 1;
            }
        }
        if let Some(piece) = delta.and_then(|d| d.get("refusal")).and_then(Value::as_str) {
            self.refusal.push_str(piece);
            tokens += 1;
        }
        Ok(Step::Tokens(tokens))
    }
}

/// The reader of an Anthropic stream: text and tool-input deltas, the usage of
/// `message_start` and `message_delta`, `message_stop`, `error` events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicSink {
    /// The text blocks so far.
    pub text: String,
    /// The forced tool's input so far (JSON text in pieces), when a `tool_use` block came.
    pub tool_input: Option<String>,
    /// `input_tokens` (cache tokens included) of `message_start`.
    pub input_tokens: Option<u64>,
    /// `output_tokens` of the last `message_delta`.
    pub output_tokens: Option<u64>,
}

impl Sink for AnthropicSink {
    fn reset(&mut self) {
        *self = Self::default();
    }

    fn event(&mut self, event: &str, data: &str) -> Result<Step, StreamError> {
        let value = event_json(data)?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(event);
        let count = |v: &Value, field: &str| v.get(field).and_then(Value::as_u64);
        match kind {
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    self.input_tokens = count(u, "input_tokens").map(|n| {
                        n + count(u, "cache_creation_input_tokens").unwrap_or(0)
                            + count(u, "cache_read_input_tokens").unwrap_or(0)
                    });
                }
                Ok(Step::Tokens(0))
            }
            "content_block_start" => {
                let block = value.get("content_block");
                if block.and_then(|b| b.get("type")).and_then(Value::as_str) == Some("tool_use") {
                    self.tool_input.get_or_insert_with(String::new);
                }
                Ok(Step::Tokens(0))
            }
            "content_block_delta" => {
                let delta = value.get("delta");
                if let Some(t) = delta.and_then(|d| d.get("text")).and_then(Value::as_str) {
                    self.text.push_str(t);
                    return Ok(Step::Tokens(1));
                }
                if let Some(j) = delta
                    .and_then(|d| d.get("partial_json"))
                    .and_then(Value::as_str)
                {
                    self.tool_input.get_or_insert_with(String::new).push_str(j);
                    return Ok(Step::Tokens(1));
                }
                Ok(Step::Tokens(0))
            }
            "message_delta" => {
                if let Some(n) = value.get("usage").and_then(|u| count(u, "output_tokens")) {
                    self.output_tokens = Some(n);
                }
                Ok(Step::Tokens(0))
            }
            "message_stop" => Ok(Step::Done),
            "error" => {
                let error_type = value
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Err(StreamError {
                    message: error_text(data),
                    retry: matches!(error_type, "overloaded_error" | "api_error"),
                })
            }
            _ => Ok(Step::Tokens(0)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_at_blank_lines_and_keep_partial_ones() {
        let mut buf =
            b"event: a\ndata: {\"x\":1}\n\n: comment\n\ndata: one\ndata: two\n\ndata: par".to_vec();
        let events = take_events(&mut buf);
        assert_eq!(
            events,
            [
                ("a".to_string(), "{\"x\":1}".to_string()),
                (String::new(), "one\ntwo".to_string())
            ]
        );
        assert_eq!(buf, b"data: par");
    }

    #[test]
    fn openai_pieces_usage_and_done() {
        let mut s = OpenAiSink::default();
        let piece = |t: &str| format!(r#"{{"choices":[{{"delta":{{"content":{t:?}}}}}]}}"#);
        assert_eq!(s.event("", &piece("{\"Sta")), Ok(Step::Tokens(1)));
        assert_eq!(s.event("", &piece("tus\":1}")), Ok(Step::Tokens(1)));
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#;
        assert_eq!(s.event("", usage), Ok(Step::Tokens(0)));
        assert_eq!(s.event("", "[DONE]"), Ok(Step::Done));
        assert_eq!(s.text, "{\"Status\":1}");
        assert_eq!(s.usage.as_ref().unwrap()["completion_tokens"], 2);
        let e = s
            .event("", r#"{"error":{"message":"context too long"}}"#)
            .unwrap_err();
        assert!(e.message.contains("context too long") && !e.retry, "{e:?}");
    }

    #[test]
    fn anthropic_text_tool_input_usage_and_errors() {
        let mut s = AnthropicSink::default();
        s.event(
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":9}}}"#,
        )
        .unwrap();
        s.event(
            "content_block_start",
            r#"{"type":"content_block_start","content_block":{"type":"tool_use","name":"t","input":{}}}"#,
        )
        .unwrap();
        let d = r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"Status\""}}"#;
        assert_eq!(s.event("content_block_delta", d), Ok(Step::Tokens(1)));
        s.event(
            "message_delta",
            r#"{"type":"message_delta","usage":{"output_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!(
            s.event("message_stop", r#"{"type":"message_stop"}"#),
            Ok(Step::Done)
        );
        assert_eq!(s.tool_input.as_deref(), Some("{\"Status\""));
        assert_eq!((s.input_tokens, s.output_tokens), (Some(9), Some(4)));
        let e = s
            .event(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert!(e.retry && e.message.contains("Overloaded"), "{e:?}");
    }
}
