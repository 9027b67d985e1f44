//! The pixel steps before reading (docs/sight.md, "How"): gray, polarity normalisation, long
//! line removal, 2× upscaling, crops. Pure Rust over a plain gray buffer: no image crate.

use ufo_core::vision::{PixelFormat, RegionImage};
use ufo_core::Rect;

/// A gray image: one byte per pixel, rows top to bottom, no padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gray {
    /// Width in pixels.
    pub w: u32,
    /// Height in pixels.
    pub h: u32,
    /// The pixels.
    pub px: Vec<u8>,
}

/// A value below this is ink after [`polarity`] (a contrast of about 28 grey levels).
pub const INK_BELOW: u8 = 200;

impl Gray {
    /// A `w` × `h` image of one value.
    pub fn filled(w: u32, h: u32, v: u8) -> Self {
        Self {
            w,
            h,
            px: vec![v; w as usize * h as usize],
        }
    }

    /// The pixel at (`x`, `y`), which must be inside.
    pub fn at(&self, x: u32, y: u32) -> u8 {
        self.px[y as usize * self.w as usize + x as usize]
    }

    /// The gray of a region's pixels (ITU-R 601 weights; alpha ignored).
    pub fn of(region: &RegionImage) -> Self {
        let p = region.pixels();
        let px = match region.format() {
            PixelFormat::Gray8 => p.to_vec(),
            PixelFormat::Rgb8 => p.chunks_exact(3).map(luma).collect(),
            PixelFormat::Rgba8 => p.chunks_exact(4).map(luma).collect(),
        };
        Self {
            w: region.width(),
            h: region.height(),
            px,
        }
    }

    /// `r` clipped to the image: (x0, y0, x1, y1), empty when outside.
    fn clip(&self, r: Rect) -> Option<(u32, u32, u32, u32)> {
        let x0 = i64::from(r.x).clamp(0, i64::from(self.w));
        let y0 = i64::from(r.y).clamp(0, i64::from(self.h));
        let x1 = (i64::from(r.x) + i64::from(r.w)).clamp(0, i64::from(self.w));
        let y1 = (i64::from(r.y) + i64::from(r.h)).clamp(0, i64::from(self.h));
        (x1 > x0 && y1 > y0).then_some((x0 as u32, y0 as u32, x1 as u32, y1 as u32))
    }

    /// Whether any pixel of `r` (clipped) is below `below`.
    pub fn has_ink(&self, r: Rect, below: u8) -> bool {
        let Some((x0, y0, x1, y1)) = self.clip(r) else {
            return false;
        };
        (y0..y1).any(|y| (x0..x1).any(|x| self.at(x, y) < below))
    }

    /// The part of the image inside `r` (clipped; `None` when nothing is left).
    pub fn crop(&self, r: Rect) -> Option<Gray> {
        let (x0, y0, x1, y1) = self.clip(r)?;
        let mut px = Vec::with_capacity(((x1 - x0) * (y1 - y0)) as usize);
        for y in y0..y1 {
            let row = y as usize * self.w as usize;
            px.extend_from_slice(&self.px[row + x0 as usize..row + x1 as usize]);
        }
        Some(Gray {
            w: x1 - x0,
            h: y1 - y0,
            px,
        })
    }
}

fn luma(p: &[u8]) -> u8 {
    ((299 * u32::from(p[0]) + 587 * u32::from(p[1]) + 114 * u32::from(p[2]) + 500) / 1000) as u8
}

/// Polarity normalisation: each pixel's distance from its local background (the median of a
/// 16 × 16 neighbourhood, taken on a 2× subsampled image), so light text on a dark or coloured
/// field and dark text on a light one both come out dark on white, and flat areas of any
/// colour white. Tesseract's own inversion missed white-on-blue selected rows.
pub fn polarity(g: &Gray) -> Gray {
    let (sw, sh) = (g.w.div_ceil(2) as usize, g.h.div_ceil(2) as usize);
    let small: Vec<u8> = (0..sh)
        .flat_map(|y| (0..sw).map(move |x| (x, y)))
        .map(|(x, y)| {
            let (ox, oy) = ((2 * x).min(g.w as usize - 1), (2 * y).min(g.h as usize - 1));
            g.px[oy * g.w as usize + ox]
        })
        .collect();
    let bg = local_median(&small, sw, sh, 4);
    let mut px = Vec::with_capacity(g.px.len());
    for y in 0..g.h as usize {
        for x in 0..g.w as usize {
            let b = i32::from(bg[(y / 2) * sw + x / 2]);
            let v = i32::from(g.px[y * g.w as usize + x]);
            px.push((255 - ((v - b).abs() * 2).min(255)) as u8);
        }
    }
    Gray { w: g.w, h: g.h, px }
}

