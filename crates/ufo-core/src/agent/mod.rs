//! Agents: the HostAgent, the AppAgent, and the seam for further agent kinds.
//!
//! The host's states are [`HostStatus`] and are handled by
//! [`host::HostAgent`]. Every agent the host can ASSIGN to implements [`SubAgent`] and keeps its
//! own state enum: the AppAgent does (with [`AppStatus`](crate::status::AppStatus)), and an
//! operator or shell agent can be added as another `SubAgent` + [`AgentFactory`] without
//! editing either existing state machine.

pub mod app;
pub mod changes;
pub mod host;
pub mod resolution;

pub use resolution::{resolve_control, unresolved_message, Unresolved};

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::blackboard::Blackboard;
use crate::config::Config;
use crate::ports::{
    ChatMessage, ChatRequest, ContentPart, Desktop, LlmClient, MessageRole, Recorder, ToolProvider,
    UserIo, WindowInfo,
};
use crate::processor::StepError;
use crate::prompt::Prompts;
use crate::session::SessionStatus;
use crate::status::HostStatus;

/// The services a session runs with.
#[derive(Clone, Copy)]
pub struct Services<'a> {
    /// The desktop.
    pub desktop: &'a dyn Desktop,
    /// The HostAgent's model.
    pub host_llm: &'a dyn LlmClient,
    /// The AppAgents' model.
    pub app_llm: &'a dyn LlmClient,
    /// The person.
    pub user: &'a dyn UserIo,
    /// Settings.
    pub config: &'a Config,
    /// Compiled prompt templates.
    pub prompts: &'a Prompts,
    /// Tools for the AppAgents beside the GUI functions, if any.
    pub tools: Option<&'a dyn ToolProvider>,
}

/// How a subtask ended, as archived for the host and on the blackboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SubtaskOutcome {
    /// The agent finished it.
    Finish,
    /// The agent gave up.
    Fail,
    /// The system could not go on (no observation, the model unreachable, ...).
    Error,
    /// The person rejected the action the agent held for confirmation.
    Rejected,
    /// The person cancelled the session during it.
    Cancelled,
}

impl SubtaskOutcome {
    /// The name written in the trajectory and shown to the host: `FINISH`, `FAIL`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            SubtaskOutcome::Finish => "FINISH",
            SubtaskOutcome::Fail => "FAIL",
            SubtaskOutcome::Error => "ERROR",
            SubtaskOutcome::Rejected => "REJECTED",
            SubtaskOutcome::Cancelled => "CANCELLED",
        }
    }
}

impl std::fmt::Display for SubtaskOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an ended subtask hands back: for ERROR the error, otherwise the model's `Result`, and
/// without one the result of the agent's last action. Every agent kind archives this.
pub fn subtask_result(
    outcome: SubtaskOutcome,
    error: Option<&str>,
    result: &str,
    last_result: Option<&str>,
) -> String {
    match (error, outcome) {
        (Some(e), SubtaskOutcome::Error) => e.to_string(),
        _ if !result.is_empty() => result.to_string(),
        _ => last_result.unwrap_or_default().to_string(),
    }
}

/// What a sub-agent keeps of the subtask it works on (and, in `memory`, of its earlier
/// ones): one record for every agent kind, so starting and archiving a subtask is one piece
/// of code.
#[derive(Debug, Clone, Default)]
pub struct SubtaskLog {
    /// The subtask the host assigned.
    pub subtask: String,
    /// The host's hints for it.
    pub messages: Vec<String>,
    /// One line per step, over every subtask of this agent.
    pub memory: Vec<String>,
    /// The last action's result or error, shown in the next prompt.
    pub last_result: Option<String>,
    /// The result the model reported (`Result`), if any.
    pub result: String,
    /// The actions run for this subtask, for the blackboard.
    pub actions: Vec<String>,
    /// The system error that ended it, if any.
    pub error: Option<String>,
}

impl SubtaskLog {
    /// Start a new subtask: everything of the last one is cleared but the memory, which gets
    /// a line marking the start.
    pub fn begin(&mut self, subtask: String, messages: Vec<String>) {
        self.subtask = subtask;
        self.messages = messages;
        self.result.clear();
        self.actions.clear();
        self.error = None;
        self.last_result = None;
        // Memory is kept: a reused agent remembers its earlier subtasks.
        self.memory
            .push(format!("--- new subtask: {} ---", self.subtask));
    }

