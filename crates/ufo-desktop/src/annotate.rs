//! Screenshot drawing and annotation, shared by the simulated and the live desktop.
//!
//! An [`RgbaImage`] is a plain 8-bit RGBA pixel buffer. [`annotate`] draws a numbered box on
//! each control (the engine's label `i + 1` for `controls[i]`) and encodes the result as PNG;
//! [`encode_png`] encodes an image as it is. Labels are drawn with a small built-in bitmap font
//! (digits, space, `-` and `.`; any other character is drawn as `?`), so no font files are needed.
//!
//! Rectangles passed here are in **image** pixels. A backend whose control rectangles are in
//! screen pixels subtracts the window origin first (see [`Rect`] and [`to_image_rect`]).

use std::sync::Arc;

use ufo_core::{Rect, Screenshot};

/// An RGBA colour.
pub type Rgba = [u8; 4];

/// Errors while drawing or encoding an image.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    /// The pixel buffer does not match the image size.
    #[error("image buffer has {got} bytes but a {width}x{height} image needs {expected}")]
    BadBuffer {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
        /// Bytes needed (`width * height * 4` for RGBA, `* 3` for RGB).
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// The image has no pixels or is too large to encode.
    #[error("cannot encode a {width}x{height} image: {reason}")]
    BadSize {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Why.
        reason: &'static str,
    },
    /// The PNG encoder failed.
    #[error("PNG encoding failed: {0}")]
    Encode(#[from] png::EncodingError),
    /// A PNG could not be read.
    #[error("PNG decoding failed: {0}")]
    Decode(#[from] png::DecodingError),
    /// A PNG in a format this reader does not take (it reads 8-bit RGB and RGBA).
    #[error("unsupported PNG format {0}; save it as 8-bit RGB or RGBA")]
    Format(String),
}

/// An 8-bit RGBA image, row-major, 4 bytes per pixel; or an opaque one kept as RGB, 3 bytes
/// per pixel ([`RgbaImage::opaque`]), whose alpha is always 255.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbaImage {
    width: u32,
    height: u32,
    data: Vec<u8>,
    /// Bytes per pixel: 4 (RGBA) or 3 (opaque RGB).
    channels: usize,
}

impl RgbaImage {
    /// A `width` x `height` image filled with `fill`.
    pub fn new(width: u32, height: u32, fill: Rgba) -> Self {
        let n = width as usize * height as usize;
        let mut data = Vec::with_capacity(n * 4);
        for _ in 0..n {
            data.extend_from_slice(&fill);
        }
        Self {
            width,
            height,
            data,
            channels: 4,
        }
    }

    /// Wrap an existing RGBA buffer (e.g. a capture from X11 converted to RGBA).
    pub fn from_raw(width: u32, height: u32, data: Vec<u8>) -> Result<Self, AnnotateError> {
        Self::of(width, height, data, 4)
    }

    /// Convert a row-major RGB buffer (3 bytes a pixel, as an X11 capture gives) to RGBA.
    pub fn from_rgb(width: u32, height: u32, rgb: &[u8]) -> Result<Self, AnnotateError> {
        check_len(width, height, rgb.len(), 3)?;
        let mut data = vec![255; rgb.len() / 3 * 4];
        for (to, px) in data.chunks_exact_mut(4).zip(rgb.chunks_exact(3)) {
            to[..3].copy_from_slice(px);
        }
        Self::of(width, height, data, 4)
    }

    /// Take a row-major RGB buffer (3 bytes a pixel) as an opaque image, kept as RGB: drawn on
    /// and encoded without a copy to RGBA. A screenshot annotated at every observation is
    /// one: converting a 1280x1024 capture to RGBA and encoding the extra channel cost about
    /// 1 ms of the observation's 20 after a cell entry (docs/desktop.md).
    pub fn opaque(width: u32, height: u32, rgb: Vec<u8>) -> Result<Self, AnnotateError> {
        Self::of(width, height, rgb, 3)
    }

    /// An image of `channels` bytes a pixel over `data`, which must hold exactly its pixels.
    fn of(width: u32, height: u32, data: Vec<u8>, channels: usize) -> Result<Self, AnnotateError> {
        check_len(width, height, data.len(), channels)?;
        Ok(Self {
            width,
            height,
            data,
            channels,
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The raw bytes: RGBA, or RGB for an image made by [`RgbaImage::opaque`].
    pub fn as_raw(&self) -> &[u8] {
        &self.data
    }

    /// The colour at `(x, y)`, or `None` outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> Option<Rgba> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let n = self.channels;
        let i = (y as usize * self.width as usize + x as usize) * n;
        let p = self.data.get(i..i + n)?;
        Some([p[0], p[1], p[2], if n == 4 { p[3] } else { 255 }])
    }

    /// Set one pixel; coordinates outside the image are ignored (clipping).
    pub fn put(&mut self, x: i64, y: i64, c: Rgba) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let n = self.channels;
        let i = (y as usize * self.width as usize + x as usize) * n;
        if let Some(p) = self.data.get_mut(i..i + n) {
            p.copy_from_slice(&c[..n]);
        }
    }

    /// Fill a rectangle (clipped to the image).
    pub fn fill_rect(&mut self, r: Rect, c: Rgba) {
        let (x0, y0, x1, y1) = self.clip(r);
        for y in y0..y1 {
            for x in x0..x1 {
                self.put(x, y, c);
            }
        }
    }

    /// Draw a rectangle outline `thickness` pixels wide (clipped to the image).
    pub fn stroke_rect(&mut self, r: Rect, thickness: u32, c: Rgba) {
        let t = thickness.min(r.w.div_ceil(2)).min(r.h.div_ceil(2));
        if t == 0 {
            return;
        }
        let (x, y, w, h) = (r.x, r.y, r.w, r.h);
        let bottom = y.saturating_add(h.saturating_sub(t) as i32);
        let right = x.saturating_add(w.saturating_sub(t) as i32);
        self.fill_rect(Rect { x, y, w, h: t }, c);
        self.fill_rect(
            Rect {
                x,
                y: bottom,
                w,
                h: t,
            },
            c,
        );
        self.fill_rect(Rect { x, y, w: t, h }, c);
        self.fill_rect(
            Rect {
                x: right,
                y,
                w: t,
                h,
            },
            c,
        );
    }

    /// Draw `text` with the built-in font, top-left corner at `(x, y)`, each font pixel
    /// `scale` x `scale` image pixels. Returns the width drawn.
    pub fn draw_text(&mut self, x: i32, y: i32, text: &str, scale: u32, c: Rgba) -> u32 {
        let scale = scale.max(1);
        let mut cx = i64::from(x);
        for ch in text.chars() {
            let rows = glyph(ch);
            for (row, bits) in rows.iter().enumerate() {
                for col in 0..GLYPH_W {
                    if bits & (1 << (GLYPH_W - 1 - col)) == 0 {
                        continue;
                    }
                    for dy in 0..scale {
                        for dx in 0..scale {
                            self.put(
                                cx + i64::from(col * scale + dx),
                                i64::from(y) + i64::from(row as u32 * scale + dy),
                                c,
                            );
                        }
                    }
                }
            }
            cx += i64::from((GLYPH_W + 1) * scale);
        }
        text_width(text, scale)
    }

    /// Copy `src` onto this image with its top-left corner at `(x, y)` (clipped).
    pub fn blit(&mut self, src: &RgbaImage, x: i32, y: i32) {
        for sy in 0..src.height {
            for sx in 0..src.width {
                if let Some(c) = src.pixel(sx, sy) {
                    self.put(
                        i64::from(x) + i64::from(sx),
                        i64::from(y) + i64::from(sy),
                        c,
                    );
                }
            }
        }
    }

    fn clip(&self, r: Rect) -> (i64, i64, i64, i64) {
        let x0 = i64::from(r.x).max(0);
        let y0 = i64::from(r.y).max(0);
        let x1 = (i64::from(r.x) + i64::from(r.w)).min(i64::from(self.width));
        let y1 = (i64::from(r.y) + i64::from(r.h)).min(i64::from(self.height));
        (x0, y0, x1.max(x0), y1.max(y0))
    }
}

/// Whether a buffer of `len` bytes holds a `width` x `height` image of `channels` bytes a
/// pixel.
fn check_len(width: u32, height: u32, len: usize, channels: usize) -> Result<(), AnnotateError> {
    let expected = width as usize * height as usize * channels;
    if len == expected {
        Ok(())
    } else {
        Err(AnnotateError::BadBuffer {
            width,
            height,
            expected,
            got: len,
        })
    }
}

const GLYPH_W: u32 = 3;
/// Height of a glyph of the built-in font, in font pixels (before scaling).
pub const GLYPH_H: u32 = 5;

/// The 3x5 glyph of a character: five rows, the three low bits of each row left to right.
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b001, 0b001, 0b001],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        ' ' => [0; 5],
        '-' => [0b000, 0b000, 0b111, 0b000, 0b000],
        '.' => [0b000, 0b000, 0b000, 0b000, 0b010],
        _ => [0b111, 0b001, 0b011, 0b000, 0b010],
    }
}

