//! Popups an application shows over its window without a window of their own on the display
//! (issue 46): Chromium draws its bubbles ("Bookmark added" after Ctrl+D or the star, the
//! page-info and download bubbles) inside the browser's X window, while its accessibility
//! tree lists each one as a top-level `dialog` of the application beside the window's frame.
//! An observation of the window found its frame and never saw the bubble ("nothing changed
//! in the window's controls"). Such popups are read with the window, on top of it, while they
//! are open; when one closes it leaves the application's tree and the page is observed alone
//! again.
//!
//! Qt's popup menus (Dolphin's hamburger and context menus, override-redirect windows) name
//! the application as their parent but are not among its children: the ones Qt announced
//! shown (a11y/shown.rs) are read live and put at the top of its tree while they are open
//! ([`is_open_menu`]), and are then popups like the others.
//!
//! What counts ([`popups`], pure): a top-level node of the window's application that is not
//! its frame nor another window's, showing, a dialog, alert or popup menu (or another window
//! role that has the focus: Chromium's hover cards are unfocused, unnamed frames), lying over
//! the window. At most [`MAX_POPUPS`] of them, the focused first.

use ufo_core::Rect;

use crate::a11y::bus::{AppTree, Node};
use crate::display::pixels::intersect;
use crate::names::collapse_ws;
use crate::vocab::{role, state, WINDOWS};

/// Most popups read with one window.
pub(super) const MAX_POPUPS: usize = 4;

/// Most entries of one Qt popup read for their places ([`entry_places`]).
pub(super) const MAX_ENTRIES: usize = 64;

/// Smallest side (pixels) of a popup: Chromium keeps 1×1 helper windows on its tree.
const MIN_SIDE: u32 = 8;

/// What is known of one top-level node of the application.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TopNode {
    pub path: String,
    pub role: u32,
    /// Its name, white space collapsed.
    pub name: String,
    pub active: bool,
    pub showing: bool,
    /// Its extents on the screen (`None`: unknown).
    pub rect: Option<Rect>,
}

/// The top-level nodes of the application, with their states, and no extents yet.
pub(super) fn top_nodes(tree: &AppTree) -> Vec<TopNode> {
    super::frames::window_nodes(tree)
        .into_iter()
        .map(|n| TopNode {
            path: n.path.clone(),
            role: n.role,
            name: collapse_ws(&n.name),
            active: n.has(state::ACTIVE),
            showing: n.has(state::SHOWING) && n.has(state::VISIBLE) && !n.has(state::DEFUNCT),
            rect: None,
        })
        .collect()
}

/// Whether a node Qt announced shown (a11y/shown.rs) is an open menu: a popup menu (or a
/// menu) showing, visible, alive and holding entries.
pub(super) fn is_open_menu(n: &Node) -> bool {
    matches!(n.role, role::POPUP_MENU | role::MENU)
        && n.has(state::SHOWING)
        && n.has(state::VISIBLE)
        && !n.has(state::DEFUNCT)
        && n.child_count > 0
}

/// One entry of a Qt popup as read live: its role and its own extents (`None`: it did not
/// answer, or has no place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    pub role: u32,
    pub rect: Option<Rect>,
}

