//! A host `Bash` command that starts a GUI application: started apart from ufo (its own
//! process group, output to a log that nobody waits on), so the command returns as soon as
//! the application's window appears, and the application outlives it.

pub mod doctor;
pub mod toolkit;

use std::io::Read;
use std::time::{Duration, Instant};

use ufo_core::ShellOutput;

use crate::desktop::{process_name, LinuxDesktop};
use crate::x11::XWindow;
use crate::LinuxError;

/// After the command's own process exits without a window (a single-instance application
/// handing the request to its running instance), how long to wait for the window.
const HANDOVER_GRACE: Duration = Duration::from_millis(2500);

/// Once the window is on the screen, how long to wait for it to be on the accessibility bus.
const BUS_GRACE: Duration = Duration::from_secs(5);

/// Most bytes of the log shown when the command ends without a window.
const LOG_SHOWN: u64 = 16_000;

/// The applications launched, reaped as they exit.
#[derive(Default)]
pub(crate) struct Launched {
    pub children: Vec<std::process::Child>,
}

impl LinuxDesktop {
    /// Start `command` (one plain command running a GUI program) apart from ufo and return
    /// when a new window of it appears (bounded by the launch timeout). A command that exits
    /// without a window (`gimp --version`) returns its exit code and output, as any command.
    pub(crate) async fn launch_detached(&self, command: &str) -> Result<ShellOutput, LinuxError> {
        use std::os::unix::process::CommandExt;
        let command = crate::launch::toolkit::with_switches(command);
        let before: Vec<(u32, Option<u32>)> = self
            .x11(|x| x.client_windows())
            .await?
            .iter()
            .map(|w| (w.id, w.pid))
            .collect();
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
        let spawned = cmd
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .env_remove("NO_AT_BRIDGE")
            .envs(crate::launch::toolkit::a11y_env())
            .envs(self.config.launch_env.iter().map(|(k, v)| (k, v)))
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
        before: &[(u32, Option<u32>)],
        log_path: &std::path::Path,
    ) -> Result<ShellOutput, LinuxError> {
        let child_pid = child.id();
        self.launched.lock().children.push(child);
        let exe = crate::config::program_of(command);
        let matches = |w: &XWindow| {
            !before.contains(&(w.id, w.pid))
                && (w.pid == Some(child_pid)
                    || crate::config::same_program(
                        &exe,
                        &w.class,
                        w.pid.and_then(process_name).as_deref(),
                    ))
        };
        let deadline = Instant::now() + self.config.launch_timeout;
        let mut exited_at: Option<(Instant, Option<i32>)> = None;
        loop {
            let xs = self.x11(|x| x.client_windows()).await?;
            if let Some(w) = xs.iter().find(|w| matches(w)).cloned() {
                return Ok(self.on_bus_soon(&w).await);
            }
            if exited_at.is_none() {
                let mut st = self.launched.lock();
                if let Some(c) = st.children.iter_mut().find(|c| c.id() == child_pid) {
                    if let Ok(Some(status)) = c.try_wait() {
                        exited_at = Some((Instant::now(), status.code()));
                    }
                }
                st.children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            }
            if let Some((at, code)) = exited_at {
                // a program that printed something and exited is not handing over a request
                let printed = std::fs::metadata(log_path).is_ok_and(|m| m.len() > 0);
                if printed || at.elapsed() >= HANDOVER_GRACE {
                    return Ok(ShellOutput {
                        code,
                        stdout: read_log(log_path),
                        stderr: String::new(),
                        launched: None,
                    });
                }
            }
            if Instant::now() >= deadline {
                return Ok(ShellOutput {
                    code: None,
                    stdout: read_log(log_path),
                    stderr: format!(
                        "`{command}` was started (pid {child_pid}) but no window of it appeared within {} s; it keeps running (observe the desktop again, or stop it with `kill {child_pid}`)",
                        self.config.launch_timeout.as_secs()
                    ),
                    launched: None,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The window's description once it is on the accessibility bus, or after
    /// [`BUS_GRACE`] (an application without accessibility is launched all the same).
    async fn on_bus_soon(&self, w: &XWindow) -> ShellOutput {
        let deadline = Instant::now() + BUS_GRACE.min(self.config.launch_timeout);
        let mut by_pid = self.apps_by_pid().await.unwrap_or_default();
        while Instant::now() < deadline && !self.window_ready(w, &by_pid).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
            by_pid = self.apps_by_pid().await.unwrap_or_default();
        }
        let app = match w.pid.and_then(|p| by_pid.get(&p)) {
            Some(bus) => self.app_name(bus).await,
            None => None,
        };
        let info = self.info(w, app);
        ShellOutput {
            code: None,
            stdout: String::new(),
            stderr: String::new(),
            launched: Some(info.app_name),
        }
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
