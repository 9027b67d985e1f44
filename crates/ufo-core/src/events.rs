//! Trajectory records (`events.jsonl`), as docs/formats.md "Trajectory" specifies them.

use serde_json::{json, Value};

use crate::agent::{LlmStats, StepReport};
use crate::session::SessionStatus;

/// `session_start`.
pub fn session_start(
    request: &str,
    config: &crate::config::Config,
    llm: &str,
    app_llm: &str,
) -> Value {
    json!({
        "type": "session_start",
        "request": request,
        "llm": llm,
        "app_llm": app_llm,
        "max_steps": config.max_steps,
        "max_rounds": config.max_rounds,
        "safe_guard": config.safe_guard,
        "ask_question": config.ask_question,
        "mode": config.mode,
    })
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
pub fn step(who: &StepWho<'_>, r: &StepReport) -> Value {
    json!({
        "type": "step",
        "round": who.round,
        "seq": who.seq,
        "agent": who.agent,
        "role": who.role,
        "state": who.state,
        "status": r.status,
        "subtask": r.subtask,
        "action": r.action,
        "result": r.result,
        "thought": r.thought,
        "error": r.error,
        "llm": llm(&r.llm),
        "timings_ms": r.timings_ms,
        "artifacts": r.artifacts,
        "steps": who.steps,
        "terminal": who.terminal,
    })
}

fn llm(s: &LlmStats) -> Value {
    json!({"calls": s.calls, "prompt_tokens": s.prompt_tokens,
           "completion_tokens": s.completion_tokens, "cost": s.cost})
}

/// `round_end`.
pub fn round_end(
    round: u32,
    status: SessionStatus,
    reason: &str,
    message: Option<&str>,
    steps: u32,
) -> Value {
    json!({
        "type": "round_end",
        "round": round,
        "status": status.as_str(),
        "reason": reason,
        "message": message,
        "steps": steps,
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
) -> Value {
    json!({
        "type": "session_end",
        "status": status.as_str(),
        "reason": reason,
        "message": message,
        "rounds": rounds,
        "steps": steps,
        "llm": llm(total),
    })
}
