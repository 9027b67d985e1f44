//! What each GUI toolkit needs to be on the accessibility bus: the environment and switches
//! ufo adds when it starts an application, which shell commands start GUI applications, and
//! how a window without controls is diagnosed (toolkit from the process's name and loaded
//! libraries, then the exact fix).

use std::path::Path;

use crate::a11y::bus::AppTree;
use crate::display::x11::atspi_bus::BusProperty;

/// Environment every application ufo starts gets: GTK2 loads its accessibility bridge
/// (GTK3 ignores these two module names, it has the bridge built in), Qt 5/6 turn their
/// bridge on without asking a settings daemon, and older GNOME/Mozilla code paths read
/// `GNOME_ACCESSIBILITY`.
pub const A11Y_ENV: &[(&str, &str)] = &[
    ("GTK_MODULES", "gail:atk-bridge"),
    ("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1"),
    ("QT_ACCESSIBILITY", "1"),
    ("ACCESSIBILITY_ENABLED", "1"),
    ("GNOME_ACCESSIBILITY", "1"),
];

/// The switch Chromium-based programs need to expose their web content.
pub const CHROMIUM_A11Y_FLAG: &str = "--force-renderer-accessibility";

/// [`A11Y_ENV`] for a child of this process: an existing `GTK_MODULES` is kept and the two
/// bridge modules added to it.
pub fn a11y_env() -> Vec<(String, String)> {
    let current = std::env::var("GTK_MODULES").unwrap_or_default();
    A11Y_ENV
        .iter()
        .map(|(k, v)| {
            let v = if *k == "GTK_MODULES" {
                merge_gtk_modules(&current)
            } else {
                v.to_string()
            };
            (k.to_string(), v)
        })
        .collect()
}

/// The renderer GTK 4 applications get on a display without direct rendering (`cairo`), or
/// `None` to leave the toolkit's own choice: the display renders in hardware, or the person
/// chose one (`chosen`: `GSK_RENDERER` in ufo's environment or in `launch_env`).
///
/// Without direct rendering (Xvfb, Xvnc, a private desktop) GTK 4's default OpenGL renderer
/// draws through Mesa's software rasteriser: gnome-calculator took 100% of a core for every
/// button press animation, and answered each accessibility call after a ~13 ms frame. With
/// cairo, a click showed in 14-26 ms instead of 30-56, and a whole calculator step took
/// 59-71 ms instead of 93-124 (docs/desktop.md, "Fast live steps").
pub fn gtk4_renderer(direct_rendering: bool, chosen: bool) -> Option<(&'static str, &'static str)> {
    (!direct_rendering && !chosen).then_some(("GSK_RENDERER", "cairo"))
}

