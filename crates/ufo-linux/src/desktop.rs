//! `LinuxDesktop`: the desktop's parts (each a type of its own, in the folders below this
//! file), the features that borrow them ([`Observer`], [`Actor`], [`Settler`], [`Launcher`]),
//! and the [`Desktop`] port, a thin layer that wires them together.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowId, WindowInfo,
    WindowObservation,
};

use crate::a11y::apps::KnownApps;
use crate::a11y::bus::A11yBus;
use crate::act::{screen, Actor, Settler};
use crate::display::choice::{private_gnome, resolve, Opened};
use crate::display::gnome::{Gnome, GnomePath};
use crate::display::kwin::Kwin;
use crate::display::watch::{ChangeWatch, PersonInput};
use crate::display::wlroots::Wlroots;
use crate::display::x11::X11;
use crate::display::{self, annotate, Display, WinId};
use crate::error::cause;
use crate::launch::shell::run_command;
use crate::launch::start::Detached;
use crate::launch::{window_info, Launcher};
use crate::observe::{FullObservation, Observer};
use crate::part::Part;
use crate::{LinuxConfig, LinuxError};

/// Open the display a choice comes to (`display::choice`): the X server, GNOME on a private
/// GNOME desktop, or a Wayland compositor (KWin's display when it is KWin, GNOME's through its
/// portals when it is Mutter, else the wlroots one).
async fn open_display(
    choice: &crate::DisplayChoice,
    session_bus: Option<String>,
    connector: Option<Arc<dyn crate::WaylandConnector>>,
    timeout: std::time::Duration,
) -> Result<Arc<dyn Display>, LinuxError> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    match resolve(
        choice,
        set("DISPLAY"),
        set("WAYLAND_DISPLAY"),
        private_gnome(),
    )? {
        Opened::X11 => Ok(Arc::new(X11::open().await?)),
        Opened::Mutter => tokio::task::spawn_blocking(move || {
            Ok(
                Arc::new(Gnome::open(session_bus, timeout, GnomePath::of_env())?)
                    as Arc<dyn Display>,
            )
        })
        .await
        .map_err(|e| LinuxError::Wayland {
            what: "connect".into(),
            source: cause(e.to_string()),
        })?,
        Opened::Wayland(socket) => tokio::task::spawn_blocking(move || {
            // one connection tells KWin from the rest; KWin's display keeps it
            if let Some(k) = Kwin::open(socket.as_deref(), session_bus.clone(), connector)? {
                return Ok(Arc::new(k) as Arc<dyn Display>);
            }
            // GNOME offers nothing over Wayland: its session bus (a person's session: portals)
            let globals = display::wlroots::probe(socket.as_deref(), timeout)?.globals;
            if display::choice::compositor_of(&globals) == display::choice::Compositor::Mutter {
                let gnome = Gnome::open(session_bus, timeout, GnomePath::of_env())?;
                return Ok(Arc::new(gnome) as Arc<dyn Display>);
            }
            Ok(Arc::new(Wlroots::open(socket.as_deref())?) as Arc<dyn Display>)
        })
        .await
        .map_err(|e| LinuxError::Wayland {
            what: "connect".into(),
            source: cause(e.to_string()),
        })?,
    }
}

/// The live Linux desktop: AT-SPI2 over zbus for controls, a display (X11, or a wlroots
/// Wayland compositor) for windows, pixels and input.
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
    /// where LibreOffice's bar controls sat at the last observation (`observe::places`)
    pub(crate) places: crate::observe::places::KeptPlaces,
    /// spreadsheet cells read before (`apps::sheets`)
    pub(crate) sheets: crate::apps::sheets::SheetCache,
    /// where each window's page or document is read before it is observed
    /// (`observe::loading`)
    pub(crate) loads: Part<crate::observe::loading::LoadFacts>,
    /// what settling keeps between actions (`act::settle`)
    pub(crate) settling: Part<crate::act::settle::SettleState>,
    /// the observation made while the last action settled, for the next `observe`
    pub(crate) ahead: Part<Option<crate::act::settle::Prefetched>>,
    /// the display's redraws and window events for settling (settle.rs); `None` without a
    /// change watch
    pub(crate) watch: Option<Arc<dyn ChangeWatch>>,
    /// the person's input on a watched private desktop; `None` elsewhere
    pub(crate) person: Option<Arc<PersonInput>>,
    /// the windows whose pixels the model asked to read (`observe::sight`)
    pub(crate) pixels_asked: Part<crate::observe::PixelsAsked>,
    /// the windows' captures around actions, for the change evidence in pixels
    /// (`observe::sight`)
    pub(crate) pixel_trail: Part<crate::observe::PixelTrail>,
}

