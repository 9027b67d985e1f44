//! Trajectory records (`events.jsonl`), as docs/formats.md "Trajectory" specifies them: one
//! typed [`Record`] enum, written here for the recorder and read back by `ufo report`,
//! `ufo runs`, `ufo resume` and `ufo batch`.
//!
//! Reading is tolerant: a missing field takes its default, and a record of a type this version
//! does not know reads as [`Record::Other`] (the format may gain record types).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::AgentMode;
use crate::knowledge::UsedSnippet;
use crate::status::SessionStatus;
use crate::step_action::StepAction;

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A session (or a resumed part of one) starts.
    SessionStart(SessionStart),
    /// A state the round loop visited.
    Step(Box<Step>),
    /// A round ended.
    RoundEnd(End),
    /// The session (or this part of it) ended.
    SessionEnd(End),
    /// The person took the desktop over: the agent pauses (a watched private desktop).
    Takeover(Takeover),
    /// The person handed the desktop back (or the pause ended without it): the agent
    /// observes again and its model decides anew.
    Handback(Handback),
    /// A model-written summary of a saved experience was asked for, after the session.
    ExperienceSummary(ExperienceSummary),
    /// The session's model was asked to order a knowledge query's candidates (`[knowledge]
    /// rerank = "model"`), before the step numbered `seq`.
    KnowledgeRerank(KnowledgeRerank),
    /// A question to the person opened (a CONFIRM or a PENDING question), answerable from
    /// the terminal, an answers file or the control socket.
    Ask(Ask),
    /// The open question closed: who answered, and what.
    Answered(Answered),
    /// A record type this version does not know.
    #[serde(other)]
    Other,
}

impl Record {
    /// The record as the JSON object written to the file.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// When it was written (RFC 3339), when the recorder stamped it.
    pub fn ts(&self) -> Option<&str> {
        match self {
            Record::SessionStart(r) => r.ts.as_deref(),
            Record::Step(r) => r.ts.as_deref(),
            Record::RoundEnd(r) | Record::SessionEnd(r) => r.ts.as_deref(),
            Record::Takeover(r) => r.ts.as_deref(),
            Record::Handback(r) => r.ts.as_deref(),
            Record::ExperienceSummary(r) => r.ts.as_deref(),
            Record::KnowledgeRerank(r) => r.ts.as_deref(),
            Record::Ask(r) => r.ts.as_deref(),
            Record::Answered(r) => r.ts.as_deref(),
            Record::Other => None,
        }
    }
}

/// `session_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStart {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The person's request.
    pub request: String,
    /// The host's model.
    pub llm: String,
    /// The AppAgents' model.
    pub app_llm: String,
    /// Step limit of the session.
    pub max_steps: u32,
    /// Round limit of the session.
    pub max_rounds: u32,
    /// Whether the CONFIRM gate asks.
    pub safe_guard: bool,
    /// Whether PENDING asks.
    pub ask_question: bool,
    /// Normal or follower mode.
    pub mode: AgentMode,
    /// Set on the start of a resumed part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<bool>,
    /// The round a resumed part starts in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The sequence number a resumed part goes on from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The configured `structured_output` mode (`auto`, `schema`, `json`, `off`); what a
    /// server made `auto` settle on is in the `model_notes` of the step it happened in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<String>,
}

/// `step`: one state the round loop visited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Round number.
    pub round: u32,
    /// Sequence number in the session.
    pub seq: u64,
    /// `HostAgent` or `AppAgent/<app>` (or a third-party agent's name).
    pub agent: String,
    /// `host` or `app`.
    pub role: String,
    /// The state handled.
    pub state: String,
    /// The status after the handle.
    pub status: String,
    /// The subtask being worked on.
    pub subtask: Option<String>,
    /// The action taken, held or archived, and what became of it.
    pub action: Option<StepAction>,
    /// The action's result or error text.
    pub result: Option<String>,
    /// The model's thought.
    pub thought: Option<String>,
    /// A system error of this step.
    pub error: Option<String>,
    /// Model use of this step.
    pub llm: LlmStats,
    /// Milliseconds per processor phase and `total`.
    pub timings_ms: Map<String, Value>,
    /// Artifacts written for this step, by kind (`prompt`, `screenshot`, ...).
    pub artifacts: Map<String, Value>,
    /// Steps counted in the session so far.
    pub steps: u32,
    /// Whether the round ends on this record.
    pub terminal: bool,
    /// The window an AppAgent observes changed (docs/formats.md "Trajectory"); absent when
    /// it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_change: Option<Value>,
    /// The knowledge snippets the step's prompt showed (id, kind, score), best kept first;
    /// absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<UsedSnippet>,
    /// Whether the order of the knowledge shown is the session's model's (`[knowledge]
    /// rerank = "model"`; the call is the `knowledge_rerank` record of this or an earlier
    /// step with the same query); absent when it is the fused order.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub knowledge_reranked: bool,
    /// In a session across several devices, the device this step is about (added by the
    /// recorder, which knows the devices); absent for a single desktop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// On a HostAgent step, the host's plan after it (the steps it still means to take);
    /// absent on AppAgent steps and when the plan is empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<String>,
    /// What the model backends learnt about their servers during this step and changed in
    /// what they send (the response format settled on or given up, images no longer sent);
    /// absent when nothing changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_notes: Vec<crate::ports::ModelNote>,
    /// Completion tokens per second of the step's last streamed model answer (first token
    /// to last); absent when nothing was streamed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
}

