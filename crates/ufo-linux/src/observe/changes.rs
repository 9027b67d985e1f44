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
//! button shown), and asking every GTK application for all its object events makes them all
//! work; their whole tree comes in one `GetItems` call of 5-15 ms anyway.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::a11y::bus::{AppTree, Node};
use crate::a11y::events::{Change, SYNC_WAIT};
use crate::a11y::vocab::role;
use crate::a11y::vocab::state;
use crate::desktop::LinuxDesktop;

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
            Change::Node(path) | Change::State(path) if in_tree(path) => {
                p.nodes.insert(path.clone());
            }
            Change::Children(path) if in_tree(path) => {
                p.children.insert(path.clone());
            }
            Change::Removed(path) if in_tree(path) => {
                p.removed.insert(path.clone());
            }
            Change::Node(_) | Change::State(_) | Change::Children(_) | Change::Removed(_) => {}
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
            Change::Node(p) | Change::Children(p) | Change::Removed(p) => (p, false),
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

/// Most objects outside the tree whose role is asked for (to tell a cell from a rebuilt menu
/// item); more and the cells are read again.
const MAX_OUTSIDE: usize = 256;
/// Roles of objects that are or may sit in a sheet's cell: table cell, paragraph, text,
/// entry, none (invalid), filler (LibreOffice's in-place editor).
const MAY_HOLD_CELL_TEXT: &[u32] = &[
    role::INVALID,
    role::FILLER,
    role::TABLE_CELL,
    role::TEXT,
    role::PARAGRAPH,
    role::ENTRY,
];

/// What an observation keeps of an application for the next one.
pub(crate) struct Kept {
    /// The application's event count when its tree was read.
    pub count: u64,
    /// Its tree, the walk included.
    pub tree: AppTree,
}

/// The trees kept from the last observation of each application.
#[derive(Default)]
pub(crate) struct KeptTrees {
    /// bus name → its tree kept from the last observation
    pub trees: HashMap<String, Kept>,
    /// bus name → its event count at the start of the current observation
    pub event_counts: HashMap<String, u64>,
}

/// Whether an application's trees may be kept between observations: LibreOffice, whose
/// bridge sends an event for every change (other toolkits do not always).
pub(crate) fn keeps_trees(app_name: &str) -> bool {
    let a = app_name.to_ascii_lowercase();
    a.contains("soffice") || a.contains("libreoffice")
}

