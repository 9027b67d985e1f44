//! The seam for agent kinds: what the host hands a sub-agent ([`Assignment`]), the
//! [`SubAgent`] trait each kind's state machine implements, the [`AgentFactory`] that creates
//! them, and where control goes when a sub-agent's subtask ends ([`hand_back`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::context::Cx;
use crate::events::StepReport;
use crate::ports::WindowInfo;
use crate::status::{EndReason, HostStatus, SessionStatus};

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
    /// Whether the round ends on the current state, and with which status and reason: the
    /// reason's name as [`EndReason::as_str`] gives it (e.g. `app_error`), or a kind's own
    /// (e.g. `shell_error`).
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
                    cx.fail_reason = Some(EndReason::MaxSubtaskFailures);
                    HostStatus::Fail
                } else {
                    HostStatus::Continue
                }
            }
            OnSubtaskFail::Finish => {
                cx.forced_end = Some((SessionStatus::Fail, EndReason::SubtaskFailed));
                HostStatus::Finish
            }
        },
        Ending::Error => HostStatus::Finish,
    })
}
