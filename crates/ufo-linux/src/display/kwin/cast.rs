//! KWin's looks from its screencast (docs/desktop.md, "KWin"): a window streamed over
//! PipeWire (`zkde_screencast_unstable_v1.stream_window`, granted like fake input), its last
//! frame read for each look instead of a ScreenShot2 call (which waits for KWin's next
//! repaint, then reads the image back: 11–31 ms).
//!
//! Why windows and not the output: KWin 5.27 sends an output's frames when its backend reports
//! a presented frame, which the virtual backend (headless sessions, the tests) never does; a
//! window's stream sends a frame on each of the window's own redraws, on every backend.
//! A window's stream holds the window alone: a look or capture is read from it only when the
//! area lies inside the window, and a capture (what the model sees) only when no other window
//! (a menu, a dialog) lies over the area; else ScreenShot2. The frame's redraws are reported
//! to the change watch once the frame is kept (`super::watch`), so a look never reads a frame
//! older than a redraw the watch reported. Scale 1 only: the frame must be the window's size.
//!
//! Built with the `pipewire` feature; without it, without a PipeWire daemon, or when KWin
//! refuses, captures go through ScreenShot2 ([`Path`] says which and why).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use ufo_core::Rect;

use super::watch::Watch;
use crate::display::WinId;

/// Longest a look waits for a new stream's first frame (KWin redraws the window for it at
/// once) before it takes ScreenShot2's.
#[cfg(feature = "pipewire")]
pub(crate) const FIRST_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// The environment switch that keeps captures on ScreenShot2 (`UFO_KWIN_CAPTURE=screenshot`):
/// to compare both paths in one run (the Wayland bench).
pub(crate) const SWITCH: &str = "UFO_KWIN_CAPTURE";

/// How a KWin display captures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Path {
    /// Looks at a window from its screencast, the rest through ScreenShot2.
    Screencast,
    /// Through ScreenShot2 only, and why not from the screencast.
    ScreenShot2 { why: String },
}

impl Path {
    /// In words, for `ufo doctor` and the log.
    pub(crate) fn describe(&self) -> String {
        match self {
            Path::Screencast => "KWin's screencast of each watched window (PipeWire): a look \
                                 reads the window's last frame; ScreenShot2 for the rest"
                .into(),
            Path::ScreenShot2 { why } => format!(
                "ScreenShot2 (a look waits for KWin's next repaint, 11–31 ms), because {why}"
            ),
        }
    }
}

/// Whether the switch keeps captures on ScreenShot2.
fn switched_off() -> bool {
    std::env::var(SWITCH).is_ok_and(|v| v == "screenshot")
}

/// How captures will be taken, before any stream is asked for: whether this ufo has PipeWire,
/// the switch, KWin's offer of its screencast.
pub(crate) fn path(offered: bool) -> Path {
    let why = if !cfg!(feature = "pipewire") {
        "this ufo was built without the `pipewire` feature (build it with `--features \
         pipewire`; needs libpipewire-0.3-dev, libclang and pkg-config)"
    } else if switched_off() {
        "UFO_KWIN_CAPTURE=screenshot is set"
    } else if !offered {
        "KWin does not offer zkde_screencast_unstable_v1 to this program (its .desktop grant \
         lacks it: `ufo doctor` shows the file)"
    } else {
        return Path::Screencast;
    };
    Path::ScreenShot2 { why: why.into() }
}

/// Where a window's frame lies on the screen: its top-left corner, when the frame is the size
/// of the window's client area or of its whole frame (`None`: neither, e.g. a scale other
/// than 1, or a resize the stream has not caught up with).
// (read by the streams, built with `pipewire`; tested either way)
#[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
pub(crate) fn placement(
    size: (u32, u32),
    client: Option<Rect>,
    frame: Option<Rect>,
) -> Option<(i32, i32)> {
    [client, frame]
        .into_iter()
        .flatten()
        .find(|r| (r.w, r.h) == size)
        .map(|r| (r.x, r.y))
}

