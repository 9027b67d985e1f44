//! What a server accepts, learnt from its answers during a session: the response format
//! (`structured_output`) and images. Shared by the HTTP providers.
//!
//! - The format of a request is the least of what it asks for (a response schema, JSON mode,
//!   or nothing), what the configured mode allows (`schema`, `json`, `off`; `auto` allows
//!   what the server has not refused yet) and what the provider has (Anthropic has no JSON
//!   mode: it sends the schema as a forced tool call, or nothing). A request with a schema
//!   but without JSON mode (the experience summary, text unless held to its schema) goes
//!   with nothing where the schema is not allowed.
//! - A refusal of the schema as `json_schema` that names the format first tries the schema as
//!   `{"type": "json_object", "schema": ...}` (llama-cpp-python's form), in `schema` and
//!   `auto` alike.
//! - In `auto`, an HTTP 4xx refusal whose message names the format (`response_format`,
//!   `json_schema`, `schema`, `grammar`, `tool`, ...) steps down once, schema → JSON →
//!   nothing, and the same request is sent again at once; with a fixed mode the refusal is
//!   the call's error, with advice. Either way the tolerant parser reads the answer.
//! - Whatever the mode, a refusal of a request with images whose message names them
//!   (`image`, `vision`, `multimodal`, `content type`, ...) turns images off for the rest of
//!   the session: each image is replaced by its caption and a note, and the request is sent
//!   again (the engine still saves every screenshot for the report).
//! - Each change is said once (a warning on stderr) and kept as a [`ModelNote`] for the
//!   trajectory ([`LlmClient::take_notes`](ufo_core::LlmClient::take_notes)); so is the
//!   format `auto` settles on at its first answer.
//!
//! The learning is per client: the host and the AppAgents share one when they name the same
//! model. At most three sends per call (one per step down), each with the retry policy of
//! [`crate::retry`].

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use ufo_core::ports::{ChatRequest, ContentPart, LlmError, ModelNote};
use ufo_core::StructuredOutput;

use crate::retry::{Endpoint, Failure, Streaming};
use crate::stream::Sink;

/// The response format a request is sent with, from least to most constrained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// No response format: the prompt asks for JSON.
    Off,
    /// JSON mode (`response_format: json_object`).
    Json,
    /// The answer's JSON Schema.
    Schema,
}

impl Format {
    /// The name used in notes and in `structured_output`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Off => "off",
            Format::Json => "json",
            Format::Schema => "schema",
        }
    }
}

/// Words of a refusal that name the response format.
const FORMAT_WORDS: &[&str] = &[
    "response_format",
    "response format",
    "json_schema",
    "schema",
    "json_object",
    "json mode",
    "grammar",
    "structured",
    "strict",
    "tool",
];

/// Words of a refusal that name images.
const IMAGE_WORDS: &[&str] = &[
    "image",
    "vision",
    "multimodal",
    "multi-modal",
    "content type",
    "content part",
    "mmproj",
];

/// Appended to an image's caption when images are no longer sent.
pub const IMAGE_LEFT_OUT: &str = "(image not sent: this model takes no images)";

/// What a client has learnt about its server.
#[derive(Debug)]
pub(crate) struct Learnt {
    mode: StructuredOutput,
    /// Whether the provider has a JSON mode (Anthropic has none).
    has_json: bool,
    state: Mutex<State>,
}

/// How an OpenAI-compatible server takes a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaStyle {
    /// `{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}` (OpenAI, vLLM,
    /// llama.cpp's llama-server, Ollama).
    JsonSchema,
    /// `{"type": "json_object", "schema": {...}}` (llama-cpp-python's server), tried when the
    /// first is refused.
    JsonObject,
}

#[derive(Debug)]
struct State {
    /// The most the server has not refused (`auto`).
    ceiling: Format,
    /// How the schema is sent.
    style: SchemaStyle,
    /// Whether the format `auto` uses was said already.
    settled: bool,
    /// Whether images are sent.
    images: bool,
    /// Whether a stream is asked for (when the settings ask for one).
    stream: bool,
    notes: Vec<ModelNote>,
}

impl State {
    /// Say a change once (a warning) and keep it for the trajectory.
    fn say(&mut self, about: &str, now: &str, message: String) {
        tracing::warn!("{message}");
        self.notes.push(ModelNote {
            about: about.into(),
            now: now.into(),
            message,
        });
    }
}

