//! Bringing the tree kept from an application's last observation up to date from the
//! events it sent since (see `changes` for what is kept and when a tree is read whole).

use std::collections::{BTreeSet, HashSet};

use super::changes::{
    cells_verdict, entries_only, incremental, keeps_trees, plan, remove_subtree, set_children, Plan,
};
use super::observer::Observer;
use super::places::touched_bars;
use crate::a11y::bus::{AppTree, Node};
use crate::a11y::events::{Change, SYNC_WAIT};
use crate::vocab::state;
use crate::vocab::MAY_HOLD_CELL_TEXT;

impl Observer<'_> {
    /// The tree of `bus` kept from an earlier observation, brought up to date from the
    /// events the application sent since, and its event count now (to keep what this
    /// observation reads). `None` for the tree: read it whole.
    pub(crate) async fn kept_tree(&self, bus: &str) -> (Option<u64>, Option<AppTree>) {
        // (nothing of the controls' places kept is taken unless the tree comes from events)
        self.places.note_since(bus, None);
        let Some(changes) = self.bus.changes.clone() else {
            return (None, None);
        };
        if !self
            .apps
            .name(self.bus, bus)
            .await
            .is_some_and(|a| keeps_trees(&a))
        {
            return (None, None);
        }
        // the first count asks the applications for their events and is not trusted: the
        // second is (as `act/search.rs` does). Without it the tree a document's first
        // observation reads was never kept, and the next observation read it whole again
        // (Calc: the cache and its 690 visible cells, 0.3–0.6 s); that first observation
        // used to read the window three times, the second of which did it
        let count = match changes.count(bus).await {
            Some(n) => Some(n),
            None => changes.count(bus).await,
        };
        let kept = self.kept.start(bus, count);
        let (Some(now), Some((then, mut tree))) = (count, kept) else {
            tracing::debug!(bus, count, "kept tree: none");
            return (count, None);
        };
        if then == now {
            tracing::debug!(bus, count, "kept tree: no event since");
            self.places
                .note_since(bus, Some((then, now, BTreeSet::new())));
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
            if !events.is_empty() {
                self.cells_after_entries(bus, &events, &tree, then, now);
            }
            return (count, None);
        };
        let t = std::time::Instant::now();
        // (looked up before the refresh: a dropped object is still in the tree)
        let touched = touched_bars(&tree, &p);
        let ok = self.refresh_tree(bus, &mut tree, &p).await;
        if ok {
            self.places.note_since(bus, Some((then, now, touched)));
        }
        // judged on the refreshed tree: objects new since are in it now
        let quiet = ok && self.cells_hold(bus, &events, &tree).await;
        if ok && quiet {
            // the cells read at the last observation still hold (table.rs keeps them while
            // the count is the same)
            self.sheets.still_hold(bus, then, now);
        } else {
            self.cells_after_entries(bus, &events, &tree, then, now);
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

    /// After ufo's own entries into cells of `bus` (and nothing else of ufo's there), when
    /// LibreOffice sent only what such an entry sends ([`entries_only`]): the cells kept at
    /// event count `then` hold at `now` except those entered and those that showed
    /// something, which `read_cells` reads again (`apps::sheets`).
    fn cells_after_entries(
        &self,
        bus: &str,
        events: &[Change],
        tree: &AppTree,
        then: u64,
        now: u64,
    ) {
        let manages = |p: &str| {
            tree.nodes
                .get(p)
                .is_some_and(|n| n.has(state::MANAGES_DESCENDANTS))
        };
        let entries = entries_only(events, manages);
        let mine = self.sheets.only_entered(bus, std::time::Instant::now());
        tracing::debug!(bus, entries, mine, "kept cells after entries");
        if entries && mine {
            self.sheets.hold_except(bus, then, now);
        }
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
                        Change::Node(p)
                        | Change::Cursor(p)
                        | Change::Children(p)
                        | Change::Removed(p) => {
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
            .all(|r| r.as_ref().is_ok_and(|r| !MAY_HOLD_CELL_TEXT.contains(*r)));
        if !hold {
            tracing::trace!(?ask, ?roles, "kept cells: read again");
        }
        hold
    }

    /// A step of [`Self::refresh_tree`]: the nodes `p` names read again (a listed node too),
    /// each in place of its old self (a node gone since is dropped: its parent's children
    /// event says the rest); the nodes whose children must be listed again (those `p` lists,
    /// and those whose count changed, when they may be enumerated). `None` when the reads
    /// took longer than the walk's budget.
    async fn reread_nodes(&self, bus: &str, tree: &mut AppTree, p: &Plan) -> Option<Vec<String>> {
        let bound = i32::try_from(self.config.walk_max_children).unwrap_or(i32::MAX);
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
                    .map(|(path, parent, i)| self.nodes.read(self.bus, bus, path, parent, *i)),
            ),
        )
        .await
        .ok()?;
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
                Err(_) => remove_subtree(tree, path),
            }
        }
        Some(relist)
    }

    /// The nodes a live listing named that the tree lacks (child, parent, index), in order,
    /// and how many of them came from their announcements: a node the application
    /// announced and no event named since is its cache item (`Changes::announced`; every
    /// entry into a Calc cell rebuilds the sidebar's tab bar, 15 new objects of six calls
    /// each, read in three rounds while LibreOffice is still busy with the entry), the
    /// others are read live. A node whose children the item cannot be trusted on (a count
    /// of -1, a container managing its descendants) is read live too.
    pub(super) async fn new_nodes(
        &self,
        bus: &str,
        fresh: &[(String, String, i32)],
    ) -> (Vec<Result<Node, crate::LinuxError>>, usize) {
        if fresh.is_empty() {
            return (Vec::new(), 0);
        }
        let mut announced = match &self.bus.changes {
            Some(changes) => {
                changes
                    .announced(bus, fresh.iter().map(|(k, _, _)| k.as_str()))
                    .await
            }
            None => Default::default(),
        };
        let read = futures::future::join_all(fresh.iter().map(|(k, p, i)| {
            let known = announced.remove(k);
            async move {
                let live = || self.nodes.read(self.bus, bus, k, p, *i);
                let Some((mut n, counted)) = known else {
                    return (live().await, false);
                };
                if !counted {
                    match self.bus.child_count(bus, k).await {
                        Ok(c) => n.child_count = c,
                        Err(e) => return (Err(e), false),
                    }
                }
                // (a count of -1 or a container managing its descendants: read it as before)
                if n.child_count < 0 || n.has(state::MANAGES_DESCENDANTS) {
                    return (live().await, false);
                }
                n.parent.clone_from(p);
                n.index = *i;
                (Ok(n), true)
            }
        }))
        .await;
        let taken = read.iter().filter(|(_, a)| *a).count();
        (read.into_iter().map(|(n, _)| n).collect(), taken)
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
        let Some(mut relist) = self.reread_nodes(bus, tree, p).await else {
            return false;
        };
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
        let nodes =
            tokio::time::timeout(self.config.walk_budget, self.new_nodes(bus, &fresh)).await;
        let Ok((nodes, announced)) = nodes else {
            return false;
        };
        tracing::debug!(bus, fresh = fresh.len(), announced, "kept tree: new nodes");
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
}
