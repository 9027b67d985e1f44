//! The ports: traits the engine calls to reach the desktop, the model, the person and the
//! trajectory store. Every adapter (simulated or live desktop, scripted or HTTP model, terminal
//! or scripted user) implements one of these; the state machines never change for a new one.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::action::UiAction;

// ---------------------------------------------------------------------------------------------
// Desktop
// ---------------------------------------------------------------------------------------------

/// A rectangle in screen pixels (for a control) or window pixels (for `click_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
}

impl Rect {
    /// A rectangle at (`x`, `y`), `w` × `h` pixels.
    pub const fn new(x: i32, y: i32, w: u32, h: u32) -> Self {
        Self { x, y, w, h }
    }
}

/// A PNG image with its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screenshot {
    /// PNG-encoded bytes.
    pub png: Arc<Vec<u8>>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// A window's identifier as its desktop backend made it (an X11 window number, a scenario's
/// application, `device/id` across devices): opaque to the engine, which only passes it back
/// to the same [`Desktop`]. Written in JSON as the bare string, and shown (also with `{:?}`)
/// as that string, so records and messages read as they did when it was a `String`.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WindowId(String);

impl WindowId {
    /// The id `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's text, taken out.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for WindowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for WindowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for WindowId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for WindowId {
    fn from(id: &str) -> Self {
        Self(id.to_string())
    }
}

impl From<WindowId> for String {
    fn from(id: WindowId) -> Self {
        id.0
    }
}

impl AsRef<str> for WindowId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for WindowId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for WindowId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for WindowId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for WindowId {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

/// One top-level window as the HostAgent sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowInfo {
    /// Backend-specific stable identifier; pass it back to [`Desktop::observe`] and
    /// [`Desktop::act`].
    pub id: WindowId,
    /// Window title.
    pub title: String,
    /// Application name (e.g. "Writer", "gnome-calculator").
    pub app_name: String,
    /// Process name (executable), part of the AppAgent cache key `app_root/process_name`.
    pub process: String,
    /// Process id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Position and size on screen, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rect: Option<Rect>,
}

/// An application that is not running but that the host may launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchableApp {
    /// Application name.
    pub name: String,
    /// The shell command that launches it.
    pub command: String,
}

/// One control of a window, as the AppAgent sees it.
///
/// The engine numbers the controls of a [`WindowObservation`] in order: `controls[i]` carries
/// label `i + 1`, and an annotated screenshot must draw the same numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// Backend-specific stable identifier of the control (the scenario `id` in the simulated
    /// desktop).
    pub id: String,
    /// Role: button, edit, table, list, combo box, menu item, ...
    pub role: String,
    /// Accessible name (with the description folded in where the name is noise).
    pub name: String,
    /// Current value or text, when the control has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Screen rectangle.
    #[serde(default)]
    pub rect: Rect,
    /// Whether the control accepts input now.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Its states (focused, checked, selected, expanded, editable), written as flat boolean
    /// fields and only when true (absent in older observations and scenarios).
    #[serde(flatten)]
    pub states: ControlStates,
    /// Where the control comes from: the accessibility tree (the default, not written, so
    /// records of runs without detection are unchanged) or a detector reading the pixels
    /// (docs/sight.md).
    #[serde(default, skip_serializing_if = "ControlSource::is_tree")]
    pub source: ControlSource,
}

/// Where a [`Control`] comes from (docs/sight.md, "Merged with the tree").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlSource {
    /// The accessibility tree (or a scenario): the toolkit said it is there.
    #[default]
    Tree,
    /// Text read in the pixels by a [`crate::vision::Detector`] where no tree control lies.
    Ocr,
}

impl ControlSource {
    /// Whether this is [`ControlSource::Tree`] (the value not written in JSON).
    pub fn is_tree(&self) -> bool {
        matches!(self, Self::Tree)
    }
}

