//! Windows known by a stream of their own (docs/desktop.md, "GNOME"): on a private GNOME
//! desktop a window that is not maximized (a dialog) has no known place on the monitor, but
//! Mutter records one window in a stream of its own (`RecordWindow`), whose pointer motion is
//! relative to the window: to its buffer on Mutter 43, as its frames show it (the window
//! inside its shadow, found by [`window_origin`]), so GTK's window-relative AT-SPI extents
//! plus the window's corner in the frame are where to point. The display
//! gives such a window a place of its own outside the monitor ([`stream_area`]), one slot per
//! window, so that the layers above (which work in screen pixels: the window's place plus its
//! relative extents) need nothing new: a point or rectangle there is the window's, and goes
//! to its stream ([`in_streams`], [`relative`]).
//!
//! The streams ([`Casts`]) are opened when a coordinate or the window's pixels are first
//! needed, kept while the window is listed, at most [`MOST`] at once (the oldest ends first),
//! and each with its own remote-desktop session (Mutter 43 links one ScreenCast session to a
//! remote-desktop session and starts no stream added after `Start`). The calls are in
//! `super`; the arithmetic here is pure.

use std::sync::{Arc, Mutex};

use ufo_core::Rect;

use crate::display::WinId;

/// Where the first slot of the windows known by their stream begins: far right of any
/// monitor (a point there is on no monitor).
pub(crate) const STREAM_X: i32 = 1 << 16;
/// The width of one window's slot (wider than any window: a window stream is the monitor's
/// size).
pub(crate) const SLOT: i32 = 1 << 13;
/// How many slots there are (window ids wrap around them).
const SLOTS: u32 = 64;
/// Most window streams open at once, each with its remote-desktop session and PipeWire
/// connection.
pub(crate) const MOST: usize = 4;

/// The place of window `id`, of `size`, known by its stream: the top-left corner of its slot.
pub(crate) fn stream_area(id: WinId, size: (i32, i32)) -> Rect {
    let slot = (id.0 % SLOTS) as i32;
    Rect::new(
        STREAM_X + slot * SLOT,
        0,
        size.0.max(0) as u32,
        size.1.max(0) as u32,
    )
}

/// The monitor `screen` and every slot: where a window may lie on a display with streams.
pub(crate) fn placeable(screen: Rect) -> Rect {
    let right = STREAM_X + SLOTS as i32 * SLOT;
    Rect::new(0, 0, right as u32, screen.h)
}

/// Whether a point lies among the slots of windows known by their stream.
pub(crate) fn in_streams(x: i32) -> bool {
    x >= STREAM_X
}

/// A point of the window placed at `area` in its own coordinates (its stream's).
pub(crate) fn relative(area: Rect, x: i32, y: i32) -> (i32, i32) {
    (x - area.x, y - area.y)
}

/// A rectangle of the window placed at `area` in its own coordinates.
pub(crate) fn relative_rect(area: Rect, r: Rect) -> Rect {
    let (x, y) = relative(area, r.x, r.y);
    Rect::new(x, y, r.w, r.h)
}

/// Whether `area` of the window placed at `place` lies inside it.
pub(crate) fn holds(place: Rect, x: i32, y: i32) -> bool {
    x >= place.x && y >= place.y && x < place.x + place.w as i32 && y < place.y + place.h as i32
}

/// Most pixels a window's translucent border takes off its opaque box, both sides together.
const BORDER_MOST: i32 = 4;

/// Where a window of `size` lies in its stream's frame (`width`×`height`, 4 bytes a pixel,
/// the fourth its alpha): Mutter draws the window's whole buffer at the frame's corner, the
/// toolkit's shadow around the window (GTK 4's "Save Changes?" dialog lay 66,55 in), and
/// places the stream's pointer in the same buffer (measured on Mutter 43.8). The shadow is translucent and the
/// window opaque, so the window is the box of opaque pixels; a translucent edge of the window
/// (a border, at most [`BORDER_MOST`] pixels) is taken off evenly on both sides. `None`: no
/// opaque pixel.
#[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
pub(crate) fn window_origin(
    pixels: &[u8],
    width: u32,
    height: u32,
    size: (u32, u32),
) -> Option<(i32, i32)> {
    let b = opaque_box(pixels, width, height)?;
    // a border is a pixel or two; a larger difference is a window cut off (a short frame)
    let border = |want: u32, got: u32| {
        let d = want as i32 - got as i32;
        if (0..=BORDER_MOST).contains(&d) {
            d / 2
        } else {
            0
        }
    };
    let (dx, dy) = (border(size.0, b.w), border(size.1, b.h));
    Some(((b.x - dx).max(0), (b.y - dy).max(0)))
}

