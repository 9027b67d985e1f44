//! Following the windows an action opens (docs/desktop.md, "Windows an action opens"): a window of the
//! same application that appears after the AppAgent's action (preferences, a non-modal
//! dialog, a new document or message window) becomes the agent's window, kept on a stack;
//! when it closes, the window before it returns. Pure decisions over two window lists, so
//! that every rule is tested without a desktop.

use serde_json::{json, Value};

use crate::ports::WindowInfo;

/// Most windows kept on the stack; past it the oldest followed window (never the assigned
/// one) is forgotten.
pub const MAX_FOLLOWED: usize = 8;

/// Whether two windows belong to the same application: the same process id when both are
/// known, else the same (non-empty) process name.
pub fn same_application(a: &WindowInfo, b: &WindowInfo) -> bool {
    match (a.pid, b.pid) {
        (Some(x), Some(y)) => x == y,
        _ => {
            let (p, q) = (a.process.trim(), b.process.trim());
            !p.is_empty() && p.eq_ignore_ascii_case(q)
        }
    }
}

/// One change of the window the AppAgent observes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowChange {
    /// The action opened `window`; `previous` returns when it closes.
    Opened {
        /// The new window, now observed.
        window: WindowInfo,
        /// The window observed before.
        previous: WindowInfo,
    },
    /// The followed windows in `closed` are gone; `window` is observed again.
    Returned {
        /// The window observed again.
        window: WindowInfo,
        /// The windows that closed, the last observed first.
        closed: Vec<WindowInfo>,
    },
}

impl WindowChange {
    /// The sentence the model reads in its next prompt.
    pub fn note(&self) -> String {
        match self {
            WindowChange::Opened { window, previous } => format!(
                "the action opened window {:?} (application {}): it is now the window \
                 observed; when it closes, {:?} returns",
                window.title, window.app_name, previous.title
            ),
            WindowChange::Returned { window, closed } => {
                let titles: Vec<String> = closed.iter().map(|w| format!("{:?}", w.title)).collect();
                format!(
                    "window {} closed: the window observed is {:?} again",
                    titles.join(", "),
                    window.title
                )
            }
        }
    }

    /// Its trajectory record (the `window_change` list of a step).
    pub fn record(&self) -> Value {
        let w = |w: &WindowInfo| json!({"id": w.id, "title": w.title, "app": w.app_name});
        match self {
            WindowChange::Opened { window, previous } => {
                json!({"change": "opened", "window": w(window), "previous": w(previous)})
            }
            WindowChange::Returned { window, closed } => json!({
                "change": "returned",
                "window": w(window),
                "closed": closed.iter().map(w).collect::<Vec<_>>(),
            }),
        }
    }
}

/// The windows an AppAgent observes: the assigned one at the bottom, the window observed now
/// on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowStack {
    windows: Vec<WindowInfo>,
}

impl WindowStack {
    /// A stack holding the assigned window.
    pub fn new(assigned: WindowInfo) -> Self {
        Self {
            windows: vec![assigned],
        }
    }

    /// The window observed now.
    pub fn current(&self) -> &WindowInfo {
        // never empty: `new` puts the assigned window in and `follow` never removes it
        &self.windows[self.windows.len() - 1]
    }

    /// How many windows are stacked (1: only the assigned one).
    pub fn depth(&self) -> usize {
        self.windows.len()
    }

