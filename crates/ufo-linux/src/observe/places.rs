//! Where LibreOffice's bar controls sit, kept between observations: a button of a toolbar,
//! the menu bar or the status bar whose bar sent no event since the last observation is
//! placed from where it sat in its bar then and where the bar sits now, not asked again.
//!
//! Why: an observation asks every candidate for its extents, one call each, and LibreOffice
//! answers them one after the other between its own work. In Calc that is ~100 calls, most of
//! them for the Standard, Formatting and formula bars' buttons, 15-25 ms of every observation
//! (docs/desktop.md, "Where a step goes"); a cell entry changes none of them.
//!
//! When it is sound: a control moves inside its bar only when the bar's items change (a child
//! added, removed, shown, hidden or renamed: each sends an event on an object of the bar,
//! [`touched_bars`]) or when the bar changes size (the window resized, a bar docked or
//! wrapped). So each bar's own extents are read at every observation (one call per bar, ~10
//! in Calc); a bar of the same size moved elsewhere moves its buttons by as much, and a bar of
//! another size has its buttons read again. A control's value (a toolbar button's checked
//! state) and a menu's action names are kept with its box; a control whose text is read is
//! read every time (`fields.rs`, `may_keep_details`), and so is every control when all their
//! actions are asked for (the reading itself: `placing.rs`). Only applications whose trees are
//! kept (`changes`), whose events cover every change (a button checked announces its new
//! state), and only from the places read at the event count the kept tree was brought up from:
//! anything else reads every control. In a fresh LibreOffice window, whose root pane reports
//! itself shifted, the correction a control's box got is kept with it too, with that shift
//! (`office::extent_corrections`): its ancestors' extents are not read again.
//!
//! Measured (docs/desktop.md, "The bars' buttons placed from their bar"): after a cell entry 86
//! of Calc's 102 candidates are placed so; a Calc entry is 40-43 ms shorter at p50 on a busy
//! 2-core machine, 6 ms on a quiet one.

use std::collections::{BTreeSet, HashMap};

use crate::a11y::bus::{AppTree, Node};
use crate::apps::office::{Corrections, KnownFix};
use crate::observe::changes::Plan;
use crate::vocab::role;

/// A box as AT-SPI gives it: x, y, width, height.
pub(crate) use crate::names::Extents as Ext;

/// How many levels above a control its bar is looked for (LibreOffice's toolbar buttons sit
/// right under the bar, a font box's entry three levels down).
const BAR_DEPTH: usize = 6;

/// How many levels above an object that sent an event its bar is looked for: deeper than
/// [`BAR_DEPTH`], so that a change anywhere under a bar's kept controls touches the bar.
const TOUCH_DEPTH: usize = 24;

/// The bar a control sits in: its nearest toolbar, menu bar or status bar ancestor within
/// [`BAR_DEPTH`] levels, not above the window's frame.
pub(crate) fn bar_of<'t>(tree: &'t AppTree, n: &Node, frame: &str) -> Option<&'t str> {
    bar_within(tree, n, frame, BAR_DEPTH)
}

fn bar_within<'t>(tree: &'t AppTree, n: &Node, frame: &str, depth: usize) -> Option<&'t str> {
    let mut p = n.parent.as_str();
    for _ in 0..depth {
        if p == frame {
            return None;
        }
        let a = tree.nodes.get(p)?;
        if is_bar(a.role) {
            return Some(a.path.as_str());
        }
        p = a.parent.as_str();
    }
    None
}

/// Whether a role is one of the bars whose controls' places are kept.
fn is_bar(r: u32) -> bool {
    matches!(r, role::TOOL_BAR | role::MENU_BAR | role::STATUS_BAR)
}

/// The bars an event since the last observation touched: those holding (or being) an object
/// the refresh `p` reads again, relists or drops, looked up in the tree as it was before the
/// refresh (a dropped object is still in it).
pub(crate) fn touched_bars(tree: &AppTree, p: &Plan) -> BTreeSet<String> {
    p.nodes
        .iter()
        .chain(&p.children)
        .chain(&p.removed)
        .filter_map(|path| tree.nodes.get(path))
        .filter_map(|n| {
            if is_bar(n.role) {
                Some(n.path.clone())
            } else {
                bar_within(tree, n, "", TOUCH_DEPTH).map(str::to_string)
            }
        })
        .collect()
}

