//! [`TesseractDetector`]: the [`Detector`] port over Tesseract (docs/sight.md, "How").
//!
//! Controls: gray → polarity → long lines removed → 2× → sparse-text read → words; framed
//! cells without a sure word inside read one by one (tight crop, 2×, 4× when unsure); words
//! filtered and grouped as a person reads them. ReadText: the ink cropped tight, read as one
//! line or one block at 1× and 2×, the surer reading kept.

use std::time::Duration;

use async_trait::async_trait;
use ufo_core::vision::{
    filter_words, group_words, DetectError, DetectRequest, DetectedBox, DetectedKind, DetectedWord,
    Detector, GroupRule, RegionImage,
};
use ufo_core::Rect;

use crate::engine::{with_engine, Engine, Segmentation};
use crate::frames::{framed_cells, CellSize};
use crate::pixels::{polarity, remove_lines, tight, upscale2, Gray, INK_BELOW};
use crate::tsv::TsvWord;

/// The settings of a [`TesseractDetector`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The word filter and grouping rule.
    pub group: GroupRule,
    /// Ink runs at least this long are lines, removed before reading.
    pub line_len: u32,
    /// A word at least this sure inside a frame means the frame needs no read of its own; a
    /// cell read below it is read again at 4×.
    pub sure: f32,
    /// The limits of a framed cell.
    pub cell: CellSize,
    /// The longest one detection may take before the caller stops waiting.
    pub timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            group: GroupRule::default(),
            line_len: 30,
            sure: 0.80,
            cell: CellSize::default(),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Text and framed labels read by Tesseract. Each thread that reads keeps its own engine;
/// [`Detector::detect`] reads on tokio's blocking threads and stops waiting after
/// [`Settings::timeout`].
///
/// The process must start with `OMP_THREAD_LIMIT=1` in its environment: Debian's
/// libtesseract uses OpenMP, which reads it only when the library loads, and without it a
/// read on a busy two-core machine is 3–4 times slower (docs/sight.md).
#[derive(Debug, Clone, Default)]
pub struct TesseractDetector {
    settings: Settings,
}

impl TesseractDetector {
    /// A detector with `settings`.
    pub fn new(settings: Settings) -> Self {
        Self { settings }
    }

    /// Make this thread's engine now (65–110 ms), so the first read does not pay for it; fails
    /// with the package to install when the model is missing.
    pub fn warm_up(&self) -> Result<(), DetectError> {
        with_engine(|_| Ok(()))
    }

    /// [`Detector::detect`] on this thread, without a time limit.
    pub fn detect_blocking(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        let gray = Gray::of(region);
        let (ox, oy) = region.origin();
        let boxes = with_engine(|engine| match request {
            DetectRequest::Controls => read_controls(engine, &gray, &self.settings),
            DetectRequest::ReadText => read_text(engine, &gray, &self.settings),
        })?;
        Ok(boxes.iter().map(|b| b.translated(ox, oy)).collect())
    }
}

