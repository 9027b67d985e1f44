//! The command line (clap): every subcommand's options, and (in [`plans`]) their resolution,
//! once, into the plain plans of `crate::config::plan` that the commands take. Nothing below
//! this module reads a flag.

pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod knowledge;
pub(crate) mod plans;
pub(crate) mod private;
pub(crate) mod serve;
pub(crate) mod shared;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub(crate) use self::shared::{
    count, token_name, AccessArgs, ConfirmPolicy, OutputArgs, PrivateArgs, RemoteArgs,
};

/// ufo: a desktop agent. Say what you want done in plain words; a HostAgent splits it into
/// subtasks and AppAgents carry them out in the applications on your desktop.
#[derive(Debug, Parser)]
#[command(
    name = "ufo",
    version,
    after_help = "Examples:\n  \
        ufo run --llm openai:gpt-4o \"Compute 12 + 30 on the calculator\"\n  \
        ufo run --desktop sim:examples/word_excel/desktop.json \\\n    \
        --llm script:examples/word_excel/script.jsonl \\\n    \
        \"Extract the sales table from Word and create a bar chart in Excel\"\n  \
        ufo inspect calculator\n\n\
        Exit status: 0 the session ended FINISH, 1 FAIL, 3 ERROR, 2 bad usage or configuration,\n\
        130 cancelled (Ctrl-C)."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a session on a request.
    Run(RunArgs),
    /// Continue a cancelled or crashed session from its trajectory folder, with the desktop
    /// as it is now. Desktop, model and policies default to those of the original run.
    Resume(ResumeArgs),
    /// Write `<OUT>/report.html`: a self-contained page replaying a trajectory.
    Report(ReportArgs),
    /// List past sessions in a runs folder, newest first.
    Runs(RunsArgs),
    /// Show a window of the live desktop as the agent sees it: its controls with labels, and
    /// the annotated screenshot. The first thing to run when the agent cannot find a button.
    Inspect(InspectArgs),
    /// Check that this session is fit for the agent (DISPLAY, window manager, XTEST, session
    /// and accessibility buses) and that each window (or WINDOW) shows its controls; every
    /// problem is printed with its fix. Exit 0 all well, 1 something missing, 2 bad usage.
    Doctor(doctor::DoctorArgs),
    /// The Model Context Protocol: `ufo mcp serve` exposes this desktop to MCP clients.
    Mcp(McpArgs),
    /// Run a suite of OSWorld-format tasks on the live desktop, judge each with its
    /// evaluator, and print the summary table. `--shard K/N` runs one slice of it (on a
    /// cluster: `--shard auto`); `ufo batch merge OUT DIR...` joins the shards' results.
    Batch(Box<BatchArgs>),
    /// Follower mode: carry out a given plan (`{"task": ..., "steps": [...]}`); the AppAgent's
    /// FINISH ends the session.
    Follow(FollowArgs),
    /// Knowledge: the help installed with the applications and a person's own docs, indexed
    /// for the agents (`index`, `search`, `add-docs`, `list`, `forget`, `stats`).
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// Demonstrations: `ufo demo record --out DIR` records a person's clicks and key presses
    /// as a plan `ufo follow` accepts.
    #[command(subcommand)]
    Demo(demo::DemoCommand),
    /// Serve this desktop over MCP streamable HTTP (`/mcp`) to clients holding a token;
    /// `ufo serve token add NAME` makes one. Loopback by default; another address needs TLS.
    Serve(serve::ServeArgs),
    /// Internal: ends a private desktop when the ufo that started it ends.
    #[command(hide = true)]
    PrivateReaper {
        /// The ufo process to watch.
        pid: u32,
        /// The mark every process of the private desktop carries.
        mark: String,
        /// The private desktop's folder, removed at the end.
        dir: PathBuf,
    },
    /// Internal: connects to a Wayland compositor and hands the connection to the ufo that
    /// started it (KWin identifies a client by the executable of the process that connected).
    #[command(hide = true, name = "wayland-connect")]
    WaylandConnect {
        /// The compositor's socket (a path), or the session bus's.
        socket: PathBuf,
        /// Stay until ufo closes the socket pair (ufo's end: the peer of a D-Bus connection
        /// must live while KWin checks its calls), instead of until the globals are bound.
        #[arg(long)]
        hold: bool,
    },
}

/// Options of `ufo inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The window: title, application or process name, or part of the title (default: the
    /// active window).
    pub window: Option<String>,

    /// Where to write the annotated screenshot.
    #[arg(long, value_name = "FILE", default_value = "inspect.png")]
    pub png: PathBuf,

    /// Desktop to inspect: `live` (this Linux session), `sim:<SCENARIO.json>` or
    /// `remote:URL` (a desktop served by `ufo serve`).
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|sim:FILE|remote:URL"
    )]
    pub desktop: String,

    /// The remote desktop's token and certificate.
    #[command(flatten)]
    pub remote: RemoteArgs,

    /// When text is read in a window's pixels where its accessibility tree is silent
    /// (docs/sight.md): over `[vision] mode` and `UFO_VISION`.
    #[arg(long, value_name = "auto|always|off", value_parser = parse_vision)]
    pub vision: Option<ufo_core::vision::VisionMode>,
}

