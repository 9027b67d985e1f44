//! `ufo-proc`: how ufo-rs starts child processes (shell agent commands, the live desktop's
//! shell and launcher, batch getters, MCP stdio servers).
//!
//! Guarantees of [`run`] on a command from [`shell_command`]:
//! - **No secrets**: the environment loses every variable [`ufo_core::secrets::is_secret_env`]
//!   names (provider keys, `UFO_LLM_*`, ...) — [`scrub_env`] / [`scrub_env_std`].
//! - **No secret values in the output**: the values of the secrets the process holds
//!   ([`ufo_core::secrets::hold`]) are replaced by `***` in what a command printed (a key read
//!   from a file, say), before anyone sees it.
//! - **Bounded output**: stdout and stderr are read as they come, each kept up to a cap
//!   ([`DEFAULT_MAX_OUTPUT`], 1 MiB); beyond it bytes are only counted, and after
//!   [`DRAIN_LIMIT`] more the command is stopped. Memory stays bounded whatever it prints.
//! - **Nothing left running**: the command is the leader of its own process group; on
//!   timeout, on too much output, and when the caller's future is dropped (cancelled), the
//!   whole group gets SIGKILL — `sleep` inside `sh -c 'sleep 100; echo done'` included.
//!   Groups still running are listed, so the binary's Ctrl-C handler can interrupt
//!   ([`interrupt_all`]) or kill ([`kill_all`]) them before it exits.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// Most bytes of stdout (and, separately, of stderr) kept per command.
pub const DEFAULT_MAX_OUTPUT: usize = 1 << 20;

/// Bytes read and thrown away beyond the cap before the command is stopped.
pub const DRAIN_LIMIT: u64 = 64 << 20;

/// After a kill, how long the pipes and the exit status are still awaited.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Process groups of commands still running (for Ctrl-C).
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    // plain data: a panic elsewhere while holding the lock leaves it usable
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 {
        // ESRCH (the group is gone already) is the expected outcome of a race: ignore it
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// Send SIGINT to every running command's process group (what a terminal's Ctrl-C did
/// before they had groups of their own).
pub fn interrupt_all() {
    for pgid in live().iter() {
        signal_group(*pgid, Signal::SIGINT);
    }
}

/// SIGKILL every running command's process group (before ufo exits at once).
pub fn kill_all() {
    for pgid in live().iter() {
        signal_group(*pgid, Signal::SIGKILL);
    }
}

/// A running command's process group: killed whole when dropped armed.
struct Group {
    pgid: i32,
    armed: bool,
}

impl Group {
    fn new(pgid: i32) -> Self {
        live().insert(pgid);
        Self { pgid, armed: true }
    }

    fn kill(&self) {
        signal_group(self.pgid, Signal::SIGKILL);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
        live().remove(&self.pgid);
    }
}

/// The names of the secret variables in this process's environment.
pub fn secret_env_names() -> Vec<OsString> {
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| ufo_core::secrets::is_secret_env(&k.to_string_lossy()))
        .collect()
}

/// Remove the secret variables from a command's environment. Variables the caller sets
/// afterwards (`.env(..)`, e.g. an MCP server's explicit `env`) are kept.
pub fn scrub_env(cmd: &mut Command) -> &mut Command {
    for k in secret_env_names() {
        cmd.env_remove(k);
    }
    cmd
}

/// [`scrub_env`] for a `std::process::Command` (launched applications).
pub fn scrub_env_std(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for k in secret_env_names() {
        cmd.env_remove(k);
    }
    cmd
}

/// Resource limits of the commands ufo runs ([`shell_command`], [`limited_command`]): set in
/// the child (`ulimit`, i.e. `setrlimit`) before the command starts, inherited by everything
/// it starts. Applications ufo launches are not limited (they start otherwise).
///
/// - `memory`: the data limit (`RLIMIT_DATA`, bytes): heap and private writable mappings.
///   Not the address space (`RLIMIT_AS`): browsers and JIT runtimes reserve terabytes of
///   address space they never use and fail to start under an address-space cap, while a
///   runaway (`grep -f /dev/zero`) grows exactly the data this limit counts.
/// - `cpu`: the CPU-time limit (`RLIMIT_CPU`, seconds of CPU, not of wall time): a process
///   past it gets SIGXCPU and ends. The wall-clock timeout of each command already stops
///   foreground work; this also ends a busy loop left running in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLimits {
    /// Most bytes of data memory per process; `None`: unlimited.
    pub memory: Option<u64>,
    /// Most seconds of CPU time per process; `None`: unlimited.
    pub cpu: Option<u64>,
}

