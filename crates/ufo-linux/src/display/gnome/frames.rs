//! The window list on GNOME, from AT-SPI (docs/desktop.md, "GNOME"): GNOME Shell tells other
//! programs nothing about windows (its Introspect and Eval interfaces refuse them), so the
//! windows are the applications' top-level accessible frames: title, application, process,
//! size and the ACTIVE state, but no position. A window's place is known only when it is
//! maximized (its frame fills the work area under the top bar: it sits at the bottom-left of
//! the monitor); the private desktop maximizes application windows for that. Pure here; the
//! calls are in `super`.

use std::collections::HashMap;

use ufo_core::Rect;

use crate::display::{DisplayWindow, WinId};
use crate::vocab::{role, state};

/// What AT-SPI says of one top-level frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The application's bus name on the accessibility bus.
    pub bus: String,
    /// The frame's object path.
    pub path: String,
    /// The application's name.
    pub app: String,
    /// Its process, from the bus.
    pub pid: Option<u32>,
    /// The frame's name (the window title).
    pub title: String,
    /// Its role.
    pub role: u32,
    /// Its state bits.
    pub states: u64,
    /// Its size (AT-SPI gives no position on Wayland).
    pub size: (i32, i32),
}

/// Most pixels of the top bar over a maximized window: a frame as wide as the monitor and at
/// most this much shorter is taken as maximized.
const TOP_BAR_MOST: i32 = 64;

/// Where a window of `size` lies on a monitor `screen` when it is maximized (`None`: it is
/// not, and its place is unknown). A frame as tall as the monitor is not taken as placed:
/// while a window is being maximized GTK reports the whole monitor for a moment, before the
/// top bar's room is taken off (clicks placed from it landed 32 pixels too high).
pub(crate) fn placed(screen: Rect, size: (i32, i32)) -> Option<Rect> {
    let (w, h) = size;
    let (sw, sh) = (screen.w as i32, screen.h as i32);
    let maximized = w == sw && h > 0 && h < sh && sh - h <= TOP_BAR_MOST;
    maximized.then(|| Rect::new(screen.x, screen.y + sh - h, w as u32, h as u32))
}

/// Whether a frame is a window of an application (not GNOME Shell's own, not an empty one).
pub(crate) fn is_window(s: &Seen) -> bool {
    let shell = s.app == "gnome-shell";
    let roles = [role::FRAME, role::DIALOG, role::WINDOW, role::ALERT];
    !shell && roles.contains(&s.role) && s.size.0 > 0 && s.size.1 > 0
}

/// Whether the private desktop maximizes a frame to know its place: an application's main
/// window (a dialog keeps its size) that is not maximized yet.
pub(crate) fn to_maximize(s: &Seen, screen: Rect) -> bool {
    s.role == role::FRAME && placed(screen, s.size).is_none()
}

/// Window ids of frames: the same frame keeps its number while it is listed.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    next: u32,
    known: HashMap<(String, String), WinId>,
}

impl Ids {
    /// The id of the frame `path` of application `bus`.
    pub(crate) fn number(&mut self, bus: &str, path: &str) -> WinId {
        let key = (bus.to_string(), path.to_string());
        if let Some(id) = self.known.get(&key) {
            return *id;
        }
        self.next += 1;
        let id = WinId(self.next);
        self.known.insert(key, id);
        id
    }

    /// Forget the frames not among `alive`.
    pub(crate) fn keep_only(&mut self, alive: &[(String, String)]) {
        self.known.retain(|k, _| alive.contains(k));
    }
}

/// A listed window: what the display says of it, whether it is active, and its frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub window: DisplayWindow,
    pub active: bool,
    pub bus: String,
    pub path: String,
}