/// Options of `ufo resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The trajectory folder of the session to continue (holds checkpoint.json).
    pub out: PathBuf,

    /// Desktop (default: the original run's): `live`, `private`, `sim:FILE` or `remote:URL`.
    /// A session across devices reconnects to the devices it recorded (or those of --device).
    #[arg(
        long,
        value_name = "live|wayland|private[:sway|kwin]|sim:FILE|remote:URL"
    )]
    pub desktop: Option<String>,

    /// Model (default: the original run's).
    #[arg(long, value_name = "SPEC")]
    pub llm: Option<String>,

    /// How the model's answers are constrained: `auto` (the default: the answer's JSON Schema,
    /// falling back to JSON mode, then to none, as the server allows), `schema`, `json` or
    /// `off` (docs/configuration.md "Structured output"); over `structured_output` in
    /// ufo.toml and UFO_STRUCTURED_OUTPUT.
    #[arg(long, value_name = "auto|schema|json|off", value_parser = parse_structured_output)]
    pub structured_output: Option<ufo_core::StructuredOutput>,

    /// Most processor steps in the whole session, counting the steps already taken.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub max_steps: Option<u32>,

    /// CONFIRM policy (default: the original run's).
    #[arg(long, value_enum, value_name = "ask|yes|no")]
    pub confirm: Option<ConfirmPolicy>,

    /// Answers to PENDING questions, one per line, used in order.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,

    /// Configuration file (default: the original run's).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The private desktop's options.
    #[command(flatten)]
    pub private: PrivateArgs,

    /// The remote desktop's token and certificate.
    #[command(flatten)]
    pub remote: RemoteArgs,

    /// Who may reach it from the web console; shell commands.
    #[command(flatten)]
    pub access: AccessArgs,

    /// Progress, detail and the report.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Options of `ufo report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trajectory folder (the `--out` of `ufo run`).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
}