/// The environment of an application ufo starts: [`a11y_env`], and the GTK 4 renderer for
/// this display ([`gtk4_renderer`]); `launch_env` (the configuration's, applied after this)
/// is consulted only for a renderer the person chose.
pub fn launch_env(
    direct_rendering: bool,
    launch_env: &[(String, String)],
) -> Vec<(String, String)> {
    let chosen = std::env::var_os("GSK_RENDERER").is_some()
        || launch_env.iter().any(|(k, _)| k == "GSK_RENDERER");
    let mut env = a11y_env();
    env.extend(
        gtk4_renderer(direct_rendering, chosen).map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

fn merge_gtk_modules(current: &str) -> String {
    let mut mods: Vec<&str> = current.split(':').filter(|m| !m.is_empty()).collect();
    for m in ["gail", "atk-bridge"] {
        if !mods.contains(&m) {
            mods.push(m);
        }
    }
    mods.join(":")
}

/// Programs built on Chromium (the browser, Chrome, Edge, Brave, Electron applications).
pub fn is_chromium_family(program: &str) -> bool {
    let p = program.to_lowercase();
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "google-chrome-beta",
        "google-chrome-unstable",
        "chrome",
        "brave",
        "brave-browser",
        "microsoft-edge",
        "microsoft-edge-stable",
        "vivaldi",
        "vivaldi-stable",
        "opera",
        "electron",
        "code",
        "codium",
        "slack",
        "discord",
        "signal-desktop",
    ]
    .contains(&p.as_str())
        || p.starts_with("electron")
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Byte range of the program word of a command (after `env` and `NAME=value` words), as
/// [`crate::config::program_of`] finds it.
fn program_span(command: &str) -> Option<(usize, usize)> {
    let mut pos = 0;
    let mut first = true;
    for word in command.split_whitespace() {
        let start = pos + command[pos..].find(word)?;
        let end = start + word.len();
        pos = end;
        if first && word == "env" {
            first = false;
            continue;
        }
        first = false;
        if word.contains('=') && !word.starts_with('=') && !word.starts_with('/') {
            continue;
        }
        return Some((start, end));
    }
    None
}

/// A launch command with the switches its program needs: Chromium-family programs get
/// [`CHROMIUM_A11Y_FLAG`] (and `--no-sandbox` when ufo runs as root, where Chromium refuses
/// to start without it). Other commands come back unchanged.
pub fn with_switches(command: &str) -> String {
    with_switches_as(command, running_as_root())
}

fn with_switches_as(command: &str, root: bool) -> String {
    let program = crate::config::program_of(command);
    if !is_chromium_family(&program) {
        return command.to_string();
    }
    let Some((_, end)) = program_span(command) else {
        return command.to_string();
    };
    let has = |flag: &str| command.split_whitespace().any(|w| w == flag);
    let mut add = String::new();
    if !has(CHROMIUM_A11Y_FLAG) {
        add.push(' ');
        add.push_str(CHROMIUM_A11Y_FLAG);
    }
    if root && !has("--no-sandbox") {
        add.push_str(" --no-sandbox");
    }
    format!("{}{}{}", &command[..end], add, &command[end..])
}

/// Programs known to open a window (beyond the launch table and the `.desktop` files).
const KNOWN_GUI: &[&str] = &[
    "gimp",
    "thunar",
    "nautilus",
    "pcmanfm",
    "xfce4-terminal",
    "gnome-terminal",
    "xterm",
    "konsole",
    "featherpad",
    "vlc",
    "mousepad",
    "gedit",
    "gnome-calculator",
    "libreoffice",
    "soffice",
    "localc",
    "lowriter",
    "loimpress",
    "firefox",
    "firefox-esr",
    "evince",
    "eog",
    "inkscape",
];

/// A shell command that is one plain command (optionally followed by `&` and output
/// redirections): its text without the trailing `&`. `None` for pipelines, lists, command
/// substitutions and here-documents, which ufo runs as ordinary shell commands.
pub fn single_command(command: &str) -> Option<String> {
    let t = command.trim();
    let t = t.strip_suffix('&').map(str::trim_end).unwrap_or(t);
    if t.is_empty() || t.ends_with('&') && !t.ends_with(">&") {
        return None;
    }
    let (mut single, mut double) = (false, false);
    let bytes = t.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ if single || double => {}
            b';' | b'|' | b'`' | b'\n' | b'(' | b')' | b'{' | b'}' => return None,
            b'<' => return None,
            // `&` only inside a redirection (`2>&1`, `&>`)
            b'&' => {
                let prev = i.checked_sub(1).map(|j| bytes[j]);
                let next = bytes.get(i + 1).copied();
                if prev != Some(b'>') && next != Some(b'>') {
                    return None;
                }
            }
            b'$' if bytes.get(i + 1) == Some(&b'(') => return None,
            _ => {}
        }
    }
    (!single && !double).then(|| t.to_string())
}

/// Arguments with which a GUI program opens no window (conversions, batch modes, version
/// and help): such a command is run as an ordinary shell command, waited for to the end.
const NO_WINDOW_ARGS: &[&str] = &[
    "--headless",
    "--convert-to",
    "--print-to-file",
    "--cat",
    "--version",
    "-v",
    "--help",
    "-h",
    "--help-all",
    "-i",
    "--no-interface",
    "-b",
    "--batch",
    "--dump-dom",
    "--screenshot",
    "--print-to-pdf",
];

/// Whether a single command runs a GUI program that will open a window (see
/// [`is_gui_program`]; arguments such as `--headless` or `--version` say it will not).
pub fn opens_window(command: &str, launch: &[(String, String)]) -> bool {
    let program = crate::config::program_of(command);
    is_gui_program(&program, launch)
        && !command.split_whitespace().any(|w| {
            let flag = w.split('=').next().unwrap_or(w);
            NO_WINDOW_ARGS.contains(&flag)
        })
}

