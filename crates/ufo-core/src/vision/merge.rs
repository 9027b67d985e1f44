//! Detected boxes merged with the accessibility tree, and when to detect at all
//! (docs/sight.md, "Merged with the tree" and "When").

use serde::{Deserialize, Serialize};

use super::{DetectedBox, DetectedKind};
use crate::ports::{Control, ControlSource, ControlStates, Rect};

/// The largest overlap (intersection over union) a detected box may have with a tree
/// control and still be added: the hybrid rule of the reference system.
pub const MAX_TREE_IOU: f32 = 0.1;

/// Intersection over union of two rectangles, 0 (apart, or empty) to 1 (the same).
pub fn iou(a: Rect, b: Rect) -> f32 {
    let (ax1, ay1) = (i64::from(a.x), i64::from(a.y));
    let (bx1, by1) = (i64::from(b.x), i64::from(b.y));
    let (ax2, ay2) = (ax1 + i64::from(a.w), ay1 + i64::from(a.h));
    let (bx2, by2) = (bx1 + i64::from(b.w), by1 + i64::from(b.h));
    let iw = (ax2.min(bx2) - ax1.max(bx1)).max(0);
    let ih = (ay2.min(by2) - ay1.max(by1)).max(0);
    let inter = (iw * ih) as f64;
    let area = |w: u32, h: u32| f64::from(w) * f64::from(h);
    let uni = area(a.w, a.h) + area(b.w, b.h) - inter;
    if uni <= 0.0 {
        0.0
    } else {
        (inter / uni) as f32
    }
}

/// The role a detected control is listed with: a framed label acts like a button; other text
/// is a label (a role no set-text or read rule prefers, so a tree field always wins those).
pub fn detected_role(kind: DetectedKind) -> &'static str {
    match kind {
        DetectedKind::Text => "label",
        DetectedKind::FramedText => "button",
    }
}

/// The id of a detected control: `ocr:` and its rectangle, so the desktop acts at the
/// rectangle without a tree node (docs/sight.md).
pub fn detected_id(rect: Rect) -> String {
    format!("ocr:{},{},{},{}", rect.x, rect.y, rect.w, rect.h)
}

/// The rectangle an `ocr:x,y,w,h` id names ([`detected_id`]), or `None` for any other id. A
/// caller may also name any region of a window this way, to read its text (docs/sight.md,
/// "Acting").
pub fn parse_detected_id(id: &str) -> Option<Rect> {
    let rest = id.strip_prefix("ocr:")?;
    let mut parts = rest.split(',').map(str::trim);
    let x = parts.next()?.parse().ok()?;
    let y = parts.next()?.parse().ok()?;
    let w: u32 = parts.next()?.parse().ok()?;
    let h: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || w == 0 || h == 0 {
        return None;
    }
    Some(Rect::new(x, y, w, h))
}

/// A detected box as a control of the observation, with source [`ControlSource::Ocr`].
pub fn detected_control(b: &DetectedBox) -> Control {
    Control {
        id: detected_id(b.rect),
        role: detected_role(b.kind).to_string(),
        name: b.text.clone(),
        value: None,
        rect: b.rect,
        enabled: true,
        states: ControlStates::default(),
        source: ControlSource::Ocr,
    }
}

/// The observation's controls with detection (docs/sight.md, "Merged with the tree"): every
/// tree control kept, in its order and first, so labels of tree controls do not move; then
/// each detected box, in reading order, that overlaps no tree control by more than
/// [`MAX_TREE_IOU`] and no detected box already added by more than that, and has text.
pub fn merge_with_tree(tree: Vec<Control>, detected: &[DetectedBox]) -> Vec<Control> {
    let mut boxes: Vec<&DetectedBox> = detected
        .iter()
        .filter(|b| !b.text.trim().is_empty() && b.rect.w > 0 && b.rect.h > 0)
        .collect();
    boxes.sort_by_key(|b| (b.rect.y, b.rect.x));
    let mut out = tree;
    for b in boxes {
        let overlaps = out.iter().any(|c| iou(c.rect, b.rect) > MAX_TREE_IOU);
        if !overlaps {
            out.push(detected_control(b));
        }
    }
    out
}