/// The median of the (2r+1)-wide window around each pixel, by a sliding histogram per row.
fn local_median(img: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    let mut out = vec![0u8; img.len()];
    for y in 0..h {
        let (y0, y1) = (y.saturating_sub(r), (y + r).min(h - 1));
        let mut hist = [0u32; 256];
        let mut n = 0u32;
        let column = |hist: &mut [u32; 256], n: &mut u32, x: usize, add: bool| {
            for yy in y0..=y1 {
                let v = img[yy * w + x] as usize;
                if add {
                    hist[v] += 1;
                    *n += 1;
                } else {
                    hist[v] -= 1;
                    *n -= 1;
                }
            }
        };
        for x in 0..r.min(w) {
            column(&mut hist, &mut n, x, true);
        }
        for x in 0..w {
            if x + r < w {
                column(&mut hist, &mut n, x + r, true);
            }
            if x > r {
                column(&mut hist, &mut n, x - r - 1, false);
            }
            let half = n / 2;
            let mut acc = 0;
            let mut m = 0;
            for (v, &c) in hist.iter().enumerate() {
                acc += c;
                if acc > half {
                    m = v;
                    break;
                }
            }
            out[y * w + x] = m as u8;
        }
    }
    out
}

/// Whiten straight runs of ink at least `min_len` long, in rows and in columns: frames,
/// borders, separators and underlines, which Tesseract reads as `|` and which swallow the
/// glyphs that touch them.
pub fn remove_lines(g: &mut Gray, min_len: u32) {
    let (w, h) = (g.w as usize, g.h as usize);
    let mut kill = vec![false; w * h];
    let mut runs = |len: usize, count: usize, index: &dyn Fn(usize, usize) -> usize| {
        for line in 0..count {
            let mut start = None;
            for i in 0..=len {
                let ink = i < len && g.px[index(line, i)] < INK_BELOW;
                match (ink, start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        if i - s >= min_len as usize {
                            (s..i).for_each(|k| kill[index(line, k)] = true);
                        }
                        start = None;
                    }
                    _ => {}
                }
            }
        }
    };
    runs(w, h, &|y, x| y * w + x);
    runs(h, w, &|x, y| y * w + x);
    for (p, k) in g.px.iter_mut().zip(kill) {
        if k {
            *p = 255;
        }
    }
}

/// The image at twice its size, bilinear (weights 9/3/3/1): Tesseract reads small UI text far
/// better at 2× (docs/sight.md).
pub fn upscale2(g: &Gray) -> Gray {
    let (w, h) = (g.w as i64, g.h as i64);
    let ow = 2 * w as usize;
    let at = |x: i64, y: i64| -> u32 {
        let (x, y) = (x.clamp(0, w - 1), y.clamp(0, h - 1));
        u32::from(g.px[(y * w + x) as usize])
    };
    let mut px = vec![0u8; ow * 2 * h as usize];
    for y in 0..h {
        for x in 0..w {
            let c = at(x, y);
            let o = (2 * y) as usize * ow + 2 * x as usize;
            for (k, (dx, dy)) in [(-1, -1), (1, -1), (-1, 1), (1, 1)].into_iter().enumerate() {
                let (hx, vy, d) = (at(x + dx, y), at(x, y + dy), at(x + dx, y + dy));
                let v = (9 * c + 3 * hx + 3 * vy + d + 8) / 16;
                px[o + (k & 1) + (k >> 1) * ow] = v as u8;
            }
        }
    }
    Gray {
        w: 2 * g.w,
        h: 2 * g.h,
        px,
    }
}