/// Default data-memory limit of a command: 2 GiB (a shell tool rarely needs a tenth of it; an
/// application started from a command keeps room for its heap).
pub const DEFAULT_CHILD_MEMORY: u64 = 2 << 30;

/// Default CPU-time limit of a command: 300 s of CPU (per process, so a long session's
/// background helpers are not cut short; a busy loop is).
pub const DEFAULT_CHILD_CPU_SECS: u64 = 300;

/// Environment variable for the memory limit in MiB (`0`: none).
pub const MEMORY_ENV: &str = "UFO_CHILD_MEMORY_MB";

/// Environment variable for the CPU-time limit in seconds (`0`: none).
pub const CPU_ENV: &str = "UFO_CHILD_CPU_SECS";

impl Default for ChildLimits {
    fn default() -> Self {
        Self {
            memory: Some(DEFAULT_CHILD_MEMORY),
            cpu: Some(DEFAULT_CHILD_CPU_SECS),
        }
    }
}

impl ChildLimits {
    /// The defaults, changed by [`MEMORY_ENV`] and [`CPU_ENV`] from `env` (a value that is no
    /// whole number is an error naming the variable).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut limits = Self::default();
        let number = |name: &str| -> Result<Option<u64>, String> {
            match env(name) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                    format!("{name}={v:?} is not a whole number; give e.g. {name}=0 for no limit")
                }),
            }
        };
        if let Some(mb) = number(MEMORY_ENV)? {
            limits.memory = (mb > 0).then(|| mb.saturating_mul(1 << 20));
        }
        if let Some(secs) = number(CPU_ENV)? {
            limits.cpu = (secs > 0).then_some(secs);
        }
        Ok(limits)
    }

    /// The `ulimit` commands that set these limits (`sh` syntax; empty when unlimited). A
    /// limit the system already keeps lower stays lower.
    fn ulimit_script(&self) -> String {
        let mut s = String::new();
        if let Some(bytes) = self.memory {
            s.push_str(&format!(
                "ulimit -d {} 2>/dev/null; ",
                (bytes / 1024).max(1)
            ));
        }
        if let Some(secs) = self.cpu {
            s.push_str(&format!("ulimit -t {secs} 2>/dev/null; "));
        }
        s
    }
}

/// The limits of the commands started from now on (set once at start by the binary).
static CHILD_LIMITS: Mutex<Option<ChildLimits>> = Mutex::new(None);

/// Set the limits of the commands started from now on ([`ChildLimits`]).
pub fn set_child_limits(limits: ChildLimits) {
    *CHILD_LIMITS.lock().unwrap_or_else(|p| p.into_inner()) = Some(limits);
}

/// The limits of the commands started now: those set, else the defaults.
pub fn child_limits() -> ChildLimits {
    CHILD_LIMITS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_default()
}

/// `/bin/sh -c command` with stdin from /dev/null, the secrets removed from its environment
/// and the [`child_limits`] set; run it with [`run`]. The command runs as `sh -c command`
/// (exec'd by a first `sh` that only sets the limits), so it is parsed exactly as given.
pub fn shell_command(command: &str) -> Command {
    let script = child_limits().ulimit_script();
    let mut cmd = Command::new("/bin/sh");
    if script.is_empty() {
        cmd.arg("-c").arg(command);
    } else {
        cmd.arg("-c")
            .arg(format!("{script}exec /bin/sh -c \"$1\""))
            .arg("sh")
            .arg(command);
    }
    cmd.stdin(Stdio::null());
    scrub_env(&mut cmd);
    cmd
}