/// Options of `ufo runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// The runs folder (default: `runs_dir` of ufo.toml, else `runs`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Options of `ufo run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The request, in plain words.
    pub request: String,

    /// Desktop to act on: `live` (this Linux session), `private` (a desktop of ufo's own,
    /// started for the session and ended with it; your display, pointer and windows are left
    /// alone), `sim:<SCENARIO.json>` (simulated) or `remote:https://HOST:PORT` (a desktop served by
    /// `ufo serve`; see --token-file and --fingerprint).
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|private[:sway|kwin]|sim:FILE|remote:URL"
    )]
    pub desktop: String,

    /// Model: `openai:<model>`, `anthropic:<model>`, `script:<FILE.jsonl>` or `replay:<DIR>`.
    /// Default: the `llm` key of ufo.toml, else UFO_LLM.
    #[arg(long, value_name = "SPEC", env = "UFO_LLM")]
    pub llm: Option<String>,

    /// How the model's answers are constrained: `auto` (the default: the answer's JSON Schema,
    /// falling back to JSON mode, then to none, as the server allows), `schema`, `json` or
    /// `off` (docs/configuration.md "Structured output"); over `structured_output` in
    /// ufo.toml and UFO_STRUCTURED_OUTPUT.
    #[arg(long, value_name = "auto|schema|json|off", value_parser = parse_structured_output)]
    pub structured_output: Option<ufo_core::StructuredOutput>,

    /// Trajectory folder (default runs/<timestamp>). A folder that already holds a
    /// trajectory is refused unless --force is given.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Replace the trajectory already in the --out folder (its events, log, checkpoint and
    /// step files are deleted first).
    #[arg(long)]
    pub force: bool,

    /// Most processor steps in the session.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub max_steps: Option<u32>,

    /// Most rounds (follow-up requests) in the session.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub max_rounds: Option<u32>,

    /// What to do with actions the model wants confirmed. `ask` without a terminal means no.
    #[arg(long, value_enum, value_name = "ask|yes|no")]
    pub confirm: Option<ConfirmPolicy>,

    /// Answers to PENDING questions, one per line, used in order.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,

    /// Follow-up requests for further rounds, one per line (with --max-rounds > 1).
    #[arg(long, value_name = "FILE")]
    pub requests: Option<PathBuf>,

    /// Configuration file (ufo.toml). Environment variables UFO_* and flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// When text is read in a window's pixels where its accessibility tree is silent
    /// (docs/sight.md): over `[vision] mode` and `UFO_VISION`.
    #[arg(long, value_name = "auto|always|off", value_parser = parse_vision)]
    pub vision: Option<ufo_core::vision::VisionMode>,

    /// Record every model request and response into this folder, for `--llm replay:DIR`.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,

    /// The private desktop's options.
    #[command(flatten)]
    pub private: PrivateArgs,

    /// The remote desktop's token and certificate.
    #[command(flatten)]
    pub remote: RemoteArgs,

    /// Who may reach it from the web console; shell commands.
    #[command(flatten)]
    pub access: AccessArgs,

    /// Progress, detail and the report.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Options of `ufo batch`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchArgs {
    /// `ufo batch merge OUT DIR...`.
    #[command(subcommand)]
    pub action: Option<BatchAction>,

    /// Task files (OSWorld JSON) or folders of them (searched recursively for `*.json`).
    #[arg(value_name = "TASKS", required_unless_present = "worker")]
    pub tasks: Vec<PathBuf>,

    /// Run one slice of the suite: `K/N` is shard K of N (0-based: 0/3, 1/3, 2/3), a stable
    /// split of the sorted task ids, the same on every machine; `auto` takes K and N from the
    /// engine's array (JOB_COMPLETION_INDEX with UFO_SHARD_COUNT, SLURM_ARRAY_TASK_ID,
    /// BATCH_TASK_INDEX, AWS_BATCH_JOB_ARRAY_INDEX with UFO_SHARD_COUNT). The shard writes
    /// `<out>/shard-K-of-N`; run again, it skips the tasks it already finished.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,

    /// Model for tasks without a `ufo_script`: `openai:<model>`, `anthropic:<model>`, ...
    /// Without it, such tasks are skipped.
    #[arg(long, value_name = "SPEC", env = "UFO_LLM")]
    pub llm: Option<String>,

    /// How the model's answers are constrained: `auto` (the default: the answer's JSON Schema,
    /// falling back to JSON mode, then to none, as the server allows), `schema`, `json` or
    /// `off` (docs/configuration.md "Structured output"); over `structured_output` in
    /// ufo.toml and UFO_STRUCTURED_OUTPUT.
    #[arg(long, value_name = "auto|schema|json|off", value_parser = parse_structured_output)]
    pub structured_output: Option<ufo_core::StructuredOutput>,

    /// Batch folder: `results.jsonl`, `summary.txt` and one folder per task
    /// (default runs/batch-<timestamp>); one that holds a batch's results is refused unless
    /// --force is given.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Replace the batch results already in the --out folder.
    #[arg(long)]
    pub force: bool,

    /// Desktop the tasks run on: `live` (this session and the --display-env sessions),
    /// `private` (ufo starts one private desktop per job and ends them at the end) or
    /// `remote:URL` (a desktop served by `ufo serve` on another machine; one job; its task
    /// set-up and evaluators run through that machine's shell when it was started with
    /// --allow-shell, else tasks that need one are skipped).
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|private[:sway|kwin]|remote:URL"
    )]
    pub desktop: String,

    /// With `--desktop remote:URL`: the file holding the token (default: the UFO_REMOTE_TOKEN
    /// environment variable).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// With `--desktop remote:https://…`: the SHA-256 fingerprint of the server's certificate
    /// to pin (`AB:CD:…`, as `ufo serve --tls` prints it).
    #[arg(long, value_name = "AB:CD:…")]
    pub fingerprint: Option<String>,

    /// The private desktops' options.
    #[command(flatten)]
    pub private: PrivateArgs,

    /// Tasks run at once, each job on its own desktop session (see --display-env).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,

    /// The env file of a desktop session (`$UFO_SESSION_DIR/env` of
    /// scripts/desktop-session.sh), once per job in order. Job 1 without one uses this
    /// process's environment.
    #[arg(long = "display-env", value_name = "FILE")]
    pub display_env: Vec<PathBuf>,

    /// Configuration file (ufo.toml), as for `ufo run`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Most processor steps per task.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,

    /// What to do with actions the model wants confirmed (unattended: `ask` means no).
    #[arg(long, value_enum, value_name = "ask|yes|no")]
    pub confirm: Option<ConfirmPolicy>,

    /// Also judge every task that ran with the LLM evaluation agent (UFO's EvaluationAgent:
    /// reason, sub-scores, complete yes/no/unsure), using this model; the verdict goes into the
    /// result as `llm_eval` (the task's own evaluator still decides passed/failed).
    #[arg(long, value_name = "SPEC")]
    pub eval_llm: Option<String>,

    /// Longest time one task may take, in seconds (1 to 604800, a week); the worker is killed
    /// after it.
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub task_timeout: u64,

    /// No progress bar and no per-task lines (the summary table is still printed).
    #[arg(long, short)]
    pub quiet: bool,

    /// Let the holder of the `ufo serve` token named NAME follow this batch in the web console
    /// (repeatable). Without it no token sees a batch started here.
    #[arg(long = "share", value_name = "NAME", value_parser = token_name)]
    pub share: Vec<String>,

    /// Internal: run one task in this process (used by the coordinator).
    #[arg(long, hide = true, value_name = "TASK")]
    pub worker: Option<PathBuf>,

    /// Internal: the worker's task folder.
    #[arg(long, hide = true, value_name = "DIR")]
    pub worker_out: Option<PathBuf>,
}

