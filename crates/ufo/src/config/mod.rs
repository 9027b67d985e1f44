//! Configuration: what `ufo.toml`, the `UFO_*` variables and the command line resolve into
//! ([`settings::Settings`], [`knowledge::KnowledgeSettings`]), and the plain plans the command
//! line is turned into ([`plan`]) for the commands to carry out. Nothing here knows clap.

pub(crate) mod knowledge;
pub(crate) mod plan;
pub(crate) mod settings;

/// What `--confirm` does with actions held by the CONFIRM gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmPolicy {
    /// Ask in the terminal; with no terminal, reject.
    Ask,
    /// Approve every held action.
    Yes,
    /// Reject every held action.
    No,
}

impl ConfirmPolicy {
    /// The policy as typed on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmPolicy::Ask => "ask",
            ConfirmPolicy::Yes => "yes",
            ConfirmPolicy::No => "no",
        }
    }
}