/// Whether `program` is a GUI application: in the launch table, among the known GUI programs,
/// a Chromium-family program, or the program of a `.desktop` entry that is not a terminal
/// program (`Terminal=true`).
pub fn is_gui_program(program: &str, launch: &[(String, String)]) -> bool {
    if program.is_empty() {
        return false;
    }
    launch
        .iter()
        .any(|(_, c)| crate::config::program_of(c) == program)
        || KNOWN_GUI.contains(&program)
        || is_chromium_family(program)
        || desktop_entry_programs().iter().any(|p| p == program)
}

/// Programs of the installed `.desktop` entries (bounded: the first 2000 files).
fn desktop_entry_programs() -> Vec<String> {
    let mut dirs = vec![std::path::PathBuf::from("/usr/share/applications")];
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".local/share/applications"));
    }
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten().take(2000) {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("desktop") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            if let Some(program) = desktop_entry_program(&text) {
                out.push(program);
            }
        }
    }
    out
}

/// The program of a `.desktop` entry's `Exec`, unless it runs in a terminal or is hidden.
fn desktop_entry_program(text: &str) -> Option<String> {
    let mut exec = None;
    let mut in_entry = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_entry = line == "[Desktop Entry]";
            continue;
        }
        if !in_entry {
            continue;
        }
        if line == "Terminal=true" || line == "NoDisplay=true" || line == "Hidden=true" {
            return None;
        }
        if let Some(e) = line.strip_prefix("Exec=") {
            exec = Some(e.to_string());
        }
    }
    let p = crate::config::program_of(&exec?);
    (!p.is_empty()).then_some(p)
}

/// The GUI toolkit of a process, from its name and the libraries it has loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolkit {
    /// GTK 2 (needs the `gail` and `atk-bridge` modules).
    Gtk2,
    /// GTK 3.
    Gtk3,
    /// GTK 4.
    Gtk4,
    /// Qt 5 or 6.
    Qt,
    /// Chromium, Chrome or an Electron application.
    Chromium,
    /// Firefox (Gecko).
    Firefox,
    /// LibreOffice (`soffice.bin`).
    LibreOffice,
    /// Java (Swing/AWT).
    Java,
    /// Not recognised.
    Unknown,
}

impl Toolkit {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Toolkit::Gtk2 => "GTK 2",
            Toolkit::Gtk3 => "GTK 3",
            Toolkit::Gtk4 => "GTK 4",
            Toolkit::Qt => "Qt",
            Toolkit::Chromium => "Chromium",
            Toolkit::Firefox => "Firefox",
            Toolkit::LibreOffice => "LibreOffice",
            Toolkit::Java => "Java",
            Toolkit::Unknown => "unknown toolkit",
        }
    }
}

/// Most bytes of `/proc/PID/maps` read (a browser maps a few thousand regions).
const MAPS_LIMIT: u64 = 8 << 20;

/// The toolkit of process `pid`.
pub fn detect(pid: u32) -> Toolkit {
    use std::io::Read;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut maps = String::new();
    if let Ok(f) = std::fs::File::open(format!("/proc/{pid}/maps")) {
        let _ = f.take(MAPS_LIMIT).read_to_string(&mut maps);
    }
    classify(comm.trim(), &exe, &maps)
}

/// [`detect`] on given process name, executable name and memory map text.
pub fn classify(comm: &str, exe: &str, maps: &str) -> Toolkit {
    let names = [comm.to_lowercase(), exe.to_lowercase()];
    let is = |f: &dyn Fn(&str) -> bool| names.iter().any(|n| f(n));
    if is(&|n| n == "soffice.bin" || n == "soffice") {
        return Toolkit::LibreOffice;
    }
    if is(&|n| n.starts_with("firefox") || n == "geckomain") {
        return Toolkit::Firefox;
    }
    if is(&|n| is_chromium_family(n) || n.starts_with("chrom")) || maps.contains("/electron") {
        return Toolkit::Chromium;
    }
    if maps.contains("libgtk-x11-2.0") {
        return Toolkit::Gtk2;
    }
    if maps.contains("libQt5Gui") || maps.contains("libQt6Gui") {
        return Toolkit::Qt;
    }
    if maps.contains("libgtk-4.so") {
        return Toolkit::Gtk4;
    }
    if maps.contains("libgtk-3.so") {
        return Toolkit::Gtk3;
    }
    if maps.contains("libjvm.so") || is(&|n| n == "java") {
        return Toolkit::Java;
    }
    Toolkit::Unknown
}

