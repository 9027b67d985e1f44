//! Which nodes of a window are controls ([`collect_candidates`]: visible interactive nodes in
//! tree order, each once), with what the tree tells of their names (the label text inside, the
//! label beside, the labels near a field).

use std::collections::HashSet;

use crate::a11y::bus::{AppTree, Node};
use crate::apps::office;
use crate::names::{self, clean_name, collapse_ws};
use crate::vocab::{
    iface, role, state, BUTTONS, CONTAINERS, FIELDS, INTERACTIVE, ITEMS, MENU_ITEMS,
    PAGE_CONTAINERS, SILENT, TABLES, TEXTUAL, WINDOWS,
};

/// Most labels near a field whose relations are asked when the field has none itself.
pub(super) const MAX_NEAR_LABELS: usize = 8;

pub(super) struct Candidate {
    pub(super) node: Node,
    pub(super) child_text: String,
    /// A button among its descendants (GTK4's inert wrapper around menu buttons).
    pub(super) wraps_button: bool,
    /// A combo box's chosen option (web content gives no readable text for it).
    pub(super) choice: Option<String>,
    /// A field's evidence from the tree, for its name (`None`: not a field).
    pub(super) field: Option<FieldSeed>,
    /// A table cell's table (its row is one control: noise.rs).
    pub(super) table: Option<String>,
    /// A display: its name is what it shows (KCalc's result), its description its name.
    pub(super) display: bool,
    /// Out of view in a web page: visible but not showing (Chromium and Gecko drop SHOWING
    /// from what lies outside the page's visible part): listed with its place (fields.rs).
    pub(super) beyond: bool,
    /// A libadwaita tab's close button: the tab's title, which its name ends with.
    pub(super) closes_tab: Option<String>,
    /// A libadwaita tab or its close button: its tab bar, whose box clips it.
    pub(super) tab_bar: Option<String>,
}

/// What the tree tells of a field's name (the labels that may point at it are asked by
/// `fetch_control`, and only when its own name may not be one).
pub(super) struct FieldSeed {
    pub(super) beside: Option<String>,
    pub(super) parent: Option<String>,
    /// Labels near it (path, text): the ones a `LABEL_FOR` relation may come from.
    pub(super) near_labels: Vec<(String, String)>,
    /// Its parent when that is an unnamed wrapper around it alone: a label pointing at the
    /// wrapper names it (LibreOffice's sidebar list boxes, a button inside a filler).
    pub(super) wrapper: Option<String>,
}

/// Visible interactive nodes under the frame, in tree order, with their children's label
/// text, looking at no more than `max_nodes` nodes, each once (the flag: whether it stopped
/// there; the count: nodes reached again through a stale or circular parent link, skipped).
pub(super) fn collect_candidates(
    tree: &AppTree,
    frame: &str,
    max_nodes: usize,
    open_menus: &std::collections::HashSet<String>,
) -> (Vec<Candidate>, bool, usize) {
    let uses_showing = uses_showing(tree, frame);
    let visible = |n: &Node| {
        shown(tree, n, uses_showing) || crate::apps::menus::shown_in_open_menu(open_menus, n)
    };
    let mut out = Vec::new();
    // (each node with whether it lies inside a web document)
    let mut stack: Vec<(String, bool)> = tree
        .kids(frame)
        .iter()
        .rev()
        .map(|k| (k.clone(), false))
        .collect();
    let mut seen: HashSet<String> = HashSet::from([frame.to_string()]);
    let mut repeats = 0usize;
    while let Some((p, in_page)) = stack.pop() {
        if !seen.insert(p.clone()) {
            repeats += 1;
            continue;
        }
        if seen.len() > max_nodes + 1 {
            return (out, true, repeats);
        }
        let Some(n) = tree.nodes.get(&p) else {
            continue;
        };
        let beyond = !visible(n) && uses_showing && in_page && out_of_view(n);
        if !visible(n) && !beyond {
            continue;
        }
        out.extend(candidate(tree, n, frame).map(|c| Candidate { beyond, ..c }));
        let in_page = in_page || n.role == role::DOCUMENT_WEB;
        // a menu's items are visible only while it is open; GTK3 marks them SHOWING then
        for k in tree.kids(&p).iter().rev() {
            stack.push((k.clone(), in_page));
        }
    }
    (out, false, repeats)
}

/// Most lists of combo boxes whose size is asked per window read ([`combo_lists`]).
pub(super) const MAX_COMBO_LISTS: usize = 8;

