//! What the walk of an incomplete tree decides, without a call: which nodes to ask for their
//! children ([`walk_verdict`]: never a container that reports more than the bound, or a
//! negative count read live), where a live listing files each child ([`file_children`]: each
//! once, no circle), how the fresh nodes are read ([`FreshNodes`]), and what it says it left
//! out. The calls are `tree.rs`'s.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::candidates::{passes_through, uses_showing};
use crate::a11y::announced::Announced;
use crate::a11y::bus::{AppTree, Node};
use crate::names::collapse_ws;
use crate::vocab::{role_name, state, LISTS};
use crate::{LinuxConfig, LinuxError};

/// Most children of one node taken by the walk (lists that manage their descendants can hold
/// thousands of rows).
pub(super) const MAX_WALK_CHILDREN: usize = 300;

/// A walk of the incomplete visible nodes under way (see [`LinuxDesktop::complete_tree`]).
pub(super) struct Walker {
    pub(super) thorough: bool,
    /// `walk_max_children` and `walk_max_nodes`
    pub(super) bound: usize,
    pub(super) max_nodes: usize,
    /// whether visible nodes must also be showing (the application sets SHOWING)
    pub(super) uses_showing: bool,
    /// the end of the walk's budget (set when the walk starts)
    pub(super) deadline: Instant,
    /// nodes to ask for their children, and nodes whose cached count is not trusted
    pub(super) frontier: Vec<String>,
    pub(super) probes: Vec<String>,
    /// the containers not enumerated, and why
    pub(super) refused: Vec<String>,
    /// the nodes walked or probed
    pub(super) seen: HashSet<String>,
    /// the nodes whose children were asked for, and the children a live answer listed:
    /// each is followed once
    pub(super) listed_parents: HashSet<String>,
    pub(super) listed: HashSet<String>,
    /// live reads by (kind, node): a count above 1 is a node read twice
    pub(super) reads: HashMap<(Read, String), u32>,
    /// nodes met again (listed by a second parent, or a move that would close a circle)
    pub(super) repeats: usize,
    pub(super) visited: usize,
    /// nodes that did not answer
    pub(super) errors: usize,
    /// a list longer than [`MAX_WALK_CHILDREN`] was cut
    pub(super) capped: bool,
    /// the walk stopped at its budget
    pub(super) cut: bool,
    pub(super) rescans: usize,
    /// how the nodes a listing names are read
    pub(super) reading: FreshNodes,
    /// the application's announcements during the walk ([`FreshNodes::FromCache`]), and the
    /// fresh nodes taken from them
    pub(super) announced: Option<Announced>,
    pub(super) announced_nodes: usize,
}

/// A node a live listing named and the tree lacks: its path, its parent, its index there.
pub(super) type Listed = (String, String, i32);

/// Most items of an application's cache read once per level of a walk
/// ([`FreshNodes::FromCache`]); a larger cache is not read again during that walk.
pub(super) const MAX_CACHE_PER_LEVEL: usize = 2_000;

/// How the walk reads the nodes a listing names.
///
/// A freshly started GTK 4 application's cache lists ten objects; listing a node's children
/// puts them in the cache. Read one by one, each node is six calls, which the application
/// answers in turn: gnome-calculator's 86 nodes took ~55 ms. From the cache, a level of the
/// tree is one `GetItems` call, whatever its width; from the application's announcements of
/// what it exported while answering the listing ([`Announced`]), no call at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FreshNodes {
    /// Each node by its own calls (role, name, description, states, interfaces, count).
    OneByOne,
    /// All of a level from the announcements its listing caused, else by one `GetItems`
    /// call after it (the nodes neither has one by one): for toolkits whose cache gains what
    /// a listing names and announces it (GTK 4).
    FromCache,
}

impl FreshNodes {
    /// How an application's fresh nodes are read: [`FreshNodes::FromCache`] for GTK 4
    /// (whose extents are `relative` to its window), else [`FreshNodes::OneByOne`].
    pub(crate) fn for_toolkit(relative: bool) -> FreshNodes {
        if relative {
            FreshNodes::FromCache
        } else {
            FreshNodes::OneByOne
        }
    }
}