/// The states of a control a model may need: which field has the focus (it also breaks ties
/// between controls of one name), whether a box is checked, an item selected, a menu or tree
/// node expanded, a text editable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlStates {
    /// It has the keyboard focus.
    #[serde(default, skip_serializing_if = "is_false")]
    pub focused: bool,
    /// A check box, toggle or radio button that is on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub checked: bool,
    /// A selected item (of a list, a tab row, a table).
    #[serde(default, skip_serializing_if = "is_false")]
    pub selected: bool,
    /// An expanded menu, combo box or tree node.
    #[serde(default, skip_serializing_if = "is_false")]
    pub expanded: bool,
    /// A text the person can edit.
    #[serde(default, skip_serializing_if = "is_false")]
    pub editable: bool,
    /// Where it lies: in the visible part of its window, or out of view in a page that
    /// scrolls (an action scrolls it into view first; docs/desktop.md, "Out of view").
    #[serde(default, skip_serializing_if = "Place::is_in_view")]
    pub place: Place,
}

/// Where a control lies relative to the visible part of its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// On screen (the default, not written).
    #[default]
    InView,
    /// Above the visible part of its page.
    Above,
    /// Below the visible part of its page.
    Below,
    /// Left or right of the visible part of its page.
    Aside,
}

impl Place {
    /// Whether this is [`Place::InView`] (the value not written in JSON).
    pub fn is_in_view(&self) -> bool {
        matches!(self, Self::InView)
    }

    /// How the control list says it (`None`: in view, nothing said).
    pub fn words(&self) -> Option<&'static str> {
        match self {
            Self::InView => None,
            Self::Above => Some("above, out of view: scrolled to when used"),
            Self::Below => Some("below, out of view: scrolled to when used"),
            Self::Aside => Some("aside, out of view: scrolled to when used"),
        }
    }
}

impl ControlStates {
    /// Only the focus set.
    pub fn focused(focused: bool) -> Self {
        Self {
            focused,
            ..Self::default()
        }
    }
}

fn yes() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One rectangle of a window whose pixels changed over an action, with the text read there
/// after it (`crate::vision::pixel_changes`, docs/sight.md "Change evidence").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PixelChange {
    /// Where, in screen pixels (as controls' rectangles are).
    pub rect: Rect,
    /// What is read there now: [`ReadThere::Text`] (words found), [`ReadThere::Nothing`], or
    /// [`ReadThere::NotRead`] when the area was too large to read or the read failed.
    pub read: ReadThere,
}

/// What the text detector read in a changed rectangle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "text")]
pub enum ReadThere {
    /// The text read, lines joined by a line break.
    Text(String),
    /// The detector found no text.
    Nothing,
    /// Not read (larger than half the window, or the detector failed).
    NotRead,
}

/// A window observed in one step: its controls (in label order) and screenshots.
#[derive(Debug, Clone)]
pub struct WindowObservation {
    /// The window observed.
    pub window: WindowInfo,
    /// Visible, interactive controls in a stable order; label = index + 1.
    pub controls: Vec<Control>,
    /// Clean screenshot of the window.
    pub screenshot: Option<Screenshot>,
    /// The same screenshot with numbered boxes drawn on the controls.
    pub annotated: Option<Screenshot>,
    /// Non-fatal problems met while observing (a node that misbehaved, ...).
    pub warnings: Vec<String>,
    /// The desktop can read this window's pixels when the model asks (`read_pixels`,
    /// docs/sight.md): the AppAgent's prompt offers the function only then.
    pub pixels_readable: bool,
    /// Where the window's pixels changed since its capture before the last action, with the
    /// text read there (docs/sight.md, "Change evidence"); `None` when not compared (sight
    /// off, no capture before, the window resized).
    pub pixel_changes: Option<Vec<PixelChange>>,
}

/// What a shell command printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellOutput {
    /// Exit code, when the command ran to completion.
    pub code: Option<i32>,
    /// Standard output (possibly truncated).
    pub stdout: String,
    /// Standard error (possibly truncated).
    pub stderr: String,
    /// The application this command launched, if it was an application's launch command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched: Option<String>,
}

