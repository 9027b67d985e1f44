//! `ufo-vision`: sight for ufo-rs (docs/sight.md). Text and framed labels read in a screen
//! region's pixels, for `ufo_core::vision::Detector`.
//!
//! Without features this is the light client ufo links: [`WorkerDetector`] sends a region to
//! the worker process `ufo-sight` and reads its boxes back ([`protocol`]), so building ufo
//! needs no libtesseract. With the `tesseract` feature it also holds the engine, through
//! Debian's libtesseract and its English model (`tesseract-ocr-eng`; nothing is downloaded):
//! [`TesseractDetector`], its pixel steps and TSV parser, and the worker's loop
//! ([`serve`]) that the `ufo-sight` binary runs.
//!
//! The pure rules (grouping, merging with the tree, when to detect, the cache) live in
//! `ufo_core::vision`.

pub mod client;
pub mod protocol;

#[cfg(feature = "tesseract")]
pub mod bands;
#[cfg(feature = "tesseract")]
pub mod detector;
#[cfg(feature = "tesseract")]
pub mod engine;
#[cfg(feature = "tesseract")]
pub mod frames;
#[cfg(feature = "tesseract")]
pub mod pixels;
#[cfg(feature = "tesseract")]
pub mod tsv;
#[cfg(feature = "tesseract")]
pub mod worker;

pub use client::{find_worker, WorkerDetector, WORKER_INSTALL, WORKER_NAME};
#[cfg(feature = "tesseract")]
pub use detector::{Settings, TesseractDetector};
#[cfg(feature = "tesseract")]
pub use engine::{tessdata_dir, DEBIAN_TESSDATA};
#[cfg(feature = "tesseract")]
pub use worker::serve;