/// Width in pixels of `text` drawn at `scale` (no trailing gap).
pub fn text_width(text: &str, scale: u32) -> u32 {
    let n = text.chars().count() as u32;
    if n == 0 {
        0
    } else {
        n * (GLYPH_W + 1) * scale.max(1) - scale.max(1)
    }
}

/// Box colours, cycled by label index so neighbouring boxes differ.
/// The box colours, cycled by label number (label 1 gets the first).
pub const PALETTE: &[Rgba] = &[
    [220, 30, 30, 255],
    [20, 110, 220, 255],
    [20, 150, 60, 255],
    [200, 110, 0, 255],
    [150, 40, 180, 255],
    [0, 140, 150, 255],
];

/// Translate a screen rectangle into the pixels of an image whose top-left corner is at
/// `origin` on screen (e.g. a window's rectangle).
pub fn to_image_rect(screen: Rect, origin: Rect) -> Rect {
    Rect {
        x: screen.x.saturating_sub(origin.x),
        y: screen.y.saturating_sub(origin.y),
        w: screen.w,
        h: screen.h,
    }
}

/// Font scale of the label tags [`draw_annotations`] draws (the report finds tags by it).
pub const TAG_SCALE: u32 = 3;
/// Padding around the label inside a tag, in image pixels.
pub const TAG_PAD: u32 = 2;

