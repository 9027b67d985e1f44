//! `ufo`: the command line of ufo-rs. This file parses the command line and hands each
//! subcommand to its module in [`commands`]; the other modules are what the commands share
//! (settings, the trajectory writer and reader, the console, the person at the terminal, ...).
//! The crate's README has the module map.

// Every line this binary prints goes through the process's redactor first (docs/security.md,
// "Known secret values are `***`"): these shadow the standard macros in every module below,
// so no `eprintln!` — the final error line of a failed start above all — shows a key or a
// served desktop's token, whatever text it quotes.
macro_rules! eprintln {
    () => {
        $crate::output::eprint(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::eprint(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::output::eprint(format_args!($($arg)*))
    };
}
// not used yet: there so that a `print!` added later cannot print around the redactor
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::print(format_args!($($arg)*))
    };
}
macro_rules! println {
    () => {
        $crate::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod batch;
mod cancel;
mod cli;
mod commands;
mod config;
mod console;
mod console_web;
mod control;
mod demo_file;
mod desktop;
mod devices;
mod exit;
mod experience;
mod extensions;
mod folder;
mod highlight;
mod logging;
mod models;
mod output;
mod private;
mod private_wayland;
mod recorder;
mod secret_env;
mod session;
mod session_knowledge;
mod sharing;
mod shell_off;
mod sight;
mod trajectory;
mod user;
mod wayland_connect;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

use crate::cli::plans::BatchRequest;
use crate::cli::{Cli, Command};
use crate::exit::{EXIT_CANCELLED, EXIT_USAGE};

fn main() -> ExitCode {
    let command = match before_the_runtime() {
        Ok(c) => c,
        Err(code) => return code,
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
    let code = dispatch(command, &runtime);
    // Do not wait for anything still blocked (e.g. a terminal read that timed out).
    runtime.shutdown_background();
    code
}

/// What happens before anything else: the keys taken out of the environment, the children's
/// limits, the command line parsed; the private desktop's reaper, or the command run inside
/// a private desktop, end here (`Err` holds the exit status).
fn before_the_runtime() -> Result<Command, ExitCode> {
    // first, while single-threaded: no key may stay in this process's /proc environ
    let startup = secret_env::take_at_start();
    if let Some(w) = &startup.warning {
        eprintln!("warning: {w}");
    }
    match ufo_proc::ChildLimits::from_env(&|k| std::env::var(k).ok()) {
        Ok(limits) => ufo_proc::set_child_limits(limits),
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return Err(ExitCode::from(code));
        }
    };
    if let Command::PrivateReaper { pid, mark, dir } = &cli.command {
        return Err(private::reaper(*pid, mark, dir));
    }
    if let Command::WaylandConnect { socket, hold } = &cli.command {
        return Err(wayland_connect_helper(socket, *hold));
    }
    match cli::private::plan(&cli.command) {
        Ok(Some(plan)) => Err(private::run_inside(&plan)),
        Ok(None) => Ok(cli.command),
        Err(e) => {
            eprintln!("error: {e:#}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

/// `ufo wayland-connect`: KWin must read this process's executable, which a process that is
/// not dumpable hides; the helper holds no key (ufo starts it with an empty environment), so it
/// is made dumpable again, and refuses to run if it was handed any key.
fn wayland_connect_helper(socket: &std::path::Path, hold: bool) -> ExitCode {
    if !ufo_core::secrets::held_vars().is_empty() {
        eprintln!(
            "error: `ufo {}` is ufo's internal Wayland helper and runs without keys; start it \
             without provider keys in its environment",
            wayland_connect::SUBCOMMAND
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let _ = nix::sys::prctl::set_dumpable(true);
    wayland_connect::helper(socket, hold)
}

/// Hand the command its plan (or options). Only the commands with a session to cancel take
/// over SIGINT (and, through the handler, SIGTERM and SIGHUP); the others keep the default,
/// so that a signal ends them.
fn dispatch(command: Command, runtime: &tokio::runtime::Runtime) -> ExitCode {
    match command {
        Command::Run(args) => {
            with_cancel(|cancel| runtime.block_on(commands::run::run(args.plan(), cancel)))
        }
        Command::Resume(args) => match commands::resume::session_plan(args.plan()) {
            Ok(plan) => with_cancel(|cancel| runtime.block_on(commands::run::run(plan, cancel))),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(EXIT_USAGE)
            }
        },
        Command::Report(args) => commands::report::command(&args.out),
        Command::Inspect(args) => runtime.block_on(commands::inspect::command(&args.plan())),
        Command::Doctor(args) => runtime.block_on(commands::doctor::run(args.window.as_deref())),
        Command::Runs(args) => commands::runs::command(args.dir.as_deref()),
        Command::Mcp(args) => runtime.block_on(commands::mcp::run(args.plan())),
        Command::Batch(args) => match args.plan() {
            BatchRequest::Merge(plan) => commands::batch::merge(&plan),
            BatchRequest::Run(plan) => {
                with_cancel(|cancel| commands::batch::run(*plan, runtime, cancel))
            }
        },
        Command::Follow(args) => with_cancel(|cancel| {
            runtime.block_on(commands::follow::follow_command(args.plan(), cancel))
        }),
        Command::Knowledge(cmd) => commands::knowledge::command(cmd),
        Command::Demo(cmd) => match install_stop() {
            Ok(stop) => runtime.block_on(commands::demo::command(cmd, stop)),
            Err(e) => {
                eprintln!("error: cannot install the Ctrl-C handler: {e}");
                ExitCode::from(3)
            }
        },
        Command::Serve(args) => runtime.block_on(commands::serve::run(args)),
        // handled before the runtime starts
        Command::PrivateReaper { .. } | Command::WaylandConnect { .. } => ExitCode::SUCCESS,
    }
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

/// A recording ends on the first Ctrl-C, SIGTERM or SIGHUP (and still writes what it has); a
/// second one aborts at once.
fn install_stop() -> Result<Arc<AtomicBool>, ctrlc::Error> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\naborted");
            std::process::exit(EXIT_CANCELLED.into());
        }
        eprintln!("\nstopping: writing the demonstration (Ctrl-C again aborts at once)");
    })?;
    Ok(flag)
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
