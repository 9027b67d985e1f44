//! The options of `ufo demo ...` (clap).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `ufo demo ...`.
#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Record a person's clicks and key presses on the desktop until Ctrl-C (SIGINT), SIGTERM
    /// or `--max-seconds`, then write `plan.json` (for `ufo follow`), `demo.json` (the steps
    /// with their controls) and `summary.txt` into DIR.
    Record(RecordArgs),
}

/// Which desktop a demonstration is recorded on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoDesktop {
    /// The desktop of this session (`DISPLAY`).
    Live,
    /// A desktop of ufo's own (as `ufo run --desktop private` starts): ufo prints its
    /// `DISPLAY` and an environment file to start programs in it with (`--watch` shows it in a
    /// window on your display), records there, and ends every process of it afterwards.
    Private,
}

/// `ufo demo record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the demonstration (created; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The desktop to record on.
    #[arg(long, value_enum, default_value = "live")]
    pub desktop: DemoDesktop,
    /// Stop after this many seconds at most.
    #[arg(long, value_name = "N", default_value_t = 600)]
    pub max_seconds: u64,
    /// The task shown, in plain words (the plan's `task`; `ufo knowledge add-demo --request`
    /// gives the request it answers).
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "Repeat the demonstrated steps"
    )]
    pub task: String,
    /// Leave out synthetic input (XTEST: another agent's, or a tool's such as xdotool); by
    /// default every press counts, since ufo itself sends none while it records.
    #[arg(long)]
    pub people_only: bool,
    /// How the private desktop is started (`--desktop private`).
    #[command(flatten)]
    pub private: super::shared::PrivateArgs,
}
