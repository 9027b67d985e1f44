//! Controls stacked on one box: of the controls of one role over the very same box, only the
//! one the application finds at its centre is listed. GTK 4 marks neither page of a stack
//! (gnome-text-editor's documents, one per tab) as hidden: after a switch of tabs both
//! documents' text views were listed, same role and box, the one behind with its text as
//! value, and typing into it went to a document nobody sees. The application's own hit test
//! (`Component.GetAccessibleAtPoint`, asked from the window's frame down) names the shown one;
//! when it names none of them, all stay listed.

use std::collections::HashMap;

use ufo_core::Rect;

use super::observer::Observer;
use crate::a11y::bus::ObjRef;
use crate::controls::Fetched;

/// Most groups of stacked controls asked about in one observation.
const MAX_STACKS: usize = 4;

/// Most levels of the hit test (toolkits that answer with a child, not the deepest object,
/// are asked again from it).
const MAX_HIT_DEPTH: usize = 16;

/// The groups (indexes, in order) of two or more controls with one role over one box of a
/// sensible size, at most [`MAX_STACKS`].
pub(super) fn stacks<'a>(controls: impl IntoIterator<Item = (&'a str, Rect)>) -> Vec<Vec<usize>> {
    // (a role and a box: x, y, width, height)
    type Key<'a> = (&'a str, i32, i32, u32, u32);
    let mut by_box: HashMap<Key<'a>, Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for (i, (role, r)) in controls.into_iter().enumerate() {
        if r.w < 2 || r.h < 2 {
            continue;
        }
        let key = (role, r.x, r.y, r.w, r.h);
        let group = by_box.entry(key).or_default();
        if group.is_empty() {
            order.push(key);
        }
        group.push(i);
    }
    order
        .into_iter()
        .filter_map(|k| by_box.remove(&k).filter(|g| g.len() > 1))
        .take(MAX_STACKS)
        .collect()
}

impl Observer<'_> {
    /// A step of the window's reading: `out` without the controls stacked under another
    /// ([`stacks`]). `offset` is what the toolkit's extents lack to be the screen's (the
    /// point asked is in the toolkit's coordinates).
    pub(super) async fn without_stacked(
        &self,
        bus: &str,
        frame: &str,
        offset: (i32, i32),
        out: Vec<Fetched>,
    ) -> Vec<Fetched> {
        let groups = stacks(
            out.iter()
                .map(|f| (f.detail.control.role.as_str(), f.detail.control.rect)),
        );
        if groups.is_empty() {
            return out;
        }
        let shown = futures::future::join_all(groups.iter().map(|g| {
            let paths: Vec<&str> = g.iter().map(|&i| out[i].info.path.as_str()).collect();
            let r = out[g[0]].detail.control.rect;
            let at = (
                r.x + r.w as i32 / 2 - offset.0,
                r.y + r.h as i32 / 2 - offset.1,
            );
            async move { self.shown_of(bus, frame, at, &paths).await }
        }))
        .await;
        let mut hidden = std::collections::HashSet::new();
        for (g, shown) in groups.iter().zip(shown) {
            if let Some(k) = shown {
                hidden.extend(
                    g.iter()
                        .enumerate()
                        .filter(|(j, _)| *j != k)
                        .map(|(_, &i)| i),
                );
            }
        }
        tracing::debug!(
            bus,
            stacks = groups.len(),
            hidden = hidden.len(),
            "stacked controls"
        );
        out.into_iter()
            .enumerate()
            .filter(|(i, _)| !hidden.contains(i))
            .map(|(_, f)| f)
            .collect()
    }

    /// Which of `paths` (an index) the application finds at point `at`, asking from `frame`
    /// down; `None` when none of them, or the hit test fails.
    async fn shown_of(
        &self,
        bus: &str,
        frame: &str,
        at: (i32, i32),
        paths: &[&str],
    ) -> Option<usize> {
        let mut from = frame.to_string();
        for _ in 0..MAX_HIT_DEPTH {
            let hit: ObjRef = self
                .bus
                .call(
                    bus,
                    &from,
                    "org.a11y.atspi.Component",
                    "GetAccessibleAtPoint",
                    &(at.0, at.1, 0u32),
                )
                .await
                .ok()?;
            let path = hit.1.as_str();
            if let Some(k) = paths.iter().position(|p| *p == path) {
                return Some(k);
            }
            if hit.0 != bus || path == from || !path.starts_with("/org/a11y/atspi/accessible") {
                return None;
            }
            from = path.to_string();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x: i32, y: i32, w: u32, h: u32) -> Rect {
        Rect { x, y, w, h }
    }

    #[test]
    fn controls_of_one_role_over_one_box_are_a_stack() {
        let page = rect(295, 349, 690, 418);
        let controls = [
            ("button", rect(10, 10, 24, 24)),
            ("text", page),
            ("page tab", rect(304, 313, 329, 26)),
            ("text", page),
            // another role over the same box, and a box a pixel off, are no part of it
            ("scroll pane", page),
            ("text", rect(296, 349, 690, 418)),
        ];
        assert_eq!(stacks(controls), vec![vec![1, 3]]);
    }

    #[test]
    fn lone_controls_and_tiny_boxes_are_no_stack() {
        let dot = rect(5, 5, 1, 1);
        assert!(stacks([("button", dot), ("button", dot)]).is_empty());
        assert!(stacks([("button", rect(0, 0, 9, 9)), ("text", rect(0, 0, 9, 9))]).is_empty());
    }

    #[test]
    fn at_most_a_few_stacks_are_asked_about() {
        let controls: Vec<(&str, Rect)> = (0..20)
            .flat_map(|i| {
                let r = rect(i * 30, 0, 20, 20);
                [("button", r), ("button", r)]
            })
            .collect();
        let found = stacks(controls);
        assert_eq!(found.len(), MAX_STACKS);
        assert_eq!(found[0], vec![0, 1]);
    }
}
