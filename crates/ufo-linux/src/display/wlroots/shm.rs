//! The output's pixels in shared memory, display-free: anonymous files the compositor copies
//! into (no mapping, no `unsafe`: read back with `pread`), the shared-memory formats turned
//! into BGRX rows, and rectangles cut out of a capture.

use std::fs::File;
use std::io::Write;

use rustix::fs::{memfd_create, MemfdFlags};
use ufo_core::Rect;
use wayland_client::protocol::wl_shm;

use crate::error::cause;
use crate::LinuxError;

/// An I/O error of the Wayland display, saying what it was doing.
pub(crate) fn io_err(what: &str) -> impl Fn(std::io::Error) -> LinuxError + '_ {
    move |e| LinuxError::Wayland {
        what: what.to_string(),
        source: Box::new(e),
    }
}

/// A capture of the whole output: BGRX rows, top row first.
pub(crate) struct Shot {
    pub width: u32,
    pub height: u32,
    pub bgrx: Vec<u8>,
}

/// A rectangle of the output and its BGRX rows.
pub(crate) type Cut = (Rect, Vec<u8>);

/// `area` clipped to a `width` x `height` output (`None` when nothing of it is on it).
pub(crate) fn clip(area: Rect, width: u32, height: u32) -> Option<Rect> {
    let (sw, sh) = (width as i32, height as i32);
    let x0 = area.x.clamp(0, sw);
    let y0 = area.y.clamp(0, sh);
    let x1 = area.x.saturating_add(area.w as i32).clamp(0, sw);
    let y1 = area.y.saturating_add(area.h as i32).clamp(0, sh);
    (x1 > x0 && y1 > y0).then(|| Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32))
}

/// A rectangle of a capture, clipped to it: where it lies and its BGRX rows (`None` when
/// nothing of it is on the output).
pub(crate) fn crop(shot: &Shot, area: Rect) -> Option<Cut> {
    let r = clip(area, shot.width, shot.height)?;
    let stride = shot.width as usize * 4;
    let mut out = Vec::with_capacity(r.w as usize * r.h as usize * 4);
    for y in r.y..r.y + r.h as i32 {
        let start = y as usize * stride + r.x as usize * 4;
        out.extend_from_slice(shot.bgrx.get(start..start + r.w as usize * 4)?);
    }
    Some((r, out))
}

/// The output's pixels as BGRX rows, top row first, from a shared-memory format.
pub(crate) fn to_bgrx(
    raw: &[u8],
    w: u32,
    h: u32,
    stride: u32,
    format: wl_shm::Format,
    y_invert: bool,
) -> Result<Vec<u8>, LinuxError> {
    columns(raw, stride, (0, w), h, format, y_invert)
}

/// The columns `x0..x0 + w` (`span`) of `h` rows of shared memory (`stride` bytes apart, in
/// the buffer's order, bottom row first when `y_invert`) as BGRX rows, top row first.
pub(crate) fn columns(
    raw: &[u8],
    stride: u32,
    (x0, w): (u32, u32),
    h: u32,
    format: wl_shm::Format,
    y_invert: bool,
) -> Result<Vec<u8>, LinuxError> {
    let swap = match format {
        wl_shm::Format::Xrgb8888 | wl_shm::Format::Argb8888 => false,
        wl_shm::Format::Xbgr8888 | wl_shm::Format::Abgr8888 => true,
        other => {
            return Err(LinuxError::Wayland {
                what: "screencopy".into(),
                source: cause(format!(
                    "the output's pixel format {other:?} is not one ufo reads (XRGB8888, \
                     ARGB8888, XBGR8888, ABGR8888)"
                )),
            })
        }
    };
    let (x0, w, h, stride) = (x0 as usize * 4, w as usize * 4, h as usize, stride as usize);
    let mut out = Vec::with_capacity(w * h);
    for row in 0..h {
        let src = if y_invert { h - 1 - row } else { row };
        let start = src * stride + x0;
        let line = raw
            .get(start..start + w)
            .ok_or_else(|| LinuxError::Wayland {
                what: "screencopy".into(),
                source: cause("the buffer is shorter than its size says"),
            })?;
        if swap {
            for px in line.chunks_exact(4) {
                out.extend_from_slice(&[px[2], px[1], px[0], px[3]]);
            }
        } else {
            out.extend_from_slice(line);
        }
    }
    Ok(out)
}

