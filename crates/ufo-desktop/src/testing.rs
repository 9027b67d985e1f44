//! When a test that needs the outside world runs (feature `testing`): one rule for every test
//! crate of the workspace, instead of a copy in each.
//!
//! - Live tests need a desktop session. They run when `DISPLAY` is set or `UFO_LIVE_TESTS=1`;
//!   otherwise they print why and pass without running. With `UFO_LIVE_TESTS=1` a missing
//!   session or application is a failure (`scripts/test.sh` sets it: no test may skip there).
//! - Peer tests need a program installed by `scripts/test-deps.sh` (an MCP server, a Python
//!   client). Without it they print why and pass, unless `UFO_PEER_TESTS=1`, where they fail.
//!
//! [`script`] writes scripted sessions (the model's lines) and finds the `ufo` binary;
//! [`http`] serves the pages of the browser tests; [`files`] writes the documents tests open.

pub mod files;
pub mod http;
pub mod script;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether the live test `test` runs now; when it does not, the reason is printed.
pub fn require_live(test: &str) -> bool {
    if std::env::var("UFO_LIVE_TESTS").as_deref() == Ok("1") {
        return true;
    }
    if std::env::var_os("DISPLAY").is_some() {
        return true;
    }
    // written to the real stderr, past the test harness's capture, so the reason shows
    let _ = writeln!(
        std::io::stderr(),
        "skipping {test}: no DISPLAY and UFO_LIVE_TESTS is not 1 (start a session with \
         scripts/desktop-session.sh up and source its env file)"
    );
    false
}

/// The test peer at `path` (`what` it is, and the `scripts/test-deps.sh` function that
/// installs it), or `None` when it is missing and `UFO_PEER_TESTS` is not `1` (the reason is
/// printed).
///
/// # Panics
/// When the peer is missing and `UFO_PEER_TESTS=1`: the test must not pass without it.
pub fn require_peer(path: PathBuf, what: &str, install: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{what} is not installed at {}; run `scripts/test-deps.sh {install}`",
        path.display()
    );
    assert!(
        std::env::var("UFO_PEER_TESTS").as_deref() != Ok("1"),
        "UFO_PEER_TESTS=1 and {message}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {message} (set UFO_PEER_TESTS=1 to make this a failure)"
    );
    None
}

/// End every process whose command line holds `arg` as one whole argument (a profile folder,
/// a marker the test gave the application): SIGTERM, then SIGKILL to what is left after 5 s.
/// Returns once none is left (or 2 s after the SIGKILL).
pub fn end_processes_with_arg(arg: &str) {
    end_processes(
        || ufo_proc::live_processes_with_arg(arg),
        Duration::from_secs(5),
    );
}

/// End the processes `find` lists (asked again each round, as children come and go):
/// SIGTERM, then SIGKILL to what is left after `grace`. Returns once none is left (or 2 s
/// after the SIGKILL).
pub fn end_processes(find: impl Fn() -> Vec<u32>, grace: Duration) {
    let deadline = Instant::now() + grace;
    let mut signal = "-TERM";
    loop {
        let pids = find();
        if pids.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            signal = "-KILL";
        }
        for pid in pids {
            // a process may be gone already (helpers end with their parent)
            let _ = std::process::Command::new("kill")
                .args([signal, &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
        if signal == "-KILL" && Instant::now() > deadline + Duration::from_secs(2) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Ends the processes of an application a test started, pass or fail: when dropped, every
/// process whose command line holds `arg` (see [`end_processes_with_arg`]), and the process
/// the test spawned itself, reaped.
#[derive(Debug)]
pub struct ProcessGuard {
    /// The argument every process of the application carries.
    pub arg: String,
    /// The process the test spawned, if any.
    pub child: Option<Child>,
}

impl ProcessGuard {
    /// A guard for the processes carrying `arg`.
    pub fn new(arg: impl Into<String>, child: Option<Child>) -> Self {
        Self {
            arg: arg.into(),
            child,
        }
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        end_processes_with_arg(&self.arg);
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The Chromium command of the tests: renderer accessibility on (Chromium exposes no page
/// without it), no sandbox (CI runs as root), no first-run or keyring prompts, its profile in
/// `profile`, its output discarded. The caller adds the page and spawns it.
pub fn chromium_command(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--force-renderer-accessibility",
        "--no-sandbox",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--password-store=basic",
    ])
    .arg(chromium_profile_arg(profile))
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    c
}

/// The profile argument of [`chromium_command`]: every Chromium process of that profile
/// carries it, so it is what a [`ProcessGuard`] ends.
pub fn chromium_profile_arg(profile: &Path) -> String {
    format!("--user-data-dir={}", profile.display())
}

/// [`chromium_command`] on `url`, started; its processes end with the returned guard.
///
/// # Panics
/// When Chromium cannot be started (install it with `scripts/test-deps.sh install_apps`).
pub fn start_chromium(profile: &Path, url: &str) -> ProcessGuard {
    let child = chromium_command(profile)
        .arg(url)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "chromium does not start ({e}); install it with scripts/test-deps.sh install_apps"
            )
        });
    ProcessGuard::new(chromium_profile_arg(profile), Some(child))
}
