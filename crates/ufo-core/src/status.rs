//! Statuses: the states of the two agents, parsed from the model's `Status` string, and how a
//! round or session ended ([`SessionStatus`], [`RoundEnd`] with its [`EndReason`]).
//!
//! The same enum names both the *status* a model returns and the *state* the agent is in,
//! as in UFO: a model that answers `Status: ASSIGN` moves the host into its ASSIGN state.

use serde::{Deserialize, Serialize};

/// HostAgent states (and statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HostStatus {
    /// Run the processor: observe the desktop, ask the model, act.
    #[default]
    Continue,
    /// Hand the current subtask to an AppAgent.
    Assign,
    /// The request is done.
    Finish,
    /// The request cannot be done.
    Fail,
    /// A system error ended the round.
    Error,
    /// Ask the person the model's questions.
    Pending,
    /// Ask the person to approve the held action.
    Confirm,
}

/// AppAgent states (and statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AppStatus {
    /// Run the processor: observe the window, ask the model, act on a control.
    Continue,
    /// Same as CONTINUE after the UI settles, with fresh capture and labels.
    Screenshot,
    /// The subtask is done.
    Finish,
    /// The subtask failed.
    Fail,
    /// A system error: the subtask and the round end.
    Error,
    /// Ask the person the model's questions.
    Pending,
    /// Ask the person to approve the held action.
    Confirm,
}

impl HostStatus {
    /// Every host status.
    pub const ALL: [HostStatus; 7] = [
        HostStatus::Continue,
        HostStatus::Assign,
        HostStatus::Finish,
        HostStatus::Fail,
        HostStatus::Error,
        HostStatus::Pending,
        HostStatus::Confirm,
    ];

    /// The upper-case name used in responses and trajectories.
    pub fn as_str(self) -> &'static str {
        match self {
            HostStatus::Continue => "CONTINUE",
            HostStatus::Assign => "ASSIGN",
            HostStatus::Finish => "FINISH",
            HostStatus::Fail => "FAIL",
            HostStatus::Error => "ERROR",
            HostStatus::Pending => "PENDING",
            HostStatus::Confirm => "CONFIRM",
        }
    }

    /// Parse a model's `Status` (case and surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<Self, String> {
        parse_named(
            s,
            &Self::ALL,
            Self::as_str,
            "HostAgent",
            &Self::LLM_OUTCOMES,
        )
    }

    /// Statuses a model may return from CONTINUE (docs/states.md: the table plus FAIL).
    pub const LLM_OUTCOMES: [HostStatus; 6] = [
        HostStatus::Continue,
        HostStatus::Assign,
        HostStatus::Finish,
        HostStatus::Fail,
        HostStatus::Pending,
        HostStatus::Confirm,
    ];

    /// Whether the transition matrix allows the model to move from `self` to `to`.
    /// Only CONTINUE runs the model, so every other source state allows nothing.
    pub fn llm_may_go(self, to: HostStatus) -> bool {
        match self {
            HostStatus::Continue => match to {
                HostStatus::Continue
                | HostStatus::Assign
                | HostStatus::Finish
                | HostStatus::Fail
                | HostStatus::Pending
                | HostStatus::Confirm => true,
                // ERROR is reached by the system only.
                HostStatus::Error => false,
            },
            HostStatus::Assign
            | HostStatus::Finish
            | HostStatus::Fail
            | HostStatus::Error
            | HostStatus::Pending
            | HostStatus::Confirm => false,
        }
    }
}

impl AppStatus {
    /// Every app status.
    pub const ALL: [AppStatus; 7] = [
        AppStatus::Continue,
        AppStatus::Screenshot,
        AppStatus::Finish,
        AppStatus::Fail,
        AppStatus::Error,
        AppStatus::Pending,
        AppStatus::Confirm,
    ];

    /// The upper-case name used in responses and trajectories.
    pub fn as_str(self) -> &'static str {
        match self {
            AppStatus::Continue => "CONTINUE",
            AppStatus::Screenshot => "SCREENSHOT",
            AppStatus::Finish => "FINISH",
            AppStatus::Fail => "FAIL",
            AppStatus::Error => "ERROR",
            AppStatus::Pending => "PENDING",
            AppStatus::Confirm => "CONFIRM",
        }
    }

    /// Parse a model's `Status` (case and surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<Self, String> {
        parse_named(s, &Self::ALL, Self::as_str, "AppAgent", &Self::ALL)
    }

    /// Whether the model may move the AppAgent from `self` to `to`. The model runs in
    /// CONTINUE and SCREENSHOT, and may choose any app status there (the reference system's mapping of operator statuses).
    pub fn llm_may_go(self, to: AppStatus) -> bool {
        match self {
            AppStatus::Continue | AppStatus::Screenshot => match to {
                AppStatus::Continue
                | AppStatus::Screenshot
                | AppStatus::Finish
                | AppStatus::Fail
                | AppStatus::Error
                | AppStatus::Pending
                | AppStatus::Confirm => true,
            },
            AppStatus::Finish
            | AppStatus::Fail
            | AppStatus::Error
            | AppStatus::Pending
            | AppStatus::Confirm => false,
        }
    }
}

