//! Sight (docs/sight.md): controls found in the pixels where the accessibility tree is silent.
//!
//! The [`Detector`] port takes one screen region's pixels and returns the text boxes it reads
//! there. Beside it are the pure rules of the feature, each without I/O:
//! - [`group`]: words grouped into controls as a person reads them, and the word filter;
//! - [`merge`]: detected boxes added to the tree's controls where they overlap none, the
//!   overlap measure, and when to detect at all ([`VisionMode`]);
//! - [`cache`]: a detector wrapper that answers an unchanged region from memory;
//! - [`pixel_changes`]: where a window's pixels changed over an action, for the change
//!   evidence.
//!
//! Name resolution reaches a detected control only after every tree control
//! (docs/resolution.md, `crate::agent::resolution`).

pub mod cache;
pub mod group;
pub mod merge;
pub mod pixel_changes;
pub mod reread;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::ports::Rect;

pub use cache::{CacheStats, CachedDetector, TileHashes};
pub use group::{filter_words, group_words, GroupRule};
pub use merge::{
    iou, merge_with_tree, when_to_detect, DetectDecision, DetectPolicy, DetectReason, Hints,
    SkipReason, VisionMode,
};

/// The largest side of a region a detector accepts, in pixels: bounds the memory one request
/// may take (a 8K screen fits).
pub const MAX_REGION_SIDE: u32 = 8192;

/// How the bytes of a [`RegionImage`] are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PixelFormat {
    /// One byte of gray per pixel.
    Gray8,
    /// Red, green, blue: three bytes per pixel.
    Rgb8,
    /// Red, green, blue, alpha: four bytes per pixel.
    Rgba8,
}

impl PixelFormat {
    /// Bytes one pixel takes.
    pub const fn bytes_per_pixel(self) -> usize {
        match self {
            Self::Gray8 => 1,
            Self::Rgb8 => 3,
            Self::Rgba8 => 4,
        }
    }
}

/// The pixels of one screen region, as captured (no file, no PNG): rows top to bottom, no
/// padding between rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionImage {
    /// Where the region's top-left pixel is on the screen.
    origin: (i32, i32),
    width: u32,
    height: u32,
    format: PixelFormat,
    pixels: Arc<[u8]>,
}

impl RegionImage {
    /// A region of `width` × `height` pixels of `format` whose top-left pixel is at `origin`
    /// on the screen. Fails when the size is zero or above [`MAX_REGION_SIDE`], or when
    /// `pixels` does not hold exactly that many pixels.
    pub fn new(
        origin: (i32, i32),
        width: u32,
        height: u32,
        format: PixelFormat,
        pixels: impl Into<Arc<[u8]>>,
    ) -> Result<Self, DetectError> {
        let pixels = pixels.into();
        if width == 0 || height == 0 || width > MAX_REGION_SIDE || height > MAX_REGION_SIDE {
            return Err(DetectError::BadImage(format!(
                "a region of {width}x{height} pixels cannot be read; each side must be 1 to \
                 {MAX_REGION_SIDE} pixels: capture a smaller or non-empty region"
            )));
        }
        let want = width as usize * height as usize * format.bytes_per_pixel();
        if pixels.len() != want {
            return Err(DetectError::BadImage(format!(
                "a {width}x{height} {format:?} region needs {want} bytes but {} were given: \
                 pass the pixels without row padding in the format named",
                pixels.len()
            )));
        }
        Ok(Self {
            origin,
            width,
            height,
            format,
            pixels,
        })
    }

    /// Where the region's top-left pixel is on the screen.
    pub fn origin(&self) -> (i32, i32) {
        self.origin
    }
    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }
    /// The layout of [`Self::pixels`].
    pub fn format(&self) -> PixelFormat {
        self.format
    }
    /// The pixel bytes, rows top to bottom.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }
    /// The region's rectangle on the screen.
    pub fn rect(&self) -> Rect {
        Rect::new(self.origin.0, self.origin.1, self.width, self.height)
    }

    /// The pixels of `area` (screen pixels), which must lie inside this region; `None`
    /// otherwise.
    pub fn part(&self, area: Rect) -> Option<RegionImage> {
        let (dx, dy) = (
            i64::from(area.x) - i64::from(self.origin.0),
            i64::from(area.y) - i64::from(self.origin.1),
        );
        let fits = dx >= 0
            && dy >= 0
            && dx + i64::from(area.w) <= i64::from(self.width)
            && dy + i64::from(area.h) <= i64::from(self.height);
        if !fits {
            return None;
        }
        let bpp = self.format.bytes_per_pixel();
        let stride = self.width as usize * bpp;
        let (x0, w) = (dx as usize * bpp, area.w as usize * bpp);
        let mut out = Vec::with_capacity(w * area.h as usize);
        for row in dy as usize..dy as usize + area.h as usize {
            let start = row * stride + x0;
            out.extend_from_slice(self.pixels.get(start..start + w)?);
        }
        RegionImage::new((area.x, area.y), area.w, area.h, self.format, out).ok()
    }
}