    /// Archive the subtask as `status` (see [`archive`]), its result chosen by
    /// [`subtask_result`]; `agent` and `state` name the agent and its state for the record.
    pub fn archive(
        &self,
        cx: &mut Cx<'_>,
        agent: &str,
        state: &str,
        status: SubtaskOutcome,
    ) -> StepReport {
        let result = subtask_result(
            status,
            self.error.as_deref(),
            &self.result,
            self.last_result.as_deref(),
        );
        archive(
            cx,
            agent,
            state,
            &self.subtask,
            status,
            &result,
            &self.actions,
        )
    }
}

/// A finished subtask, as the host sees it in "previous subtasks".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskRecord {
    /// The agent that ran it.
    pub agent: String,
    /// The subtask.
    pub subtask: String,
    /// How it ended.
    pub status: SubtaskOutcome,
    /// Result or error.
    pub result: String,
}

/// Newest subtasks shown whole (results clipped) in the host's prompt.
pub const RECENT_SUBTASKS: usize = 10;
/// Subtasks before those, one line each, before they are only counted.
pub const SUMMARISED_SUBTASKS: usize = 20;
/// Most characters of a subtask's result kept for the host.
pub const SUBTASK_RESULT_CHARS: usize = 1_000;
/// Most characters of a subtask's text kept for the host.
pub const SUBTASK_TEXT_CHARS: usize = 500;
/// Most characters of a subtask's text in its one-line summary.
const SUMMARY_TEXT_CHARS: usize = 150;

/// How many of the oldest subtasks ended which way (they are only counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskCounts {
    /// FINISH.
    pub finished: u64,
    /// FAIL, ERROR or REJECTED.
    pub failed: u64,
    /// Any other ending (e.g. CANCELLED).
    pub other: u64,
}

impl SubtaskCounts {
    fn total(&self) -> u64 {
        self.finished + self.failed + self.other
    }
}

/// The subtasks finished so far in a session, bounded by entries and bytes (docs/states.md "The blackboard": the
/// host's memory of earlier subtasks must not grow without bound): the newest
/// [`RECENT_SUBTASKS`] kept with results clipped to [`SUBTASK_RESULT_CHARS`], the
/// [`SUMMARISED_SUBTASKS`] before them as one line each, the rest only counted. The whole
/// results stay in `events.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "HistoryRepr")]
pub struct SubtaskHistory {
    /// The newest subtasks, oldest first.
    pub recent: Vec<SubtaskRecord>,
    /// The ones before them (results dropped), oldest first.
    pub summarised: Vec<SubtaskRecord>,
    /// The oldest, counted.
    pub counted: SubtaskCounts,
}

/// A saved history: a bare list in checkpoints written before it was bounded.
#[derive(Deserialize)]
#[serde(untagged)]
enum HistoryRepr {
    Bounded {
        recent: Vec<SubtaskRecord>,
        #[serde(default)]
        summarised: Vec<SubtaskRecord>,
        #[serde(default)]
        counted: SubtaskCounts,
    },
    List(Vec<SubtaskRecord>),
}

impl From<HistoryRepr> for SubtaskHistory {
    fn from(r: HistoryRepr) -> Self {
        let (list, counted, clipped): (Vec<SubtaskRecord>, _, _) = match r {
            HistoryRepr::Bounded {
                recent,
                summarised,
                counted,
            } => (
                summarised.into_iter().chain(recent).collect(),
                counted,
                true,
            ),
            HistoryRepr::List(list) => (list, SubtaskCounts::default(), false),
        };
        // Re-apply the bounds: a file may hold more than they allow.
        let mut h = SubtaskHistory {
            counted,
            ..SubtaskHistory::default()
        };
        for mut record in list {
            // Texts clipped before carry the "… (N chars more)" mark: clip them only if
            // they are longer than a clipped text can be.
            let slack = if clipped { CLIP_MARK_CHARS } else { 0 };
            record.subtask = clip_chars(&record.subtask, SUBTASK_TEXT_CHARS + slack);
            record.result = clip_chars(&record.result, SUBTASK_RESULT_CHARS + slack);
            h.push_clipped(record);
        }
        h
    }
}

/// The most characters [`clip_chars`] adds.
const CLIP_MARK_CHARS: usize = 40;

impl SubtaskHistory {
    /// Add a finished subtask, clipping its texts and moving the oldest ones down.
    pub fn push(&mut self, mut record: SubtaskRecord) {
        record.subtask = clip_chars(&record.subtask, SUBTASK_TEXT_CHARS);
        record.result = clip_chars(&record.result, SUBTASK_RESULT_CHARS);
        self.push_clipped(record);
    }

