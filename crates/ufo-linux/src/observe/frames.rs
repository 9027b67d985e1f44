//! Which of an application's accessible windows (frames) is a given X window.
//!
//! One process may show several X windows through one accessibility application (every
//! Chromium window, a page's popup among them). The frame is chosen on evidence that
//! belongs to this window, strongest first:
//!
//! 1. its name is the window's title (among several of that name: the one whose extents are
//!    the window's rectangle, else the active one, else the first);
//! 2. its extents are the window's rectangle (a new window's frame before it is named);
//! 3. its name is part of the title, it is active, or it is the only one left.
//!
//! Steps 2 and 3 never take a frame that is another window's: one named as another X window
//! of the same process, or lying exactly where another one lies and not where this one is.
//! When nothing is left the window has no frame yet (it is being built): the caller looks
//! again, bounded, instead of showing the controls of another window.

use ufo_core::Rect;

use crate::a11y::bus::{AppTree, Node};
use crate::display::DisplayWindow;
use crate::names::collapse_ws;
use crate::vocab::{role, state, ROOT_PATH, WINDOWS};

/// How far (pixels, per edge) a frame's extents may be from the window's rectangle and
/// still be taken for it.
const SLACK: i32 = 2;

/// What is known of one top-level accessible window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Top {
    /// Its object path.
    pub path: String,
    /// Its accessible name, white space collapsed.
    pub name: String,
    /// It has the ACTIVE state.
    pub active: bool,
    /// Its extents in screen coordinates (`None`: unknown, or relative to the window).
    pub rect: Option<Rect>,
}

/// Why a frame was taken for a window (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// Its name is the window's title.
    Title,
    /// Its extents are the window's rectangle.
    Geometry,
    /// Its name is part of the window's title.
    NamePart,
    /// It is the active one (none other is the window's by name or place).
    Active,
    /// It is the only one that is not another window's.
    Only,
}

/// The frame taken for a window, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// The frame's object path.
    pub path: String,
    /// Why it was taken.
    pub evidence: Evidence,
}

/// The application's top-level nodes that can be windows. Never the application itself:
/// Chromium lists its application object among its own windows, and a window matched to it
/// (its name, "Chromium", is part of every window title) would be observed as every window
/// of the application at once, past the node limit.
pub(crate) fn window_nodes(tree: &AppTree) -> Vec<&Node> {
    tree.kids(ROOT_PATH)
        .iter()
        .filter_map(|p| tree.nodes.get(p))
        .filter(|n| n.path != ROOT_PATH && n.role != role::APPLICATION)
        .filter(|n| WINDOWS.contains(n.role) || n.child_count > 0)
        .collect()
}

/// A window node with its extents (when known).
pub(crate) fn top(n: &Node, rect: Option<Rect>) -> Top {
    Top {
        path: n.path.clone(),
        name: collapse_ws(&n.name),
        active: n.has(state::ACTIVE),
        rect,
    }
}

/// Whether the tops' names alone settle the choice (exactly one is named as the title), so
/// that their extents need not be read.
pub(crate) fn settled_by_title(tops: &[Top], w: &DisplayWindow) -> bool {
    let title = collapse_ws(&w.title);
    tops.iter().filter(|t| t.name == title).count() == 1
}