/// `round_end` and `session_end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct End {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The round that ended (`round_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// FINISH, FAIL, ERROR (or CANCELLED for a session).
    pub status: String,
    /// Why (`finish`, `max_steps`, `app_error`, ...).
    pub reason: String,
    /// The detail.
    pub message: Option<String>,
    /// Steps counted.
    pub steps: u32,
    /// Rounds run (`session_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// Model use of the whole session (`session_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmStats>,
}

/// `takeover`: the person's own input was seen on the desktop; no action runs until they hand
/// it back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Takeover {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Round number.
    pub round: u32,
    /// The sequence number of the step that comes next (the paused one).
    pub seq: u64,
    /// Steps counted so far.
    pub steps: u32,
    /// What the person did (e.g. `button press on "Xephyr virtual mouse"`).
    pub input: String,
}

/// `experience_summary`: one call asking a model to summarise a saved experience.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExperienceSummary {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The subtask the experience is of.
    pub subtask: String,
    /// The model asked.
    pub model: String,
    /// The call's usage (counted in the session's totals).
    pub llm: LlmStats,
    /// The summary kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `knowledge_rerank`: one call asking the session's model to order the candidates of a
/// knowledge query (docs/knowledge.md, "Reranked by the session's model").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeRerank {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The sequence number of the step whose prompt the order is for.
    pub seq: u64,
    /// The query (the subtask, or the request for the HostAgent).
    pub query: String,
    /// The model asked.
    pub model: String,
    /// The call's usage (counted in the session's totals).
    pub llm: LlmStats,
    /// The candidates' ids offered, in the fused order.
    pub offered: Vec<String>,
    /// Their ids in the order kept (the fused order when the call failed).
    pub order: Vec<String>,
    /// Why the fused order was kept, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the call took, in milliseconds.
    pub ms: u64,
}

/// `handback`: the pause ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Handback {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Round number.
    pub round: u32,
    /// The sequence number of the step that comes next.
    pub seq: u64,
    /// Steps counted so far.
    pub steps: u32,
    /// How the pause ended: `handed_back`, `timeout` (no hand-back within the limit; the
    /// round ends FAIL) or `cancelled` (Ctrl-C).
    pub how: String,
    /// How long the agent was paused, in milliseconds.
    pub paused_ms: u64,
}

/// `ask`: a question to the person opened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ask {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The question's number in the session, from 1.
    pub id: u64,
    /// `confirm` (approve a held action) or `pending` (answer a question in words).
    pub kind: String,
    /// The agent that asks.
    pub agent: String,
    /// The held action as the terminal shows it, or the question.
    pub text: String,
}

/// `answered`: the open question closed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Answered {
    /// When it was written (added by the recorder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// The question's number (its `ask` record's `id`).
    pub id: u64,
    /// Who answered: `terminal`, `console`, `answers_file`, `policy` (`--confirm yes|no`, or
    /// nobody could be asked), `timeout` or `cancelled`.
    pub by: String,
    /// `true`/`false` for a confirm; the answer's text, or `null` without one, for a pending.
    pub value: Value,
}

/// What the handling of one state produced, for the step record.
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// The agent's status after handling.
    pub status: String,
    /// The subtask being worked on.
    pub subtask: Option<String>,
    /// The action taken or held, and what became of it.
    pub action: Option<StepAction>,
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
    /// The window an AppAgent observes changed before this step (an action opened a window
    /// of the same application, or a followed window closed): one record per change.
    pub window_change: Option<Value>,
    /// The knowledge snippets the step's prompt showed.
    pub knowledge: Vec<UsedSnippet>,
    /// Whether their order is the session's model's.
    pub knowledge_reranked: bool,
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