/// The fresh nodes (child, parent, index) found among `by_path` (cache items by path, taken
/// out), placed where the live listing put them, and the fresh nodes it lacks.
pub(super) fn take_fresh(
    by_path: &mut HashMap<String, Node>,
    fresh: Vec<Listed>,
) -> (Vec<Result<Node, LinuxError>>, Vec<Listed>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (k, p, i) in fresh {
        match by_path.remove(&k) {
            Some(mut n) => {
                n.parent = p;
                n.index = i;
                found.push(Ok(n));
            }
            None => missing.push((k, p, i)),
        }
    }
    (found, missing)
}

impl Walker {
    pub(super) fn new(tree: &AppTree, frame: &str, thorough: bool, config: &LinuxConfig) -> Walker {
        Walker {
            thorough,
            bound: config.walk_max_children,
            max_nodes: config.walk_max_nodes,
            uses_showing: uses_showing(tree, frame),
            deadline: Instant::now(),
            frontier: Vec::new(),
            probes: Vec::new(),
            refused: Vec::new(),
            seen: HashSet::new(),
            listed_parents: HashSet::new(),
            listed: HashSet::new(),
            reads: HashMap::new(),
            repeats: 0,
            visited: 0,
            errors: 0,
            capped: false,
            cut: false,
            rescans: 0,
            reading: FreshNodes::OneByOne,
            announced: None,
            announced_nodes: 0,
        }
    }

    pub(super) fn visible(&self, tree: &AppTree, n: &Node) -> bool {
        n.has(state::VISIBLE)
            && (!self.uses_showing || n.has(state::SHOWING) || passes_through(tree, n))
    }

    /// Keep in the frontier the nodes whose children were not asked for yet (once each).
    pub(super) fn take_frontier(&mut self) {
        let before = self.frontier.len();
        let listed = &mut self.listed_parents;
        self.frontier.retain(|p| listed.insert(p.clone()));
        self.repeats += before - self.frontier.len();
        self.seen.extend(self.frontier.iter().cloned());
    }

    /// Note one live read of `path`.
    pub(super) fn count_read(&mut self, kind: Read, path: &str) {
        *self.reads.entry((kind, path.to_string())).or_default() += 1;
    }

    /// Put a visible node where [`walk_verdict`] says (`known`: its children in the tree;
    /// `live`: its count was just read); a refusal is noted when `note_refused`.
    pub(super) fn place(&mut self, n: &Node, known: usize, live: bool, note_refused: bool) {
        match walk_verdict(n, known, self.thorough, self.bound, live) {
            Walk::Children => self.frontier.push(n.path.clone()),
            Walk::Probe => self.probes.push(n.path.clone()),
            Walk::Refuse if note_refused => self.refused.push(refusal(n, self.bound)),
            Walk::Refuse | Walk::Done => {}
        }
    }

    /// Look at the tree again for visible nodes not walked yet (refusals are not noted
    /// again).
    pub(super) fn rescan(&mut self, tree: &AppTree, frame: &str) {
        for n in tree.subtree(frame, self.max_nodes) {
            if self.visible(tree, n) && !self.seen.contains(&n.path) {
                self.place(n, tree.kids(&n.path).len(), false, false);
            }
        }
    }

    /// Say in `warnings` what the walk left out.
    pub(super) fn report(mut self, warnings: &mut Vec<String>, budget: Duration) {
        if self.cut {
            warnings.push(format!(
                "the tree walk stopped at its budget ({} ms, {} nodes): some controls may be missing",
                budget.as_millis(),
                self.max_nodes
            ));
        }
        if self.errors > 0 {
            warnings.push(format!(
                "{} nodes did not answer during the tree walk and are left out",
                self.errors
            ));
        }
        if self.capped {
            warnings.push(format!(
                "a list has more than {MAX_WALK_CHILDREN} entries: only the first {MAX_WALK_CHILDREN} are shown"
            ));
        }
        report_refused(&mut self.refused, warnings);
    }
}