/// The lists right under a combo box that hold candidates (at most [`MAX_COMBO_LISTS`]),
/// each with the candidates' indexes. Qt marks a closed combo box's list and items showing
/// and visible and gives the list no size (Okular's zoom box: 19 items at the window's
/// corner); open, the list has its popup's size. The caller asks each list's size and
/// drops the items of one that has none.
pub(super) fn combo_lists(tree: &AppTree, candidates: &[Candidate]) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let Some(list) = tree.nodes.get(&c.node.parent) else {
            continue;
        };
        let under_combo = list.role == role::LIST
            && tree
                .nodes
                .get(&list.parent)
                .is_some_and(|b| b.role == role::COMBO_BOX);
        if !under_combo {
            continue;
        }
        if let Some((_, items)) = out.iter_mut().find(|(p, _)| *p == list.path) {
            items.push(i);
        } else if out.len() < MAX_COMBO_LISTS {
            out.push((list.path.clone(), vec![i]));
        }
    }
    out
}

/// Whether a node is drawn: visible, showing where the toolkit marks what is shown (or
/// passed through on the way to what is), not defunct.
fn shown(tree: &AppTree, n: &Node, uses_showing: bool) -> bool {
    n.has(state::VISIBLE)
        && (!uses_showing || n.has(state::SHOWING) || passes_through(tree, n))
        && !n.has(state::DEFUNCT)
}

/// A node of a web page outside its visible part: visible, not showing, not defunct (a
/// hidden one, `display: none`, is not visible).
fn out_of_view(n: &Node) -> bool {
    n.has(state::VISIBLE) && !n.has(state::SHOWING) && !n.has(state::DEFUNCT)
}

/// Shown nodes under the frame whose inside the tree does not describe (a web page's
/// `<canvas>`, an image: [`SILENT`]) and that are not controls, at most `max` of them, for
/// sight to read (docs/sight.md, "When"). Looks at no more than `max_nodes` nodes.
pub(super) fn silent_nodes<'t>(
    tree: &'t AppTree,
    frame: &str,
    max_nodes: usize,
    max: usize,
) -> Vec<&'t Node> {
    let uses_showing = uses_showing(tree, frame);
    tree.subtree(frame, max_nodes)
        .into_iter()
        .filter(|n| SILENT.contains(n.role) && n.ifaces & iface::COMPONENT != 0)
        .filter(|n| shown(tree, n, uses_showing) && candidate(tree, n, frame).is_none())
        .take(max)
        .collect()
}

/// A visible node as a candidate control, when it is one: interactive by its role, a
/// focusable node with actions that is no container, a part of an office document, a
/// libadwaita tab, or a display; never a hidden part of a document, an empty wrapper of a web
/// page's control, or GTK4's drop-down button.
fn candidate(tree: &AppTree, n: &Node, frame: &str) -> Option<Candidate> {
    let display = is_display(n, frame);
    let interactive = display
        || INTERACTIVE.contains(n.role)
        || (n.has(state::FOCUSABLE)
            && n.ifaces & iface::ACTION != 0
            && !CONTAINERS.contains(n.role))
        || office::is_document_part(tree, n)
        || crate::apps::adwaita::is_tab(n);
    if !interactive || office::is_hidden_part(tree, n) {
        return None;
    }
    let child_text = child_text(tree, n);
    let wraps_button = tree
        .subtree(&n.path, 16)
        .iter()
        .skip(1)
        .any(|d| BUTTONS.contains(d.role));
    if crate::apps::web::is_empty_wrapper(tree, n, &child_text)
        || crate::apps::gtk4::is_dropdown_button(tree, n)
    {
        return None;
    }
    let field =
        (FIELDS.contains(n.role) || is_bare_button(n, &child_text)).then(|| field_seed(tree, n));
    Some(Candidate {
        node: n.clone(),
        child_text,
        wraps_button,
        choice: crate::apps::web::combo_choice(tree, n)
            .or_else(|| crate::apps::gtk4::dropdown_choice(tree, n)),
        field,
        display,
        beyond: false,
        closes_tab: crate::apps::adwaita::closed_tab(tree, n),
        tab_bar: crate::apps::adwaita::bar_of(tree, n).map(|b| b.path.clone()),
        table: (n.role == role::TABLE_CELL)
            .then(|| table_of(tree, n))
            .flatten(),
    })
}

/// The text that may name a candidate: its labels' text, else (a text field) the label
/// beside it, else (nothing names it) its table cell's address marked by \u{1} so that
/// `fetch_control` puts it before a paragraph's text, or the name of a document part's
/// ancestor.
fn child_text(tree: &AppTree, n: &Node) -> String {
    let mut child_text = label_text(tree, &n.path);
    if child_text.is_empty() && TEXTUAL.contains(n.role) {
        child_text = sibling_label(tree, n).unwrap_or_default();
    }
    if child_text.is_empty() && n.name.trim().is_empty() && n.description.is_empty() {
        child_text = office::cell_of(tree, n)
            .map(|c| format!("\u{1}{c}"))
            .or_else(|| office::ancestor_name(tree, n, TEXTUAL.contains(n.role)))
            .unwrap_or_default();
    }
    child_text
}

