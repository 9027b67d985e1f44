//! `LinuxDesktop`: windows, launching, shell, and the `Desktop` port.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowInfo,
    WindowObservation,
};

use crate::a11y::apps::KnownApps;
use crate::a11y::bus::A11yBus;
use crate::display::watch::{ChangeWatch, PersonInput};
use crate::display::x11::X11;
use crate::display::{self, annotate, Display, DisplayWindow, WinId};
use crate::launch::process_name;
use crate::part::Part;
use crate::{LinuxConfig, LinuxError};

/// The live Linux desktop: AT-SPI2 over zbus for controls, a display (X11) for windows, pixels
/// and input.
pub struct LinuxDesktop {
    pub(crate) config: LinuxConfig,
    /// windows, pixels and input (`display`)
    pub(crate) display: Arc<dyn Display>,
    pub(crate) bus: A11yBus,
    /// what is known of the applications on the bus (`a11y::apps`)
    pub(crate) apps: KnownApps,
    /// every window seen and its process (`observe`)
    pub(crate) windows: Part<crate::observe::SeenWindows>,
    /// the controls of the latest observations (`observe`), used by the actions
    pub(crate) controls: Part<crate::controls::KnownControls>,
    /// launched children, reaped as they exit (`launch`)
    pub(crate) launched: crate::launch::Launched,
    /// nodes read one by one before (`a11y::nodecache`)
    pub(crate) nodes: crate::a11y::nodecache::KnownNodes,
    /// trees kept from the last observation of each application (`observe::changes`)
    pub(crate) kept: crate::observe::changes::KeptTrees,
    /// spreadsheet cells read before (`apps::sheets`)
    pub(crate) sheets: crate::apps::sheets::SheetCache,
    /// where each window's page or document is read before it is observed
    /// (`observe::loading`)
    pub(crate) loads: Part<crate::observe::loading::LoadFacts>,
    /// what settling keeps between actions (`act::settle`)
    pub(crate) settling: Part<crate::act::settle::SettleState>,
    /// the display's redraws and window events for settling (settle.rs); `None` without a
    /// change watch
    pub(crate) watch: Option<Arc<dyn ChangeWatch>>,
    /// the person's input on a watched private desktop; `None` elsewhere
    pub(crate) person: Option<Arc<PersonInput>>,
}

/// Most characters of stdout (and of stderr) a shell command hands back to the model.
const SHELL_SHOWN: usize = 16_000;

/// A captured stream as text: at most [`SHELL_SHOWN`] bytes, then how much was left out.
fn shown(c: &ufo_proc::Captured) -> String {
    c.shown(SHELL_SHOWN)
}