/// `program args...` with the secrets removed from its environment and the [`child_limits`]
/// set (through a `sh` that sets them and `exec`s the program, as given): an MCP stdio server.
pub fn limited_command(program: &str, args: &[String]) -> Command {
    let script = child_limits().ulimit_script();
    // a program that is not there fails to spawn as before (not as a shell's exit 127)
    let found = if program.contains('/') {
        Path::new(program).is_file()
    } else {
        which(program, None).is_some()
    };
    let mut cmd = if script.is_empty() || !found {
        let mut c = Command::new(program);
        c.args(args);
        c
    } else {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(format!("{script}exec \"$0\" \"$@\""))
            .arg(program)
            .args(args);
        c
    };
    scrub_env(&mut cmd);
    cmd
}

/// Where a shell with this `PATH` (the current one when `None`) finds the program `name`:
/// the first executable file `dir/name`, as found (not resolved through links). A relative
/// or empty `PATH` entry gives a relative answer, which the allow-list refuses. `None` for
/// a name with a `/`, or when nothing is found.
pub fn which(name: &str, path: Option<&OsStr>) -> Option<String> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let own;
    let path = match path {
        Some(p) => p,
        None => {
            own = std::env::var_os("PATH")?;
            own.as_os_str()
        }
    };
    std::env::split_paths(path).find_map(|dir| {
        let candidate = if dir.as_os_str().is_empty() {
            Path::new(name).to_path_buf()
        } else {
            dir.join(name)
        };
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            .then(|| candidate.to_string_lossy().into_owned())
    })
}

/// Errors of [`run`].
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The program could not be started.
    #[error("the command could not be started: {0}; check that /bin/sh exists and the working directory is readable")]
    Spawn(#[source] std::io::Error),
    /// It started but the system gave no process id for it (it ended at once).
    #[error("the started command has no process id (it ended at once); run it again")]
    NoPid,
    /// Waiting for it failed.
    #[error("waiting for the command failed: {0}")]
    Wait(#[source] std::io::Error),
}

/// One output stream, captured up to a cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes, at most the cap.
    pub bytes: Vec<u8>,
    /// Bytes read beyond the cap and not kept.
    pub more: u64,
    /// The command was stopped because it printed more than the cap plus [`DRAIN_LIMIT`].
    pub stopped: bool,
}

impl Captured {
    /// Whether bytes were left out.
    pub fn truncated(&self) -> bool {
        self.more > 0
    }

    /// The text (invalid UTF-8 replaced), with a note when bytes were left out.
    pub fn text(&self) -> String {
        self.shown(usize::MAX)
    }

    /// The text (invalid UTF-8 replaced) cut to at most `max` bytes on a character boundary,
    /// then a line saying how many bytes were left out and whether the command was stopped for
    /// printing too much: what a model or a person is shown of a command's output.
    pub fn shown(&self, max: usize) -> String {
        let s = String::from_utf8_lossy(&self.bytes);
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let left = (s.len() - end) as u64 + self.more;
        let mut out = s[..end].to_string();
        if left > 0 || self.stopped {
            out.push_str(&format!("\n… truncated ({left} bytes more"));
            if self.stopped {
                out.push_str("; the command was stopped for printing too much");
            }
            out.push(')');
        }
        out
    }
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    /// Exit code; `None` when a signal ended it (or it did not end in time).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: Captured,
    /// Standard error.
    pub stderr: Captured,
    /// It ran past its timeout and its process group was killed.
    pub timed_out: bool,
}

impl Finished {
    /// Whether it was stopped for printing too much.
    pub fn stopped(&self) -> bool {
        self.stdout.stopped || self.stderr.stopped
    }
}

/// Limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest run before the process group is killed.
    pub timeout: Duration,
    /// Most bytes kept of stdout, and of stderr.
    pub max_output: usize,
}

