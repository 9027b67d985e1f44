//! What commands print on stdout goes through [`print`] (and the [`outln!`] macro): when the
//! reader has gone (`ufo runs | head -1`, a closed pipe), printing stops quietly and the
//! command ends as it would have, where `println!` would panic with "failed printing to
//! stdout: Broken pipe". The command's exit status stays its own (0 for a listing), as
//! command-line tools that stop at a closed pipe do.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout cannot be written: nothing more is tried.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Write `text` to stdout (flushed). A closed pipe ends all printing silently; another write
/// error is said once on stderr and ends printing too.
pub fn print(text: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(text).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to stdout: {e}");
        }
    }
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
