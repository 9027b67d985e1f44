//! `ufo-core`: the decisions of ufo-rs.
//!
//! This crate holds the HostAgent and AppAgent state machines, the round and session loops,
//! the four-phase processor, the blackboard, prompts, the tolerant response parser and the
//! *ports* through which the engine reaches the world: [`Desktop`], [`LlmClient`],
//! [`ToolProvider`], [`UserIo`], [`Recorder`] and [`Knowledge`]. It performs no network, X11,
//! D-Bus or file I/O itself; adapters in other crates implement the ports.

pub mod access;
pub mod action;
pub mod agent;
pub mod blackboard;
pub mod config;
pub mod demo;
pub mod events;
pub mod experience;
pub mod inert;
pub mod keys;
pub mod knowledge;
pub mod lookup;
pub mod parse;
pub mod ports;
pub mod processor;
pub mod prompt;
pub mod redact;
pub mod rerank;
pub mod response;
pub mod secrets;
pub mod sensitive;
pub mod session;
pub mod shell_words;
pub mod status;
pub mod step_action;
pub mod subtask;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod vision;

pub use action::{Button, ScrollDirection, UiAction};

pub use ports::{
    BackendError, BackendFailure, ChatMessage, ChatRequest, ChatResponse, ConfirmRequest,
    ContentPart, Control, ControlSource, ControlStates, Decision, Desktop, DesktopError,
    LaunchableApp, LlmClient, LlmError, MessageRole, ModelNote, Place, Recorder, RecorderError,
    Rect, ResponseSchema, Screenshot, ShellOutput, ToolError, ToolProvider, ToolSpec, Usage,
    UserIo, WindowId, WindowInfo, WindowObservation,
};

pub use config::{Config, OnSubtaskFail, StructuredOutput};
pub use inert::{inert, inert_exact};
pub use knowledge::{
    Knowledge, KnowledgeError, KnowledgeKind, KnowledgeLimits, KnowledgeQuery, PromptCaps, Snippet,
    UsedSnippet,
};
pub use lookup::KnowledgeAccess;
pub use session::{Session, SessionOutcome};
pub use status::{AppStatus, EndReason, HostStatus, RoundEnd, SessionStatus};