/// The backend's own error kept as the source of a [`DesktopError`], so that its chain
/// ([`std::error::Error::source`]) reaches what failed underneath (a D-Bus call, an X11
/// request, a PNG encoder, an answer that does not decode).
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A backend failure told in the backend's words, caused by another error: shown as the words,
/// with that error as its source (see [`DesktopError::backend_with`]).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BackendFailure {
    message: String,
    #[source]
    source: BackendError,
}

/// Errors of a desktop backend. The texts are shown to the model as an action's result, so
/// a variant's message says what went wrong and what to do; the backend's own error, where
/// there is one, is kept as the `source`.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    /// No window with that id.
    #[error("no window {0:?} on the desktop; list the windows again and pick one that exists")]
    NoWindow(String),
    /// No control with that id in the window.
    #[error("no control {control:?} in window {window:?}; observe the window again")]
    NoControl {
        /// The window searched.
        window: String,
        /// The control asked for.
        control: String,
    },
    /// No application with that name can be launched.
    #[error("no application {0:?} is known to the desktop; check the name or the launch table")]
    UnknownApp(String),
    /// The action reached the control but failed.
    #[error("{0}")]
    ActionFailed(String),
    /// The action does not apply to this control (e.g. set_text on a button).
    #[error("{0}")]
    Unsupported(String),
    /// Observing the window failed.
    #[error("observation failed: {0}")]
    Observe(String),
    /// The backend did not answer in time.
    #[error("the desktop did not answer within {ms} ms; the application may be hung")]
    Timeout {
        /// The bound, in milliseconds.
        ms: u64,
        /// The backend's own error (what it waited for), when it has one.
        #[source]
        source: Option<BackendError>,
    },
    /// Any other backend failure: the backend's error is the source (and its text the
    /// message).
    #[error("desktop backend failure: {0}")]
    Backend(#[source] BackendError),
    /// The desktop is on another device and the connection to it is lost (it does not
    /// answer, or it refused the credentials); the session ends with reason `device_lost`.
    /// Only words: the connection's error may hold the credentials, which the words have
    /// had removed.
    #[error("the remote desktop is lost: {0}")]
    Lost(String),
}

impl DesktopError {
    /// A backend failure known only by its words (an answer that cannot be used, another
    /// machine's error received as text).
    pub fn backend(message: impl Into<String>) -> Self {
        Self::Backend(message.into().into())
    }

    /// A backend failure told as `message`, caused by `source`: the message is `message`, and
    /// the source chain goes on with `source`.
    pub fn backend_with(message: impl Into<String>, source: impl Into<BackendError>) -> Self {
        Self::Backend(Box::new(BackendFailure {
            message: message.into(),
            source: source.into(),
        }))
    }

    /// A timeout after `ms` milliseconds, with nothing more to say.
    pub fn timeout(ms: u64) -> Self {
        Self::Timeout { ms, source: None }
    }
}

/// The desktop the agents act on: a simulated one, a live Linux session, ...
#[async_trait]
pub trait Desktop: Send + Sync {
    /// Every top-level window, in a stable order.
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError>;

    /// Applications that are not running but can be launched.
    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError>;

    /// A screenshot of the whole desktop, if the backend can take one.
    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError>;

    /// Observe one window: controls with labels, screenshot, annotated screenshot.
    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError>;

    /// Perform an action. `control_id` is `None` only for actions that need no control
    /// (`click_at`). Returns a short text result (for `read_text`, the text read).
    async fn act(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError>;

    /// Launch an application by name and return its window once it is up.
    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError>;

    /// Run a shell command (the host's `Bash` field).
    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError>;

    /// Where [`shell`](Desktop::shell) would find the program `name` (a bare name, no `/`):
    /// its absolute path, or `None` when it finds none. The shell allow-list uses it
    /// ([`crate::sensitive::SensitivePolicy::shell_reason`]). The default finds nothing, so
    /// every command other than a launch command is held for confirmation.
    fn find_program(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// Wait until the UI has settled after an action (bounded by the backend).
    async fn settle(&self);

    /// Bring a window to the front and give it the keyboard focus (bounded by the backend).
    /// Backends without windows to raise answer [`DesktopError::Unsupported`].
    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        Err(DesktopError::Unsupported(format!(
            "this desktop cannot activate window {window_id}"
        )))
    }

    /// Close a window: ask it to close as a person would, and when it is still there after a
    /// short grace period, end its application. Returns once the window is gone (bounded).
    /// Backends that cannot close windows answer [`DesktopError::Unsupported`].
    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        Err(DesktopError::Unsupported(format!(
            "this desktop cannot close window {window_id}"
        )))
    }

