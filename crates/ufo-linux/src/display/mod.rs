//! The display seam: everything the live desktop asks of the window system, behind one trait
//! ([`Display`]), so that the accessibility observation, settling and the actions above it are
//! the same on every display. X11 (`x11/`, through x11rb) is the first implementation; a
//! Wayland compositor is another implementation of the same trait.
//!
//! What a display gives (docs/desktop.md, "The display"):
//!
//! - **windows**: the client windows in stacking order ([`Display::windows`]), one window
//!   ([`Display::window`]), the active one, asking for activation and closing, and the hit test
//!   before a click ([`Display::top_at`], [`Display::top_of`]). A window's client area may be
//!   unknown ([`DisplayWindow::area`] `None`: a compositor that does not say where windows
//!   are): it has no screenshot, its left clicks go through the controls' actions (the hit
//!   test needs the window's place) and `click_at` is refused;
//! - **where AT-SPI extents live** ([`Display::coord_space`]): on the screen (X11), or relative
//!   to the window's client area (Wayland, every toolkit); see [`extents_origin`];
//! - **pixels**: captures and looks of a screen rectangle ([`pixels`]);
//! - **input**: pointer clicks and key chords (keysyms, [`keys`]) from one long-lived device;
//! - **watches**, each optional: the change watch that settling waits on
//!   ([`watch::ChangeWatch`]; without one, settling compares pixels) and the person's input on
//!   a watched private desktop ([`watch::PersonInput`]).
//!
//! Which display is opened is decided in [`choice`] (`desktop.rs` opens it); `wlroots/` is
//! the Wayland display of sway and other wlroots compositors, `kwin/` KDE's, `gnome/` GNOME's
//! (Mutter's own D-Bus interfaces, on a private GNOME desktop).
//!
//! Display-free here: the trait and its types, [`pixels`], [`keys`], [`annotate`], [`watch`]'s
//! shared records and the helpers over the trait ([`run`], [`activate`], [`settle_pixels`],
//! [`close_for_good`]). Only `x11/` names x11rb; only `wlroots/` and `kwin/` name the Wayland crates.

pub(crate) mod annotate;
pub(crate) mod choice;
pub(crate) mod gnome;
pub(crate) mod keys;
pub(crate) mod kwin;
pub(crate) mod kwin_grant;
#[cfg(feature = "pipewire")]
pub(crate) mod pipewire;
pub(crate) mod pixels;
pub(crate) mod watch;
mod window;
pub(crate) mod wl_client;
pub(crate) mod wlroots;
pub(crate) mod x11;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ufo_core::Rect;

use crate::error::cause;
use crate::LinuxError;
use keys::KeyStep;
use pixels::{Look, RgbImage};
use watch::{ChangeWatch, PersonInput};
pub(crate) use window::{
    extents_origin, extents_relative, position_unknown, CoordSpace, DisplayWindow, WinId,
};

