//! Numbered boxes drawn on a screenshot, and PNG encoding.
//!
//! This is a small local copy of the annotation that `ufo-desktop` will own; the two should be
//! unified there once both crates have landed.

use crate::x11::RgbImage;
use crate::LinuxError;

/// 3×5 bitmap digits, one row per `u8` (low 3 bits, MSB = left).
const DIGITS: [[u8; 5]; 10] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b010, 0b010, 0b010],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
];

const SCALE: i32 = 2;
const BOX: [u8; 3] = [230, 20, 60];
const TEXT: [u8; 3] = [255, 255, 255];

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

fn put(img: &mut RgbImage, x: i32, y: i32, c: [u8; 3]) {
    if x < 0 || y < 0 || x >= img.width as i32 || y >= img.height as i32 {
        return;
    }
    let i = (y as usize * img.width as usize + x as usize) * 3;
    img.data[i..i + 3].copy_from_slice(&c);
}

fn fill(img: &mut RgbImage, x: i32, y: i32, w: i32, h: i32, c: [u8; 3]) {
    for yy in y.max(0)..(y + h).min(img.height as i32) {
        for xx in x.max(0)..(x + w).min(img.width as i32) {
            put(img, xx, yy, c);
        }
    }
}

/// Draw numbered boxes on a copy of the image.
pub(crate) fn draw(img: &RgbImage, marks: &[Mark]) -> RgbImage {
    let mut out = RgbImage {
        width: img.width,
        height: img.height,
        data: img.data.clone(),
    };
    for m in marks {
        let (w, h) = (m.w as i32, m.h as i32);
        // 2-pixel outline
        fill(&mut out, m.x, m.y, w, 2, BOX);
        fill(&mut out, m.x, m.y + h - 2, w, 2, BOX);
        fill(&mut out, m.x, m.y, 2, h, BOX);
        fill(&mut out, m.x + w - 2, m.y, 2, h, BOX);
    }
    // labels after all boxes, so no box covers a number
    for m in marks {
        let text = m.label.to_string();
        let tw = text.len() as i32 * 4 * SCALE + SCALE;
        let th = 5 * SCALE + 2 * SCALE;
        let lx = m.x.clamp(0, (out.width as i32 - tw).max(0));
        let ly = m.y.clamp(0, (out.height as i32 - th).max(0));
        fill(&mut out, lx, ly, tw, th, BOX);
        for (i, ch) in text.bytes().enumerate() {
            let glyph = DIGITS[usize::from(ch - b'0')];
            let gx = lx + SCALE + i as i32 * 4 * SCALE;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..3 {
                    if bits & (0b100 >> col) != 0 {
                        fill(
                            &mut out,
                            gx + col * SCALE,
                            ly + SCALE + row as i32 * SCALE,
                            SCALE,
                            SCALE,
                            TEXT,
                        );
                    }
                }
            }
        }
    }
    out
}

/// Encode an RGB image as PNG (fast compression: screenshots are taken every step).
pub(crate) fn encode_png(img: &RgbImage) -> Result<Vec<u8>, LinuxError> {
    let mut buf = Vec::with_capacity(img.data.len() / 4);
    {
        let mut enc = png::Encoder::new(&mut buf, img.width, img.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc
            .write_header()
            .map_err(|e| LinuxError::Png(e.to_string()))?;
        w.write_image_data(&img.data)
            .map_err(|e| LinuxError::Png(e.to_string()))?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_box_and_label_inside_image() {
        let img = RgbImage {
            width: 40,
            height: 30,
            data: vec![0; 40 * 30 * 3],
        };
        let out = draw(
            &img,
            &[Mark {
                x: 5,
                y: 5,
                w: 20,
                h: 10,
                label: 12,
            }],
        );
        let px = |x: usize, y: usize| &out.data[(y * 40 + x) * 3..(y * 40 + x) * 3 + 3];
        assert_eq!(px(24, 14), &BOX); // bottom-right corner of the outline
        assert_eq!(px(30, 25), &[0, 0, 0]); // outside untouched
        let png = encode_png(&out).expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }
}
