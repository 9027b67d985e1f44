//! Office documents (LibreOffice Writer and Impress, issue 11): the visible paragraphs, table
//! cells, slides and shapes read through the document's visible range, names for the boxes
//! of the toolbars, shadow menus dropped, controls under an open menu dropped, and the
//! rectangles of a fresh LibreOffice window corrected.
//!
//! LibreOffice's GTK3 bridge keeps the document's children out of its cache (the document
//! manages its descendants and reports -1 there); read live, its child count is the number of
//! paragraphs (Writer) or shapes (Impress) on screen, so it is read with one bounded
//! `GetChildren` call, never a walk of the whole document.

use std::collections::HashMap;
use std::time::Instant;

use ufo_core::Rect;

use crate::a11y::bus::A11yBus;
use crate::a11y::bus::{AppTree, Node};
use crate::a11y::nodecache::KnownNodes;
use crate::controls::CtlInfo;
use crate::vocab::role;
use crate::vocab::{iface, state};
use crate::LinuxConfig;

/// Most children read from one document node (LibreOffice reports only what is on screen:
/// a page of paragraphs, the shapes of one slide, the slides of the panel).
const DOC_MAX_CHILDREN: i32 = 300;
/// Most nodes read from the documents of one window.
const DOC_MAX_NODES: usize = 1500;
/// Longest text `read_text` returns for a whole document.
const DOC_TEXT_MAX: usize = 20_000;
/// Characters of a paragraph kept in its name.
const NAME_CHARS: usize = 40;

/// Roles of document nodes whose children are read live.
pub(crate) fn is_document(r: u32) -> bool {
    matches!(
        r,
        role::DOCUMENT_TEXT | role::DOCUMENT_PRESENTATION | role::DOCUMENT_FRAME
    )
}

/// Roles inside a document that hold paragraphs or shapes (read one level further).
fn is_holder(r: u32) -> bool {
    matches!(
        r,
        role::TABLE | role::TABLE_CELL | role::SECTION | role::PANEL
    )
}

/// The document (text, presentation or the slides panel) a node sits in, within four levels.
fn document_of<'a>(tree: &'a AppTree, n: &Node) -> Option<&'a Node> {
    let mut p = n.parent.as_str();
    for _ in 0..4 {
        let a = tree.nodes.get(p)?;
        if is_document(a.role) {
            return Some(a);
        }
        p = a.parent.as_str();
    }
    None
}