/// `session_start`.
pub fn session_start(
    request: &str,
    config: &crate::config::Config,
    llm: &str,
    app_llm: &str,
) -> SessionStart {
    SessionStart {
        request: request.to_string(),
        llm: llm.to_string(),
        app_llm: app_llm.to_string(),
        max_steps: config.max_steps,
        max_rounds: config.max_rounds,
        safe_guard: config.safe_guard,
        ask_question: config.ask_question,
        mode: config.mode,
        structured_output: Some(config.structured_output.as_str().to_string()),
        ..SessionStart::default()
    }
}

/// Identity of the agent of a step.
pub struct StepWho<'a> {
    /// Round number.
    pub round: u32,
    /// Sequence number.
    pub seq: u64,
    /// `HostAgent` or `AppAgent/<app>`.
    pub agent: &'a str,
    /// `host` or `app`.
    pub role: &'a str,
    /// The state handled.
    pub state: &'a str,
    /// Steps counted so far in the session (after this one).
    pub steps: u32,
    /// Whether the round ends on this record.
    pub terminal: bool,
}

/// `step`.
pub fn step(who: &StepWho<'_>, r: &StepReport) -> Record {
    Record::Step(Box::new(Step {
        ts: None,
        round: who.round,
        seq: who.seq,
        agent: who.agent.to_string(),
        role: who.role.to_string(),
        state: who.state.to_string(),
        status: r.status.clone(),
        subtask: r.subtask.clone(),
        action: r.action.clone(),
        result: r.result.clone(),
        thought: r.thought.clone(),
        error: r.error.clone(),
        llm: r.llm,
        timings_ms: r.timings_ms.clone(),
        artifacts: r.artifacts.clone(),
        steps: who.steps,
        terminal: who.terminal,
        window_change: r.window_change.clone(),
        knowledge: r.knowledge.clone(),
        knowledge_reranked: r.knowledge_reranked,
        device: None,
        plan: Vec::new(),
        model_notes: Vec::new(),
        tokens_per_s: None,
    }))
}

/// `round_end`.
pub fn round_end(
    round: u32,
    status: SessionStatus,
    reason: &str,
    message: Option<&str>,
    steps: u32,
) -> Record {
    Record::RoundEnd(End {
        round: Some(round),
        status: status.as_str().to_string(),
        reason: reason.to_string(),
        message: message.map(str::to_string),
        steps,
        ..End::default()
    })
}

/// `session_end`.
pub fn session_end(
    status: SessionStatus,
    reason: &str,
    message: Option<&str>,
    rounds: u32,
    steps: u32,
    total: &LlmStats,
) -> Record {
    Record::SessionEnd(End {
        status: status.as_str().to_string(),
        reason: reason.to_string(),
        message: message.map(str::to_string),
        steps,
        rounds: Some(rounds),
        llm: Some(*total),
        ..End::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-over records read back as written; a reader that predates them sees `Other`.
    #[test]
    fn takeover_records_round_trip() {
        let t = Record::Takeover(Takeover {
            round: 0,
            seq: 4,
            steps: 2,
            input: "key press".into(),
            ..Takeover::default()
        });
        let v = t.to_value();
        assert_eq!(
            (v["type"].as_str(), v["seq"].as_u64()),
            (Some("takeover"), Some(4))
        );
        assert_eq!(serde_json::from_value::<Record>(v).ok(), Some(t));
        let h: Record =
            serde_json::from_str(r#"{"type":"handback","how":"handed_back","paused_ms":7}"#)
                .unwrap_or(Record::Other);
        assert!(matches!(h, Record::Handback(ref b) if b.how == "handed_back" && b.paused_ms == 7));
    }

    /// The records read back as written, and unknown or partial lines are tolerated.
    #[test]
    fn records_round_trip_and_reading_is_tolerant() {
        let end = round_end(2, SessionStatus::Fail, "max_steps", None, 7);
        let v = end.to_value();
        assert_eq!(v["type"], "round_end");
        assert_eq!(v["round"], 2);
        assert_eq!(v["message"], Value::Null);
        assert_eq!(serde_json::from_value::<Record>(v).ok(), Some(end));
        let other: Record =
            serde_json::from_str(r#"{"type":"tool_call","x":1}"#).unwrap_or(Record::Other);
        assert_eq!(other, Record::Other);
        let Ok(Record::Step(s)) = serde_json::from_str::<Record>(
            r#"{"type":"step","seq":3,"llm":{"calls":2},"ts":"2026-01-01T00:00:00Z"}"#,
        ) else {
            panic!("a partial step reads with defaults")
        };
        assert_eq!((s.seq, s.llm.calls, s.llm.prompt_tokens), (3, 2, 0));
        assert_eq!(s.ts.as_deref(), Some("2026-01-01T00:00:00Z"));
    }
}
