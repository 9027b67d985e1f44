//! Completing an application's tree where its cache lacks nodes (GTK4 before its first walk,
//! GTK3 dialogs): the walk's calls, bounded in nodes and time; `walk.rs` decides what to ask.

use std::collections::HashMap;
use std::time::Instant;

use super::observer::Observer;
use super::walk::{
    file_children, report_refused, take_fresh, FreshNodes, Listed, Read, WalkOutcome, Walker,
    MAX_CACHE_PER_LEVEL,
};
use crate::a11y::announced::Announced;
use crate::a11y::bus::{AppTree, Node};
use crate::controls::CtlInfo;
use crate::LinuxError;

impl Observer<'_> {
    /// The tree of a control's application with the control in it and its part walked
    /// thoroughly ([`Self::complete_tree`]: what the application's cache lacks, in GTK3
    /// dialogs and GTK4, comes from a walk; the walk's warnings say nothing here).
    pub(crate) async fn control_tree(&self, c: &CtlInfo) -> Result<AppTree, LinuxError> {
        let mut tree = self.bus.tree(&c.bus).await?;
        let mut ignored = Vec::new();
        if !tree.nodes.contains_key(&c.path) {
            tree.insert(self.bus.node(&c.bus, &c.path, "", 0).await?);
        }
        let reading = FreshNodes::for_toolkit(self.apps.is_relative(self.bus, &c.bus).await);
        self.complete_tree(&c.bus, &mut tree, &c.path, true, reading, &mut ignored)
            .await;
        Ok(tree)
    }

    /// Fill in the parts of the tree the application's cache did not give (GTK4 before its
    /// first walk) by walking the incomplete visible nodes. The walk is bounded in nodes
    /// (`walk_max_nodes`) and time (`walk_budget`, every round of calls included) and says in
    /// `warnings` when it was cut. It never enumerates a container whose child count is
    /// negative or above `walk_max_children`, read live just before (a spreadsheet manages its
    /// descendants and reports every cell of the sheet: asking for its children makes the
    /// application build them all, at 100% CPU and without end). Returns whether a walk was
    /// needed, and how often it met a node twice.
    ///
    /// The walk stays inside the window's own tree and reads each node once: a child that a
    /// live answer lists under two parents is followed under the first; a known node is
    /// moved under the parent that lists it only when that closes no circle and takes no
    /// window away (a stale answer, as Chromium gives while a page loads, would otherwise
    /// make the window's tree endless).
    ///
    /// `reading` says how the nodes a listing names are read ([`FreshNodes`]).
    pub(crate) async fn complete_tree(
        &self,
        bus: &str,
        tree: &mut AppTree,
        frame: &str,
        thorough: bool,
        reading: FreshNodes,
        warnings: &mut Vec<String>,
    ) -> WalkOutcome {
        let mut w = Walker::new(tree, frame, thorough, self.config);
        w.reading = reading;
        for n in tree.subtree(frame, w.max_nodes) {
            if w.visible(tree, n) {
                w.place(n, tree.kids(&n.path).len(), false, true);
            }
        }
        if w.frontier.is_empty() && w.probes.is_empty() {
            report_refused(&mut w.refused, warnings);
            return WalkOutcome::default();
        }
        w.deadline = Instant::now() + self.config.walk_budget;
        if w.reading == FreshNodes::FromCache {
            // listening before the first listing: its announcements come before its answer
            w.announced = Announced::listen(&self.bus.conn, bus, self.bus.timeout).await;
        }
        loop {
            // nodes whose cached count cannot be trusted: read the live count (one cheap call
            // each, no child is built) and enumerate only a bounded one
            if !w.probes.is_empty() && !self.read_counts(bus, tree, &mut w).await {
                w.cut = true;
                break;
            }
            if w.frontier.is_empty() {
                // nodes connected during the walk (cached under a parent the cache lacked,
                // as LibreOffice files its root pane and its toolbars' boxes) may be
                // incomplete too: look at the tree again, a few times at most
                if w.rescans < 3 {
                    w.rescans += 1;
                    w.rescan(tree, frame);
                    if !w.frontier.is_empty() || !w.probes.is_empty() {
                        continue;
                    }
                }
                break;
            }
            w.take_frontier();
            if w.frontier.is_empty() {
                continue;
            }
            if Instant::now() >= w.deadline || w.visited >= w.max_nodes {
                w.cut = true;
                break;
            }
            if w.frontier.len() > w.max_nodes - w.visited {
                w.frontier.truncate(w.max_nodes - w.visited);
                w.cut = true;
            }
            w.visited += w.frontier.len();
            let Some(fresh) = self.list_children(bus, tree, &mut w).await else {
                w.cut = true;
                break;
            };
            if !self.read_fresh(bus, tree, &mut w, fresh).await {
                w.cut = true;
                break;
            }
        }
        tree.sort_children();
        let outcome = WalkOutcome {
            walked: true,
            repeats: w.repeats,
            read_twice: w.reads.values().filter(|&&n| n > 1).count(),
            cut: w.cut,
            announced: w.announced_nodes,
        };
        w.report(warnings, self.config.walk_budget);
        outcome
    }

    /// A step of [`Self::complete_tree`]: the live child count of each probed node, and
    /// whether to walk it. `false` when the walk ran out of time.
    pub(super) async fn read_counts(&self, bus: &str, tree: &mut AppTree, w: &mut Walker) -> bool {
        w.seen.extend(w.probes.iter().cloned());
        for p in std::mem::take(&mut w.probes) {
            w.count_read(Read::Count, &p);
            w.probes.push(p);
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let counts = tokio::time::timeout(
            remaining,
            futures::future::join_all(w.probes.iter().map(|p| self.bus.child_count(bus, p))),
        )
        .await;
        let Ok(counts) = counts else {
            return false;
        };
        let probes = std::mem::take(&mut w.probes);
        for (p, c) in probes.into_iter().zip(counts) {
            match c {
                Ok(c) => {
                    if let Some(n) = tree.nodes.get_mut(&p) {
                        n.child_count = c;
                        w.place(n, 0, true, true);
                    }
                }
                Err(_) => w.errors += 1,
            }
        }
        true
    }

    /// A step of [`Self::complete_tree`]: the children of the frontier, live. Children the
    /// cache filed under another parent move under this one (and are walked when
    /// incomplete); the ones the tree lacks come back to be read (child path, parent,
    /// index). `None` when the walk ran out of time.
    pub(super) async fn list_children(
        &self,
        bus: &str,
        tree: &mut AppTree,
        w: &mut Walker,
    ) -> Option<Vec<Listed>> {
        for p in std::mem::take(&mut w.frontier) {
            w.count_read(Read::Children, &p);
            w.frontier.push(p);
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let results = tokio::time::timeout(
            remaining,
            futures::future::join_all(w.frontier.iter().map(|p| self.bus.children(bus, p))),
        )
        .await
        .ok()?;
        let frontier = std::mem::take(&mut w.frontier);
        Some(file_children(tree, w, frontier.into_iter().zip(results)))
    }

    /// A step of [`Self::read_fresh`] with [`FreshNodes::FromCache`]: the fresh nodes the
    /// application announced while answering the listing just made ([`Announced`]), then
    /// those its cache lists now (one `GetItems` call: the listing put them there), and the
    /// ones neither has, to be read one by one. A cache larger than [`MAX_CACHE_PER_LEVEL`]
    /// ends the cache reading for the rest of the walk. `None` when the walk ran out of time.
    pub(super) async fn fresh_from_cache(
        &self,
        bus: &str,
        w: &mut Walker,
        fresh: Vec<Listed>,
    ) -> Option<(Vec<Result<Node, LinuxError>>, Vec<Listed>)> {
        if w.reading == FreshNodes::OneByOne {
            return Some((Vec::new(), fresh));
        }
        let (mut found, fresh) = match &w.announced {
            Some(a) => {
                let mut announced = a.take(fresh.iter().map(|(k, _, _)| k.as_str())).await;
                take_fresh(&mut announced, fresh)
            }
            None => (Vec::new(), fresh),
        };
        w.announced_nodes += found.len();
        if fresh.len() < 2 {
            return Some((found, fresh));
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let items = tokio::time::timeout(remaining, self.bus.get_items(bus))
            .await
            .ok()?;
        let Ok(items) = items else {
            w.reading = FreshNodes::OneByOne;
            return Some((found, fresh));
        };
        if items.len() > MAX_CACHE_PER_LEVEL {
            w.reading = FreshNodes::OneByOne;
        }
        let mut cached: HashMap<String, Node> =
            items.into_iter().map(|n| (n.path.clone(), n)).collect();
        let (from_cache, missing) = take_fresh(&mut cached, fresh);
        found.extend(from_cache);
        Some((found, missing))
    }

    /// A step of [`Self::complete_tree`]: read the nodes new to the tree and put them in;
    /// the visible ones (and the cached nodes that hang under them now) are walked when
    /// incomplete. `false` when the walk ran out of time.
    pub(super) async fn read_fresh(
        &self,
        bus: &str,
        tree: &mut AppTree,
        w: &mut Walker,
        fresh: Vec<Listed>,
    ) -> bool {
        for (k, _, _) in &fresh {
            w.count_read(Read::Node, k);
        }
        let (mut nodes, fresh) = match self.fresh_from_cache(bus, w, fresh).await {
            Some(split) => split,
            None => return false,
        };
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let one_by_one = tokio::time::timeout(remaining, self.new_nodes(bus, &fresh)).await;
        let Ok((one_by_one, announced)) = one_by_one else {
            return false;
        };
        w.announced_nodes += announced;
        nodes.extend(one_by_one);
        let mut attached: Vec<String> = Vec::new();
        for n in nodes {
            match n {
                Ok(n) => {
                    if w.visible(tree, &n) {
                        // a fresh node's count was read live just now
                        w.place(&n, 0, true, true);
                        attached.push(n.path.clone());
                    }
                    tree.insert(n);
                }
                Err(_) => w.errors += 1,
            }
        }
        // cached nodes whose parent was missing from the cache (LibreOffice files its
        // root pane and the boxes of its toolbars so) hang under a fresh node now: walk
        // the incomplete ones among them too
        for p in attached {
            for d in tree.subtree(&p, w.max_nodes).into_iter().skip(1) {
                if w.visible(tree, d) {
                    w.place(d, tree.kids(&d.path).len(), false, true);
                }
            }
        }
        true
    }
}