/// Whether a role is an entry of a list, tree, table, tab bar or menu (what `select` picks).
pub(crate) fn is_entry(r: u32) -> bool {
    ITEMS.contains(r) || MENU_ITEMS.contains(r)
}

/// A node's name as the observation shows it.
pub(crate) fn display_name(tree: &AppTree, n: &Node) -> String {
    let child_text = label_text(tree, &n.path);
    if ITEMS.contains(crate::apps::adwaita::listed_role(n)) && !child_text.is_empty() {
        clean_name(&n.name, &child_text, &n.description)
    } else {
        clean_name(&n.name, &n.description, &child_text)
    }
}

/// Names of label descendants (four levels, at most three labels), for controls whose own
/// name is noise.
fn label_text(tree: &AppTree, path: &str) -> String {
    fn walk(tree: &AppTree, path: &str, depth: usize, parts: &mut Vec<String>) {
        if depth == 0 || parts.len() >= 3 {
            return;
        }
        for k in tree.kids(path) {
            if let Some(n) = tree.nodes.get(k) {
                if n.role == role::LABEL && !n.name.trim().is_empty() {
                    parts.push(n.name.trim().to_string());
                    if parts.len() >= 3 {
                        return;
                    }
                }
                walk(tree, k, depth - 1, parts);
            }
        }
    }
    let mut parts = Vec::new();
    walk(tree, path, 4, &mut parts);
    parts.join(" ")
}

/// A display inside a window: a frame that takes the focus, holds nothing and shows a text
/// (KCalc's result, a frame named by the number it shows). Containers are never controls
/// otherwise, so the result could not be read. (A selectable label takes the focus too: it
/// is left out, it is text to read, not a display.)
fn is_display(n: &Node, frame: &str) -> bool {
    n.role == role::FRAME
        && n.path != frame
        && n.child_count == 0
        && n.has(state::FOCUSABLE)
        && !n.name.trim().is_empty()
}

/// The table a cell belongs to: its nearest table or tree table (eight levels at most).
fn table_of(tree: &AppTree, n: &Node) -> Option<String> {
    let mut p = n.parent.as_str();
    for _ in 0..8 {
        let a = tree.nodes.get(p)?;
        if TABLES.contains(a.role) {
            return Some(a.path.clone());
        }
        p = a.parent.as_str();
    }
    None
}

/// What the tree tells of a field's name: the label beside it, the nearest named container
/// around it, and the labels near it (within two levels up) that may point at it.
fn field_seed(tree: &AppTree, n: &Node) -> FieldSeed {
    let mut near_labels = Vec::new();
    let mut top = n.parent.as_str();
    if let Some(p) = tree.nodes.get(top) {
        if tree.nodes.contains_key(&p.parent) {
            top = p.parent.as_str();
        }
    }
    for d in tree.subtree(top, 64) {
        if d.role == role::LABEL && !d.name.trim().is_empty() && d.has(state::VISIBLE) {
            near_labels.push((d.path.clone(), d.name.clone()));
            if near_labels.len() >= MAX_NEAR_LABELS {
                break;
            }
        }
    }
    FieldSeed {
        beside: sibling_label(tree, n),
        parent: parent_name(tree, n)
            // LibreOffice's font and style boxes: a panel further up names them
            .or_else(|| office::ancestor_name(tree, n, true))
            .or_else(|| crate::apps::gnumeric::edit_line_name(tree, n).map(str::to_string)),
        near_labels,
        wrapper: tree
            .nodes
            .get(&n.parent)
            .filter(|p| p.name.trim().is_empty() && only_visible_child(tree, p, n))
            .map(|p| p.path.clone()),
    }
}

/// Whether `n` is the only visible child of `p` (LibreOffice's list box wrapper also holds
/// a hidden entry and a hidden combo box).
fn only_visible_child(tree: &AppTree, p: &Node, n: &Node) -> bool {
    tree.kids(&p.path)
        .iter()
        .filter_map(|k| tree.nodes.get(k))
        .filter(|k| k.has(state::VISIBLE))
        .all(|k| k.path == n.path)
}

/// A push or toggle button with nothing that names it (no name, description or text
/// inside): the labels that point at it (or at its wrapper) are asked for its name.
fn is_bare_button(n: &Node, child_text: &str) -> bool {
    BUTTONS.contains(n.role)
        && n.name.trim().is_empty()
        && n.description.trim().is_empty()
        && child_text.trim().is_empty()
}

