//! The Tesseract detector on images rendered here with known words and boxes (the scene of
//! benches/scene/mod.rs): words found where they were drawn, grouped into the controls a person
//! reads, a display read back, and a second read of the same pixels answered from the cache.

#[allow(dead_code)]
#[path = "../benches/scene/mod.rs"]
mod scene;

use scene::{font, render, render_display, score, Theme, FONTS};
use ufo_core::vision::{
    CachedDetector, DetectRequest, DetectedBox, DetectedKind, Detector, PixelFormat, RegionImage,
};
use ufo_vision::TesseractDetector;

fn dejavu() -> ab_glyph::FontVec {
    font(FONTS[0].1).unwrap_or_else(|| {
        panic!(
            "{} is missing: run `scripts/test-deps.sh` (it installs fonts-dejavu-core)",
            FONTS[0].1
        )
    })
}

fn texts(boxes: &[DetectedBox]) -> Vec<&str> {
    boxes.iter().map(|b| b.text.as_str()).collect()
}

#[test]
fn a_rendered_window_is_read_word_by_word_and_grouped_into_its_controls() {
    let f = dejavu();
    let detector = TesseractDetector::default();
    for theme in [Theme::Light, Theme::Dark] {
        let s = render(&f, 14.0, theme);
        let boxes = detector
            .detect_blocking(&s.region(), DetectRequest::Controls)
            .expect("the scene is read");
        let sc = score(&s.words, &boxes);
        assert!(
            sc.recall() >= 0.9 && sc.mean_iou() >= 0.8,
            "{theme:?}: recall {} IoU {}: {:?}",
            sc.recall(),
            sc.mean_iou(),
            texts(&boxes)
        );
        let got = texts(&boxes);
        // A two-word button is one control; menu bar items are not merged; the selected row
        // (white on blue) is read; "&" holds its label together.
        for want in [
            "Print Preview",
            "File",
            "Edit",
            "Sent Mail",
            "Privacy & Security",
        ] {
            assert!(got.contains(&want), "{theme:?}: {want:?} not among {got:?}");
        }
        let save = boxes
            .iter()
            .find(|b| b.text == "Save")
            .expect("the Save button");
        assert_eq!(
            save.kind,
            DetectedKind::FramedText,
            "a label alone in a frame"
        );
    }
}

#[test]
fn a_display_is_read_as_one_text() {
    let s = render_display(&dejavu(), 20.0, "84");
    let boxes = TesseractDetector::default()
        .detect_blocking(&s.region(), DetectRequest::ReadText)
        .expect("the display is read");
    assert_eq!(texts(&boxes), ["84"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_are_on_the_screen_and_unchanged_pixels_are_read_once() {
    let s = render(&dejavu(), 16.0, Theme::Light);
    let at =
        |x, y| RegionImage::new((x, y), s.w, s.h, PixelFormat::Rgb8, s.rgb.clone()).expect("rgb");
    let cached = CachedDetector::new(TesseractDetector::default(), 4);
    let first = cached
        .detect(&at(0, 0), DetectRequest::Controls)
        .await
        .expect("read");
    let moved = cached
        .detect(&at(300, 200), DetectRequest::Controls)
        .await
        .expect("from memory");
    assert_eq!(cached.stats().misses, 1);
    assert_eq!(cached.stats().hits, 1);
    assert_eq!(first.len(), moved.len());
    for (a, b) in first.iter().zip(&moved) {
        assert_eq!((b.rect.x - a.rect.x, b.rect.y - a.rect.y), (300, 200));
    }
}

#[test]
fn an_empty_or_tiny_region_reads_nothing() {
    let detector = TesseractDetector::default();
    for (w, h) in [(1, 1), (5, 40), (300, 200)] {
        let blank = RegionImage::new(
            (0, 0),
            w,
            h,
            PixelFormat::Gray8,
            vec![255u8; (w * h) as usize],
        )
        .expect("gray");
        for request in [DetectRequest::Controls, DetectRequest::ReadText] {
            let got = detector
                .detect_blocking(&blank, request)
                .expect("no failure");
            assert!(got.is_empty(), "{w}x{h} {request:?}: {got:?}");
        }
    }
}