/// What a detected box is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedKind {
    /// Words read as one control's label: a menu entry, a line of a list, a label.
    Text,
    /// A label inside a drawn frame: button-like (a calculator's key).
    FramedText,
}

/// One word read, in screen pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectedWord {
    /// The text read.
    pub text: String,
    /// Its box on the screen.
    pub rect: Rect,
    /// How sure the reader is, 0 to 1.
    pub confidence: f32,
}

/// One detected control: a group of words, in screen pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectedBox {
    /// The words joined by one space.
    pub text: String,
    /// The union of the words' boxes (or the frame's inside, for [`DetectedKind::FramedText`]).
    pub rect: Rect,
    /// The lowest confidence of its words, 0 to 1.
    pub confidence: f32,
    /// What it is.
    pub kind: DetectedKind,
    /// Its words, left to right.
    pub words: Vec<DetectedWord>,
}

impl DetectedBox {
    /// The same box moved by (`dx`, `dy`), words included.
    pub fn translated(&self, dx: i32, dy: i32) -> Self {
        let mv = |r: Rect| Rect::new(r.x.saturating_add(dx), r.y.saturating_add(dy), r.w, r.h);
        Self {
            rect: mv(self.rect),
            words: self
                .words
                .iter()
                .map(|w| DetectedWord {
                    rect: mv(w.rect),
                    ..w.clone()
                })
                .collect(),
            ..self.clone()
        }
    }
}

/// What a caller wants from a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectRequest {
    /// Every control of the region: words grouped into labels, framed labels.
    Controls,
    /// The region's text as one box (a calculator's display, `read`).
    ReadText,
}

/// Why a detection failed. Each message says what to do. Serialisable so a worker process
/// can send it back as it is (docs/sight.md, "The worker").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectError {
    /// The pixels given cannot be read as the region described.
    #[error("detection refused the image: {0}")]
    BadImage(String),
    /// The engine or its model is not installed.
    #[error("text detection is unavailable: {what} is missing; install {install} and run again")]
    Missing {
        /// What was not found.
        what: String,
        /// The package(s) that provide it.
        install: String,
    },
    /// The engine failed on this region.
    #[error("text detection failed: {0}; the region was not read, act by coordinates or retry")]
    Engine(String),
    /// The engine did not answer in time.
    #[error(
        "text detection took more than {0} ms and was abandoned; read a smaller region or \
         raise the time limit"
    )]
    TimedOut(u64),
}

/// The port: a reader of a screen region's pixels.
#[async_trait]
pub trait Detector: Send + Sync {
    /// The boxes found in `region`, in screen coordinates (the region's origin added).
    /// Implementations bound their own time and memory.
    async fn detect(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError>;

    /// A number that changes whenever a setting changes what [`Detector::detect`] returns for
    /// the same pixels: part of [`CachedDetector`]'s key.
    fn settings_version(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_must_hold_exactly_its_pixels() {
        let ok = RegionImage::new((5, 7), 2, 3, PixelFormat::Rgb8, vec![0u8; 18]);
        assert_eq!(ok.expect("18 bytes of RGB").rect(), Rect::new(5, 7, 2, 3));
        let short = RegionImage::new((0, 0), 2, 3, PixelFormat::Rgba8, vec![0u8; 18]);
        assert!(
            matches!(short, Err(DetectError::BadImage(m)) if m.contains("24 bytes")),
            "a short buffer is refused with the size it needs"
        );
        assert!(RegionImage::new((0, 0), 0, 3, PixelFormat::Gray8, vec![]).is_err());
        assert!(RegionImage::new(
            (0, 0),
            MAX_REGION_SIDE + 1,
            1,
            PixelFormat::Gray8,
            vec![0u8; MAX_REGION_SIDE as usize + 1]
        )
        .is_err());
    }

    #[test]
    fn a_translated_box_moves_its_words_too() {
        let b = DetectedBox {
            text: "OK".into(),
            rect: Rect::new(1, 2, 10, 5),
            confidence: 0.9,
            kind: DetectedKind::Text,
            words: vec![DetectedWord {
                text: "OK".into(),
                rect: Rect::new(1, 2, 10, 5),
                confidence: 0.9,
            }],
        };
        let m = b.translated(100, -2);
        assert_eq!(m.rect, Rect::new(101, 0, 10, 5));
        assert_eq!(m.words[0].rect, Rect::new(101, 0, 10, 5));
    }
}
