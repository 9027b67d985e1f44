//! Framed cells: the outlines of buttons drawn as a thin frame (Athena's `xcalc`, many
//! older X tools). A read of the whole window misses most of their one-character labels
//! ("7", "+", "="); read one by one, cropped tight, they are found (docs/sight.md).
//!
//! A frame is a connected component of ink whose pixels lie almost all on its own bounding
//! box's edge and cover most of that edge.

use ufo_core::Rect;

use crate::pixels::Gray;

/// The band along the bounding box's edge a frame's pixels lie in, in pixels.
const EDGE: u32 = 3;
/// The most cells one region yields: bounds the per-cell reads.
pub const MAX_CELLS: usize = 200;

/// The limits of a cell worth reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellSize {
    /// Smallest outer width and height.
    pub min: u32,
    /// Largest outer height (a button, not a panel).
    pub max_h: u32,
}

impl Default for CellSize {
    fn default() -> Self {
        Self {
            min: 10,
            max_h: 120,
        }
    }
}

/// The insides of the framed cells of `g`, top to bottom then left to right, at most
/// [`MAX_CELLS`]. Ink is a pixel further than 60 from the image's median.
pub fn framed_cells(g: &Gray, size: CellSize) -> Vec<Rect> {
    let (w, h) = (g.w as usize, g.h as usize);
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let median = median(&g.px);
    let ink: Vec<bool> =
        g.px.iter()
            .map(|&v| (i32::from(v) - i32::from(median)).abs() > 60)
            .collect();
    let mut seen = vec![false; w * h];
    let mut stack = Vec::new();
    let mut pixels: Vec<(u32, u32)> = Vec::new();
    let mut cells = Vec::new();
    for start in 0..w * h {
        if !ink[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        pixels.clear();
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            pixels.push((x as u32, y as u32));
            for (dx, dy) in [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)] {
                let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                    continue;
                }
                let j = ny as usize * w + nx as usize;
                if ink[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        if let Some(cell) = frame_inside(&pixels, size) {
            cells.push(cell);
        }
    }
    cells.sort_by_key(|r| (r.y, r.x));
    cells.truncate(MAX_CELLS);
    cells
}

fn median(px: &[u8]) -> u8 {
    let mut hist = [0usize; 256];
    px.iter().for_each(|&v| hist[v as usize] += 1);
    let half = px.len() / 2;
    let mut acc = 0;
    for (v, &c) in hist.iter().enumerate() {
        acc += c;
        if acc > half {
            return v as u8;
        }
    }
    255
}

/// The inside of the component `pixels` when it is a frame of an acceptable size.
fn frame_inside(pixels: &[(u32, u32)], size: CellSize) -> Option<Rect> {
    let x0 = pixels.iter().map(|p| p.0).min()?;
    let y0 = pixels.iter().map(|p| p.1).min()?;
    let x1 = pixels.iter().map(|p| p.0).max()?;
    let y1 = pixels.iter().map(|p| p.1).max()?;
    let (bw, bh) = (x1 - x0 + 1, y1 - y0 + 1);
    if bw < size.min || bh < size.min || bh > size.max_h || bw <= 2 * EDGE || bh <= 2 * EDGE {
        return None;
    }
    let near = |v: u32, lo: u32, hi: u32| v < lo + EDGE || v + EDGE > hi;
    let on_edge = pixels
        .iter()
        .filter(|(x, y)| near(*x, x0, x1) || near(*y, y0, y1))
        .count();
    if (on_edge as f64) < 0.9 * pixels.len() as f64 {
        return None;
    }
    // How much of each side the frame covers.
    let mut top = vec![false; bw as usize];
    let mut bottom = vec![false; bw as usize];
    let mut left = vec![false; bh as usize];
    let mut right = vec![false; bh as usize];
    for &(x, y) in pixels {
        if y < y0 + EDGE {
            top[(x - x0) as usize] = true;
        }
        if y + EDGE > y1 {
            bottom[(x - x0) as usize] = true;
        }
        if x < x0 + EDGE {
            left[(y - y0) as usize] = true;
        }
        if x + EDGE > x1 {
            right[(y - y0) as usize] = true;
        }
    }
    let share = |v: &[bool]| v.iter().filter(|b| **b).count() as f64 / v.len() as f64;
    let cover = (share(&top) + share(&bottom) + share(&left) + share(&right)) / 4.0;
    (cover >= 0.8).then(|| {
        Rect::new(
            (x0 + EDGE) as i32,
            (y0 + EDGE) as i32,
            bw - 2 * EDGE,
            bh - 2 * EDGE,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(g: &mut Gray, x0: u32, y0: u32, w: u32, h: u32) {
        for x in x0..x0 + w {
            g.px[(y0 * g.w + x) as usize] = 0;
            g.px[((y0 + h - 1) * g.w + x) as usize] = 0;
        }
        for y in y0..y0 + h {
            g.px[(y * g.w + x0) as usize] = 0;
            g.px[(y * g.w + x0 + w - 1) as usize] = 0;
        }
    }

    #[test]
    fn outlines_are_cells_and_blocks_and_specks_are_not() {
        let mut g = Gray::filled(200, 100, 230);
        outline(&mut g, 10, 10, 40, 20); // a button
        outline(&mut g, 60, 10, 40, 20); // its neighbour
        for y in 50..80 {
            for x in 10..50 {
                g.px[y * 200 + x] = 0; // a filled block: not a frame
            }
        }
        outline(&mut g, 120, 50, 5, 5); // too small
        let cells = framed_cells(&g, CellSize::default());
        assert_eq!(
            cells,
            vec![Rect::new(13, 13, 34, 14), Rect::new(63, 13, 34, 14)]
        );
    }

    #[test]
    fn a_label_inside_a_frame_does_not_hide_it() {
        let mut g = Gray::filled(60, 40, 230);
        outline(&mut g, 5, 5, 40, 24);
        for y in 12..20 {
            g.px[y * 60 + 22] = 0; // a "1", apart from the frame
        }
        assert_eq!(framed_cells(&g, CellSize::default()).len(), 1);
    }
}
