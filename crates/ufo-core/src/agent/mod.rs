//! Agents: the HostAgent, the AppAgent, and the seam for further agent kinds.
//!
//! The host's states are [`HostStatus`](crate::status::HostStatus) and are handled by
//! [`host::HostAgent`]. Every agent the host can ASSIGN to implements [`SubAgent`] and keeps its
//! own state enum: the AppAgent does (with [`AppStatus`](crate::status::AppStatus)), and an
//! operator or shell agent can be added as another `SubAgent` + [`AgentFactory`] without
//! editing either existing state machine.
//!
//! | module | holds |
//! |---|---|
//! | [`context`] | the session's [`Services`] and the mutable context [`Cx`] every agent works in |
//! | [`subagent`] | the [`SubAgent`] and [`AgentFactory`] traits, [`Assignment`], and [`hand_back`] |
//! | [`subtask_log`] | a sub-agent's [`SubtaskLog`], its memory lines, and [`archive`] |
//! | [`model`] | [`ask_model`]: one question to the model, re-asked after an invalid answer |
//! | [`resolution`] | finding the control, window or item a model means by label and text |
//! | [`changes`] | what changed in a window between two observations |
//! | [`follow`] | following the window an action opened, and returning when it closes |
//! | [`host`] | the HostAgent's state machine |
//! | [`app`] | the AppAgent's state machine and its factory |
//!
//! Every item is re-exported here, so `ufo_core::agent::X` names it whichever module holds it.

pub mod app;
pub mod changes;
pub mod context;
pub mod follow;
pub mod host;
pub mod model;
mod planned;
pub mod resolution;
pub mod subagent;
pub mod subtask_log;

pub use app::AppAgentFactory;
pub use context::{Cx, Services};
pub use follow::{same_application, WindowChange, WindowStack, MAX_FOLLOWED};
pub use host::cache_key;
pub use model::{ask_model, ModelCall};
pub use resolution::{
    ambiguous_windows_message, control_line, refuse_disabled, resolve, resolve_control,
    resolve_window, unresolved_message, CopiedLine, Unresolved, WindowFit, WindowKey,
    WindowUnresolved,
};
pub use subagent::{hand_back, AgentFactory, AgentTarget, Assignment, Ending, Handoff, SubAgent};
pub use subtask_log::{archive, recent, SubtaskLog};

pub use crate::events::{LlmStats, StepReport};
pub use crate::subtask::{
    subtask_result, SubtaskCounts, SubtaskHistory, SubtaskOutcome, SubtaskRecord, RECENT_SUBTASKS,
    SUBTASK_RESULT_CHARS, SUBTASK_TEXT_CHARS, SUMMARISED_SUBTASKS,
};
pub use crate::text::{clip, clip_chars};
