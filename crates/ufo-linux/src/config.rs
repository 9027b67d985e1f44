//! Configuration of the Linux backend.

use std::path::PathBuf;
use std::time::Duration;

/// The display [`crate::LinuxDesktop::connect`] opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DisplayChoice {
    /// X11 when `DISPLAY` is set, else Wayland when `WAYLAND_DISPLAY` is set.
    #[default]
    Auto,
    /// The X server of `DISPLAY`.
    X11,
    /// A Wayland compositor: at `socket`, or the one `WAYLAND_DISPLAY` names (`None`).
    Wayland {
        /// The compositor's socket (a path); `None` reads `WAYLAND_DISPLAY` and
        /// `XDG_RUNTIME_DIR`.
        socket: Option<PathBuf>,
    },
}

/// The unprivileged user launched applications run as (a private Wayland desktop started by
/// root: compositors refuse root, and the applications join that user's session).
/// Applications get its `HOME`, `USER` and `LOGNAME`; shell commands stay ufo's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchUser {
    /// Its user id.
    pub uid: u32,
    /// Its primary group id.
    pub gid: u32,
    /// Its name.
    pub name: String,
    /// Its home folder.
    pub home: PathBuf,
}

/// A connection to a Wayland compositor's socket made by someone else, and what must stay
/// alive until the display has bound its globals (KWin decides which globals a client gets by
/// the executable of the process that connected, read when the registry is first filtered;
/// docs/desktop.md, "Private Wayland desktops").
#[derive(Debug)]
pub struct WaylandStream {
    /// The connected socket.
    pub stream: std::os::unix::net::UnixStream,
    /// Dropped once the display's registry round trip and binds are done.
    pub keep_until_bound: Box<dyn std::fmt::Debug + Send>,
}

/// Connects the KWin display to a compositor's socket instead of `UnixStream::connect` in this
/// process (the ufo binary connects through a helper process of its own executable, which KWin
/// can identify).
pub trait WaylandConnector: std::fmt::Debug + Send + Sync {
    /// A connection to the compositor's socket at `socket` (a path). The error says what
    /// failed and what to do.
    fn connect(&self, socket: &std::path::Path) -> Result<WaylandStream, crate::Cause>;
    /// A connection to the session bus's socket at `socket`, kept (its guard) for the
    /// display's life; `None`: connect here.
    fn connect_bus(
        &self,
        _socket: &std::path::Path,
    ) -> Option<Result<WaylandStream, crate::Cause>> {
        None
    }
}

