//! KWin's grant (docs/desktop.md, "Wayland"): KWin offers `org_kde_kwin_fake_input` (and
//! `zkde_screencast_unstable_v1`, the fast captures) and answers `org.kde.KWin.ScreenShot2` only to a program that a `.desktop` file grants them,
//! matched by the canonical path of the program's executable against the first word of the
//! file's `Exec=`. Reading and writing such files; which one grants ufo is a pure question
//! ([`grant_in`]).

use std::path::{Path, PathBuf};

/// The Wayland interface of KWin's input (`X-KDE-Wayland-Interfaces`).
pub(crate) const FAKE_INPUT: &str = "org_kde_kwin_fake_input";
/// The Wayland interface of KWin's screencast (`X-KDE-Wayland-Interfaces`): captures read
/// from a PipeWire stream.
pub(crate) const SCREENCAST: &str = "zkde_screencast_unstable_v1";
/// The D-Bus interface of KWin's screenshots (`X-KDE-DBUS-Restricted-Interfaces`).
pub(crate) const SCREENSHOT: &str = "org.kde.KWin.ScreenShot2";

/// What a `.desktop` file grants a program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Grant {
    /// `org_kde_kwin_fake_input` (keys and clicks).
    pub fake_input: bool,
    /// `org.kde.KWin.ScreenShot2` (captures).
    pub screenshot: bool,
    /// `zkde_screencast_unstable_v1` (fast captures; optional).
    pub screencast: bool,
}

impl Grant {
    /// What ufo needs granted (input and captures; the screencast only speeds captures up).
    pub(crate) fn whole(&self) -> bool {
        self.fake_input && self.screenshot
    }
}

/// The first word of an `Exec=` line (quotes taken off).
fn exec_program(exec: &str) -> &str {
    let t = exec.trim_start();
    match t.strip_prefix('"') {
        Some(rest) => rest.split('"').next().unwrap_or(""),
        None => t.split_whitespace().next().unwrap_or(""),
    }
}

/// What the `.desktop` file `text` grants the program `exe` (canonical), the file's `Exec=`
/// resolved by `canonical`: nothing when its `Exec=` names another program.
pub(crate) fn grant_in(
    text: &str,
    exe: &Path,
    canonical: impl Fn(&Path) -> Option<PathBuf>,
) -> Grant {
    let mut in_entry = false;
    let (mut exec, mut wayland, mut dbus) = (None, "", "");
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_entry = line == "[Desktop Entry]";
            continue;
        }
        if !in_entry {
            continue;
        }
        match line.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("Exec", v)) => exec = Some(exec_program(v)),
            Some(("X-KDE-Wayland-Interfaces", v)) => wayland = v,
            Some(("X-KDE-DBUS-Restricted-Interfaces", v)) => dbus = v,
            _ => {}
        }
    }
    let ours = exec
        .filter(|e| !e.is_empty())
        .and_then(|e| canonical(Path::new(e)))
        .is_some_and(|p| p == exe);
    let lists = |v: &str, name: &str| v.split([',', ';']).any(|i| i.trim() == name);
    Grant {
        fake_input: ours && lists(wayland, FAKE_INPUT),
        screenshot: ours && lists(dbus, SCREENSHOT),
        screencast: ours && lists(wayland, SCREENCAST),
    }
}

/// The folders KWin reads `.desktop` files from: `$XDG_DATA_HOME/applications` (default
/// `~/.local/share/applications`), then each of `$XDG_DATA_DIRS` (default
/// `/usr/local/share:/usr/share`) with `/applications`.
pub(crate) fn application_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    match std::env::var_os("XDG_DATA_HOME") {
        Some(d) if !d.is_empty() => out.push(PathBuf::from(d).join("applications")),
        _ => {
            if let Some(home) = std::env::var_os("HOME") {
                out.push(PathBuf::from(home).join(".local/share/applications"));
            }
        }
    }
    let dirs = std::env::var("XDG_DATA_DIRS")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    out.extend(
        dirs.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join("applications")),
    );
    out
}

/// Most `.desktop` files read per folder.
const MOST_FILES: usize = 5000;

/// The first `.desktop` file that grants `exe` all three interfaces, else the first that grants
/// what ufo needs ([`Grant::whole`]), else the best grant found
/// and its file.
pub(crate) fn find_grant(exe: &Path) -> (Grant, Option<PathBuf>) {
    let mut best = (Grant::default(), None);
    for dir in application_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten().take(MOST_FILES) {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "desktop") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let g = grant_in(&text, exe, |p| std::fs::canonicalize(p).ok());
            if g.whole() && g.screencast {
                return (g, Some(path));
            }
            if (g.whole() && !best.0.whole())
                || ((g.fake_input || g.screenshot) && best.1.is_none())
            {
                best = (g, Some(path));
            }
        }
    }
    best
}

/// The `.desktop` file that grants `exe` what ufo needs of KWin (deploy/kwin/ufo.desktop
/// holds the same, for an install at `/usr/local/bin/ufo`).
pub(crate) fn grant_file(exe: &Path) -> String {
    format!(
        "[Desktop Entry]\nType=Application\nName=ufo\nComment=ufo drives desktop \
         applications for its user\nExec={}\nNoDisplay=true\n\
         X-KDE-Wayland-Interfaces={FAKE_INPUT},{SCREENCAST}\nX-KDE-DBUS-Restricted-Interfaces={SCREENSHOT}\n",
        exe.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(p: &Path) -> Option<PathBuf> {
        Some(p.to_path_buf())
    }

    #[test]
    fn a_desktop_file_grants_the_program_its_exec_names() {
        let exe = Path::new("/usr/local/bin/ufo");
        let file = grant_file(exe);
        assert_eq!(
            grant_in(&file, exe, same),
            Grant {
                fake_input: true,
                screenshot: true,
                screencast: true
            }
        );
        // another program's file grants ufo nothing
        assert_eq!(
            grant_in(&file, Path::new("/opt/other/ufo"), same),
            Grant::default()
        );
        // the keys count in the [Desktop Entry] group only, and lists may hold more
        let text = "[Desktop Action x]\nX-KDE-Wayland-Interfaces=org_kde_kwin_fake_input\n\
                    [Desktop Entry]\nExec=\"/usr/local/bin/ufo\" run %U\n\
                    X-KDE-Wayland-Interfaces=org_kde_plasma_window_management, org_kde_kwin_fake_input\n";
        assert_eq!(
            grant_in(text, exe, same),
            Grant {
                fake_input: true,
                screenshot: false,
                screencast: false
            }
        );
        // Exec resolved through a link to the canonical program
        let linked = "[Desktop Entry]\nExec=/usr/bin/ufo\nX-KDE-DBUS-Restricted-Interfaces=org.kde.KWin.ScreenShot2\n";
        let resolve = |p: &Path| (p == Path::new("/usr/bin/ufo")).then(|| exe.to_path_buf());
        assert!(grant_in(linked, exe, resolve).screenshot);
        assert!(!grant_in("[Desktop Entry]\nExec=\n", exe, same).fake_input);
    }

    #[test]
    fn the_deployed_grant_file_is_the_one_ufo_writes() {
        let deployed = include_str!("../../../../deploy/kwin/ufo.desktop");
        assert_eq!(deployed, grant_file(Path::new("/usr/local/bin/ufo")));
    }
}
