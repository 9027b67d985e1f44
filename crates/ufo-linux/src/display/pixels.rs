//! Pixels, display-free: an RGB capture ([`RgbImage`]), the raw pixels of a look at a window
//! and where two looks differ ([`Look::changed_regions`], what settling compares), a cheap
//! fingerprint of a capture, and the rectangle arithmetic the observation and settling share.
//! Every display fills these types; nothing here asks a display anything.

use std::sync::Mutex;

use ufo_core::Rect;

/// An RGB image (a capture of a screen rectangle).
#[derive(Clone)]
pub(crate) struct RgbImage {
    pub width: u32,
    pub height: u32,
    /// Row-major RGB, 3 bytes a pixel.
    pub data: Vec<u8>,
}

impl RgbImage {
    /// The RGB image of BGRX rows (4 bytes a pixel, no padding between rows) lying at `r`,
    /// as the Wayland displays read the screen.
    pub(crate) fn from_bgrx(r: Rect, bgrx: &[u8]) -> RgbImage {
        let mut data = Vec::with_capacity(bgrx.len() / 4 * 3);
        for px in bgrx.chunks_exact(4) {
            data.extend_from_slice(&[px[2], px[1], px[0]]);
        }
        RgbImage {
            width: r.w,
            height: r.h,
            data,
        }
    }
}

/// A cheap fingerprint of a capture (to see whether it changed): FNV-1a over every 7th byte
/// is plenty to notice a redraw.
pub(crate) fn fingerprint(img: &RgbImage) -> u64 {
    fingerprint_bytes(&img.data)
}