    /// Update the stack from the window list `before` the action and the one `after` it:
    /// followed windows that are gone are dropped (the assigned one stays, even when gone: its
    /// observation then says what happened); a new window of the same application as the
    /// current one becomes current (the last such one when several appeared). Returns what
    /// changed, in order.
    pub fn follow(&mut self, before: &[WindowInfo], after: &[WindowInfo]) -> Vec<WindowChange> {
        let mut changes = Vec::new();
        // titles change (a saved document's name): keep each stacked window's latest facts
        for w in &mut self.windows {
            if let Some(now) = after.iter().find(|a| a.id == w.id) {
                *w = now.clone();
            }
        }
        let was = self.current().id.clone();
        let mut closed = Vec::new();
        let mut kept = vec![self.windows[0].clone()];
        for w in self.windows.drain(1..) {
            if after.iter().any(|a| a.id == w.id) {
                kept.push(w);
            } else {
                closed.push(w);
            }
        }
        self.windows = kept;
        if self.current().id != was {
            closed.reverse();
            changes.push(WindowChange::Returned {
                window: self.current().clone(),
                closed,
            });
        }
        let current = self.current().clone();
        let opened = after.iter().rev().find(|w| {
            !before.iter().any(|b| b.id == w.id)
                && !self.windows.iter().any(|s| s.id == w.id)
                && same_application(w, &current)
        });
        if let Some(w) = opened {
            if self.windows.len() >= MAX_FOLLOWED {
                self.windows.remove(1);
            }
            self.windows.push(w.clone());
            changes.push(WindowChange::Opened {
                window: w.clone(),
                previous: current,
            });
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(id: &str, title: &str, process: &str, pid: Option<u32>) -> WindowInfo {
        WindowInfo {
            id: id.into(),
            title: title.into(),
            app_name: process.to_uppercase(),
            process: process.into(),
            pid,
            rect: None,
        }
    }

    #[test]
    fn the_same_application_is_the_same_pid_else_the_same_process() {
        let a = w("1", "a", "gimp", Some(7));
        assert!(same_application(&a, &w("2", "b", "other", Some(7))));
        assert!(!same_application(&a, &w("2", "b", "gimp", Some(8))));
        assert!(same_application(&a, &w("2", "b", "GIMP", None)));
        assert!(!same_application(&a, &w("2", "b", "writer", None)));
        assert!(!same_application(
            &w("1", "a", "", None),
            &w("2", "b", "", None)
        ));
    }

    #[test]
    fn a_new_window_of_the_same_application_is_followed_and_returns_when_it_closes() {
        let image = w("1", "Image - GIMP", "gimp", Some(7));
        let prefs = w("2", "Preferences", "gimp", Some(7));
        let other = w("3", "notes - Writer", "writer", Some(9));
        let mut stack = WindowStack::new(image.clone());
        let before = vec![image.clone(), other.clone()];
        let after = vec![image.clone(), other.clone(), prefs.clone()];
        let changes = stack.follow(&before, &after);
        assert_eq!(
            changes,
            vec![WindowChange::Opened {
                window: prefs.clone(),
                previous: image.clone()
            }]
        );
        assert_eq!(stack.current(), &prefs);
        assert!(changes[0].note().contains(
            "opened window \"Preferences\" (application GIMP): it is now the window observed; \
             when it closes, \"Image - GIMP\" returns"
        ));
        // nothing new: nothing changes
        assert!(stack.follow(&after, &after).is_empty());
        // it closes: the image window returns
        let changes = stack.follow(&after, &before);
        assert_eq!(
            changes,
            vec![WindowChange::Returned {
                window: image.clone(),
                closed: vec![prefs.clone()]
            }]
        );
        assert_eq!(stack.current(), &image);
        assert_eq!(changes[0].record()["closed"][0]["id"], "2");
    }

    #[test]
    fn other_applications_and_old_windows_are_not_followed() {
        let image = w("1", "Image - GIMP", "gimp", Some(7));
        let mut stack = WindowStack::new(image.clone());
        let old = w("2", "Layers", "gimp", Some(7));
        let writer = w("3", "notes - Writer", "writer", Some(9));
        let before = vec![image.clone(), old.clone()];
        let after = vec![image.clone(), old, writer];
        assert!(stack.follow(&before, &after).is_empty());
        assert_eq!(stack.current(), &image);
    }

    #[test]
    fn the_assigned_window_stays_when_gone_and_titles_are_refreshed() {
        let doc = w("1", "Untitled - Editor", "editor", None);
        let mut stack = WindowStack::new(doc.clone());
        assert!(stack.follow(std::slice::from_ref(&doc), &[]).is_empty());
        assert_eq!(stack.current(), &doc);
        let saved = w("1", "notes.txt - Editor", "editor", None);
        assert!(stack.follow(&[], std::slice::from_ref(&saved)).is_empty());
        assert_eq!(stack.current().title, "notes.txt - Editor");
    }

    #[test]
    fn a_window_that_replaces_another_returns_then_opens() {
        let main = w("1", "Main", "app", Some(1));
        let dialog = w("2", "Open", "app", Some(1));
        let doc = w("3", "doc - App", "app", Some(1));
        let mut stack = WindowStack::new(main.clone());
        stack.follow(std::slice::from_ref(&main), &[main.clone(), dialog.clone()]);
        let changes = stack.follow(
            &[main.clone(), dialog.clone()],
            &[main.clone(), doc.clone()],
        );
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(matches!(&changes[0], WindowChange::Returned { window, .. } if window == &main));
        assert!(
            matches!(&changes[1], WindowChange::Opened { window, previous } if window == &doc && previous == &main)
        );
        assert_eq!(stack.depth(), 2);
    }

    proptest! {
        /// However windows come and go, the stack is bounded, keeps the assigned window at
        /// the bottom, and its current window is the assigned one or one that exists now.
        #[test]
        fn the_stack_is_bounded_and_current_exists(
            steps in proptest::collection::vec(
                proptest::collection::vec(0u8..20, 0..8), 1..30)
        ) {
            let assigned = w("a", "A", "p0", Some(0));
            let mut stack = WindowStack::new(assigned.clone());
            let mut before = vec![assigned.clone()];
            for list in steps {
                let mut after: Vec<WindowInfo> = vec![assigned.clone()];
                for id in list {
                    // a window keeps its process: three applications share the ids
                    let app = id % 3;
                    let win = w(&format!("w{id}"), "t", &format!("p{app}"), Some(u32::from(app)));
                    if !after.iter().any(|x| x.id == win.id) {
                        after.push(win);
                    }
                }
                stack.follow(&before, &after);
                prop_assert!(stack.depth() <= MAX_FOLLOWED);
                prop_assert_eq!(&stack.windows[0].id, "a");
                let current = stack.current();
                prop_assert!(after.iter().any(|x| x.id == current.id));
                prop_assert!(same_application(current, &assigned));
                before = after;
            }
        }
    }
}
