//! Signals to the processes a test started, sent by the system call itself, and the
//! processes that carry a mark in their environment.
//!
//! Never through the `kill` program: procps-ng 4.0.2 reads `kill -TERM -12345` (meant for the
//! process group 12345) as `kill(-1, SIGTERM)`, every process the user may signal, which took
//! down a whole CI run. A pid of 0 or 1 is refused here, since 0 and -1 mean "my group" and
//! "everyone" to the system call.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// A pid the system call reads as one process: above 1 and within `i32`.
fn one_process(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|p| *p > 1)
        .map(Pid::from_raw)
}

/// Send `sig` to process `pid`; false when the pid is not one process or the call failed.
pub fn signal(pid: u32, sig: Signal) -> bool {
    one_process(pid).is_some_and(|p| kill(p, sig).is_ok())
}

/// Send `sig` to every process of the group whose leader is `pgid`; false when `pgid` is not
/// one process or the call failed.
pub fn signal_group(pgid: u32, sig: Signal) -> bool {
    one_process(pgid).is_some_and(|p| killpg(p, sig).is_ok())
}

/// The processes (`"PID COMM"`) whose environment holds a variable starting with `prefix`
/// (`NAME=value...`): a private desktop's processes carry `UFO_SESSION_MARK=ufo-private-...`.
pub fn carrying(prefix: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|kv| kv.starts_with(prefix.as_bytes()))
            })
        })
        .map(|e| {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            format!("{} {}", e.file_name().to_string_lossy(), comm.trim())
        })
        .collect()
}