/// The windows of the frames seen, numbered, placed when maximized; with `streams` (the
/// display can record a window in a stream of its own) the others are placed in their slots
/// off the monitor ([`super::casts::stream_area`]). A GTK 4 dialog never says ACTIVE
/// (measured: gnome-text-editor's "Save Changes?" had the keyboard focus, Escape closed it,
/// while no frame of the editor said ACTIVE), so when no window says it, the newest dialog is
/// taken as the active one.
pub(crate) fn windows_of(seen: &[Seen], screen: Rect, ids: &mut Ids, streams: bool) -> Vec<Listed> {
    let shown: Vec<&Seen> = seen.iter().filter(|s| is_window(s)).collect();
    ids.keep_only(
        &shown
            .iter()
            .map(|s| (s.bus.clone(), s.path.clone()))
            .collect::<Vec<_>>(),
    );
    let mut listed: Vec<Listed> = shown
        .into_iter()
        .map(|s| {
            let id = ids.number(&s.bus, &s.path);
            let dialog = s.role == role::DIALOG || s.role == role::ALERT;
            let area = placed(screen, s.size)
                .or_else(|| streams.then(|| super::casts::stream_area(id, s.size)));
            Listed {
                window: DisplayWindow {
                    id,
                    title: s.title.clone(),
                    pid: s.pid,
                    app_id: s.app.clone(),
                    area,
                    transient_for: None,
                    dialog,
                    wm_modal: s.states & state::MODAL != 0,
                },
                active: s.states & state::ACTIVE != 0,
                bus: s.bus.clone(),
                path: s.path.clone(),
            }
        })
        .collect();
    if !listed.iter().any(|l| l.active) {
        if let Some(newest) = listed
            .iter_mut()
            .filter(|l| l.window.dialog)
            .max_by_key(|l| l.window.id)
        {
            newest.active = true;
        }
    }
    listed
}

/// The window the person shared on the portal path, among the frames seen: the frame whose
/// size is the stream's window (`opaque`, the box of opaque pixels of the stream's last frame;
/// a translucent border aside, [`super::casts::shows_size`]), the ACTIVE one among several of
/// that size, else the newest. AT-SPI has no tie to the compositor's window, so the size is
/// the match. Placed at (0, 0): its own coordinates, the stream's pointer offset by where the
/// window lies in the frame. `None`: no frame has that size (the window closed, or no frame
/// yet).
pub(crate) fn shared_of(seen: &[Seen], opaque: Option<Rect>, ids: &mut Ids) -> Option<Listed> {
    let opaque = opaque?;
    let fits: Vec<&Seen> = seen
        .iter()
        .filter(|s| {
            is_window(s) && super::casts::shows_size(opaque, (s.size.0 as u32, s.size.1 as u32))
        })
        .collect();
    let s = fits
        .iter()
        .find(|s| s.states & state::ACTIVE != 0)
        .or(fits.last())?;
    let far = Rect::new(0, 0, 0, 0);
    let mut l = windows_of(&[(*s).clone()], far, ids, false).pop()?;
    l.window.area = Some(Rect::new(0, 0, s.size.0 as u32, s.size.1 as u32));
    Some(l)
}

/// Whether a frame other than the shared one (`bus`, `path`) says ACTIVE: keys would go to
/// it, not to the shared window.
pub(crate) fn focus_elsewhere(seen: &[Seen], shared: Option<&Listed>) -> bool {
    seen.iter().any(|s| {
        is_window(s)
            && s.states & state::ACTIVE != 0
            && shared.is_none_or(|l| l.bus != s.bus || l.path != s.path)
    })
}

/// The window on top at a point: the active one when it holds the point (windows have no
/// known stacking on GNOME, and maximized ones all lie in the same place), else none. A point
/// in the slot of a window known by its stream is that window's (its stream shows it alone).
pub(crate) fn top_at(listed: &[Listed], x: i32, y: i32) -> Option<WinId> {
    if super::casts::in_streams(x) {
        return streamed_at(listed, x, y).map(|l| l.window.id);
    }
    listed
        .iter()
        .find(|l| l.active)
        .filter(|l| {
            l.window.area.is_some_and(|a| {
                x >= a.x && y >= a.y && x < a.x + a.w as i32 && y < a.y + a.h as i32
            })
        })
        .map(|l| l.window.id)
}