/// What [`LinuxDesktop::complete_tree`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WalkOutcome {
    /// A walk was needed (the cache lacked part of the window).
    pub walked: bool,
    /// Nodes met again and not followed (see [`ObservationStats::repeats`]).
    pub repeats: usize,
    /// Nodes read live more than once (0).
    pub read_twice: usize,
    /// It stopped at its budget.
    pub cut: bool,
    /// Nodes taken from the application's announcements instead of read.
    pub announced: usize,
}

/// The kinds of live read the walk makes of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Read {
    /// Its live child count.
    Count,
    /// Its children.
    Children,
    /// The node itself.
    Node,
}

/// A step of [`LinuxDesktop::complete_tree`]: file the live children of the frontier
/// (parent, its `GetChildren` answer) in the tree. A child listed before (by another parent,
/// or twice) is followed once; a known child filed under another parent moves under this one
/// (the live answer beats GTK3's cache) unless the move would close a circle or take a
/// window away, and is then walked when incomplete. Returns the children the tree lacks, to
/// be read (child, parent, index).
pub(super) fn file_children(
    tree: &mut AppTree,
    w: &mut Walker,
    answers: impl IntoIterator<Item = (String, Result<Vec<String>, LinuxError>)>,
) -> Vec<Listed> {
    let mut fresh: Vec<Listed> = Vec::new();
    let mut moved: Vec<Listed> = Vec::new();
    for (p, r) in answers {
        let kids = match r {
            Ok(kids) => kids,
            Err(_) => {
                w.errors += 1;
                continue;
            }
        };
        if kids.len() > MAX_WALK_CHILDREN {
            w.capped = true;
        }
        for (i, k) in kids.into_iter().enumerate().take(MAX_WALK_CHILDREN) {
            if k == p || !w.listed.insert(k.clone()) {
                w.repeats += 1;
                continue;
            }
            match tree.nodes.get(&k) {
                None => fresh.push((k, p.clone(), i as i32)),
                // GTK3's cache can file a dialog's children under another parent: the live
                // answer wins
                Some(n) if n.parent != p => moved.push((k, p.clone(), i as i32)),
                Some(_) => {}
            }
        }
    }
    for (k, p, i) in moved {
        if !tree.reparent(&k, &p, i) {
            w.repeats += 1;
            continue;
        }
        if let Some(n) = tree.nodes.get(&k) {
            if w.visible(tree, n) {
                w.place(n, tree.kids(&k).len(), false, true);
            }
        }
    }
    fresh
}

/// What the walk does with one visible node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Nothing: its children are known, it has none, or it keeps them to itself.
    Done,
    /// Ask for its children (its count is known and within the bound).
    Children,
    /// Its cached count says nothing (-1): read the live count before deciding.
    Probe,
    /// Never ask for its children: it reports more than the bound, or (read live) a
    /// negative count.
    Refuse,
}

/// The walk's decision for a node with `known` children in the tree. `live`: its child count
/// was read from the application just now (not from the cache).
pub(crate) fn walk_verdict(
    n: &Node,
    known: usize,
    thorough: bool,
    bound: usize,
    live: bool,
) -> Walk {
    let count = n.child_count;
    let bound = i32::try_from(bound).unwrap_or(i32::MAX);
    let list = LISTS.contains(n.role);
    let manages = n.has(state::MANAGES_DESCENDANTS);
    if count > bound {
        return if list || manages || thorough {
            Walk::Refuse
        } else {
            Walk::Done
        };
    }
    if count < 0 {
        // GTK3 reports -1 for menus whose items it does cache: look only when none is
        return match (thorough && list, live) {
            (true, false) if known == 0 => Walk::Probe,
            (true, true) => Walk::Refuse,
            _ => Walk::Done,
        };
    }
    // `thorough` (for `select` and observations): lists that manage their descendants are
    // walked too (GTK3 keeps their rows out of its cache), within the bound
    let may = !manages || (thorough && list);
    if may && count > 0 && (known as i32) < count {
        Walk::Children
    } else {
        Walk::Done
    }
}

