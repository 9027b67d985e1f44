//! `LinuxDesktop`: windows, launching, shell, and the `Desktop` port.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Rect, Screenshot, ShellOutput, UiAction, WindowInfo,
    WindowObservation,
};

use crate::a11y::bus::A11yBus;
use crate::error::cause;
use crate::launch::process_name;
use crate::vocab::ROOT_PATH;
use crate::x11::annotate;
use crate::x11::{parse_window_id, window_id, XWindow, X11};
use crate::{LinuxConfig, LinuxError};

/// What is known of the applications on the bus, learnt once and asked again on a miss.
#[derive(Default)]
pub(crate) struct AppFacts {
    /// bus name → application name
    pub names: HashMap<String, String>,
    /// bus name → whether extents are window-relative (GTK4)
    pub relative: HashMap<String, bool>,
    /// bus name → whether the application is GTK2 (open menus need `crate::apps::menus`)
    pub gtk2: HashMap<String, bool>,
    /// pid → bus name of applications on the accessibility bus (refreshed on a miss)
    pub bus_by_pid: HashMap<u32, String>,
    /// X window → its process, for every window seen (to follow a window its application
    /// replaced, see `observe`)
    pub window_pids: HashMap<u32, u32>,
}

/// One feature's state behind a lock of its own, so that a feature locks only what it owns.
#[derive(Default)]
pub(crate) struct Part<T>(Mutex<T>);