/// Whether `outer` holds all of `inner`.
pub(crate) fn covers(outer: Rect, inner: Rect) -> bool {
    inner.x >= outer.x
        && inner.y >= outer.y
        && i64::from(inner.x) + i64::from(inner.w) <= i64::from(outer.x) + i64::from(outer.w)
        && i64::from(inner.y) + i64::from(inner.h) <= i64::from(outer.y) + i64::from(outer.h)
}

/// Whether two rectangles share a pixel.
pub(crate) fn overlap(a: Rect, b: Rect) -> bool {
    i64::from(a.x) < i64::from(b.x) + i64::from(b.w)
        && i64::from(b.x) < i64::from(a.x) + i64::from(a.w)
        && i64::from(a.y) < i64::from(b.y) + i64::from(b.h)
        && i64::from(b.y) < i64::from(a.y) + i64::from(a.h)
}

#[cfg(feature = "pipewire")]
pub(crate) use crate::display::pipewire::VideoStream;

/// Stand-in without PipeWire: never made.
#[cfg(not(feature = "pipewire"))]
pub(crate) enum VideoStream {}

/// `area` (on the screen) read from the last frame of a window's stream, the window's client
/// area and frame placing it (`None`: no frame yet, a frame of another size, or an area not
/// all inside the frame).
#[cfg(feature = "pipewire")]
pub(crate) fn read(
    s: &VideoStream,
    area: Rect,
    client: Option<Rect>,
    frame: Option<Rect>,
) -> Option<(Rect, Vec<u8>)> {
    let f = s.first(FIRST_WAIT)?;
    let (ox, oy) = placement((f.width, f.height), client, frame)?;
    let local = Rect::new(area.x - ox, area.y - oy, area.w, area.h);
    let (r, rows) = f.cut(local)?;
    (r == local).then(|| (Rect::new(r.x + ox, r.y + oy, r.w, r.h), rows))
}

/// Stand-in without PipeWire: never called.
#[cfg(not(feature = "pipewire"))]
pub(crate) fn read(
    s: &VideoStream,
    _area: Rect,
    _client: Option<Rect>,
    _frame: Option<Rect>,
) -> Option<(Rect, Vec<u8>)> {
    match *s {}
}

/// A window's stream, or KWin's refusal of one (not asked again).
enum Slot {
    Streaming(Arc<VideoStream>),
    Refused,
}

/// The windows' streams of a display.
pub(crate) struct Casts {
    path: Path,
    slots: Mutex<HashMap<WinId, Slot>>,
    watch: Option<Weak<Watch>>,
    /// looks and captures read from streams so far
    served: AtomicU64,
}

impl Casts {
    /// The streams of a display that captures by `path`, reporting frames to `watch`.
    pub(crate) fn new(path: Path, watch: Option<&Arc<Watch>>) -> Casts {
        Casts {
            path,
            slots: Mutex::default(),
            watch: watch.map(Arc::downgrade),
            served: AtomicU64::new(0),
        }
    }

