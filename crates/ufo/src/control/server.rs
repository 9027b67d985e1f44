//! A session started from the web console ends with its server, however the server ends.
//!
//! `ufo serve` ends its sessions when it is stopped (SIGTERM or Ctrl-C: `console_web`'s
//! `stop_all`), but a server killed outright (SIGKILL, a crash, the out-of-memory killer) can
//! do nothing, and its sessions would run on with nobody to answer their questions or
//! cancel them. So the server names itself in each session's environment ([`SERVER_VAR`]),
//! and the session looks twice a second whether that process is still among its ancestors
//! (not only its parent: with `--desktop private` the session runs in a second `ufo` that the
//! first starts inside the desktop). Once it is not, the session cancels itself as on SIGTERM
//! (the model call in flight stops, the action in progress finishes, the trajectory ends
//! CANCELLED), and aborts if that has not ended it within [`GRACE`], as the server would
//! have.

use std::time::Duration;

/// Set by `ufo serve` to its own process id in the environment of a session it starts.
pub const SERVER_VAR: &str = "UFO_CONSOLE_SERVER";

/// Set by `ufo serve` to the name of the token that started the session from the web
/// console: the session belongs to that token (docs/security.md, "Who may do what").
pub const OWNER_VAR: &str = "UFO_CONSOLE_OWNER";

/// Who this session belongs to: the token named by [`OWNER_VAR`] when the web console started
/// it, else its terminal, shared with the token names of `--share`.
pub fn session_owner(share: &[String]) -> ufo_core::access::Owner {
    match std::env::var(OWNER_VAR) {
        Ok(name) if ufo_core::access::valid_token_name(&name) => {
            ufo_core::access::Owner::Token { name }
        }
        _ => ufo_core::access::Owner::Terminal {
            shared: share.to_vec(),
        },
    }
}

/// How often the session looks at its ancestors.
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

/// Most ancestors looked at (the server is the parent, or the grandparent through the first
/// `ufo` of a private desktop).
const MAX_ANCESTORS: usize = 16;

/// This process's ancestors, parent first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ancestry {
    /// Their process ids.
    pub ids: Vec<u32>,
    /// Whether they go up to init: a chain cut short (an ancestor's `/proc` entry not
    /// readable, or more than [`MAX_ANCESTORS`]) proves nothing.
    pub complete: bool,
}

/// Whether the server is gone, given this process's ancestry now. A process whose parent ends
/// is handed to init or a subreaper, and a new process that takes the server's id can never
/// become an ancestor: so the server is gone once a whole chain up to init lacks it.
pub(crate) fn server_gone(server: u32, ancestry: &Ancestry) -> bool {
    ancestry.complete && !ancestry.ids.contains(&server)
}

/// The parent of process `pid` from `/proc/PID/stat` (`None` once it has ended).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parent_in_stat(&stat)
}

/// The parent id in a `/proc/PID/stat` line: the second field after the command name, which
/// is in parentheses and may hold spaces and parentheses itself.
pub(crate) fn parent_in_stat(stat: &str) -> Option<u32> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// This process's ancestors, parent first, up to init (at most [`MAX_ANCESTORS`]).
fn ancestors() -> Ancestry {
    let mut ids = vec![std::os::unix::process::parent_id()];
    let complete = loop {
        match ids.last().copied().unwrap_or(0) {
            last if last <= 1 => break true,
            _ if ids.len() >= MAX_ANCESTORS => break false,
            last => match parent_of(last) {
                Some(p) => ids.push(p),
                None => break false,
            },
        }
    };
    Ancestry { ids, complete }
}

/// When this session was started by a server ([`SERVER_VAR`]), watch it on a thread of its
/// own and end the session once the server is gone. The Ctrl-C handler (which also takes
/// SIGTERM) must be installed first.
pub fn end_with_server() {
    let Some(server) = named_server() else {
        return;
    };
    let watch = move || {
        while !server_gone(server, &ancestors()) {
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

    fn chain(ids: &[u32], complete: bool) -> Ancestry {
        Ancestry {
            ids: ids.to_vec(),
            complete,
        }
    }

    /// The server is gone once a whole chain up to init lacks it: it is neither the parent
    /// (a session the server started) nor the grandparent (the session inside a private
    /// desktop). A chain cut short says nothing.
    #[test]
    fn the_server_is_gone_once_a_whole_chain_lacks_it() {
        assert!(!server_gone(4242, &chain(&[4242, 1], true)));
        assert!(!server_gone(4242, &chain(&[5000, 4242, 1], true)));
        assert!(server_gone(4242, &chain(&[1], true)));
        assert!(server_gone(4242, &chain(&[5000, 1], true)));
        assert!(server_gone(4242, &chain(&[5000, 700, 1], true)));
        assert!(!server_gone(4242, &chain(&[5000], false)));
        assert!(!server_gone(4242, &chain(&[5000, 700], false)));
    }

    #[test]
    fn the_parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(
            parent_in_stat("4321 (ufo) S 4242 4321 4321 0 -1 4194560"),
            Some(4242)
        );
        assert_eq!(
            parent_in_stat("4321 (a) (b c) R 17 4321 4321 0 -1"),
            Some(17)
        );
        assert_eq!(parent_in_stat("4321 (ufo"), None);
        assert_eq!(parent_in_stat(""), None);
    }

    /// This process's own ancestors, read from /proc, begin with its parent and reach init.
    #[test]
    fn this_process_finds_its_own_ancestors() {
        let parent = std::os::unix::process::parent_id();
        let a = ancestors();
        assert_eq!(a.ids.first().copied(), Some(parent));
        assert!(a.ids.len() <= MAX_ANCESTORS);
        assert!(a.complete, "{a:?}");
        assert!(!server_gone(parent, &a));
    }
}