/// Whether a node is a part of a document listed as a control: a paragraph or heading of a
/// text or presentation, a slide of the slides panel, a shape with a name of its own or
/// without paragraphs.
pub(crate) fn is_document_part(tree: &AppTree, n: &Node) -> bool {
    match n.role {
        role::PARAGRAPH | role::HEADING => document_of(tree, n).is_some(),
        role::PANEL => {
            let Some(parent) = tree.nodes.get(&n.parent) else {
                return false;
            };
            match parent.role {
                // the slides panel ("Slides View"): one panel per slide
                role::DOCUMENT_FRAME => !n.name.trim().is_empty(),
                // a shape of the slide: listed by its own name ("Title 1", "Content
                // Placeholder 2": an empty placeholder's paragraph has no text to be named
                // by); without one only when it holds no paragraph (else its text is in the
                // paragraphs); the page itself is not a control
                role::DOCUMENT_PRESENTATION => {
                    let holds_text = tree
                        .kids(&n.path)
                        .iter()
                        .any(|k| tree.nodes.get(k).is_some_and(|c| c.role == role::PARAGRAPH));
                    !n.name.starts_with("PageShape") && (!holds_text || has_own_name(&n.name))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Names LibreOffice makes up for a shape that has none of its own (its kind): no name a
/// person reads on the slide, so such a shape is reached through its paragraphs.
const MADE_UP_SHAPE_NAMES: &[&str] = &[
    "PresentationTitle",
    "PresentationSubtitle",
    "PresentationOutliner",
    "PresentationNotes",
    "Text Frame",
];

/// Whether a shape carries a name of its own ("Title 1", "Content Placeholder 2"), not
/// empty and not one LibreOffice made up from the shape's kind.
fn has_own_name(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty() && !MADE_UP_SHAPE_NAMES.contains(&name)
}

/// Whether a control is left out because its content is listed instead: a table cell of a
/// text document (its paragraphs are listed, named with the cell's address).
pub(crate) fn is_hidden_part(tree: &AppTree, n: &Node) -> bool {
    n.role == role::TABLE_CELL
        && document_of(tree, n).is_some_and(|d| d.role == role::DOCUMENT_TEXT)
}

/// Whether the text of a control with this role is read into its value.
pub(crate) fn is_text_part(r: u32) -> bool {
    matches!(r, role::PARAGRAPH | role::HEADING)
}

/// The name of a paragraph: the start of its text (a table cell's address before it).
pub(crate) fn paragraph_name(text: &str, cell: Option<&str>) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut name: String = flat.chars().take(NAME_CHARS).collect();
    if flat.chars().count() > NAME_CHARS {
        // cut at a word boundary when one is near
        if let Some(i) = name.rfind(' ').filter(|&i| i > NAME_CHARS / 2) {
            name.truncate(i);
        }
        name.push('…');
    }
    match cell {
        Some(c) if !c.trim().is_empty() => format!("{}: {name}", c.trim()),
        _ => name,
    }
}

/// The table cell a paragraph sits in, by its name ("A1").
pub(crate) fn cell_of(tree: &AppTree, n: &Node) -> Option<String> {
    tree.nodes
        .get(&n.parent)
        .filter(|p| p.role == role::TABLE_CELL && !p.name.trim().is_empty())
        .map(|p| p.name.clone())
}

/// A name for an unnamed control from the nearest named panel around it, within eight
/// levels and inside its toolbar (LibreOffice's font, size and style boxes are an unnamed
/// entry and button in a panel named "Font Name", "Font Size", "Paragraph Style"; the
/// sidebar's tab buttons sit in a panel whose description names them). An entry gets the
/// panel's name, a button beside it "`<name>` list".
pub(crate) fn ancestor_name(tree: &AppTree, n: &Node, textual: bool) -> Option<String> {
    let mut p = n.parent.as_str();
    for _ in 0..8 {
        let a = tree.nodes.get(p)?;
        if matches!(
            a.role,
            role::TOOL_BAR | role::ROOT_PANE | role::FRAME | role::SCROLL_PANE
        ) || is_document(a.role)
        {
            return None;
        }
        if a.role == role::PANEL {
            let label = [&a.name, &a.description]
                .into_iter()
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .find(|s| !s.is_empty());
            if let Some(label) = label {
                // when the panel holds an entry, the entry takes the name and a button the
                // list
                return Some(if textual || !has_entry(tree, &a.path) {
                    label
                } else {
                    format!("{label} list")
                });
            }
        }
        p = a.parent.as_str();
    }
    None
}

fn has_entry(tree: &AppTree, path: &str) -> bool {
    tree.subtree(path, 40)
        .iter()
        .any(|d| d.role == role::TEXT && d.ifaces & iface::EDITABLE_TEXT != 0)
}

/// What [`Office::extent_corrections`] worked out: the root pane's shift (`None`: the
/// rectangles are right) and the correction of each candidate that has one.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Corrections {
    pub shift: Option<(i32, i32)>,
    pub fixes: HashMap<String, (i32, i32)>,
}

/// A candidate's correction kept from an earlier observation, with the shift it was worked
/// out under.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct KnownFix {
    pub shift: (i32, i32),
    pub fix: (i32, i32),
}

/// The correction of one node's rectangle in a LibreOffice window whose frame reports its
/// contents shifted by `shift` (a fresh window: everything LibreOffice draws itself sits
/// as if the GTK menu bar were not there, until the first click). `chain` holds the raw
/// rectangles from the root pane down to the node. The GTK widgets LibreOffice embeds
/// (the boxes of the toolbars, the sidebar) report where they really are: such an island
/// starts where a child has its parent's size but sits exactly `shift` away from it, and
/// nothing inside it is moved.
pub(crate) fn chain_correction(chain: &[Rect], shift: (i32, i32)) -> (i32, i32) {
    let mut corr = shift;
    for pair in chain.windows(2) {
        let (parent, child) = (pair[0], pair[1]);
        if corr != (0, 0)
            && child.w == parent.w
            && child.h == parent.h
            && (child.x - parent.x, child.y - parent.y) == corr
        {
            corr = (0, 0);
        }
    }
    corr
}

/// The shift of a root pane against its parent (a GTK box that knows its true place): the
/// same size at another place means LibreOffice's own coordinates are off by the difference.
pub(crate) fn root_pane_shift(parent: Rect, root: Rect) -> Option<(i32, i32)> {
    let d = (parent.x - root.x, parent.y - root.y);
    (parent.w == root.w && parent.h == root.h && d != (0, 0) && d.0.abs() < 200 && d.1.abs() < 200)
        .then_some(d)
}

/// The first node of a role within `depth` levels under `root`, level by level.
fn find_near<'a>(tree: &'a AppTree, root: &str, r: u32, depth: usize) -> Option<&'a Node> {
    let mut level = vec![root.to_string()];
    for _ in 0..depth {
        let mut next = Vec::new();
        for p in &level {
            for k in tree.kids(p) {
                let Some(n) = tree.nodes.get(k) else { continue };
                if n.role == r {
                    return Some(n);
                }
                next.push(k.clone());
            }
        }
        level = next;
    }
    None
}