impl Limits {
    /// `timeout`, with [`DEFAULT_MAX_OUTPUT`].
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>, cap: usize, pgid: i32) -> Captured {
    let mut c = Captured::default();
    let Some(mut r) = reader else {
        return c;
    };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => {
                let keep = n.min(cap.saturating_sub(c.bytes.len()));
                c.bytes.extend_from_slice(&chunk[..keep]);
                c.more += (n - keep) as u64;
                if c.more > DRAIN_LIMIT {
                    signal_group(pgid, Signal::SIGKILL);
                    c.stopped = true;
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    c
}

/// The output with the values of the secrets this process holds replaced by `***`
/// ([`ufo_core::secrets::redactor`]): the one place every command's output passes before it
/// reaches a model, a trajectory or a person.
fn redacted(mut c: Captured) -> Captured {
    if let Some(bytes) = ufo_core::secrets::redactor().redact_bytes(&c.bytes) {
        c.bytes = bytes;
    }
    c
}

/// Run a command: in its own process group, stdout and stderr captured up to the cap, the
/// whole group killed on timeout, on too much output, or when this future is dropped.
/// Build the command with [`shell_command`] (or scrub it with [`scrub_env`]).
pub async fn run(mut cmd: Command, limits: Limits) -> Result<Finished, ProcError> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(ProcError::Spawn)?;
    let pgid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or(ProcError::NoPid)?;
    let mut group = Group::new(pgid);
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let cap = limits.max_output;
    let work = async {
        tokio::join!(
            read_capped(out, cap, pgid),
            read_capped(err, cap, pgid),
            child.wait()
        )
    };
    tokio::pin!(work);
    let (stdout, stderr, status, timed_out) =
        match tokio::time::timeout(limits.timeout, &mut work).await {
            Ok((o, e, s)) => (o, e, s, false),
            Err(_) => {
                group.kill();
                match tokio::time::timeout(KILL_GRACE, &mut work).await {
                    Ok((o, e, s)) => (o, e, s, true),
                    // a process that left the group still holds a pipe: give up on the output
                    Err(_) => {
                        return Ok(Finished {
                            timed_out: true,
                            ..Finished::default()
                        })
                    }
                }
            }
        };
    // ended on its own (or already killed): what it left in the background is its business
    group.armed = false;
    let status = status.map_err(ProcError::Wait)?;
    Ok(Finished {
        code: if timed_out { None } else { status.code() },
        stdout: redacted(stdout),
        stderr: redacted(stderr),
        timed_out,
    })
}

/// The processes (zombies left out: they are dead, waiting for their parent) whose command line
/// holds `arg` as one whole argument. Tests use it to prove that no child outlived its command
/// (`sleep 4242` gone after a timeout); it reads `/proc` and finds nothing where there is none.
pub fn live_processes_with_arg(arg: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && cmdline.split(|b| *b == 0).any(|w| w == arg.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kill_all` reaches every command of this process: the tests take turns.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn limits(ms: u64) -> Limits {
        Limits::new(Duration::from_millis(ms))
    }

    #[test]
    fn which_finds_executables_as_listed_on_path() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        std::fs::write(bin.join("data"), "x").expect("write");
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = std::env::join_paths([Path::new("/nonexistent"), &bin]).expect("path");
        assert_eq!(
            which("tool", Some(&path)).as_deref(),
            Some(tool.to_str().expect("utf-8"))
        );
        assert_eq!(which("data", Some(&path)), None, "not executable");
        assert_eq!(which("./tool", Some(&path)), None);
        assert_eq!(
            which("sh", Some(OsStr::new("/usr/bin:/bin"))).map(|p| p.ends_with("/sh")),
            Some(true)
        );
    }

    /// Defect 1: children inherited the provider keys.
    #[tokio::test]
    async fn children_get_no_secrets_but_explicit_variables() {
        let _turn = SERIAL.lock().await;
        // The test process itself holds the secrets, as ufo does.
        std::env::set_var("OPENAI_API_KEY", "sk-test-parent-secret");
        std::env::set_var("UFO_LLM_API_KEY", "sk-test-ufo-secret");
        std::env::set_var("UFO_PROC_TEST_PLAIN", "visible");
        let mut cmd = shell_command("env");
        cmd.env("MY_SERVER_API_KEY", "passed-on-purpose");
        let f = run(cmd, limits(10_000)).await.expect("runs");
        let env = String::from_utf8_lossy(&f.stdout.bytes).into_owned();
        assert_eq!(f.code, Some(0));
        assert!(!env.contains("sk-test-parent-secret"), "{env}");
        assert!(!env.contains("sk-test-ufo-secret"), "{env}");
        assert!(!env.contains("OPENAI_API_KEY"), "{env}");
        assert!(env.contains("UFO_PROC_TEST_PLAIN=visible"), "{env}");
        assert!(env.contains("MY_SERVER_API_KEY=passed-on-purpose"), "{env}");
        let mut std_cmd = std::process::Command::new("/bin/sh");
        std_cmd.args(["-c", "echo \"[$OPENAI_API_KEY]\""]);
        scrub_env_std(&mut std_cmd);
        let out = std_cmd.output().expect("runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "[]\n");
    }

    /// Defect 4: an endless output was buffered whole.
    #[tokio::test]
    async fn endless_output_is_capped_and_the_command_stopped() {
        let _turn = SERIAL.lock().await;
        let f = run(shell_command("cat /dev/zero"), limits(60_000))
            .await
            .expect("runs");
        assert_eq!(f.stdout.bytes.len(), DEFAULT_MAX_OUTPUT);
        assert!(f.stdout.stopped && f.stopped(), "{:?}", f.stdout.more);
        assert!(!f.timed_out, "stopped for its output, not by the timeout");
        assert!(f
            .stdout
            .text()
            .contains("the command was stopped for printing too much"));
        let mut small = Limits::new(Duration::from_secs(60));
        small.max_output = 10;
        let f = run(shell_command("yes | head -c 1000; echo oops >&2"), small)
            .await
            .expect("runs");
        assert_eq!(f.code, Some(0));
        assert_eq!(f.stdout.bytes, b"y\ny\ny\ny\ny\n");
        assert_eq!(f.stdout.more, 990);
        assert!(f.stdout.text().ends_with("… truncated (990 bytes more)"));
        assert_eq!(f.stderr.text(), "oops\n");
    }

    async fn gone(arg: &str) -> bool {
        for _ in 0..100 {
            if live_processes_with_arg(arg).is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Defect 10: a timed-out `sleep 4242; echo done` left `sleep` running.
    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let _turn = SERIAL.lock().await;
        let f = run(shell_command("sleep 4242; echo done"), limits(300))
            .await
            .expect("runs");
        assert!(f.timed_out);
        assert_eq!(f.code, None);
        assert!(gone("4242").await, "sleep 4242 survived the timeout");
    }

    /// Dropping the future (a cancelled step) kills the group too.
    #[tokio::test]
    async fn a_dropped_run_kills_the_whole_process_group() {
        let _turn = SERIAL.lock().await;
        let pending = run(shell_command("sleep 4343; echo done"), limits(60_000));
        let r = tokio::time::timeout(Duration::from_millis(300), pending).await;
        assert!(r.is_err(), "still running when dropped");
        assert!(gone("4343").await, "sleep 4343 survived the cancel");
    }

    #[tokio::test]
    async fn kill_all_ends_running_commands() {
        let _turn = SERIAL.lock().await;
        let task = tokio::spawn(run(shell_command("sleep 4444"), limits(60_000)));
        let mut seen = false;
        for _ in 0..100 {
            if !live_processes_with_arg("4444").is_empty() {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(seen, "the command started");
        kill_all();
        let f = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("ends after kill_all")
            .expect("task")
            .expect("runs");
        assert_eq!(f.code, None, "killed by a signal");
        assert!(gone("4444").await);
    }

    #[tokio::test]
    async fn a_background_child_with_its_own_output_outlives_a_normal_exit() {
        let _turn = SERIAL.lock().await;
        // a launcher: `app >/dev/null 2>&1 &` must keep running after sh exits
        let f = run(
            shell_command("sleep 4545 >/dev/null 2>&1 & echo started"),
            limits(10_000),
        )
        .await
        .expect("runs");
        assert_eq!(f.stdout.text(), "started\n");
        let pids = live_processes_with_arg("4545");
        assert!(!pids.is_empty(), "the background process was killed");
        for p in pids {
            let _ = nix::sys::signal::kill(Pid::from_raw(p as i32), Signal::SIGKILL);
        }
    }
}
