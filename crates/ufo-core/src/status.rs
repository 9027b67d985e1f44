//! Statuses and states of the two agents, parsed from the model's `Status` string.
//!
//! The same enum names both the *status* a model returns and the *state* the agent is in,
//! as in UFO: a model that answers `Status: ASSIGN` moves the host into its ASSIGN state.

use serde::{Deserialize, Serialize};

/// HostAgent states (and statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HostStatus {
    /// Run the processor: observe the desktop, ask the model, act.
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
}
