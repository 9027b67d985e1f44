//! `ufo-vision`: sight for ufo-rs (docs/sight.md). The Tesseract implementation of
//! `ufo_core::vision::Detector`: text and framed labels read in a screen region's pixels,
//! through Debian's libtesseract and its English model (`tesseract-ocr-eng`; nothing is
//! downloaded).
//!
//! The pure rules (grouping, merging with the tree, when to detect, the cache) live in
//! `ufo_core::vision`; this crate holds the pixel steps, the engine and the TSV parser.
//!
//! A process that reads must start with `OMP_THREAD_LIMIT=1` in its environment (see
//! [`TesseractDetector`]).

pub mod detector;
pub mod engine;
pub mod frames;
pub mod pixels;
pub mod tsv;

pub use detector::{Settings, TesseractDetector};
pub use engine::{tessdata_dir, DEBIAN_TESSDATA};
