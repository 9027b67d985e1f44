//! Record and replay of model calls.
//!
//! [`Recording`] wraps any [`LlmClient`] and writes each call to `<dir>/NNNN.json` (`0001.json`
//! first): the agent, the messages (text in full, images as their SHA-256, size and caption)
//! and the answer (text and usage) or the error. API keys never appear: they live in the
//! provider's headers, which are not recorded.
//!
//! [`ReplayModel`] (`--llm replay:<DIR>`) serves a recording back in order with no network and
//! no key. Each request must match the recorded one (agent, messages, texts, image hashes);
//! the first difference fails the call with [`LlmError::Fatal`] saying at which call, which
//! message and which part it diverged, with both versions around the first differing
//! character.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ufo_core::ports::{
    ChatRequest, ChatResponse, ContentPart, LlmClient, LlmError, MessageRole, Usage,
};

/// The `format` field of every recorded call.
pub const RECORDING_FORMAT: &str = "ufo-llm-recording/1";

/// Errors while setting up a recording or loading one for replay.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The folder could not be created or read.
    #[error("cannot use recording folder {path}: {source}; check that it exists and is writable")]
    Dir {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The folder for a new recording already holds one.
    #[error("{0} already holds a recording; record into an empty or new folder")]
    NotEmpty(PathBuf),
    /// The folder to replay holds no recorded call.
    #[error("{0} holds no recorded calls (0001.json, 0002.json, ...); record a session with --record first")]
    Empty(PathBuf),
    /// A recorded call file is unreadable or malformed.
    #[error("cannot replay {path}: {problem}; re-record the session")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The numbering has a hole.
    #[error("recording {dir} has no {missing}; the calls must be numbered 0001.json, 0002.json, ... without gaps")]
    Gap {
        /// The folder.
        dir: PathBuf,
        /// The missing file name.
        missing: String,
    },
}

/// One part of a recorded message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RecordedPart {
    /// Text, in full.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by hash.
    Image {
        /// Hex SHA-256 of the PNG bytes.
        sha256: String,
        /// Size of the PNG in bytes.
        bytes: usize,
        /// The image's caption.
        #[serde(default)]
        caption: String,
    },
}

/// One recorded message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedMessage {
    /// Speaker.
    pub role: MessageRole,
    /// Parts, in order.
    pub content: Vec<RecordedPart>,
}

/// A recorded failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedError {
    /// `fatal` or `unavailable`.
    pub kind: String,
    /// The error message.
    pub message: String,
}

/// A recorded answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The answer's text.
    pub text: String,
    /// Its usage.
    pub usage: Usage,
}

/// The content of one `NNNN.json` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// Always [`RECORDING_FORMAT`].
    pub format: String,
    /// 1-based call number.
    pub call: usize,
    /// The model that answered ([`LlmClient::describe`]).
    pub model: String,
    /// The agent kind that asked.
    pub agent: String,
    /// Whether JSON mode was asked.
    pub json_mode: bool,
    /// The request's messages.
    pub messages: Vec<RecordedMessage>,
    /// The answer, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<RecordedResponse>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The recorded form of a request's messages.
pub fn recorded_messages(request: &ChatRequest) -> Vec<RecordedMessage> {
    request
        .messages
        .iter()
        .map(|m| RecordedMessage {
            role: m.role,
            content: m
                .content
                .iter()
                .map(|p| match p {
                    ContentPart::Text(text) => RecordedPart::Text { text: text.clone() },
                    ContentPart::Image { png, caption } => RecordedPart::Image {
                        sha256: sha256_hex(png),
                        bytes: png.len(),
                        caption: caption.clone(),
                    },
                })
                .collect(),
        })
        .collect()
}

fn file_name(call: usize) -> String {
    format!("{call:04}.json")
}

/// Numbers of the `NNNN.json` files in `dir`, sorted.
fn recorded_numbers(dir: &Path) -> Result<Vec<(usize, PathBuf)>, std::io::Error> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if stem.len() >= 4 && stem.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = stem.parse::<usize>() {
                found.push((n, path));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// A wrapper that records every call of the model it wraps; see the
/// [module documentation](self).
pub struct Recording {
    inner: Box<dyn LlmClient>,
    dir: PathBuf,
    calls: Mutex<usize>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("inner", &self.inner.describe())
            .field("dir", &self.dir)
            .finish()
    }
}

