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
}

/// The capture with numbered boxes drawn on it, as PNG.
pub(crate) fn annotated_png(img: &RgbImage, marks: &[Mark]) -> Result<Vec<u8>, LinuxError> {
    let mut rgba = RgbaImage::from_rgb(img.width, img.height, &img.data)?;
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
    shared::draw_annotations(&mut rgba, &labels);
    Ok(shared::encode_png(&rgba)?)
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
