//! `ufo runs [--dir DIR]`: the past sessions of a runs folder, one line each (the listing is
//! `crate::trajectory::runs`'s, shared with the web console).

use std::path::Path;
use std::process::ExitCode;

use crate::console::{Console, Verbosity};
use crate::exit::EXIT_USAGE;
use crate::trajectory::runs::{render, scan};

/// `ufo runs [--dir DIR]`.
pub fn command(given: Option<&Path>) -> ExitCode {
    let console = Console::new(Verbosity::Normal);
    crate::logging::init(&console, None);
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => match crate::config::settings::runs_dir_from_file(Path::new("ufo.toml")) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
    };
    if given.is_none() && !dir.exists() {
        // the default folder appears with the first run that does not pass --out
        crate::output::print(format_args!(
            "no sessions in {} yet (ufo run writes there unless --out is given; pass --dir with \
             the folder your trajectories are in)\n",
            dir.display()
        ));
        return ExitCode::SUCCESS;
    }
    match scan(&dir) {
        Ok(listing) => {
            crate::output::print(format_args!("{}", render(&dir, &listing)));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