#[async_trait]
impl Detector for TesseractDetector {
    async fn detect(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        let me = self.clone();
        let region = region.clone();
        let limit = self.settings.timeout;
        let work = tokio::task::spawn_blocking(move || me.detect_blocking(&region, request));
        match tokio::time::timeout(limit, work).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(DetectError::Engine(format!(
                "the reading thread failed: {e}"
            ))),
            Err(_) => Err(DetectError::TimedOut(limit.as_millis() as u64)),
        }
    }

    fn settings_version(&self) -> u64 {
        // The settings that change what is read, folded into one number.
        let s = &self.settings;
        let g = &s.group;
        [
            g.gap_k,
            g.line_tolerance,
            g.max_height_ratio,
            g.min_confidence,
            g.short_min_confidence,
            s.sure,
        ]
        .iter()
        .map(|v| u64::from(v.to_bits()))
        .chain([
            g.short_len as u64,
            u64::from(s.line_len),
            u64::from(s.cell.min),
            u64::from(s.cell.max_h),
        ])
        .fold(0xcbf2_9ce4_8422_2325, |h, v| {
            (h ^ v).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

/// The controls of a region (region pixels, origin (0, 0)).
fn read_controls(
    engine: &mut Engine,
    gray: &Gray,
    s: &Settings,
) -> Result<Vec<DetectedBox>, DetectError> {
    let mut clean = polarity(gray);
    remove_lines(&mut clean, s.line_len);
    let read: Vec<DetectedWord> = crate::bands::read_sparse(engine, &clean)?
        .into_iter()
        .map(|w| w.word)
        .collect();
    // Filtered first: a frame edge read as a sure `|` must not spare its cell a read.
    let words = filter_words(read, &s.group);
    let cells = framed_cells(gray, s.cell);
    let (framed, words) = read_cells(engine, gray, &cells, words, s)?;
    let mut boxes = group_words(&words, &s.group, |strip| clean.has_ink(strip, INK_BELOW));
    mark_framed(&mut boxes, &cells);
    boxes.extend(framed);
    boxes.sort_by_key(|b| (b.rect.y, b.rect.x));
    Ok(boxes)
}

fn centre_in(r: Rect, cell: Rect) -> bool {
    let (cx, cy) = (
        2 * i64::from(r.x) + i64::from(r.w),
        2 * i64::from(r.y) + i64::from(r.h),
    );
    cx >= 2 * i64::from(cell.x)
        && cx < 2 * (i64::from(cell.x) + i64::from(cell.w))
        && cy >= 2 * i64::from(cell.y)
        && cy < 2 * (i64::from(cell.y) + i64::from(cell.h))
}

/// Read the cells no sure word lies in, one by one; their words leave `words`. Returns the
/// framed boxes read and the words left.
fn read_cells(
    engine: &mut Engine,
    gray: &Gray,
    cells: &[Rect],
    mut words: Vec<DetectedWord>,
    s: &Settings,
) -> Result<(Vec<DetectedBox>, Vec<DetectedWord>), DetectError> {
    let mut framed = Vec::new();
    for &cell in cells {
        let sure_inside = words
            .iter()
            .any(|w| w.confidence >= s.sure && centre_in(w.rect, cell));
        if sure_inside {
            continue;
        }
        let Some(read) = read_cell(engine, gray, cell, s)? else {
            continue;
        };
        words.retain(|w| !centre_in(w.rect, cell));
        framed.push(read);
    }
    Ok((framed, words))
}

/// One cell's label: its ink cropped tight with 8 px of background, read as one line at 2×,
/// and again at 4× when unsure; the surer reading kept. `None` when nothing is read.
fn read_cell(
    engine: &mut Engine,
    gray: &Gray,
    cell: Rect,
    s: &Settings,
) -> Result<Option<DetectedBox>, DetectError> {
    let Some((ink, at)) = gray.crop(cell).and_then(|c| tight(&c, 8)) else {
        return Ok(None);
    };
    let offset = (cell.x + at.0, cell.y + at.1);
    let twice = upscale2(&ink);
    let mut best = engine.read(&twice, Segmentation::Line, 2, offset)?;
    if mean_confidence(&best) < s.sure {
        let again = engine.read(&upscale2(&twice), Segmentation::Line, 4, offset)?;
        if mean_confidence(&again) > mean_confidence(&best) {
            best = again;
        }
    }
    let words = filter_words(best.into_iter().map(|w| w.word).collect(), &s.group);
    if words.is_empty() {
        return Ok(None);
    }
    let text = words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let confidence = words.iter().map(|w| w.confidence).fold(1.0, f32::min);
    Ok(Some(DetectedBox {
        text,
        rect: cell,
        confidence,
        kind: DetectedKind::FramedText,
        words,
    }))
}

/// A group that is alone in a frame is that frame's label: a button. It takes the frame's
/// box, so acting on it hits the button's middle.
fn mark_framed(boxes: &mut [DetectedBox], cells: &[Rect]) {
    for &cell in cells {
        let inside: Vec<usize> = (0..boxes.len())
            .filter(|&i| centre_in(boxes[i].rect, cell))
            .collect();
        if let [only] = inside.as_slice() {
            boxes[*only].kind = DetectedKind::FramedText;
            boxes[*only].rect = cell;
        }
    }
}

fn mean_confidence(words: &[TsvWord]) -> f32 {
    if words.is_empty() {
        return 0.0;
    }
    words.iter().map(|w| w.word.confidence).sum::<f32>() / words.len() as f32
}

/// A region's text as one box: lines joined by a line break.
fn read_text(
    engine: &mut Engine,
    gray: &Gray,
    s: &Settings,
) -> Result<Vec<DetectedBox>, DetectError> {
    let mut clean = polarity(gray);
    remove_lines(&mut clean, s.line_len);
    // The pixels as they are, lines removed, too: polarity normalisation next to a thick
    // frame (a calculator's display) can blur a small bitmap font's strokes.
    let mut plain = gray.clone();
    remove_lines(&mut plain, s.line_len);
    let mut best: Vec<TsvWord> = Vec::new();
    for img in [&clean, &plain] {
        let Some((ink, at)) = tight(img, 8) else {
            continue;
        };
        // One line of UI text is well under 60 px high with its padding.
        let mode = if ink.h <= 60 {
            Segmentation::Line
        } else {
            Segmentation::Block
        };
        for read in [
            engine.read(&ink, mode, 1, at)?,
            engine.read(&upscale2(&ink), mode, 2, at)?,
        ] {
            if mean_confidence(&read) > mean_confidence(&best) {
                best = read;
            }
        }
    }
    Ok(text_box(best).into_iter().collect())
}

/// The words as one box, lines joined by `\n` and words by a space.
fn text_box(words: Vec<TsvWord>) -> Option<DetectedBox> {
    let mut text = String::new();
    let mut last_line = None;
    for w in &words {
        if !text.is_empty() {
            text.push(if last_line == Some(w.line) { ' ' } else { '\n' });
        }
        text.push_str(&w.word.text);
        last_line = Some(w.line);
    }
    let words: Vec<DetectedWord> = words.into_iter().map(|w| w.word).collect();
    let rect = words.iter().map(|w| w.rect).reduce(|a, b| {
        let (x, y) = (a.x.min(b.x), a.y.min(b.y));
        let r = (a.x + a.w as i32).max(b.x + b.w as i32);
        let btm = (a.y + a.h as i32).max(b.y + b.h as i32);
        Rect::new(x, y, (r - x) as u32, (btm - y) as u32)
    })?;
    let confidence = words.iter().map(|w| w.confidence).fold(1.0, f32::min);
    Some(DetectedBox {
        text,
        rect,
        confidence,
        kind: DetectedKind::Text,
        words,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tw(line: u32, text: &str, x: i32) -> TsvWord {
        TsvWord {
            line: (1, 1, line),
            word: DetectedWord {
                text: text.into(),
                rect: Rect::new(x, 10 * line as i32, 20, 8),
                confidence: 0.9,
            },
        }
    }

    #[test]
    fn read_text_joins_words_by_space_and_lines_by_break() {
        let b = text_box(vec![
            tw(1, "Total:", 0),
            tw(1, "42.50", 30),
            tw(2, "EUR", 0),
        ])
        .expect("three words");
        assert_eq!(b.text, "Total: 42.50\nEUR");
        assert_eq!(b.rect, Rect::new(0, 10, 50, 18));
        assert!(text_box(Vec::new()).is_none());
    }

    #[test]
    fn a_group_alone_in_a_frame_becomes_the_frames_button() {
        let one = |text: &str, r: Rect| DetectedBox {
            text: text.into(),
            rect: r,
            confidence: 0.9,
            kind: DetectedKind::Text,
            words: Vec::new(),
        };
        let mut boxes = vec![
            one("AC", Rect::new(12, 12, 10, 8)),
            one("a", Rect::new(60, 12, 8, 8)),
            one("b", Rect::new(75, 12, 8, 8)),
        ];
        let cells = [Rect::new(5, 5, 30, 20), Rect::new(55, 5, 40, 20)];
        mark_framed(&mut boxes, &cells);
        assert_eq!(boxes[0].kind, DetectedKind::FramedText);
        assert_eq!(boxes[0].rect, cells[0]);
        assert_eq!(
            boxes[1].kind,
            DetectedKind::Text,
            "two groups: not one label"
        );
    }

    #[test]
    fn the_settings_version_changes_with_a_setting() {
        let a = TesseractDetector::default();
        let mut s = Settings::default();
        s.group.gap_k = 1.5;
        let b = TesseractDetector::new(s);
        assert_ne!(a.settings_version(), b.settings_version());
        assert_eq!(
            a.settings_version(),
            TesseractDetector::default().settings_version()
        );
    }
}