/// Run `/bin/sh -c command` for the host's `Bash`: without ufo's secrets (then `env` added),
/// in its own process group killed whole after `timeout` or when the call is dropped, its
/// output read up to [`ufo_proc::DEFAULT_MAX_OUTPUT`] per stream.
pub(crate) async fn run_command(
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<ShellOutput, LinuxError> {
    let mut cmd = ufo_proc::shell_command(command);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = ufo_proc::run(cmd, ufo_proc::Limits::new(timeout)).await?;
    if out.timed_out {
        return Err(LinuxError::Timeout {
            what: format!("shell command `{command}` (killed with every process it started)"),
            ms: timeout.as_millis() as u64,
        });
    }
    Ok(ShellOutput {
        code: out.code,
        stdout: shown(&out.stdout),
        stderr: shown(&out.stderr),
        launched: None,
    })
}

impl LinuxDesktop {
    /// Connect to the X server (`DISPLAY`) and the accessibility bus (through
    /// `DBUS_SESSION_BUS_ADDRESS`), switching accessibility on if it is off.
    pub async fn connect(config: LinuxConfig) -> Result<LinuxDesktop, LinuxError> {
        let display: Arc<dyn Display> = Arc::new(X11::open().await?);
        let bus = A11yBus::connect(config.call_timeout).await?;
        Ok(LinuxDesktop {
            config,
            watch: display.change_watch(),
            person: display.person_input(),
            display,
            bus,
            apps: KnownApps::default(),
            windows: Part::default(),
            controls: Part::default(),
            launched: Default::default(),
            nodes: Default::default(),
            kept: Default::default(),
            sheets: Default::default(),
            loads: Part::default(),
            settling: Part::default(),
        })
    }

    /// What reading office documents needs, lent to `apps::office`.
    pub(crate) fn office(&self) -> crate::apps::office::Office<'_> {
        crate::apps::office::Office {
            bus: &self.bus,
            nodes: &self.nodes,
            config: &self.config,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &LinuxConfig {
        &self.config
    }

    /// Run display calls on a blocking thread (`display::run`).
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, LinuxError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Display) -> Result<T, LinuxError> + Send + 'static,
    {
        display::run(&self.display, f).await
    }

    pub(crate) fn info(&self, w: &DisplayWindow, app: Option<String>) -> WindowInfo {
        let process = w
            .pid
            .and_then(process_name)
            .unwrap_or_else(|| w.app_id.clone());
        WindowInfo {
            id: w.id.to_string(),
            title: w.title.clone(),
            app_name: app
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| w.app_id.clone()),
            process,
            pid: w.pid,
            rect: w.area,
        }
    }

    /// Every top-level window with its application, in the window manager's order.
    pub async fn list_windows(&self) -> Result<Vec<WindowInfo>, LinuxError> {
        let xs = self.run(|d| d.windows()).await?;
        let by_pid = KnownApps::by_pid(&self.bus).await.unwrap_or_default();
        let mut out = Vec::with_capacity(xs.len());
        for w in &xs {
            let app = match w.pid.and_then(|p| by_pid.get(&p)) {
                Some(bus) => self.apps.name(&self.bus, bus).await,
                None => None,
            };
            out.push(self.info(w, app));
        }
        Ok(out)
    }

    pub(crate) async fn xwindow(&self, window_id: &str) -> Result<DisplayWindow, LinuxError> {
        let id = WinId::parse(window_id)?;
        self.run(move |d| d.window(id))
            .await
            .ok()
            .flatten()
            .ok_or_else(|| LinuxError::NoWindow(window_id.to_string()))
    }

    /// Bring a window to the front and wait (bounded) until the window manager says it is active.
    pub(crate) async fn activate(&self, id: WinId) -> Result<(), LinuxError> {
        display::activate(&self.display, id).await
    }

    /// Ask a window to close (as its close button would); the application may ask to save.
    pub async fn close_window(&self, window_id: &str) -> Result<(), LinuxError> {
        let id = WinId::parse(window_id)?;
        self.run(move |d| d.request_close(id)).await
    }

    /// Close a window for good: ask it to close, and when it is still there after `grace`
    /// (an application asking whether to save, or one that ignores the request), end its
    /// process (SIGTERM, then SIGKILL). Returns once the window is gone, bounded.
    pub async fn close_for_good(&self, window_id: &str, grace: Duration) -> Result<(), LinuxError> {
        display::close_for_good(&self.display, WinId::parse(window_id)?, grace).await
    }

    /// Launch an application from the launch table and wait until its window is on the bus.
    pub async fn launch_app(&self, app: &str) -> Result<WindowInfo, LinuxError> {
        let (name, command) = self
            .config
            .command_for(app)
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .ok_or_else(|| LinuxError::UnknownApp(app.to_string()))?;
        self.spawn_and_wait(&name, &command).await
    }

    /// Run a shell command with a time bound. A command equal to a launch-table command
    /// launches that application (without waiting for it to exit).
    pub async fn run_shell(&self, command: &str) -> Result<ShellOutput, LinuxError> {
        // a command may change a sheet's cells (through xdotool, a macro): read them whole
        self.sheets.note_other_action();
        let trimmed = command.trim().trim_end_matches('&').trim();
        let launch = self
            .config
            .launch
            .iter()
            .find(|(_, c)| {
                c.trim() == trimmed
                    || crate::config::bare_command(c) == crate::config::bare_command(trimmed)
            })
            .map(|(n, c)| (n.clone(), c.clone()));
        if let Some((name, cmd)) = launch {
            let w = self.spawn_and_wait(&name, &cmd).await?;
            return Ok(ShellOutput {
                code: None,
                stdout: String::new(),
                stderr: String::new(),
                launched: Some(w.app_name),
            });
        }
        if let Some(single) = crate::launch::toolkit::single_command(command) {
            if crate::launch::toolkit::opens_window(&single, &self.config.launch) {
                return self.launch_detached(&single).await;
            }
        }
        run_command(command, &self.started_env(), self.config.shell_timeout).await
    }

    /// What every program ufo starts gets in its environment, in order: the toolkit switches
    /// (launch/toolkit.rs, `launch_env`), then the configuration's `launch_env`, which wins.
    pub(crate) fn started_env(&self) -> Vec<(String, String)> {
        let mut env = crate::launch::toolkit::launch_env(
            self.display.direct_rendering(),
            &self.config.launch_env,
        );
        env.extend(self.config.launch_env.iter().cloned());
        env
    }

    /// How many spreadsheet cell texts observations have read live so far (kept cells taken
    /// again are not counted): for tests and benchmarks of the incremental observation.
    pub fn cells_read(&self) -> u64 {
        self.sheets.read_so_far()
    }

    /// Where this desktop's shell finds `name`: on `PATH` of `launch_env` when it sets one,
    /// else on ufo's own `PATH`.
    pub fn find_program(&self, name: &str) -> Option<String> {
        let path = self
            .config
            .launch_env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| std::ffi::OsString::from(v));
        ufo_proc::which(name, path.as_deref())
    }

    /// A PNG of the whole screen.
    pub async fn screen_png(&self) -> Result<Screenshot, LinuxError> {
        self.run(|d| {
            let img = d.capture(d.screen())?;
            let png = annotate::encode_png(&img)?;
            Ok(Screenshot {
                png: Arc::new(png),
                width: img.width,
                height: img.height,
            })
        })
        .await
    }

    /// Wait until the window stops changing after an action: first a change (or the settle
    /// time), then two unchanged looks. `before` is the fingerprint taken before the action.
    pub(crate) async fn settle_window(&self, id: WinId, before: Option<u64>) {
        let (poll, time) = (self.config.settle_poll, self.config.settle_time);
        display::settle_pixels(&self.display, id, before, poll, time).await
    }

    pub(crate) async fn fingerprint(&self, id: WinId) -> Option<u64> {
        display::fingerprint_of(&self.display, id).await
    }
}