/// What every display does: the window system seen from the desktop. Calls block on the
/// display's server (run them through [`run`] from async code); they are bounded by the
/// display's own connection.
pub(crate) trait Display: Send + Sync {
    /// The whole screen, at (0, 0).
    fn screen(&self) -> Rect;
    /// Where windows may lie: the screen, and on a display that places windows it cannot
    /// see on the monitor by streams of their own (GNOME, `gnome/casts.rs`) their slots off
    /// it as well. Observation clips a window's area to this.
    fn placeable(&self) -> Rect {
        self.screen()
    }
    /// Whether the display offers direct rendering: without it, OpenGL in its clients is
    /// software rendering (Xvfb, Xvnc), which the toolkit switches take into account.
    fn direct_rendering(&self) -> bool;
    /// Where AT-SPI extents live on this display.
    fn coord_space(&self) -> CoordSpace;
    /// The managed, viewable client windows, in the window manager's order.
    fn windows(&self) -> Result<Vec<DisplayWindow>, LinuxError>;
    /// One window; `None` when it is not viewable (or gone).
    fn window(&self, id: WinId) -> Result<Option<DisplayWindow>, LinuxError>;
    /// The active window, if the window manager says.
    fn active_window(&self) -> Result<Option<WinId>, LinuxError>;
    /// Ask the window manager to activate (raise and focus) a window.
    fn request_activate(&self, id: WinId) -> Result<(), LinuxError>;
    /// Ask the window manager to close a window (as its close button would).
    fn request_close(&self, id: WinId) -> Result<(), LinuxError>;
    /// The top-level window on top at a screen point (a window, its window-manager frame, or
    /// a popup), if any: the hit test before a click.
    fn top_at(&self, x: i32, y: i32) -> Result<Option<WinId>, LinuxError>;
    /// The top-level window that holds `id` (its window-manager frame when there is one,
    /// else the window itself).
    fn top_of(&self, id: WinId) -> Result<WinId, LinuxError>;
    /// Capture a screen rectangle (clipped to the screen) as RGB.
    fn capture(&self, area: Rect) -> Result<RgbImage, LinuxError>;
    /// The raw pixels of a screen rectangle (clipped to the screen; empty off screen): what
    /// settling compares.
    fn look(&self, area: Rect) -> Result<Look, LinuxError>;
    /// A cheap fingerprint of a screen rectangle (to see whether it changed).
    fn fingerprint(&self, area: Rect) -> Result<u64, LinuxError> {
        Ok(pixels::fingerprint(&self.capture(area)?))
    }
    /// Press and release a pointer button (1 left, 2 middle, 3 right, 4 and 5 the wheel) at
    /// a screen point, `count` times; returns once the display has taken the events.
    fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError>;
    /// Move the pointer to a screen point and press nothing (`hover`); returns once the
    /// display has taken the motion. Every display's [`Self::click`] moves its pointer device
    /// to the point before it presses, so a click of no press is that motion alone, through
    /// the same device (XTEST on X11, the virtual pointer on Wayland).
    fn hover(&self, x: i32, y: i32) -> Result<(), LinuxError> {
        self.click(x, y, 1, 0)
    }
    /// Whether the display's captures may show the pointer: an X server with a software
    /// cursor draws it into the frame buffer that captures read. The change evidence in
    /// pixels leaves the pointer's surroundings out where it may (docs/sight.md).
    fn captures_may_show_pointer(&self) -> bool {
        false
    }
    /// Press the modifier keysyms, press and release the key, release the modifiers; returns
    /// once the display has taken the events.
    fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError>;
    /// Send key steps in order; returns once the display has taken them. A chord after
    /// another by default; a display that prepares its keyboard for the keys (a Wayland
    /// keymap) does it once for the run.
    fn keys(&self, steps: &[KeyStep]) -> Result<(), LinuxError> {
        for KeyStep::Chord { mods, key } in steps {
            self.chord(mods, *key)?;
        }
        Ok(())
    }
    /// Publish `live` as the accessibility-bus address of the display (X11: the root window's
    /// `AT_SPI_BUS`, where Qt 5 looks first) when it has none or names another bus. Nothing on a
    /// display without such a property (Wayland).
    fn publish_a11y_bus(&self, _live: &str) -> Result<(), LinuxError> {
        Ok(())
    }
    /// The watch of redraws and window changes that settling waits on; `None` when the display
    /// has none (settling then compares pixels).
    /// How captures are taken, in words, and how many looks and captures were read from a
    /// stream so far, for a display with more than one way (KWin); `None`: it has one.
    fn captures(&self) -> Option<(String, u64)> {
        None
    }
    fn change_watch(&self) -> Option<Arc<dyn ChangeWatch>>;
    /// The person's input on a watched private desktop; `None` elsewhere.
    fn person_input(&self) -> Option<Arc<PersonInput>>;
}

/// Run display calls on a blocking thread (they wait on the display's server) and hand back
/// their result.
pub(crate) async fn run<T, F>(display: &Arc<dyn Display>, f: F) -> Result<T, LinuxError>
where
    T: Send + 'static,
    F: FnOnce(&dyn Display) -> Result<T, LinuxError> + Send + 'static,
{
    let d = Arc::clone(display);
    tokio::task::spawn_blocking(move || f(d.as_ref()))
        .await
        .map_err(|e| LinuxError::X11Request {
            what: "worker".into(),
            source: cause(e.to_string()),
        })?
}