impl Recording {
    /// Record the calls of `inner` into `dir`, which is created if needed and must not
    /// already hold a recording.
    pub fn new(inner: Box<dyn LlmClient>, dir: impl Into<PathBuf>) -> Result<Self, RecordError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| RecordError::Dir {
            path: dir.clone(),
            source,
        })?;
        let existing = recorded_numbers(&dir).map_err(|source| RecordError::Dir {
            path: dir.clone(),
            source,
        })?;
        if !existing.is_empty() {
            return Err(RecordError::NotEmpty(dir));
        }
        Ok(Self {
            inner,
            dir,
            calls: Mutex::new(0),
        })
    }

    /// The folder written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of calls recorded so far.
    pub fn calls(&self) -> usize {
        *self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, record: &RecordedCall) -> Result<(), LlmError> {
        let path = self.dir.join(file_name(record.call));
        let fail = |e: String| {
            LlmError::Fatal(format!(
                "cannot write the recording {}: {e}; check that the --record folder is writable",
                path.display()
            ))
        };
        let text = serde_json::to_string_pretty(record).map_err(|e| fail(e.to_string()))?;
        let tmp = self.dir.join(format!(".{}.tmp", file_name(record.call)));
        std::fs::write(&tmp, text.as_bytes()).map_err(|e| fail(e.to_string()))?;
        std::fs::rename(&tmp, &path).map_err(|e| fail(e.to_string()))
    }
}

#[async_trait]
impl LlmClient for Recording {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let call = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            *calls += 1;
            *calls
        };
        let result = self.inner.complete(request).await;
        let (response, error) = match &result {
            Ok(r) => (
                Some(RecordedResponse {
                    text: r.text.clone(),
                    usage: r.usage,
                }),
                None,
            ),
            Err(e) => (
                None,
                Some(match e {
                    LlmError::Fatal(m) => RecordedError {
                        kind: "fatal".into(),
                        message: m.clone(),
                    },
                    LlmError::Unavailable(m) => RecordedError {
                        kind: "unavailable".into(),
                        message: m.clone(),
                    },
                }),
            ),
        };
        self.write(&RecordedCall {
            format: RECORDING_FORMAT.into(),
            call,
            model: self.inner.describe(),
            agent: request.agent.clone(),
            json_mode: request.json_mode,
            messages: recorded_messages(request),
            response,
            error,
        })?;
        result
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// A model that replays a recording; see the [module documentation](self).
#[derive(Debug)]
pub struct ReplayModel {
    dir: PathBuf,
    calls: Vec<RecordedCall>,
    next: Mutex<usize>,
}

impl ReplayModel {
    /// Load the recording in `dir`.
    pub fn load(dir: impl Into<PathBuf>) -> Result<Self, RecordError> {
        let dir = dir.into();
        let numbers = recorded_numbers(&dir).map_err(|source| RecordError::Dir {
            path: dir.clone(),
            source,
        })?;
        if numbers.is_empty() {
            return Err(RecordError::Empty(dir));
        }
        let mut calls = Vec::with_capacity(numbers.len());
        for (index, (number, path)) in numbers.into_iter().enumerate() {
            if number != index + 1 {
                return Err(RecordError::Gap {
                    dir,
                    missing: file_name(index + 1),
                });
            }
            let bad = |problem: String| RecordError::BadFile {
                path: path.clone(),
                problem,
            };
            let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
            let call: RecordedCall = serde_json::from_str(&text)
                .map_err(|e| bad(format!("not a recorded call: {e}")))?;
            if call.format != RECORDING_FORMAT {
                return Err(bad(format!(
                    "format {:?}, expected {RECORDING_FORMAT:?}",
                    call.format
                )));
            }
            if call.response.is_none() && call.error.is_none() {
                return Err(bad("neither a response nor an error".into()));
            }
            calls.push(call);
        }
        Ok(Self {
            dir,
            calls,
            next: Mutex::new(0),
        })
    }