    /// Whether the last [`act`](Desktop::act) visibly changed anything (its settle saw the
    /// window change), when the backend knows; multi-action stops at an action that changed
    /// nothing. The default does not know.
    fn last_action_changed(&self) -> Option<bool> {
        None
    }

    /// A JSON snapshot of the final state, written to `<out>/desktop_final.json` at the end of
    /// a run. Backends without such a snapshot return `None`.
    fn final_state(&self) -> Option<serde_json::Value> {
        None
    }

    /// Whether the person has taken the desktop over: their own input (a click, a key) came
    /// since the last hand-back. `Some` names what they did. The engine then pauses (it
    /// executes no action) until [`wait_handback`](Desktop::wait_handback) says they handed it
    /// back. Must be cheap (no waiting). Only a watched private desktop sees the person; the
    /// default never does.
    fn person_input(&self) -> Option<String> {
        None
    }

    /// Wait at most `within` for the person to hand the desktop back (on the live desktop, the
    /// hand-back key); `true` once they did, and [`person_input`](Desktop::person_input) is
    /// `None` again until their next input. The engine calls it in short slices so that
    /// Ctrl-C and its own limit stay in force. The default has nothing to wait for.
    async fn wait_handback(&self, within: std::time::Duration) -> bool {
        let _ = within;
        true
    }

    /// Let `within` pass: the engine waits for the desktop to catch up (a window the model
    /// names, still on its way after a launch) and lists it again after. The default returns
    /// at once (a desktop that does not change by itself has nothing to wait for).
    async fn pause(&self, within: std::time::Duration) {
        let _ = within;
    }

    /// The person handed the desktop back another way (Enter on ufo's terminal): forget their
    /// input so far, so that [`person_input`](Desktop::person_input) is `None` until their
    /// next input. The default has nothing to forget.
    fn hand_back(&self) {}
}

// ---------------------------------------------------------------------------------------------
// Language model
// ---------------------------------------------------------------------------------------------

/// Who speaks in a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// Instructions.
    System,
    /// The engine's prompt.
    User,
    /// The model's earlier answer (used when re-asking).
    Assistant,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentPart {
    /// Plain text.
    Text(String),
    /// A PNG image (a screenshot).
    Image {
        /// PNG bytes.
        png: Arc<Vec<u8>>,
        /// Short description, e.g. "annotated screenshot".
        caption: String,
    },
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// Speaker.
    pub role: MessageRole,
    /// Parts, in order.
    pub content: Vec<ContentPart>,
}

impl ChatMessage {
    /// A text-only message.
    pub fn text(role: MessageRole, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![ContentPart::Text(text.into())],
        }
    }

    /// The concatenated text parts of this message.
    pub fn text_content(&self) -> String {
        let mut s = String::new();
        for part in &self.content {
            if let ContentPart::Text(t) = part {
                if !s.is_empty() {
                    s.push('\n');
                }
                s.push_str(t);
            }
        }
        s
    }
}

/// A request to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// The kind of agent asking: `"host"`, `"app"`, or another registered kind.
    pub agent: String,
    /// The conversation (system prompt, user prompt, and on re-ask the bad answer and the
    /// error).
    pub messages: Vec<ChatMessage>,
    /// Ask the provider for a JSON object, where it supports that.
    pub json_mode: bool,
    /// The JSON Schema the answer must follow, sent where the provider constrains output to
    /// a schema (`structured_output`, docs/configuration.md); `None`: JSON mode or free text,
    /// as `json_mode` says.
    pub response_schema: Option<ResponseSchema>,
    /// Most completion tokens for this call, where it needs fewer than the model's own
    /// setting (the knowledge rerank); `None`: the model's setting.
    pub max_tokens: Option<u32>,
}