/// Subcommands of `ufo batch`.
#[derive(Debug, Subcommand)]
pub enum BatchAction {
    /// Join the results of a batch's shards into one `results.jsonl` and summary table; tasks
    /// reported twice or by no shard are reported; shards of different suites are refused.
    /// Exit 0 all passed, 1 a task failed, ended in error or is missing, 2 bad usage.
    Merge(MergeArgs),
}

/// Options of `ufo batch merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Folder for the merged `results.jsonl` and `summary.txt`.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// Shard folders (`shard-K-of-N`, holding `shard.json`), or folders holding them.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Replace merged results already in OUT.
    #[arg(long)]
    pub force: bool,

    /// No per-task lines (the summary table is still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Options of `ufo follow`.
#[derive(Debug, Args)]
pub struct FollowArgs {
    /// The plan: `{"task": "...", "steps": ["...", ...]}`.
    #[arg(value_name = "PLAN.json")]
    pub plan: PathBuf,

    /// Desktop to act on: `live`, `private`, `sim:<SCENARIO.json>` or `remote:URL`.
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|private[:sway|kwin]|sim:FILE|remote:URL"
    )]
    pub desktop: String,

    /// Model, as for `ufo run`.
    #[arg(long, value_name = "SPEC", env = "UFO_LLM")]
    pub llm: Option<String>,

    /// How the model's answers are constrained: `auto` (the default: the answer's JSON Schema,
    /// falling back to JSON mode, then to none, as the server allows), `schema`, `json` or
    /// `off` (docs/configuration.md "Structured output"); over `structured_output` in
    /// ufo.toml and UFO_STRUCTURED_OUTPUT.
    #[arg(long, value_name = "auto|schema|json|off", value_parser = parse_structured_output)]
    pub structured_output: Option<ufo_core::StructuredOutput>,

    /// Trajectory folder (default runs/<timestamp>), refused if it holds a trajectory
    /// unless --force is given.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Replace the trajectory already in the --out folder.
    #[arg(long)]
    pub force: bool,

    /// Most processor steps.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count)]
    pub max_steps: Option<u32>,

    /// What to do with actions the model wants confirmed.
    #[arg(long, value_enum, value_name = "ask|yes|no")]
    pub confirm: Option<ConfirmPolicy>,

    /// Configuration file (ufo.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The private desktop's options, as for `ufo run`.
    #[command(flatten)]
    pub private: PrivateArgs,

    /// The remote desktop's token and certificate.
    #[command(flatten)]
    pub remote: RemoteArgs,

    /// Who may reach it from the web console; shell commands.
    #[command(flatten)]
    pub access: AccessArgs,

    /// Progress, detail and the report, as for `ufo run`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `ufo mcp ...`
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// Subcommands of `ufo mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve this desktop to any MCP client over stdio: list windows, observe a window
    /// (controls + annotated screenshot), act on a control, type, launch an application.
    Serve(ServeArgs),
}

/// Options of `ufo mcp serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Desktop to serve: `live` (this Linux session), `private` (a desktop of ufo's own, ended
    /// with the server) or `sim:<SCENARIO.json>` (simulated).
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|private[:sway|kwin]|sim:FILE"
    )]
    pub desktop: String,

    /// The private desktop's options.
    #[command(flatten)]
    pub private: PrivateArgs,

    /// Allow the tools that change the desktop (act, type_text, launch_app); without it they
    /// are refused.
    #[arg(long)]
    pub allow_actions: bool,

    /// Also offer `run_shell`: shell commands on this machine (needs --allow-actions).
    #[arg(long, requires = "allow_actions")]
    pub allow_shell: bool,

    /// Configuration file (ufo.toml, default ./ufo.toml when present): its `[launch]` table
    /// adds to the built-in one for `launch_app`. Its other keys are checked but unused.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `--vision auto|always|off`.
fn parse_structured_output(v: &str) -> Result<ufo_core::StructuredOutput, String> {
    ufo_core::StructuredOutput::parse(v)
}

fn parse_vision(v: &str) -> Result<ufo_core::vision::VisionMode, String> {
    crate::sight::parse_mode("--vision", v).map_err(|e| e.to_string())
}