/// What to do after a refusal.
#[derive(Debug)]
pub(crate) enum Next {
    /// Send the request again (something was turned down).
    Again,
    /// Report this error.
    Fail(LlmError),
}

impl Learnt {
    /// Nothing learnt yet, in `mode`; `has_json`: whether the provider has a JSON mode.
    pub(crate) fn new(mode: StructuredOutput, has_json: bool) -> Self {
        Self {
            mode,
            has_json,
            state: Mutex::new(State {
                ceiling: Format::Schema,
                style: SchemaStyle::JsonSchema,
                settled: false,
                images: true,
                stream: true,
                notes: Vec::new(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The format `request` is sent with now (see the [module documentation](self)).
    pub(crate) fn format(&self, request: &ChatRequest) -> Format {
        let asked = if request.response_schema.is_some() {
            Format::Schema
        } else if request.json_mode {
            Format::Json
        } else {
            Format::Off
        };
        let allowed = match self.mode {
            StructuredOutput::Auto => self.state().ceiling,
            StructuredOutput::Schema => Format::Schema,
            StructuredOutput::Json => Format::Json,
            StructuredOutput::Off => Format::Off,
        };
        let format = asked.min(allowed);
        // JSON mode for a request that asks for a schema but not for JSON (the experience
        // summary, plain text unless held to its schema) would force JSON on an answer the
        // prompt asks as text
        if format == Format::Json && !(self.has_json && request.json_mode) {
            Format::Off
        } else {
            format
        }
    }

    /// Whether a stream may be asked for (the server has not refused one).
    pub(crate) fn streams(&self) -> bool {
        self.state().stream
    }

    /// How the schema is sent now.
    pub(crate) fn style(&self) -> SchemaStyle {
        self.state().style
    }

    /// `request` as it is sent now: its images replaced by their captions once the server
    /// refused images.
    pub(crate) fn shaped(&self, request: &ChatRequest) -> ChatRequest {
        let mut request = request.clone();
        if self.state().images {
            return request;
        }
        for part in request
            .messages
            .iter_mut()
            .flat_map(|m| m.content.iter_mut())
        {
            if let ContentPart::Image { caption, .. } = part {
                let text = if caption.trim().is_empty() {
                    IMAGE_LEFT_OUT.to_string()
                } else {
                    format!("{caption} {IMAGE_LEFT_OUT}")
                };
                *part = ContentPart::Text(text);
            }
        }
        request
    }

    /// A request sent with `format` was answered: in `auto`, the first answer with the
    /// format the server allows settles it (said once).
    pub(crate) fn answered(&self, format: Format, provider: &str) {
        if self.mode != StructuredOutput::Auto {
            return;
        }
        let mut state = self.state();
        if state.settled || format != state.ceiling || format == Format::Off {
            return;
        }
        state.settled = true;
        let message = format!("{provider} accepts structured output {}", format.as_str());
        tracing::info!("{message}");
        state.notes.push(ModelNote {
            about: "structured_output".into(),
            now: format.as_str().into(),
            message,
        });
    }

    /// A request sent with `format` (with images, streamed, as the pair says) failed: learn
    /// from a refusal what can be left out, or give the error to report.
    pub(crate) fn refused(
        &self,
        failure: Failure,
        format: Format,
        (had_images, streamed): (bool, bool),
        provider: &str,
    ) -> Next {
        let (code, message, error) = match failure {
            Failure::Rejected {
                code,
                message,
                error,
            } if !matches!(code, 404 | 413) => (code, message, error),
            other => return Next::Fail(other.into_error()),
        };
        let lower = message.to_ascii_lowercase();
        let names = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        let said = format!("{provider} refused");
        let quoted = format!("(HTTP {code}: {message})");
        let mut state = self.state();
        if had_images && state.images && names(IMAGE_WORDS) {
            state.images = false;
            state.say(
                "images",
                "off",
                format!(
                    "{said} images {quoted}; the session goes on without screenshots for the \
                 model (they are still saved for the report)"
                ),
            );
            return Next::Again;
        }
        if streamed && state.stream && names(&["stream"]) {
            state.stream = false;
            state.say(
                "streaming",
                "off",
                format!("{said} a streamed answer {quoted}; asking for whole answers from now on"),
            );
            return Next::Again;
        }
        if format == Format::Off || !names(FORMAT_WORDS) {
            return Next::Fail(error);
        }
        self.format_refused(&mut state, format, error, &said, &quoted)
    }

    /// A refusal that names the format of a request sent with `format` (not `off`): the
    /// schema in its other form, a step down (`auto`), or the error with advice.
    fn format_refused(
        &self,
        state: &mut State,
        format: Format,
        error: LlmError,
        said: &str,
        quoted: &str,
    ) -> Next {
        if format == Format::Schema && self.has_json && state.style == SchemaStyle::JsonSchema {
            // the schema in the other form some servers take, before giving it up
            state.style = SchemaStyle::JsonObject;
            state.say(
                "structured_output",
                "schema",
                format!(
                    "{said} the schema as json_schema {quoted}; sending it as json_object with a \
                 schema"
                ),
            );
            return Next::Again;
        }
        match (self.mode, error) {
            (StructuredOutput::Auto, _) => {}
            (mode, LlmError::Fatal(text)) => {
                return Next::Fail(LlmError::Fatal(format!(
                    "{text}; it seems not to take structured output {} (structured_output = \
                     \"{}\"): set structured_output to auto (or UFO_STRUCTURED_OUTPUT=auto) \
                     to fall back by itself",
                    format.as_str(),
                    mode.as_str()
                )))
            }
            (_, error) => return Next::Fail(error),
        }
        let lower_format = match format {
            Format::Schema if self.has_json => Format::Json,
            Format::Schema | Format::Json | Format::Off => Format::Off,
        };
        state.ceiling = lower_format;
        // The step down says what is used from now on; a later refusal says so again.
        state.settled = true;
        let instead = match lower_format {
            Format::Json => "JSON mode",
            Format::Schema | Format::Off => "the prompt alone (the answer is read tolerantly)",
        };
        state.say(
            "structured_output",
            lower_format.as_str(),
            format!(
                "{said} structured output {} {quoted}; asking with {instead} from now on",
                format.as_str()
            ),
        );
        Next::Again
    }

    /// The notes since the last call.
    pub(crate) fn take_notes(&self) -> Vec<ModelNote> {
        std::mem::take(&mut self.state().notes)
    }
}

/// Whether any message of `request` holds an image.
pub(crate) fn has_images(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .any(|p| matches!(p, ContentPart::Image { .. }))
}

/// Most sends of one call: the first, and one per thing a refusal can turn down (the
/// schema's form, the format twice, images once).
pub(crate) const MAX_SENDS: usize = 5;

/// What [`send`] got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The answer's whole body text (not streamed).
    Whole(String),
    /// The answer was streamed to the sink: when its first and its last token came.
    Streamed {
        /// When the first token came.
        first: Option<Instant>,
        /// When the last token came.
        last: Option<Instant>,
    },
}

/// Send `request` to `endpoint` as `body` writes it for a format, learning from refusals
/// what to leave out and sending again (at most [`MAX_SENDS`] times); streamed to `sink`
/// when the endpoint's stream settings enable it and the server has not refused streaming.
pub(crate) async fn send(
    learnt: &Learnt,
    endpoint: &Endpoint,
    provider: &str,
    request: &ChatRequest,
    body: impl Fn(&ChatRequest, Format, bool) -> Value,
    sink: &mut dyn Sink,
) -> Result<Sent, LlmError> {
    let settings = endpoint.settings.stream.clone();
    let enabled = settings.enabled;
    let mut streaming = Streaming {
        sink,
        settings,
        first: None,
        last: None,
    };
    let mut sends = 0;
    loop {
        sends += 1;
        let shaped = learnt.shaped(request);
        let format = learnt.format(&shaped);
        let streamed = enabled && learnt.streams();
        let reader = streamed.then_some(&mut streaming);
        match endpoint
            .post(provider, &body(&shaped, format, streamed), reader)
            .await
        {
            Ok(text) => {
                learnt.answered(format, provider);
                return Ok(match text {
                    Some(text) => Sent::Whole(text),
                    None => Sent::Streamed {
                        first: streaming.first,
                        last: streaming.last,
                    },
                });
            }
            Err(failure) if sends < MAX_SENDS => {
                match learnt.refused(failure, format, (has_images(&shaped), streamed), provider) {
                    Next::Again => continue,
                    Next::Fail(e) => return Err(e),
                }
            }
            Err(failure) => return Err(failure.into_error()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ufo_core::ports::{ChatMessage, MessageRole};

    fn request(schema: bool, json: bool) -> ChatRequest {
        ChatRequest {
            agent: "host".into(),
            messages: vec![ChatMessage::text(MessageRole::User, "hi")],
            json_mode: json,
            response_schema: schema.then(ufo_core::response::host_schema),
            max_tokens: None,
        }
    }

    fn rejected(message: &str) -> Failure {
        Failure::Rejected {
            code: 400,
            message: message.into(),
            error: LlmError::Fatal(format!("rejected: {message}")),
        }
    }

    #[test]
    fn the_format_is_the_least_of_asked_allowed_and_available() {
        let auto = Learnt::new(StructuredOutput::Auto, true);
        assert_eq!(auto.format(&request(true, true)), Format::Schema);
        assert_eq!(auto.format(&request(false, true)), Format::Json);
        assert_eq!(auto.format(&request(false, false)), Format::Off);
        let json = Learnt::new(StructuredOutput::Json, true);
        assert_eq!(json.format(&request(true, true)), Format::Json);
        let off = Learnt::new(StructuredOutput::Off, true);
        assert_eq!(off.format(&request(true, true)), Format::Off);
        let no_json = Learnt::new(StructuredOutput::Json, false);
        assert_eq!(no_json.format(&request(true, true)), Format::Off);
        // a schema without JSON mode (the experience summary): the schema, or nothing
        assert_eq!(auto.format(&request(true, false)), Format::Schema);
        assert_eq!(json.format(&request(true, false)), Format::Off);
    }

    #[test]
    fn auto_steps_down_on_refusals_that_name_the_format_and_says_so_once() {
        let l = Learnt::new(StructuredOutput::Auto, true);
        let r = request(true, true);
        let next = l.refused(
            rejected("'response_format' json_schema unsupported"),
            Format::Schema,
            (false, false),
            "S",
        );
        assert!(matches!(next, Next::Again), "{next:?}");
        // first the schema in its other form
        assert_eq!(
            (l.format(&r), l.style()),
            (Format::Schema, SchemaStyle::JsonObject)
        );
        let next = l.refused(
            rejected("response_format schema unsupported"),
            Format::Schema,
            (false, false),
            "S",
        );
        assert!(matches!(next, Next::Again), "{next:?}");
        assert_eq!(l.format(&r), Format::Json);
        let next = l.refused(
            rejected("json_object is not supported"),
            Format::Json,
            (false, false),
            "S",
        );
        assert!(matches!(next, Next::Again), "{next:?}");
        assert_eq!(l.format(&r), Format::Off);
        let notes = l.take_notes();
        assert_eq!(
            notes.iter().map(|n| n.now.as_str()).collect::<Vec<_>>(),
            ["schema", "json", "off"]
        );
        assert!(
            notes[0].message.contains("json_schema unsupported"),
            "{notes:?}"
        );
        assert!(l.take_notes().is_empty(), "said once");
        // a refusal about something else is the call's error
        let next = l.refused(
            rejected("model gpt-9 does not exist"),
            Format::Off,
            (false, false),
            "S",
        );
        assert!(matches!(next, Next::Fail(LlmError::Fatal(m)) if m.contains("gpt-9")));
    }

    #[test]
    fn a_fixed_mode_reports_the_refusal_with_advice() {
        let l = Learnt::new(StructuredOutput::Schema, false);
        let Next::Fail(e) = l.refused(
            rejected("invalid json_schema"),
            Format::Schema,
            (false, false),
            "S",
        ) else {
            panic!("a fixed mode does not step down");
        };
        assert!(e.to_string().contains("structured_output to auto"), "{e}");
        assert!(l.take_notes().is_empty());
    }

    #[test]
    fn a_refusal_of_images_turns_them_off_whatever_the_mode() {
        let l = Learnt::new(StructuredOutput::Off, true);
        let mut r = request(false, true);
        r.messages[0].content.push(ContentPart::Image {
            png: std::sync::Arc::new(vec![1, 2, 3]),
            caption: "annotated screenshot".into(),
        });
        assert!(has_images(&l.shaped(&r)));
        let next = l.refused(
            rejected("this model does not support image input"),
            Format::Json,
            (true, false),
            "S",
        );
        assert!(matches!(next, Next::Again), "{next:?}");
        let shaped = l.shaped(&r);
        assert!(!has_images(&shaped));
        assert!(shaped
            .prompt_text()
            .contains("annotated screenshot (image not sent"));
        assert_eq!(l.take_notes()[0].about, "images");
    }
}
