//! A tall image read as two overlapping horizontal bands at once, one on the calling thread's
//! engine and one on a helper thread's (docs/sight.md, "Measured"): Tesseract reads one image
//! on one core, and a window's first read is most of a step's cost. Each word is kept from the
//! band its centre falls in, on its side of the cut, so a word crossing the cut is kept once
//! and whole (the bands overlap by more than a line of text).

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};

use ufo_core::vision::DetectError;

use crate::engine::{with_engine, Engine, Segmentation};
use crate::pixels::{upscale2, Gray};
use crate::tsv::TsvWord;

/// Images shorter than this (source pixels) are read in one piece: splitting costs more than
/// it saves.
pub const MIN_SPLIT_HEIGHT: u32 = 240;

/// How far each band reaches past the cut, in source pixels: more than the tallest line of
/// text read (48 px), so a word cut by one band's edge lies whole in the other.
pub const OVERLAP: u32 = 64;

/// One band for the helper thread, and where to send its words.
struct Job {
    img: Gray,
    offset: (i32, i32),
    reply: Sender<Result<Vec<TsvWord>, DetectError>>,
}

/// The helper thread's queue, started on first use and kept for the process's life (its
/// engine loads once).
fn helper() -> Option<Sender<Job>> {
    static HELPER: OnceLock<Mutex<Option<Sender<Job>>>> = OnceLock::new();
    let slot = HELPER.get_or_init(|| {
        let (tx, rx): (Sender<Job>, Receiver<Job>) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("ufo-sight-band".into())
            .spawn(move || {
                for job in rx {
                    let words =
                        with_engine(|e| e.read(&job.img, Segmentation::Sparse, 2, job.offset));
                    let _ = job.reply.send(words);
                }
            });
        Mutex::new(started.ok().map(|_| tx))
    });
    slot.lock().ok().and_then(|s| s.clone())
}

/// Rows `[top, bottom)` of a source image.
pub type Rows = (u32, u32);

/// Where a source image of height `h` is cut, and the two bands' rows; `None` when it is read
/// in one piece.
pub fn cut(h: u32) -> Option<(u32, Rows, Rows)> {
    if h < MIN_SPLIT_HEIGHT {
        return None;
    }
    let at = h / 2;
    Some((
        at,
        (0, (at + OVERLAP).min(h)),
        (at.saturating_sub(OVERLAP), h),
    ))
}

/// The words of `src` (unscaled; read at 2×, sparse), in `src`'s pixels: two bands at once
/// when it is tall enough and the helper thread runs, else one read on `engine`.
pub fn read_sparse(engine: &mut Engine, src: &Gray) -> Result<Vec<TsvWord>, DetectError> {
    let whole = |engine: &mut Engine| engine.read(&upscale2(src), Segmentation::Sparse, 2, (0, 0));
    let (Some((at, top, bottom)), Some(helper)) = (cut(src.h), helper()) else {
        return whole(engine);
    };
    let band = |(y0, y1): (u32, u32)| {
        src.crop(ufo_core::Rect::new(0, y0 as i32, src.w, y1 - y0))
            .map(|g| upscale2(&g))
    };
    let (Some(upper), Some(lower)) = (band(top), band(bottom)) else {
        return whole(engine);
    };
    let (reply, answer) = mpsc::channel();
    let job = Job {
        img: lower,
        offset: (0, bottom.0 as i32),
        reply,
    };
    if helper.send(job).is_err() {
        return whole(engine);
    }
    let mine = engine.read(&upper, Segmentation::Sparse, 2, (0, 0));
    let theirs = answer
        .recv()
        .map_err(|_| DetectError::Engine("the second reading thread stopped".into()))?;
    Ok(join(mine?, theirs?, at))
}

/// The words of the upper band whose centre lies above the cut `at`, then the lower band's
/// at or below it.
pub fn join(upper: Vec<TsvWord>, lower: Vec<TsvWord>, at: u32) -> Vec<TsvWord> {
    let centre = |w: &TsvWord| 2 * i64::from(w.word.rect.y) + i64::from(w.word.rect.h);
    let cut = 2 * i64::from(at);
    upper
        .into_iter()
        .filter(|w| centre(w) < cut)
        .chain(lower.into_iter().filter(|w| centre(w) >= cut))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ufo_core::vision::DetectedWord;
    use ufo_core::Rect;

    fn word(text: &str, y: i32, h: u32) -> TsvWord {
        TsvWord {
            line: (1, 1, 1),
            word: DetectedWord {
                text: text.into(),
                rect: Rect::new(10, y, 40, h),
                confidence: 0.9,
            },
        }
    }

    #[test]
    fn a_word_across_the_cut_is_kept_once() {
        // the cut at 400: "across" (392..412, centre 402) is read by both bands
        let upper = vec![word("top", 10, 16), word("across", 392, 20)];
        let lower = vec![word("across", 392, 20), word("low", 700, 16)];
        let got: Vec<String> = join(upper, lower, 400)
            .into_iter()
            .map(|w| w.word.text)
            .collect();
        assert_eq!(got, ["top", "across", "low"]);
    }

    #[test]
    fn short_images_are_not_cut_and_bands_overlap() {
        assert_eq!(cut(100), None);
        let (at, top, bottom) = cut(800).expect("cut");
        assert_eq!(at, 400);
        assert_eq!(top, (0, 464));
        assert_eq!(bottom, (336, 800));
        assert!(top.1 - at >= OVERLAP && at - bottom.0 >= OVERLAP);
    }
}
