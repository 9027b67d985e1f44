//! Starting applications and waiting for their windows: from the launch table
//! (`spawn_and_wait`, until the window is on the accessibility bus) and from a host `Bash`
//! command (`launch_detached`, apart from ufo, returning once the window appears).

use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant};

use ufo_core::{ShellOutput, WindowInfo};

use super::{process_name, window_info, Launcher};
use crate::a11y::apps::KnownApps;
use crate::display::{self, DisplayWindow, WinId};
use crate::vocab::ROOT_PATH;
use crate::LinuxError;

/// How a command started apart from ufo went ([`Launcher::launch_detached`]).
pub(crate) enum Detached {
    /// A new window of it appeared (on the accessibility bus as `bus`, when it is).
    Window {
        window: DisplayWindow,
        bus: Option<String>,
    },
    /// It exited without a window, or none came in time: what it printed.
    Exited(ShellOutput),
}

/// After the command's own process exits without a window (a single-instance application
/// handing the request to its running instance), how long to wait for the window.
const HANDOVER_GRACE: Duration = Duration::from_millis(2500);

/// Once the window is on the screen, how long to wait for it to be on the accessibility bus.
const BUS_GRACE: Duration = Duration::from_secs(5);

/// Most bytes of the log shown when the command ends without a window.
const LOG_SHOWN: u64 = 16_000;

