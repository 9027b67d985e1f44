//! Helpers shared by the agents of this crate: reading model answers tolerantly, archiving a
//! finished subtask, and where control goes after one.

use serde_json::{json, Map, Value};
use ufo_core::agent::{Cx, Handoff, StepReport, SubtaskRecord};
use ufo_core::blackboard::Trajectory;
use ufo_core::config::AgentMode;
use ufo_core::parse::parse_object;
use ufo_core::{HostStatus, OnSubtaskFail, SessionStatus};

/// A model answer's fields, by normalised name (lower case, letters and digits only), so
/// `ControlText`, `control_text` and `Control Text` are one field.
pub(crate) struct Fields(Map<String, Value>);

fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl Fields {
    /// Parse a raw answer (code fences, prose around it and trailing commas are repaired) and
    /// check the required fields `Observation`, `Thought`, `Status`.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let obj = parse_object(raw)?;
        let f = Fields(obj.into_iter().map(|(k, v)| (norm(&k), v)).collect());
        for required in ["Observation", "Thought", "Status"] {
            if !f.0.contains_key(&norm(required)) {
                return Err(format!("missing required field {required:?}"));
            }
        }
        Ok(f)
    }

    /// A field as text (numbers are written out; absent or null: empty).
    pub(crate) fn text(&self, name: &str) -> String {
        match self.0.get(&norm(name)) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(other) => other.to_string(),
        }
    }

    /// A field as a number, if it is one (or a string holding one).
    pub(crate) fn number(&self, name: &str) -> Option<i64> {
        match self.0.get(&norm(name))? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.round() as i64)),
            Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f.round() as i64),
            _ => None,
        }
    }
}

/// Cut text to at most `max` bytes (on a character boundary), marking the cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Archive a finished subtask into the previous subtasks and the blackboard, and describe it.
pub(crate) fn archive(
    cx: &mut Cx<'_>,
    agent: &str,
    state: &str,
    subtask: &str,
    status: &str,
    result: &str,
    actions: &[String],
) -> StepReport {
    cx.previous_subtasks.push(SubtaskRecord {
        agent: agent.to_string(),
        subtask: subtask.to_string(),
        status: status.to_string(),
        result: result.to_string(),
    });
    cx.blackboard.add_trajectory(Trajectory {
        agent: agent.to_string(),
        subtask: subtask.to_string(),
        status: status.to_string(),
        result: result.to_string(),
        actions: actions.to_vec(),
    });
    StepReport {
        status: state.to_string(),
        subtask: Some(subtask.to_string()),
        action: Some(json!({"archive": {"subtask": subtask, "status": status, "result": result}})),
        result: Some(result.to_string()).filter(|r| !r.is_empty()),
        ..StepReport::default()
    }
}

/// How a subtask ended, for the hand-off back to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Finish,
    Fail,
    Error,
}

/// Where control goes after a subtask ends, by the same rules as the AppAgent's (DESIGN.md):
/// FINISH → Host CONTINUE (follower mode: FINISH); FAIL → replan or finish per
/// `on_subtask_fail`; ERROR → Host FINISH (the round has ended on the ERROR).
pub(crate) fn hand_back(cx: &mut Cx<'_>, ending: Ending) -> Handoff {
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

/// The last `keep` memory lines, numbered.
pub(crate) fn recent(memory: &[String], keep: usize) -> String {
    let start = memory.len().saturating_sub(keep);
    memory[start..]
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}. {m}", start + i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}