/// The window known by its stream whose slot holds a point.
pub(crate) fn streamed_at(listed: &[Listed], x: i32, y: i32) -> Option<&Listed> {
    listed.iter().find(|l| {
        l.window
            .area
            .is_some_and(|a| super::casts::in_streams(a.x) && super::casts::holds(a, x, y))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Rect = Rect {
        x: 0,
        y: 0,
        w: 1280,
        h: 800,
    };

    fn seen(app: &str, path: &str, role: u32, size: (i32, i32), active: bool) -> Seen {
        Seen {
            bus: format!(":1.{app}"),
            path: path.into(),
            app: app.into(),
            pid: Some(42),
            title: format!("{app} window"),
            role,
            states: if active { state::ACTIVE } else { 0 },
            size,
        }
    }

    #[test]
    fn a_maximized_window_lies_under_the_top_bar_and_others_nowhere() {
        assert_eq!(
            placed(SCREEN, (1280, 768)),
            Some(Rect::new(0, 32, 1280, 768))
        );
        assert_eq!(
            placed(SCREEN, (1280, 800)),
            None,
            "mid-maximize, or full screen"
        );
        assert_eq!(placed(SCREEN, (360, 612)), None);
        assert_eq!(placed(SCREEN, (1280, 400)), None, "as wide, not as tall");
        assert_eq!(placed(SCREEN, (1280, 0)), None);
    }

    #[test]
    fn frames_become_windows_numbered_once_without_the_shells() {
        let mut ids = Ids::default();
        let frames = vec![
            seen("gnome-shell", "/a/1", role::WINDOW, (1280, 32), false),
            seen("calc", "/a/2", role::FRAME, (1280, 768), true),
            seen("editor", "/a/3", role::FRAME, (600, 400), false),
            seen("editor", "/a/4", role::DIALOG, (300, 200), false),
            seen("calc", "/a/5", role::FRAME, (0, 0), false),
        ];
        let listed = windows_of(&frames, SCREEN, &mut ids, false);
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert_eq!(listed[0].window.area, Some(Rect::new(0, 32, 1280, 768)));
        assert_eq!(listed[1].window.area, None, "not maximized: placed nowhere");
        assert!(listed[2].window.dialog);
        let again = windows_of(&frames[1..3], SCREEN, &mut ids, false);
        assert_eq!(again[0].window.id, listed[0].window.id);
        assert_eq!(top_at(&listed, 10, 40), Some(listed[0].window.id));
        assert_eq!(top_at(&listed, 10, 10), None, "the top bar");
        assert!(to_maximize(&frames[2], SCREEN) && !to_maximize(&frames[1], SCREEN));
        assert!(!to_maximize(&frames[3], SCREEN), "dialogs keep their size");
    }

    #[test]
    fn with_streams_unplaced_windows_get_slots_and_a_silent_dialog_is_the_active_one() {
        let mut ids = Ids::default();
        let frames = vec![
            seen("editor", "/a/1", role::FRAME, (1280, 768), false),
            seen("editor", "/a/2", role::DIALOG, (382, 276), false),
        ];
        let listed = windows_of(&frames, SCREEN, &mut ids, true);
        assert_eq!(listed[0].window.area, Some(Rect::new(0, 32, 1280, 768)));
        let slot = listed[1].window.area.expect("a slot");
        assert_eq!(
            slot,
            crate::display::gnome::casts::stream_area(listed[1].window.id, (382, 276))
        );
        assert!(
            listed[1].active,
            "no window says ACTIVE: the dialog has the focus"
        );
        assert_eq!(
            top_at(&listed, slot.x + 10, slot.y + 250),
            Some(listed[1].window.id)
        );
        assert_eq!(
            top_at(&listed, slot.x + 382, 10),
            None,
            "right of the window"
        );
        // a window that says ACTIVE is believed
        let mut frames = frames;
        frames[0].states = state::ACTIVE;
        let listed = windows_of(&frames, SCREEN, &mut ids, true);
        assert!(listed[0].active && !listed[1].active);
    }

    #[test]
    fn the_shared_window_is_the_frame_of_the_streams_size_placed_at_the_origin() {
        let mut ids = Ids::default();
        let frames = vec![
            seen("editor", "/a/1", role::FRAME, (1280, 768), true),
            seen("calc", "/a/2", role::FRAME, (360, 612), false),
            seen("calc", "/a/3", role::FRAME, (360, 612), false),
            seen("gnome-shell", "/a/4", role::WINDOW, (360, 612), false),
        ];
        // the stream's opaque box: the calculator inside its shadow, its border 1 pixel
        let opaque = Some(Rect::new(40, 30, 358, 610));
        let l = shared_of(&frames, opaque, &mut ids).expect("the calculator");
        assert_eq!(l.path, "/a/3", "the newest of the two of that size");
        assert_eq!(l.window.area, Some(Rect::new(0, 0, 360, 612)));
        assert!(focus_elsewhere(&frames, Some(&l)), "the editor says ACTIVE");
        let mut frames = frames;
        frames[0].states = 0;
        frames[1].states = state::ACTIVE;
        let l = shared_of(&frames, opaque, &mut ids).expect("the calculator");
        assert_eq!(l.path, "/a/2", "the active one of that size");
        assert!(!focus_elsewhere(&frames, Some(&l)));
        assert!(
            shared_of(&frames, Some(Rect::new(0, 0, 200, 100)), &mut ids).is_none(),
            "no frame of the stream's size: the window closed"
        );
        assert!(shared_of(&frames, None, &mut ids).is_none(), "no frame yet");
    }
}
