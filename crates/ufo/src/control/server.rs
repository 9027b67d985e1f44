//! A session started from the web console ends with its server, however the server ends.
//!
//! `ufo serve` ends its sessions when it is stopped (SIGTERM or Ctrl-C: `console_web`'s
//! `stop_all`), but a server killed outright (SIGKILL, a crash, the out-of-memory killer) can
//! do nothing, and its sessions would run on with nobody to answer their questions or
//! cancel them. So the server names itself in each session's environment ([`SERVER_VAR`]),
//! and the session looks twice a second whether that process is still its parent: once it is
//! not, the session cancels itself as on SIGTERM (the model call in flight stops, the action
//! in progress finishes, the trajectory ends CANCELLED), and aborts if that has not ended it
//! within [`GRACE`], as the server would have.

use std::time::Duration;

/// Set by `ufo serve` to its own process id in the environment of a session it starts.
pub const SERVER_VAR: &str = "UFO_CONSOLE_SERVER";

/// How often the session looks at its parent.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// How long the session has to end cancelled before the second signal aborts it (the
/// server's own stop waits as long before SIGKILL).
const GRACE: Duration = Duration::from_secs(10);

/// The server named in this process's environment (`None`: not started by a server, or a
/// value that is not a process id).
fn named_server() -> Option<u32> {
    std::env::var(SERVER_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|pid| *pid > 1)
}

/// Whether the server is gone, given this process's parent now: a child whose parent ends
/// is handed to another process (init or a subreaper), never back to the same id.
pub(crate) fn server_gone(server: u32, parent: u32) -> bool {
    parent != server
}

/// When this session was started by a server ([`SERVER_VAR`]), watch it on a thread of its
/// own and end the session once the server is gone. The Ctrl-C handler (which also takes
/// SIGTERM) must be installed first.
pub fn end_with_server() {
    let Some(server) = named_server() else {
        return;
    };
    let watch = move || {
        while !server_gone(server, std::os::unix::process::parent_id()) {
            std::thread::sleep(LOOK_EVERY);
        }
        tracing::warn!(
            server,
            "the console's server is gone: the session is cancelled"
        );
        eprintln!("the ufo serve that started this session is gone: cancelling the session");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
        std::thread::sleep(GRACE);
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
    };
    if let Err(e) = std::thread::Builder::new()
        .name("server-watch".into())
        .spawn(watch)
    {
        eprintln!("warning: the session cannot watch the server that started it: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_gone_once_it_is_no_longer_the_parent() {
        assert!(!server_gone(4242, 4242));
        assert!(server_gone(4242, 1));
        assert!(server_gone(4242, 977));
    }
}
