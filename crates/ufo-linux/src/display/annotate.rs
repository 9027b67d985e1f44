//! Screenshots of the live desktop as PNG: the clean capture, and the annotated one drawn by
//! the one annotator every backend shares (`ufo_desktop::annotate`), so a live trajectory's
//! boxes look like the simulated desktop's and `ufo report` finds the chosen control on both.

use ufo_core::Rect;
use ufo_desktop::annotate::{self as shared, RgbaImage};

use crate::display::pixels::RgbImage;
use crate::LinuxError;

/// A box to draw: a rectangle in image pixels and its label number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    /// Left edge in image pixels.
    pub x: i32,
    /// Top edge in image pixels.
    pub y: i32,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
    /// The label number drawn.
    pub label: usize,
    /// Read in the pixels (docs/sight.md): drawn with a dashed inner outline too, so the
    /// model tells it from a tree control.
    pub detected: bool,
}

/// The capture with numbered boxes drawn on it, as PNG.
pub(crate) fn annotated_png(img: &RgbImage, marks: &[Mark]) -> Result<Vec<u8>, LinuxError> {
    // (drawn on an RGB copy and encoded as RGB: no RGBA conversion, a quarter fewer bytes)
    let mut drawn = RgbaImage::opaque(img.width, img.height, img.data.clone())?;
    let labels: Vec<(String, Rect)> = marks
        .iter()
        .map(|m| {
            (
                m.label.to_string(),
                Rect {
                    x: m.x,
                    y: m.y,
                    w: m.w,
                    h: m.h,
                },
            )
        })
        .collect();
    shared::draw_annotations(&mut drawn, &labels);
    for m in marks.iter().filter(|m| m.detected) {
        dash_inside(&mut drawn, m);
    }
    Ok(shared::encode_png(&drawn)?)
}

/// Dashes (4 on, 4 off, alternating black and white so they show on any background) two
/// pixels inside a detected box's outline.
fn dash_inside(img: &mut RgbaImage, m: &Mark) {
    const BLACK: [u8; 4] = [0, 0, 0, 255];
    const WHITE: [u8; 4] = [255, 255, 255, 255];
    let (x0, y0) = (i64::from(m.x) + 2, i64::from(m.y) + 2);
    let (x1, y1) = (
        i64::from(m.x) + i64::from(m.w) - 3,
        i64::from(m.y) + i64::from(m.h) - 3,
    );
    if x1 <= x0 || y1 <= y0 {
        return;
    }
    let colour = |i: i64| if (i / 4) % 2 == 0 { BLACK } else { WHITE };
    for x in x0..=x1 {
        img.put(x, y0, colour(x - x0));
        img.put(x, y1, colour(x - x0));
    }
    for y in y0..=y1 {
        img.put(x0, y, colour(y - y0));
        img.put(x1, y, colour(y - y0));
    }
}

/// Encode an RGB capture as PNG (fast compression: screenshots are taken every step).
pub(crate) fn encode_png(img: &RgbImage) -> Result<Vec<u8>, LinuxError> {
    let mut buf = Vec::with_capacity(img.data.len() / 4);
    {
        let mut enc = png::Encoder::new(&mut buf, img.width, img.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().map_err(shared::AnnotateError::from)?;
        w.write_image_data(&img.data)
            .map_err(shared::AnnotateError::from)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live desktop draws with the shared annotator: the box's outline has the colour of
    /// label 1 in the shared palette, and outside the box the capture is untouched.
    #[test]
    fn draws_with_the_shared_annotator() {
        let img = RgbImage {
            width: 80,
            height: 60,
            data: vec![0; 80 * 60 * 3],
        };
        let png = annotated_png(
            &img,
            &[Mark {
                x: 5,
                y: 5,
                w: 40,
                h: 30,
                label: 1,
                detected: false,
            }],
        )
        .expect("png");
        let out = shared::decode_png(&png).expect("decode");
        assert_eq!(out.pixel(44, 34), Some(shared::PALETTE[0]));
        assert_eq!(out.pixel(70, 50), Some([0, 0, 0, 255]));
        let clean = encode_png(&img).expect("png");
        assert_eq!(&clean[1..4], b"PNG");
    }
}
