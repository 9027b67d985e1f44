//! `<out>/run.json`: what a session remembers of how it was started, for `ufo resume`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::ConfirmPolicy;

/// What `ufo run` remembers for `ufo resume` (`<out>/run.json`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    /// The desktop spec (file parts absolute; `private` inside a private desktop).
    pub(crate) desktop: String,
    /// The model spec (file parts absolute).
    pub(crate) llm: String,
    /// The CONFIRM policy it ran with.
    pub(crate) confirm: ConfirmPolicy,
    /// The configuration file, absolute.
    pub(crate) config: Option<PathBuf>,
    /// Most processor steps.
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
