//! `ufo inspect [WINDOW]`: a window's controls as the agent sees them, and the annotated
//! screenshot.

use std::process::ExitCode;

use crate::cli::InspectArgs;
use crate::desktop::connect_live;
use crate::{output, EXIT_USAGE};

/// `ufo inspect [WINDOW]`: a window's controls as the agent sees them, and the annotated
/// screenshot.
pub(crate) async fn command(args: &InspectArgs) -> ExitCode {
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
