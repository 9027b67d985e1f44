//! `ufo-sight`: ufo's text detection worker (docs/sight.md, "The worker"). Reads requests
//! (a small header and a region's raw pixels) on stdin and answers each with the boxes read,
//! on stdout, until stdin ends. `ufo-sight --check` loads the engine and its model once and
//! says whether reading works (exit 0) or what to install (exit 1).

use std::io::{stdin, stdout, BufReader, BufWriter};
use std::process::ExitCode;

use ufo_vision::{serve, tessdata_dir, TesseractDetector};

fn main() -> ExitCode {
    let detector = TesseractDetector::default();
    match std::env::args().nth(1).as_deref() {
        Some("--check") => match detector.warm_up() {
            Ok(()) => {
                println!(
                    "ufo-sight {}: Tesseract ready, model in {}",
                    env!("CARGO_PKG_VERSION"),
                    tessdata_dir().display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ufo-sight: {e}");
                ExitCode::FAILURE
            }
        },
        Some("--version") => {
            println!("ufo-sight {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        None => match serve(
            &detector,
            BufReader::new(stdin().lock()),
            BufWriter::new(stdout().lock()),
        ) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ufo-sight: the pipe to ufo broke ({e}); ufo starts a new worker");
                ExitCode::FAILURE
            }
        },
        Some(other) => {
            eprintln!(
                "ufo-sight: unknown argument {other:?}; it takes none (ufo starts it), \
                 --check or --version"
            );
            ExitCode::from(2)
        }
    }
}