/// Draw the annotation boxes onto `image` in place: for each `(label, rect)` an outline and,
/// at the box's top-left corner, a filled tag with the label in white. The colour cycles with
/// the label's number (`"1"`, `"2"`, ...; with the position for other labels).
pub fn draw_annotations<L: AsRef<str>>(image: &mut RgbaImage, labels: &[(L, Rect)]) {
    const SCALE: u32 = TAG_SCALE;
    const PAD: u32 = TAG_PAD;
    for (i, (label, rect)) in labels.iter().enumerate() {
        let label = label.as_ref();
        // The colour follows the label number, so a subset of the labels (the simulated
        // desktop skips covered ones) keeps the colours of the full set.
        let n = label
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .unwrap_or(i);
        let color = PALETTE[n % PALETTE.len()];
        image.stroke_rect(*rect, 2, color);
        let tag = Rect {
            x: rect.x,
            y: rect.y,
            w: text_width(label, SCALE) + 2 * PAD,
            h: GLYPH_H * SCALE + 2 * PAD,
        };
        image.fill_rect(tag, color);
        image.draw_text(
            rect.x.saturating_add(PAD as i32),
            rect.y.saturating_add(PAD as i32),
            label,
            SCALE,
            [255, 255, 255, 255],
        );
    }
}

/// Draw numbered boxes (see [`draw_annotations`]) on a copy of `image` and encode it as PNG.
///
/// The image itself is left unchanged, so the caller can keep the clean screenshot.
pub fn annotate<L: AsRef<str>>(
    image: &RgbaImage,
    labels: &[(L, Rect)],
) -> Result<Vec<u8>, AnnotateError> {
    let mut copy = image.clone();
    draw_annotations(&mut copy, labels);
    encode_png(&copy)
}

/// Encode an image as an RGBA PNG, or RGB for an opaque one (fast compression: screenshots are taken every step).
pub fn encode_png(image: &RgbaImage) -> Result<Vec<u8>, AnnotateError> {
    let (width, height) = (image.width, image.height);
    if width == 0 || height == 0 {
        return Err(AnnotateError::BadSize {
            width,
            height,
            reason: "it has no pixels",
        });
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(if image.channels == 3 {
            png::ColorType::Rgb
        } else {
            png::ColorType::Rgba
        });
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&image.data)?;
        writer.finish()?;
    }
    Ok(out)
}

/// Encode an image as a [`Screenshot`].
pub fn to_screenshot(image: &RgbaImage) -> Result<Screenshot, AnnotateError> {
    Ok(Screenshot {
        png: Arc::new(encode_png(image)?),
        width: image.width,
        height: image.height,
    })
}

/// Annotate (see [`annotate`]) and wrap the PNG as a [`Screenshot`].
pub fn annotated_screenshot<L: AsRef<str>>(
    image: &RgbaImage,
    labels: &[(L, Rect)],
) -> Result<Screenshot, AnnotateError> {
    Ok(Screenshot {
        png: Arc::new(annotate(image, labels)?),
        width: image.width,
        height: image.height,
    })
}