/// `[vision] mode`: when the pixels are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VisionMode {
    /// When the tree is too sparse for the window, for regions it leaves opaque (a canvas, an
    /// image), and when the model asks.
    #[default]
    Auto,
    /// Every observed window.
    Always,
    /// Never (also when the model asks: it is told why).
    Off,
}

/// The thresholds of [`when_to_detect`] in [`VisionMode::Auto`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetectPolicy {
    /// A window is sparse when its tree gives fewer than one control per this many square
    /// pixels (at least one control is always expected): 200 000 is five for 1280×800.
    pub area_per_control: u64,
    /// The smallest side of an opaque control (canvas, image) worth reading, in pixels.
    pub min_opaque_side: u32,
}

impl Default for DetectPolicy {
    fn default() -> Self {
        Self {
            area_per_control: 200_000,
            min_opaque_side: 16,
        }
    }
}

/// Roles whose inside the tree does not describe: drawn content that may hold text.
const OPAQUE: &[&str] = &[
    "canvas",
    "image",
    "drawing area",
    "animation",
    "chart",
    "embedded",
    "video",
];

/// Why the pixels are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectReason {
    /// `[vision] mode = always`.
    Always,
    /// The model asked for it.
    ModelAsked,
    /// The tree gives `controls` controls where `expected` were expected for the window's size.
    SparseTree {
        /// Tree controls found.
        controls: usize,
        /// The fewest expected.
        expected: usize,
    },
    /// Tree controls whose inside no control describes (a canvas, an image).
    Opaque,
}

/// Why the pixels are not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `[vision] mode = off`.
    Off,
    /// The tree describes the window well enough.
    TreeSuffices,
    /// The window has no area.
    EmptyWindow,
}

/// The decision of [`when_to_detect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectDecision {
    /// Read these regions (screen rectangles, inside the window).
    Detect {
        /// Why.
        reason: DetectReason,
        /// What to read.
        regions: Vec<Rect>,
    },
    /// Do not read.
    Skip(SkipReason),
}

/// What the observation knows of a window beside its listed controls, for [`when_to_detect`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints<'a> {
    /// The model asked to read the window's pixels.
    pub model_asked: bool,
    /// Screen rectangles of nodes the tree marks as drawn content (a web page's `<canvas>`, an
    /// image) that take no input and so are not listed as controls.
    pub silent: &'a [Rect],
}

impl Hints<'static> {
    /// Only whether the model asked; no silent regions.
    pub const fn asked(model_asked: bool) -> Self {
        Self {
            model_asked,
            silent: &[],
        }
    }
}

/// Whether to read a window's pixels and where (docs/sight.md, "When"). Only tree controls
/// (source [`ControlSource::Tree`]) count. In [`VisionMode::Auto`]: the whole window when the
/// model asked or the tree is sparse for the window's area; else the opaque regions (opaque
/// controls such as a canvas or an image, and the [`Hints::silent`] ones) of at least
/// [`DetectPolicy::min_opaque_side`] that hold no other control; else nothing, so a window
/// with a full tree costs nothing.
pub fn when_to_detect(
    mode: VisionMode,
    window: Rect,
    controls: &[Control],
    hints: Hints<'_>,
    policy: &DetectPolicy,
) -> DetectDecision {
    if mode == VisionMode::Off {
        return DetectDecision::Skip(SkipReason::Off);
    }
    if window.w == 0 || window.h == 0 {
        return DetectDecision::Skip(SkipReason::EmptyWindow);
    }
    let whole = |reason| DetectDecision::Detect {
        reason,
        regions: vec![window],
    };
    match (mode, hints.model_asked) {
        (VisionMode::Always, _) => return whole(DetectReason::Always),
        (_, true) => return whole(DetectReason::ModelAsked),
        _ => {}
    }
    let tree: Vec<&Control> = controls
        .iter()
        .filter(|c| c.source == ControlSource::Tree)
        .collect();
    let area = u64::from(window.w) * u64::from(window.h);
    let expected = (area / policy.area_per_control.max(1)).max(1) as usize;
    if tree.len() < expected {
        return whole(DetectReason::SparseTree {
            controls: tree.len(),
            expected,
        });
    }
    let opaque = opaque_regions(&tree, hints.silent, policy);
    if opaque.is_empty() {
        DetectDecision::Skip(SkipReason::TreeSuffices)
    } else {
        DetectDecision::Detect {
            reason: DetectReason::Opaque,
            regions: opaque,
        }
    }
}

