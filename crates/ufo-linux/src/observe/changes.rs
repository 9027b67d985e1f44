//! Incremental observation of LibreOffice: the tree of its last observation is kept and only
//! what its events say changed is read again (reading the whole tree costs LibreOffice
//! 100-400 ms of work each time).
//!
//! The events come from `a11y::events` (one task per observed application, listening to its
//! signals only); the applications are asked to send them at the first observation of
//! LibreOffice (nothing read before that is kept).
//!
//! At the next observation of the same application the kept tree is brought up to date
//! ([`plan`]): an object whose properties, states or text changed has its name, states and
//! child count read again; an object whose children changed has its children listed again
//! (bounded: a container reporting more than `walk_max_children` is never enumerated) and the
//! walk then reads the new ones; an object that went away is dropped with its subtree. The
//! whole tree is read again when that is not sure to be right: the first time, a window
//! created or destroyed, an event of a kind not understood, more than [`MAX_REFRESH`] objects
//! changed, the log overflowed, or a read failed. Objects outside the kept tree (a sheet's
//! cells, which the tree never holds) change nothing in it.
//!
//! Only LibreOffice is observed this way ([`keeps_trees`]): its bridge sends an event for
//! every change. GTK4 does not announce every change of its widgets (a label's text, a
//! button shown), and asking every GTK application for the object events ufo reads
//! (`a11y::events::ASKED`) makes them all work; their whole tree comes in one `GetItems` call
//! of 5-15 ms anyway.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::a11y::bus::AppTree;
use crate::a11y::events::Change;

/// Most objects refreshed one by one; more changed than this and the whole tree is read.
pub(crate) const MAX_REFRESH: usize = 200;

/// What to read again to bring a kept tree up to date.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Objects whose name, states and child count are read again.
    pub nodes: BTreeSet<String>,
    /// Objects whose children are listed again.
    pub children: BTreeSet<String>,
    /// Objects dropped with their subtrees.
    pub removed: BTreeSet<String>,
}

impl Plan {
    /// Whether nothing needs reading.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.children.is_empty() && self.removed.is_empty()
    }
}

/// The refresh of a kept tree for `changes`, or `None` when the whole tree must be read.
/// Objects not in the tree (`in_tree` false) are left alone: nothing kept depends on them.
pub(crate) fn plan(changes: &[Change], in_tree: impl Fn(&str) -> bool) -> Option<Plan> {
    let mut p = Plan::default();
    for c in changes {
        match c {
            Change::Whole => return None,
            Change::Node(path) | Change::Cursor(path) | Change::State(path) if in_tree(path) => {
                p.nodes.insert(path.clone());
            }
            Change::Children(path) if in_tree(path) => {
                p.children.insert(path.clone());
            }
            Change::Removed(path) if in_tree(path) => {
                p.removed.insert(path.clone());
            }
            Change::Node(_)
            | Change::Cursor(_)
            | Change::State(_)
            | Change::Children(_)
            | Change::Removed(_) => {}
        }
    }
    // a removed object needs no other read; listing children reads the node too
    p.nodes
        .retain(|n| !p.removed.contains(n) && !p.children.contains(n));
    p.children.retain(|n| !p.removed.contains(n));
    (p.nodes.len() + p.children.len() <= MAX_REFRESH).then_some(p)
}

/// Whether `changes` may leave a sheet's cells as they were: the only events on a container
/// of many children (`manages`: the sheet) are state changes (its focus), and at most
/// [`MAX_OUTSIDE`] objects outside the tree sent events. Returns those objects: the cells
/// hold only if none of them is a cell or text that may sit in one (their role says).
/// A cell's own object does not announce a new content: a value typed into a cell and entered
/// (and the formulas it feeds) shows only as the sheet's `ActiveDescendantChanged` and
/// `SelectionChanged` (its cursor moving on), with events of short-lived objects of
/// LibreOffice's own; a sort, a paste or a recalculation sends them on the sheet too. So
/// those events of the sheet count as content here, not as state (`kept.rs` checks a formula
/// fed by a cell changed outside ufo).
pub(crate) fn cells_verdict(
    changes: &[Change],
    in_tree: impl Fn(&str) -> bool,
    manages: impl Fn(&str) -> bool,
) -> Option<BTreeSet<String>> {
    let mut outside = BTreeSet::new();
    for c in changes {
        let (p, state) = match c {
            Change::Whole => return None,
            Change::State(p) => (p, true),
            Change::Node(p) | Change::Cursor(p) | Change::Children(p) | Change::Removed(p) => {
                (p, false)
            }
        };
        if !in_tree(p) {
            outside.insert(p.clone());
            if outside.len() > MAX_OUTSIDE {
                return None;
            }
        } else if !state && manages(p) {
            return None;
        }
    }
    Some(outside)
}