/// The ink of `g` (pixels further than 60 from the top-left corner's value, the background)
/// cropped tight with `pad` pixels of background around it, and where the crop's (0, 0) lies
/// in `g` (negative when padded past the edge). `None` when there is no ink.
pub fn tight(g: &Gray, pad: u32) -> Option<(Gray, (i32, i32))> {
    let bg = *g.px.first()?;
    let far = |v: u8| (i32::from(v) - i32::from(bg)).abs() > 60;
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for y in 0..g.h {
        for x in 0..g.w {
            if far(g.at(x, y)) {
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            }
        }
    }
    if x0 == u32::MAX {
        return None;
    }
    let (w, h) = (x1 - x0 + 1 + 2 * pad, y1 - y0 + 1 + 2 * pad);
    let mut out = Gray::filled(w, h, bg);
    for y in y0..=y1 {
        for x in x0..=x1 {
            out.px[((y - y0 + pad) * w + (x - x0 + pad)) as usize] = g.at(x, y);
        }
    }
    Some((out, (x0 as i32 - pad as i32, y0 as i32 - pad as i32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(g: &mut Gray, x0: u32, y0: u32, w: u32, h: u32, v: u8) {
        for y in y0..y0 + h {
            for x in x0..x0 + w {
                g.px[(y * g.w + x) as usize] = v;
            }
        }
    }

    #[test]
    fn light_text_on_a_dark_field_becomes_dark_on_white() {
        let mut g = Gray::filled(64, 32, 40); // a dark blue row, as gray
        bar(&mut g, 20, 10, 2, 12, 250); // a white stroke
        let p = polarity(&g);
        assert!(p.at(21, 15) < INK_BELOW, "the stroke is ink");
        assert_eq!(p.at(5, 5), 255, "the field is white");
        let mut light = Gray::filled(64, 32, 240);
        bar(&mut light, 20, 10, 2, 12, 20);
        let p = polarity(&light);
        assert!(p.at(21, 15) < INK_BELOW && p.at(50, 5) == 255);
    }

    #[test]
    fn long_lines_go_and_glyph_strokes_stay() {
        let mut g = Gray::filled(80, 40, 255);
        bar(&mut g, 0, 5, 80, 1, 0); // a border
        bar(&mut g, 40, 15, 2, 12, 0); // a glyph stem
        remove_lines(&mut g, 30);
        assert_eq!(g.at(10, 5), 255);
        assert_eq!(g.at(40, 20), 0);
    }

    #[test]
    fn upscaling_doubles_the_size_and_keeps_flat_areas() {
        let mut g = Gray::filled(5, 3, 100);
        bar(&mut g, 2, 1, 1, 1, 0);
        let u = upscale2(&g);
        assert_eq!((u.w, u.h), (10, 6));
        assert_eq!(u.at(0, 0), 100);
        assert!(u.at(4, 2) < 50 && u.at(5, 3) < 50);
    }

    #[test]
    fn the_tight_crop_holds_the_ink_and_its_pad() {
        let mut g = Gray::filled(50, 30, 200);
        bar(&mut g, 10, 8, 5, 6, 0);
        let (c, at) = tight(&g, 3).expect("there is ink");
        assert_eq!((c.w, c.h, at), (11, 12, (7, 5)));
        assert_eq!(c.at(3, 3), 0);
        assert_eq!(c.at(0, 0), 200);
        assert!(tight(&Gray::filled(4, 4, 9), 3).is_none());
    }

    #[test]
    fn ink_and_crops_are_clipped_to_the_image() {
        let mut g = Gray::filled(10, 10, 255);
        bar(&mut g, 9, 9, 1, 1, 0);
        assert!(g.has_ink(Rect::new(5, 5, 100, 100), INK_BELOW));
        assert!(!g.has_ink(Rect::new(-5, -5, 5, 5), INK_BELOW));
        assert_eq!(
            g.crop(Rect::new(8, 8, 5, 5)).map(|c| (c.w, c.h)),
            Some((2, 2))
        );
        assert!(g.crop(Rect::new(20, 0, 5, 5)).is_none());
    }
}
