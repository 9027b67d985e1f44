//! `ufo`: the command line of ufo-rs.

mod batch_cmd;
mod cancel;
mod cli;
mod console;
mod doctor;
mod folder;
mod follow_cmd;
mod highlight;
mod logging;
mod mcp_cmd;
mod models;
mod output;
mod private;
mod recorder;
mod report;
mod runs;
mod secret_env;
mod settings;
mod trajectory;
mod user;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use serde::{Deserialize, Serialize};
use ufo_core::agent::Services;
use ufo_core::prompt::Prompts;
use ufo_core::session::{Checkpoint, CHECKPOINT_FILE};
use ufo_core::{Desktop, Session, SessionStatus};

use crate::cli::{Cli, Command, ConfirmPolicy, InspectArgs, ResumeArgs, RunArgs};
use crate::console::{Console, Verbosity};

/// Exit status for bad usage or configuration.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit status of a cancelled session (128 + SIGINT, as shells report it).
pub(crate) const EXIT_CANCELLED: u8 = 130;

fn main() -> ExitCode {
    // first, while single-threaded: no key may stay in this process's /proc environ
    let startup = secret_env::take_at_start();
    if let Some(w) = &startup.warning {
        eprintln!("warning: {w}");
    }
    match ufo_proc::ChildLimits::from_env(&|k| std::env::var(k).ok()) {
        Ok(limits) => ufo_proc::set_child_limits(limits),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let crate::cli::Command::PrivateReaper { pid, mark, dir } = &cli.command {
        return private::reaper(*pid, mark, dir);
    }
    match private::plan(&cli.command) {
        Ok(Some(plan)) => return private::run_inside(&plan),
        Ok(None) => {}
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    // Only the commands with a session to cancel take over SIGINT (and, through the handler,
    // SIGTERM and SIGHUP); the others keep the default, so that a signal ends them.
    let code = match cli.command {
        Command::Run(args) => with_cancel(|cancel| runtime.block_on(run(args, Start::New, cancel))),
        Command::Resume(args) => match resume_args(&args) {
            Ok((run_args, checkpoint)) => with_cancel(|cancel| {
                let start = Start::Resume(Box::new(checkpoint));
                runtime.block_on(run(run_args, start, cancel))
            }),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(EXIT_USAGE)
            }
        },
        Command::Report(args) => report::command(&args),
        Command::Inspect(args) => runtime.block_on(inspect_command(&args)),
        Command::Doctor(args) => runtime.block_on(doctor::run(&args)),
        Command::Runs(args) => runs::command(&args),
        Command::Mcp(args) => runtime.block_on(mcp_cmd::run(args)),
        Command::Batch(args) => {
            with_cancel(|cancel| batch_cmd::batch_command(*args, &runtime, cancel))
        }
        Command::Follow(args) => {
            with_cancel(|cancel| runtime.block_on(follow_cmd::follow_command(args, cancel)))
        }
        // handled before the runtime starts
        Command::PrivateReaper { .. } => ExitCode::SUCCESS,
    };
    // Do not wait for anything still blocked (e.g. a terminal read that timed out).
    runtime.shutdown_background();
    code
}

/// Run a command that has a session to cancel, with the Ctrl-C handler installed.
fn with_cancel(go: impl FnOnce(Arc<AtomicBool>) -> ExitCode) -> ExitCode {
    match install_ctrl_c() {
        Ok(cancel) => go(cancel),
        Err(e) => {
            eprintln!("error: cannot install the Ctrl-C handler: {e}");
            ExitCode::from(3)
        }
    }
}

/// First Ctrl-C: stop a model call in flight at once (see [`cancel::CancellableLlm`]), let an
/// action in progress finish, then end the session CANCELLED (exit 130).
/// Second Ctrl-C: abort at once.
fn install_ctrl_c() -> Result<Arc<AtomicBool>, ctrlc::Error> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\naborted");
            // commands run in process groups of their own: end them before leaving
            ufo_proc::kill_all();
            std::process::exit(EXIT_CANCELLED.into());
        }
        // the terminal's SIGINT no longer reaches commands in their own process groups
        ufo_proc::interrupt_all();
        eprintln!(
            "\ncancelling: a model call in flight stops now, a running command is interrupted, \
             an action in progress finishes (Ctrl-C again aborts at once)"
        );
    })?;
    Ok(flag)
}