/// One control as the filters below see it.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    /// Role name ("menu", "menu item", "push button").
    pub role: String,
    /// Name as shown.
    pub name: String,
    /// Whether it has the Action interface.
    pub has_action: bool,
    /// Screen rectangle.
    pub rect: Rect,
}

fn is_menu_entry(role: &str) -> bool {
    matches!(
        role,
        "menu" | "menu item" | "check menu item" | "radio menu item"
    )
}

fn centre_in(r: Rect, area: Rect) -> bool {
    let (cx, cy) = (r.x + r.w as i32 / 2, r.y + r.h as i32 / 2);
    cx >= area.x && cy >= area.y && cx < area.x + area.w as i32 && cy < area.y + area.h as i32
}

/// Which controls to keep: a menu without an action whose name another menu with an action
/// has is LibreOffice's shadow of the menu bar (dropped), and while a menu or popup is open
/// (menu entries stacked in a column), the other controls whose centre or top-left corner
/// (where the label goes) it covers are dropped, so that no label is drawn over another
/// control.
pub(crate) fn keep_mask(items: &[Placed]) -> Vec<bool> {
    let mut keep = vec![true; items.len()];
    // shadow menus
    for (i, it) in items.iter().enumerate() {
        if it.role == "menu"
            && !it.has_action
            && items
                .iter()
                .any(|o| o.role == "menu" && o.has_action && o.name == it.name)
        {
            keep[i] = false;
        }
    }
    // open popups: columns of at least two menu entries of the same x and width, touching
    let mut entries: Vec<usize> = (0..items.len())
        .filter(|&i| keep[i] && is_menu_entry(&items[i].role))
        .collect();
    entries.sort_by_key(|&i| (items[i].rect.x, items[i].rect.w, items[i].rect.y));
    let mut popups: Vec<Rect> = Vec::new();
    let mut members: Vec<usize> = Vec::new();
    let mut col: Vec<usize> = Vec::new();
    let flush = |col: &mut Vec<usize>, popups: &mut Vec<Rect>, members: &mut Vec<usize>| {
        if col.len() >= 2 {
            let r0 = items[col[0]].rect;
            let last = items[col[col.len() - 1]].rect;
            popups.push(Rect {
                x: r0.x,
                y: r0.y,
                w: r0.w,
                h: (last.y + last.h as i32 - r0.y).max(1) as u32,
            });
            members.append(col);
        }
        col.clear();
    };
    for &i in &entries {
        let r = items[i].rect;
        let joins = col.last().is_some_and(|&j| {
            let p = items[j].rect;
            p.x == r.x && p.w == r.w && r.y <= p.y + p.h as i32 + 4
        });
        if !joins {
            flush(&mut col, &mut popups, &mut members);
        }
        col.push(i);
    }
    flush(&mut col, &mut popups, &mut members);
    if popups.is_empty() {
        return keep;
    }
    for (i, it) in items.iter().enumerate() {
        // the label goes in the top-left corner: a control whose centre or label the popup
        // covers is left out
        let corner = Rect {
            x: it.rect.x,
            y: it.rect.y,
            w: 2,
            h: 2,
        };
        if keep[i]
            && !members.contains(&i)
            && popups
                .iter()
                .any(|p| centre_in(it.rect, *p) || centre_in(corner, *p))
        {
            keep[i] = false;
        }
    }
    keep
}