/// How the live Linux desktop behaves: timeouts, settle time and the launch table.
#[derive(Debug, Clone)]
pub struct LinuxConfig {
    /// Bound on every single D-Bus call (a hung application would otherwise stall for
    /// zbus's default 25 s).
    pub call_timeout: Duration,
    /// Longest wait, after an action, for the window to change and then stop changing.
    pub settle_time: Duration,
    /// Interval between two looks at the window while settling.
    pub settle_poll: Duration,
    /// Click a visible control nothing covers with XTEST at its centre (its effect shows in
    /// milliseconds) rather than through its AT-SPI action (GTK shows that a quarter second
    /// later). `UFO_XTEST_CLICKS=0` turns it off.
    pub xtest_clicks: bool,
    /// Say in the observation after an action where the window's pixels changed and what
    /// is read there (docs/sight.md, "Change evidence"; only where sight is on).
    /// `UFO_PIXEL_EVIDENCE=0` turns it off (to measure what it costs).
    pub pixel_evidence: bool,
    /// Longest wait, after the window's first change, for it to go quiet: transitions
    /// (buttons fading in) go on redrawing after the accessibility tree is up to date.
    /// `UFO_SETTLE_TAIL_MS` sets it (default 100 ms).
    pub settle_tail: Duration,
    /// Longest wait, before a window is observed, for its page or document to finish
    /// loading (`observe::loading`). `UFO_LOAD_WAIT_MS` sets it (default 10 s).
    pub load_wait: Duration,
    /// Longest wait for a launched application's window to appear on the accessibility bus.
    pub launch_timeout: Duration,
    /// Longest time a `shell` command may run.
    pub shell_timeout: Duration,
    /// Time budget of the fallback tree walk (used when the application's cache is
    /// incomplete, e.g. GTK4 before its first walk).
    pub walk_budget: Duration,
    /// Most nodes the fallback walk visits.
    pub walk_max_nodes: usize,
    /// Most children a container may report for the walk to enumerate it. A container that
    /// reports more (a spreadsheet reports every cell of the sheet, 2^31 of them), or a
    /// negative count, is never enumerated: asking for all its children would make the
    /// application build them all.
    pub walk_max_children: usize,
    /// Launch table: application name (matched case-insensitively) → shell command.
    pub launch: Vec<(String, String)>,
    /// Extra environment for launched applications and shell commands (tests give each run a
    /// fresh `HOME` this way).
    pub launch_env: Vec<(String, String)>,
    /// The display to open (docs/desktop.md, "Choosing the display"): by default X11 when
    /// `DISPLAY` is set, else Wayland when `WAYLAND_DISPLAY` is set.
    pub display: DisplayChoice,
    /// The session bus to find the accessibility bus through (a D-Bus address); `None` reads
    /// `DBUS_SESSION_BUS_ADDRESS`. A process may so drive two desktops at once (the Wayland
    /// bench beside the X session).
    pub session_bus: Option<String>,
    /// Launch applications as this user instead of ufo's own (`None`: as ufo), with its
    /// `HOME`; the session's variables come from ufo's environment and `launch_env`.
    pub launch_as: Option<LaunchUser>,
    /// How the KWin display connects to the compositor (`None`: `UnixStream::connect` here).
    pub wayland_connector: Option<std::sync::Arc<dyn WaylandConnector>>,
    /// Sight (docs/sight.md): the detector the binary gives and when it reads; `None`: no
    /// text is read in the pixels.
    pub sight: Option<Sight>,
}

/// Sight's part of the configuration: the detector (a port: this crate never names an
/// engine) and `[vision] mode`.
#[derive(Clone)]
pub struct Sight {
    /// Reads a region's pixels (the binary gives the `ufo-sight` worker, cached).
    pub detector: std::sync::Arc<dyn ufo_core::vision::Detector>,
    /// `auto`, `always` or `off`.
    pub mode: ufo_core::vision::VisionMode,
    /// When a tree is sparse and which regions are opaque.
    pub policy: ufo_core::vision::DetectPolicy,
}

impl std::fmt::Debug for Sight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sight")
            .field("mode", &self.mode)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Default for LinuxConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_millis(2000),
            settle_time: Duration::from_millis(800),
            settle_poll: Duration::from_millis(25),
            settle_tail: Duration::from_millis(
                std::env::var("UFO_SETTLE_TAIL_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(100),
            ),
            xtest_clicks: std::env::var("UFO_XTEST_CLICKS").map_or(true, |v| v != "0"),
            pixel_evidence: std::env::var("UFO_PIXEL_EVIDENCE").map_or(true, |v| v != "0"),
            load_wait: Duration::from_millis(
                std::env::var("UFO_LOAD_WAIT_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(10_000),
            ),
            launch_timeout: Duration::from_secs(20),
            shell_timeout: Duration::from_secs(60),
            walk_budget: Duration::from_secs(3),
            walk_max_nodes: 5000,
            walk_max_children: 2000,
            launch: default_launch_table(libreoffice_gtk3_installed()),
            launch_env: Vec::new(),
            display: DisplayChoice::Auto,
            session_bus: None,
            launch_as: None,
            wayland_connector: None,
            sight: None,
        }
    }
}

/// Where Debian (and most distributions) put LibreOffice's GTK3 plugin, the one of its
/// window-system plugins that speaks AT-SPI.
const LIBREOFFICE_GTK3_PLUGINS: &[&str] = &[
    "/usr/lib/libreoffice/program/libvclplug_gtk3lo.so",
    "/usr/lib64/libreoffice/program/libvclplug_gtk3lo.so",
    "/opt/libreoffice/program/libvclplug_gtk3lo.so",
];

/// Whether LibreOffice's accessible GTK3 plugin is installed.
pub fn libreoffice_gtk3_installed() -> bool {
    LIBREOFFICE_GTK3_PLUGINS
        .iter()
        .any(|p| std::path::Path::new(p).exists())
}