/// The schema of an agent's answer, as sent to a provider that constrains its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseSchema {
    /// A name for the schema (letters, digits, `_`; e.g. `host_response`).
    pub name: String,
    /// The JSON Schema, in the strict form (every property required, optional ones nullable,
    /// no additional properties): see [`crate::response::strict_schema`].
    pub schema: serde_json::Value,
}

/// What a model backend learnt about its server during a session and changed in what it
/// sends: said once on stderr, and recorded in the `step` record of the step it happened in
/// (`model_notes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelNote {
    /// What it is about: `structured_output` or `images`.
    pub about: String,
    /// What is sent from now on: `schema`, `json` or `off` for structured output; `off` for
    /// images.
    pub now: String,
    /// Why, in words (the server's answer quoted).
    pub message: String,
}

impl ChatRequest {
    /// All text of all messages, joined by newlines (what `expect` checks search).
    pub fn prompt_text(&self) -> String {
        self.messages
            .iter()
            .map(ChatMessage::text_content)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// The text of the answer (expected to hold a JSON object).
    pub text: String,
    /// Token usage as reported (or estimated, for backends that cannot count).
    pub usage: Usage,
}

/// Errors of a model backend.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The call failed and retrying will not help (bad key, script mismatch, script
    /// exhausted, ...). The agent goes to ERROR.
    #[error("{0}")]
    Fatal(String),
    /// The call failed after the backend's own retries.
    #[error("model unreachable: {0}")]
    Unavailable(String),
}

/// A language model.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// Send one request and wait for the answer. Implementations bound the wait themselves.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// A short description for logs, e.g. `script:run.jsonl` or `openai:gpt-4o`.
    fn describe(&self) -> String;

    /// What a call with this usage cost (in the price table's currency); 0 when unpriced.
    fn cost(&self, usage: &Usage) -> f64 {
        let _ = usage;
        0.0
    }

    /// What the backend learnt about its server since the last call of this method (a
    /// server that refuses the response schema, or images), oldest first; wrappers pass their
    /// inner model's on. The default learns nothing.
    fn take_notes(&self) -> Vec<ModelNote> {
        Vec::new()
    }

    /// Completion tokens per second of the backend's last streamed answer (first token to
    /// last), for the status line; `None` when it streams nothing. Wrappers pass it on.
    fn throughput(&self) -> Option<f64> {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Tools (MCP and others)
// ---------------------------------------------------------------------------------------------

/// A tool an AppAgent may call instead of clicking (e.g. from an MCP server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model uses in `Function`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (`Args`).
    pub input_schema: serde_json::Value,
    /// Where it comes from (e.g. the MCP server's name).
    pub source: String,
}

/// Errors of a tool provider.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No such tool for this application.
    #[error("no tool {0:?} is available here")]
    Unknown(String),
    /// The arguments do not match the tool's schema.
    #[error("Args do not match the schema of {tool}: {message}")]
    BadArgs {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
    /// The tool ran and reported a failure, or its server failed.
    #[error("tool {tool} failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The tool did not answer in time.
    #[error("tool {tool} did not answer within {ms} ms")]
    Timeout {
        /// The tool.
        tool: String,
        /// The limit.
        ms: u64,
    },
}

/// Tools offered to the AppAgents beside the GUI functions.
#[async_trait]
pub trait ToolProvider: Send + Sync {
    /// The tools for the AppAgent of this application (its own and the global ones).
    async fn tools_for(&self, app: &str) -> Result<Vec<ToolSpec>, ToolError>;

    /// Check `args` against the tool's schema before any call (a mismatch goes back to the
    /// model as an invalid answer).
    fn validate(&self, tool: &ToolSpec, args: &serde_json::Value) -> Result<(), ToolError>;