/// How a round or session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SessionStatus {
    /// Done.
    Finish,
    /// Could not be done.
    Fail,
    /// A system error.
    Error,
    /// The person stopped the session (Ctrl-C).
    Cancelled,
}

impl SessionStatus {
    /// Upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Finish => "FINISH",
            SessionStatus::Fail => "FAIL",
            SessionStatus::Error => "ERROR",
            SessionStatus::Cancelled => "CANCELLED",
        }
    }
}

/// Why a round ended: the `reason` of the `round_end` and `session_end` records (docs/formats.md
/// "Trajectory"). [`EndReason::as_str`] gives the name written there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndReason {
    /// The host finished the request (`finish`).
    Finish,
    /// The host's model gave up (`host_fail`).
    HostFail,
    /// Too many subtasks failed in the round (`max_subtask_failures`).
    MaxSubtaskFailures,
    /// A question of the host's went unanswered while asking is on (`no_answer`).
    NoAnswer,
    /// The person rejected the host's held action (`rejected`).
    Rejected,
    /// A subtask failed with `on_subtask_fail = "finish"` (`subtask_failed`).
    SubtaskFailed,
    /// The host reached its ERROR state (`host_error`).
    HostError,
    /// The AppAgent reached its ERROR state (`app_error`).
    AppError,
    /// The step limit was reached (`max_steps`).
    MaxSteps,
    /// The model calls cost more than `max_cost` (`budget`).
    Budget,
    /// The person took the desktop over and did not hand it back in time
    /// (`takeover_timeout`).
    TakeoverTimeout,
    /// The person cancelled the session (`cancelled`).
    Cancelled,
    /// The trajectory could not be written (`io`).
    Io,
    /// The round loop lost track of an agent (`internal`).
    Internal,
    /// The connection to a remote desktop was lost during a step (`device_lost`).
    DeviceLost,
    /// A reason named by an agent kind outside this crate (e.g. `shell_error`).
    Other(String),
}

impl EndReason {
    /// The name written in the trajectory: `finish`, `max_steps`, `app_error`, ...
    pub fn as_str(&self) -> &str {
        match self {
            EndReason::Finish => "finish",
            EndReason::HostFail => "host_fail",
            EndReason::MaxSubtaskFailures => "max_subtask_failures",
            EndReason::NoAnswer => "no_answer",
            EndReason::Rejected => "rejected",
            EndReason::SubtaskFailed => "subtask_failed",
            EndReason::HostError => "host_error",
            EndReason::AppError => "app_error",
            EndReason::MaxSteps => "max_steps",
            EndReason::Budget => "budget",
            EndReason::TakeoverTimeout => "takeover_timeout",
            EndReason::Cancelled => "cancelled",
            EndReason::Io => "io",
            EndReason::Internal => "internal",
            EndReason::DeviceLost => "device_lost",
            EndReason::Other(name) => name,
        }
    }