    /// How captures are taken.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// How many looks and captures were read from streams so far.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// One more read from a stream.
    pub(crate) fn count_served(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WinId, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Window `id`'s stream: the one kept, else one made now from the node `ask` gets from
    /// KWin (`None`: the screencast is off, or KWin refused it).
    pub(crate) fn stream(
        &self,
        id: WinId,
        ask: impl FnOnce() -> Result<Option<u32>, crate::LinuxError>,
    ) -> Option<Arc<VideoStream>> {
        if self.path != Path::Screencast {
            return None;
        }
        if let Some(slot) = self.lock().get_mut(&id) {
            return match slot {
                Slot::Streaming(s) if stream_alive(s) => Some(Arc::clone(s)),
                // KWin ended it: the script reports the window's redraws again; not asked again
                Slot::Streaming(_) => {
                    *slot = Slot::Refused;
                    if let Some(w) = self.watch.as_ref().and_then(Weak::upgrade) {
                        w.set_streamed(id, false);
                    }
                    None
                }
                Slot::Refused => None,
            };
        }
        let made = self.start(id, ask);
        let slot = match &made {
            Some(s) => Slot::Streaming(Arc::clone(s)),
            None => Slot::Refused,
        };
        self.lock().insert(id, slot);
        made
    }

    /// Forget the streams of windows that are gone (their streams ended).
    pub(crate) fn keep_only(&self, alive: &[WinId]) {
        let watch = self.watch.as_ref().and_then(Weak::upgrade);
        self.lock().retain(|id, _| {
            let keep = alive.contains(id);
            if let (false, Some(w)) = (keep, &watch) {
                w.set_streamed(*id, false);
            }
            keep
        });
    }

    #[cfg(feature = "pipewire")]
    fn start(
        &self,
        id: WinId,
        ask: impl FnOnce() -> Result<Option<u32>, crate::LinuxError>,
    ) -> Option<Arc<VideoStream>> {
        let node = match ask() {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!("no screencast of window {id}: {e}");
                return None;
            }
        };
        let watch = self.watch.clone();
        // the first frame is KWin's full redraw on starting the stream, not the program's
        let on_frame = Box::new(move |seq: u64, changed: bool| {
            if let (true, Some(w)) = (seq > 1 && changed, watch.as_ref().and_then(Weak::upgrade)) {
                w.streamed_redraw(id);
            }
        });
        match VideoStream::connect(node, on_frame) {
            Ok(s) => {
                if let Some(w) = self.watch.as_ref().and_then(Weak::upgrade) {
                    w.set_streamed(id, true);
                }
                tracing::debug!(node, "window {id} streams");
                Some(Arc::new(s))
            }
            Err(e) => {
                tracing::warn!("no screencast of window {id}: {e}");
                None
            }
        }
    }

    #[cfg(not(feature = "pipewire"))]
    fn start(
        &self,
        _id: WinId,
        _ask: impl FnOnce() -> Result<Option<u32>, crate::LinuxError>,
    ) -> Option<Arc<VideoStream>> {
        None
    }
}

#[cfg(feature = "pipewire")]
fn stream_alive(s: &VideoStream) -> bool {
    s.ended().is_none()
}

#[cfg(not(feature = "pipewire"))]
fn stream_alive(s: &VideoStream) -> bool {
    match *s {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_placed_by_the_size_it_has() {
        let client = Rect::new(105, 140, 400, 500);
        let frame = Rect::new(100, 110, 410, 535);
        assert_eq!(
            placement((400, 500), Some(client), Some(frame)),
            Some((105, 140))
        );
        assert_eq!(
            placement((410, 535), Some(client), Some(frame)),
            Some((100, 110))
        );
        // scaled, or resized since
        assert_eq!(placement((800, 1000), Some(client), Some(frame)), None);
        assert_eq!(placement((400, 500), None, None), None);
    }

    #[test]
    fn areas_are_inside_or_over_windows() {
        let w = Rect::new(10, 10, 100, 100);
        assert!(covers(w, Rect::new(10, 10, 100, 100)));
        assert!(covers(w, Rect::new(50, 50, 10, 10)));
        assert!(!covers(w, Rect::new(50, 50, 61, 10)));
        assert!(!covers(w, Rect::new(9, 50, 5, 5)));
        assert!(overlap(w, Rect::new(109, 109, 5, 5)));
        assert!(!overlap(w, Rect::new(110, 10, 5, 5)), "edges touch only");
    }

    #[test]
    fn the_path_says_why_captures_are_screenshot2s() {
        if cfg!(feature = "pipewire") {
            assert_eq!(path(true), Path::Screencast);
            assert!(path(false)
                .describe()
                .contains("zkde_screencast_unstable_v1"));
        } else {
            assert!(path(true).describe().contains("--features pipewire"));
        }
    }

    #[test]
    fn no_stream_is_made_when_the_path_is_screenshot2() {
        let casts = Casts::new(Path::ScreenShot2 { why: "test".into() }, None);
        let asked = std::cell::Cell::new(false);
        let got = casts.stream(WinId(1), || {
            asked.set(true);
            Ok(Some(7))
        });
        assert!(got.is_none() && !asked.get());
        assert_eq!(casts.served(), 0);
    }
}
