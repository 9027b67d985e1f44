//! The plans the command line resolves into (`crate::cli` makes them, once): plain values
//! the commands, the session pipeline and the batch runner take, so that none of them reads a
//! flag. A plan says what was asked; [`super::settings`] adds what `ufo.toml` and the `UFO_*`
//! variables say.

use std::path::PathBuf;

use ufo_core::session::Checkpoint;

use super::ConfirmPolicy;
use crate::desktop::Remote;
use crate::devices::DeviceSpec;

/// How a session starts.
pub(crate) enum Start {
    /// A new session on the request.
    New,
    /// `ufo resume`: from a checkpoint.
    Resume(Box<Checkpoint>),
    /// `ufo follow`: follower mode with the host's plan set to these steps.
    Follow(Vec<String>),
}

/// Who may reach a session from `ufo serve`'s web console, and whether it may run shell
/// commands (docs/security.md, "Who may do what").
#[derive(Debug, Clone, Default)]
pub(crate) struct Access {
    /// The `ufo serve` tokens that may reach the session (`--share`).
    pub(crate) share: Vec<String>,
    /// `--no-shell`: no shell command runs.
    pub(crate) no_shell: bool,
}

/// What a session shows while it runs and leaves behind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Output {
    /// No progress lines.
    pub(crate) quiet: bool,
    /// `-v` count.
    pub(crate) verbose: u8,
    /// Write `<out>/report.html` at the end.
    pub(crate) report: bool,
}

/// One session: what `ufo run`, `ufo resume` and `ufo follow` (and each `ufo batch` worker)
/// ask of the session pipeline (`crate::session`).
pub(crate) struct SessionPlan {
    /// The request, in plain words.
    pub(crate) request: String,
    /// How it starts.
    pub(crate) start: Start,
    /// The desktop spec (`live`, `private`, `sim:FILE`, `remote:URL`).
    pub(crate) desktop: String,
    /// How a remote desktop is reached.
    pub(crate) remote: Remote,
    /// `--device` values (`NAME=SPEC` or a `[devices]` name).
    pub(crate) devices: Vec<String>,
    /// The devices a resumed session ran on (its `run.json`), used when no device is given.
    pub(crate) recorded_devices: Vec<DeviceSpec>,
    /// The model spec, when given.
    pub(crate) llm: Option<String>,
    /// `--structured-output`, when given.
    pub(crate) structured_output: Option<ufo_core::StructuredOutput>,
    /// The trajectory folder, when given.
    pub(crate) out: Option<PathBuf>,
    /// Replace the trajectory already in `out`.
    pub(crate) force: bool,
    /// Most processor steps.
    pub(crate) max_steps: Option<u32>,
    /// Most rounds.
    pub(crate) max_rounds: Option<u32>,
    /// The CONFIRM policy, when given.
    pub(crate) confirm: Option<ConfirmPolicy>,
    /// Answers to PENDING questions, one per line.
    pub(crate) answers: Option<PathBuf>,
    /// Follow-up requests, one per line.
    pub(crate) requests: Option<PathBuf>,
    /// The configuration file, when given.
    pub(crate) config: Option<PathBuf>,
    /// `--vision`, when given.
    pub(crate) vision: Option<ufo_core::vision::VisionMode>,
    /// Where to record the model's requests and responses.
    pub(crate) record: Option<PathBuf>,
    /// Who may reach it; shell commands.
    pub(crate) access: Access,
    /// Progress, detail and the report.
    pub(crate) output: Output,
}

/// `ufo resume OUT`: the options given; the rest comes from the folder's `run.json`.
pub(crate) struct ResumePlan {
    /// The trajectory folder of the session to continue.
    pub(crate) out: PathBuf,
    /// The desktop, when given.
    pub(crate) desktop: Option<String>,
    /// The model, when given.
    pub(crate) llm: Option<String>,
    /// `--structured-output`, when given.
    pub(crate) structured_output: Option<ufo_core::StructuredOutput>,
    /// Most processor steps in the whole session, when given.
    pub(crate) max_steps: Option<u32>,
    /// The CONFIRM policy, when given.
    pub(crate) confirm: Option<ConfirmPolicy>,
    /// Answers to PENDING questions.
    pub(crate) answers: Option<PathBuf>,
    /// The configuration file, when given.
    pub(crate) config: Option<PathBuf>,
    /// How a remote desktop is reached.
    pub(crate) remote: Remote,
    /// `--device` values.
    pub(crate) devices: Vec<String>,
    /// Who may reach it; shell commands.
    pub(crate) access: Access,
    /// Progress, detail and the report.
    pub(crate) output: Output,
}