/// The rectangles of opaque controls and silent regions large enough to read that hold no
/// other control's centre (a silent region also lies in no control but a document), each
/// rectangle once.
fn opaque_regions(tree: &[&Control], silent: &[Rect], policy: &DetectPolicy) -> Vec<Rect> {
    let large = |r: &Rect| r.w >= policy.min_opaque_side && r.h >= policy.min_opaque_side;
    let from_tree = tree
        .iter()
        .filter(|c| OPAQUE.contains(&c.role.trim().to_ascii_lowercase().as_str()))
        .filter(|c| large(&c.rect))
        .filter(|o| {
            !tree
                .iter()
                .any(|c| !std::ptr::eq(*c, **o) && centre_in(o.rect, c.rect))
        })
        .map(|c| c.rect);
    // a drawn node inside a control (a button's icon) is that control's; a document (a web
    // page) holds drawn content it does not describe
    let from_hints = silent
        .iter()
        .filter(|r| large(r))
        .filter(|r| {
            !tree.iter().any(|c| {
                centre_in(**r, c.rect) || (centre_in(c.rect, **r) && !is_document(&c.role))
            })
        })
        .copied();
    let mut out: Vec<Rect> = Vec::new();
    for r in from_tree.chain(from_hints) {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// Whether a role names a document (`document web`, `document frame`, ...).
fn is_document(role: &str) -> bool {
    role.trim().to_ascii_lowercase().starts_with("document")
}

/// Whether the centre of `c` lies inside `r` (doubled coordinates: no rounding).
fn centre_in(r: Rect, c: Rect) -> bool {
    let (cx, cy) = (
        2 * i64::from(c.x) + i64::from(c.w),
        2 * i64::from(c.y) + i64::from(c.h),
    );
    let (x1, y1) = (2 * i64::from(r.x), 2 * i64::from(r.y));
    let (x2, y2) = (x1 + 2 * i64::from(r.w), y1 + 2 * i64::from(r.h));
    cx >= x1 && cx < x2 && cy >= y1 && cy < y2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::DetectedWord;
    use proptest::prelude::*;

    fn ctl(role: &str, name: &str, r: Rect) -> Control {
        Control {
            id: name.into(),
            role: role.into(),
            name: name.into(),
            value: None,
            rect: r,
            enabled: true,
            states: ControlStates::default(),
            source: ControlSource::Tree,
        }
    }

    proptest! {
        #[test]
        fn a_detected_id_names_its_rectangle(x in any::<i32>(), y in any::<i32>(), w in 1u32.., h in 1u32..) {
            let r = Rect::new(x, y, w, h);
            prop_assert_eq!(parse_detected_id(&detected_id(r)), Some(r));
        }

        #[test]
        fn any_other_text_names_no_rectangle_or_a_checked_one(s in ".{0,40}") {
            if let Some(r) = parse_detected_id(&s) {
                prop_assert!(r.w > 0 && r.h > 0);
                prop_assert!(s.starts_with("ocr:"));
            }
        }
    }

    #[test]
    fn malformed_region_ids_are_refused() {
        for bad in [
            "ocr:",
            "ocr:1,2,3",
            "ocr:1,2,0,4",
            "ocr:1,2,3,4,5",
            "x:1,2,3,4",
            "ocr:a,2,3,4",
        ] {
            assert_eq!(parse_detected_id(bad), None, "{bad}");
        }
    }

    fn found(text: &str, r: Rect) -> DetectedBox {
        DetectedBox {
            text: text.into(),
            rect: r,
            confidence: 0.9,
            kind: DetectedKind::Text,
            words: vec![DetectedWord {
                text: text.into(),
                rect: r,
                confidence: 0.9,
            }],
        }
    }

    #[test]
    fn iou_of_known_rectangles() {
        let a = Rect::new(0, 0, 10, 10);
        assert_eq!(iou(a, a), 1.0);
        assert_eq!(iou(a, Rect::new(10, 0, 10, 10)), 0.0);
        assert!((iou(a, Rect::new(5, 0, 10, 10)) - 50.0 / 150.0).abs() < 1e-6);
        assert_eq!(iou(Rect::default(), Rect::default()), 0.0);
    }

    #[test]
    fn a_detected_box_is_added_only_where_no_tree_control_lies() {
        let tree = vec![ctl("button", "OK", Rect::new(0, 0, 40, 20))];
        let detected = [
            found("OK", Rect::new(5, 4, 30, 12)), // on the button: IoU 0.45
            found("Draw", Rect::new(100, 100, 40, 12)), // on a canvas the tree does not describe
            found(" ", Rect::new(200, 100, 40, 12)), // nothing read
        ];
        let got = merge_with_tree(tree.clone(), &detected);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], tree[0]);
        assert_eq!(got[1].name, "Draw");
        assert_eq!(got[1].source, ControlSource::Ocr);
        assert_eq!(got[1].id, "ocr:100,100,40,12");
        assert_eq!(got[1].role, "label");
    }

    #[test]
    fn a_control_without_detection_is_written_as_before() {
        let c = ctl("button", "OK", Rect::new(0, 0, 40, 20));
        let json = serde_json::to_string(&c).expect("a control serialises");
        assert!(!json.contains("source"), "{json}");
        let back: Control = serde_json::from_str(&json).expect("and reads back");
        assert_eq!(back.source, ControlSource::Tree);
        let ocr = detected_control(&found("Draw", Rect::new(1, 2, 3, 4)));
        let json = serde_json::to_string(&ocr).expect("a detected control serialises");
        assert!(json.contains(r#""source":"ocr""#), "{json}");
    }

    #[test]
    fn when_to_detect_follows_the_mode_the_tree_and_the_ask() {
        let window = Rect::new(0, 0, 1280, 800);
        let p = DetectPolicy::default();
        let full: Vec<Control> = (0..20)
            .map(|i| ctl("button", &format!("b{i}"), Rect::new(i * 60, 0, 50, 20)))
            .collect();
        assert_eq!(
            when_to_detect(VisionMode::Off, window, &[], Hints::asked(true), &p),
            DetectDecision::Skip(SkipReason::Off)
        );
        assert_eq!(
            when_to_detect(VisionMode::Auto, window, &full, Hints::asked(false), &p),
            DetectDecision::Skip(SkipReason::TreeSuffices)
        );
        assert!(matches!(
            when_to_detect(VisionMode::Auto, window, &[], Hints::asked(false), &p),
            DetectDecision::Detect { reason: DetectReason::SparseTree { controls: 0, expected: 5 }, regions } if regions == vec![window]
        ));
        assert!(matches!(
            when_to_detect(VisionMode::Auto, window, &full, Hints::asked(true), &p),
            DetectDecision::Detect {
                reason: DetectReason::ModelAsked,
                ..
            }
        ));
        assert!(matches!(
            when_to_detect(VisionMode::Always, window, &full, Hints::asked(false), &p),
            DetectDecision::Detect {
                reason: DetectReason::Always,
                ..
            }
        ));
        let mut with_canvas = full.clone();
        let canvas = Rect::new(100, 100, 400, 300);
        with_canvas.push(ctl("canvas", "", canvas));
        with_canvas.push(ctl("image", "logo", Rect::new(600, 600, 8, 8)));
        assert_eq!(
            when_to_detect(
                VisionMode::Auto,
                window,
                &with_canvas,
                Hints::asked(false),
                &p
            ),
            DetectDecision::Detect {
                reason: DetectReason::Opaque,
                regions: vec![canvas]
            }
        );
        // A canvas the tree describes (a control inside it) is not read.
        with_canvas.push(ctl("button", "in", Rect::new(150, 150, 40, 20)));
        assert_eq!(
            when_to_detect(
                VisionMode::Auto,
                window,
                &with_canvas,
                Hints::asked(false),
                &p
            ),
            DetectDecision::Skip(SkipReason::TreeSuffices)
        );
    }

    #[test]
    fn a_silent_region_the_tree_does_not_list_is_read_in_auto() {
        let window = Rect::new(0, 0, 1280, 800);
        let p = DetectPolicy::default();
        let full: Vec<Control> = (0..20)
            .map(|i| ctl("button", &format!("b{i}"), Rect::new(i * 60, 0, 50, 20)))
            .collect();
        let canvas = Rect::new(100, 100, 400, 300);
        let tiny = Rect::new(600, 600, 8, 8);
        let silent = [canvas, tiny, canvas];
        let hints = Hints {
            model_asked: false,
            silent: &silent,
        };
        // read once, the small one left out
        assert_eq!(
            when_to_detect(VisionMode::Auto, window, &full, hints, &p),
            DetectDecision::Detect {
                reason: DetectReason::Opaque,
                regions: vec![canvas]
            }
        );
        assert_eq!(
            when_to_detect(VisionMode::Off, window, &full, hints, &p),
            DetectDecision::Skip(SkipReason::Off)
        );
        // a listed control inside it: the tree describes it
        let mut inside = full.clone();
        inside.push(ctl("button", "in", Rect::new(150, 150, 40, 20)));
        assert_eq!(
            when_to_detect(VisionMode::Auto, window, &inside, hints, &p),
            DetectDecision::Skip(SkipReason::TreeSuffices)
        );
        // an icon inside a button, off the button's centre: the button's
        let icon = Rect::new(700, 300, 24, 24);
        let mut with_button = full.clone();
        with_button.push(ctl("button", "Refresh", Rect::new(690, 295, 120, 34)));
        let icons = [icon];
        assert_eq!(
            when_to_detect(
                VisionMode::Auto,
                window,
                &with_button,
                Hints {
                    model_asked: false,
                    silent: &icons
                },
                &p
            ),
            DetectDecision::Skip(SkipReason::TreeSuffices)
        );
        // a canvas on a web page listed as a control: read
        let mut on_page = full.clone();
        on_page.push(ctl("document web", "Page", Rect::new(0, 60, 1280, 740)));
        assert_eq!(
            when_to_detect(VisionMode::Auto, window, &on_page, hints, &p),
            DetectDecision::Detect {
                reason: DetectReason::Opaque,
                regions: vec![canvas]
            }
        );
        // the same canvas listed by the tree and hinted: one region
        let mut listed = full.clone();
        listed.push(ctl("canvas", "", canvas));
        assert_eq!(
            when_to_detect(VisionMode::Auto, window, &listed, hints, &p),
            DetectDecision::Detect {
                reason: DetectReason::Opaque,
                regions: vec![canvas]
            }
        );
    }

    fn rect() -> impl Strategy<Value = Rect> {
        (0i32..500, 0i32..500, 0u32..200, 0u32..200).prop_map(|(x, y, w, h)| Rect::new(x, y, w, h))
    }

    proptest! {
        #[test]
        fn the_merge_keeps_the_tree_and_adds_only_boxes_apart_from_it(
            tree in prop::collection::vec(rect(), 0..10),
            det in prop::collection::vec(rect(), 0..10),
        ) {
            let tree: Vec<Control> = tree.into_iter().enumerate()
                .map(|(i, r)| ctl("button", &format!("t{i}"), r)).collect();
            let det: Vec<DetectedBox> = det.into_iter().enumerate()
                .map(|(i, r)| found(&format!("d{i}"), r)).collect();
            let got = merge_with_tree(tree.clone(), &det);
            prop_assert_eq!(&got[..tree.len()], &tree[..]);
            for added in &got[tree.len()..] {
                prop_assert_eq!(added.source, ControlSource::Ocr);
                for t in &tree {
                    prop_assert!(iou(t.rect, added.rect) <= MAX_TREE_IOU);
                }
            }
        }

        #[test]
        fn the_mode_and_the_ask_decide_first_and_detected_controls_never_count(
            window in rect(),
            tree in prop::collection::vec((rect(), any::<bool>()), 0..12),
            seen in prop::collection::vec(rect(), 0..12),
            asked in any::<bool>(),
        ) {
            let p = DetectPolicy::default();
            let tree: Vec<Control> = tree.into_iter().enumerate()
                .map(|(i, (r, canvas))| ctl(if canvas { "canvas" } else { "button" }, &format!("t{i}"), r))
                .collect();
            let mut with_seen = tree.clone();
            with_seen.extend(seen.iter().map(|r| detected_control(&found("x", *r))));
            let empty = window.w == 0 || window.h == 0;
            prop_assert_eq!(
                when_to_detect(VisionMode::Off, window, &with_seen, Hints::asked(asked), &p),
                DetectDecision::Skip(SkipReason::Off)
            );
            for mode in [VisionMode::Always, VisionMode::Auto] {
                let d = when_to_detect(mode, window, &with_seen, Hints::asked(asked), &p);
                if empty {
                    prop_assert_eq!(d, DetectDecision::Skip(SkipReason::EmptyWindow));
                    continue;
                }
                if mode == VisionMode::Always || asked {
                    let whole = matches!(&d, DetectDecision::Detect { regions, .. } if *regions == vec![window]);
                    prop_assert!(whole, "{:?}", d);
                }
                prop_assert_eq!(d, when_to_detect(mode, window, &tree, Hints::asked(asked), &p));
            }
        }

        #[test]
        fn opaque_regions_are_large_unlisted_inside_and_each_read_once(
            tree in prop::collection::vec((rect(), any::<bool>()), 20..30),
            silent in prop::collection::vec(rect(), 0..12),
        ) {
            let p = DetectPolicy { area_per_control: 1_000_000, ..DetectPolicy::default() };
            let window = Rect::new(0, 0, 1280, 800);
            let tree: Vec<Control> = tree.into_iter().enumerate()
                .map(|(i, (r, canvas))| ctl(if canvas { "canvas" } else { "button" }, &format!("t{i}"), r))
                .collect();
            let hints = Hints { model_asked: false, silent: &silent };
            let d = when_to_detect(VisionMode::Auto, window, &tree, hints, &p);
            let apart = |r: &Rect| !tree.iter().any(|c| centre_in(*r, c.rect) || centre_in(c.rect, *r));
            let readable = silent.iter().any(|r| {
                r.w >= p.min_opaque_side && r.h >= p.min_opaque_side && apart(r)
            });
            let DetectDecision::Detect { reason, regions } = d else {
                prop_assert!(!readable, "a readable silent region was skipped: {:?}", d);
                return Ok(());
            };
            for r in silent.iter().filter(|r| r.w >= p.min_opaque_side && r.h >= p.min_opaque_side
                && apart(r)) {
                prop_assert!(regions.contains(r), "{:?} not read", r);
            }
            prop_assert_eq!(reason, DetectReason::Opaque);
            for (i, r) in regions.iter().enumerate() {
                prop_assert!(r.w >= p.min_opaque_side && r.h >= p.min_opaque_side);
                prop_assert!(!regions[..i].contains(r), "{:?} twice", r);
                prop_assert!(silent.contains(r) || tree.iter().any(|c| c.role == "canvas" && c.rect == *r));
            }
        }

        #[test]
        fn iou_is_symmetric_and_bounded(a in rect(), b in rect()) {
            let v = iou(a, b);
            prop_assert!((0.0..=1.0).contains(&v));
            prop_assert_eq!(v, iou(b, a));
        }
    }
}
