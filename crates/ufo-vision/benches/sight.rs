//! The numbers of docs/sight.md: detection on 1280×800 UI scenes this benchmark renders
//! itself (benches/scene/mod.rs: four fonts, sizes 9 to 24 px, light and dark themes): word recall
//! and precision, box IoU, milliseconds per first read, per cached read, and per read of a
//! window changed in one small part (only that part read again) against a whole read of it.
//!
//! Run: `OMP_THREAD_LIMIT=1 cargo bench -p ufo-vision --features tesseract --bench sight`
//! (add `-- quick` for one font). Without `OMP_THREAD_LIMIT=1` reads are several times slower
//! on a busy machine.

#[allow(dead_code)]
mod scene;

use std::time::Instant;

use scene::{font, render, score, Score, Theme, FONTS};
use ufo_core::vision::{CachedDetector, DetectRequest, Detector, RegionImage};
use ufo_vision::TesseractDetector;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    if std::env::var("OMP_THREAD_LIMIT").as_deref() != Ok("1") {
        eprintln!("warning: OMP_THREAD_LIMIT=1 is not set: timings will be slower than ufo's");
    }
    let detector = TesseractDetector::default();
    let t = Instant::now();
    if let Err(e) = detector.warm_up() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    println!("engine start: {:.0} ms", ms(t));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let cached = CachedDetector::new(detector.clone(), 8);
    let sizes: &[f32] = &[9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 16.0, 18.0, 20.0, 24.0];
    let fonts = if quick { &FONTS[..1] } else { FONTS };
    let (mut small, mut large) = (Score::default(), Score::default());
    let (mut first, mut again) = (Vec::new(), Vec::new());
    let (mut part, mut whole) = (Vec::new(), Vec::new());
    println!("font | size | theme | recall | precision | IoU | first ms | cached ms");
    for (name, path) in fonts {
        let Some(f) = font(path) else {
            eprintln!(
                "skipping {name}: {path} is missing (install fonts-dejavu-core fonts-liberation2)"
            );
            continue;
        };
        for &size in sizes {
            for theme in [Theme::Light, Theme::Dark] {
                let scene = render(&f, size, theme);
                let region = scene.region();
                let t = Instant::now();
                let boxes = detector
                    .detect_blocking(&region, DetectRequest::Controls)
                    .expect("a scene is read");
                let first_ms = ms(t);
                // Fill the cache, then time a hit.
                rt.block_on(cached.detect(&region, DetectRequest::Controls))
                    .expect("a scene is read");
                let t = Instant::now();
                rt.block_on(cached.detect(&region, DetectRequest::Controls))
                    .expect("from memory");
                let cached_ms = ms(t);
                if (12.0..=16.0).contains(&size) {
                    let changed = changed_in_part(&region);
                    let t = Instant::now();
                    rt.block_on(cached.detect(&changed, DetectRequest::Controls))
                        .expect("the changed part is read");
                    part.push(ms(t));
                    let t = Instant::now();
                    detector
                        .detect_blocking(&changed, DetectRequest::Controls)
                        .expect("a scene is read");
                    whole.push(ms(t));
                }
                let s = score(&scene.words, &boxes);
                println!(
                    "{name} | {size} | {theme:?} | {:.3} | {:.3} | {:.2} | {first_ms:.0} | {cached_ms:.2}",
                    s.recall(),
                    s.precision(),
                    s.mean_iou()
                );
                if size >= 12.0 {
                    large.add(s);
                    if (12.0..=16.0).contains(&size) {
                        first.push(first_ms);
                    }
                } else {
                    small.add(s);
                }
                again.push(cached_ms);
            }
        }
    }
    println!(
        "\n>= 12 px: recall {:.3}, precision {:.3}, IoU {:.2} ({} words)",
        large.recall(),
        large.precision(),
        large.mean_iou(),
        large.truth
    );
    println!(
        "9-11 px: recall {:.3}, precision {:.3}, IoU {:.2} ({} words)",
        small.recall(),
        small.precision(),
        small.mean_iou(),
        small.truth
    );
    println!(
        "first read of a 1280x800 window at 12-16 px: median {:.0} ms, p90 {:.0} ms; cached: median {:.2} ms, max {:.2} ms",
        percentile(&mut first.clone(), 0.5),
        percentile(&mut first, 0.9),
        percentile(&mut again.clone(), 0.5),
        percentile(&mut again, 1.0),
    );
    println!(
        "changed in one 40x20 patch at 12-16 px: read in part median {:.0} ms, max {:.0} ms; the same read whole median {:.0} ms",
        percentile(&mut part.clone(), 0.5),
        percentile(&mut part, 1.0),
        percentile(&mut whole, 0.5),
    );
    let stats = cached.stats();
    println!(
        "cache: {} hits, {} misses ({} read in part)",
        stats.hits, stats.misses, stats.partial
    );
}

/// `region` with a 40×20 patch near its middle inverted (a changed display, a new digit).
fn changed_in_part(region: &RegionImage) -> RegionImage {
    let bpp = region.format().bytes_per_pixel();
    let (w, h) = (region.width() as usize, region.height() as usize);
    let mut px = region.pixels().to_vec();
    for y in h / 2..(h / 2 + 20).min(h) {
        for x in w / 2..(w / 2 + 40).min(w) {
            for b in 0..bpp {
                let i = (y * w + x) * bpp + b;
                px[i] = 255 - px[i];
            }
        }
    }
    RegionImage::new(
        region.origin(),
        region.width(),
        region.height(),
        region.format(),
        px,
    )
    .expect("the same size")
}
