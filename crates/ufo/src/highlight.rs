//! Finding a labelled control's box on an annotated screenshot, so the report can highlight
//! the control the model chose.
//!
//! Step records carry the chosen control's label (`action.control_label`) but not its
//! rectangle. Annotated screenshots of every backend (the simulated and the live desktop) are
//! drawn by the one annotator, `ufo_desktop::annotate::draw_annotations`:
//! for each control an outline and, at the box's top-left corner, a filled tag with the label
//! in white in the built-in bitmap font. We render the tag for the label the same way and look
//! for it in the image; the outline's top row and left column from there give the box. When
//! the tag is not found (another annotator, an overlapping box), there is no highlight and the
//! report shows the label as text instead.

use ufo_core::Rect;
use ufo_desktop::annotate::{
    decode_png, text_width, Rgba, RgbaImage, GLYPH_H, PALETTE, TAG_PAD as PAD, TAG_SCALE as SCALE,
};

const WHITE: Rgba = [255, 255, 255, 255];

/// Where a label's box is on an image, in image pixels, with the image's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The box.
    pub rect: Rect,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
}

/// Find the box of `label` on an annotated PNG. `None` when the image cannot be decoded or the
/// label's tag is not on it.
pub fn find_label(annotated_png: &[u8], label: &str) -> Option<Found> {
    let label = label.trim();
    if label.is_empty() || label.chars().count() > 8 {
        return None;
    }
    let img = decode_png(annotated_png).ok()?;
    let tag_w = text_width(label, SCALE) + 2 * PAD;
    let tag_h = GLYPH_H * SCALE + 2 * PAD;
    // The tag's glyph mask: true where the label's digits are white.
    let mut mask = RgbaImage::new(tag_w, tag_h, [0, 0, 0, 255]);
    mask.draw_text(PAD as i32, PAD as i32, label, SCALE, WHITE);
    let expected = label
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .map(|i| PALETTE[i % PALETTE.len()]);
    let (w, h) = (img.width(), img.height());
    if w < tag_w || h < tag_h {
        return None;
    }
    let mut best: Option<(Rect, bool)> = None;
    for y in 0..=(h - tag_h) {
        for x in 0..=(w - tag_w) {
            let Some(c) = img.pixel(x, y) else { continue };
            if c == WHITE || !tag_matches(&img, &mask, x, y, c) {
                continue;
            }
            // A longer label's tag ("11") contains this one's ("1"): the column right of a
            // real tag is not all tag colour.
            if x + tag_w < w && (PAD..tag_h).all(|dy| img.pixel(x + tag_w, y + dy) == Some(c)) {
                continue;
            }
            let rect = outline(&img, x, y, c, tag_w, tag_h);
            let preferred = expected == Some(c);
            match best {
                Some((_, true)) => {}
                Some((_, false)) if !preferred => {}
                _ => best = Some((rect, preferred)),
            }
            if preferred {
                return Some(Found {
                    rect,
                    width: w,
                    height: h,
                });
            }
        }
    }
    best.map(|(rect, _)| Found {
        rect,
        width: w,
        height: h,
    })
}

fn tag_matches(img: &RgbaImage, mask: &RgbaImage, x: u32, y: u32, c: Rgba) -> bool {
    for my in 0..mask.height() {
        for mx in 0..mask.width() {
            let want = if mask.pixel(mx, my) == Some(WHITE) {
                WHITE
            } else {
                c
            };
            if img.pixel(x + mx, y + my) != Some(want) {
                return false;
            }
        }
    }
    true
}

/// The box whose tag is at `(x, y)`: follow the outline's top row and left column.
fn outline(img: &RgbaImage, x: u32, y: u32, c: Rgba, tag_w: u32, tag_h: u32) -> Rect {
    let mut right = x + tag_w;
    while right < img.width() && img.pixel(right, y) == Some(c) {
        right += 1;
    }
    let mut bottom = y + tag_h;
    while bottom < img.height() && img.pixel(x, bottom) == Some(c) {
        bottom += 1;
    }
    Rect {
        x: x as i32,
        y: y as i32,
        w: right - x,
        h: bottom - y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ufo_desktop::annotate::{annotate, encode_png};

    #[test]
    fn finds_each_labelled_box() {
        let base = RgbaImage::new(300, 200, [240, 240, 240, 255]);
        let mut labels: Vec<(String, Rect)> = Vec::new();
        for i in 0..12 {
            let x = 5 + (i % 3) * 95;
            let y = 5 + (i / 3) * 48;
            labels.push(((i + 1).to_string(), Rect::new(x, y, 90, 40)));
        }
        let png = annotate(&base, &labels).expect("png");
        for (label, rect) in &labels {
            let f = find_label(&png, label).unwrap_or_else(|| panic!("label {label} found"));
            assert_eq!(f.rect, *rect, "label {label}");
            assert_eq!((f.width, f.height), (300, 200));
        }
        assert_eq!(find_label(&png, "13"), None);
        assert_eq!(find_label(&png, ""), None);
    }

    #[test]
    fn garbage_is_not_found() {
        assert_eq!(find_label(b"not a png", "1"), None);
        let plain = encode_png(&RgbaImage::new(50, 50, [0, 0, 0, 255])).expect("png");
        assert_eq!(find_label(&plain, "1"), None);
    }
}