/// An anonymous file holding `bytes` (a keymap, or an empty buffer to size).
pub(crate) fn memfd_with(name: &str, bytes: &[u8]) -> Result<File, LinuxError> {
    let fd =
        memfd_create(name, MemfdFlags::CLOEXEC).map_err(|e| io_err("memfd_create")(e.into()))?;
    let mut f = File::from(fd);
    f.write_all(bytes).map_err(io_err("write a memfd"))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crop_is_clipped_to_the_output() {
        // a 3x2 output whose pixel at (x, y) is [x, y, 0, 0]
        let mut bgrx = Vec::new();
        for y in 0..2u8 {
            for x in 0..3u8 {
                bgrx.extend_from_slice(&[x, y, 0, 0]);
            }
        }
        let shot = Shot {
            width: 3,
            height: 2,
            bgrx,
        };
        let (r, px) = crop(&shot, Rect::new(1, 1, 5, 5)).expect("part on the output");
        assert_eq!(r, Rect::new(1, 1, 2, 1));
        assert_eq!(px, vec![1, 1, 0, 0, 2, 1, 0, 0]);
        assert!(crop(&shot, Rect::new(3, 0, 2, 2)).is_none());
        assert!(crop(&shot, Rect::new(-5, -5, 2, 2)).is_none());
    }

    #[test]
    fn shared_memory_pixels_become_bgrx_rows_top_first() {
        // 2x2, stride 12 (4 bytes of padding per row); RGBX-ordered bytes (XBGR8888)
        let raw = [
            1, 2, 3, 0, 4, 5, 6, 0, 9, 9, 9, 9, //
            7, 8, 9, 0, 10, 11, 12, 0, 9, 9, 9, 9,
        ];
        let out = to_bgrx(&raw, 2, 2, 12, wl_shm::Format::Xbgr8888, false).expect("pixels");
        assert_eq!(out, vec![3, 2, 1, 0, 6, 5, 4, 0, 9, 8, 7, 0, 12, 11, 10, 0]);
        let inverted = to_bgrx(&raw, 2, 2, 12, wl_shm::Format::Xrgb8888, true).expect("pixels");
        assert_eq!(&inverted[..8], &[7, 8, 9, 0, 10, 11, 12, 0]);
        assert!(to_bgrx(&raw, 2, 2, 12, wl_shm::Format::Rgb565, false).is_err());
        assert!(to_bgrx(&raw[..10], 2, 2, 12, wl_shm::Format::Xrgb8888, false).is_err());
    }

    #[test]
    fn columns_are_cut_from_rows_in_either_order() {
        // 3x2 XRGB pixels [x, y, 0, 0]; stride 16 (one spare pixel per row)
        let mut raw = Vec::new();
        for y in 0..2u8 {
            for x in 0..4u8 {
                raw.extend_from_slice(&[x, y, 0, 0]);
            }
        }
        let top_first =
            columns(&raw, 16, (1, 2), 2, wl_shm::Format::Xrgb8888, false).expect("pixels");
        assert_eq!(
            top_first,
            vec![1, 0, 0, 0, 2, 0, 0, 0, 1, 1, 0, 0, 2, 1, 0, 0]
        );
        let inverted =
            columns(&raw, 16, (2, 1), 2, wl_shm::Format::Xrgb8888, true).expect("pixels");
        assert_eq!(inverted, vec![2, 1, 0, 0, 2, 0, 0, 0]);
        assert!(columns(&raw, 16, (3, 2), 2, wl_shm::Format::Xrgb8888, false).is_err());
    }
}
