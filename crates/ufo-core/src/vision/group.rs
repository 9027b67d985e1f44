//! Words into controls, as a person reads them (docs/sight.md, "Grouping").
//!
//! An OCR engine's own lines merge neighbouring buttons and menu bar items; a person instead
//! ends a label where a wider space, a border, an icon or a separator begins. The rule: link a
//! word to the nearest word on its right on the same line when the gap is at most `gap_k` ×
//! the smaller word height and no ink lies in the gap; controls are the linked components.

use super::{DetectedBox, DetectedKind, DetectedWord};
use crate::ports::Rect;

/// The thresholds of [`filter_words`] and [`group_words`]. The defaults were measured on
/// rendered UI scenes and real Tk and Athena windows (docs/sight.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupRule {
    /// Largest gap inside one control, as a multiple of the smaller word height (1.2: a Tk
    /// menu bar's items are 1.27–1.36 apart, words of one label at most 1.0 at p95).
    pub gap_k: f32,
    /// Largest difference of the vertical centres of two words of one line, as a multiple of
    /// the larger height.
    pub line_tolerance: f32,
    /// Largest ratio of the two heights of words of one line.
    pub max_height_ratio: f32,
    /// Words below this confidence are dropped (icon and border junk).
    pub min_confidence: f32,
    /// Words of at most [`GroupRule::short_len`] characters need this confidence.
    pub short_min_confidence: f32,
    /// What counts as a short word.
    pub short_len: usize,
}

impl Default for GroupRule {
    fn default() -> Self {
        Self {
            gap_k: 1.2,
            line_tolerance: 0.5,
            max_height_ratio: 2.0,
            min_confidence: 0.30,
            short_min_confidence: 0.80,
            short_len: 2,
        }
    }
}

/// Characters that alone are frame edges read as text, never a label.
const EDGE_JUNK: &[char] = &['|', '[', ']', '{', '}', '\u{2018}', '\u{2019}'];

/// The words worth grouping: empty words, frame edges (`|`, `[`, ...) and words below the
/// confidence thresholds dropped, a `|` read at a word's edge cut off, and an opening bracket
/// never closed in the word (a check box's edge) taken off its front. Punctuation such as the
/// `&` of "Privacy & Security" is kept: its ink sits in the gap and holds the label together.
pub fn filter_words(words: Vec<DetectedWord>, rule: &GroupRule) -> Vec<DetectedWord> {
    words
        .into_iter()
        .filter_map(|mut w| {
            let text = w.text.trim().trim_matches('|').trim();
            // a check box or radio button left of a label is read as an opening bracket
            let text = match text.strip_prefix('(') {
                Some(rest) if !rest.is_empty() && !rest.contains(')') => rest,
                _ => text,
            };
            if text.is_empty() || text.chars().all(|c| EDGE_JUNK.contains(&c)) {
                return None;
            }
            let short = text.chars().count() <= rule.short_len;
            if w.confidence < rule.min_confidence
                || (short && w.confidence < rule.short_min_confidence)
            {
                return None;
            }
            w.text = text.to_string();
            Some(w)
        })
        .collect()
}

fn right(r: Rect) -> i64 {
    i64::from(r.x) + i64::from(r.w)
}

fn bottom(r: Rect) -> i64 {
    i64::from(r.y) + i64::from(r.h)
}

fn center_y2(r: Rect) -> i64 {
    2 * i64::from(r.y) + i64::from(r.h)
}

/// The smallest rectangle holding both.
pub(crate) fn union(a: Rect, b: Rect) -> Rect {
    let x = i64::from(a.x).min(i64::from(b.x));
    let y = i64::from(a.y).min(i64::from(b.y));
    let r = right(a).max(right(b));
    let btm = bottom(a).max(bottom(b));
    Rect::new(
        clamp_i32(x),
        clamp_i32(y),
        clamp_u32(r - x),
        clamp_u32(btm - y),
    )
}

fn clamp_i32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

fn clamp_u32(v: i64) -> u32 {
    v.clamp(0, i64::from(u32::MAX)) as u32
}

/// Whether `a` and `b` sit on one line: centres close and heights alike.
fn same_line(a: Rect, b: Rect, rule: &GroupRule) -> bool {
    let (ha, hb) = (a.h.max(1) as f32, b.h.max(1) as f32);
    let (hmax, hmin) = (ha.max(hb), ha.min(hb));
    let dy = (center_y2(a) - center_y2(b)).abs() as f32 / 2.0;
    hmax <= rule.max_height_ratio * hmin && dy <= rule.line_tolerance * hmax
}

