//! What commands print on stdout goes through [`print`] (and the [`outln!`] macro): when the
//! reader has gone (`ufo runs | head -1`, a closed pipe), printing stops quietly and the
//! command ends as it would have, where `println!` would panic with "failed printing to
//! stdout: Broken pipe". The command's exit status stays its own (0 for a listing), as
//! command-line tools that stop at a closed pipe do.
//!
//! Both [`print`] and [`eprint`] (what `eprintln!` is in this crate, see `main.rs`) hide the
//! known secret values first ([`ufo_core::secrets::redactor`]): no line ufo prints, a final
//! error line above all, shows a key or a served desktop's token (docs/security.md).

use std::borrow::Cow;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout cannot be written: nothing more is tried.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// `text` with every known secret value replaced by `***` (borrowed when there is nothing to
/// format or hide).
fn shown(text: std::fmt::Arguments<'_>) -> Cow<'static, str> {
    let text: Cow<'static, str> = match text.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(text.to_string()),
    };
    let hidden = match ufo_core::secrets::redactor().redact(&text) {
        Cow::Borrowed(_) => None,
        Cow::Owned(hidden) => Some(hidden),
    };
    hidden.map_or(text, Cow::Owned)
}

/// Write `text` to stdout (flushed), known secret values hidden. A closed pipe ends all
/// printing silently; another write error is said once on stderr and ends printing too.
pub fn print(text: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let text = shown(text);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to stdout: {e}");
        }
    }
}

/// Write `text` to stderr, known secret values hidden: what `eprint!` and `eprintln!` are in
/// this crate. A failed write is ignored (there is nowhere left to say it).
pub fn eprint(text: std::fmt::Arguments<'_>) {
    let text = shown(text);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `println!` through [`print`].
macro_rules! outln {
    () => {
        $crate::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_text_never_shows_a_held_secret() {
        let token = "ufo_output-probe-5d2b7f0e";
        ufo_core::secrets::hold_value(token);
        assert_eq!(
            shown(format_args!("error: the server says {token}; {}", 3)),
            "error: the server says ***; 3"
        );
        // nothing to format nor hide: the text itself, not a copy
        assert!(matches!(
            shown(format_args!("plain")),
            Cow::Borrowed("plain")
        ));
    }
}
