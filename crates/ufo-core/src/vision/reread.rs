//! Reading again only what changed (docs/sight.md, "Cache"): when a region read before comes
//! back with some of its tiles changed, [`plan`] says which part of it to read, and which of
//! the boxes read before still stand. A changed calculator display is read in tens of
//! milliseconds instead of the whole window's hundreds.

use super::DetectedBox;
use crate::ports::Rect;

/// Pixels added around the changed tiles, so that a word on a tile's edge is read whole.
pub const MARGIN: u32 = 8;

/// The most of a region's area a partial read may cover; above it the whole is read (one read
/// of the whole costs less than a large part and keeps the reader's context).
pub const MAX_SHARE: f64 = 0.5;

/// What to read of a region read before.
#[derive(Debug, Clone, PartialEq)]
pub enum Reread {
    /// All of it.
    Whole,
    /// Only `area` (screen pixels, inside the region); the boxes `keep` read before lie
    /// outside it and stand.
    Part {
        /// What to read.
        area: Rect,
        /// The earlier boxes outside it.
        keep: Vec<DetectedBox>,
    },
}

/// Which part of `region` to read again, given the `previous` boxes read in it and the tiles
/// that `changed` since (screen pixels). The part is the changed tiles' union with
/// [`MARGIN`], grown until no earlier box crosses its edge (a line of text that changed in
/// part is read whole); the whole region when nothing is known to have changed or the part
/// would cover more than [`MAX_SHARE`] of it.
pub fn plan(region: Rect, previous: &[DetectedBox], changed: &[Rect]) -> Reread {
    let Some(mut area) = changed.iter().copied().reduce(union) else {
        return Reread::Whole;
    };
    area = grow(area, MARGIN);
    let mut crossing = vec![false; previous.len()];
    // each round takes in at least one more box: at most one round per box
    for _ in 0..=previous.len() {
        let mut grew = false;
        for (b, taken) in previous.iter().zip(crossing.iter_mut()) {
            if !*taken && overlaps(area, b.rect) {
                *taken = true;
                area = union(area, b.rect);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let Some(area) = clip(area, region) else {
        return Reread::Whole;
    };
    let share = area_of(area) as f64 / area_of(region).max(1) as f64;
    if share > MAX_SHARE {
        return Reread::Whole;
    }
    let keep = previous
        .iter()
        .zip(&crossing)
        .filter(|(_, taken)| !**taken)
        .map(|(b, _)| b.clone())
        .collect();
    Reread::Part { area, keep }
}

fn area_of(r: Rect) -> u64 {
    u64::from(r.w) * u64::from(r.h)
}

fn right(r: Rect) -> i64 {
    i64::from(r.x) + i64::from(r.w)
}

fn bottom(r: Rect) -> i64 {
    i64::from(r.y) + i64::from(r.h)
}

/// The smallest rectangle holding both.
fn union(a: Rect, b: Rect) -> Rect {
    let (x, y) = (a.x.min(b.x), a.y.min(b.y));
    let (r, btm) = (right(a).max(right(b)), bottom(a).max(bottom(b)));
    Rect::new(x, y, (r - i64::from(x)) as u32, (btm - i64::from(y)) as u32)
}

/// `r` grown by `m` pixels on every side.
fn grow(r: Rect, m: u32) -> Rect {
    let m32 = i32::try_from(m).unwrap_or(i32::MAX);
    Rect::new(
        r.x.saturating_sub(m32),
        r.y.saturating_sub(m32),
        r.w.saturating_add(2 * m),
        r.h.saturating_add(2 * m),
    )
}

/// Whether two rectangles share a pixel.
fn overlaps(a: Rect, b: Rect) -> bool {
    i64::from(a.x) < right(b)
        && i64::from(b.x) < right(a)
        && i64::from(a.y) < bottom(b)
        && i64::from(b.y) < bottom(a)
}

/// The part of `r` inside `region`, if any.
fn clip(r: Rect, region: Rect) -> Option<Rect> {
    let (x, y) = (r.x.max(region.x), r.y.max(region.y));
    let (rr, bb) = (right(r).min(right(region)), bottom(r).min(bottom(region)));
    (rr > i64::from(x) && bb > i64::from(y))
        .then(|| Rect::new(x, y, (rr - i64::from(x)) as u32, (bb - i64::from(y)) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::DetectedKind;
    use proptest::prelude::*;

    fn boxed(text: &str, r: Rect) -> DetectedBox {
        DetectedBox {
            text: text.into(),
            rect: r,
            confidence: 1.0,
            kind: DetectedKind::Text,
            words: Vec::new(),
        }
    }

    #[test]
    fn a_changed_display_is_read_alone_and_the_keys_stand() {
        let window = Rect::new(0, 0, 400, 300);
        let display = boxed("12", Rect::new(300, 20, 30, 14));
        let key = boxed("7", Rect::new(20, 200, 10, 14));
        let line = boxed("Total due today", Rect::new(10, 100, 200, 14));
        let previous = vec![display.clone(), key.clone(), line];
        // the display's digits sit in the tile at (320, 0): the box crossing it is read again
        let Reread::Part { area, keep } = plan(window, &previous, &[Rect::new(320, 0, 64, 64)])
        else {
            panic!("a small change is read in part");
        };
        assert!(
            area.x <= display.rect.x && right(area) >= right(display.rect),
            "{area:?}"
        );
        assert_eq!(keep.len(), 2);
        assert!(keep.contains(&key));
        // a change under half a line takes the whole line in
        let Reread::Part { area, keep } = plan(window, &previous, &[Rect::new(64, 64, 64, 64)])
        else {
            panic!("in part");
        };
        assert!(area.x <= 10 && right(area) >= 210, "{area:?}");
        assert_eq!(keep.len(), 2);
        // most of the window changed, or nothing known: the whole
        assert_eq!(plan(window, &previous, &[window]), Reread::Whole);
        assert_eq!(plan(window, &previous, &[]), Reread::Whole);
    }

    fn rect_in(max: i32) -> impl Strategy<Value = Rect> {
        (0..max, 0..max, 1u32..80, 1u32..80).prop_map(|(x, y, w, h)| Rect::new(x, y, w, h))
    }

    proptest! {
        /// Every earlier box is either kept, outside the part read, or inside that part (read
        /// again); the part lies in the region and covers every changed tile inside it.
        #[test]
        fn kept_boxes_lie_outside_the_part_and_the_part_covers_the_change(
            previous in prop::collection::vec(rect_in(400), 0..20),
            changed in prop::collection::vec(rect_in(400), 1..6),
        ) {
            let region = Rect::new(0, 0, 480, 480);
            let previous: Vec<DetectedBox> = previous.into_iter().enumerate()
                .map(|(i, r)| boxed(&format!("b{i}"), r)).collect();
            match plan(region, &previous, &changed) {
                Reread::Whole => {}
                Reread::Part { area, keep } => {
                    prop_assert!(clip(area, region) == Some(area));
                    prop_assert!(area_of(area) as f64 <= MAX_SHARE * area_of(region) as f64);
                    for c in &changed {
                        if let Some(c) = clip(*c, region) {
                            prop_assert!(union(area, c) == area, "{:?} not in {:?}", c, area);
                        }
                    }
                    for b in &previous {
                        let kept = keep.contains(b);
                        prop_assert!(kept != overlaps(area, b.rect), "{:?} kept {} area {:?}", b.rect, kept, area);
                    }
                }
            }
        }
    }
}