/// Whether `changes` are what entering text into a cell makes LibreOffice send, so that the
/// cells kept may be brought up to date cell by cell (`SheetCache::hold_except`): on a
/// container of many children (`manages`: the sheet) only its states, its cursor and its
/// selection changed (no rows inserted or removed, no data changed over the sheet, which a
/// scroll, a sort or a paste of rows send), and nothing asks for a whole read. Objects
/// outside the tree (the in-place editor's paragraphs, the Name Box) may have sent anything:
/// what they change sits in the cell entered. LibreOffice sends no event for the cells a
/// formula recalculates, so this is used only together with what ufo itself entered
/// (`SheetCache::note_entry`), never for a change made outside ufo.
pub(crate) fn entries_only(changes: &[Change], manages: impl Fn(&str) -> bool) -> bool {
    changes.iter().all(|c| match c {
        Change::Whole => false,
        Change::State(_) | Change::Cursor(_) => true,
        Change::Node(p) | Change::Children(p) | Change::Removed(p) => !manages(p),
    })
}

/// Most objects outside the tree whose role is asked for (to tell a cell from a rebuilt menu
/// item); more and the cells are read again.
const MAX_OUTSIDE: usize = 256;

/// What an observation keeps of an application for the next one.
pub(crate) struct Kept {
    /// The application's event count when its tree was read.
    pub count: u64,
    /// Its tree, the walk included.
    pub tree: AppTree,
}

/// The trees kept from the last observation of each application, behind a lock of their
/// own.
#[derive(Default)]
pub(crate) struct KeptTrees(std::sync::Mutex<Trees>);

#[derive(Default)]
struct Trees {
    /// bus name → its tree kept from the last observation
    trees: HashMap<String, Kept>,
    /// bus name → its event count at the start of the current observation
    event_counts: HashMap<String, u64>,
}

impl KeptTrees {
    fn lock(&self) -> std::sync::MutexGuard<'_, Trees> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start an observation of `bus` at event count `count` (`None`: its events are not
    /// counted): the count is noted, and the tree kept with the count it was read at comes
    /// back (none without a count).
    pub(crate) fn start(&self, bus: &str, count: Option<u64>) -> Option<(u64, AppTree)> {
        let mut st = self.lock();
        match count {
            Some(c) => {
                st.event_counts.insert(bus.to_string(), c);
            }
            None => {
                st.event_counts.remove(bus);
            }
        }
        match count {
            Some(_) => st.trees.get(bus).map(|k| (k.count, k.tree.clone())),
            None => None,
        }
    }

    /// Keep a tree read (or kept) now, with the application's event count from before it
    /// was read.
    pub(crate) fn keep(&self, bus: &str, count: Option<u64>, tree: &AppTree) {
        let mut st = self.lock();
        match count {
            Some(count) => {
                st.trees.insert(
                    bus.to_string(),
                    Kept {
                        count,
                        tree: tree.clone(),
                    },
                );
            }
            None => {
                st.trees.remove(bus);
            }
        }
    }

    /// The event count of `bus` taken at the start of this observation, when its trees may
    /// be kept.
    pub(crate) fn event_count(&self, bus: &str) -> Option<u64> {
        self.lock().event_counts.get(bus).copied()
    }
}

/// Whether an application's trees may be kept between observations: LibreOffice, whose
/// bridge sends an event for every change (other toolkits do not always).
pub(crate) fn keeps_trees(app_name: &str) -> bool {
    let a = app_name.to_ascii_lowercase();
    a.contains("soffice") || a.contains("libreoffice")
}

/// Whether a kept tree may be brought up to date from the events (`UFO_INCREMENTAL=0`
/// reads it whole after any event, as before: for comparisons and as a way out).
pub(crate) fn incremental() -> bool {
    std::env::var("UFO_INCREMENTAL").map_or(true, |v| v.trim() != "0")
}

/// Drop `path` and everything under it from the tree.
pub(crate) fn remove_subtree(tree: &mut AppTree, path: &str) {
    if let Some(parent) = tree.nodes.get(path).map(|n| n.parent.clone()) {
        if let Some(kids) = tree.children.get_mut(&parent) {
            kids.retain(|k| k != path);
        }
    }
    let mut stack = vec![path.to_string()];
    let mut seen = HashSet::new();
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        tree.nodes.remove(&p);
        if let Some(kids) = tree.children.remove(&p) {
            stack.extend(kids);
        }
    }
}