/// The ancestors of each candidate down from `root` (the window's root pane), the
/// candidate's own path last, for the candidates under it; and every node on those chains.
fn ancestor_chains(
    tree: &AppTree,
    root: &str,
    candidates: &[&Node],
) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let mut chains: Vec<(String, Vec<String>)> = Vec::new();
    let mut wanted: Vec<String> = Vec::new();
    for c in candidates {
        let mut chain = vec![c.path.clone()];
        let mut p = c.parent.clone();
        let mut found = false;
        for _ in 0..40 {
            if p == root {
                found = true;
                break;
            }
            let Some(n) = tree.nodes.get(&p) else { break };
            chain.push(p.clone());
            p = n.parent.clone();
        }
        if !found {
            continue;
        }
        chain.push(root.to_string());
        chain.reverse();
        wanted.extend(chain.iter().cloned());
        chains.push((c.path.clone(), chain));
    }
    (chains, wanted)
}

/// A reading of the documents' parts under way: the bound on children, the deadline, the
/// nodes read so far and the parts left out (for the warning).
struct DocReading<'r> {
    bound: i32,
    deadline: Instant,
    read: &'r mut usize,
    left_out: &'r mut Vec<String>,
}

/// What reading office documents needs: the bus, the nodes read one by one before, and the
/// configuration's bounds (the desktop lends them, see `LinuxDesktop::office`).
#[derive(Clone, Copy)]
pub(crate) struct Office<'a> {
    pub bus: &'a A11yBus,
    pub nodes: &'a KnownNodes,
    pub config: &'a LinuxConfig,
}