/// The fix for an application of this toolkit whose window has no controls.
pub fn fix(toolkit: Toolkit) -> String {
    match toolkit {
        Toolkit::Chromium => format!(
            "Chromium-based programs hide their content from accessibility unless told otherwise: close it and relaunch with {CHROMIUM_A11Y_FLAG} (ufo adds it when it launches the program)"
        ),
        Toolkit::Gtk2 => "GTK 2 applications load their accessibility bridge only when asked: close it and start it with GTK_MODULES=gail:atk-bridge (packages libgail-common and libatk-adaptor; ufo sets it when it launches the program)".into(),
        Toolkit::Qt => "Qt applications turn accessibility on only when asked: close it and start it with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 (ufo sets it when it launches the program)".into(),
        Toolkit::Firefox => "Firefox turns accessibility on when asked: close it and start it with GNOME_ACCESSIBILITY=1 (ufo sets it when it launches the program)".into(),
        Toolkit::LibreOffice => libreoffice_hint(None, crate::config::libreoffice_gtk3_installed()),
        Toolkit::Java => "Java applications need the ATK wrapper: install libatk-wrapper-java and start it with -Djavax.accessibility.assistive_technologies=org.GNOME.Accessibility.AtkWrapper".into(),
        Toolkit::Gtk3 | Toolkit::Gtk4 | Toolkit::Unknown => "it was probably started before the accessibility bus was up, or with NO_AT_BRIDGE=1: close it and start it again inside the session (scripts/desktop-session.sh up sets the session up)".into(),
    }
}

/// [`fix`] for the application of process `pid`, whose window is on the bus: a Qt
/// application is told to set `QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1` only when its environment
/// lacks it.
pub fn fix_for(pid: Option<u32>, toolkit: Toolkit) -> String {
    match toolkit {
        Toolkit::Qt => match pid.and_then(|p| has_env(p, "QT_LINUX_ACCESSIBILITY_ALWAYS_ON")) {
            Some(true) => "the Qt application is on the bus with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 set, but its window exports no controls yet: wait until it has finished starting and look again, or close it and start it again".into(),
            Some(false) | None => fix(Toolkit::Qt),
        },
        _ => fix(toolkit),
    }
}

/// The fix for a Qt application off the bus, by whether its environment has
/// `QT_LINUX_ACCESSIBILITY_ALWAYS_ON` (`None`: unknown, its environment is not readable) and
/// what the display's `AT_SPI_BUS` property says (`None`: it could not be read). On an X
/// display Qt 5 joins the bus through that property, with the switch or without it (see
/// `display/x11/atspi_bus.rs`), so the property comes first.
pub(crate) fn qt_fix(always_on: Option<bool>, property: Option<&BusProperty>) -> String {
    const RESTART: &str = "close the application and start it again through ufo, which publishes the live bus there first";
    match (property, always_on) {
        (Some(BusProperty::Missing), _) => format!(
            "Qt applications on an X display take the accessibility bus address from the display's AT_SPI_BUS property, and the display has none: {RESTART} (or set it yourself: `xprop -root -f AT_SPI_BUS 8s -set AT_SPI_BUS ADDRESS`, ADDRESS the live bus `ufo doctor` names)"
        ),
        (Some(BusProperty::Stale { published }), _) => format!(
            "Qt applications on an X display take the accessibility bus address from the display's AT_SPI_BUS property, and it names {published:?}, not the live accessibility bus: {RESTART}"
        ),
        (Some(BusProperty::Unknown { published }), Some(true)) => format!(
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 is set and the display's AT_SPI_BUS property names {published:?}; if `ufo doctor`'s bus check says that is not the live bus, {RESTART}; otherwise it was probably started before the accessibility bus was up: start it again"
        ),
        (Some(BusProperty::Live) | None, Some(true)) => "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 is set and nothing on the display sends it to another bus: it was probably started before the accessibility bus was up; close it and start it again inside the session".into(),
        (Some(BusProperty::Live | BusProperty::Unknown { .. }) | None, Some(false) | None) => {
            fix(Toolkit::Qt)
        }
    }
}

