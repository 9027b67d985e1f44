//! The session pipeline: one session on a desktop, recorded in a trajectory folder, as a
//! [`SessionPlan`] asks (`ufo run`, `ufo resume`, `ufo follow` start theirs with [`run`]);
//! [`prepare`] is the part a `ufo batch` worker shares (settings, models, the person, the
//! folder).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use ufo_core::agent::Services;
use ufo_core::prompt::Prompts;
use ufo_core::{Desktop, Session, SessionStatus};

pub(crate) mod run_record;

use self::run_record::{RunRecord, RUN_RECORD};
use crate::config::plan::{SessionPlan, Start};
use crate::config::settings;
use crate::console::{Console, Verbosity};
use crate::desktop::open_desktop;
use crate::exit::{EXIT_CANCELLED, EXIT_USAGE};
use crate::{
    cancel, control, extensions, logging, models, private, recorder, secret_env, trajectory, user,
};

/// Write `run.json`: what `ufo resume` needs to continue the session. Paths are kept absolute
/// so that a resume works from any folder.
fn write_run_record(
    args: &SessionPlan,
    settings: &settings::Settings,
    devices: &[crate::devices::DeviceSpec],
    recorder: &mut recorder::FileRecorder,
) -> Result<(), ufo_core::RecorderError> {
    let record = RunRecord {
        // inside a private desktop the session is resumed on a private desktop again
        desktop: if args.desktop == "live" && std::env::var_os(private::INSIDE_VAR).is_some() {
            // the kind of private desktop (private:sway, …), else the X one
            std::env::var(crate::private_wayland::KIND_VAR).unwrap_or_else(|_| "private".into())
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
        devices: devices.to_vec(),
        no_shell: args.access.no_shell,
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
fn summarise(args: &SessionPlan, outcome: &ufo_core::SessionOutcome, out: &Path) {
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
        match trajectory::report::write(out) {
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

/// The devices of a session across several desktops: the `--device` options (against the
/// `[devices]` table), else those a resumed session recorded; empty for one desktop.
fn session_devices(
    args: &SessionPlan,
    settings: &settings::Settings,
) -> Result<Vec<crate::devices::DeviceSpec>> {
    if args.devices.is_empty() {
        if args.desktop != "live" {
            // `ufo resume --desktop …` names one desktop instead of the recorded devices
            return Ok(Vec::new());
        }
        return Ok(crate::devices::reconnect(
            &args.recorded_devices,
            &settings.devices,
            &args.remote,
        ));
    }
    if args.desktop != "live" {
        anyhow::bail!(
            "--desktop {} and --device both name desktops; give the devices alone (a device \
             may be NAME={})",
            args.desktop,
            args.desktop
        );
    }
    crate::devices::resolve(&args.devices, &settings.devices, &args.remote)
}

/// The desktop the session drives: the one of `--desktop`, or all `devices` as one; and,
/// inside a private desktop, its screen for the console's take-over.
async fn open_session_desktop(
    args: &SessionPlan,
    settings: &settings::Settings,
    devices: &[crate::devices::DeviceSpec],
) -> Result<(Arc<dyn Desktop>, Option<Arc<dyn control::Screen>>)> {
    if !devices.is_empty() {
        return Ok((
            Arc::new(crate::devices::open(devices, &settings.launch, &settings.vision).await?),
            None,
        ));
    }
    if desktop_kind(args, devices) == control::DesktopKind::Private {
        let live =
            Arc::new(crate::desktop::connect_live(&settings.launch, &settings.vision).await?);
        return Ok((live.clone(), Some(live)));
    }
    let desktop = open_desktop(
        &args.desktop,
        &settings.launch,
        &args.remote,
        &settings.vision,
    )
    .await?;
    Ok((Arc::from(desktop), None))
}

/// The kind of desktop the session drives, as the control socket reports it.
fn desktop_kind(
    args: &SessionPlan,
    devices: &[crate::devices::DeviceSpec],
) -> control::DesktopKind {
    let inside_private = args.desktop == "live" && std::env::var_os(private::INSIDE_VAR).is_some();
    control::DesktopKind::of(&args.desktop, devices.len(), inside_private)
}

/// Where the control state writes its question records: the session's trajectory (a failed
/// write is logged; the engine reports the trajectory's own failures).
fn question_records(
    recorder: control::SharedRecorder<recorder::FileRecorder>,
) -> Box<dyn Fn(&serde_json::Value) + Send + Sync> {
    Box::new(move |record| {
        let mut r = recorder.clone();
        if let Err(e) = ufo_core::Recorder::event(&mut r, record) {
            tracing::warn!("cannot record a question: {e}");
        }
    })
}

/// A usage or configuration problem: exit 2 with the message.
pub(crate) struct Usage(pub(crate) anyhow::Error);

/// Run the session `args` plans: exit 0 FINISH, 1 FAIL, 3 ERROR, 130 cancelled, 2 bad usage.
pub(crate) async fn run(mut args: SessionPlan, cancel: Arc<AtomicBool>) -> ExitCode {
    let start = std::mem::replace(&mut args.start, Start::New);
    match run_session(&args, start, cancel).await {
        Ok(code) | Err(code) => code,
    }
}

/// A step that can end the start of a session: the exit status, its message already printed.
type Step<T> = std::result::Result<T, ExitCode>;

/// Print a usage or configuration problem; exit 2.
fn usage(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(EXIT_USAGE)
}

/// The steps of a session: its folder locked, its desktop and tools opened, the console's
/// control wired in, the session run, and what it leaves behind written.
async fn run_session(args: &SessionPlan, start: Start, cancel: Arc<AtomicBool>) -> Step<ExitCode> {
    if args.request.trim().is_empty() {
        eprintln!("error: the request is empty; say what to do, e.g. ufo run \"Compute 12 + 30 on the calculator\"");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    let console = Console::new(Verbosity::from_flags(
        args.output.quiet,
        args.output.verbose,
    ));
    let (prepared, out_lock, out_mode) = lock_folder(args, &start, &console, &cancel)?;
    let Prepared {
        settings,
        llm,
        user,
        out,
        prompts,
    } = prepared;
    let devices = session_devices(args, &settings).map_err(|e| usage(format!("{e:#}")))?;
    let (desktop, screen) = open_session_desktop(args, &settings, &devices)
        .await
        .map_err(|e| usage(format!("{e:#}")))?;
    let desktop = if args.access.no_shell {
        Arc::new(crate::shell_off::ShellOff::new(desktop)) as Arc<dyn Desktop>
    } else {
        desktop
    };
    let (mcp_tools, factory) =
        session_tools(args, &settings).map_err(|e| usage(format!("{e:#}")))?;
    if out_mode == recorder::OutMode::Replace {
        out_lock.clear().map_err(usage)?;
    }
    let recorder = create_recorder(&out, &console, &start, &devices)?;
    logging::init(&console, Some(&out.join("ufo.log")));
    tracing::info!(request = %args.request, out = %out.display(), "session starts");
    // a session the web console started ends with its server, even one killed outright
    control::end_with_server();
    let mut recorder = control::SharedRecorder::new(recorder);
    let wired = wire_console(
        args, &devices, desktop, screen, user, &recorder, &out, &cancel,
    );
    console.start_status();
    // The first Ctrl-C also cuts a model call in flight (and its retries).
    let host_llm = cancel::CancellableLlm::new(llm.host(), cancel.clone());
    let app_llm = cancel::CancellableLlm::new(llm.app(), cancel.clone());
    let knowledge = open_knowledge(&settings);
    let rerank_model = crate::session_knowledge::RerankModel::new(&host_llm);
    let services = Services {
        desktop: &wired.desktop,
        host_llm: &host_llm,
        app_llm: &app_llm,
        user: &wired.user,
        config: &settings.config,
        prompts: &prompts,
        tools: mcp_tools.as_ref().map(|t| t as &dyn ufo_core::ToolProvider),
        knowledge: knowledge.as_ref().map(|k| k.access(&rerank_model)),
    };
    record_start(args, &settings, &devices, &recorder)?;
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
    // the session is over: nothing more to answer, cancel or take over
    drop(wired.socket);
    let final_error = save_final_state(&wired.desktop, &mut recorder.lock());
    learn_from(&settings, &out, &outcome, &mut recorder).await;
    summarise(args, &outcome, &out);
    drop(out_lock);
    Ok(exit_status(&outcome, final_error.is_some()))
}

/// Write `run.json` and who the session is shared with; a folder that cannot take them cannot
/// take the trajectory either (exit 3).
fn record_start(
    args: &SessionPlan,
    settings: &settings::Settings,
    devices: &[crate::devices::DeviceSpec],
    recorder: &control::SharedRecorder<recorder::FileRecorder>,
) -> Step<()> {
    let mut files = recorder.lock();
    write_run_record(args, settings, devices, &mut files)
        .and_then(|()| crate::sharing::record(&args.access.share, &mut *files))
        .map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(3)
        })
}

/// Settings, models, the person and the folder ([`prepare`]), in follower mode for `ufo
/// follow`; the folder locked before anything runs (it stays locked until the end).
fn lock_folder(
    args: &SessionPlan,
    start: &Start,
    console: &Arc<Console>,
    cancel: &Arc<AtomicBool>,
) -> Step<(Prepared, recorder::OutLock, recorder::OutMode)> {
    let mut prepared =
        prepare(args, console, cancel).map_err(|Usage(e)| usage(format!("{e:#}")))?;
    if let Start::Follow(_) = start {
        prepared.settings.config.mode = ufo_core::config::AgentMode::Follower;
    }
    let out_mode = match (start, args.force) {
        (Start::Resume(_), _) => recorder::OutMode::Append,
        (_, true) => recorder::OutMode::Replace,
        (_, false) => recorder::OutMode::New,
    };
    let out_lock = recorder::OutLock::open(&prepared.out, out_mode).map_err(usage)?;
    Ok((prepared, out_lock, out_mode))
}

/// The MCP tools of `[mcp.servers]` and the agent factory; `--no-shell` offers no shell agent
/// (it runs commands).
fn session_tools(
    args: &SessionPlan,
    settings: &settings::Settings,
) -> Result<(Option<ufo_mcp::McpTools>, ufo_agents::AgentsFactory)> {
    let mut agents = settings.agents.clone();
    agents.shell &= !args.access.no_shell;
    let tools = extensions::tools(&settings.mcp)?;
    Ok((tools, extensions::factory(&agents)?))
}

/// The trajectory writer on `out` (appending for a resume), its devices named.
fn create_recorder(
    out: &Path,
    console: &Arc<Console>,
    start: &Start,
    devices: &[crate::devices::DeviceSpec],
) -> Step<recorder::FileRecorder> {
    match recorder::FileRecorder::create_with(
        out,
        console.clone(),
        matches!(start, Start::Resume(_)),
    ) {
        Ok(r) => Ok(r.with_devices(devices.iter().map(|d| d.name.clone()).collect())),
        Err(e) => {
            eprintln!(
                "error: cannot create the trajectory folder {}: {e}; pass --out with a writable folder",
                out.display()
            );
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

/// The desktop and the person as the session sees them once the console (the control socket)
/// can reach them, and the socket itself.
struct Wired {
    desktop: control::ConsoleDesktop,
    user: control::ConsoleUser,
    socket: Option<control::ControlSocket>,
}

/// Wire the console in: it reaches the session through the ports the engine already has, the
/// person (questions) and the desktop (take-over).
#[allow(clippy::too_many_arguments)] // the parts of a session the console reaches, each once
fn wire_console(
    args: &SessionPlan,
    devices: &[crate::devices::DeviceSpec],
    desktop: Arc<dyn Desktop>,
    screen: Option<Arc<dyn control::Screen>>,
    user: user::CliUser,
    recorder: &control::SharedRecorder<recorder::FileRecorder>,
    out: &Path,
    cancel: &Arc<AtomicBool>,
) -> Wired {
    let control = control::Control::new(
        desktop_kind(args, devices),
        control::session_owner(&args.access.share),
        cancel.clone(),
        question_records(recorder.clone()),
        screen,
    );
    let desktop = control::ConsoleDesktop::new(desktop, control.clone());
    let user = control::ConsoleUser::new(
        user,
        control.clone(),
        control::console_requested(),
        cancel.clone(),
    );
    let socket = match control::ControlSocket::start(out, control) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("warning: the session runs without its control socket: {e}");
            None
        }
    };
    Wired {
        desktop,
        user,
        socket,
    }
}

/// The knowledge the agents get, if any; a store that cannot be opened is a warning.
fn open_knowledge(
    settings: &settings::Settings,
) -> Option<crate::session_knowledge::SessionKnowledge> {
    match crate::session_knowledge::SessionKnowledge::open(settings.knowledge.as_ref()) {
        Ok(k) => k,
        Err(e) => {
            eprintln!(
                "warning: the session goes without knowledge: {}",
                ufo_core::inert(&e)
            );
            None
        }
    }
}

/// Save the session's experience as the `[knowledge]` policy says, printing what was done.
async fn learn_from(
    settings: &settings::Settings,
    out: &Path,
    outcome: &ufo_core::SessionOutcome,
    recorder: &mut control::SharedRecorder<recorder::FileRecorder>,
) {
    let ending = crate::experience::Ending {
        finished: outcome.status == SessionStatus::Finish,
        evaluator_passed: None,
    };
    for line in crate::experience::after_session(
        settings.knowledge.as_ref(),
        &settings.prices,
        &settings.answers(),
        out,
        ending,
        recorder,
    )
    .await
    {
        eprintln!("{}", ufo_core::inert(&line));
    }
}

/// The exit status of a session that ended so: a trajectory that could not be written whole
/// is an ERROR whatever the session did (unless it was cancelled).
fn exit_status(outcome: &ufo_core::SessionOutcome, incomplete: bool) -> ExitCode {
    if incomplete && outcome.status != SessionStatus::Cancelled {
        return ExitCode::from(3);
    }
    ExitCode::from(match outcome.status {
        SessionStatus::Finish => 0,
        SessionStatus::Fail => 1,
        SessionStatus::Error => 3,
        SessionStatus::Cancelled => EXIT_CANCELLED,
    })
}

pub(crate) struct Prepared {
    pub(crate) settings: settings::Settings,
    pub(crate) llm: models::Models,
    pub(crate) user: user::CliUser,
    pub(crate) out: PathBuf,
    pub(crate) prompts: Prompts,
}

pub(crate) fn prepare(
    args: &SessionPlan,
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
        answers: settings.answers(),
    })
    .map_err(Usage)?;
    // a summary model that cannot be built is a usage error at the start, not a warning after
    // the session has run
    if let Some(k) = settings.knowledge.as_ref() {
        if let (Some(spec), true) = (
            k.summary_model.as_deref(),
            k.save_experience != crate::config::knowledge::SavePolicy::Never,
        ) {
            models::summary_model(spec, &settings.prices, &settings.answers()).map_err(Usage)?;
        }
    }
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