/// The box of opaque pixels of a frame (`None`: none is opaque).
#[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
pub(crate) fn opaque_box(pixels: &[u8], width: u32, height: u32) -> Option<Rect> {
    let (w, h) = (width as usize, height as usize);
    let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0usize, 0usize);
    for (y, row) in pixels.chunks_exact(w * 4).take(h).enumerate() {
        let mut first = None;
        let mut last = None;
        for (x, px) in row.chunks_exact(4).enumerate() {
            if px[3] == 255 {
                first.get_or_insert(x);
                last = Some(x);
            }
        }
        if let (Some(f), Some(l)) = (first, last) {
            x0 = x0.min(f);
            x1 = x1.max(l);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
    }
    (x0 != usize::MAX).then(|| {
        Rect::new(
            x0 as i32,
            y0 as i32,
            (x1 - x0 + 1) as u32,
            (y1 - y0 + 1) as u32,
        )
    })
}

/// Whether a stream's opaque box is a window of `size` (its border aside): a stream of
/// another window (the focus moved while it was made) is not taken for this one.
#[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
pub(crate) fn shows_size(opaque: Rect, size: (u32, u32)) -> bool {
    let near = |want: u32, got: u32| (0..=BORDER_MOST).contains(&(want as i32 - got as i32));
    near(size.0, opaque.w) && near(size.1, opaque.h)
}

/// One window's stream: its remote-desktop session (`R`) and the PipeWire stream (`S`) read
/// for captures.
pub(crate) struct Cast<R, S> {
    pub(crate) id: WinId,
    pub(crate) remote: Arc<R>,
    pub(crate) stream: Arc<S>,
}

impl<R, S> Clone for Cast<R, S> {
    fn clone(&self) -> Self {
        Cast {
            id: self.id,
            remote: Arc::clone(&self.remote),
            stream: Arc::clone(&self.stream),
        }
    }
}

/// The window streams open, at most [`MOST`].
pub(crate) struct Casts<R, S> {
    open: Mutex<Vec<Cast<R, S>>>,
}

impl<R, S> Default for Casts<R, S> {
    fn default() -> Self {
        Casts {
            open: Mutex::new(Vec::new()),
        }
    }
}