/// The frame of window `w` among `tops`; `windows` are the X windows on the screen (those of
/// other processes, and `w` itself, are ignored).
pub(crate) fn choose(tops: &[Top], w: &DisplayWindow, windows: &[DisplayWindow]) -> Option<Choice> {
    let title = collapse_ws(&w.title);
    let here = w.area;
    let fits = |t: &Top| t.rect.zip(here).is_some_and(|(r, h)| near(r, h));
    let take = |t: &Top, evidence| {
        Some(Choice {
            path: t.path.clone(),
            evidence,
        })
    };
    let named: Vec<&Top> = tops.iter().filter(|t| t.name == title).collect();
    if let Some(t) = named
        .iter()
        .find(|t| fits(t))
        .or_else(|| named.iter().find(|t| t.active))
        .or_else(|| named.first())
    {
        return take(t, Evidence::Title);
    }
    let others: Vec<&DisplayWindow> = windows
        .iter()
        .filter(|o| o.id != w.id && w.pid.is_some() && o.pid == w.pid)
        .collect();
    let theirs = |t: &Top| {
        others.iter().any(|o| {
            (!t.name.is_empty() && t.name == collapse_ws(&o.title))
                || (!fits(t) && t.rect.zip(o.area).is_some_and(|(r, a)| near(r, a)))
        })
    };
    let free: Vec<&Top> = tops.iter().filter(|t| !theirs(t)).collect();
    if let Some(t) = free
        .iter()
        .find(|t| fits(t) && t.active)
        .or_else(|| free.iter().find(|t| fits(t)))
    {
        return take(t, Evidence::Geometry);
    }
    if let Some(t) = free
        .iter()
        .find(|t| !t.name.is_empty() && title.contains(t.name.as_str()))
    {
        return take(t, Evidence::NamePart);
    }
    if let Some(t) = free.iter().find(|t| t.active) {
        return take(t, Evidence::Active);
    }
    match free.as_slice() {
        [only] => take(only, Evidence::Only),
        _ => None,
    }
}