/// The warning for a container the walk did not enumerate.
pub(super) fn refusal(n: &Node, bound: usize) -> String {
    let count = if n.child_count < 0 {
        "an unknown number of children".to_string()
    } else {
        format!("{} children", n.child_count)
    };
    let manages = if n.has(state::MANAGES_DESCENDANTS) {
        ", manages its descendants"
    } else {
        ""
    };
    format!(
        "{} {:?} ({count}{manages}) was not enumerated (a child count below 0 or above {bound}; asking for them all would make the application build every one): its cells or entries are not listed as controls",
        role_name(n.role),
        collapse_ws(&n.name)
    )
}

/// Add the refusals to the warnings, once each, at most five.
pub(super) fn report_refused(refused: &mut Vec<String>, warnings: &mut Vec<String>) {
    refused.sort();
    refused.dedup();
    let more = refused.len().saturating_sub(5);
    for r in refused.drain(..).take(5) {
        if !warnings.contains(&r) {
            warnings.push(r);
        }
    }
    if more > 0 {
        warnings.push(format!("{more} more large containers were not enumerated"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::candidates::collect_candidates;
    use crate::observe::fixtures::{at, chain};
    use crate::vocab::{iface, role, ROOT_PATH};

    fn node(role: u32, child_count: i32, states: u64) -> Node {
        Node {
            path: "/n".into(),
            parent: "/p".into(),
            index: 0,
            child_count,
            ifaces: 0,
            name: "Sheet Sheet1".into(),
            role,
            description: String::new(),
            states,
        }
    }

    /// Issue 11, item 1: Calc's sheet (a table that manages its descendants, -1 in GTK3's
    /// cache, 2^31 - 1 children read live) is never enumerated; this was walked before.
    #[test]
    fn a_sheet_with_every_cell_as_a_child_is_never_enumerated() {
        const TABLE: u32 = 55;
        // the states LibreOffice 7.4 reports for its sheet
        let states = 0xc24c_1980;
        let cached = node(TABLE, -1, states);
        assert_eq!(walk_verdict(&cached, 0, true, 2000, false), Walk::Probe);
        let live = node(TABLE, i32::MAX, states);
        assert_eq!(walk_verdict(&live, 0, true, 2000, true), Walk::Refuse);
        assert_eq!(walk_verdict(&live, 0, false, 2000, true), Walk::Refuse);
        assert_eq!(walk_verdict(&live, 0, true, 2000, false), Walk::Refuse);
        // a negative count read live is refused too
        assert_eq!(
            walk_verdict(&node(TABLE, -1, states), 0, true, 2000, true),
            Walk::Refuse
        );
        // just above the bound (any container): refused; at the bound: walked
        assert_eq!(
            walk_verdict(&node(TABLE, 2001, states), 0, true, 2000, true),
            Walk::Refuse
        );
        assert_eq!(
            walk_verdict(&node(TABLE, 2000, states), 0, true, 2000, true),
            Walk::Children
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 5000, 0), 0, true, 2000, false),
            Walk::Refuse
        );
        assert!(refusal(&live, 2000).contains(
            "\"Sheet Sheet1\" (2147483647 children, manages its descendants) was not enumerated"
        ));
    }

    /// What the walk did before stays: GTK3 menus report -1 with their items cached, GTK3
    /// lists that manage their descendants are walked within the bound, plain containers
    /// with missing children are walked.
    #[test]
    fn bounded_lists_and_containers_are_still_walked() {
        let manages = state::MANAGES_DESCENDANTS;
        assert_eq!(
            walk_verdict(&node(role::MENU, -1, 0), 31, true, 2000, false),
            Walk::Done
        );
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, -1, manages), 0, true, 2000, false),
            Walk::Probe
        );
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, 12, manages), 0, true, 2000, true),
            Walk::Children
        );
        // not thorough: a list that manages its descendants is left alone, as before
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, 12, manages), 0, false, 2000, true),
            Walk::Done
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, 0), 2, false, 2000, false),
            Walk::Children
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, 0), 4, true, 2000, false),
            Walk::Done
        );
        // a non-list that manages its descendants is never walked
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, manages), 0, true, 2000, true),
            Walk::Done
        );
    }

    /// A frame with a web document holding a group Gecko reports as not showing (a settings
    /// group) around a check box that is, and a GTK-like hidden page outside the document.
    fn page_with_hidden_group() -> AppTree {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 2;
        let mut group = at("/g", "/d", 0, role::PANEL);
        group.states = state::VISIBLE;
        let mut tab = at("/t", "/f", 1, role::PANEL);
        tab.states = state::VISIBLE;
        let mut check = at("/k", "/g", 0, role::CHECK_BOX);
        check.ifaces |= iface::ACTION;
        let mut hidden = at("/h", "/t", 0, role::PUSH_BUTTON);
        hidden.states = state::VISIBLE;
        AppTree::from_nodes(vec![
            f,
            at("/d", "/f", 0, role::DOCUMENT_WEB),
            group,
            check,
            tab,
            hidden,
        ])
    }

    /// Issue 23: Firefox's settings check boxes sit under a group that is VISIBLE but not
    /// SHOWING; the walk and the candidates go through it inside a web page, and nowhere else.
    #[test]
    fn a_page_group_that_is_not_showing_is_gone_through() {
        let tree = page_with_hidden_group();
        assert!(passes_through(&tree, &tree.nodes["/g"]));
        assert!(
            !passes_through(&tree, &tree.nodes["/t"]),
            "outside a web page"
        );
        let (found, _, _) = collect_candidates(&tree, "/f", 5000, &HashSet::new());
        let paths: Vec<&str> = found.iter().map(|c| c.node.path.as_str()).collect();
        assert!(paths.contains(&"/k"), "{paths:?}");
        assert!(!paths.contains(&"/h"), "{paths:?}");
        let w = walker(&tree);
        assert!(w.visible(&tree, &tree.nodes["/g"]));
        assert!(!w.visible(&tree, &tree.nodes["/t"]));
    }

    fn walker(tree: &AppTree) -> Walker {
        Walker::new(tree, "/f", true, &LinuxConfig::default())
    }

    /// Issue 23: Firefox launched on `about:preferences` keeps in its cache the first, dead
    /// (DEFUNCT) document under the browser's internal frame, with an unknown child count,
    /// and not the page that replaced it; the frame's one child was "known", nothing was
    /// walked and the page's controls were never listed, on every observation. The dead
    /// node is left out of the tree, so the frame is asked for its children live.
    #[test]
    fn a_dead_document_in_the_cache_does_not_hide_the_page() {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 1;
        let mut holder = at("/i", "/f", 0, role::INTERNAL_FRAME);
        holder.child_count = 1;
        let mut dead = at("/old", "/i", 0, role::DOCUMENT_WEB);
        dead.child_count = -1;
        dead.states |= state::DEFUNCT;
        let tree = AppTree::from_nodes(vec![f, holder, dead]);
        let holder = &tree.nodes["/i"];
        let verdict = walk_verdict(holder, tree.kids("/i").len(), true, 500, false);
        assert_eq!(
            verdict,
            Walk::Children,
            "the frame's children are read live"
        );
        assert!(!tree.nodes.contains_key("/old"));
    }

    /// Issue 23, item 2: live answers that list an ancestor (a stale parent) or a node twice
    /// close no circle and read nothing twice; the window's tree stays a tree.
    #[test]
    fn the_walk_files_stale_and_repeated_children_once() {
        let mut tree = chain();
        let mut w = walker(&tree);
        let fresh = file_children(
            &mut tree,
            &mut w,
            vec![
                // /c (stale) lists its grandparent /a and a new node /d
                (
                    "/c".to_string(),
                    Ok(vec!["/a".to_string(), "/d".to_string()]),
                ),
                // /b lists /d too, and the window itself
                (
                    "/b".to_string(),
                    Ok(vec!["/d".to_string(), "/f".to_string()]),
                ),
            ],
        );
        assert_eq!(fresh, [("/d".to_string(), "/c".to_string(), 1)]);
        let order: Vec<&str> = tree
            .subtree("/f", 5000)
            .iter()
            .map(|n| n.path.as_str())
            .collect();
        assert_eq!(order, ["/f", "/a", "/b", "/c"]);
        assert_eq!(tree.nodes["/a"].parent, "/f");
        assert_eq!(tree.nodes["/f"].parent, ROOT_PATH);
        assert_eq!(w.repeats, 3);
        // a later round that lists /d again does not read it again
        let again = file_children(
            &mut tree,
            &mut w,
            vec![("/a".to_string(), Ok(vec!["/d".to_string()]))],
        );
        assert!(again.is_empty());
    }

    /// A frontier node asked for its children once, even when placed twice.
    #[test]
    fn the_frontier_lists_a_node_once() {
        let tree = chain();
        let mut w = walker(&tree);
        w.frontier = vec!["/a".into(), "/b".into(), "/a".into()];
        w.take_frontier();
        assert_eq!(w.frontier, ["/a", "/b"]);
        w.frontier = vec!["/b".into()];
        w.take_frontier();
        assert!(w.frontier.is_empty());
        assert_eq!(w.repeats, 2);
    }

    /// The live answer still moves a node the cache filed elsewhere (GTK3's dialogs).
    #[test]
    fn the_live_answer_still_moves_a_misfiled_node() {
        let mut tree = chain();
        tree.insert(at("/x", "/elsewhere", 0, role::PUSH_BUTTON));
        let mut w = walker(&tree);
        let fresh = file_children(
            &mut tree,
            &mut w,
            vec![("/c".to_string(), Ok(vec!["/x".to_string()]))],
        );
        assert!(fresh.is_empty());
        assert_eq!(tree.kids("/c"), ["/x"]);
        assert!(tree.kids("/elsewhere").is_empty());
        assert_eq!(w.repeats, 0);
    }

    /// The cache's items stand for the fresh nodes they list, placed where the live listing
    /// put them (the cache's own parent and index lose); the nodes it lacks are left to be
    /// read one by one, and items nobody listed are not taken.
    #[test]
    fn fresh_nodes_come_from_the_cache_where_it_has_them() {
        let items = vec![
            at("/a", "/stale", 7, role::PANEL),
            at("/b", "/p", 1, role::PUSH_BUTTON),
            at("/unlisted", "/p", 2, role::LABEL),
        ];
        let fresh = vec![
            ("/a".to_string(), "/p".to_string(), 0),
            ("/b".to_string(), "/p".to_string(), 1),
            ("/c".to_string(), "/p".to_string(), 2),
        ];
        let mut items: HashMap<String, Node> =
            items.into_iter().map(|n| (n.path.clone(), n)).collect();
        let (found, missing) = take_fresh(&mut items, fresh);
        // what was taken is out; what nobody listed stays
        assert_eq!(items.keys().collect::<Vec<_>>(), ["/unlisted"]);
        let found: Vec<(String, String, i32, u32)> = found
            .into_iter()
            .map(|n| n.expect("from the cache"))
            .map(|n| (n.path, n.parent, n.index, n.role))
            .collect();
        assert_eq!(
            found,
            [
                ("/a".into(), "/p".into(), 0, role::PANEL),
                ("/b".into(), "/p".into(), 1, role::PUSH_BUTTON),
            ]
        );
        assert_eq!(missing, [("/c".to_string(), "/p".to_string(), 2)]);
    }

    /// Only GTK 4 (window-relative extents) has its fresh nodes read from its cache.
    #[test]
    fn only_gtk4_reads_fresh_nodes_from_its_cache() {
        assert_eq!(FreshNodes::for_toolkit(true), FreshNodes::FromCache);
        assert_eq!(FreshNodes::for_toolkit(false), FreshNodes::OneByOne);
    }
}
