//! `ufo report <OUT>`: one self-contained HTML page of a trajectory (rendering is
//! `crate::trajectory::report`'s, shared with the web console).

use std::path::Path;
use std::process::ExitCode;

use crate::console::{Console, Verbosity};
use crate::exit::EXIT_USAGE;
use crate::output::outln;
use crate::trajectory::report::write;

/// `ufo report <OUT>`: exit 0 with the page's path on stdout; 2 when OUT holds no readable
/// trajectory (no events.jsonl, or one that is a link or not a regular file); 1 when the page
/// cannot be written.
pub fn command(out: &Path) -> ExitCode {
    let console = Console::new(Verbosity::Normal);
    crate::logging::init(&console, None);
    let events = out.join("events.jsonl");
    if let Err(e) = crate::folder::open_read(&events) {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "there is none".to_string()
        } else {
            e.to_string()
        };
        eprintln!(
            "error: cannot read {}: {why}; pass the --out folder of a `ufo run`",
            events.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    match write(out) {
        Ok(path) => {
            outln!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