    /// Call a tool; implementations bound the wait. The text is the step's result.
    async fn call(
        &self,
        app: &str,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<String, ToolError>;
}

// ---------------------------------------------------------------------------------------------
// The person
// ---------------------------------------------------------------------------------------------

/// An action held by the CONFIRM gate, shown to the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfirmRequest {
    /// The agent asking (`HostAgent`, `AppAgent/Writer`).
    pub agent: String,
    /// A one-line description of the held action.
    pub description: String,
    /// The action itself as JSON.
    pub action: serde_json::Value,
}

/// The person's answer to a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Decision {
    /// Run the held action.
    Approve,
    /// Do not run it.
    Reject,
}

/// The person behind the keyboard (or a script standing in for them).
#[async_trait]
pub trait UserIo: Send + Sync {
    /// Ask for approval of a held action. Adapters implement the policy
    /// (`--confirm ask|yes|no`) and any timeout; no answer means [`Decision::Reject`].
    async fn confirm(&self, request: &ConfirmRequest) -> Decision;

    /// Ask a question; `None` when no answer came (no terminal, timeout, no answers left).
    async fn ask(&self, agent: &str, question: &str) -> Option<String>;

    /// Ask for a follow-up request that starts a new round; `None` ends the session.
    async fn follow_up(&self) -> Option<String>;

    /// While the person has taken the desktop over ([`Desktop::person_input`]): whether they
    /// handed it back from where ufo runs (Enter on its terminal), without waiting. `first` is
    /// set on the first call of a pause (drop earlier input, say how to hand back). The
    /// default (no terminal) never hands back; the desktop's own key still does.
    async fn handback_requested(&self, first: bool) -> bool {
        let _ = first;
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Trajectory
// ---------------------------------------------------------------------------------------------

/// Errors while recording the trajectory.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the trajectory: {0}; check that the output folder is writable")]
pub struct RecorderError(pub String);

/// Where the trajectory goes: events (`events.jsonl`) and artifacts (screenshots, prompts).
pub trait Recorder: Send {
    /// Record one event (a JSON object with a `type` field). Must be durable when it returns.
    fn event(&mut self, event: &serde_json::Value) -> Result<(), RecorderError>;

    /// Store an artifact (e.g. `step_3_annotated.png`) and return its path relative to the
    /// output folder.
    fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<String, RecorderError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend failure keeps what caused it: shown in the backend's words, its source chain
    /// reaches the original error.
    #[test]
    fn a_backend_failure_keeps_its_source() {
        let cause = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "pipe closed");
        let e = DesktopError::backend_with("the answer cannot be read (pipe closed)", cause);
        assert_eq!(
            e.to_string(),
            "desktop backend failure: the answer cannot be read (pipe closed)"
        );
        let first = std::error::Error::source(&e).expect("the backend's failure");
        assert_eq!(first.to_string(), "the answer cannot be read (pipe closed)");
        let root = first.source().expect("the original error");
        let io = root
            .downcast_ref::<std::io::Error>()
            .expect("the io::Error itself");
        assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe);
        // words only: the message, nothing beneath
        let words = DesktopError::backend("no JSON");
        assert_eq!(words.to_string(), "desktop backend failure: no JSON");
        assert!(std::error::Error::source(&words)
            .and_then(|s| s.source())
            .is_none());
        assert_eq!(
            DesktopError::timeout(5).to_string(),
            "the desktop did not answer within 5 ms; the application may be hung"
        );
    }

    /// A window id reads, writes and shows as the bare string it was before it had a type:
    /// trajectories, prompts and messages do not change.
    #[test]
    fn a_window_id_is_its_string_in_json_and_in_messages() {
        let w = WindowInfo {
            id: WindowId::from("0x1a00007"),
            title: "t".into(),
            app_name: "a".into(),
            process: "p".into(),
            pid: None,
            rect: None,
        };
        let v = serde_json::to_value(&w).expect("serialises");
        assert_eq!(v["id"], "0x1a00007");
        let back: WindowInfo = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, w);
        assert_eq!(format!("{:?} {}", w.id, w.id), r#""0x1a00007" 0x1a00007"#);
        assert_eq!(w.id, "0x1a00007");
        assert_eq!(w.id.as_str(), "0x1a00007");
    }
}