/// Decode a PNG into an [`RgbaImage`] (RGBA or RGB, 8 bits). Used by tests and by tools that
/// re-annotate saved screenshots.
pub fn decode_png(bytes: &[u8]) -> Result<RgbaImage, AnnotateError> {
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf)?;
    buf.truncate(info.buffer_size());
    let data = match (info.color_type, info.bit_depth) {
        (png::ColorType::Rgba, png::BitDepth::Eight) => buf,
        (png::ColorType::Rgb, png::BitDepth::Eight) => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        (ct, bd) => return Err(AnnotateError::Format(format!("{ct:?} {bd:?}"))),
    };
    RgbaImage::from_raw(info.width, info.height, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_decodes_round_trip() {
        let mut img = RgbaImage::new(40, 30, [255, 255, 255, 255]);
        img.fill_rect(Rect::new(5, 5, 10, 10), [0, 0, 0, 255]);
        let png = encode_png(&img).expect("encode");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let back = decode_png(&png).expect("decode");
        assert_eq!(back, img);
    }

    #[test]
    fn annotate_draws_boxes_and_digits_without_touching_the_original() {
        let img = RgbaImage::new(120, 80, [255, 255, 255, 255]);
        let png = annotate(
            &img,
            &[
                ("1", Rect::new(10, 10, 60, 30)),
                ("12", Rect::new(10, 45, 60, 30)),
            ],
        )
        .expect("annotate");
        let out = decode_png(&png).expect("decode");
        assert_eq!((out.width(), out.height()), (120, 80));
        assert_ne!(out, img);
        assert!(img.as_raw().iter().all(|b| *b == 255), "original unchanged");
        // The outline of the first box is the first palette colour.
        assert_eq!(out.pixel(69, 20), Some(PALETTE[0]));
        // The second box has the colour of its number, a different one.
        assert_eq!(out.pixel(69, 60), Some(PALETTE[11 % PALETTE.len()]));
        assert_ne!(PALETTE[11 % PALETTE.len()], PALETTE[0]);
        // Digit "1": its middle column is white inside the tag.
        assert_eq!(out.pixel(15, 13), Some([255, 255, 255, 255]));
    }

    #[test]
    fn different_labels_draw_differently() {
        let img = RgbaImage::new(60, 40, [255, 255, 255, 255]);
        let a = annotate(&img, &[("1", Rect::new(5, 5, 40, 25))]).expect("a");
        let b = annotate(&img, &[("7", Rect::new(5, 5, 40, 25))]).expect("b");
        assert_ne!(decode_png(&a).expect("a"), decode_png(&b).expect("b"));
    }

    #[test]
    fn drawing_is_clipped_to_the_image() {
        let mut img = RgbaImage::new(10, 10, [0, 0, 0, 255]);
        img.fill_rect(Rect::new(-5, -5, 100, 100), [1, 2, 3, 255]);
        img.stroke_rect(Rect::new(8, 8, 50, 50), 3, [9, 9, 9, 255]);
        draw_annotations(&mut img, &[("99", Rect::new(-20, 5, 5, 5))]);
        assert_eq!(img.pixel(0, 0), Some([1, 2, 3, 255]));
        assert_eq!(img.pixel(9, 9), Some([9, 9, 9, 255]));
        assert_eq!(img.pixel(10, 0), None);
    }

    #[test]
    fn bad_buffers_and_sizes_are_errors() {
        let e = RgbaImage::from_raw(2, 2, vec![0; 3]).expect_err("short buffer");
        assert!(e.to_string().contains("needs 16"), "{e}");
        let e = encode_png(&RgbaImage::new(0, 5, [0; 4])).expect_err("empty");
        assert!(e.to_string().contains("no pixels"), "{e}");
        assert!(decode_png(b"not a png").is_err());
    }

    #[test]
    fn an_opaque_rgb_image_draws_and_encodes_as_its_rgba_copy_does() {
        let (w, h) = (40u32, 30u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let labels = [
            ("1", Rect::new(2, 3, 20, 12)),
            ("27", Rect::new(15, 10, 30, 25)),
        ];
        let mut rgba = RgbaImage::from_rgb(w, h, &rgb).expect("rgba");
        let mut opaque = RgbaImage::opaque(w, h, rgb).expect("opaque");
        draw_annotations(&mut rgba, &labels);
        draw_annotations(&mut opaque, &labels);
        assert_eq!(opaque.as_raw().len(), (w * h * 3) as usize, "kept as RGB");
        for (x, y) in [(0, 0), (2, 3), (5, 5), (16, 11), (39, 29), (21, 14)] {
            assert_eq!(opaque.pixel(x, y), rgba.pixel(x, y), "pixel ({x}, {y})");
        }
        let png = encode_png(&opaque).expect("encode");
        assert_eq!(
            decode_png(&png).expect("decode"),
            rgba,
            "the PNG holds what was drawn"
        );
        let e = RgbaImage::opaque(2, 2, vec![0; 11]).expect_err("short buffer");
        assert!(e.to_string().contains("needs 12"), "{e}");
    }

    #[test]
    fn screen_rects_translate_to_image_rects() {
        let win = Rect::new(100, 50, 480, 300);
        assert_eq!(
            to_image_rect(Rect::new(112, 90, 20, 10), win),
            Rect::new(12, 40, 20, 10)
        );
        assert_eq!(text_width("12", 2), 14);
        assert_eq!(text_width("", 2), 0);
    }
}