impl<R, S> Casts<R, S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Cast<R, S>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stream of window `id`, if open.
    pub(crate) fn get(&self, id: WinId) -> Option<Cast<R, S>> {
        self.lock().iter().find(|c| c.id == id).cloned()
    }

    /// Keep `cast`; the casts it pushes out (the same window's old one, the oldest beyond
    /// [`MOST`]) are handed back to be ended.
    pub(crate) fn add(&self, cast: Cast<R, S>) -> Vec<Cast<R, S>> {
        let mut open = self.lock();
        let mut out: Vec<Cast<R, S>> = Vec::new();
        if let Some(i) = open.iter().position(|c| c.id == cast.id) {
            out.push(open.remove(i));
        }
        open.push(cast);
        while open.len() > MOST {
            out.push(open.remove(0));
        }
        out
    }

    /// Drop the stream of window `id` (it ended); handed back to be ended.
    pub(crate) fn remove(&self, id: WinId) -> Option<Cast<R, S>> {
        let mut open = self.lock();
        let i = open.iter().position(|c| c.id == id)?;
        Some(open.remove(i))
    }

    /// Keep only the streams of windows among `alive`; the others are handed back.
    pub(crate) fn keep_only(&self, alive: &[WinId]) -> Vec<Cast<R, S>> {
        let mut open = self.lock();
        let (keep, gone): (Vec<_>, Vec<_>) = open.drain(..).partition(|c| alive.contains(&c.id));
        *open = keep;
        gone
    }

    /// All of them, handed back (the display ends).
    pub(crate) fn take_all(&self) -> Vec<Cast<R, S>> {
        self.lock().drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_known_by_its_stream_has_a_slot_off_the_monitor_and_points_map_back() {
        let a = stream_area(WinId(3), (382, 276));
        assert_eq!(a, Rect::new(STREAM_X + 3 * SLOT, 0, 382, 276));
        assert!(
            in_streams(a.x) && !in_streams(1279),
            "a monitor's point is no slot's"
        );
        // a control at (14, 242) of the window, its centre clicked
        let c = Rect::new(a.x + 14, a.y + 242, 100, 24);
        assert_eq!(relative(a, c.x + 50, c.y + 12), (64, 254));
        assert_eq!(relative_rect(a, c), Rect::new(14, 242, 100, 24));
        assert!(holds(a, a.x, a.y) && holds(a, a.x + 381, 275));
        assert!(!holds(a, a.x + 382, 0) && !holds(a, a.x - 1, 0));
        // windows of neighbouring ids lie apart: no window is wider than a slot
        let b = stream_area(WinId(4), (1280, 800));
        assert!(b.x >= a.x + SLOT && SLOT as u32 > 1280 * 4);
        // ids wrap around the slots, and every slot stays in range
        assert_eq!(stream_area(WinId(67), (1, 1)).x, a.x);
        assert!(stream_area(WinId(u32::MAX), (8000, 8000))
            .x
            .checked_add(8000)
            .is_some());
        assert_eq!(
            stream_area(WinId(1), (-5, 10)).w,
            0,
            "a negative size is empty"
        );
        let all = placeable(Rect::new(0, 0, 1280, 800));
        let last = stream_area(WinId(63), (1280, 800));
        assert!(all.x == 0 && all.h == 800 && last.x + last.w as i32 <= all.w as i32);
    }

    /// A frame of `w`×`h` with a translucent shadow and an opaque window of `ww`×`wh` at
    /// (`x`, `y`).
    fn frame(w: usize, h: usize, x: usize, y: usize, ww: usize, wh: usize) -> Vec<u8> {
        let mut px = vec![0u8; w * h * 4];
        for yy in 0..h {
            for xx in 0..w {
                let i = (yy * w + xx) * 4;
                let inside = xx >= x && xx < x + ww && yy >= y && yy < y + wh;
                px[i + 3] = if inside { 255 } else { 40 };
                if inside {
                    px[i..i + 3].copy_from_slice(&[250, 250, 250]);
                }
            }
        }
        px
    }

    #[test]
    fn a_window_is_found_inside_its_shadow_in_its_streams_frame() {
        let px = frame(64, 48, 9, 7, 30, 20);
        assert_eq!(window_origin(&px, 64, 48, (30, 20)), Some((9, 7)));
        // a translucent one-pixel border: the opaque box is 2 smaller
        assert_eq!(window_origin(&px, 64, 48, (32, 22)), Some((8, 6)));
        assert_eq!(
            window_origin(&vec![0u8; 64 * 48 * 4], 64, 48, (30, 20)),
            None
        );
        assert_eq!(opaque_box(&px, 64, 48), Some(Rect::new(9, 7, 30, 20)));
        assert!(shows_size(Rect::new(9, 7, 30, 20), (30, 20)));
        assert!(shows_size(Rect::new(9, 7, 30, 20), (32, 22)), "a border");
        assert!(
            !shows_size(Rect::new(9, 7, 30, 20), (1280, 768)),
            "another window"
        );
        assert!(
            !shows_size(Rect::new(9, 7, 30, 20), (28, 20)),
            "a larger one"
        );
        // a short buffer is read as far as it goes
        assert_eq!(
            window_origin(&px[..64 * 4 * 10], 64, 48, (30, 20)),
            Some((9, 7))
        );
    }

    fn cast(id: u32) -> Cast<(), ()> {
        Cast {
            id: WinId(id),
            remote: Arc::new(()),
            stream: Arc::new(()),
        }
    }

    #[test]
    fn streams_are_bounded_replaced_per_window_and_dropped_with_their_windows() {
        let casts = Casts::default();
        for id in 1..=MOST as u32 {
            assert!(casts.add(cast(id)).is_empty());
        }
        let out = casts.add(cast(99));
        assert_eq!(
            out.iter().map(|c| c.id).collect::<Vec<_>>(),
            [WinId(1)],
            "the oldest"
        );
        assert!(casts.get(WinId(1)).is_none() && casts.get(WinId(99)).is_some());
        let out = casts.add(cast(99));
        assert_eq!(out.len(), 1, "the same window's old stream is ended");
        let gone = casts.keep_only(&[WinId(2), WinId(99)]);
        let mut gone: Vec<u32> = gone.iter().map(|c| c.id.0).collect();
        gone.sort_unstable();
        assert_eq!(gone, [3, 4]);
        assert!(casts.remove(WinId(2)).is_some() && casts.remove(WinId(2)).is_none());
        assert_eq!(casts.take_all().len(), 1);
        assert!(casts.get(WinId(99)).is_none());
    }
}