/// What `ufo run` remembers for `ufo resume` (`<out>/run.json`).
#[derive(Debug, Serialize, Deserialize)]
struct RunRecord {
    desktop: String,
    llm: String,
    confirm: ConfirmPolicy,
    config: Option<PathBuf>,
    max_steps: u32,
}

const RUN_RECORD: &str = "run.json";

/// Turn `ufo resume` options into the options of the original run, plus its checkpoint.
fn resume_args(args: &ResumeArgs) -> Result<(RunArgs, Checkpoint)> {
    let read = |name: &str| -> Result<String> {
        let p = args.out.join(name);
        folder::read_capped(&p, MAX_STATE_FILE)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .with_context(|| {
                format!(
                    "cannot read {}; is {} the trajectory folder of a ufo run?",
                    p.display(),
                    args.out.display()
                )
            })
    };
    if let Some(status) = ended_status(&args.out) {
        return Err(anyhow!(
            "the session in {} already ended {status}; there is nothing to resume (a resume \
             would repeat its actions): start a new session with `ufo run`",
            args.out.display()
        ));
    }
    let checkpoint: Checkpoint = serde_json::from_str(&read(CHECKPOINT_FILE)?)
        .with_context(|| format!("{CHECKPOINT_FILE} in {} is damaged", args.out.display()))?;
    let record: RunRecord = serde_json::from_str(&read(RUN_RECORD)?)
        .with_context(|| format!("{RUN_RECORD} in {} is damaged", args.out.display()))?;
    let (confirm, config) = safe_to_resume_with(args, &record);
    let run = RunArgs {
        request: checkpoint.request.clone(),
        desktop: args.desktop.clone().unwrap_or(record.desktop),
        private: args.private,
        llm: Some(args.llm.clone().unwrap_or(record.llm)),
        out: Some(args.out.clone()),
        // Resume appends to the trajectory in its folder; it never clears it.
        force: false,
        max_steps: Some(args.max_steps.unwrap_or(record.max_steps)),
        max_rounds: None,
        confirm,
        answers: args.answers.clone(),
        requests: None,
        config,
        record: None,
        output: args.output,
    };
    Ok((run, checkpoint))
}

/// The confirm policy and configuration file a resume runs with: the flags given, else what
/// `run.json` recorded, but only what keeps the CONFIRM gate as strong as the defaults. The
/// trajectory folder may have been prepared by someone else, so `confirm: yes` and a
/// configuration file that weakens the gate ([`settings::file_weakens_the_gate`]) are not
/// re-applied: each is named on stderr with the flag that gives it again.
fn safe_to_resume_with(
    args: &ResumeArgs,
    record: &RunRecord,
) -> (Option<ConfirmPolicy>, Option<PathBuf>) {
    let confirm = match (args.confirm, record.confirm) {
        (Some(flag), _) => Some(flag),
        (None, ConfirmPolicy::Yes) => {
            eprintln!(
                "warning: {RUN_RECORD} records --confirm yes; not re-applied (held actions are \
                 not approved on a resume): pass --confirm yes again to approve them"
            );
            None
        }
        (None, recorded) => Some(recorded),
    };
    let config = match (&args.config, &record.config) {
        (Some(flag), _) => Some(flag.clone()),
        (None, Some(recorded)) => match unsafe_to_reapply(recorded) {
            Ok(weakens) if !weakens.is_empty() => {
                eprintln!(
                    "warning: {RUN_RECORD} records --config {}, which weakens the confirmation \
                     gate or starts programs ({}); not re-applied: pass --config {} again to use it",
                    ufo_core::inert(&recorded.display().to_string()),
                    ufo_core::inert(&weakens.join("; ")),
                    ufo_core::inert(&recorded.display().to_string())
                );
                None
            }
            // unreadable or harmless: used as before (an unreadable file is then an error
            // that says what to fix)
            _ => Some(recorded.clone()),
        },
        (None, None) => None,
    };
    (confirm, config)
}

/// Why a recorded configuration file is not re-applied on a resume: how it weakens the gate
/// (including `[launch]` commands, which run unconfirmed) and the programs it starts.
fn unsafe_to_reapply(config: &Path) -> Result<Vec<String>> {
    let mut why = settings::file_weakens_the_gate(config)?;
    why.extend(settings::file_starts_programs(config)?);
    Ok(why)
}

