//! Launching applications: from the launch table (waiting until the window is on the
//! accessibility bus) and from a host `Bash` command that starts a GUI application (started
//! apart from ufo: its own process group, output to a log that nobody waits on, so the
//! command returns as soon as the application's window appears, and the application
//! outlives it). The children launched ([`Launched`]) are what the desktop holds; the
//! launching itself (`start.rs`) reads windows and the bus through the desktop.

pub(crate) mod shell;
pub(crate) mod start;
pub mod toolkit;

use std::process::Child;
use std::sync::{Arc, Mutex};

use ufo_core::WindowInfo;

use crate::a11y::apps::KnownApps;
use crate::a11y::bus::A11yBus;
use crate::display::{Display, DisplayWindow};
use crate::LinuxConfig;

/// Launching, over what it borrows from the desktop: the display (its windows), the bus (the
/// applications on it), the configuration, and the children launched.
#[derive(Clone, Copy)]
pub(crate) struct Launcher<'a> {
    pub bus: &'a A11yBus,
    pub display: &'a Arc<dyn Display>,
    pub config: &'a LinuxConfig,
    pub apps: &'a KnownApps,
    pub launched: &'a Launched,
}

impl Launcher<'_> {
    /// What every program ufo starts gets in its environment, in order: the toolkit switches
    /// (toolkit.rs, `launch_env`), then the configuration's `launch_env`, which wins.
    pub(crate) fn started_env(&self) -> Vec<(String, String)> {
        let mut env = toolkit::launch_env(self.display.direct_rendering(), &self.config.launch_env);
        env.extend(self.config.launch_env.iter().cloned());
        env
    }
}

/// A window as the engine is told of it: its application's name from the bus (`app`), else
/// its class; its process's name, else its class.
pub(crate) fn window_info(w: &DisplayWindow, app: Option<String>) -> WindowInfo {
    // Tk names its top-level windows' class instance by the widget path ("!listedtoplevel"
    // for IDLE's): that is no application's name, the process's is
    let class = Some(w.app_id.clone()).filter(|c| !c.starts_with('!'));
    let process = w
        .pid
        .and_then(process_name)
        .or_else(|| class.clone())
        .unwrap_or_default();
    WindowInfo {
        id: w.id.to_string().into(),
        title: w.title.clone(),
        app_name: app
            .filter(|a| !a.is_empty())
            .or(class.filter(|c| !c.is_empty()))
            .unwrap_or_else(|| process.clone()),
        process,
        pid: w.pid,
        rect: w.area,
    }
}

/// The applications launched, reaped as they exit.
#[derive(Default)]
pub(crate) struct Launched(Mutex<Vec<Child>>);

impl Launched {
    fn children(&self) -> std::sync::MutexGuard<'_, Vec<Child>> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keep a child until it exits.
    pub(crate) fn push(&self, child: Child) {
        self.children().push(child);
    }

    /// Forget the children that exited.
    pub(crate) fn reap(&self) {
        self.children()
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }

    /// Whether the child `pid` exited (or is not known).
    pub(crate) fn exited(&self, pid: u32) -> bool {
        self.children()
            .iter_mut()
            .find(|c| c.id() == pid)
            .map(|c| matches!(c.try_wait(), Ok(Some(_))))
            .unwrap_or(true)
    }

    /// The exit code of the child `pid` once it exited (`Some(None)`: killed by a signal),
    /// then every child that exited forgotten, in one look.
    pub(crate) fn exit_and_reap(&self, pid: u32) -> Option<Option<i32>> {
        let mut children = self.children();
        let mut exit = None;
        if let Some(c) = children.iter_mut().find(|c| c.id() == pid) {
            if let Ok(Some(status)) = c.try_wait() {
                exit = Some(status.code());
            }
        }
        children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        exit
    }
}

/// The name of a process, if it is still there: its `comm`, or the program's whole name when
/// the kernel cut `comm` short (`gnome-calculato` is `gnome-calculator`).
pub(crate) fn process_name(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let comm = comm.trim();
    if comm.len() < COMM_MAX {
        return Some(comm.to_string());
    }
    // (a small read: the first argument is all that is wanted)
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    Some(whole_name(comm, &String::from_utf8_lossy(argv0)))
}

/// The longest `comm` the kernel keeps (16 bytes with its terminating NUL).
const COMM_MAX: usize = 15;

/// `comm`, or the program named by `argv0` when its file name starts with `comm` (a process
/// may rename itself: then `comm` stays).
fn whole_name(comm: &str, argv0: &str) -> String {
    let file = argv0.rsplit('/').next().unwrap_or_default();
    if file.len() > comm.len() && file.starts_with(comm) {
        file.to_string()
    } else {
        comm.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_name_the_kernel_cut_short_is_made_whole_from_its_program() {
        assert_eq!(
            whole_name("gnome-calculato", "/usr/bin/gnome-calculator"),
            "gnome-calculator"
        );
        assert_eq!(
            whole_name("gnome-calculato", "gnome-calculator"),
            "gnome-calculator"
        );
        // renamed or unrelated: comm stays
        assert_eq!(
            whole_name("Web Content", "/usr/lib/firefox-esr/firefox-esr"),
            "Web Content"
        );
        assert_eq!(whole_name("gnome-calculato", ""), "gnome-calculato");
    }

    /// Issue 46: Tk's IDLE window (class instance "!listedtoplevel", no `_NET_WM_PID`, its
    /// pid from X-Resource) is named by its process, not by Tk's widget path.
    #[test]
    fn a_tk_window_is_named_by_its_process() {
        let w = |app_id: &str, pid: Option<u32>| DisplayWindow {
            id: crate::display::WinId(5),
            title: "IDLE Shell 3.11.2".into(),
            pid,
            app_id: app_id.into(),
            area: None,
            transient_for: None,
            dialog: false,
            wm_modal: false,
        };
        let me = std::process::id();
        let mine = process_name(me).expect("this process has a name");
        let info = window_info(&w("!listedtoplevel", Some(me)), None);
        assert_eq!(info.app_name, mine);
        assert_eq!(info.process, mine);
        // without a pid either: no widget path as a name
        let info = window_info(&w("!listedtoplevel", None), None);
        assert!(!info.app_name.starts_with('!') && !info.process.starts_with('!'));
        // an ordinary class instance is still the application's name
        let info = window_info(&w("featherpad", Some(me)), None);
        assert_eq!(info.app_name, "featherpad");
        assert_eq!(
            window_info(&w("x", None), Some("FeatherPad".into())).app_name,
            "FeatherPad"
        );
    }
}