impl<T> Part<T> {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The live Linux desktop: AT-SPI2 over zbus for controls, X11 for windows, pixels and input.
pub struct LinuxDesktop {
    pub(crate) config: LinuxConfig,
    pub(crate) x: Arc<X11>,
    pub(crate) bus: A11yBus,
    /// what is known of the applications on the bus
    pub(crate) apps: Part<AppFacts>,
    /// the controls of the latest observations (`observe`), used by the actions
    pub(crate) controls: Part<crate::observe::controls::KnownControls>,
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
    /// X damage and window events for settling (settle.rs); `None` without DAMAGE
    pub(crate) watch: Option<Arc<crate::act::settle::ChangeWatch>>,
    /// The person's input on a watched private desktop (takeover.rs); `None` elsewhere
    pub(crate) person: Option<crate::x11::takeover::PersonWatch>,
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
        let x = tokio::task::spawn_blocking(X11::connect)
            .await
            .map_err(|e| LinuxError::X11Request {
                what: "connect".into(),
                source: cause(e.to_string()),
            })??;
        let bus = A11yBus::connect(config.call_timeout).await?;
        Ok(LinuxDesktop {
            config,
            x: Arc::new(x),
            bus,
            apps: Part::default(),
            controls: Part::default(),
            launched: Default::default(),
            nodes: Default::default(),
            kept: Default::default(),
            sheets: Default::default(),
            loads: Part::default(),
            settling: Part::default(),
            watch: tokio::task::spawn_blocking(crate::act::settle::ChangeWatch::start)
                .await
                .ok()
                .flatten()
                .map(Arc::new),
            person: tokio::task::spawn_blocking(
                crate::x11::takeover::PersonWatch::start_if_watched,
            )
            .await
            .ok()
            .flatten(),
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

    pub(crate) async fn x11<T, F>(&self, f: F) -> Result<T, LinuxError>
    where
        T: Send + 'static,
        F: FnOnce(&X11) -> Result<T, LinuxError> + Send + 'static,
    {
        let x = self.x.clone();
        tokio::task::spawn_blocking(move || f(&x))
            .await
            .map_err(|e| LinuxError::X11Request {
                what: "worker".into(),
                source: cause(e.to_string()),
            })?
    }

    /// Applications on the accessibility bus by pid: pid → bus name.
    pub(crate) async fn apps_by_pid(&self) -> Result<HashMap<u32, String>, LinuxError> {
        let apps = self.bus.applications().await?;
        Ok(apps
            .into_iter()
            .filter_map(|(bus, pid)| pid.map(|p| (p, bus)))
            .collect())
    }

    /// Bus names for these pids, from the cache unless one is missing or `refresh`.
    pub(crate) async fn bus_map(&self, pids: &[u32], refresh: bool) -> HashMap<u32, String> {
        if !refresh {
            let st = self.apps.lock();
            if pids.iter().all(|p| st.bus_by_pid.contains_key(p)) {
                return st.bus_by_pid.clone();
            }
        }
        let map = self.apps_by_pid().await.unwrap_or_default();
        self.apps.lock().bus_by_pid = map.clone();
        map
    }

    pub(crate) async fn app_name(&self, bus: &str) -> Option<String> {
        if let Some(n) = self.apps.lock().names.get(bus) {
            return Some(n.clone());
        }
        let name = self
            .bus
            .prop::<String>(bus, ROOT_PATH, "org.a11y.atspi.Accessible", "Name")
            .await
            .ok()?;
        self.apps.lock().names.insert(bus.to_string(), name.clone());
        Some(name)
    }

    pub(crate) async fn is_relative(&self, bus: &str) -> bool {
        if let Some(r) = self.apps.lock().relative.get(bus) {
            return *r;
        }
        let (tk, version) = self.bus.toolkit(bus).await;
        let rel = tk.eq_ignore_ascii_case("gtk") && version.starts_with('4');
        self.apps.lock().relative.insert(bus.to_string(), rel);
        rel
    }

    pub(crate) fn info(&self, w: &XWindow, app: Option<String>) -> WindowInfo {
        let process = w
            .pid
            .and_then(process_name)
            .unwrap_or_else(|| w.class.clone());
        WindowInfo {
            id: window_id(w.id),
            title: w.title.clone(),
            app_name: app
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| w.class.clone()),
            process,
            pid: w.pid,
            rect: Some(Rect {
                x: w.x,
                y: w.y,
                w: w.w,
                h: w.h,
            }),
        }
    }

    /// Every top-level window with its application, in the window manager's order.
    pub async fn list_windows(&self) -> Result<Vec<WindowInfo>, LinuxError> {
        let xs = self.x11(|x| x.client_windows()).await?;
        let by_pid = self.apps_by_pid().await.unwrap_or_default();
        let mut out = Vec::with_capacity(xs.len());
        for w in &xs {
            let app = match w.pid.and_then(|p| by_pid.get(&p)) {
                Some(bus) => self.app_name(bus).await,
                None => None,
            };
            out.push(self.info(w, app));
        }
        Ok(out)
    }

    pub(crate) async fn xwindow(&self, window_id: &str) -> Result<XWindow, LinuxError> {
        let xid = parse_window_id(window_id)?;
        self.x11(move |x| x.window_info(xid))
            .await
            .ok()
            .flatten()
            .ok_or_else(|| LinuxError::NoWindow(window_id.to_string()))
    }

    /// Bring a window to the front and wait (bounded) until the window manager says it is active.
    pub(crate) async fn activate(&self, xid: u32) -> Result<(), LinuxError> {
        if self.x11(|x| x.active_window()).await? == Some(xid) {
            return Ok(());
        }
        self.x11(move |x| x.request_activate(xid)).await?;
        // a window with a modal dialog hands the focus to the dialog: that counts
        let family: Vec<u32> = self
            .x11(|x| x.client_windows())
            .await?
            .iter()
            .filter(|w| w.id == xid || w.transient_for == Some(xid))
            .map(|w| w.id)
            .chain(std::iter::once(xid))
            .collect();
        let deadline = Instant::now() + Duration::from_millis(1000);
        while Instant::now() < deadline {
            let active = self.x11(|x| x.active_window()).await?;
            if active.is_some_and(|a| family.contains(&a)) {
                // let the toolkit take the focus it was just given
                tokio::time::sleep(Duration::from_millis(30)).await;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(LinuxError::Timeout {
            what: format!("activating window {}", window_id(xid)),
            ms: 1000,
        })
    }

    /// Ask a window to close (as its close button would); the application may ask to save.
    pub async fn close_window(&self, window_id: &str) -> Result<(), LinuxError> {
        let xid = parse_window_id(window_id)?;
        self.x11(move |x| x.request_close(xid)).await
    }

    /// Whether a window is gone from the window list (a withdrawn window is not a client
    /// any more); an X error counts as gone.
    async fn window_gone(&self, xid: u32) -> bool {
        self.x11(|x| x.client_windows())
            .await
            .map(|ws| ws.iter().all(|w| w.id != xid))
            .unwrap_or(true)
    }

    /// Close a window for good: ask it to close, and when it is still there after `grace`
    /// (an application asking whether to save, or one that ignores the request), end its
    /// process (SIGTERM, then SIGKILL). Returns once the window is gone, bounded.
    pub async fn close_for_good(&self, window_id: &str, grace: Duration) -> Result<(), LinuxError> {
        let xid = parse_window_id(window_id)?;
        let pid = self
            .x11(move |x| x.window_info(xid))
            .await?
            .and_then(|w| w.pid);
        self.x11(move |x| x.request_close(xid)).await?;
        for (wait, signal) in [
            (grace, Some("-TERM")),
            (Duration::from_secs(2), Some("-KILL")),
            (Duration::from_secs(2), None),
        ] {
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline {
                if self.window_gone(xid).await {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            match (signal, pid) {
                // never this process (a window of ufo's own)
                (Some(sig), Some(p)) if p != std::process::id() => {
                    let _ = tokio::process::Command::new("kill")
                        .arg(sig)
                        .arg(p.to_string())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status()
                        .await;
                }
                _ => {}
            }
        }
        if self.window_gone(xid).await {
            Ok(())
        } else {
            Err(LinuxError::Timeout {
                what: format!("closing window {window_id}"),
                ms: (grace + Duration::from_secs(4)).as_millis() as u64,
            })
        }
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
        let mut env =
            crate::launch::toolkit::launch_env(self.x.direct_rendering, &self.config.launch_env);
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
        self.x11(|x| {
            let img = x.capture(0, 0, x.screen_w, x.screen_h)?;
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
    pub(crate) async fn settle_window(&self, xid: u32, before: Option<u64>) {
        let Ok(w) = self.x11(move |x| x.window_info(xid)).await else {
            return;
        };
        let Some(w) = w else {
            // the window went away (closed by the action): nothing to wait for
            return;
        };
        let poll = self.config.settle_poll;
        let deadline = Instant::now() + self.config.settle_time;
        let fp = move |x: &X11| x.fingerprint(w.x, w.y, w.w, w.h);
        let mut last = match before {
            Some(b) => b,
            None => match self.x11(fp).await {
                Ok(v) => v,
                Err(_) => return,
            },
        };
        let mut changed = false;
        let mut stable = 0;
        while Instant::now() < deadline {
            tokio::time::sleep(poll).await;
            let Ok(now) = self.x11(fp).await else { return };
            if now != last {
                changed = true;
                stable = 0;
                last = now;
            } else if changed {
                stable += 1;
                if stable >= 2 {
                    return;
                }
            }
        }
    }

    pub(crate) async fn fingerprint(&self, xid: u32) -> Option<u64> {
        self.x11(move |x| {
            let w = x
                .window_info(xid)?
                .ok_or_else(|| LinuxError::NoWindow(window_id(xid)))?;
            x.fingerprint(w.x, w.y, w.w, w.h)
        })
        .await
        .ok()
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
        let xid = parse_window_id(window_id)?;
        Ok(LinuxDesktop::activate(self, xid).await?)
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
            p.hand_back();
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