/// The largest `checkpoint.json` / `run.json` `ufo resume` reads (bytes).
const MAX_STATE_FILE: u64 = 64 << 20;

/// The status of a session that ended for good (FINISH or FAIL), read (as a stream) from the
/// last `session_start`/`session_end` record of its trajectory in `dir`; `None` while it can
/// still be resumed (cancelled, crashed, ERROR) or when the file cannot be read (the
/// checkpoint read or the folder's lock says why).
fn ended_status(dir: &Path) -> Option<String> {
    let t = trajectory::Trajectory::load(dir, trajectory::Keep::SUMMARY).ok()?;
    let end = t.final_end()?;
    matches!(end.status.as_str(), "FINISH" | "FAIL").then(|| end.status.clone())
}

/// Write `run.json`: what `ufo resume` needs to continue the session. Paths are kept absolute
/// so that a resume works from any folder.
fn write_run_record(
    args: &RunArgs,
    settings: &settings::Settings,
    recorder: &mut recorder::FileRecorder,
) -> Result<(), ufo_core::RecorderError> {
    let record = RunRecord {
        // inside a private desktop the session is resumed on a private desktop again
        desktop: if args.desktop == "live" && std::env::var_os(private::INSIDE_VAR).is_some() {
            "private".to_string()
        } else {
            absolute_spec(&args.desktop)
        },
        llm: absolute_spec(&settings.llm),
        confirm: settings.confirm,
        config: args
            .config
            .as_ref()
            .map(|c| std::path::absolute(c).unwrap_or_else(|_| c.clone())),
        max_steps: settings.config.max_steps,
    };
    match serde_json::to_vec_pretty(&record) {
        Ok(bytes) => ufo_core::Recorder::artifact(recorder, RUN_RECORD, &bytes).map(|_| ()),
        Err(_) => Ok(()),
    }
}

/// Write the desktop's final state (`desktop_final.json`, simulated desktop), whole or not at
/// all; the error when it could not be written.
fn save_final_state(
    desktop: &dyn Desktop,
    recorder: &mut recorder::FileRecorder,
) -> Option<ufo_core::RecorderError> {
    let state = desktop.final_state()?;
    match serde_json::to_vec_pretty(&state) {
        Ok(bytes) => match ufo_core::Recorder::artifact(recorder, "desktop_final.json", &bytes) {
            Ok(_) => None,
            Err(e) => {
                eprintln!("error: desktop_final.json: {e}");
                Some(e)
            }
        },
        Err(e) => {
            eprintln!("warning: cannot serialise the desktop state: {e}");
            None
        }
    }
}

/// The closing lines on stderr (unless `--quiet`) and, with `--report`, the report.
fn summarise(args: &RunArgs, outcome: &ufo_core::SessionOutcome, out: &Path) {
    if let Some(e) = &outcome.recorder_error {
        eprintln!("error: the trajectory is incomplete: {e}");
    }
    if !args.output.quiet {
        eprintln!(
            "session ended {} ({}) after {} step(s), {} model call(s), {} prompt + {} completion tokens, cost {:.4}; trajectory in {}",
            outcome.status.as_str(),
            outcome.reason,
            outcome.steps,
            outcome.llm.calls,
            outcome.llm.prompt_tokens,
            outcome.llm.completion_tokens,
            outcome.llm.cost,
            out.display()
        );
        if let (SessionStatus::Error, Some(m)) = (outcome.status, &outcome.message) {
            eprintln!("error: {}", ufo_core::inert(m));
        }
    }
    if args.output.report {
        match report::write(out) {
            Ok(path) => {
                if !args.output.quiet {
                    eprintln!("report: {}", path.display());
                }
            }
            Err(e) => eprintln!("warning: cannot write the report: {e:#}"),
        }
    }
}

/// A desktop or model spec whose file part (`sim:FILE`, `script:FILE`, `replay:DIR`) is made
/// absolute; other specs are returned as they are.
fn absolute_spec(spec: &str) -> String {
    for prefix in ["sim:", "script:", "replay:"] {
        if let Some(path) = spec.strip_prefix(prefix) {
            if let Ok(abs) = std::path::absolute(path) {
                return format!("{prefix}{}", abs.display());
            }
        }
    }
    spec.to_string()
}

