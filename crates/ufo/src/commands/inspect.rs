//! `ufo inspect [WINDOW]`: a window's controls as the agent sees them, and the annotated
//! screenshot.

use std::process::ExitCode;

use crate::config::plan::InspectPlan;
use crate::desktop::{connect_linux, live_display, open_desktop};
use crate::exit::EXIT_USAGE;
use crate::output;
use crate::sight::VisionSettings;

/// `ufo inspect [WINDOW]`: a window's controls as the agent sees them, and the annotated
/// screenshot.
pub(crate) async fn command(args: &InspectPlan) -> ExitCode {
    let Some(display) = live_display(&args.desktop).filter(|_| args.devices.is_empty()) else {
        return inspect_other(args).await;
    };
    let vision = match VisionSettings::from_env(args.vision) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let desktop = match connect_linux(display, &[], &vision).await {
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

/// The desktop of `--desktop`, or the devices of `--device NAME=SPEC` as one (window ids and
/// titles labelled with their device, as a session sees them).
async fn open_inspected(args: &InspectPlan) -> anyhow::Result<Box<dyn ufo_core::Desktop>> {
    if args.devices.is_empty() {
        let vision = VisionSettings::from_env(args.vision)?;
        return open_desktop(&args.desktop, &[], &args.remote, &vision).await;
    }
    let devices = crate::devices::resolve(&args.devices, &Default::default(), &args.remote)?;
    Ok(Box::new(
        crate::devices::open(&devices, &[], &VisionSettings::from_env(args.vision)?).await?,
    ))
}

/// `ufo inspect --desktop sim:FILE|remote:URL [WINDOW]`: without a window, the windows (one
/// line each) and the applications that can be launched; with one, its controls as the agent
/// sees them and the annotated screenshot.
/// Every window (and what can be launched) as `ufo inspect` without a WINDOW lists them.
async fn print_windows(desktop: &dyn ufo_core::Desktop, listed: &[ufo_core::WindowInfo]) {
    for w in listed {
        output::outln!(
            "window {} {:?} app {:?} process {}",
            w.id,
            ufo_core::inert(&w.title),
            ufo_core::inert(&w.app_name),
            ufo_core::inert(&w.process)
        );
    }
    for a in desktop.launchable().await.unwrap_or_default() {
        output::outln!("launchable {:?}", ufo_core::inert(&a.name));
    }
}

/// A window's controls, numbered as the agent sees them.
fn print_controls(obs: &ufo_core::WindowObservation) {
    output::outln!(
        "window {} {:?} app {:?} process {} — {} controls",
        obs.window.id,
        ufo_core::inert(&obs.window.title),
        ufo_core::inert(&obs.window.app_name),
        ufo_core::inert(&obs.window.process),
        obs.controls.len()
    );
    for (n, c) in obs.controls.iter().enumerate() {
        let value = c
            .value
            .as_deref()
            .map(|v| format!(" value={:?}", ufo_core::inert(v)))
            .unwrap_or_default();
        let source = if c.source.is_tree() {
            ""
        } else {
            " source=ocr"
        };
        output::outln!(
            "[{}] {} {:?} @{},{} {}x{}{value}{source}",
            n + 1,
            c.role,
            ufo_core::inert(&c.name),
            c.rect.x,
            c.rect.y,
            c.rect.w,
            c.rect.h
        );
    }
}

async fn inspect_other(args: &InspectPlan) -> ExitCode {
    let desktop = match open_inspected(args).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let listed = match desktop.windows().await {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let Some(wanted) = args.window.as_deref() else {
        print_windows(desktop.as_ref(), &listed).await;
        return ExitCode::SUCCESS;
    };
    let keys: Vec<ufo_core::agent::WindowKey<'_>> = listed
        .iter()
        .map(ufo_core::agent::WindowKey::from)
        .collect();
    let Ok((i, _)) = ufo_core::agent::resolve_window("", wanted, &keys) else {
        eprintln!(
            "error: no single window {wanted:?} on {}; run `ufo inspect --desktop {}` for the \
             windows",
            args.desktop, args.desktop
        );
        return ExitCode::from(1);
    };
    let obs = match desktop.observe(&listed[i].id).await {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    print_controls(&obs);
    if let Some(shot) = &obs.annotated {
        if let Err(e) = std::fs::write(&args.png, shot.png.as_slice()) {
            eprintln!("error: cannot write {}: {e}", args.png.display());
            return ExitCode::from(1);
        }
        eprintln!("annotated screenshot: {}", args.png.display());
    }
    ExitCode::SUCCESS
}