/// The name of the nearest named container around a field (four levels at most, inside its
/// window; a combo box's name is its chosen option, not a name; a tool bar's or menu bar's
/// name is the bar's, shown nowhere on it: Okular's and KolourPaint's zoom boxes were
/// "Main Toolbar").
fn parent_name(tree: &AppTree, n: &Node) -> Option<String> {
    let mut p = n.parent.as_str();
    for _ in 0..4 {
        let a = tree.nodes.get(p)?;
        if WINDOWS.contains(a.role) || a.role == role::APPLICATION || office::is_document(a.role) {
            return None;
        }
        let name = collapse_ws(&a.name);
        let names_nothing = matches!(a.role, role::COMBO_BOX | role::TOOL_BAR | role::MENU_BAR);
        if !names_nothing && !names::is_noise(&name) {
            return Some(name);
        }
        p = a.parent.as_str();
    }
    None
}

/// The label next to an unnamed entry ("Name:" beside a file name field), without the colon
/// and mnemonic underscores: the nearest label among its siblings.
fn sibling_label(tree: &AppTree, n: &Node) -> Option<String> {
    tree.kids(&n.parent)
        .iter()
        .filter_map(|p| tree.nodes.get(p))
        .filter(|s| s.role == role::LABEL && !s.name.trim().is_empty())
        .min_by_key(|s| (s.index - n.index).abs())
        .map(|s| {
            s.name
                .trim()
                .trim_end_matches(':')
                .replace('_', "")
                .trim()
                .to_string()
        })
}

/// How far up a node's parents [`passes_through`] looks for a web document.
const PAGE_DEPTH: usize = 256;

/// Whether a VISIBLE node that is not SHOWING is gone through anyway: a plain container
/// inside a web document. Gecko reports some groups of its settings pages ("Tabs",
/// "Interaction") as not showing while the controls in them are; the controls are then
/// judged one by one. Outside web pages (a GTK notebook's hidden page) nothing changes.
pub(super) fn passes_through(tree: &AppTree, n: &Node) -> bool {
    if n.has(state::SHOWING) || !n.has(state::VISIBLE) || !PAGE_CONTAINERS.contains(n.role) {
        return false;
    }
    let mut parent = n.parent.as_str();
    for _ in 0..PAGE_DEPTH {
        let Some(p) = tree.nodes.get(parent) else {
            return false;
        };
        if p.role == role::DOCUMENT_WEB {
            return true;
        }
        if p.parent == p.path {
            return false;
        }
        parent = p.parent.as_str();
    }
    false
}

/// Whether the toolkit sets SHOWING on descendants (GTK3 does, GTK4 only on the window).
pub(super) fn uses_showing(tree: &AppTree, frame: &str) -> bool {
    tree.subtree(frame, 400)
        .iter()
        .skip(1)
        .any(|n| n.has(state::SHOWING))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::fixtures::{at, chain};
    use crate::vocab::ROOT_PATH;

    /// Issue 46: the items right under a combo box's list are gathered by list, to be asked
    /// its size (Okular's zoom box); items of a list elsewhere, and the combo box's entry,
    /// are not.
    #[test]
    fn a_combo_boxs_list_items_are_gathered_by_list() {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 3;
        let tree = AppTree::from_nodes(vec![
            f,
            at("/z", "/f", 0, role::COMBO_BOX),
            at("/z/l", "/z", 0, role::LIST),
            at("/z/l/1", "/z/l", 0, role::LIST_ITEM),
            at("/z/l/2", "/z/l", 1, role::LIST_ITEM),
            at("/z/e", "/z", 1, role::TEXT),
            at("/l", "/f", 1, role::LIST),
            at("/l/1", "/l", 0, role::LIST_ITEM),
        ]);
        let (found, _, _) = collect_candidates(&tree, "/f", 100, &HashSet::new());
        let lists = combo_lists(&tree, &found);
        assert_eq!(lists.len(), 1);
        let (list, items) = &lists[0];
        assert_eq!(list, "/z/l");
        let paths: Vec<&str> = items.iter().map(|&i| found[i].node.path.as_str()).collect();
        assert_eq!(paths, ["/z/l/1", "/z/l/2"]);
    }

    /// Issue 23, item 2: a circle of parent links under the window (a stale answer) is
    /// followed once: every node is looked at once, the window is not "more than N nodes".
    #[test]
    fn candidates_meet_each_node_once_in_a_circle() {
        let mut tree = chain();
        // /c lists /a as its child: a circle /a -> /b -> /c -> /a
        tree.children
            .entry("/c".into())
            .or_default()
            .push("/a".into());
        let (found, cut, repeats) = collect_candidates(&tree, "/f", 5000, &HashSet::new());
        assert!(!cut, "a circle is not an endless tree");
        let paths: Vec<&str> = found.iter().map(|c| c.node.path.as_str()).collect();
        assert_eq!(paths, ["/b", "/c"]);
        assert_eq!(repeats, 1);
    }
}