    fn push_clipped(&mut self, record: SubtaskRecord) {
        self.recent.push(record);
        if self.recent.len() > RECENT_SUBTASKS {
            let mut old = self.recent.remove(0);
            if old.subtask.chars().count() > SUMMARY_TEXT_CHARS + CLIP_MARK_CHARS {
                old.subtask = clip_chars(&old.subtask, SUMMARY_TEXT_CHARS);
            }
            old.result.clear();
            self.summarised.push(old);
        }
        if self.summarised.len() > SUMMARISED_SUBTASKS {
            let old = self.summarised.remove(0);
            match old.status {
                SubtaskOutcome::Finish => self.counted.finished += 1,
                SubtaskOutcome::Fail | SubtaskOutcome::Error | SubtaskOutcome::Rejected => {
                    self.counted.failed += 1
                }
                SubtaskOutcome::Cancelled => self.counted.other += 1,
            }
        }
    }

    /// Subtasks recorded in all, counted ones included.
    pub fn len(&self) -> u64 {
        self.counted.total() + (self.recent.len() + self.summarised.len()) as u64
    }

    /// Whether no subtask has finished yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One line on the subtasks that are only counted, if any.
    pub fn summary(&self) -> Option<String> {
        let c = &self.counted;
        (c.total() > 0).then(|| {
            let mut s = format!(
                "{} earlier subtasks, not listed: {} finished, {} failed",
                c.total(),
                c.finished,
                c.failed
            );
            if c.other > 0 {
                s.push_str(&format!(", {} ended otherwise", c.other));
            }
            s
        })
    }
}

/// The mutable context of a session, shared by every agent.
pub struct Cx<'a> {
    /// Services.
    pub services: Services<'a>,
    /// Where the trajectory goes.
    pub recorder: &'a mut dyn Recorder,
    /// The shared blackboard.
    pub blackboard: Blackboard,
    /// The current round's request.
    pub request: String,
    /// Subtasks finished so far in the session (bounded).
    pub previous_subtasks: SubtaskHistory,
    /// Round number (from 0).
    pub round: u32,
    /// Sequence number of the step record being produced.
    pub seq: u64,
    /// Failed subtasks in this round.
    pub round_failures: u32,
    /// An outcome forced on the round by the system (e.g. `subtask_failed`).
    pub forced_end: Option<(SessionStatus, String)>,
    /// Why the host moved to FAIL, if it did.
    pub fail_reason: Option<String>,
    /// The first failure to record the trajectory (e.g. a full disk): the session ends
    /// ERROR, reason `io`, after the step in which it happened.
    pub io_error: Option<String>,
}

impl Cx<'_> {
    /// Store an artifact and return its path; a storage failure does not fail the step, but
    /// is kept in [`Cx::io_error`] and ends the session after it.
    pub fn save(&mut self, name: &str, bytes: &[u8]) -> Option<String> {
        match self.recorder.artifact(name, bytes) {
            Ok(p) => Some(p),
            Err(e) => {
                self.io_error.get_or_insert(e.to_string());
                None
            }
        }
    }

    /// Record a trajectory record; a failure is kept in [`Cx::io_error`].
    pub fn record(&mut self, record: &crate::events::Record) {
        if let Err(e) = self.recorder.event(&record.to_value()) {
            self.io_error.get_or_insert(e.to_string());
        }
    }
}

/// What the handling of one state produced, for the step record.
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// The agent's status after handling.
    pub status: String,
    /// The subtask being worked on.
    pub subtask: Option<String>,
    /// The action taken or held.
    pub action: Option<Value>,
    /// The action's result or error text.
    pub result: Option<String>,
    /// The model's thought.
    pub thought: Option<String>,
    /// Model calls and tokens.
    pub llm: LlmStats,
    /// Per-phase timings.
    pub timings_ms: Map<String, Value>,
    /// A system error (phase error) that moved the agent to ERROR.
    pub error: Option<String>,
    /// Paths of artifacts written for this step.
    pub artifacts: Map<String, Value>,
}

