//! A sub-agent's record of its subtask ([`SubtaskLog`]), its memory lines ([`recent`]), and
//! how a finished subtask is archived into the previous subtasks and the blackboard
//! ([`archive`]).

use super::context::Cx;
use crate::blackboard::Trajectory;
use crate::events::StepReport;
use crate::step_action::{Archived, StepAction};
use crate::subtask::{subtask_result, SubtaskOutcome, SubtaskRecord};

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
    cx.blackboard.add_trajectory(Trajectory {
        agent: agent.to_string(),
        subtask: subtask.to_string(),
        status,
        result: result.to_string(),
        actions: actions.to_vec(),
    });
    StepReport {
        status: state.to_string(),
        subtask: Some(subtask.to_string()),
        action: Some(StepAction::Archive(Archived {
            subtask: subtask.to_string(),
            status,
            result: result.to_string(),
        })),
        result: Some(result.to_string()).filter(|r| !r.is_empty()),
        ..StepReport::default()
    }
}

/// The last `keep` memory lines, numbered from the start of the whole memory.
pub fn recent(memory: &[String], keep: usize) -> Vec<String> {
    let start = memory.len().saturating_sub(keep);
    memory[start..]
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}. {m}", start + i + 1))
        .collect()
}