/// Whether two rectangles are the same up to [`SLACK`] pixels per edge.
fn near(a: Rect, b: Rect) -> bool {
    let close = |p: i32, q: i32| (p - q).abs() <= SLACK;
    close(a.x, b.x)
        && close(a.y, b.y)
        && close(a.w as i32 + a.x, b.w as i32 + b.x)
        && close(a.h as i32 + a.y, b.h as i32 + b.y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::WinId;
    use crate::observe::fixtures::at;

    fn window(id: u32, title: &str, pid: u32, rect: (i32, i32, u32, u32)) -> DisplayWindow {
        DisplayWindow {
            id: WinId(id),
            title: title.into(),
            pid: Some(pid),
            app_id: "chromium".into(),
            area: Some(Rect::new(rect.0, rect.1, rect.2, rect.3)),
            transient_for: None,
            dialog: false,
            wm_modal: false,
        }
    }

    fn top(path: &str, name: &str, active: bool, rect: Option<(i32, i32, u32, u32)>) -> Top {
        Top {
            path: path.into(),
            name: name.into(),
            active,
            rect: rect.map(|(x, y, w, h)| Rect { x, y, w, h }),
        }
    }

    fn chosen(
        tops: &[Top],
        w: &DisplayWindow,
        windows: &[DisplayWindow],
    ) -> Option<(String, Evidence)> {
        choose(tops, w, windows).map(|c| (c.path, c.evidence))
    }

    const OPENER: (i32, i32, u32, u32) = (10, 10, 1050, 1004);
    const POPUP: (i32, i32, u32, u32) = (1, 20, 800, 734);

    /// A page's popup right after it opened: its frame is unnamed (being built) while the
    /// opener's frame still holds the focus. The opener's frame (named as the opener's
    /// window) is never taken for the popup: the popup's frame is found by its extents, and
    /// without them the popup has no frame yet.
    #[test]
    fn a_popup_is_never_given_its_openers_frame() {
        let opener = window(1, "Start page - Chromium", 7, OPENER);
        let popup = window(2, "Order form - Chromium", 7, POPUP);
        let windows = [opener.clone(), popup.clone()];
        let building = [
            top("/1", "Start page - Chromium", true, Some(OPENER)),
            top("/146", "", false, Some(POPUP)),
        ];
        assert_eq!(
            chosen(&building, &popup, &windows),
            Some(("/146".into(), Evidence::Geometry))
        );
        // extents not known (a toolkit with window-relative ones): the only frame that is
        // not the opener's; with another unnamed one (Chromium's hover card) nothing
        let unplaced = [
            top("/1", "Start page - Chromium", true, None),
            top("/146", "", false, None),
        ];
        assert_eq!(
            chosen(&unplaced, &popup, &windows),
            Some(("/146".into(), Evidence::Only))
        );
        let card = top("/2", "", false, Some((113, 35, 712, 88)));
        let with_card = [unplaced[0].clone(), card.clone(), unplaced[1].clone()];
        assert_eq!(chosen(&with_card, &popup, &windows), None);
        // with the extents, the card is no match
        let placed = [building[0].clone(), card, building[1].clone()];
        assert_eq!(
            chosen(&placed, &popup, &windows),
            Some(("/146".into(), Evidence::Geometry))
        );
        // the popup's frame not on the bus yet: nothing either, not the only frame there
        assert_eq!(chosen(&building[..1], &popup, &windows), None);
        // and the opener keeps its own frame
        assert_eq!(
            chosen(&building, &opener, &windows),
            Some(("/1".into(), Evidence::Title))
        );
    }

    /// Two windows of one title: the one lying where the window is.
    #[test]
    fn windows_of_one_title_are_told_apart_by_place() {
        let a = window(1, "New Tab - Chromium", 7, OPENER);
        let b = window(2, "New Tab - Chromium", 7, POPUP);
        let windows = [a.clone(), b.clone()];
        let tops = [
            top("/1", "New Tab - Chromium", true, Some(OPENER)),
            top("/2", "New Tab - Chromium", false, Some(POPUP)),
        ];
        assert_eq!(chosen(&tops, &b, &windows).unwrap().0, "/2");
        assert_eq!(chosen(&tops, &a, &windows).unwrap().0, "/1");
    }

    /// The earlier fallbacks stay for toolkits whose frame is not named as the window: a
    /// name that is part of the title, the active frame, the only frame; a frame named as
    /// a window of another process is no evidence against it.
    #[test]
    fn the_fallbacks_stay_for_frames_not_named_as_their_window() {
        let w = window(1, "notes.txt — Kate", 7, OPENER);
        let stranger = window(9, "Kate", 8, POPUP);
        let windows = [w.clone(), stranger];
        assert_eq!(
            chosen(&[top("/1", "Kate", false, None)], &w, &windows),
            Some(("/1".into(), Evidence::NamePart))
        );
        let tops = [top("/1", "", false, None), top("/2", "", true, None)];
        assert_eq!(
            chosen(&tops, &w, &windows),
            Some(("/2".into(), Evidence::Active))
        );
        assert_eq!(
            chosen(&tops[..1], &w, &windows),
            Some(("/1".into(), Evidence::Only))
        );
        // a frame lying exactly where another window of the process lies is that one's
        let dialog = window(3, "Open File", 7, POPUP);
        let with_dialog = [w.clone(), dialog];
        let tops = [top("/1", "", true, Some(POPUP)), top("/2", "", false, None)];
        assert_eq!(
            chosen(&tops, &w, &with_dialog),
            Some(("/2".into(), Evidence::Only))
        );
    }

    /// Issue 23, item 2: Chromium lists its application object among its windows (its
    /// parent is the registry's root, at the same path); a window whose title does not match
    /// its accessible name yet is never matched to it (that observed every window at once).
    #[test]
    fn the_application_is_never_taken_for_a_window() {
        let mut app = at(ROOT_PATH, ROOT_PATH, 0, role::APPLICATION);
        app.name = "Chromium".into();
        app.child_count = 3;
        let mut first = at("/1", ROOT_PATH, 1, role::FRAME);
        first.name = "Bookmarks - Chromium".into();
        let mut second = at("/2", ROOT_PATH, 2, role::FRAME);
        second.name = String::new();
        second.states |= state::ACTIVE;
        let tree = AppTree::from_nodes(vec![app, first, second]);
        assert!(!tree.kids(ROOT_PATH).iter().any(|k| k == ROOT_PATH));
        let window = |title: &str| DisplayWindow {
            id: WinId(1),
            title: title.into(),
            pid: None,
            app_id: String::new(),
            area: Some(Rect::new(0, 0, 10, 10)),
            transient_for: None,
            dialog: false,
            wm_modal: false,
        };
        let pick = |title: &str| {
            let tops: Vec<Top> = window_nodes(&tree)
                .into_iter()
                .map(|n| super::top(n, None))
                .collect();
            let w = window(title);
            choose(&tops, &w, std::slice::from_ref(&w)).map(|c| c.path)
        };
        assert_eq!(pick("Settings - Chromium").as_deref(), Some("/2"));
        assert_eq!(pick("Bookmarks - Chromium").as_deref(), Some("/1"));
    }
}