    /// Number of recorded calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the recording is empty (never true for a loaded one).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Number of calls served so far.
    pub fn served(&self) -> usize {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether every recorded call has been served.
    pub fn is_exhausted(&self) -> bool {
        self.served() >= self.calls.len()
    }

    fn answer(&self, index: usize, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let Some(recorded) = self.calls.get(index) else {
            return Err(LlmError::Fatal(format!(
                "replay {}: the recording has {} calls; call {} from the {} agent was not \
                 recorded (the session now runs longer than the recorded one)",
                self.dir.display(),
                self.calls.len(),
                index + 1,
                request.agent
            )));
        };
        let at = format!(
            "replay {}: call {} ({}) diverged from the recording",
            self.dir.display(),
            index + 1,
            file_name(index + 1)
        );
        if let Some(diff) = divergence(recorded, request) {
            return Err(LlmError::Fatal(format!("{at}: {diff}")));
        }
        match (&recorded.response, &recorded.error) {
            (Some(r), _) => Ok(ChatResponse {
                text: r.text.clone(),
                usage: r.usage,
            }),
            (None, Some(e)) if e.kind == "unavailable" => {
                Err(LlmError::Unavailable(e.message.clone()))
            }
            (None, Some(e)) => Err(LlmError::Fatal(e.message.clone())),
            (None, None) => Err(LlmError::Fatal(format!(
                "{} holds neither a response nor an error",
                file_name(index + 1)
            ))),
        }
    }
}

/// Where `request` differs from `recorded`, if it does.
fn divergence(recorded: &RecordedCall, request: &ChatRequest) -> Option<String> {
    if recorded.agent != request.agent {
        return Some(format!(
            "the recorded call came from the {} agent, this one from the {} agent",
            recorded.agent, request.agent
        ));
    }
    let now = recorded_messages(request);
    for (i, (was, is)) in recorded.messages.iter().zip(&now).enumerate() {
        let which = format!("message {} ({})", i + 1, role_label(was.role));
        if was.role != is.role {
            return Some(format!(
                "{which}: recorded role {}, now {}",
                role_label(was.role),
                role_label(is.role)
            ));
        }
        for (j, (a, b)) in was.content.iter().zip(&is.content).enumerate() {
            if a == b {
                continue;
            }
            let part = format!("{which}, part {}", j + 1);
            return Some(match (a, b) {
                (RecordedPart::Text { text: a }, RecordedPart::Text { text: b }) => {
                    format!("{part}: {}", text_diff(a, b))
                }
                (RecordedPart::Image { sha256: a, .. }, RecordedPart::Image { sha256: b, .. }) => {
                    format!(
                        "{part}: a different image (recorded sha256 {}…, now {}…)",
                        a.get(..12).unwrap_or(a),
                        b.get(..12).unwrap_or(b)
                    )
                }
                (RecordedPart::Text { .. }, _) => format!("{part}: recorded text, now an image"),
                (RecordedPart::Image { .. }, _) => format!("{part}: recorded an image, now text"),
            });
        }
        if was.content.len() != is.content.len() {
            return Some(format!(
                "{which}: recorded {} parts, now {}",
                was.content.len(),
                is.content.len()
            ));
        }
    }
    if recorded.messages.len() != now.len() {
        return Some(format!(
            "recorded {} messages, now {}",
            recorded.messages.len(),
            now.len()
        ));
    }
    None
}

fn role_label(role: MessageRole) -> &'static str {
    crate::openai::role_name(role)
}

/// Describe the first difference between two texts, with context on both sides.
fn text_diff(was: &str, is: &str) -> String {
    let a: Vec<char> = was.chars().collect();
    let b: Vec<char> = is.chars().collect();
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let line = a[..at].iter().filter(|c| **c == '\n').count() + 1;
    let window = |v: &[char]| -> String {
        let start = at.saturating_sub(40);
        let end = (at + 60).min(v.len());
        let mut s: String = v[start..end].iter().collect();
        if start > 0 {
            s.insert(0, '…');
        }
        if end < v.len() {
            s.push('…');
        }
        s
    };
    format!(
        "texts differ at character {} (line {line}): recorded {:?}, now {:?}",
        at + 1,
        window(&a),
        window(&b)
    )
}

#[async_trait]
impl LlmClient for ReplayModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let index = *next;
        let result = self.answer(index, request);
        // A divergence or the end of the recording consumes nothing; a replayed answer or a
        // replayed error does.
        let served = match &result {
            Ok(_) => true,
            Err(_) => index < self.calls.len() && divergence(&self.calls[index], request).is_none(),
        };
        if served {
            *next += 1;
        }
        result
    }

    fn describe(&self) -> String {
        format!("replay:{}", self.dir.display())
    }
}