/// Where a kept control sits now: its box then moved as its bar moved, when the bar kept its
/// size; `None` (read it again) when the bar changed size or a box is not placed (LibreOffice
/// gives `i32::MIN` for an object not on screen) or out of range.
pub(crate) fn moved_with_bar(control: Ext, bar_then: Ext, bar_now: Ext) -> Option<Ext> {
    if (bar_then.2, bar_then.3) != (bar_now.2, bar_now.3)
        || ![control, bar_then, bar_now].iter().all(|e| is_placed(*e))
    {
        return None;
    }
    let dx = bar_now.0.checked_sub(bar_then.0)?;
    let dy = bar_now.1.checked_sub(bar_then.1)?;
    Some((
        control.0.checked_add(dx)?,
        control.1.checked_add(dy)?,
        control.2,
        control.3,
    ))
}

/// Whether a box is somewhere: not LibreOffice's `i32::MIN` for an object not on screen.
pub(crate) fn is_placed(e: Ext) -> bool {
    e.0 != i32::MIN && e.1 != i32::MIN
}

/// The places read by one observation of an application.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Places {
    /// The application's event count at the start of that observation.
    pub count: u64,
    /// Each bar's box.
    pub bars: HashMap<String, Ext>,
    /// Each control's bar and details.
    pub controls: HashMap<String, KeptControl>,
}

/// What is kept of one control: its bar, its box, its action names (a menu's), its value and
/// the correction of its box in a fresh LibreOffice window (`None`: none worked out).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptControl {
    pub bar: String,
    pub ext: Ext,
    pub actions: Vec<String>,
    pub value: Option<f64>,
    pub fix: Option<KnownFix>,
}

impl Places {
    /// Note with each control the correction its box got in this observation
    /// (`office::extent_corrections`): kept with the box, it is taken with it.
    pub(crate) fn with_fixes(mut self, c: &Corrections) -> Places {
        for (path, k) in &mut self.controls {
            k.fix = c.shift.map(|shift| KnownFix {
                shift,
                fix: c.fixes.get(path).copied().unwrap_or((0, 0)),
            });
        }
        self
    }
}

/// What an observation may take: the places read at the event count its kept tree was
/// brought up from, less the controls of the bars touched since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reuse {
    places: Places,
    touched: BTreeSet<String>,
}

impl Reuse {
    /// What was kept of `control` in `bar`, with the bar's box then, when it may be taken.
    pub(crate) fn kept(&self, control: &str, bar: &str) -> Option<(&KeptControl, Ext)> {
        if self.touched.contains(bar) {
            return None;
        }
        let k = self.places.controls.get(control)?;
        let bar_then = self.places.bars.get(bar)?;
        (k.bar == bar).then_some((k, *bar_then))
    }
}

#[derive(Debug, Default)]
struct PerApp {
    /// The places of the latest observation that read any.
    read: Option<Places>,
    /// (then, now, the bars touched in between) noted by the current observation's refresh.
    since: Option<(u64, u64, BTreeSet<String>)>,
}

/// The places kept per application (bus name), behind a lock of their own.
#[derive(Debug, Default)]
pub(crate) struct KeptPlaces(std::sync::Mutex<HashMap<String, PerApp>>);

impl KeptPlaces {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PerApp>> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept tree of `bus` was brought from event count `then` to `now` and `touched`
    /// holds the bars its events touched (`None`: the tree was read whole, nothing is taken).
    pub(crate) fn note_since(&self, bus: &str, since: Option<(u64, u64, BTreeSet<String>)>) {
        self.lock().entry(bus.to_string()).or_default().since = since;
    }

    /// What the observation of `bus` at event count `now` may take.
    pub(crate) fn reuse(&self, bus: &str, now: u64) -> Option<Reuse> {
        let st = self.lock();
        let app = st.get(bus)?;
        let (then, at, touched) = app.since.as_ref()?;
        let read = app.read.as_ref()?;
        (*at == now && read.count == *then).then(|| Reuse {
            places: read.clone(),
            touched: touched.clone(),
        })
    }