/// The built-in launch table. LibreOffice is started with its GTK3 plugin when that is
/// installed: its other plugins (`gen`, `x11`) put nothing on the accessibility bus.
pub fn default_launch_table(libreoffice_gtk3: bool) -> Vec<(String, String)> {
    let office = |arg: &str| {
        if libreoffice_gtk3 {
            format!("env SAL_USE_VCLPLUGIN=gtk3 libreoffice {arg}")
        } else {
            format!("libreoffice {arg}")
        }
    };
    vec![
        ("calculator".into(), "gnome-calculator".into()),
        ("gnome-calculator".into(), "gnome-calculator".into()),
        ("text editor".into(), "mousepad".into()),
        ("mousepad".into(), "mousepad".into()),
        ("spreadsheet".into(), office("--calc")),
        ("libreoffice".into(), office("--calc")),
        ("libreoffice calc".into(), office("--calc")),
        ("word processor".into(), office("--writer")),
        ("libreoffice writer".into(), office("--writer")),
        ("presentation".into(), office("--impress")),
        ("libreoffice impress".into(), office("--impress")),
        // Chromium gets --force-renderer-accessibility (and --no-sandbox as root) at launch,
        // every application the accessibility environment of `toolkit::A11Y_ENV`
        ("browser".into(), "chromium".into()),
        ("web browser".into(), "chromium".into()),
        ("chromium".into(), "chromium".into()),
        ("image editor".into(), "gimp".into()),
        ("gimp".into(), "gimp".into()),
        ("media player".into(), "vlc".into()),
        ("vlc".into(), "vlc".into()),
        ("file manager".into(), "thunar".into()),
        ("thunar".into(), "thunar".into()),
        ("terminal".into(), "xfce4-terminal --disable-server".into()),
        (
            "xfce4-terminal".into(),
            "xfce4-terminal --disable-server".into(),
        ),
        ("qt text editor".into(), "featherpad".into()),
        ("featherpad".into(), "featherpad".into()),
    ]
}

/// The program a launch command runs: its first word after `env` and `NAME=value`
/// assignments (`env SAL_USE_VCLPLUGIN=gtk3 libreoffice --calc` → `libreoffice`), lowercased,
/// without its directory.
pub fn program_of(command: &str) -> String {
    let mut words = command.split_whitespace().peekable();
    if words.peek() == Some(&"env") {
        words.next();
    }
    words
        .find(|w| !(w.contains('=') && !w.starts_with('=') && !w.starts_with('/')))
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_lowercase())
        .unwrap_or_default()
}

/// A command without its leading `env` and `NAME=value` assignments, lowercased, words joined
/// by one space: what a person means when they type the command without the environment.
pub(crate) fn bare_command(command: &str) -> String {
    let mut words: Vec<&str> = command.split_whitespace().collect();
    if words.first() == Some(&"env") {
        words.remove(0);
    }
    let start = words
        .iter()
        .position(|w| !(w.contains('=') && !w.starts_with('=') && !w.starts_with('/')))
        .unwrap_or(words.len());
    words[start..].join(" ").to_lowercase()
}

/// Whether a window's class or process belongs to the program `exe` (LibreOffice runs as
/// `soffice.bin` with classes such as `libreoffice-calc`, whatever the command was called).
pub(crate) fn same_program(exe: &str, class: &str, process: Option<&str>) -> bool {
    let class = class.to_lowercase();
    let process = process.map(str::to_lowercase);
    if class == exe || process.as_deref().is_some_and(|p| exe.starts_with(p)) {
        return true;
    }
    let office = ["libreoffice", "soffice", "localc", "lowriter", "loimpress"];
    office.contains(&exe)
        && (class.starts_with("libreoffice")
            || class.starts_with("soffice")
            || process.as_deref() == Some("soffice.bin"))
}