/// How long [`activate`] waits for the window manager.
const ACTIVATE_WAIT: Duration = Duration::from_millis(1000);

/// Bring a window to the front and wait (bounded) until the window manager says it is active
/// (a window with a modal dialog hands the focus to the dialog: that counts).
pub(crate) async fn activate(display: &Arc<dyn Display>, id: WinId) -> Result<(), LinuxError> {
    if run(display, |d| d.active_window()).await? == Some(id) {
        return Ok(());
    }
    run(display, move |d| d.request_activate(id)).await?;
    let family: Vec<WinId> = run(display, |d| d.windows())
        .await?
        .iter()
        .filter(|w| w.id == id || w.transient_for == Some(id))
        .map(|w| w.id)
        .chain(std::iter::once(id))
        .collect();
    let deadline = Instant::now() + ACTIVATE_WAIT;
    while Instant::now() < deadline {
        let active = run(display, |d| d.active_window()).await?;
        if active.is_some_and(|a| family.contains(&a)) {
            // let the toolkit take the focus it was just given
            tokio::time::sleep(Duration::from_millis(30)).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(LinuxError::Timeout {
        what: format!("activating window {id}"),
        ms: ACTIVATE_WAIT.as_millis() as u64,
    })
}

/// The fingerprint of a window's pixels now (`None`: gone, placed nowhere, or unreadable).
pub(crate) async fn fingerprint_of(display: &Arc<dyn Display>, id: WinId) -> Option<u64> {
    run(display, move |d| {
        let w = d
            .window(id)?
            .ok_or_else(|| LinuxError::NoWindow(id.to_string()))?;
        let area = w.area.ok_or_else(|| position_unknown(&w))?;
        d.fingerprint(area)
    })
    .await
    .ok()
}

/// Wait until a window stops changing after an action, by its pixels: first a change (or
/// `time`), then two unchanged looks `poll` apart. `before` is the fingerprint taken before
/// the action.
pub(crate) async fn settle_pixels(
    display: &Arc<dyn Display>,
    id: WinId,
    before: Option<u64>,
    poll: Duration,
    time: Duration,
) {
    let Ok(w) = run(display, move |d| d.window(id)).await else {
        return;
    };
    // the window went away (closed by the action), or it is placed nowhere: nothing to wait for
    let Some(area) = w.and_then(|w| w.area) else {
        return;
    };
    let deadline = Instant::now() + time;
    let fp = move |d: &dyn Display| d.fingerprint(area);
    let mut last = match before {
        Some(b) => b,
        None => match run(display, fp).await {
            Ok(v) => v,
            Err(_) => return,
        },
    };
    let mut changed = false;
    let mut stable = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(poll).await;
        let Ok(now) = run(display, fp).await else {
            return;
        };
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

/// Whether a window is gone from the window list (a withdrawn window is not a client any
/// more); an error of the display counts as gone.
async fn window_gone(display: &Arc<dyn Display>, id: WinId) -> bool {
    run(display, |d| d.windows())
        .await
        .map(|ws| ws.iter().all(|w| w.id != id))
        .unwrap_or(true)
}

/// Close a window for good: ask it to close, and when it is still there after `grace` (an
/// application asking whether to save, or one that ignores the request), end its process
/// (SIGTERM, then SIGKILL; never this process). Returns once the window is gone, bounded.
pub(crate) async fn close_for_good(
    display: &Arc<dyn Display>,
    id: WinId,
    grace: Duration,
) -> Result<(), LinuxError> {
    let pid = run(display, move |d| d.window(id))
        .await?
        .and_then(|w| w.pid);
    run(display, move |d| d.request_close(id)).await?;
    for (wait, signal) in [
        (grace, Some("-TERM")),
        (Duration::from_secs(2), Some("-KILL")),
        (Duration::from_secs(2), None),
    ] {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if window_gone(display, id).await {
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
    if window_gone(display, id).await {
        Ok(())
    } else {
        Err(LinuxError::Timeout {
            what: format!("closing window {id}"),
            ms: (grace + Duration::from_secs(4)).as_millis() as u64,
        })
    }
}