/// The fingerprint of raw pixel bytes (a display's own format, compared only with its own).
pub(crate) fn fingerprint_bytes(data: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data.iter().step_by(7) {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Most pixel buffers kept for reuse ([`pixel_buffer`]): a settle's last look and the one
/// before it, the look kept between steps, and a capture's.
const SPARE_MAX: usize = 4;
/// Smallest buffer worth keeping (a look at a small popup is cheap to allocate anew).
const SPARE_MIN: usize = 64 * 1024;
/// Most bytes kept in all (a look at a whole 4K screen is 33 MB).
const SPARE_BYTES: usize = 64 * 1024 * 1024;

/// Pixel buffers no longer held, for the next read of a window's pixels. A look at a
/// LibreOffice window holds ~4 MB, and a buffer that size fresh from the allocator is mapped
/// by the kernel page by page as the read fills it: in a profile of a Calc session (six cell
/// entries, release build) the pixels' reads took 17 % of ufo's CPU time, most of it those
/// page faults and the copy behind them. A buffer used before has its pages mapped: with them
/// kept, a look at Calc's window while an entry settles took 3.0 ms p50 instead of 3.8 (p90
/// 4.9 instead of 8.6), and a session made 17–20 thousand page faults instead of 24–31
/// (docs/desktop.md).
struct Spare(Mutex<Vec<Vec<u8>>>);

impl Spare {
    const fn new() -> Spare {
        Spare(Mutex::new(Vec::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // a panic while holding the lock leaves plain buffers behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An empty buffer with room for `len` bytes: a kept one when one is big enough, else a
    /// new one.
    fn take(&self, len: usize) -> Vec<u8> {
        let found = {
            let mut pool = self.lock();
            let i = pool.iter().position(|b| b.capacity() >= len);
            i.map(|i| pool.swap_remove(i))
        };
        match found {
            Some(mut b) => {
                b.clear();
                b
            }
            None => Vec::with_capacity(len),
        }
    }

    /// Keep `buf` for a later [`Spare::take`] (at most [`SPARE_MAX`] buffers and
    /// [`SPARE_BYTES`] in all; small ones are let go).
    fn keep(&self, buf: Vec<u8>) {
        if buf.capacity() < SPARE_MIN {
            return;
        }
        let mut pool = self.lock();
        let held: usize = pool.iter().map(Vec::capacity).sum();
        if pool.len() < SPARE_MAX && held + buf.capacity() <= SPARE_BYTES {
            pool.push(buf);
        }
    }
}

/// The process's spare pixel buffers: looks give theirs back when dropped.
static SPARE: Spare = Spare::new();

/// An empty buffer with room for `len` bytes, its pages mapped when one used before is free
/// ([`give_back`]).
pub(crate) fn pixel_buffer(len: usize) -> Vec<u8> {
    SPARE.take(len)
}

/// Keep a pixel buffer no longer needed for the next [`pixel_buffer`] (bounded).
pub(crate) fn give_back(buf: Vec<u8>) {
    SPARE.keep(buf);
}

/// The raw pixels (32 bits each) of a screen rectangle at one moment.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Look {
    x: i32,
    y: i32,
    w: usize,
    h: usize,
    stride: usize,
    data: Vec<u8>,
}

impl Clone for Look {
    fn clone(&self) -> Look {
        let mut data = pixel_buffer(self.data.len());
        data.extend_from_slice(&self.data);
        Look {
            x: self.x,
            y: self.y,
            w: self.w,
            h: self.h,
            stride: self.stride,
            data,
        }
    }
}

impl Drop for Look {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.data));
    }
}

/// The bounds (x0, y0, x1, y1) of the changed pixels of one tile, in look coordinates.
type Bounds = (usize, usize, usize, usize);

impl Look {
    /// A look at the `w`×`h` pixels at screen (`x`, `y`): rows of `stride` bytes, 4 bytes a
    /// pixel (the fourth is padding).
    pub(crate) fn new(x: i32, y: i32, w: usize, h: usize, stride: usize, data: Vec<u8>) -> Look {
        Look {
            x,
            y,
            w,
            h,
            stride,
            data,
        }
    }

    /// A look at BGRX rows (no padding between rows) lying at `r`.
    pub(crate) fn from_bgrx((r, bgrx): (Rect, Vec<u8>)) -> Look {
        Look::new(r.x, r.y, r.w as usize, r.h as usize, r.w as usize * 4, bgrx)
    }

    /// Where `self` and `other` differ: one screen rectangle per group of changed pixels
    /// (pixels in neighbouring [`TILE`]-pixel tiles form one group, each given by the
    /// smallest rectangle holding its pixels), leaving out the pixels inside `masks` (screen
    /// rectangles); empty when nothing outside them differs. Two looks of different
    /// rectangles differ everywhere. Apart, a blinking caret and a fading button are two
    /// groups, so the caret can be told apart from a change that matters.
    pub fn changed_regions(&self, other: &Look, masks: &[Rect]) -> Vec<Rect> {
        if (self.x, self.y, self.w, self.h) != (other.x, other.y, other.w, other.h) {
            return vec![Rect::new(other.x, other.y, other.w as u32, other.h as u32)];
        }
        let tw = self.w.div_ceil(TILE);
        let tiles = self.changed_tiles(other, masks, tw);
        tile_groups(&tiles, tw)
            .into_iter()
            .map(|(x0, y0, x1, y1)| {
                Rect::new(
                    self.x + x0 as i32,
                    self.y + y0 as i32,
                    (x1 - x0 + 1) as u32,
                    (y1 - y0 + 1) as u32,
                )
            })
            .collect()
    }

    /// A step of [`Self::changed_regions`]: per tile (`tw` tiles a row), the bounds of its
    /// pixels that differ between the two looks outside `masks`.
    fn changed_tiles(&self, other: &Look, masks: &[Rect], tw: usize) -> Vec<Option<Bounds>> {
        let masked = |sx: i32, sy: i32| {
            masks
                .iter()
                .any(|m| sx >= m.x && sx < m.x + m.w as i32 && sy >= m.y && sy < m.y + m.h as i32)
        };
        let th = self.h.div_ceil(TILE);
        let mut tiles: Vec<Option<Bounds>> = vec![None; tw * th];
        for row in 0..self.h {
            let at = row * self.stride;
            let (a, b) = (
                self.data.get(at..at + self.w * 4),
                other.data.get(at..at + self.w * 4),
            );
            let (Some(a), Some(b)) = (a, b) else { break };
            // (whole rows compare as memory first: most rows did not change)
            if a == b {
                continue;
            }
            let sy = self.y + row as i32;
            for (col, (p, q)) in a.chunks_exact(4).zip(b.chunks_exact(4)).enumerate() {
                // the fourth byte is padding
                if p[..3] != q[..3] && !masked(self.x + col as i32, sy) {
                    let t = &mut tiles[(row / TILE) * tw + col / TILE];
                    *t = Some(match *t {
                        None => (col, row, col, row),
                        Some((x0, y0, x1, y1)) => {
                            (x0.min(col), y0.min(row), x1.max(col), y1.max(row))
                        }
                    });
                }
            }
        }
        tiles
    }
}

/// A step of [`Look::changed_regions`]: the groups of neighbouring changed tiles
/// (8-neighbourhood) of a grid `tw` tiles wide, each as the bounds of its changed pixels.
fn tile_groups(tiles: &[Option<Bounds>], tw: usize) -> Vec<Bounds> {
    let th = tiles.len() / tw.max(1);
    let mut groups = Vec::new();
    let mut seen = vec![false; tiles.len()];
    for start in 0..tiles.len() {
        if seen[start] || tiles[start].is_none() {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![start];
        let mut bounds = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = stack.pop() {
            if let Some((x0, y0, x1, y1)) = tiles[i] {
                bounds = (
                    bounds.0.min(x0),
                    bounds.1.min(y0),
                    bounds.2.max(x1),
                    bounds.3.max(y1),
                );
            }
            let (tx, ty) = ((i % tw) as isize, (i / tw) as isize);
            for (dx, dy) in NEIGHBOURS {
                let (nx, ny) = (tx + dx, ty + dy);
                if nx < 0 || ny < 0 || nx >= tw as isize || ny >= th as isize {
                    continue;
                }
                let n = ny as usize * tw + nx as usize;
                if !seen[n] && tiles[n].is_some() {
                    seen[n] = true;
                    stack.push(n);
                }
            }
        }
        groups.push(bounds);
    }
    groups
}

/// The eight neighbours of a tile.
const NEIGHBOURS: [(isize, isize); 8] = [
    (-1, -1),
    (0, -1),
    (1, -1),
    (-1, 0),
    (1, 0),
    (-1, 1),
    (0, 1),
    (1, 1),
];

/// The side of the square tiles [`Look::changed_regions`] groups changed pixels by: changes
/// this close (a glyph's strokes, a button's label and border) are one region.
const TILE: usize = 16;

pub(crate) fn intersect(a: Rect, b: Rect) -> Option<Rect> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.w as i32).min(b.x + b.w as i32);
    let y1 = (a.y + a.h as i32).min(b.y + b.h as i32);
    (x1 > x0 && y1 > y0).then(|| Rect {
        x: x0,
        y: y0,
        w: (x1 - x0) as u32,
        h: (y1 - y0) as u32,
    })
}