#[async_trait]
impl Desktop for LinuxDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        Ok(self.list_windows().await?)
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        let windows = self.list_windows().await?;
        let running = |cmd: &str| {
            let exe = crate::config::program_of(cmd);
            windows
                .iter()
                .any(|w| w.process.to_lowercase() == exe || w.app_name.to_lowercase() == exe)
        };
        Ok(self
            .config
            .launch
            .iter()
            .filter(|(_, c)| !running(c))
            .map(|(n, c)| LaunchableApp {
                name: n.clone(),
                command: c.clone(),
            })
            .collect())
    }

    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        Ok(Some(self.screen_png().await?))
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn observe(&self, window_id: &str) -> Result<WindowObservation, DesktopError> {
        let started = std::time::Instant::now();
        let obs = match self.take_prefetched(window_id).await {
            // (not when the last action may have started a navigation it did not wait for:
            // observed once loaded, loading.rs)
            Some(o) if self.still_loaded(window_id) => {
                tracing::debug!("observed while settling");
                o
            }
            _ => self.observe_window(window_id).await?,
        };
        tracing::debug!(
            controls = obs.controls.len(),
            warnings = obs.warnings.len(),
            ms = started.elapsed().as_millis() as u64,
            "observed"
        );
        Ok(obs)
    }

    #[tracing::instrument(level = "debug", skip(self, action), fields(action = action.name()), err(Display))]
    async fn act(
        &self,
        window_id: &str,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        let started = std::time::Instant::now();
        // (an observation made while the last action settled is of the screen before this one)
        self.settling.lock().prefetched = None;
        let role = control_id.and_then(|c| self.controls.lock().by_id.get(c).map(|i| i.seen.role));
        let docs_before = self.docs_seen(window_id);
        let done = self.perform(window_id, control_id, action).await?;
        // a page the action navigated to is waited for by the next observation (loading.rs)
        let navigates = crate::observe::loading::may_navigate(action, role);
        self.note_action(window_id, docs_before, navigates).await;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "acted");
        Ok(done)
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        let window = self.launch_app(app).await?;
        tracing::debug!(window = %window.id, title = %window.title, "launched");
        Ok(window)
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        let out = self.run_shell(command).await?;
        tracing::debug!(code = ?out.code, "command ended");
        Ok(out)
    }

    fn find_program(&self, name: &str) -> Option<String> {
        LinuxDesktop::find_program(self, name)
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn activate(&self, window_id: &str) -> Result<(), DesktopError> {
        let id = WinId::parse(window_id)?;
        Ok(LinuxDesktop::activate(self, id).await?)
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn close(&self, window_id: &str) -> Result<(), DesktopError> {
        Ok(self
            .close_for_good(window_id, Duration::from_secs(3))
            .await?)
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.settling.lock().last_changed
    }

    fn person_input(&self) -> Option<String> {
        self.person.as_ref().and_then(|p| p.taken())
    }

    fn hand_back(&self) {
        if let Some(p) = &self.person {
            let _ = p.hand_back();
        }
    }

    async fn wait_handback(&self, within: Duration) -> bool {
        match &self.person {
            Some(p) => p.wait_handback(within).await,
            None => true,
        }
    }

    async fn settle(&self) {
        if self.settle_quiet().await {
            return;
        }
        let last = self.settling.lock().last_window;
        match last {
            Some(xid) => self.settle_window(xid, None).await,
            None => tokio::time::sleep(self.config.settle_poll).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect 1 for the host's `Bash` on the live desktop: the command sees no key, but the
    /// configured environment.
    #[tokio::test]
    async fn host_shell_commands_get_no_secrets() {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-live-desktop-test");
        std::env::set_var("UFO_LLM_API_KEY", "sk-ufo-live-desktop-test");
        let env = vec![("HOME".to_string(), "/tmp/task-home".to_string())];
        let out = run_command("env", &env, Duration::from_secs(30))
            .await
            .expect("runs");
        assert_eq!(out.code, Some(0));
        assert!(
            !out.stdout.contains("sk-ant-live-desktop-test"),
            "{}",
            out.stdout
        );
        assert!(
            !out.stdout.contains("sk-ufo-live-desktop-test"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("HOME=/tmp/task-home"), "{}", out.stdout);
    }

    /// Defects 4 and 10 for the host's `Bash`: endless output is cut, a timeout kills the
    /// whole group.
    #[tokio::test]
    async fn host_shell_output_is_capped_and_a_timeout_kills_the_group() {
        let out = run_command("yes", &[], Duration::from_secs(60))
            .await
            .expect("runs");
        assert!(out.stdout.len() < 20_000, "{} bytes", out.stdout.len());
        assert!(out.stdout.contains("truncated"), "{}", &out.stdout[..100]);
        // an argument no other process on the machine has (other tests sleep too)
        let arg = format!("4747.{}", std::process::id());
        let r = run_command(
            &format!("sleep {arg}; echo done"),
            &[],
            Duration::from_millis(300),
        )
        .await;
        assert!(matches!(r, Err(LinuxError::Timeout { .. })), "{r:?}");
        let alive = || !ufo_proc::live_processes_with_arg(&arg).is_empty();
        let mut left = true;
        for _ in 0..100 {
            left = alive();
            if !left {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!left, "sleep {arg} outlived the timeout");
    }
}
