//! `ufo`: the command line of ufo-rs.

mod cli;
mod recorder;
mod settings;
mod user;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use ufo_core::agent::{AppAgentFactory, Services};
use ufo_core::prompt::Prompts;
use ufo_core::{Desktop, LlmClient, Session, SessionStatus};

use crate::cli::{Cli, Command, RunArgs};

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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("UFO_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
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
    match cli.command {
        Command::Run(args) => runtime.block_on(run(args)),
    }
}

/// A usage or configuration problem: exit 2 with the message.
struct Usage(anyhow::Error);

async fn run(args: RunArgs) -> ExitCode {
    let prepared = match prepare(&args) {
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
    let mut recorder = match recorder::FileRecorder::create(&out, !args.quiet) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "error: cannot create the trajectory folder {}: {e}; pass --out with a writable folder",
                out.display()
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
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

fn prepare(args: &RunArgs) -> Result<Prepared, Usage> {
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
    let user = user::CliUser::new(settings.confirm, answers, requests);
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