impl LinuxConfig {
    /// A launch environment (for [`LinuxConfig::launch_env`]) that keeps what launched
    /// applications write — settings, caches, recent files — under `home` (`HOME` and the XDG
    /// folders below it), with GSettings in memory: a test or benchmark leaves the person's
    /// own configuration untouched and starts from the same state every time.
    pub fn home_env(home: &std::path::Path) -> Vec<(String, String)> {
        let h = |sub: &str| home.join(sub).to_string_lossy().into_owned();
        vec![
            ("HOME".into(), h("")),
            ("XDG_CONFIG_HOME".into(), h(".config")),
            ("XDG_DATA_HOME".into(), h(".local/share")),
            ("XDG_CACHE_HOME".into(), h(".cache")),
            ("GSETTINGS_BACKEND".into(), "memory".into()),
        ]
    }

    /// The command that launches `app`, by name (case-insensitive) or by command.
    pub fn command_for(&self, app: &str) -> Option<(&str, &str)> {
        let want = app.trim().to_lowercase();
        self.launch
            .iter()
            .find(|(name, _)| name.to_lowercase() == want)
            .or_else(|| {
                let want = bare_command(&want);
                self.launch
                    .iter()
                    .find(|(_, cmd)| bare_command(cmd) == want)
            })
            .map(|(n, c)| (n.as_str(), c.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_table_knows_the_office_applications() {
        let config = LinuxConfig {
            launch: default_launch_table(true),
            ..LinuxConfig::default()
        };
        for (name, arg) in [
            ("spreadsheet", "--calc"),
            ("Spreadsheet", "--calc"),
            ("libreoffice", "--calc"),
            ("word processor", "--writer"),
            ("presentation", "--impress"),
        ] {
            let (_, cmd) = config.command_for(name).expect(name);
            assert_eq!(cmd, format!("env SAL_USE_VCLPLUGIN=gtk3 libreoffice {arg}"));
            assert_eq!(program_of(cmd), "libreoffice");
        }
        // without the GTK3 plugin the command is plain (forcing gtk3 would fail to start)
        let plain = default_launch_table(false);
        assert!(plain
            .iter()
            .any(|(n, c)| n == "spreadsheet" && c == "libreoffice --calc"));
        assert!(plain.iter().all(|(_, c)| !c.contains("SAL_USE_VCLPLUGIN")));
    }

    /// Issue 12, item 1: the built-in table knows browsers, image editors, media players,
    /// file managers and terminals.
    #[test]
    fn launch_table_knows_the_everyday_applications() {
        let config = LinuxConfig {
            launch: default_launch_table(true),
            ..LinuxConfig::default()
        };
        for (name, program) in [
            ("browser", "chromium"),
            ("Web browser", "chromium"),
            ("chromium", "chromium"),
            ("image editor", "gimp"),
            ("media player", "vlc"),
            ("file manager", "thunar"),
            ("terminal", "xfce4-terminal"),
            ("qt text editor", "featherpad"),
        ] {
            let (_, cmd) = config.command_for(name).expect(name);
            assert_eq!(program_of(cmd), program, "{name}");
        }
    }

    #[test]
    fn program_of_skips_env_and_assignments() {
        assert_eq!(program_of("gnome-calculator"), "gnome-calculator");
        assert_eq!(program_of("/usr/bin/Mousepad --x"), "mousepad");
        assert_eq!(program_of("A=1 B=2 libreoffice --writer"), "libreoffice");
        assert_eq!(program_of("env X=1 soffice"), "soffice");
        assert_eq!(program_of(""), "");
    }

    #[test]
    fn a_command_typed_without_its_environment_finds_the_entry() {
        let config = LinuxConfig {
            launch: default_launch_table(true),
            ..LinuxConfig::default()
        };
        let (name, _) = config.command_for("libreoffice --writer").expect("writer");
        assert_eq!(name, "word processor");
        assert_eq!(
            bare_command("env SAL_USE_VCLPLUGIN=gtk3  libreoffice --calc"),
            "libreoffice --calc"
        );
    }

    #[test]
    fn libreoffice_windows_belong_to_the_libreoffice_command() {
        assert!(same_program(
            "libreoffice",
            "libreoffice-calc",
            Some("soffice.bin")
        ));
        assert!(same_program("libreoffice", "Soffice", None));
        assert!(same_program("mousepad", "Mousepad", None));
        assert!(same_program(
            "gnome-calculator",
            "x",
            Some("gnome-calculato")
        ));
        assert!(!same_program(
            "mousepad",
            "libreoffice-calc",
            Some("soffice.bin")
        ));
    }
}