impl LinuxDesktop {
    /// Connect to the display `config.display` chooses (the X server of `DISPLAY` by
    /// default, a Wayland compositor when asked or when only `WAYLAND_DISPLAY` is set) and
    /// the accessibility bus (through `DBUS_SESSION_BUS_ADDRESS`), switching accessibility on
    /// if it is off.
    pub async fn connect(config: LinuxConfig) -> Result<LinuxDesktop, LinuxError> {
        let display = open_display(
            &config.display,
            config.session_bus.clone(),
            config.wayland_connector.clone(),
            config.call_timeout,
        )
        .await?;
        let bus = A11yBus::connect(config.call_timeout, config.session_bus.as_deref()).await?;
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
            places: Default::default(),
            sheets: Default::default(),
            loads: Part::default(),
            settling: Part::default(),
            ahead: Part::default(),
            pixels_asked: Part::default(),
            pixel_trail: Part::default(),
        })
    }

    /// The observation, over the desktop's parts.
    pub(crate) fn observer(&self) -> Observer<'_> {
        Observer {
            bus: &self.bus,
            display: &self.display,
            config: &self.config,
            apps: &self.apps,
            nodes: &self.nodes,
            kept: &self.kept,
            places: &self.places,
            sheets: &self.sheets,
            loads: &self.loads,
            windows: &self.windows,
            controls: &self.controls,
            pixels_asked: &self.pixels_asked,
            pixel_trail: &self.pixel_trail,
        }
    }

    /// The waits around actions, over the desktop's parts.
    fn settler(&self) -> Settler<'_> {
        Settler {
            bus: &self.bus,
            display: &self.display,
            config: &self.config,
            settling: &self.settling,
            watch: &self.watch,
            observer: self.observer(),
        }
    }

    /// The actions, over the desktop's parts.
    fn actor(&self) -> Actor<'_> {
        Actor {
            bus: &self.bus,
            display: &self.display,
            config: &self.config,
            apps: &self.apps,
            controls: &self.controls,
            sheets: &self.sheets,
            settling: &self.settling,
            ahead: &self.ahead,
            observer: self.observer(),
            settler: self.settler(),
        }
    }

    /// Launching, over the desktop's parts.
    fn launcher(&self) -> Launcher<'_> {
        Launcher {
            bus: &self.bus,
            display: &self.display,
            config: &self.config,
            apps: &self.apps,
            launched: &self.launched,
        }
    }

    /// Observe a window (engine view); its labels are the actions' from now on.
    pub(crate) async fn observe_window(
        &self,
        window_id: &str,
    ) -> Result<WindowObservation, LinuxError> {
        Ok(self.observer().observe(window_id, false).await?.observation)
    }

    /// Observe a window with details (action names included) and timings.
    pub async fn observe_full(&self, window_id: &str) -> Result<FullObservation, LinuxError> {
        self.observer().observe(window_id, true).await
    }

    /// Observe a window; `with_actions` also fetches every control's action names (for
    /// `inspect`; the engine's observation leaves them to the action that needs them).
    pub async fn observe_with(
        &self,
        window_id: &str,
        with_actions: bool,
    ) -> Result<FullObservation, LinuxError> {
        self.observer().observe(window_id, with_actions).await
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
            out.push(window_info(w, app));
        }
        Ok(out)
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
        self.launcher().spawn_and_wait(&name, &command).await
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
            let w = self.launcher().spawn_and_wait(&name, &cmd).await?;
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
        let env = self.launcher().started_env();
        run_command(command, &env, self.config.shell_timeout).await
    }

    /// Start a command that opens a window apart from ufo (`Launcher::launch_detached`); once
    /// its window is there, wait for its page or document to load (a browser launched on a
    /// page is "Untitled" and empty until then, a LibreOffice window has no document yet: the
    /// host names the window it sees next), bounded by `LinuxConfig::load_wait`.
    async fn launch_detached(&self, command: &str) -> Result<ShellOutput, LinuxError> {
        let (window, bus) = match self.launcher().launch_detached(command).await? {
            Detached::Exited(out) => return Ok(out),
            Detached::Window { window, bus } => (window, bus),
        };
        if let Err(e) = self.observer().wait_loaded(&window).await {
            tracing::debug!(error = %e, "launch: the load wait failed; returning the window as it is");
        }
        let app = match bus {
            Some(bus) => self.apps.name(&self.bus, &bus).await,
            None => None,
        };
        Ok(ShellOutput {
            code: None,
            stdout: String::new(),
            stderr: String::new(),
            launched: Some(window_info(&window, app).app_name),
        })
    }

    /// How many spreadsheet cell texts observations have read live so far (kept cells taken
    /// again are not counted): for tests and benchmarks of the incremental observation.
    pub fn cells_read(&self) -> u64 {
        self.sheets.read_so_far()
    }

    /// How the display takes captures and looks, when it has a choice (KWin: its screencast
    /// over PipeWire, or ScreenShot2, and why), and how many looks and captures were read
    /// from a screencast so far: for tests and benchmarks.
    pub fn capture_path(&self) -> Option<(String, u64)> {
        self.display.captures()
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

    /// Click `button` (1 left, 2 middle, 3 right) at screen pixel (`x`, `y`), as a person
    /// would (no window activated first).
    pub async fn screen_click(&self, x: i32, y: i32, button: u8) -> Result<(), LinuxError> {
        screen::click(&self.display, x, y, button).await
    }

    /// Type a key sequence in ufo's key syntax (`{ctrl+a}`, `12{enter}`) where the keyboard
    /// focus is.
    pub async fn screen_keys(&self, keys: &str) -> Result<(), LinuxError> {
        screen::keys(&self.display, keys).await
    }

    /// Type `text` as it is (no key syntax) where the keyboard focus is.
    pub async fn screen_text(&self, text: &str) -> Result<(), LinuxError> {
        screen::text(&self.display, text).await
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
    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError> {
        let window_id = window_id.as_str();
        let started = std::time::Instant::now();
        let ahead = self.ahead.lock().take();
        let obs = match self.settler().hand_out(ahead, window_id).await {
            Some(o) => o,
            None => self.observe_window(window_id).await?,
        };
        // the engine has the evidence of the last action: the next compares with this
        if let Ok(xid) = crate::display::WinId::parse(window_id) {
            self.pixel_trail.lock().handed_out(xid);
        }
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
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        let window_id = window_id.as_str();
        let started = std::time::Instant::now();
        let done = self.actor().act(window_id, control_id, action).await?;
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
    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        let id = WinId::parse(window_id.as_str())?;
        Ok(display::activate(&self.display, id).await?)
    }

    #[tracing::instrument(level = "debug", skip(self), err(Display))]
    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        Ok(self
            .close_for_good(window_id.as_str(), Duration::from_secs(3))
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

    async fn pause(&self, within: Duration) {
        tokio::time::sleep(within).await;
    }

    async fn wait_handback(&self, within: Duration) -> bool {
        match &self.person {
            Some(p) => p.wait_handback(within).await,
            None => true,
        }
    }

    async fn settle(&self) {
        self.settler().between_steps().await
    }
}