impl Office<'_> {
    /// Read the visible children of the window's documents (paragraphs, table cells, shapes,
    /// slides) into the tree: each document's live child count first, then, when it is
    /// within the bound, its children, and one level further for tables, cells and shapes.
    /// Bounded in nodes, children per node and time; says in `warnings` what it left out.
    pub(crate) async fn read_documents(
        &self,
        bus: &str,
        tree: &mut AppTree,
        frame: &str,
        warnings: &mut Vec<String>,
    ) {
        let docs: Vec<String> = tree
            .subtree(frame, self.config.walk_max_nodes)
            .into_iter()
            .filter(|n| {
                // the slides panel's cached children can be stale: read them all live
                is_document(n.role) && n.has(state::SHOWING)
            })
            .map(|n| n.path.clone())
            .collect();
        if docs.is_empty() {
            return;
        }
        let bound =
            (self.config.walk_max_children.min(i32::MAX as usize) as i32).min(DOC_MAX_CHILDREN);
        let deadline = Instant::now() + self.config.walk_budget;
        let mut level: Vec<String> = docs;
        let mut read = 0usize;
        let mut left_out: Vec<String> = Vec::new();
        for depth in 0..3 {
            if level.is_empty() || Instant::now() >= deadline || read >= DOC_MAX_NODES {
                break;
            }
            let reading = DocReading {
                bound,
                deadline,
                read: &mut read,
                left_out: &mut left_out,
            };
            level = self.read_doc_level(bus, tree, &level, depth, reading).await;
        }
        tree.sort_children();
        if !left_out.is_empty() {
            left_out.sort();
            left_out.dedup();
            warnings.push(format!(
                "document parts with more than {bound} children were not read (only what is on screen is read): {}",
                left_out.join(", ")
            ));
        }
    }

    /// A step of [`Self::read_doc_level`]: the parts of `level` whose children are read: their
    /// live child counts (one cheap call each, nothing is built) within the bound; those
    /// above it are noted as left out.
    async fn doc_parents(
        &self,
        bus: &str,
        tree: &AppTree,
        level: &[String],
        r: &mut DocReading<'_>,
    ) -> Vec<String> {
        let remaining = r.deadline.saturating_duration_since(Instant::now());
        let counts = tokio::time::timeout(
            remaining,
            futures::future::join_all(level.iter().map(|p| self.bus.child_count(bus, p))),
        )
        .await
        .unwrap_or_default();
        let mut parents = Vec::new();
        for (p, c) in level.iter().zip(counts) {
            match c {
                Ok(c) if c > 0 && c <= r.bound => parents.push(p.clone()),
                Ok(c) if c > r.bound => {
                    if let Some(n) = tree.nodes.get(p) {
                        r.left_out.push(format!(
                            "{} {:?} ({c} children)",
                            crate::vocab::role_name(n.role),
                            n.name.trim()
                        ));
                    }
                }
                _ => {}
            }
        }
        parents
    }

    /// A step of [`Self::read_documents`]: one level of the documents' parts read live (their
    /// live child counts, the children of those within the bound, the nodes the tree lacks);
    /// the holders among them (tables, cells, shapes, before the last level) make the next.
    async fn read_doc_level(
        &self,
        bus: &str,
        tree: &mut AppTree,
        level: &[String],
        depth: usize,
        mut r: DocReading<'_>,
    ) -> Vec<String> {
        let parents = self.doc_parents(bus, tree, level, &mut r).await;
        let remaining = r.deadline.saturating_duration_since(Instant::now());
        let kids = tokio::time::timeout(
            remaining,
            futures::future::join_all(parents.iter().map(|p| self.bus.children(bus, p))),
        )
        .await
        .unwrap_or_default();
        let mut fresh: Vec<(String, String, i32)> = Vec::new();
        for (p, k) in parents.iter().zip(kids) {
            let Ok(k) = k else { continue };
            // the live answer replaces what the cache had (stale slides, old paragraphs)
            if let Some(old) = tree.children.get_mut(p) {
                old.retain(|c| k.contains(c));
            }
            for (i, path) in k.into_iter().enumerate() {
                if *r.read + fresh.len() >= DOC_MAX_NODES {
                    break;
                }
                if !tree.nodes.contains_key(&path) {
                    fresh.push((path, p.clone(), i as i32));
                } else {
                    tree.reparent(&path, p, i as i32);
                }
            }
        }
        *r.read += fresh.len();
        let remaining = r.deadline.saturating_duration_since(Instant::now());
        let nodes = tokio::time::timeout(
            remaining,
            futures::future::join_all(
                fresh
                    .iter()
                    .map(|(k, p, i)| self.nodes.read(self.bus, bus, k, p, *i)),
            ),
        )
        .await
        .unwrap_or_default();
        let mut next = Vec::new();
        for n in nodes.into_iter().flatten() {
            if depth < 2 && is_holder(n.role) && n.child_count > 0 && n.has(state::SHOWING) {
                next.push(n.path.clone());
            }
            tree.insert(n);
        }
        next
    }

    /// Corrections of the candidates' rectangles when the window's root pane reports itself
    /// away from where its GTK parent is (a fresh LibreOffice window); none when the
    /// rectangles are right (one extents call for the root pane and one for its parent).
    /// A candidate in `known` whose correction was worked out under the same shift keeps it:
    /// its ancestors are not read again (a bar control placed from its bar, `places.rs`; the
    /// ~150 ancestors of Calc's controls were read at every observation, about 2 ms of
    /// LibreOffice's answering after each cell entry).
    pub(crate) async fn extent_corrections(
        &self,
        bus: &str,
        tree: &AppTree,
        frame: &str,
        candidates: &[&Node],
        known: &HashMap<String, KnownFix>,
    ) -> Corrections {
        let mut out = Corrections::default();
        let Some(root) =
            find_near(tree, frame, role::ROOT_PANE, 4).map(|n| (n.path.clone(), n.parent.clone()))
        else {
            return out;
        };
        let (re, pe) = tokio::join!(
            self.bus.extents(bus, &root.0),
            self.bus.extents(bus, &root.1)
        );
        let (Ok(re), Ok(pe)) = (re, pe) else {
            return out;
        };
        let rect = |(x, y, w, h): (i32, i32, i32, i32)| Rect {
            x,
            y,
            w: w.max(0) as u32,
            h: h.max(0) as u32,
        };
        let Some(shift) = root_pane_shift(rect(pe), rect(re)) else {
            return out;
        };
        out.shift = Some(shift);
        let (known_now, unknown): (Vec<&Node>, Vec<&Node>) = candidates
            .iter()
            .partition(|c| known.get(&c.path).is_some_and(|k| k.shift == shift));
        for c in &known_now {
            if let Some(k) = known.get(&c.path).filter(|k| k.fix != (0, 0)) {
                out.fixes.insert(c.path.clone(), k.fix);
            }
        }
        // the ancestors of each other candidate up to the root pane
        let (chains, mut wanted) = ancestor_chains(tree, &root.0, &unknown);
        wanted.sort();
        wanted.dedup();
        wanted.truncate(3000);
        tracing::debug!(
            ?shift,
            kept = known_now.len(),
            worked_out = unknown.len(),
            ancestors = wanted.len(),
            "rectangle corrections"
        );
        let got = tokio::time::timeout(
            self.config.walk_budget,
            futures::future::join_all(wanted.iter().map(|p| self.bus.extents(bus, p))),
        )
        .await
        .unwrap_or_default();
        let rects: HashMap<&str, Rect> = wanted
            .iter()
            .zip(got)
            .filter_map(|(p, r)| r.ok().map(|r| (p.as_str(), rect(r))))
            .collect();
        for (path, chain) in chains {
            let raw: Option<Vec<Rect>> = chain
                .iter()
                .map(|p| rects.get(p.as_str()).copied())
                .collect();
            let corr = match raw {
                Some(r) => chain_correction(&r, shift),
                None => shift,
            };
            if corr != (0, 0) {
                out.fixes.insert(path, corr);
            }
        }
        out
    }

    /// The visible text of a document without a Text interface of its own (Writer's
    /// document): its children's texts (read live, bounded), one per line. `None` when the
    /// control is no such document.
    pub(crate) async fn document_text(&self, c: &CtlInfo) -> Option<String> {
        let r: u32 = self
            .bus
            .call(&c.bus, &c.path, "org.a11y.atspi.Accessible", "GetRole", &())
            .await
            .ok()?;
        if !is_document(r) {
            return None;
        }
        let mut tree = AppTree::default();
        tree.insert(Node {
            path: c.path.clone(),
            parent: String::new(),
            index: 0,
            child_count: -1,
            ifaces: c.ifaces,
            name: c.name.clone(),
            role: r,
            description: String::new(),
            states: c.states | state::SHOWING,
        });
        let mut warnings = Vec::new();
        self.read_documents(&c.bus, &mut tree, &c.path, &mut warnings)
            .await;
        let parts: Vec<String> = tree
            .subtree(&c.path, DOC_MAX_NODES)
            .into_iter()
            .filter(|n| n.ifaces & iface::TEXT != 0 && n.path != c.path)
            .filter(|n| tree.kids(&n.path).is_empty())
            .map(|n| n.path.clone())
            .collect();
        let texts = futures::future::join_all(parts.iter().map(|p| self.bus.text(&c.bus, p))).await;
        let mut out = String::new();
        for t in texts.into_iter().flatten() {
            if out.len() + t.len() > DOC_TEXT_MAX {
                out.push('…');
                break;
            }
            out.push_str(&t);
            out.push('\n');
        }
        Some(out.trim_end().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 11, item 6: in a fresh LibreOffice window the root pane says y=19 where its GTK
    /// parent (below the 25 px menu bar) is at y=44; LibreOffice's own controls move by 25,
    /// the GTK boxes embedded in its toolbars (and everything in them) stay.
    #[test]
    fn a_fresh_window_is_shifted_except_its_gtk_islands() {
        let shift = root_pane_shift(Rect::new(0, 44, 1280, 980), Rect::new(0, 19, 1280, 980));
        assert_eq!(shift, Some((0, 25)));
        let shift = shift.unwrap();
        let root = Rect::new(0, 19, 1280, 980);
        let toolbar = Rect::new(0, 58, 1280, 39);
        // the Bold button: moved
        let bold = Rect::new(591, 60, 33, 35);
        assert_eq!(chain_correction(&[root, toolbar, bold], shift), (0, 25));
        // the font name entry: panel "Font Name" (LibreOffice's) holds a GTK box at its true
        // place, 25 px lower, the same size
        let vcl_panel = Rect::new(267, 60, 207, 34);
        let gtk_box = Rect::new(267, 85, 207, 34);
        let entry = Rect::new(267, 85, 171, 34);
        assert_eq!(
            chain_correction(
                &[root, toolbar, vcl_panel, vcl_panel, gtk_box, entry],
                shift
            ),
            (0, 0)
        );
        // a child the size of its parent at the same place changes nothing
        assert_eq!(
            chain_correction(&[root, toolbar, toolbar, bold], shift),
            (0, 25)
        );
        // a window whose root pane sits where its parent is needs no correction (after the
        // first click), nor one whose sizes differ
        assert_eq!(root_pane_shift(root, root), None);
        assert_eq!(
            root_pane_shift(Rect::new(0, 44, 1280, 980), Rect::new(0, 19, 1280, 900)),
            None
        );
    }

    fn doc_node(path: &str, parent: &str, r: u32, name: &str) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index: 0,
            child_count: 0,
            ifaces: 0,
            name: name.into(),
            role: r,
            description: String::new(),
            states: 0,
        }
    }

    /// Issue 24, item 2: a slide's shapes are listed by their own names ("Title 1",
    /// "Content Placeholder 2"), also when they hold a paragraph (an empty placeholder's
    /// paragraph has no text to name it); the page is not, nor a shape with text and no name
    /// of its own (its paragraph is), while an unnamed shape without text still is.
    #[test]
    fn a_slides_shapes_are_listed_by_their_names() {
        let tree = AppTree::from_nodes(vec![
            doc_node("/doc", "/", role::DOCUMENT_PRESENTATION, "deck"),
            doc_node("/page", "/doc", role::PANEL, "PageShape: Slide 2"),
            doc_node("/title", "/doc", role::PANEL, "Title 1 "),
            doc_node("/title/p", "/title", role::PARAGRAPH, ""),
            doc_node("/body", "/doc", role::PANEL, "Content Placeholder 2"),
            doc_node("/body/p", "/body", role::PARAGRAPH, ""),
            doc_node("/plain", "/doc", role::PANEL, " "),
            doc_node("/plain/p", "/plain", role::PARAGRAPH, ""),
            doc_node("/pic", "/doc", role::PANEL, ""),
            doc_node("/made", "/doc", role::PANEL, "PresentationTitle "),
            doc_node("/made/p", "/made", role::PARAGRAPH, ""),
        ]);
        let listed = |p: &str| is_document_part(&tree, &tree.nodes[p]);
        assert!(listed("/title"));
        assert!(listed("/body"));
        assert!(listed("/title/p"));
        assert!(!listed("/page"));
        assert!(!listed("/plain"));
        assert!(listed("/pic"));
        // a name LibreOffice made up from the shape's kind is no name a person reads
        assert!(!listed("/made"));
    }

    fn placed(role: &str, name: &str, act: bool, rect: Rect) -> Placed {
        Placed {
            role: role.into(),
            name: name.into(),
            has_action: act,
            rect,
        }
    }

    /// Issue 11, item 5: the menu bar is listed once: LibreOffice's shadow menus (no action,
    /// the same names) are dropped; a menu of its own without an action stays.
    #[test]
    fn shadow_menus_are_dropped() {
        let items = vec![
            placed("menu", "File", true, Rect::new(0, 19, 39, 25)),
            placed("menu", "File", false, Rect::new(0, 19, 35, 19)),
            placed("menu", "Edit", false, Rect::new(35, 19, 37, 19)),
            placed("menu", "Edit", true, Rect::new(39, 19, 41, 25)),
            placed("menu", "Only", false, Rect::new(90, 19, 41, 25)),
            placed("push button", "File", false, Rect::new(4, 46, 44, 35)),
        ];
        assert_eq!(
            keep_mask(&items),
            vec![true, false, false, true, true, true]
        );
    }

    /// Issue 11, item 5: while a menu is open, the toolbar buttons and the document under it
    /// are not listed; the menu bar and what lies beside the menu are.
    #[test]
    fn controls_under_an_open_menu_are_dropped() {
        let items = vec![
            placed("menu", "File", true, Rect::new(0, 19, 39, 25)),
            placed("menu", "Edit", true, Rect::new(39, 19, 41, 25)),
            placed("menu item", "New", true, Rect::new(0, 44, 200, 24)),
            placed("menu item", "Open...", true, Rect::new(0, 68, 200, 24)),
            placed("check menu item", "Ruler", true, Rect::new(0, 92, 200, 24)),
            placed("push button", "Save", false, Rect::new(92, 46, 44, 35)),
            placed("document text", "doc", false, Rect::new(0, 122, 1207, 855)),
            placed("toggle button", "Bold", false, Rect::new(591, 85, 33, 35)),
        ];
        assert_eq!(
            keep_mask(&items),
            vec![true, true, true, true, true, false, true, true]
        );
        // the document's centre is outside the menu; a button under the menu is not
        let items = vec![
            placed("menu item", "A", true, Rect::new(100, 100, 200, 20)),
            placed("menu item", "B", true, Rect::new(100, 120, 200, 20)),
            placed("menu item", "C", true, Rect::new(100, 140, 200, 20)),
            placed("push button", "Under", false, Rect::new(150, 110, 30, 30)),
            placed("push button", "Beside", false, Rect::new(320, 110, 30, 30)),
        ];
        assert_eq!(keep_mask(&items), vec![true, true, true, false, true]);
        // a paragraph whose label (top-left) is under the menu, its centre beside it
        let items = vec![
            placed("menu item", "A", true, Rect::new(181, 44, 300, 25)),
            placed("menu item", "B", true, Rect::new(181, 69, 300, 25)),
            placed("paragraph", "P", false, Rect::new(207, 50, 793, 38)),
            placed("paragraph", "Q", false, Rect::new(207, 200, 793, 38)),
        ];
        assert_eq!(keep_mask(&items), vec![true, true, false, true]);
        // nothing open: everything stays
        let items = vec![
            placed("menu", "File", true, Rect::new(0, 19, 39, 25)),
            placed("push button", "Save", false, Rect::new(0, 21, 44, 35)),
        ];
        assert_eq!(keep_mask(&items), vec![true, true]);
    }

    #[test]
    fn paragraphs_are_named_by_their_start() {
        assert_eq!(paragraph_name("Hello  world\n", None), "Hello world");
        let long = "Paragraph 1: The quick brown fox jumps over the lazy dog, and more";
        assert_eq!(
            paragraph_name(long, None),
            "Paragraph 1: The quick brown fox jumps…"
        );
        assert_eq!(paragraph_name("Cell A", Some("A1")), "A1: Cell A");
    }
}
