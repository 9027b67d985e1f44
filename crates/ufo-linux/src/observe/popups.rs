//! Popups an application shows over its window without a window of their own on the display
//! (issue 46): Chromium draws its bubbles ("Bookmark added" after Ctrl+D or the star, the
//! page-info and download bubbles) inside the browser's X window, while its accessibility
//! tree lists each one as a top-level `dialog` of the application beside the window's frame.
//! An observation of the window found its frame and never saw the bubble ("nothing changed
//! in the window's controls"). Such popups are read with the window, on top of it, while they
//! are open; when one closes it leaves the application's tree and the page is observed alone
//! again.
//!
//! What counts ([`popups`], pure): a top-level node of the window's application that is not
//! its frame nor another window's, showing, a dialog or alert (or another window role that
//! has the focus: Chromium's hover cards are unfocused, unnamed frames), lying over the
//! window. At most [`MAX_POPUPS`] of them, the focused first.

use ufo_core::Rect;

use crate::a11y::bus::AppTree;
use crate::display::pixels::intersect;
use crate::names::collapse_ws;
use crate::vocab::{role, state, WINDOWS};

/// Most popups read with one window.
pub(super) const MAX_POPUPS: usize = 4;

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

/// Whether a top-level node may be a popup before its extents are known (those are read
/// only for these).
pub(super) fn may_be_popup(t: &TopNode, taken: &[String], other_titles: &[String]) -> bool {
    let kind =
        matches!(t.role, role::DIALOG | role::ALERT) || (t.active && WINDOWS.contains(t.role));
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