impl StepReport {
    /// Close a processor run: keep the timings, save the prompt transcript as
    /// `step_NNNN_<role>_prompt.txt`, and return the phase error's text, if any.
    pub(crate) fn close(
        &mut self,
        cx: &mut Cx<'_>,
        role: &str,
        transcript: &str,
        outcome: crate::processor::ProcessReport,
    ) -> Option<String> {
        self.timings_ms = outcome.timings_ms;
        let name = format!("step_{:04}_{role}_prompt.txt", cx.seq);
        if let Some(p) = cx.save(&name, transcript.as_bytes()) {
            self.artifacts.insert("prompt".into(), p.into());
        }
        let error = outcome.error.map(|e| e.to_string());
        self.error.clone_from(&error);
        error
    }
}

/// Model usage of one step (or, summed, of a session). Missing fields read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmStats {
    /// Calls made (re-asks and failed calls included).
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost by the price table (0 when unpriced).
    #[serde(default)]
    pub cost: f64,
}

impl LlmStats {
    /// Add another step's usage.
    pub fn add(&mut self, other: &LlmStats) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cost += other.cost;
    }
}

/// What the host hands to a sub-agent on ASSIGN.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// The subtask.
    pub subtask: String,
    /// The host's hints.
    pub messages: Vec<String>,
    /// The window to operate; for a third-party agent target, a stand-in whose `app_name` is
    /// the target's name and whose `process` is `agent`.
    pub window: WindowInfo,
}

/// Where control goes after a sub-agent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// The sub-agent moved to its own next state and keeps control.
    Stay,
    /// Control returns to the host in this state.
    Host(HostStatus),
}

/// An agent the host can ASSIGN a subtask to. Each kind keeps its own state machine.
#[async_trait]
pub trait SubAgent: Send {
    /// Display name, e.g. `AppAgent/Writer`.
    fn name(&self) -> String;
    /// Role in the trajectory, e.g. `app`.
    fn role(&self) -> &'static str;
    /// Take a new subtask and enter the kind's first state (its CONTINUE).
    fn begin(&mut self, assignment: Assignment);
    /// The current state's name.
    fn state_name(&self) -> &'static str;
    /// Whether the current state runs the processor (counts as a step).
    fn is_processing(&self) -> bool;
    /// The subtask being worked on.
    fn subtask(&self) -> &str;
    /// Handle the current state.
    async fn handle(&mut self, cx: &mut Cx<'_>) -> StepReport;
    /// Whether the round ends on the current state, and with which status and reason.
    fn round_end(&self) -> Option<(SessionStatus, String)>;
    /// Whether the subtask ends on the current state.
    fn is_subtask_end(&self) -> bool;
    /// Move to the next state; say whether control stays or returns to the host.
    fn next_state(&mut self, cx: &mut Cx<'_>) -> Handoff;
}

/// A third-party agent the host can assign subtasks to like an application (e.g. a shell
/// agent), listed in the host's prompt with its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTarget {
    /// The name the host uses in `ControlText`.
    pub name: String,
    /// What it is good for.
    pub description: String,
}

/// Creates sub-agents for the windows (or other targets) the host assigns to.
pub trait AgentFactory: Send + Sync {
    /// A new agent for this window.
    fn create(&self, window: &WindowInfo) -> Box<dyn SubAgent>;

    /// Third-party agents the host may assign to besides windows.
    fn agents(&self) -> Vec<AgentTarget> {
        Vec::new()
    }

    /// A new third-party agent by target name; `None` if this factory has none by that name.
    fn create_agent(&self, name: &str) -> Option<Box<dyn SubAgent>> {
        let _ = name;
        None
    }
}

/// The default factory: an AppAgent per application window.
#[derive(Debug, Default, Clone, Copy)]
pub struct AppAgentFactory;

impl AgentFactory for AppAgentFactory {
    fn create(&self, window: &WindowInfo) -> Box<dyn SubAgent> {
        Box::new(app::AppAgent::new(window.clone()))
    }
}

/// Archive a finished subtask into the previous subtasks and the blackboard, and describe it
/// as the step report of the state `state` that archived it.
pub fn archive(
    cx: &mut Cx<'_>,
    agent: &str,
    state: &str,
    subtask: &str,
    status: SubtaskOutcome,
    result: &str,
    actions: &[String],
) -> StepReport {
    cx.previous_subtasks.push(SubtaskRecord {
        agent: agent.to_string(),
        subtask: subtask.to_string(),
        status,
        result: result.to_string(),
    });
    cx.blackboard.add_trajectory(crate::blackboard::Trajectory {
        agent: agent.to_string(),
        subtask: subtask.to_string(),
        status,
        result: result.to_string(),
        actions: actions.to_vec(),
    });
    StepReport {
        status: state.to_string(),
        subtask: Some(subtask.to_string()),
        action: Some(
            serde_json::json!({"archive": {"subtask": subtask, "status": status, "result": result}}),
        ),
        result: Some(result.to_string()).filter(|r| !r.is_empty()),
        ..StepReport::default()
    }
}

/// How a sub-agent's subtask ended, for the hand-off back to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Done.
    Finish,
    /// Failed (replan or finish, per `on_subtask_fail`).
    Fail,
    /// A system error: the round ends.
    Error,
}

