//! `ufo`: the command line of ufo-rs.

mod cli;
mod console;
mod highlight;
mod logging;
mod recorder;
mod report;
mod runs;
mod settings;
mod trajectory;
mod user;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use ufo_core::agent::{AppAgentFactory, Services};
use ufo_core::prompt::Prompts;
use ufo_core::{Desktop, LlmClient, Session, SessionStatus};

use crate::cli::{Cli, Command, ReportArgs, RunArgs, RunsArgs};
use crate::console::{Console, Verbosity};

/// Exit status for bad usage or configuration.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
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
    let code = match cli.command {
        Command::Run(args) => runtime.block_on(run(args)),
        Command::Report(args) => report_command(&args),
        Command::Runs(args) => runs_command(&args),
    };
    // Do not wait for anything still blocked (e.g. a terminal read that timed out).
    runtime.shutdown_background();
    code
}

/// `ufo report <OUT>`.
fn report_command(args: &ReportArgs) -> ExitCode {
    let console = Console::new(Verbosity::Normal);
    logging::init(&console, None);
    if !args.out.join("events.jsonl").is_file() {
        eprintln!(
            "error: {} has no events.jsonl; pass the --out folder of a `ufo run`",
            args.out.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    match report::write(&args.out) {
        Ok(path) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// `ufo runs [--dir DIR]`.
fn runs_command(args: &RunsArgs) -> ExitCode {
    let console = Console::new(Verbosity::Normal);
    logging::init(&console, None);
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => match settings::runs_dir_from_file(Path::new("ufo.toml")) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
    };
    match runs::scan(&dir) {
        Ok(rows) => {
            print!("{}", runs::render(&dir, &rows));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// A usage or configuration problem: exit 2 with the message.
struct Usage(anyhow::Error);

async fn run(args: RunArgs) -> ExitCode {
    let console = Console::new(Verbosity::from_flags(args.quiet, args.verbose));
    let prepared = match prepare(&args, &console) {
        Ok(p) => p,
        Err(Usage(e)) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Prepared {
        settings,
        desktop,
        llm,
        user,
        out,
        prompts,
    } = prepared;
    let mut recorder = match recorder::FileRecorder::create_with(&out, console.clone()) {
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
    let services = Services {
        desktop: desktop.as_ref(),
        host_llm: llm.as_ref(),
        app_llm: llm.as_ref(),
        user: &user,
        config: &settings.config,
        prompts: &prompts,
    };
    let mut session = Session::new(services, Box::new(AppAgentFactory));
    let outcome = session.run(&args.request, &mut recorder).await;
    console.finish();
    tracing::info!(status = outcome.status.as_str(), reason = %outcome.reason, "session ended");
    if let Some(state) = desktop.final_state() {
        match serde_json::to_vec_pretty(&state) {
            Ok(bytes) => {
                if let Err(e) = std::fs::write(out.join("desktop_final.json"), bytes) {
                    eprintln!("warning: cannot write desktop_final.json: {e}");
                }
            }
            Err(e) => eprintln!("warning: cannot serialise the desktop state: {e}"),
        }
    }
    if let Some(e) = &outcome.recorder_error {
        eprintln!("warning: the trajectory is incomplete: {e}");
    }
    if !args.quiet {
        eprintln!(
            "session ended {} ({}) after {} step(s), {} model call(s), {} prompt + {} completion tokens; trajectory in {}",
            outcome.status.as_str(),
            outcome.reason,
            outcome.steps,
            outcome.llm.calls,
            outcome.llm.prompt_tokens,
            outcome.llm.completion_tokens,
            out.display()
        );
        if let (SessionStatus::Error, Some(m)) = (outcome.status, &outcome.message) {
            eprintln!("error: {m}");
        }
    }
    if args.report {
        match report::write(&out) {
            Ok(path) => {
                if !args.quiet {
                    eprintln!("report: {}", path.display());
                }
            }
            Err(e) => eprintln!("warning: cannot write the report: {e:#}"),
        }
    }
    ExitCode::from(match outcome.status {
        SessionStatus::Finish => 0,
        SessionStatus::Fail => 1,
        SessionStatus::Error => 3,
    })
}

struct Prepared {
    settings: settings::Settings,
    desktop: Box<dyn Desktop>,
    llm: Box<dyn LlmClient>,
    user: user::CliUser,
    out: PathBuf,
    prompts: Prompts,
}

fn prepare(args: &RunArgs, console: &std::sync::Arc<Console>) -> Result<Prepared, Usage> {
    let env = |k: &str| std::env::var(k).ok();
    let settings = settings::resolve(args, &env).map_err(Usage)?;
    let prompts = Prompts::new(&settings.config.prompts).map_err(|e| Usage(e.into()))?;
    let desktop = open_desktop(&args.desktop).map_err(Usage)?;
    let llm = open_llm(&settings.llm).map_err(Usage)?;
    let answers = match &args.answers {
        Some(p) => read_lines(p, "--answers").map_err(Usage)?,
        None => Vec::new(),
    };
    let requests = match &args.requests {
        Some(p) => read_lines(p, "--requests").map_err(Usage)?,
        None => Vec::new(),
    };
    let user = user::CliUser::with_console(settings.confirm, answers, requests, console.clone());
    let out = args.out.clone().unwrap_or_else(|| {
        settings
            .runs_dir
            .join(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string())
    });
    Ok(Prepared {
        settings,
        desktop,
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

fn open_desktop(spec: &str) -> Result<Box<dyn Desktop>> {
    if let Some(file) = spec.strip_prefix("sim:") {
        let sim =
            ufo_desktop::SimDesktop::load(file).map_err(|e| anyhow!("--desktop {spec}: {e}"))?;
        return Ok(Box::new(sim));
    }
    match spec {
        "live" => Err(anyhow!(
            "--desktop live: the live Linux desktop backend is not built into this version yet; \
             use --desktop sim:<SCENARIO.json>"
        )),
        other => Err(anyhow!(
            "--desktop {other:?} is not a desktop; use live or sim:<SCENARIO.json>"
        )),
    }
}

fn open_llm(spec: &str) -> Result<Box<dyn LlmClient>> {
    let (kind, rest) = spec.split_once(':').ok_or_else(|| {
        anyhow!("--llm {spec:?} has no kind; use openai:<model>, anthropic:<model>, script:<FILE> or replay:<DIR>")
    })?;
    match kind {
        "script" => {
            let m = ufo_llm::ScriptedModel::load(rest).map_err(|e| anyhow!("--llm {spec}: {e}"))?;
            Ok(Box::new(m))
        }
        "openai" | "anthropic" | "azure" | "replay" => Err(anyhow!(
            "--llm {spec}: the {kind} provider is not built into this version yet; use script:<FILE>"
        )),
        other => Err(anyhow!(
            "--llm {spec:?}: unknown kind {other:?}; use openai:<model>, anthropic:<model>, script:<FILE> or replay:<DIR>"
        )),
    }
}
