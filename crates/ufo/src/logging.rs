//! Logging through `tracing`: to stderr (through the [`Console`], at the verbosity's level, or
//! `UFO_LOG`) and, for `ufo run`, to `<out>/ufo.log` at debug level with every step.
//!
//! Field values and messages often hold untrusted text (a subtask, a result, screen text): both
//! outputs format them through [`inert`], so a control character or escape sequence in them is
//! written escaped (`\x1b`, `\r`) and can neither redraw the terminal nor forge a log line.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tracing_subscriber::field::MakeExt as _;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use ufo_core::inert::inert;

use crate::console::{Console, ConsoleWriter, Verbosity};

/// Target of the per-step log records (kept out of stderr, which has the progress lines).
pub const STEP_TARGET: &str = "ufo_trajectory";

/// The stderr filter: `UFO_LOG` if set, else by verbosity.
fn stderr_filter(verbosity: Verbosity) -> EnvFilter {
    let base = std::env::var("UFO_LOG").ok().unwrap_or_else(|| {
        match verbosity {
            Verbosity::Quiet => "error",
            Verbosity::Normal => "warn",
            Verbosity::Verbose => "info",
            Verbosity::Debug => "debug",
        }
        .to_string()
    });
    EnvFilter::try_new(format!("{base},{STEP_TARGET}=off"))
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,{STEP_TARGET}=off")))
}

/// The event formatter's fields: `name=value` (the message bare), known secret values hidden
/// and each made inert; also `ufo serve`'s log.
pub(crate) fn inert_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        // `%` fields and messages arrive as their Display text, raw: escape them here.
        // known secret values hidden first (a key quoted by an error, a file's content)
        let text = ufo_core::secrets::redact(&format!("{value:?}"));
        let shown = inert(&text);
        if field.name() == "message" {
            write!(w, "{shown}")
        } else {
            write!(w, "{}={shown}", field.name())
        }
    })
    .delimited(" ")
}

/// Install the global subscriber. With `log_file`, also append every event (debug level for
/// ufo's crates) to that file; a file that cannot be opened is a warning, not an error.
pub fn init(console: &Arc<Console>, log_file: Option<&Path>) {
    let stderr_layer = tracing_subscriber::fmt::layer()
        .fmt_fields(inert_fields())
        .with_writer(ConsoleWriter(console.clone()))
        .with_ansi(console.color())
        .with_target(false)
        .with_filter(stderr_filter(console.verbosity()));
    let mut warning = None;
    let file_layer = log_file.and_then(|p| {
        // never through a link planted in the trajectory folder
        match crate::folder::open_append(p) {
            Ok(f) => Some(
                tracing_subscriber::fmt::layer()
                    .fmt_fields(inert_fields())
                    .with_writer(Mutex::new(f))
                    .with_ansi(false)
                    .with_filter(EnvFilter::new(format!(
                        "info,ufo=debug,ufo_core=debug,ufo_llm=debug,ufo_desktop=debug,{STEP_TARGET}=info"
                    ))),
            ),
            Err(e) => {
                warning = Some(format!("cannot open the log file {}: {e}", p.display()));
                None
            }
        }
    });
    let _ = tracing_subscriber::registry()
        .with(stderr_layer)
        .with(file_layer)
        .try_init();
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
}
