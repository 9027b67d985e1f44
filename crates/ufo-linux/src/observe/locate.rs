//! Step 1 of an observation: the window (or the one that replaced it), its dialogs, and the
//! area they cover on the screen; the window is raised so that its screenshot shows it.

use ufo_core::{Rect, WindowInfo};

use super::observer::Observer;
use crate::display::pixels::intersect;
use crate::display::{self, DisplayWindow, WinId};
use crate::LinuxError;

/// The window to observe, found on the screen.
pub(super) struct Located {
    pub(super) main: DisplayWindow,
    /// Its dialogs (transient for it).
    pub(super) attached: Vec<DisplayWindow>,
    /// The part of the screen the window and its dialogs cover (`None`: the window is placed
    /// nowhere on this display).
    pub(super) area: Option<Rect>,
    pub(super) warnings: Vec<String>,
    /// Every window on the screen (a frame named as, or lying where, another window of the
    /// same process is that window's: frames.rs).
    pub(super) windows: Vec<DisplayWindow>,
    /// The window was raised now: its capture may show what covered it before it was
    /// redrawn, so its pixels do not tell which cells are empty (apps/inked.rs).
    pub(super) raised: bool,
}

impl Observer<'_> {
    /// Step 1: the window (or the one that replaced it), its dialogs, and the area they cover
    /// on the screen; the window is raised so that its screenshot shows it (as UFO does).
    pub(super) async fn locate(&self, window_id: &str) -> Result<Located, LinuxError> {
        let xid = WinId::parse(window_id)?;
        let (all, active) =
            display::run(self.display, |d| Ok((d.windows()?, d.active_window()?))).await?;
        let main = match all.iter().find(|w| w.id == xid) {
            Some(w) => w.clone(),
            None => self
                .successor(xid, &all)
                .ok_or_else(|| LinuxError::NoWindow(window_id.to_string()))?,
        };
        {
            let mut seen = self.windows.lock();
            for w in &all {
                if let Some(pid) = w.pid {
                    seen.insert(w.id, pid);
                }
            }
        }
        let xid = main.id;
        // dialogs that belong to this window are observed with it (they sit on top of it)
        let attached: Vec<DisplayWindow> = all
            .iter()
            .filter(|w| w.transient_for == Some(xid) && w.id != xid)
            .cloned()
            .collect();
        let mut warnings = Vec::new();
        let mut raised = false;
        // a session without a window manager has no active window and is left alone
        if let Some(a) = active {
            if a != xid && !attached.iter().any(|d| d.id == a) {
                raised = true;
                if let Err(e) = display::activate(self.display, xid).await {
                    warnings.push(format!("could not raise the window: {e}"));
                }
            }
        }
        // (a window placed nowhere has no area: its screenshot is missing, with a warning)
        let area = match main.area {
            Some(_) => crate::display::pixels::union(
                std::iter::once(&main)
                    .chain(&attached)
                    .filter_map(|w| w.area),
            ),
            None => None,
        };
        let screen = self.display.placeable();
        let area = match area {
            Some(area) => Some(intersect(area, screen).ok_or_else(|| {
                LinuxError::ActionFailed(format!(
                    "window {window_id} is entirely off screen; move it onto the screen"
                ))
            })?),
            None => None,
        };
        Ok(Located {
            main,
            attached,
            area,
            warnings,
            windows: all,
            raised,
        })
    }

    /// Step 6: what the engine is told about the window (its application's name from the
    /// bus, else its X class).
    pub(super) async fn window_info(
        &self,
        main: &DisplayWindow,
        main_bus: Option<String>,
    ) -> WindowInfo {
        let by_bus_name = match main_bus {
            Some(bus) => self.apps.name(self.bus, &bus).await,
            None => None,
        };
        WindowInfo {
            id: main.id.to_string().into(),
            title: main.title.clone(),
            app_name: by_bus_name
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| main.app_id.clone()),
            process: main
                .pid
                .and_then(crate::launch::process_name)
                .unwrap_or_else(|| main.app_id.clone()),
            pid: main.pid,
            rect: main.area,
        }
    }

    /// The window that took the place of window `xid`, now gone: the only top-level window of
    /// the same process (LibreOffice replaces its start window by the document's window).
    pub(super) fn successor(&self, xid: WinId, all: &[DisplayWindow]) -> Option<DisplayWindow> {
        let pid = *self.windows.lock().get(&xid)?;
        let mut same: Vec<&DisplayWindow> = all
            .iter()
            .filter(|w| w.pid == Some(pid) && w.transient_for.is_none())
            .collect();
        (same.len() == 1).then(|| same.remove(0).clone())
    }
}