impl Launcher<'_> {
    /// Run `cmd` as the configured launch user, if any (std drops root's supplementary
    /// groups when it changes the uid).
    fn as_launch_user(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        if let Some(u) = &self.config.launch_as {
            cmd.uid(u.uid).gid(u.gid);
        }
    }

    /// The environment of a launched application: [`Self::started_env`], then the launch
    /// user's `HOME`, `USER` and `LOGNAME` (ufo's own HOME is not that user's to write).
    fn app_env(&self) -> Vec<(String, String)> {
        let mut env = self.started_env();
        if let Some(u) = &self.config.launch_as {
            env.push(("HOME".into(), u.home.display().to_string()));
            env.push(("USER".into(), u.name.clone()));
            env.push(("LOGNAME".into(), u.name.clone()));
        }
        env
    }

    /// Start a launch-table command and wait until its window is on the bus (or an
    /// application already running raised its window instead).
    pub(crate) async fn spawn_and_wait(
        &self,
        name: &str,
        command: &str,
    ) -> Result<WindowInfo, LinuxError> {
        use std::os::unix::process::CommandExt;
        // X reuses window ids once a client is gone: a window is new if its (id, pid) is new
        let before = self.windows_now().await?;
        self.publish_live_bus().await;
        let mut cmd = std::process::Command::new("/bin/sh");
        // the application gets none of ufo's secrets (provider keys, UFO_LLM_*), and what its
        // toolkit needs to be on the accessibility bus
        ufo_proc::scrub_env_std(&mut cmd);
        let command = &crate::launch::toolkit::with_switches(command);
        self.as_launch_user(&mut cmd);
        let child = cmd
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .env_remove("NO_AT_BRIDGE")
            .envs(self.app_env())
            .process_group(0)
            .spawn()
            .map_err(|source| LinuxError::Spawn {
                command: command.to_string(),
                source,
            })?;
        let child_pid = child.id();
        self.launched.push(child);
        if let Some(w) = self.its_window(command, child_pid, &before).await? {
            return Ok(w);
        }
        // the application may still be starting (a slow machine) or be running without
        // accessibility: it is left running, never killed, and the error says so
        let still_running = !self.launched.exited(child_pid);
        Err(LinuxError::Launch {
            app: name.to_string(),
            command: command.to_string(),
            reason: launch_timeout_reason(
                self.config.launch_timeout.as_secs(),
                still_running.then_some(child_pid),
            ),
        })
    }

    /// The windows on the screen now, as (id, pid): X reuses window ids once a client is
    /// gone, so a window is new if its (id, pid) is.
    async fn windows_now(&self) -> Result<Vec<(WinId, Option<u32>)>, LinuxError> {
        Ok(display::run(self.display, |d| d.windows())
            .await?
            .iter()
            .map(|w| (w.id, w.pid))
            .collect())
    }

    /// A step of [`Self::spawn_and_wait`]: the new window of `command` (started as
    /// `child_pid`) once it is on the bus, or the window an application already running
    /// raised once the command exited; `None` when neither came within the launch timeout.
    async fn its_window(
        &self,
        command: &str,
        child_pid: u32,
        before: &[(WinId, Option<u32>)],
    ) -> Result<Option<WindowInfo>, LinuxError> {
        let exe = crate::config::program_of(command);
        let matches = |w: &DisplayWindow| {
            w.pid == Some(child_pid)
                || crate::config::same_program(
                    &exe,
                    &w.app_id,
                    w.pid.and_then(process_name).as_deref(),
                )
        };
        let deadline = Instant::now() + self.config.launch_timeout;
        let mut existing: Option<DisplayWindow> = None;
        while Instant::now() < deadline {
            self.launched.reap();
            let xs = display::run(self.display, |d| d.windows()).await?;
            let by_pid = KnownApps::by_pid(self.bus).await.unwrap_or_default();
            for w in xs.iter().filter(|w| matches(w)) {
                let seen = before.contains(&(w.id, w.pid));
                if !seen && self.window_ready(w, &by_pid).await {
                    return Ok(Some(self.described(w, &by_pid).await));
                }
                if seen {
                    existing = Some(w.clone());
                }
            }
            // a single-instance application answers a second launch by raising its window
            if self.launched.exited(child_pid) {
                if let Some(w) = &existing {
                    return Ok(Some(self.described(w, &by_pid).await));
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(None)
    }

    /// A window as the engine is told of it, its application named from the bus.
    async fn described(&self, w: &DisplayWindow, by_pid: &HashMap<u32, String>) -> WindowInfo {
        let app = match w.pid.and_then(|p| by_pid.get(&p)) {
            Some(bus) => self.apps.name(self.bus, bus).await,
            None => None,
        };
        window_info(w, app)
    }

    /// Before an application starts: the display's `AT_SPI_BUS` property (where Qt 5 looks
    /// for the accessibility bus first) is set to the bus ufo reads when it is missing or names
    /// another one, so the application joins the bus ufo sees. A failure leaves things as
    /// they are.
    async fn publish_live_bus(&self) {
        let live = self.bus.address.clone();
        let _ = display::run(self.display, move |d| d.publish_a11y_bus(&live)).await;
    }

    /// Whether an application has a populated window on the bus for this X window.
    async fn window_ready(&self, w: &DisplayWindow, by_pid: &HashMap<u32, String>) -> bool {
        let Some(bus) = w.pid.and_then(|p| by_pid.get(&p)) else {
            return false;
        };
        match self.bus.tree(bus).await {
            Ok(tree) => {
                tree.kids(ROOT_PATH).iter().any(|p| {
                    tree.nodes
                        .get(p)
                        .is_some_and(|n| n.child_count > 0 && n.name == w.title)
                }) || tree
                    .kids(ROOT_PATH)
                    .iter()
                    .any(|p| tree.nodes.get(p).is_some_and(|n| n.child_count > 0))
            }
            Err(_) => false,
        }
    }

    /// Start `command` (one plain command running a GUI program) apart from ufo and return
    /// when a new window of it appears (bounded by the launch timeout), once it is on the bus
    /// (bounded by [`BUS_GRACE`]). A command that exits without a window (`gimp --version`)
    /// returns its exit code and output, as any command.
    pub(crate) async fn launch_detached(&self, command: &str) -> Result<Detached, LinuxError> {
        use std::os::unix::process::CommandExt;
        let command = crate::launch::toolkit::with_switches(command);
        let before = self.windows_now().await?;
        self.publish_live_bus().await;
        let log_path = std::env::temp_dir().join(format!(
            "ufo-launch-{}-{}.log",
            std::process::id(),
            LOG_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let log_error = |source| LinuxError::LaunchLog {
            path: log_path.clone(),
            command: command.clone(),
            source,
        };
        let log = std::fs::File::create(&log_path).map_err(log_error)?;
        let log_err = log.try_clone().map_err(log_error)?;
        let mut cmd = std::process::Command::new("/bin/sh");
        ufo_proc::scrub_env_std(&mut cmd);
        self.as_launch_user(&mut cmd);
        let spawned = cmd
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .env_remove("NO_AT_BRIDGE")
            .envs(self.app_env())
            // its own group: ufo's cleanup of shell commands never reaches it
            .process_group(0)
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(source) => {
                let _ = std::fs::remove_file(&log_path);
                return Err(LinuxError::Spawn { command, source });
            }
        };
        let result = self
            .wait_for_window(&command, child, &before, &log_path)
            .await;
        // the application keeps writing to the file it has open; nobody reads it any more
        let _ = std::fs::remove_file(&log_path);
        result
    }

    async fn wait_for_window(
        &self,
        command: &str,
        child: std::process::Child,
        before: &[(WinId, Option<u32>)],
        log_path: &std::path::Path,
    ) -> Result<Detached, LinuxError> {
        let child_pid = child.id();
        self.launched.push(child);
        let exe = crate::config::program_of(command);
        let matches = |w: &DisplayWindow| {
            !before.contains(&(w.id, w.pid))
                && (w.pid == Some(child_pid)
                    || crate::config::same_program(
                        &exe,
                        &w.app_id,
                        w.pid.and_then(process_name).as_deref(),
                    ))
        };
        let deadline = Instant::now() + self.config.launch_timeout;
        let mut exited_at: Option<(Instant, Option<i32>)> = None;
        loop {
            let xs = display::run(self.display, |d| d.windows()).await?;
            if let Some(w) = xs.iter().find(|w| matches(w)).cloned() {
                return Ok(self.on_bus_soon(w).await);
            }
            if exited_at.is_none() {
                if let Some(code) = self.launched.exit_and_reap(child_pid) {
                    exited_at = Some((Instant::now(), code));
                }
            }
            if let Some((at, code)) = exited_at {
                // a program that printed something and exited is not handing over a request
                let printed = std::fs::metadata(log_path).is_ok_and(|m| m.len() > 0);
                if printed || at.elapsed() >= HANDOVER_GRACE {
                    return Ok(Detached::Exited(ShellOutput {
                        code,
                        stdout: read_log(log_path),
                        stderr: String::new(),
                        launched: None,
                    }));
                }
            }
            if Instant::now() >= deadline {
                return Ok(Detached::Exited(ShellOutput {
                    code: None,
                    stdout: read_log(log_path),
                    stderr: format!(
                        "`{command}` was started (pid {child_pid}) but no window of it appeared within {} s; it keeps running (observe the desktop again, or stop it with `kill {child_pid}`)",
                        self.config.launch_timeout.as_secs()
                    ),
                    launched: None,
                }));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The window once it is on the accessibility bus, or after [`BUS_GRACE`] (an
    /// application without accessibility is launched all the same), with its bus name.
    async fn on_bus_soon(&self, w: DisplayWindow) -> Detached {
        let deadline = Instant::now() + BUS_GRACE.min(self.config.launch_timeout);
        let mut by_pid = KnownApps::by_pid(self.bus).await.unwrap_or_default();
        while Instant::now() < deadline && !self.window_ready(&w, &by_pid).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
            by_pid = KnownApps::by_pid(self.bus).await.unwrap_or_default();
        }
        let bus = w.pid.and_then(|p| by_pid.get(&p)).cloned();
        Detached::Window { window: w, bus }
    }
}

/// Why a launch-table launch failed: no window on the bus in time; the process, when it is
/// still running, is named and left running.
fn launch_timeout_reason(secs: u64, running: Option<u32>) -> String {
    let base = format!(
        "no window of it appeared on the accessibility bus within {secs} s; is it installed, and does the session have accessibility on (scripts/desktop-session.sh up)?"
    );
    match running {
        Some(pid) => format!(
            "{base} It keeps running (pid {pid}): observe the desktop again once its window is up, or stop it with `kill {pid}`"
        ),
        None => base,
    }
}

static LOG_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn read_log(path: &std::path::Path) -> String {
    let mut s = String::new();
    if let Ok(f) = std::fs::File::open(path) {
        let mut bytes = Vec::new();
        let _ = f.take(LOG_SHOWN).read_to_end(&mut bytes);
        s = String::from_utf8_lossy(&bytes).into_owned();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_out_launch_names_the_process_left_running() {
        let r = launch_timeout_reason(20, Some(4242));
        assert!(r.contains("within 20 s") && r.contains("keeps running (pid 4242)"));
        assert!(r.contains("kill 4242"));
        assert!(!launch_timeout_reason(20, None).contains("keeps running"));
    }
}