/// A usage or configuration problem: exit 2 with the message.
struct Usage(anyhow::Error);

/// How a session starts.
pub(crate) enum Start {
    /// A new session on the request.
    New,
    /// `ufo resume`: from a checkpoint.
    Resume(Box<Checkpoint>),
    /// `ufo follow`: follower mode with the host's plan set to these steps.
    Follow(Vec<String>),
}

pub(crate) async fn run(args: RunArgs, start: Start, cancel: Arc<AtomicBool>) -> ExitCode {
    if args.request.trim().is_empty() {
        eprintln!("error: the request is empty; say what to do, e.g. ufo run \"Compute 12 + 30 on the calculator\"");
        return ExitCode::from(EXIT_USAGE);
    }
    let console = Console::new(Verbosity::from_flags(
        args.output.quiet,
        args.output.verbose,
    ));
    let mut prepared = match prepare(&args, &console, &cancel) {
        Ok(p) => p,
        Err(Usage(e)) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Start::Follow(_) = start {
        prepared.settings.config.mode = ufo_core::config::AgentMode::Follower;
    }
    // The folder is locked before anything runs and stays locked until the end.
    let out_mode = match (&start, args.force) {
        (Start::Resume(_), _) => recorder::OutMode::Append,
        (_, true) => recorder::OutMode::Replace,
        (_, false) => recorder::OutMode::New,
    };
    let out_lock = match recorder::OutLock::open(&prepared.out, out_mode) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Prepared {
        settings,
        llm,
        user,
        out,
        prompts,
    } = prepared;
    let desktop = match open_desktop(&args.desktop, &settings.launch).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (mcp_tools, factory) = match mcp_cmd::tools(&settings.mcp)
        .and_then(|t| Ok((t, mcp_cmd::factory(&settings.agents)?)))
    {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if out_mode == recorder::OutMode::Replace {
        if let Err(e) = out_lock.clear() {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let mut recorder = match recorder::FileRecorder::create_with(
        &out,
        console.clone(),
        matches!(start, Start::Resume(_)),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "error: cannot create the trajectory folder {}: {e}; pass --out with a writable folder",
                out.display()
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    logging::init(&console, Some(&out.join("ufo.log")));
    tracing::info!(request = %args.request, out = %out.display(), "session starts");
    console.start_status();
    // The first Ctrl-C also cuts a model call in flight (and its retries).
    let host_llm = cancel::CancellableLlm::new(llm.host(), cancel.clone());
    let app_llm = cancel::CancellableLlm::new(llm.app(), cancel.clone());
    let services = Services {
        desktop: desktop.as_ref(),
        host_llm: &host_llm,
        app_llm: &app_llm,
        user: &user,
        config: &settings.config,
        prompts: &prompts,
        tools: mcp_tools.as_ref().map(|t| t as &dyn ufo_core::ToolProvider),
    };
    if let Err(e) = write_run_record(&args, &settings, &mut recorder) {
        // A folder that cannot take run.json cannot take the trajectory either.
        eprintln!("error: {e}");
        return ExitCode::from(3);
    }
    let mut session = Session::new(services, Box::new(factory)).with_cancel(cancel);
    let outcome = match start {
        Start::Resume(checkpoint) => session.resume(*checkpoint, &mut recorder).await,
        Start::Follow(steps) => session.follow(&args.request, steps, &mut recorder).await,
        Start::New => session.run(&args.request, &mut recorder).await,
    };
    console.finish();
    tracing::info!(status = outcome.status.as_str(), reason = %outcome.reason, "session ended");
    drop(session);
    if let Some(t) = &mcp_tools {
        t.shutdown().await;
    }
    let final_error = save_final_state(desktop.as_ref(), &mut recorder);
    summarise(&args, &outcome, &out);
    drop(out_lock);
    // A trajectory that could not be written whole is an ERROR whatever the session did.
    if final_error.is_some() && outcome.status != SessionStatus::Cancelled {
        return ExitCode::from(3);
    }
    ExitCode::from(match outcome.status {
        SessionStatus::Finish => 0,
        SessionStatus::Fail => 1,
        SessionStatus::Error => 3,
        SessionStatus::Cancelled => EXIT_CANCELLED,
    })
}

struct Prepared {
    settings: settings::Settings,
    llm: models::Models,
    user: user::CliUser,
    out: PathBuf,
    prompts: Prompts,
}

fn prepare(
    args: &RunArgs,
    console: &Arc<Console>,
    cancel: &Arc<AtomicBool>,
) -> Result<Prepared, Usage> {
    let env = |k: &str| secret_env::var(k);
    let settings = settings::resolve(args, &env).map_err(Usage)?;
    for w in &settings.warnings {
        eprintln!("warning: {}", ufo_core::inert(w));
    }
    let prompts = Prompts::new(&settings.config.prompts).map_err(|e| Usage(e.into()))?;
    let llm = models::Models::build(&models::ModelPlan {
        host: &settings.llm,
        app: &settings.app_llm,
        backup: settings.backup_llm.as_deref(),
        prices: &settings.prices,
        record: args.record.as_deref(),
    })
    .map_err(Usage)?;
    let answers = match &args.answers {
        Some(p) => read_lines(p, "--answers").map_err(Usage)?,
        None => Vec::new(),
    };
    let requests = match &args.requests {
        Some(p) => read_lines(p, "--requests").map_err(Usage)?,
        None => Vec::new(),
    };
    let user = user::CliUser::with_console(settings.confirm, answers, requests, console.clone())
        .with_cancel(cancel.clone());
    let out = args.out.clone().unwrap_or_else(|| {
        // Two runs started in the same second get folders of their own.
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
        let mut dir = settings.runs_dir.join(&stamp);
        let mut n = 2;
        while dir.exists() && n < 1000 {
            dir = settings.runs_dir.join(format!("{stamp}-{n}"));
            n += 1;
        }
        dir
    });
    Ok(Prepared {
        settings,
        llm,
        user,
        out,
        prompts,
    })
}

fn read_lines(path: &Path, flag: &str) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {flag} file {}", path.display()))?;
    Ok(text.lines().map(str::to_string).collect())
}

/// Open the desktop named by `--desktop`.
pub(crate) async fn open_desktop(
    spec: &str,
    launch: &[(String, String)],
) -> Result<Box<dyn Desktop>> {
    if let Some(file) = spec.strip_prefix("sim:") {
        let sim =
            ufo_desktop::SimDesktop::load(file).map_err(|e| anyhow!("--desktop {spec}: {e}"))?;
        return Ok(Box::new(sim));
    }
    match spec {
        "live" => Ok(Box::new(connect_live(launch).await?)),
        "private" => Err(anyhow!(
            "--desktop private is started by ufo itself for run, resume, follow, mcp serve and \
             batch; this command cannot use it"
        )),
        other => Err(anyhow!(
            "--desktop {other:?} is not a desktop; use live, private or sim:<SCENARIO.json>"
        )),
    }
}

/// Connect to this Linux session's accessibility bus and X server.
async fn connect_live(launch: &[(String, String)]) -> Result<ufo_linux::LinuxDesktop> {
    let mut config = ufo_linux::LinuxConfig::default();
    // Entries of ufo.toml's [launch] table come first, so they win over the built-in ones.
    let mut table = launch.to_vec();
    table.extend(config.launch);
    config.launch = table;
    ufo_linux::LinuxDesktop::connect(config).await.map_err(|e| {
        anyhow!(
            "cannot reach the live desktop: {e}; is a desktop session running? (for a headless \
             one: scripts/desktop-session.sh up && source /tmp/ufo-desktop-session/env)"
        )
    })
}

/// `ufo inspect [WINDOW]`: a window's controls as the agent sees them, and the annotated
/// screenshot.
async fn inspect_command(args: &InspectArgs) -> ExitCode {
    let desktop = match connect_live(&[]).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match ufo_linux::inspect(&desktop, args.window.as_deref()).await {
        Ok(report) => {
            // Control names and values come from the screen: shown inert.
            for line in &report.lines {
                output::outln!("{}", ufo_core::inert(line));
            }
            for w in &report.warnings {
                eprintln!("warning: {}", ufo_core::inert(w));
            }
            if !report.annotated_png.is_empty() {
                match std::fs::write(&args.png, &report.annotated_png) {
                    Ok(()) => eprintln!("annotated screenshot: {}", args.png.display()),
                    Err(e) => {
                        eprintln!("error: cannot write {}: {e}", args.png.display());
                        return ExitCode::from(1);
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