/// Whether a kept tree may be brought up to date from the events (`UFO_INCREMENTAL=0`
/// reads it whole after any event, as before: for comparisons and as a way out).
fn incremental() -> bool {
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

impl LinuxDesktop {
    /// The tree of `bus` kept from an earlier observation, brought up to date from the
    /// events the application sent since, and its event count now (to keep what this
    /// observation reads). `None` for the tree: read it whole.
    pub(crate) async fn kept_tree(&self, bus: &str) -> (Option<u64>, Option<AppTree>) {
        let Some(changes) = self.bus.changes.clone() else {
            return (None, None);
        };
        if !self.app_name(bus).await.is_some_and(|a| keeps_trees(&a)) {
            return (None, None);
        }
        let count = changes.count(bus).await;
        let kept = {
            let mut st = self.kept.lock();
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
        };
        let (Some(now), Some((then, mut tree))) = (count, kept) else {
            tracing::debug!(bus, count, "kept tree: none");
            return (count, None);
        };
        if then == now {
            tracing::debug!(bus, count, "kept tree: no event since");
            return (count, Some(tree));
        }
        if !incremental() {
            return (count, None);
        }
        let events = changes.between(bus, then, now).await.unwrap_or_default();
        let in_tree = |p: &str| tree.nodes.contains_key(p);
        let Some(p) = (!events.is_empty())
            .then(|| plan(&events, in_tree))
            .flatten()
        else {
            tracing::debug!(bus, count, "kept tree: read whole");
            return (count, None);
        };
        let t = std::time::Instant::now();
        let ok = self.refresh_tree(bus, &mut tree, &p).await;
        // judged on the refreshed tree: objects new since are in it now
        let quiet = ok && self.cells_hold(bus, &events, &tree).await;
        if ok && quiet {
            // the cells read at the last observation still hold (table.rs keeps them while
            // the count is the same)
            let mut st = self.sheets.lock();
            for ((b, _), (at, _)) in st.kept.iter_mut() {
                if b == bus && *at == then {
                    *at = now;
                }
            }
        }
        tracing::debug!(
            bus,
            count,
            quiet,
            events = now - then,
            nodes = p.nodes.len(),
            children = p.children.len(),
            removed = p.removed.len(),
            ok,
            ms = t.elapsed().as_millis() as u64,
            "kept tree: refreshed"
        );
        (count, ok.then_some(tree))
    }

    /// Whether the cells of the sheets of `bus` read at the last observation still hold
    /// after `events` ([`cells_verdict`], each object outside the tree asked for its role).
    async fn cells_hold(&self, bus: &str, events: &[Change], tree: &AppTree) -> bool {
        let manages = |p: &str| {
            tree.nodes
                .get(p)
                .is_some_and(|n| n.has(state::MANAGES_DESCENDANTS))
        };
        let Some(outside) = cells_verdict(events, |p| tree.nodes.contains_key(p), manages) else {
            if tracing::enabled!(tracing::Level::TRACE) {
                let loud: BTreeSet<String> = events
                    .iter()
                    .filter_map(|c| match c {
                        Change::Whole => Some("whole".to_string()),
                        Change::State(p) => (!tree.nodes.contains_key(p)).then(|| p.clone()),
                        Change::Node(p) | Change::Children(p) | Change::Removed(p) => {
                            (!tree.nodes.contains_key(p) || manages(p)).then(|| format!("{c:?}"))
                        }
                    })
                    .collect();
                tracing::trace!(n = loud.len(), ?loud, "kept cells: read again");
            }
            return false;
        };
        // what the objects outside the tree are: a cell, or text that may sit in a cell,
        // means the cells may have changed; menus, buttons and panels mean nothing to them
        let removed: HashSet<&String> = events
            .iter()
            .filter_map(|c| match c {
                Change::Removed(p) => Some(p),
                _ => None,
            })
            .collect();
        let ask: Vec<&String> = outside.iter().filter(|p| !removed.contains(p)).collect();
        let roles = tokio::time::timeout(
            SYNC_WAIT,
            futures::future::join_all(ask.iter().map(|p| {
                self.bus
                    .call::<_, u32>(bus, p, "org.a11y.atspi.Accessible", "GetRole", &())
            })),
        )
        .await;
        let Ok(roles) = roles else { return false };
        let hold = roles
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| !MAY_HOLD_CELL_TEXT.contains(r)));
        if !hold {
            tracing::trace!(?ask, ?roles, "kept cells: read again");
        }
        hold
    }

    /// Read again what `p` names; false when a read failed (then read the tree whole).
    async fn refresh_tree(&self, bus: &str, tree: &mut AppTree, p: &Plan) -> bool {
        if p.is_empty() {
            // only objects outside the tree changed (a sheet's cells)
            return true;
        }
        for r in &p.removed {
            remove_subtree(tree, r);
        }
        let bound = i32::try_from(self.config.walk_max_children).unwrap_or(i32::MAX);
        // the nodes themselves (a listed node is read again too)
        let targets: Vec<(String, String, i32)> = p
            .nodes
            .iter()
            .chain(&p.children)
            .filter_map(|path| {
                let n = tree.nodes.get(path)?;
                Some((path.clone(), n.parent.clone(), n.index))
            })
            .collect();
        let read = tokio::time::timeout(
            self.config.walk_budget,
            futures::future::join_all(
                targets
                    .iter()
                    .map(|(path, parent, i)| self.nodes.read(&self.bus, bus, path, parent, *i)),
            ),
        )
        .await;
        let Ok(read) = read else { return false };
        let mut relist: Vec<String> = Vec::new();
        for ((path, _, _), n) in targets.iter().zip(read) {
            match n {
                Ok(n) => {
                    let known = tree.kids(path).len();
                    let count_changed = usize::try_from(n.child_count).ok() != Some(known);
                    let enumerable =
                        (0..=bound).contains(&n.child_count) && !n.has(state::MANAGES_DESCENDANTS);
                    if enumerable && (p.children.contains(path) || count_changed) {
                        relist.push(path.clone());
                    }
                    tree.nodes.insert(path.clone(), n);
                }
                // gone since: drop it (its parent's children event says the rest)
                Err(_) => remove_subtree(tree, path),
            }
        }
        relist.retain(|p| tree.nodes.contains_key(p));
        let lists = tokio::time::timeout(
            self.config.walk_budget,
            futures::future::join_all(relist.iter().map(|p| self.bus.children(bus, p))),
        )
        .await;
        let Ok(lists) = lists else { return false };
        let mut fresh: Vec<(String, String, i32)> = Vec::new();
        for (parent, live) in relist.iter().zip(lists) {
            let Ok(live) = live else { return false };
            for (k, i) in set_children(tree, parent, &live) {
                fresh.push((k, parent.clone(), i));
            }
        }
        let nodes = tokio::time::timeout(
            self.config.walk_budget,
            futures::future::join_all(
                fresh
                    .iter()
                    .map(|(k, p, i)| self.nodes.read(&self.bus, bus, k, p, *i)),
            ),
        )
        .await;
        let Ok(nodes) = nodes else { return false };
        for n in nodes {
            // a new child's own children are read by the walk that follows (its child count
            // is known, its children are not)
            let Ok(n): Result<Node, _> = n else {
                return false;
            };
            tree.insert(n);
        }
        tree.sort_children();
        true
    }

    /// Keep a tree read (or kept) now, with the application's event count from before it
    /// was read.
    pub(crate) fn keep_tree(&self, bus: &str, count: Option<u64>, tree: &AppTree) {
        let mut st = self.kept.lock();
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
        self.kept.lock().event_counts.get(bus).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