/// Where the entries of Qt popup `popup` that the toolkit places elsewhere are drawn.
///
/// Qt keeps one accessible object per action, made for the first menu that listed it: an
/// action in two menus (Dolphin's hamburger menu shares "Create New", "New Tab", "Undo"...
/// with the hidden menu bar's menus) reports that menu's place and states, not showing, at
/// (0, 25) or wherever that menu was. The popup's own entries (its separators, the actions
/// only it holds) report their place inside it: they are the anchors, and the entries
/// between two anchors (or an anchor and the popup's edge) are stacked there in order, one
/// entry height each (the anchors' height, else the most common one). An entry that does
/// not answer (`role` [`role::INVALID`]) may be a hidden action or a drawn one: the run's
/// gap tells (it fits the others alone, or all of them). A run that fits neither (a hidden
/// action among them) is left unplaced (`None`): better not listed than listed where
/// something else is drawn. Other entries without a place (a hidden separator) take no room.
/// Returns one rectangle per entry: its place when it was elsewhere and could be placed.
pub(super) fn entry_places(popup: Rect, entries: &[Entry]) -> Vec<Option<Rect>> {
    let inside = |r: &Rect| {
        r.w > 0
            && r.h > 0
            && r.x >= popup.x
            && r.y >= popup.y
            && r.x + r.w as i32 <= popup.x + popup.w as i32
            && r.y + r.h as i32 <= popup.y + popup.h as i32
    };
    let is_entry = |e: &Entry| MENU_ENTRIES.contains(&e.role);
    let anchored: Vec<Option<Rect>> = entries
        .iter()
        .map(|e| e.rect.filter(|r| inside(r)))
        .collect();
    let mut heights: Vec<u32> = entries
        .iter()
        .zip(&anchored)
        .filter(|(e, a)| is_entry(e) && a.is_some())
        .filter_map(|(_, a)| a.map(|r| r.h))
        .collect();
    if heights.is_empty() {
        heights = entries
            .iter()
            .filter(|e| is_entry(e))
            .filter_map(|e| e.rect.map(|r| r.h))
            .collect();
    }
    let mut out = vec![None; entries.len()];
    let Some(h) = most_common(&heights).filter(|h| *h > 0) else {
        return out;
    };
    let (x, w) = anchored
        .iter()
        .flatten()
        .next()
        .map_or((popup.x, popup.w), |r| (r.x, r.w));
    let unknown = |i: usize| entries[i].role == role::INVALID;
    let mut place = |run: &mut Vec<usize>, top: i32, bottom: i32| {
        let strays = run.iter().filter(|&&i| !unknown(i)).count() as i32;
        let slots = (bottom - top) / h as i32;
        let exact = (bottom - top) % h as i32 == 0;
        // (the unknown entries take a slot each, or none)
        let with_unknown = if exact && strays > 0 && slots == run.len() as i32 {
            Some(true)
        } else if exact && strays > 0 && slots == strays {
            Some(false)
        } else {
            None
        };
        if let Some(with_unknown) = with_unknown {
            let mut y = top;
            for &i in run.iter() {
                if unknown(i) {
                    y += if with_unknown { h as i32 } else { 0 };
                    continue;
                }
                out[i] = Some(Rect { x, y, w, h });
                y += h as i32;
            }
        }
        run.clear();
    };
    // runs of entries without their place between anchors
    let mut top = popup.y;
    let mut run: Vec<usize> = Vec::new();
    for i in 0..entries.len() {
        if let Some(a) = anchored[i] {
            place(&mut run, top, a.y);
            top = a.y + a.h as i32;
        } else if is_entry(&entries[i]) || unknown(i) {
            run.push(i);
        }
    }
    place(&mut run, top, popup.y + popup.h as i32);
    out
}

/// The roles of a menu's entries.
const MENU_ENTRIES: [u32; 4] = [
    role::MENU_ITEM,
    role::CHECK_MENU_ITEM,
    role::RADIO_MENU_ITEM,
    role::MENU,
];

/// The most common of `values` (the first of those as common), if any.
fn most_common(values: &[u32]) -> Option<u32> {
    let mut best: Option<(u32, usize)> = None;
    for v in values {
        let n = values.iter().filter(|x| *x == v).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((*v, n));
        }
    }
    best.map(|(v, _)| v)
}

/// Whether a top-level node may be a popup before its extents are known (those are read
/// only for these).
pub(super) fn may_be_popup(t: &TopNode, taken: &[String], other_titles: &[String]) -> bool {
    let kind = matches!(t.role, role::DIALOG | role::ALERT | role::POPUP_MENU)
        || (t.active && WINDOWS.contains(t.role));
    kind && t.showing
        && !taken.contains(&t.path)
        && !other_titles
            .iter()
            .any(|o| !t.name.is_empty() && *o == t.name)
}