/// Whether process `pid`'s environment sets `name` (`None`: not readable).
fn has_env(pid: u32, name: &str) -> Option<bool> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    Some(
        env.split(|b| *b == 0)
            .any(|kv| kv.starts_with(prefix.as_bytes())),
    )
}

/// Why a window of process `pid` is not on the accessibility bus, and how to fix it.
pub fn not_on_bus_hint(pid: Option<u32>) -> String {
    not_on_bus_hint_on(pid, "")
}

/// [`not_on_bus_hint`], knowing the live accessibility bus (`live`; empty: unknown), against
/// which the display's `AT_SPI_BUS` property is judged for a Qt application.
pub fn not_on_bus_hint_on(pid: Option<u32>, live: &str) -> String {
    let Some(pid) = pid else {
        return "its process is unknown (no _NET_WM_PID): start it again inside the session".into();
    };
    if let Some(h) = libreoffice_without_a11y(pid) {
        return h;
    }
    let tk = detect(pid);
    let fix = match tk {
        Toolkit::Qt => {
            let property = crate::display::x11::doctor::published_bus_address()
                .ok()
                .map(|p| BusProperty::judge(p.as_deref(), live));
            qt_fix(
                has_env(pid, "QT_LINUX_ACCESSIBILITY_ALWAYS_ON"),
                property.as_ref(),
            )
        }
        _ => fix_for(Some(pid), tk),
    };
    format!("{}: {fix}", tk.name())
}

/// For a window that is on the bus but yields no controls: the toolkit's fix where one is
/// known (Chromium puts only its frame on the bus without the switch).
pub fn no_controls_hint(pid: Option<u32>) -> Option<String> {
    let tk = detect(pid?);
    matches!(tk, Toolkit::Chromium | Toolkit::Firefox).then(|| {
        format!(
            "the window has no controls on the accessibility bus ({}): {}",
            tk.name(),
            fix_for(pid, tk)
        )
    })
}

/// Warnings about parts of a window the accessibility tree leaves empty: a file manager's
/// icon view that lists no items (Thunar's icon and compact views expose none; its list view
/// does).
pub(crate) fn tree_warnings(tree: &AppTree, frame: &str, limit: usize) -> Vec<String> {
    use crate::vocab::role_name;
    let mut out = Vec::new();
    for n in tree.subtree(frame, limit) {
        let role = role_name(n.role);
        // a Qt window's layered pane is just a container: only a pane named as a file view
        let file_view = role == "directory pane"
            || (role == "layered pane" && n.name.to_lowercase().contains("view"));
        if !file_view {
            continue;
        }
        if !n.has(crate::vocab::state::SHOWING) {
            continue;
        }
        let named = tree
            .subtree(&n.path, limit)
            .iter()
            .skip(1)
            .any(|k| !k.name.trim().is_empty());
        if !named {
            let what = if n.name.trim().is_empty() {
                role.clone()
            } else {
                format!("{role} {:?}", n.name)
            };
            out.push(format!(
                "the file view ({what}) exposes no items to accessibility, so its files cannot be listed or named; if the folder is not empty, switch the file manager to its list view (Thunar and Nautilus: View > List View, Ctrl+2)"
            ));
        }
    }
    out
}

/// For a LibreOffice process (`soffice.bin`) that is not on the accessibility bus: why, and
/// how to fix it. Its `gen` and `x11` window-system plugins have no accessibility bridge;
/// only the GTK3 one (package libreoffice-gtk3) has.
pub(crate) fn libreoffice_without_a11y(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    if comm.trim() != "soffice.bin" {
        return None;
    }
    let plugin = std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .and_then(|env| {
            env.split(|b| *b == 0).find_map(|v| {
                v.strip_prefix(b"SAL_USE_VCLPLUGIN=")
                    .map(|p| String::from_utf8_lossy(p).into_owned())
            })
        });
    Some(libreoffice_hint(
        plugin.as_deref(),
        crate::config::libreoffice_gtk3_installed(),
    ))
}