    /// Keep the places the observation of `bus` at event count `count` read (added to those
    /// of the same count: a popup's read after its window's).
    pub(crate) fn keep(&self, bus: &str, places: Places) {
        let mut st = self.lock();
        let app = st.entry(bus.to_string()).or_default();
        match &mut app.read {
            Some(r) if r.count == places.count => {
                r.bars.extend(places.bars);
                r.controls.extend(places.controls);
            }
            _ => app.read = Some(places),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::fixtures::at;

    fn node(path: &str, parent: &str, role: u32) -> Node {
        at(path, parent, 0, role)
    }

    fn calc() -> AppTree {
        AppTree::from_nodes(vec![
            node("/frame", "/app", role::FRAME),
            node("/pane", "/frame", role::PANEL),
            node("/std", "/pane", role::TOOL_BAR),
            node("/save", "/std", role::PUSH_BUTTON),
            node("/font", "/std", role::PANEL),
            node("/font/entry", "/font", role::TEXT),
            node("/side", "/pane", role::PANEL),
            node("/side/bold", "/side", role::TOGGLE_BUTTON),
            node("/status", "/pane", role::STATUS_BAR),
            node("/status/sum", "/status", role::LABEL),
        ])
    }

    #[test]
    fn a_control_is_in_its_nearest_bar_and_a_sidebar_button_in_none() {
        let t = calc();
        let bar = |p: &str| bar_of(&t, &t.nodes[p], "/frame");
        assert_eq!(bar("/save"), Some("/std"));
        assert_eq!(bar("/font/entry"), Some("/std"));
        assert_eq!(bar("/status/sum"), Some("/status"));
        assert_eq!(bar("/side/bold"), None);
        assert_eq!(bar("/pane"), None);
    }

    #[test]
    fn an_event_inside_a_bar_or_on_it_touches_that_bar_only() {
        let t = calc();
        let mut p = Plan::default();
        p.nodes.insert("/font/entry".into());
        p.children.insert("/side".into());
        p.removed.insert("/status".into());
        p.nodes.insert("/not-in-tree".into());
        assert_eq!(
            touched_bars(&t, &p),
            BTreeSet::from(["/std".to_string(), "/status".to_string()])
        );
        assert!(touched_bars(&t, &Plan::default()).is_empty());
    }

    #[test]
    fn a_control_moves_with_its_bar_unless_the_bar_changed_size() {
        assert_eq!(
            moved_with_bar((110, 60, 24, 24), (100, 50, 800, 30), (130, 40, 800, 30)),
            Some((140, 50, 24, 24))
        );
        assert_eq!(
            moved_with_bar((110, 60, 24, 24), (100, 50, 800, 30), (100, 50, 640, 30)),
            None
        );
        assert_eq!(
            moved_with_bar((110, 60, 24, 24), (100, 50, 800, 30), (100, 50, 800, 60)),
            None
        );
        // a bar or a control not on screen (LibreOffice's i32::MIN): read again
        let off = (i32::MIN, i32::MIN, 800, 30);
        assert_eq!(
            moved_with_bar((110, 60, 24, 24), off, (100, 50, 800, 30)),
            None
        );
        assert_eq!(
            moved_with_bar((110, 60, 24, 24), (100, 50, 800, 30), off),
            None
        );
        assert_eq!(
            moved_with_bar(
                (i32::MIN, i32::MIN, 24, 24),
                (0, 0, 800, 30),
                (5, 5, 800, 30)
            ),
            None
        );
    }

    proptest::proptest! {
        /// Whatever the boxes, a control is never placed by an overflow, and one placed
        /// moved exactly as its bar did.
        #[test]
        fn a_control_placed_with_its_bar_moved_as_the_bar_did(
            c in proptest::array::uniform4(proptest::num::i32::ANY),
            then in proptest::array::uniform4(proptest::num::i32::ANY),
            (nx, ny) in (proptest::num::i32::ANY, proptest::num::i32::ANY),
        ) {
            let c = (c[0], c[1], c[2], c[3]);
            let then = (then[0], then[1], then[2], then[3]);
            if let Some(m) = moved_with_bar(c, then, (nx, ny, then.2, then.3)) {
                proptest::prop_assert_eq!(
                    (i64::from(m.0) - i64::from(c.0), i64::from(m.1) - i64::from(c.1)),
                    (i64::from(nx) - i64::from(then.0), i64::from(ny) - i64::from(then.1))
                );
                proptest::prop_assert_eq!((m.2, m.3), (c.2, c.3));
            }
        }
    }

    fn control(bar: &str, ext: Ext) -> KeptControl {
        KeptControl {
            bar: bar.into(),
            ext,
            actions: Vec::new(),
            value: Some(0.0),
            fix: None,
        }
    }

    fn places(count: u64) -> Places {
        Places {
            count,
            bars: HashMap::from([
                ("/std".to_string(), (0, 40, 800, 30)),
                ("/status".to_string(), (0, 580, 800, 20)),
            ]),
            controls: HashMap::from([
                ("/save".to_string(), control("/std", (10, 42, 24, 24))),
                (
                    "/status/sum".to_string(),
                    control("/status", (500, 582, 90, 16)),
                ),
            ]),
        }
    }

    #[test]
    fn each_control_keeps_the_correction_of_its_box_with_the_shift_it_was_worked_out_under() {
        let shifted = Corrections {
            shift: Some((0, 27)),
            fixes: HashMap::from([("/save".to_string(), (0, 27))]),
        };
        let p = places(7).with_fixes(&shifted);
        let fix = |c: &str| p.controls[c].fix;
        assert_eq!(
            fix("/save"),
            Some(KnownFix {
                shift: (0, 27),
                fix: (0, 27)
            })
        );
        // (a control inside one of the GTK boxes that report their true place needs none)
        assert_eq!(
            fix("/status/sum"),
            Some(KnownFix {
                shift: (0, 27),
                fix: (0, 0)
            })
        );
        let right = places(7).with_fixes(&Corrections::default());
        assert!(
            right.controls.values().all(|k| k.fix.is_none()),
            "no shift, nothing kept"
        );
    }

    #[test]
    fn places_are_taken_only_from_the_count_the_tree_was_brought_from() {
        let kept = KeptPlaces::default();
        kept.keep(":1.5", places(7));
        // the tree read whole: nothing taken
        kept.note_since(":1.5", None);
        assert!(kept.reuse(":1.5", 9).is_none());
        // brought from 7 to 9 with the status bar touched
        kept.note_since(
            ":1.5",
            Some((7, 9, BTreeSet::from(["/status".to_string()]))),
        );
        assert!(
            kept.reuse(":1.5", 10).is_none(),
            "another observation's count"
        );
        let r = kept.reuse(":1.5", 9).expect("taken");
        assert_eq!(
            r.kept("/save", "/std"),
            Some((&control("/std", (10, 42, 24, 24)), (0, 40, 800, 30)))
        );
        assert_eq!(
            r.kept("/status/sum", "/status"),
            None,
            "its bar was touched"
        );
        assert_eq!(r.kept("/save", "/status"), None, "not in that bar then");
        assert_eq!(r.kept("/other", "/std"), None);
        // brought from another count than the places were read at: nothing taken
        kept.note_since(":1.5", Some((8, 9, BTreeSet::new())));
        assert!(kept.reuse(":1.5", 9).is_none());
        assert!(kept.reuse(":1.6", 9).is_none(), "another application");
    }

    #[test]
    fn places_of_one_count_add_up_and_a_new_count_replaces_them() {
        let kept = KeptPlaces::default();
        kept.keep(":1.5", places(7));
        let mut popup = Places {
            count: 7,
            ..Places::default()
        };
        popup
            .controls
            .insert("/menu/item".into(), control("/menubar", (1, 2, 3, 4)));
        popup.bars.insert("/menubar".into(), (0, 20, 800, 20));
        kept.keep(":1.5", popup);
        kept.note_since(":1.5", Some((7, 7, BTreeSet::new())));
        let r = kept.reuse(":1.5", 7).expect("taken");
        assert!(r.kept("/save", "/std").is_some());
        assert!(r.kept("/menu/item", "/menubar").is_some());
        kept.keep(":1.5", places(8));
        kept.note_since(":1.5", Some((8, 8, BTreeSet::new())));
        let r = kept.reuse(":1.5", 8).expect("taken");
        assert!(r.kept("/menu/item", "/menubar").is_none(), "replaced");
    }
}