/// The strip between `a` and the word `b` on its right, over their common rows; `None` when
/// they share no row.
fn gap_strip(a: Rect, b: Rect) -> Option<Rect> {
    let top = i64::from(a.y).max(i64::from(b.y));
    let btm = bottom(a).min(bottom(b));
    (btm > top).then(|| {
        Rect::new(
            clamp_i32(right(a)),
            clamp_i32(top),
            clamp_u32(i64::from(b.x) - right(a)),
            clamp_u32(btm - top),
        )
    })
}

/// The nearest word right of `words[a]` on its line whose gap the rule allows: its index
/// and the gap in pixels.
fn right_neighbour(a: usize, words: &[DetectedWord], rule: &GroupRule) -> Option<(usize, i64)> {
    let ra = words[a].rect;
    words
        .iter()
        .enumerate()
        .filter(|(b, _)| *b != a)
        .filter_map(|(b, w)| {
            let rb = w.rect;
            let gap = i64::from(rb.x) - right(ra);
            let hmin = ra.h.min(rb.h).max(1) as f32;
            let wmin = ra.w.min(rb.w) as f32;
            let fits = same_line(ra, rb, rule)
                && 2 * i64::from(rb.x) + i64::from(rb.w) > 2 * i64::from(ra.x) + i64::from(ra.w)
                && gap as f32 >= -0.5 * wmin
                && gap as f32 <= rule.gap_k * hmin;
            fits.then_some((b, gap))
        })
        .min_by_key(|(b, gap)| (*gap, *b))
}

fn find(parent: &mut [usize], i: usize) -> usize {
    let mut root = i;
    while parent[root] != root {
        root = parent[root];
    }
    let mut at = i;
    while parent[at] != root {
        let next = parent[at];
        parent[at] = root;
        at = next;
    }
    root
}

/// The controls `words` make (docs/sight.md, "Grouping"): each word linked to its nearest
/// right neighbour on the same line when the gap is at most `gap_k` × the smaller height and
/// `ink_in_gap` says the strip between them is empty (overlapping words need no ink test).
/// Each control is the union of its words' boxes, its text the words left to right joined by
/// one space, its confidence the lowest of its words'. Controls come in reading order (top,
/// then left). Every word lands in exactly one control.
pub fn group_words(
    words: &[DetectedWord],
    rule: &GroupRule,
    ink_in_gap: impl Fn(Rect) -> bool,
) -> Vec<DetectedBox> {
    let mut parent: Vec<usize> = (0..words.len()).collect();
    for a in 0..words.len() {
        let Some((b, gap)) = right_neighbour(a, words, rule) else {
            continue;
        };
        let empty = gap <= 0
            || gap_strip(words[a].rect, words[b].rect).is_some_and(|strip| !ink_in_gap(strip));
        if empty {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); words.len()];
    for i in 0..words.len() {
        let root = find(&mut parent, i);
        members[root].push(i);
    }
    let mut boxes: Vec<DetectedBox> = members
        .into_iter()
        .filter(|m| !m.is_empty())
        .map(|m| control_of(&m, words))
        .collect();
    boxes.sort_by_key(|b| (b.rect.y, b.rect.x));
    boxes
}