/// The advice for a LibreOffice without accessibility, given the plugin it was told to use
/// and whether the GTK3 plugin is installed.
pub(crate) fn libreoffice_hint(plugin: Option<&str>, gtk3_installed: bool) -> String {
    let running = match plugin {
        Some(p) if !p.is_empty() => {
            format!("LibreOffice runs with SAL_USE_VCLPLUGIN={p}, a plugin")
        }
        _ => "LibreOffice runs with a window-system plugin".to_string(),
    };
    let install = if gtk3_installed {
        ""
    } else {
        "install libreoffice-gtk3 (apt-get install libreoffice-gtk3), then "
    };
    format!(
        "{running} without accessibility, so its controls cannot be read: {install}close LibreOffice (every window) and start it with SAL_USE_VCLPLUGIN=gtk3 (for example `SAL_USE_VCLPLUGIN=gtk3 libreoffice --calc`, or `ufo` launching `spreadsheet`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtk4_draws_with_cairo_only_on_a_display_without_direct_rendering() {
        assert_eq!(gtk4_renderer(false, false), Some(("GSK_RENDERER", "cairo")));
        // hardware rendering: the toolkit's own choice
        assert_eq!(gtk4_renderer(true, false), None);
        // the person's choice is never replaced
        assert_eq!(gtk4_renderer(false, true), None);
        assert_eq!(gtk4_renderer(true, true), None);
    }

    #[test]
    fn a_renderer_in_the_launch_configuration_is_the_persons_choice() {
        let renderer = |env: &[(String, String)]| {
            env.iter()
                .filter(|(k, _)| k == "GSK_RENDERER")
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        if std::env::var_os("GSK_RENDERER").is_some() {
            // (ufo's own environment chose one: nothing is added either way)
            assert!(renderer(&launch_env(false, &[])).is_empty());
            return;
        }
        assert_eq!(renderer(&launch_env(false, &[])), ["cairo"]);
        assert!(renderer(&launch_env(true, &[])).is_empty());
        let chosen = [("GSK_RENDERER".to_string(), "ngl".to_string())];
        assert!(renderer(&launch_env(false, &chosen)).is_empty());
        // the accessibility switches are there in every case
        assert!(launch_env(true, &chosen)
            .iter()
            .any(|(k, v)| k == "GTK_MODULES" && v.contains("atk-bridge")));
    }

    #[test]
    fn chromium_gets_the_accessibility_switch_and_no_sandbox_as_root() {
        assert_eq!(
            with_switches_as("chromium file:///tmp/a.html", false),
            "chromium --force-renderer-accessibility file:///tmp/a.html"
        );
        assert_eq!(
            with_switches_as("env A=1 /usr/bin/chromium --x", true),
            "env A=1 /usr/bin/chromium --force-renderer-accessibility --no-sandbox --x"
        );
        assert_eq!(
            with_switches_as("chromium --no-sandbox --force-renderer-accessibility", true),
            "chromium --no-sandbox --force-renderer-accessibility"
        );
        assert_eq!(
            with_switches_as("google-chrome", false),
            "google-chrome --force-renderer-accessibility"
        );
        assert_eq!(with_switches_as("gimp a.png", true), "gimp a.png");
    }

    #[test]
    fn gtk_modules_are_added_to_what_is_there() {
        assert_eq!(merge_gtk_modules(""), "gail:atk-bridge");
        assert_eq!(
            merge_gtk_modules("canberra-gtk-module"),
            "canberra-gtk-module:gail:atk-bridge"
        );
        assert_eq!(merge_gtk_modules("atk-bridge:gail"), "atk-bridge:gail");
        let env = a11y_env();
        for k in [
            "GTK_MODULES",
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON",
            "ACCESSIBILITY_ENABLED",
        ] {
            assert!(env.iter().any(|(n, _)| n == k), "{k}");
        }
    }

    #[test]
    fn single_commands_are_told_from_compound_ones() {
        assert_eq!(
            single_command("xfce4-terminal &").as_deref(),
            Some("xfce4-terminal")
        );
        assert_eq!(
            single_command("chromium --no-sandbox file:///a.html >/dev/null 2>&1 &").as_deref(),
            Some("chromium --no-sandbox file:///a.html >/dev/null 2>&1")
        );
        assert_eq!(
            single_command("xfce4-terminal -e \"sh -c 'ls; echo hi > /tmp/x'\"").as_deref(),
            Some("xfce4-terminal -e \"sh -c 'ls; echo hi > /tmp/x'\"")
        );
        for compound in [
            "gimp; echo done",
            "ls | thunar",
            "gimp && echo ok",
            "gimp & thunar",
            "echo $(gimp)",
            "cat <<EOF",
            "gimp 'unterminated",
            "",
            "&",
        ] {
            assert_eq!(single_command(compound), None, "{compound}");
        }
    }

    #[test]
    fn gui_programs_are_recognised() {
        let table = vec![("calc".to_string(), "env X=1 mycalc --x".to_string())];
        assert!(is_gui_program("mycalc", &table));
        assert!(is_gui_program("xfce4-terminal", &[]));
        assert!(is_gui_program("chromium", &[]));
        assert!(!is_gui_program("ls", &[]));
        assert!(!is_gui_program("", &[]));
        assert!(opens_window("gimp a.png", &[]));
        assert!(!opens_window(
            "libreoffice --headless --convert-to pdf a.docx",
            &[]
        ));
        assert!(!opens_window(
            "chromium --headless=new --dump-dom file:///a",
            &[]
        ));
        assert!(!opens_window("gimp -i -b '(gimp-quit 0)'", &[]));
        assert!(!opens_window("xfce4-terminal --version", &[]));
        assert!(!opens_window("ls -l", &[]));
        assert_eq!(
            desktop_entry_program("[Desktop Entry]\nName=X\nExec=/usr/bin/foo-app %U\n"),
            Some("foo-app".into())
        );
        assert_eq!(
            desktop_entry_program("[Desktop Entry]\nExec=htop\nTerminal=true\n"),
            None
        );
        assert_eq!(
            desktop_entry_program("[Desktop Entry]\nExec=a\n[Desktop Action x]\nTerminal=true\n"),
            Some("a".into())
        );
    }

    fn node(path: &str, parent: &str, role: u32, name: &str) -> crate::a11y::bus::Node {
        crate::a11y::bus::Node {
            path: path.into(),
            parent: parent.into(),
            index: 0,
            child_count: 0,
            ifaces: 0,
            name: name.into(),
            role,
            description: String::new(),
            states: crate::vocab::state::SHOWING,
        }
    }

    /// Issue 12, item 7: Thunar's icon view exposes no items; the observation says so, and a
    /// list that has its items (or a Qt window's plain layered pane) is left alone.
    #[test]
    fn an_icon_view_without_items_is_reported() {
        let pane = atspi::Role::DirectoryPane as u32;
        let layered = atspi::Role::LayeredPane as u32;
        let panel = atspi::Role::Panel as u32;
        let cell = atspi::Role::TableCell as u32;
        let empty = AppTree::from_nodes(vec![
            node("/f", "/root", atspi::Role::Frame as u32, "files - Thunar"),
            node("/p", "/f", pane, "Icon view"),
            node("/p/x", "/p", panel, ""),
        ]);
        let w = tree_warnings(&empty, "/f", 100);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("\"Icon view\"") && w[0].contains("list view"),
            "{w:?}"
        );
        let listed = AppTree::from_nodes(vec![
            node("/f", "/root", atspi::Role::Frame as u32, "files - Thunar"),
            node("/p", "/f", pane, "Details view"),
            node("/p/c", "/p", cell, "notes.txt"),
        ]);
        assert!(tree_warnings(&listed, "/f", 100).is_empty());
        let qt = AppTree::from_nodes(vec![
            node("/f", "/root", atspi::Role::Frame as u32, "Untitled"),
            node("/l", "/f", layered, ""),
        ]);
        assert!(tree_warnings(&qt, "/f", 100).is_empty());
    }

    #[test]
    fn toolkits_are_told_apart_by_name_and_libraries() {
        let gtk2 = "7f00 r-xp /usr/lib/x86_64-linux-gnu/libgtk-x11-2.0.so.0.2400.33\n";
        assert_eq!(classify("gimp-2.10", "gimp-2.10", gtk2), Toolkit::Gtk2);
        assert_eq!(
            classify("featherpad", "featherpad", "/usr/lib/libQt5Gui.so.5\n"),
            Toolkit::Qt
        );
        assert_eq!(
            classify("vlc", "vlc", "/usr/lib/libQt6Gui.so.6\n"),
            Toolkit::Qt
        );
        assert_eq!(classify("chromium", "chromium", ""), Toolkit::Chromium);
        assert_eq!(
            classify("soffice.bin", "soffice.bin", "libgtk-3.so"),
            Toolkit::LibreOffice
        );
        assert_eq!(
            classify("mousepad", "mousepad", "/usr/lib/libgtk-3.so.0\n"),
            Toolkit::Gtk3
        );
        assert_eq!(classify("firefox-esr", "firefox-esr", ""), Toolkit::Firefox);
        assert_eq!(classify("x", "x", ""), Toolkit::Unknown);
        assert!(fix(Toolkit::Chromium).contains("--force-renderer-accessibility"));
        assert!(fix(Toolkit::Gtk2).contains("GTK_MODULES=gail:atk-bridge"));
        assert!(fix(Toolkit::Qt).contains("QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"));
        assert!(!fix(Toolkit::Gtk2).contains("before accessibility was switched on"));
    }

    /// Issue 11, item 9: a LibreOffice without its accessible plugin gets the fix, not
    /// "started before accessibility was switched on".
    #[test]
    fn libreoffice_without_accessibility_is_told_how_to_fix_it() {
        let h = libreoffice_hint(Some("gen"), true);
        assert!(h.contains("SAL_USE_VCLPLUGIN=gen"), "{h}");
        assert!(h.contains("start it with SAL_USE_VCLPLUGIN=gtk3"), "{h}");
        assert!(!h.contains("install libreoffice-gtk3"), "{h}");
        let h = libreoffice_hint(None, false);
        assert!(h.contains("install libreoffice-gtk3"), "{h}");
        assert!(!h.contains("before accessibility"), "{h}");
    }

    /// Issue 23, item 7: the Qt hint says "set QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1" only when
    /// the application's environment lacks it; issue 46: it says what the display's
    /// AT_SPI_BUS property is (missing, naming another bus), never a guess.
    #[test]
    fn the_qt_hint_says_what_the_display_property_is() {
        let live = Some(&BusProperty::Live);
        assert!(
            qt_fix(Some(false), live).contains("start it with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1")
        );
        assert!(qt_fix(None, None).contains("start it with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"));
        let set = qt_fix(Some(true), live);
        assert!(!set.contains("start it with QT_LINUX"), "{set}");
        assert!(!set.contains("AT_SPI_BUS"), "{set}");
        assert!(set.contains("before the accessibility bus was up"), "{set}");
        // missing: said so, with or without the switch, and no "probably names a bus"
        for env in [Some(true), Some(false), None] {
            let h = qt_fix(env, Some(&BusProperty::Missing));
            assert!(h.contains("the display has none"), "{h}");
            assert!(!h.contains("probably"), "{h}");
        }
        let gone = BusProperty::Stale {
            published: "unix:path=/tmp/gone".into(),
        };
        let h = qt_fix(Some(true), Some(&gone));
        assert!(
            h.contains("names \"unix:path=/tmp/gone\", not the live"),
            "{h}"
        );
        let unknown = BusProperty::Unknown {
            published: "unix:path=/tmp/x".into(),
        };
        assert!(qt_fix(Some(true), Some(&unknown)).contains("if `ufo doctor`'s bus check"));
        // this test process has no such variable unless the caller set it
        let me = std::process::id();
        let ours = std::env::var_os("QT_LINUX_ACCESSIBILITY_ALWAYS_ON").is_some();
        assert_eq!(has_env(me, "QT_LINUX_ACCESSIBILITY_ALWAYS_ON"), Some(ours));
    }
}
