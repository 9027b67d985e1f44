//! The options of `ufo doctor` (clap).

use clap::Args;

/// Options of `ufo doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check only this window: title, application or process name, or part of the title, as
    /// `ufo inspect` matches it (default: every window).
    pub window: Option<String>,
}