/// The smallest rectangle holding all of `rs` (`None` when there are none).
pub(crate) fn union(rs: impl IntoIterator<Item = Rect>) -> Option<Rect> {
    rs.into_iter().reduce(|a, b| {
        let (x0, y0) = (a.x.min(b.x), a.y.min(b.y));
        let x1 = (a.x + a.w as i32).max(b.x + b.w as i32);
        let y1 = (a.y + a.h as i32).max(b.y + b.h as i32);
        Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32)
    })
}

/// Whether a changed rectangle is a text caret blinking (a line at most 2 pixels wide and
/// at most 60 high): toolkits fade it in and out at frame rate for half a second (GTK 4) or
/// flip it twice a second, and it says nothing about what an action did.
pub(crate) fn is_caret(r: &Rect) -> bool {
    r.w <= 2 && r.h <= 60
}

#[cfg(test)]
mod look_tests {
    use super::*;

    fn look(w: usize, h: usize) -> Look {
        Look {
            x: 100,
            y: 50,
            w,
            h,
            stride: w * 4,
            data: vec![0; w * h * 4],
        }
    }

    /// A buffer kept serves the next read of as many bytes or fewer (its pages mapped
    /// already); small buffers are not kept, nor more than a few.
    #[test]
    fn a_buffer_let_go_serves_the_next_read() {
        let spare = Spare::new();
        let big = vec![7u8; SPARE_MIN * 2];
        let at = big.as_ptr();
        spare.keep(big);
        let again = spare.take(SPARE_MIN);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty() && again.capacity() >= SPARE_MIN * 2);
        // none kept big enough: a new one
        spare.keep(again);
        let bigger = spare.take(SPARE_MIN * 3);
        assert_ne!(bigger.as_ptr(), at);
        assert!(bigger.capacity() >= SPARE_MIN * 3);
        // the small are let go, and the pool is bounded
        spare.keep(Vec::with_capacity(16));
        for _ in 0..SPARE_MAX + 2 {
            spare.keep(Vec::with_capacity(SPARE_MIN));
        }
        assert_eq!(spare.lock().len(), SPARE_MAX);
        assert!(spare.lock().iter().all(|b| b.capacity() >= SPARE_MIN));
        // and bounded in bytes
        let spare = Spare::new();
        spare.keep(Vec::with_capacity(SPARE_BYTES - SPARE_MIN));
        spare.keep(Vec::with_capacity(SPARE_MIN * 2));
        assert_eq!(spare.lock().len(), 1);
    }

    /// A copy of a look is the same look, in a buffer of its own.
    #[test]
    fn a_copied_look_is_the_same_look() {
        let mut a = look(300, 200);
        set(&mut a, 5, 7);
        let b = a.clone();
        assert_eq!(a, b);
        assert_ne!(a.data.as_ptr(), b.data.as_ptr());
        assert!(a.changed_regions(&b, &[]).is_empty());
    }

    fn set(l: &mut Look, col: usize, row: usize) {
        let i = row * l.stride + col * 4;
        l.data[i] = 255;
    }

    #[test]
    fn a_region_covers_every_changed_pixel_near_each_other_in_screen_coordinates() {
        let a = look(20, 10);
        let mut b = a.clone();
        assert_eq!(a.changed_regions(&b, &[]), vec![]);
        set(&mut b, 3, 2);
        set(&mut b, 7, 5);
        assert_eq!(a.changed_regions(&b, &[]), vec![Rect::new(103, 52, 5, 4)]);
    }

    #[test]
    fn changes_far_apart_are_regions_of_their_own() {
        let a = look(100, 60);
        let mut b = a.clone();
        set(&mut b, 2, 2);
        // two tiles from the nearest change: apart
        set(&mut b, 60, 3);
        // neighbouring tiles, diagonally: together
        set(&mut b, 15, 15);
        set(&mut b, 16, 16);
        let mut r = a.changed_regions(&b, &[]);
        r.sort_by_key(|r| (r.x, r.y));
        assert_eq!(
            r,
            vec![Rect::new(102, 52, 15, 15), Rect::new(160, 53, 1, 1)]
        );
        assert_eq!(union(r), Some(Rect::new(102, 52, 59, 15)));
    }

    #[test]
    fn masked_pixels_and_padding_bytes_do_not_count() {
        let a = look(20, 10);
        let mut b = a.clone();
        set(&mut b, 3, 2);
        // the padding byte of another pixel
        b.data[4 * 4 + 3] = 9;
        let mask = Rect {
            x: 102,
            y: 51,
            w: 3,
            h: 3,
        };
        assert_eq!(a.changed_regions(&b, &[mask]), vec![]);
    }

    #[test]
    fn a_thin_line_is_a_caret_and_a_glyph_is_not() {
        let a = look(40, 30);
        let mut caret = a.clone();
        for row in 3..25 {
            set(&mut caret, 10, row);
        }
        let r = a.changed_regions(&caret, &[]);
        assert!(r.len() == 1 && is_caret(&r[0]), "{r:?}");
        let mut glyph = caret.clone();
        set(&mut glyph, 4, 8);
        let r = a.changed_regions(&glyph, &[]);
        assert!(r.len() == 1 && !is_caret(&r[0]), "{r:?}");
    }

    #[test]
    fn looks_of_different_rectangles_differ_everywhere() {
        let a = look(20, 10);
        let b = look(21, 10);
        assert_eq!(a.changed_regions(&b, &[]), vec![Rect::new(100, 50, 21, 10)]);
    }
}