/// One control from the words at `indexes`.
fn control_of(indexes: &[usize], words: &[DetectedWord]) -> DetectedBox {
    let mut ws: Vec<DetectedWord> = indexes.iter().map(|&i| words[i].clone()).collect();
    ws.sort_by_key(|w| (w.rect.x, w.rect.y));
    let rect = ws.iter().map(|w| w.rect).reduce(union).unwrap_or_default();
    let text = ws
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let confidence = ws
        .iter()
        .map(|w| w.confidence)
        .fold(f32::INFINITY, f32::min);
    DetectedBox {
        text,
        rect,
        confidence: if confidence.is_finite() {
            confidence
        } else {
            0.0
        },
        kind: DetectedKind::Text,
        words: ws,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(text: &str, x: i32, y: i32, wd: u32, h: u32) -> DetectedWord {
        DetectedWord {
            text: text.into(),
            rect: Rect::new(x, y, wd, h),
            confidence: 0.95,
        }
    }

    fn texts(b: &[DetectedBox]) -> Vec<&str> {
        b.iter().map(|b| b.text.as_str()).collect()
    }

    #[test]
    fn words_of_one_label_join_and_menu_bar_items_stay_apart() {
        // "Save As" (gap 5 of height 12), then a menu bar whose gaps are 1.3 × the height.
        let words = [
            w("Save", 10, 10, 40, 12),
            w("As", 55, 10, 20, 12),
            w("File", 10, 40, 30, 12),
            w("Edit", 56, 40, 30, 12),
            w("Help", 102, 40, 34, 14),
        ];
        let got = group_words(&words, &GroupRule::default(), |_| false);
        assert_eq!(texts(&got), ["Save As", "File", "Edit", "Help"]);
        assert_eq!(got[0].rect, Rect::new(10, 10, 65, 12));
    }

    #[test]
    fn ink_between_two_words_ends_the_control() {
        // Two buttons side by side, 6 px apart, a border between them.
        let words = [w("Apply", 10, 10, 40, 12), w("Cancel", 56, 10, 44, 12)];
        let border = |r: Rect| r.x <= 52 && 52 < r.x + r.w as i32;
        let got = group_words(&words, &GroupRule::default(), border);
        assert_eq!(texts(&got), ["Apply", "Cancel"]);
        let got = group_words(&words, &GroupRule::default(), |_| false);
        assert_eq!(texts(&got), ["Apply Cancel"]);
    }

    #[test]
    fn words_on_other_lines_or_of_other_sizes_stay_apart() {
        let words = [
            w("Name", 10, 10, 40, 12),
            w("Quantity", 10, 30, 60, 12),
            w("Big", 55, 0, 60, 40),
        ];
        let got = group_words(&words, &GroupRule::default(), |_| false);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn the_filter_drops_frame_edges_and_unsure_short_words_but_keeps_punctuation() {
        let mut junk = w("|", 0, 0, 2, 12);
        junk.confidence = 0.93;
        let mut unsure_short = w("fa", 0, 0, 10, 12);
        unsure_short.confidence = 0.6;
        let mut unsure = w("Refresh", 0, 0, 50, 12);
        unsure.confidence = 0.2;
        let amp = w("&", 0, 0, 8, 12);
        let edged = w("Apply |", 0, 0, 50, 12);
        let boxed = w("(Privacy", 0, 0, 60, 12);
        let closed = w("(x)", 0, 0, 20, 12);
        let got = filter_words(
            vec![
                junk,
                unsure_short,
                unsure,
                amp,
                edged,
                w("  ", 0, 0, 5, 5),
                boxed,
                closed,
            ],
            &GroupRule::default(),
        );
        let got: Vec<&str> = got.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(got, ["&", "Apply", "Privacy", "(x)"]);
    }

    fn line_of_words() -> impl Strategy<Value = Vec<DetectedWord>> {
        prop::collection::vec((1u32..60, 8u32..20, 0i32..40, 0i32..6), 1..12).prop_map(|spec| {
            let mut x = 0;
            spec.into_iter()
                .enumerate()
                .map(|(i, (wd, h, gap, dy))| {
                    x += gap;
                    let word = w(&format!("w{i}"), x, 100 + dy, wd, h);
                    x += wd as i32;
                    word
                })
                .collect()
        })
    }

    fn any_words() -> impl Strategy<Value = Vec<DetectedWord>> {
        prop::collection::vec((0i32..400, 0i32..300, 1u32..80, 1u32..30), 0..30).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (x, y, wd, h))| w(&format!("w{i}"), x, y, wd, h))
                .collect()
        })
    }

    proptest! {
        #[test]
        fn every_word_lands_in_exactly_one_control_inside_its_box(words in any_words(), ink in any::<bool>()) {
            let got = group_words(&words, &GroupRule::default(), |_| ink);
            let mut seen: Vec<String> = got.iter().flat_map(|b| b.words.iter().map(|w| w.text.clone())).collect();
            seen.sort();
            let mut want: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
            want.sort();
            prop_assert_eq!(seen, want);
            for b in &got {
                for w in &b.words {
                    prop_assert_eq!(union(b.rect, w.rect), b.rect);
                }
                prop_assert!(b.words.iter().all(|w| w.confidence >= b.confidence));
            }
        }

        #[test]
        fn ink_in_every_gap_keeps_separated_words_apart(words in line_of_words()) {
            let separated = words.windows(2).all(|p| p[1].rect.x > p[0].rect.x + p[0].rect.w as i32);
            let got = group_words(&words, &GroupRule::default(), |_| true);
            if separated {
                prop_assert_eq!(got.len(), words.len());
            }
        }

        #[test]
        fn words_further_apart_than_the_rule_never_join(h in 6u32..30, extra in 1i32..50) {
            let rule = GroupRule::default();
            let gap = (rule.gap_k * h as f32).ceil() as i32 + extra;
            let words = [w("a1", 0, 0, 30, h), w("b2", 30 + gap, 0, 30, h)];
            prop_assert_eq!(group_words(&words, &rule, |_| false).len(), 2);
        }
    }
}