/// `ufo follow PLAN.json`: the plan file, and the session it runs in (its request and start
/// are set from the file).
pub(crate) struct FollowPlan {
    /// The plan file.
    pub(crate) plan: PathBuf,
    /// The session, request and start aside.
    pub(crate) session: SessionPlan,
}

/// `ufo batch TASKS...` (coordinator or, with `worker`, one task's worker).
pub(crate) struct BatchPlan {
    /// Task files or folders of them.
    pub(crate) tasks: Vec<PathBuf>,
    /// `--shard K/N|auto`.
    pub(crate) shard: Option<String>,
    /// The model for tasks without a script.
    pub(crate) llm: Option<String>,
    /// `--structured-output`, when given.
    pub(crate) structured_output: Option<ufo_core::StructuredOutput>,
    /// The batch folder, when given.
    pub(crate) out: Option<PathBuf>,
    /// Replace the batch results already there.
    pub(crate) force: bool,
    /// `live`, `private` or `remote:URL`.
    pub(crate) desktop: String,
    /// How a remote desktop is reached.
    pub(crate) remote: Remote,
    /// Tasks run at once.
    pub(crate) jobs: usize,
    /// The env files of the jobs' desktop sessions.
    pub(crate) display_env: Vec<PathBuf>,
    /// The configuration file, when given.
    pub(crate) config: Option<PathBuf>,
    /// Most processor steps per task.
    pub(crate) max_steps: Option<u32>,
    /// The CONFIRM policy, when given.
    pub(crate) confirm: Option<ConfirmPolicy>,
    /// The LLM evaluation agent's model, when given.
    pub(crate) eval_llm: Option<String>,
    /// Longest time one task may take, in seconds.
    pub(crate) task_timeout: u64,
    /// No progress bar and no per-task lines.
    pub(crate) quiet: bool,
    /// The tokens that may follow the batch.
    pub(crate) share: Vec<String>,
    /// Internal: run this one task in this process.
    pub(crate) worker: Option<PathBuf>,
    /// Internal: the worker's task folder.
    pub(crate) worker_out: Option<PathBuf>,
}

/// `ufo batch merge OUT DIR...`.
pub(crate) struct MergePlan {
    /// Folder for the merged results.
    pub(crate) out: PathBuf,
    /// Shard folders, or folders holding them.
    pub(crate) dirs: Vec<PathBuf>,
    /// Replace merged results already there.
    pub(crate) force: bool,
    /// No per-task lines.
    pub(crate) quiet: bool,
}

/// `ufo inspect [WINDOW]`.
pub(crate) struct InspectPlan {
    /// The window named, if any (default: the active one, or every window off the live desktop).
    pub(crate) window: Option<String>,
    /// Where to write the annotated screenshot.
    pub(crate) png: PathBuf,
    /// The desktop spec.
    pub(crate) desktop: String,
    /// How a remote desktop is reached.
    pub(crate) remote: Remote,
    /// `--device` values.
    pub(crate) devices: Vec<String>,
    /// `--vision`, when given.
    pub(crate) vision: Option<ufo_core::vision::VisionMode>,
}

/// `ufo mcp serve`: the desktop served over stdio and what its clients may do.
pub(crate) struct McpServePlan {
    /// The desktop spec.
    pub(crate) desktop: String,
    /// Allow the tools that change the desktop.
    pub(crate) allow_actions: bool,
    /// Also offer `run_shell`.
    pub(crate) allow_shell: bool,
    /// The configuration file, when given.
    pub(crate) config: Option<PathBuf>,
}
