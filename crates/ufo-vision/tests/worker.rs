//! The `ufo-sight` worker through the light client ufo links ([`WorkerDetector`]): the same
//! boxes as the engine read in-process, a region's text, a bad request answered with its
//! error, and a killed worker started again on the next read.

#[allow(dead_code)]
#[path = "../benches/scene/mod.rs"]
mod scene;

use std::path::PathBuf;
use std::time::Duration;

use scene::{font, render, render_display, Theme, FONTS};
use ufo_core::vision::{DetectRequest, Detector, PixelFormat, RegionImage};
use ufo_vision::{TesseractDetector, WorkerDetector};

fn worker() -> WorkerDetector {
    WorkerDetector::new(
        PathBuf::from(env!("CARGO_BIN_EXE_ufo-sight")),
        Duration::from_secs(20),
    )
}

fn dejavu() -> ab_glyph::FontVec {
    font(FONTS[0].1).expect("DejaVu Sans: run scripts/test-deps.sh install_sight")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_reads_what_the_engine_reads_in_process() {
    let s = render(&dejavu(), 14.0, Theme::Light);
    let moved = RegionImage::new((40, 30), s.w, s.h, PixelFormat::Rgb8, s.rgb.clone())
        .expect("the scene's pixels");
    let local = TesseractDetector::default()
        .detect_blocking(&moved, DetectRequest::Controls)
        .expect("read in process");
    let remote = worker()
        .detect(&moved, DetectRequest::Controls)
        .await
        .expect("read by the worker");
    assert!(!remote.is_empty());
    assert_eq!(remote, local, "the pipe loses nothing, origin included");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_is_started_again_on_the_next_read() {
    let d = worker();
    let s = render_display(&dejavu(), 20.0, "84");
    let region = s.region();
    let first = d
        .detect(&region, DetectRequest::ReadText)
        .await
        .expect("read");
    assert_eq!(first.first().map(|b| b.text.as_str()), Some("84"));
    // kill every ufo-sight this test started: the next read finds the pipe broken once, then
    // a fresh worker answers
    let pid_of_ours = std::process::Command::new("pgrep")
        .args(["-P", &std::process::id().to_string(), "ufo-sight"])
        .output()
        .expect("pgrep");
    for pid in String::from_utf8_lossy(&pid_of_ours.stdout).split_whitespace() {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    let mut again = d.detect(&region, DetectRequest::ReadText).await;
    if again.is_err() {
        again = d.detect(&region, DetectRequest::ReadText).await;
    }
    assert_eq!(
        again
            .expect("a fresh worker")
            .first()
            .map(|b| b.text.as_str()),
        Some("84")
    );
}
