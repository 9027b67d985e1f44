//! The subcommands of `ufo`, one module each; `main.rs` parses the command line and calls
//! them. What several commands share (settings, the trajectory writer and reader, the console,
//! the desktop they open) lives in the modules beside this folder.

pub(crate) mod batch;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod follow;
pub(crate) mod inspect;
pub(crate) mod knowledge;
pub(crate) mod mcp;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
pub(crate) mod shards;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cli::ConfirmPolicy;

/// What `ufo run` remembers for `ufo resume` (`<out>/run.json`).
#[derive(Debug, Serialize, Deserialize)]
struct RunRecord {
    desktop: String,
    llm: String,
    confirm: ConfirmPolicy,
    config: Option<PathBuf>,
    max_steps: u32,
    /// The devices of a session across several desktops (`--device`), so that `ufo resume`
    /// reconnects to the same ones; absent for a single desktop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    devices: Vec<crate::devices::DeviceSpec>,
    /// `--no-shell`: kept by `ufo resume` (it only narrows what the session may do).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    no_shell: bool,
}

const RUN_RECORD: &str = "run.json";
