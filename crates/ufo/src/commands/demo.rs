//! `ufo demo record --out DIR`: a person shows a task once on the live desktop (or, with
//! `--desktop private`, on a desktop of ufo's own: `crate::private` starts it, says where it
//! is, and runs this command inside it with `--desktop live`); every click and
//! key press is resolved to the control it reached and the whole is written as a plan
//! `ufo follow` accepts (`DIR/plan.json`), the steps with their controls (`DIR/demo.json`) and
//! a readable summary (`DIR/summary.txt`). Reading the presses and resolving them is the
//! desktop adapter's (`ufo_linux::demo_input`, `LinuxDesktop::control_at_point`); merging them
//! into steps is `ufo_core::demo`'s.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use ufo_core::demo::{self, Input};
use ufo_linux::demo_input::{InputRecorder, Pressed};

use crate::cli::demo::{DemoCommand, RecordArgs};
use crate::demo_file::DemoFile;

/// Most presses one recording reads (then it stops, and says so).
const MAX_PRESSES: usize = 20_000;

/// `ufo demo ...`.
pub async fn command(cmd: DemoCommand, cancel: Arc<AtomicBool>) -> ExitCode {
    match cmd {
        DemoCommand::Record(args) => match record(&args, &cancel).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// A press with the control it reached: the clicked one (left and right buttons), or the
/// focused one for a key, read again after a click or a non-character key (`focus` keeps it).
async fn resolve_press(
    desktop: &ufo_linux::LinuxDesktop,
    what: Pressed,
    focus: &mut Option<Option<demo::Target>>,
) -> Input {
    match what {
        Pressed::Button { button, x, y } => {
            *focus = None;
            let target = if matches!(button, 1 | 3) {
                resolved(desktop.control_at_point(x, y).await, "the clicked control")
            } else {
                None
            };
            Input::Click {
                button,
                x,
                y,
                target,
            }
        }
        Pressed::Key(key) => {
            let target = match focus {
                Some(t) => t.clone(),
                None => {
                    let t = resolved(desktop.focused_control().await, "the focused control");
                    *focus = Some(t.clone());
                    t
                }
            };
            if matches!(key, demo::Key::Named(_)) {
                *focus = None;
            }
            Input::Key { key, target }
        }
    }
}

async fn record(args: &RecordArgs, cancel: &AtomicBool) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let desktop = crate::desktop::connect_live(&[], &crate::sight::VisionSettings::off()).await?;
    let recorder = InputRecorder::start().map_err(|e| {
        anyhow!("cannot read the input of the desktop: {e}; `ufo doctor` checks the session")
    })?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.max_seconds);
    eprintln!(
        "recording: show the task now; Ctrl-C ends it (at most {} s)",
        args.max_seconds
    );
    let mut inputs = Vec::new();
    let mut presses = 0usize;
    // the focus is read again after a click or a non-character key, else kept
    let mut focus: Option<Option<demo::Target>> = None;
    while !cancel.load(Ordering::SeqCst) && Instant::now() < deadline && presses < MAX_PRESSES {
        let press = match recorder.next(Duration::from_millis(100)) {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(()) => {
                eprintln!("warning: the X connection closed; the demonstration ends here");
                break;
            }
        };
        if args.people_only && press.xtest {
            continue;
        }
        presses += 1;
        let input = resolve_press(&desktop, press.what, &mut focus).await;
        eprintln!("press {presses}: {}", describe(&input));
        inputs.push(input);
    }
    if presses >= MAX_PRESSES {
        eprintln!("warning: {MAX_PRESSES} presses read; the demonstration ends here");
    }
    let steps = demo::merge(&inputs);
    let file = DemoFile {
        task: args.task.clone(),
        steps,
        presses,
        seconds: started.elapsed().as_secs_f64(),
    };
    write(&args.out, &file)?;
    eprintln!(
        "recorded {} step(s) from {presses} press(es) into {}",
        file.steps.len(),
        args.out.display()
    );
    Ok(())
}

/// A resolution's control, or none (with a warning) when it failed.
fn resolved(
    r: Result<Option<demo::Target>, ufo_linux::LinuxError>,
    what: &str,
) -> Option<demo::Target> {
    r.unwrap_or_else(|e| {
        eprintln!("warning: cannot resolve {what}: {e}");
        None
    })
}

fn describe(input: &Input) -> String {
    let t = |t: &Option<demo::Target>| match t {
        Some(t) => format!("{} \"{}\" in \"{}\"", t.role, t.name, t.window),
        None => "no control".into(),
    };
    match input {
        Input::Click {
            button,
            x,
            y,
            target,
        } => format!("button {button} at {x},{y} on {}", t(target)),
        Input::Key {
            key: demo::Key::Char(c),
            target,
        } => format!("{c:?} into {}", t(target)),
        Input::Key {
            key: demo::Key::Named(n),
            target,
        } => format!("{{{n}}} into {}", t(target)),
    }
}

/// Write the three files, each replaced whole.
fn write(dir: &Path, file: &DemoFile) -> Result<()> {
    let plan = demo::plan(&file.task, &file.steps);
    let summary: String = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {}\n", i + 1, s))
        .collect();
    let summary = format!("{}\n\n{summary}", file.task);
    for (name, text) in [
        ("plan.json", serde_json::to_string_pretty(&plan)?),
        ("demo.json", serde_json::to_string_pretty(file)?),
        ("summary.txt", summary),
    ] {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