    /// The reason of this name; a name this crate does not define is [`EndReason::Other`].
    pub fn named(name: String) -> Self {
        match name.as_str() {
            "finish" => EndReason::Finish,
            "host_fail" => EndReason::HostFail,
            "max_subtask_failures" => EndReason::MaxSubtaskFailures,
            "no_answer" => EndReason::NoAnswer,
            "rejected" => EndReason::Rejected,
            "subtask_failed" => EndReason::SubtaskFailed,
            "host_error" => EndReason::HostError,
            "app_error" => EndReason::AppError,
            "max_steps" => EndReason::MaxSteps,
            "budget" => EndReason::Budget,
            "takeover_timeout" => EndReason::TakeoverTimeout,
            "cancelled" => EndReason::Cancelled,
            "io" => EndReason::Io,
            "internal" => EndReason::Internal,
            "device_lost" => EndReason::DeviceLost,
            _ => EndReason::Other(name),
        }
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a round ended: its status, why, and the detail behind the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundEnd {
    /// FINISH, FAIL, ERROR or CANCELLED.
    pub status: SessionStatus,
    /// Why.
    pub reason: EndReason,
    /// The error or detail behind the reason, if any.
    pub message: Option<String>,
}

impl RoundEnd {
    /// A round that ended on an agent's state, with the step's error or result as the detail.
    pub fn new(status: SessionStatus, reason: EndReason, message: Option<String>) -> Self {
        Self {
            status,
            reason,
            message,
        }
    }

    /// The trajectory could not be written (ERROR `io`): the session stops.
    pub fn io(error: &str) -> Self {
        Self::new(
            SessionStatus::Error,
            EndReason::Io,
            Some(format!(
                "{error}; the session stopped so that nothing is done that the trajectory does \
                 not record"
            )),
        )
    }

    /// The person pressed Ctrl-C (CANCELLED `cancelled`).
    pub fn cancelled() -> Self {
        Self::new(
            SessionStatus::Cancelled,
            EndReason::Cancelled,
            Some("the person cancelled the session".into()),
        )
    }

    /// The person kept the desktop longer than `limit_s` seconds (FAIL `takeover_timeout`).
    pub fn takeover_timeout(limit_s: u64) -> Self {
        Self::new(
            SessionStatus::Fail,
            EndReason::TakeoverTimeout,
            Some(format!(
                "the person took the desktop over and did not hand it back \
                 within {limit_s} s; press Pause in the desktop's window to hand \
                 it back, or raise takeover_limit_s"
            )),
        )
    }

    /// The model calls cost `cost`, over `max_cost` (FAIL `budget`).
    pub fn budget(cost: f64, max_cost: f64) -> Self {
        Self::new(
            SessionStatus::Fail,
            EndReason::Budget,
            Some(format!(
                "model calls cost {cost:.4}, more than max_cost {max_cost:.4}"
            )),
        )
    }

    /// The step limit `max_steps` was reached (FAIL `max_steps`).
    pub fn max_steps(max_steps: u32) -> Self {
        Self::new(
            SessionStatus::Fail,
            EndReason::MaxSteps,
            Some(format!("the step limit ({max_steps}) was reached")),
        )
    }

    /// The round loop found no agent under `key` in its cache (ERROR `internal`).
    pub fn no_agent(key: &str) -> Self {
        Self::new(
            SessionStatus::Error,
            EndReason::Internal,
            Some(format!("no agent {key} in the cache")),
        )
    }
}

/// Find the status named `s` among `all`; the error lists the statuses a model may use.
fn parse_named<T: Copy>(
    s: &str,
    all: &[T],
    name: fn(T) -> &'static str,
    agent: &str,
    offered: &[T],
) -> Result<T, String> {
    let t = s.trim();
    all.iter()
        .copied()
        .find(|st| name(*st).eq_ignore_ascii_case(t))
        .ok_or_else(|| {
            let names: Vec<&str> = offered.iter().map(|st| name(*st)).collect();
            format!(
                "unknown Status {s:?} for the {agent}; use one of: {}",
                names.join(", ")
            )
        })
}

impl std::fmt::Display for HostStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for AppStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_parse_case_insensitively() {
        assert_eq!(HostStatus::parse(" assign "), Ok(HostStatus::Assign));
        assert_eq!(AppStatus::parse("Screenshot"), Ok(AppStatus::Screenshot));
        assert!(HostStatus::parse("SCREENSHOT").is_err());
        assert!(AppStatus::parse("ASSIGN").is_err());
    }

    #[test]
    fn host_matrix_matches_design() {
        use HostStatus::*;
        for to in HostStatus::ALL {
            assert_eq!(Continue.llm_may_go(to), to != Error, "CONTINUE->{to}");
            for from in [Assign, Finish, Fail, Error, Pending, Confirm] {
                assert!(
                    !from.llm_may_go(to),
                    "{from}->{to} must not be model-driven"
                );
            }
        }
    }

    #[test]
    fn app_model_may_choose_any_status_from_processing_states() {
        for to in AppStatus::ALL {
            assert!(AppStatus::Continue.llm_may_go(to));
            assert!(AppStatus::Screenshot.llm_may_go(to));
            assert!(!AppStatus::Finish.llm_may_go(to));
        }
    }

    /// The reasons' names are the trajectory's: each reads back as itself, and a name of an
    /// agent kind outside this crate is kept as written.
    #[test]
    fn end_reasons_keep_their_trajectory_names() {
        use EndReason::*;
        let all = [
            (Finish, "finish"),
            (HostFail, "host_fail"),
            (MaxSubtaskFailures, "max_subtask_failures"),
            (NoAnswer, "no_answer"),
            (Rejected, "rejected"),
            (SubtaskFailed, "subtask_failed"),
            (HostError, "host_error"),
            (AppError, "app_error"),
            (MaxSteps, "max_steps"),
            (Budget, "budget"),
            (TakeoverTimeout, "takeover_timeout"),
            (Cancelled, "cancelled"),
            (Io, "io"),
            (Internal, "internal"),
            (DeviceLost, "device_lost"),
        ];
        for (reason, name) in all {
            assert_eq!(reason.as_str(), name);
            assert_eq!(reason.to_string(), name);
            assert_eq!(EndReason::named(name.to_string()), reason);
        }
        let shell = EndReason::named("shell_error".into());
        assert_eq!(shell, Other("shell_error".into()));
        assert_eq!(shell.as_str(), "shell_error");
    }

    #[test]
    fn round_ends_say_what_ended_them() {
        assert_eq!(
            RoundEnd::io("disk full").message.as_deref(),
            Some(
                "disk full; the session stopped so that nothing is done that the trajectory \
                 does not record"
            )
        );
        assert_eq!(
            RoundEnd::max_steps(3).message.as_deref(),
            Some("the step limit (3) was reached")
        );
        assert_eq!(
            RoundEnd::budget(0.5, 0.25).message.as_deref(),
            Some("model calls cost 0.5000, more than max_cost 0.2500")
        );
        let t = RoundEnd::takeover_timeout(60);
        assert_eq!(
            (t.status, t.reason.as_str()),
            (SessionStatus::Fail, "takeover_timeout")
        );
        assert!(t
            .message
            .unwrap_or_default()
            .contains("within 60 s; press Pause"));
    }
}