/// The popups over window `main` (its rectangle; `None`: placed nowhere known, any place
/// counts) among the application's top-level nodes: `taken` are the frames of the windows
/// read already (the window's own, its dialogs'), `other_titles` the titles of the
/// application's other windows on the display. The focused one first, at most
/// [`MAX_POPUPS`], each with its rectangle.
pub(super) fn popups(
    tops: &[TopNode],
    main: Option<Rect>,
    taken: &[String],
    other_titles: &[String],
) -> Vec<(String, Rect)> {
    let mut found: Vec<(&TopNode, Rect)> = tops
        .iter()
        .filter(|t| may_be_popup(t, taken, other_titles))
        .filter_map(|t| Some((t, t.rect?)))
        .filter(|(_, r)| r.w >= MIN_SIDE && r.h >= MIN_SIDE)
        .filter(|(_, r)| main.is_none_or(|m| intersect(*r, m).is_some()))
        .collect();
    found.sort_by_key(|(t, _)| !t.active);
    found
        .into_iter()
        .take(MAX_POPUPS)
        .map(|(t, r)| (t.path.clone(), r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Rect = Rect {
        x: 10,
        y: 10,
        w: 1050,
        h: 1004,
    };

    fn top(path: &str, role: u32, name: &str, active: bool, rect: (i32, i32, u32, u32)) -> TopNode {
        TopNode {
            path: path.into(),
            role,
            name: name.into(),
            active,
            showing: true,
            rect: Some(Rect::new(rect.0, rect.1, rect.2, rect.3)),
        }
    }

    /// Chromium with its bookmark bubble open (the tree as pyatspi read it): the window's
    /// frame, two unfocused unnamed frames (hover cards) and the bubble, a focused dialog
    /// inside the window. Only the bubble is a popup.
    #[test]
    fn chromiums_bookmark_bubble_is_a_popup_its_hover_cards_are_not() {
        let tops = [
            top(
                "/1",
                role::FRAME,
                "Settings - Chromium",
                true,
                (10, 10, 1050, 1004),
            ),
            top("/3", role::FRAME, "", false, (113, 35, 880, 88)),
            top("/4", role::FRAME, "", false, (113, 35, 880, 178)),
            top(
                "/445",
                role::DIALOG,
                "Bookmark added",
                true,
                (523, 90, 448, 350),
            ),
        ];
        let taken = vec!["/1".to_string()];
        assert_eq!(
            popups(&tops, Some(WINDOW), &taken, &[]),
            vec![("/445".to_string(), Rect::new(523, 90, 448, 350))]
        );
        // closed: gone from the tree, or no longer showing
        let mut closed = tops.clone();
        closed[3].showing = false;
        assert!(popups(&closed, Some(WINDOW), &taken, &[]).is_empty());
        assert!(popups(&tops[..3], Some(WINDOW), &taken, &[]).is_empty());
    }

    /// Another window's frame (named as another window of the process, or read already as
    /// the window's dialog), a popup over another window, a 1×1 helper: none is a popup.
    #[test]
    fn other_windows_and_helpers_are_not_popups() {
        let other = top("/2", role::DIALOG, "Print", true, (20, 20, 400, 300));
        let others = vec!["Print".to_string()];
        assert!(popups(std::slice::from_ref(&other), Some(WINDOW), &[], &others).is_empty());
        let taken = vec!["/2".to_string()];
        assert!(popups(std::slice::from_ref(&other), Some(WINDOW), &taken, &[]).is_empty());
        let elsewhere = top(
            "/5",
            role::DIALOG,
            "Bookmark added",
            true,
            (1100, 10, 100, 100),
        );
        assert!(popups(std::slice::from_ref(&elsewhere), Some(WINDOW), &[], &[]).is_empty());
        // a window placed nowhere known: wherever it lies
        assert_eq!(popups(&[elsewhere], None, &[], &[]).len(), 1);
        let helper = top("/6", role::DIALOG, "", true, (0, 0, 1, 1));
        assert!(popups(&[helper], Some(WINDOW), &[], &[]).is_empty());
        // a focused window of another role (a menu's own window) is one
        let menu = top("/7", role::WINDOW, "", true, (600, 60, 300, 400));
        assert_eq!(popups(&[menu], Some(WINDOW), &[], &[]).len(), 1);
    }

    /// Dolphin's hamburger and context menus as pyatspi read them: the shared actions
    /// report the hidden menu bar's places; they are stacked between the popup's own
    /// entries. An entry that does not answer, or a hidden separator, takes no room.
    #[test]
    fn a_qt_popups_shared_entries_are_placed_between_its_own() {
        let item = |x, y, w, h| Entry {
            role: role::MENU_ITEM,
            rect: Some(Rect::new(x, y, w, h)),
        };
        let sep = |y| Entry {
            role: role::SEPARATOR,
            rect: Some(Rect::new(925, y, 336, 2)),
        };
        let own = |y| item(925, y, 336, 25);
        let popup = Rect::new(925, 272, 336, 381);
        let entries = [
            item(0, 0, 286, 25),   // Create New
            item(0, 181, 388, 25), // Select Files and Folders
            own(322),              // Actions for Current View
            item(0, 0, 388, 25),   // Undo
            item(0, 129, 388, 25), // Filter...
            sep(397),
            item(0, 25, 286, 25), // New Window
            item(0, 50, 286, 25), // New Tab
            item(0, 0, 320, 25),  // Open Terminal
            sep(474),
            item(0, 229, 325, 25),  // Show Hidden Files
            item(0, 104, 325, 25),  // Sort By
            item(0, 154, 325, 25),  // Show Additional Information
            item(0, 308, 325, 25),  // Show Panels
            own(576),               // Configure
            item(535, 244, 38, 22), // Help (the menu bar's)
            sep(626),
            own(628), // More
        ];
        let mut unknown = entries;
        unknown[2] = Entry {
            role: role::INVALID,
            rect: None,
        };
        for entries in [entries, unknown] {
            let placed = entry_places(popup, &entries);
            assert_eq!(placed[3].map(|r| r.y), Some(347), "{entries:?}");
        }
        let placed = entry_places(popup, &entries);
        let y = |i: usize| placed[i].map(|r| (r.x, r.y, r.w, r.h));
        assert_eq!(y(0), Some((925, 272, 336, 25)));
        assert_eq!(y(1), Some((925, 297, 336, 25)));
        assert_eq!(y(2), None, "its own place is its own");
        assert_eq!(y(3), Some((925, 347, 336, 25)));
        assert_eq!(y(4), Some((925, 372, 336, 25)));
        assert_eq!(y(8), Some((925, 449, 336, 25)));
        assert_eq!(y(13), Some((925, 551, 336, 25)));
        assert_eq!(y(15), Some((925, 601, 336, 25)));
        // the context menu: a first entry that does not answer, a hidden separator
        let popup = Rect::new(590, 400, 308, 183);
        let own = |y| item(590, y, 308, 25);
        let sep = |y| Entry {
            role: role::SEPARATOR,
            rect: Some(Rect::new(590, y, 308, 2)),
        };
        let entries = [
            Entry {
                role: role::INVALID,
                rect: None,
            },
            item(0, 0, 286, 25), // Create New
            own(425),            // Open Folder With
            sep(450),
            item(0, 102, 286, 25), // Add to Places
            sep(477),
            item(0, 104, 325, 25), // Sort By
            item(0, 129, 325, 25), // View Mode
            sep(529),
            Entry {
                role: role::SEPARATOR,
                rect: None,
            },
            item(0, 25, 320, 25), // Open Terminal Here
            sep(556),
            item(0, 258, 286, 25), // Properties
        ];
        let placed = entry_places(popup, &entries);
        let y = |i: usize| placed[i].map(|r| r.y);
        assert_eq!(y(1), Some(400));
        assert_eq!(y(4), Some(452));
        assert_eq!((y(6), y(7)), (Some(479), Some(504)));
        assert_eq!((y(10), y(12)), (Some(531), Some(558)));
        // a run that does not fill its gap (a hidden action in it): left unplaced
        let mut short = entries;
        short[5] = sep(502);
        let placed = entry_places(popup, &short);
        assert_eq!(placed[4], None);
    }

    /// Bounded, the focused first.
    #[test]
    fn popups_are_bounded_and_the_focused_comes_first() {
        let mut tops: Vec<TopNode> = (0..9)
            .map(|i| top(&format!("/{i}"), role::DIALOG, "x", false, (20, 20, 50, 50)))
            .collect();
        tops[7].active = true;
        let found = popups(&tops, Some(WINDOW), &[], &[]);
        assert_eq!(found.len(), MAX_POPUPS);
        assert_eq!(found[0].0, "/7");
    }
}
