//! `<out>/run.json`: what a session remembers of how it was started, for `ufo resume`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::ConfirmPolicy;

/// What `ufo run` remembers for `ufo resume` (`<out>/run.json`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) desktop: String,
    pub(crate) llm: String,
    pub(crate) confirm: ConfirmPolicy,
    pub(crate) config: Option<PathBuf>,
    pub(crate) max_steps: u32,
    /// The devices of a session across several desktops (`--device`), so that `ufo resume`
    /// reconnects to the same ones; absent for a single desktop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) devices: Vec<crate::devices::DeviceSpec>,
    /// `--no-shell`: kept by `ufo resume` (it only narrows what the session may do).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) no_shell: bool,
}

/// Its file name in the trajectory folder.
pub(crate) const RUN_RECORD: &str = "run.json";