/// Put the live list of `parent`'s children into the tree: children no longer there are
/// dropped with their subtrees, those still there get their new index; returns the new ones
/// (path and index), to be read.
pub(crate) fn set_children(
    tree: &mut AppTree,
    parent: &str,
    live: &[String],
) -> Vec<(String, i32)> {
    let keep: HashSet<&String> = live.iter().collect();
    let old: Vec<String> = tree.kids(parent).to_vec();
    for k in old.iter().filter(|k| !keep.contains(k)) {
        remove_subtree(tree, k);
    }
    let mut fresh = Vec::new();
    for (i, k) in live.iter().enumerate() {
        let i = i as i32;
        if tree.nodes.contains_key(k) {
            // known (here or elsewhere in the tree): hang it here, at its new place
            tree.reparent(k, parent, i);
        } else {
            fresh.push((k.clone(), i));
        }
    }
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a11y::bus::Node;

    #[test]
    fn only_libreoffice_keeps_its_trees() {
        assert!(keeps_trees("soffice"));
        assert!(keeps_trees("LibreOffice"));
        assert!(!keeps_trees("gnome-calculator"));
        assert!(!keeps_trees("Firefox"));
    }

    #[test]
    fn a_plan_reads_only_what_the_tree_holds_and_gives_up_when_unsure() {
        let tree: HashSet<&str> = ["/a/1", "/a/2", "/a/3"].into_iter().collect();
        let has = |p: &str| tree.contains(p);
        let p = plan(
            &[
                Change::Node("/a/1".into()),
                Change::Node("/cell/77".into()),
                Change::Children("/a/2".into()),
                Change::Node("/a/2".into()),
                Change::Removed("/a/3".into()),
                Change::Node("/a/3".into()),
            ],
            has,
        )
        .expect("a plan");
        assert_eq!(p.nodes.iter().collect::<Vec<_>>(), ["/a/1"]);
        assert_eq!(p.children.iter().collect::<Vec<_>>(), ["/a/2"]);
        assert_eq!(p.removed.iter().collect::<Vec<_>>(), ["/a/3"]);
        assert!(plan(&[Change::Node("/a/1".into()), Change::Whole], has).is_none());
        assert!(plan(&[Change::Node("/x".into())], has).is_some_and(|p| p.is_empty()));
        let many: Vec<Change> = (0..=MAX_REFRESH)
            .map(|i| Change::Node(format!("/n/{i}")))
            .collect();
        assert!(plan(&many, |_| true).is_none());
    }

    #[test]
    fn cells_hold_only_while_the_sheet_only_changed_state_and_few_others_changed() {
        let tree: HashSet<&str> = ["/toolbar", "/sheet"].into_iter().collect();
        let has = |p: &str| tree.contains(p);
        let manages = |p: &str| p == "/sheet";
        let verdict = |c: &[Change]| cells_verdict(c, has, manages);
        assert_eq!(
            verdict(&[
                Change::State("/sheet".into()),
                Change::Node("/toolbar".into()),
                Change::Children("/toolbar".into()),
            ]),
            Some(BTreeSet::new())
        );
        // objects outside the tree are named, to be asked for their parent (a cell's is the
        // sheet)
        assert_eq!(
            verdict(&[Change::Node("/x".into()), Change::State("/x".into())]),
            Some(["/x".to_string()].into_iter().collect())
        );
        assert_eq!(
            verdict(&[Change::Children("/sheet".into())]),
            None,
            "rows inserted"
        );
        assert_eq!(
            verdict(&[Change::Node("/sheet".into())]),
            None,
            "visible data changed"
        );
        assert_eq!(verdict(&[Change::Whole]), None);
        let many: Vec<Change> = (0..=MAX_OUTSIDE)
            .map(|i| Change::Node(format!("/c/{i}")))
            .collect();
        assert_eq!(verdict(&many), None);
    }

    #[test]
    fn a_cell_entry_moves_the_cursor_and_nothing_else_of_the_sheet() {
        let manages = |p: &str| p == "/sheet";
        // typing into A1 and Enter: the cursor moves on, the in-place editor and the Name
        // Box (outside the tree) change, a menu item is renamed ("Undo: Input")
        assert!(entries_only(
            &[
                Change::State("/sheet".into()),
                Change::Cursor("/sheet".into()),
                Change::Node("/editor/paragraph".into()),
                Change::Children("/editor".into()),
                Change::Removed("/editor/paragraph".into()),
                Change::Node("/menu/undo".into()),
            ],
            manages
        ));
        assert!(
            !entries_only(&[Change::Node("/sheet".into())], manages),
            "the sheet's data changed"
        );
        assert!(
            !entries_only(&[Change::Children("/sheet".into())], manages),
            "rows inserted"
        );
        assert!(!entries_only(
            &[Change::Cursor("/sheet".into()), Change::Whole],
            manages
        ));
        assert!(entries_only(&[], manages));
    }

    fn node(path: &str, parent: &str, index: i32) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index,
            child_count: 0,
            ifaces: 0,
            name: String::new(),
            role: 0,
            description: String::new(),
            states: 0,
        }
    }

    #[test]
    fn new_children_replace_the_old_ones_and_their_subtrees_go() {
        let mut t = AppTree::from_nodes(vec![
            node("/p", "/root", 0),
            node("/a", "/p", 0),
            node("/a/x", "/a", 0),
            node("/b", "/p", 1),
        ]);
        let fresh = set_children(&mut t, "/p", &["/b".into(), "/c".into()]);
        assert_eq!(fresh, vec![("/c".to_string(), 1)]);
        assert!(!t.nodes.contains_key("/a") && !t.nodes.contains_key("/a/x"));
        assert_eq!(t.nodes["/b"].index, 0);
        assert_eq!(t.kids("/p"), ["/b".to_string()]);
        remove_subtree(&mut t, "/p");
        assert!(t.nodes.is_empty() || !t.nodes.contains_key("/b"));
        assert!(t.kids("/root").is_empty());
    }
}