/// Where control goes after a sub-agent's subtask ends (docs/states.md's AppAgent table, the same
/// for every agent kind): FINISH → Host CONTINUE (follower mode: Host FINISH); FAIL →
/// `replan`: Host CONTINUE, or Host FAIL after `max_subtask_failures`; `finish`: Host FINISH
/// with the round ending FAIL `subtask_failed`; ERROR → Host FINISH.
pub fn hand_back(cx: &mut Cx<'_>, ending: Ending) -> Handoff {
    use crate::config::{AgentMode, OnSubtaskFail};
    let config = cx.services.config;
    Handoff::Host(match ending {
        Ending::Finish => match config.mode {
            AgentMode::Normal => HostStatus::Continue,
            AgentMode::Follower => HostStatus::Finish,
        },
        Ending::Fail => match config.on_subtask_fail {
            OnSubtaskFail::Replan => {
                if cx.round_failures >= config.max_subtask_failures {
                    cx.fail_reason = Some("max_subtask_failures".into());
                    HostStatus::Fail
                } else {
                    HostStatus::Continue
                }
            }
            OnSubtaskFail::Finish => {
                cx.forced_end = Some((SessionStatus::Fail, "subtask_failed".into()));
                HostStatus::Finish
            }
        },
        Ending::Error => HostStatus::Finish,
    })
}

pub use crate::text::{clip, clip_chars};

/// The last `keep` memory lines, numbered from the start of the whole memory.
pub fn recent(memory: &[String], keep: usize) -> Vec<String> {
    let start = memory.len().saturating_sub(keep);
    memory[start..]
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}. {m}", start + i + 1))
        .collect()
}

/// The AppAgent cache key: `app_root/process_name`.
pub fn cache_key(window: &WindowInfo) -> String {
    format!("{}/{}", window.app_name, window.process)
}

/// One question to the model: who asks, how often an invalid answer is sent back, and the
/// prompt.
pub struct ModelCall<'a> {
    /// The model.
    pub llm: &'a dyn LlmClient,
    /// The asking agent's kind (`host`, `app`, a third-party kind), for scripted models and
    /// logs.
    pub agent_kind: &'a str,
    /// Re-asks after an invalid answer (`json_parsing_retry`).
    pub retries: u32,
    /// The system prompt.
    pub system: String,
    /// The user prompt.
    pub user: String,
    /// Images sent with the user prompt, each with a caption.
    pub images: Vec<(Arc<Vec<u8>>, String)>,
}

/// Ask the model (for agent kinds outside this crate too), parsing and validating with
/// `parse`; an invalid answer is sent back with its error, up to `call.retries` times. Returns
/// the parsed answer, or the error that sends the agent to ERROR. Adds the calls and tokens to
/// `stats` and appends every exchange to `transcript`.
pub async fn ask_model<T>(
    call: ModelCall<'_>,
    parse: impl Fn(&str) -> Result<T, String>,
    stats: &mut LlmStats,
    transcript: &mut String,
) -> Result<T, StepError> {
    let ModelCall {
        llm,
        agent_kind,
        retries,
        system,
        user,
        images,
    } = call;
    let mut user_msg = ChatMessage::text(MessageRole::User, user);
    for (png, caption) in images {
        user_msg.content.push(ContentPart::Image { png, caption });
    }
    let mut request = ChatRequest {
        agent: agent_kind.to_string(),
        messages: vec![ChatMessage::text(MessageRole::System, system), user_msg],
        json_mode: true,
    };
    transcript.push_str(&request.prompt_text());
    let mut last_error = String::new();
    for attempt in 0..=retries {
        // A failed call is a call too (its HTTP attempts are named in the error).
        stats.calls += 1;
        let response = llm.complete(&request).await.map_err(StepError::Model)?;
        stats.prompt_tokens += response.usage.prompt_tokens;
        stats.completion_tokens += response.usage.completion_tokens;
        stats.cost += llm.cost(&response.usage);
        transcript.push_str("\n\n--- model answer ---\n");
        transcript.push_str(&response.text);
        match parse(&response.text) {
            Ok(v) => return Ok(v),
            Err(e) => {
                last_error = e;
                if attempt == retries {
                    break;
                }
                let fix = format!(
                    "Your answer could not be used: {last_error}. Answer again with exactly one \
                     valid JSON object with the required fields (Observation, Thought, Status)."
                );
                transcript.push_str("\n\n--- re-ask ---\n");
                transcript.push_str(&fix);
                request
                    .messages
                    .push(ChatMessage::text(MessageRole::Assistant, response.text));
                request
                    .messages
                    .push(ChatMessage::text(MessageRole::User, fix));
            }
        }
    }
    Err(StepError::InvalidAnswer {
        retries,
        reason: last_error,
    })
}

/// Find the index of the item a model means by `label` and `text` (docs/responses.md "Finding the
/// resolution"): the label wins when its name matches `text` (or `text` is empty); otherwise
/// `text` is matched exactly, then case-insensitively, against each item's names.
pub fn resolve<'n>(
    label: &str,
    text: &str,
    count: usize,
    names: impl Fn(usize) -> Vec<&'n str>,
) -> Option<usize> {
    let text = text.trim();
    let by_label = label
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1 && *n <= count)
        .map(|n| n - 1);
    if let Some(i) = by_label {
        if text.is_empty() || names(i).iter().any(|n| n.trim().eq_ignore_ascii_case(text)) {
            return Some(i);
        }
    }
    if text.is_empty() {
        return None;
    }
    (0..count)
        .find(|&i| names(i).iter().any(|n| n.trim() == text))
        .or_else(|| {
            (0..count).find(|&i| names(i).iter().any(|n| n.trim().eq_ignore_ascii_case(text)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{ChatResponse, LlmError};

    #[test]
    fn a_subtask_hands_back_its_error_its_result_or_its_last_action_result() {
        use SubtaskOutcome::*;
        assert_eq!(
            subtask_result(Error, Some("no window"), "r", Some("l")),
            "no window"
        );
        assert_eq!(
            subtask_result(Finish, Some("old error"), "r", Some("l")),
            "r"
        );
        assert_eq!(subtask_result(Fail, None, "", Some("l")), "l");
        assert_eq!(subtask_result(Rejected, None, "", None), "");
        // the names of the trajectory and the checkpoint are unchanged
        assert_eq!(
            serde_json::to_value(Rejected).unwrap_or_default(),
            "REJECTED"
        );
        assert_eq!(Cancelled.as_str(), "CANCELLED");
    }

    #[test]
    fn resolution_follows_design() {
        let names = ["OK", "Cancel", "ok"];
        let f = |i: usize| vec![names[i]];
        assert_eq!(resolve("2", "", 3, f), Some(1));
        assert_eq!(resolve("2", "Cancel", 3, f), Some(1));
        // Label's name does not match the text: resolve by text, exact first.
        assert_eq!(resolve("2", "ok", 3, f), Some(2));
        assert_eq!(resolve("9", "OK", 3, f), Some(0));
        assert_eq!(resolve("", "CANCEL", 3, f), Some(1));
        assert_eq!(resolve("", "Help", 3, f), None);
        assert_eq!(resolve("", "", 3, f), None);
        assert_eq!(resolve("[3]", "", 3, f), Some(2));
    }

    struct Down;

    #[async_trait]
    impl LlmClient for Down {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Err(LlmError::Unavailable("failed 4 time(s)".into()))
        }
        fn describe(&self) -> String {
            "down".into()
        }
    }

    /// Defect 15: a call that failed (after its HTTP retries) used to count as 0 calls.
    #[tokio::test]
    async fn a_failed_call_counts_as_a_call() {
        let mut stats = LlmStats::default();
        let mut transcript = String::new();
        let e = ask_model(
            ModelCall {
                llm: &Down,
                agent_kind: "host",
                retries: 2,
                system: "system".into(),
                user: "user".into(),
                images: Vec::new(),
            },
            |_| Ok::<(), String>(()),
            &mut stats,
            &mut transcript,
        )
        .await
        .expect_err("the model is down");
        assert!(e.to_string().contains("failed 4 time(s)"), "{e}");
        assert!(
            matches!(e, StepError::Model(_)),
            "the model's error is kept: {e:?}"
        );
        assert_eq!(stats.calls, 1);
        assert_eq!(stats.prompt_tokens, 0);
    }
}
