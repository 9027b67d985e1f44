//! Web content (Chromium and other browsers with renderer accessibility): what their trees need
//! beyond the desktop toolkits'. An HTML `<select>` is a combo box whose text is an object
//! replacement character and whose options sit in a popup menu below it; every `<li>` is an
//! unnamed list item wrapped around the link the model actually wants.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ufo_core::{Place, Rect};

use crate::a11y::bus::A11yBus;
use crate::a11y::bus::{AppTree, Node};
use crate::controls::CtlInfo;
use crate::vocab::role;
use crate::vocab::{iface, state, WEB_DOCUMENTS};
use crate::LinuxConfig;
use crate::LinuxError;

/// How deep below a combo box its options are looked for.
const OPTIONS_DEPTH_NODES: usize = 256;

/// The arrow keys (keysyms) that move a closed `<select>` from the option at `chosen` (none:
/// from the top, with Home) to the one at `target`.
pub(crate) fn arrow_keys(chosen: Option<usize>, target: usize) -> Vec<u32> {
    const HOME: u32 = 0xff50;
    const UP: u32 = 0xff52;
    const DOWN: u32 = 0xff54;
    match chosen {
        None => std::iter::once(HOME)
            .chain(std::iter::repeat_n(DOWN, target))
            .collect(),
        Some(from) if target >= from => vec![DOWN; target - from],
        Some(from) => vec![UP; from - target],
    }
}

/// Whether a text is only object replacement characters (embedded objects) and blanks: the
/// "value" Chromium gives a `<select>` or a page.
pub(crate) fn is_placeholder(text: &str) -> bool {
    text.chars().all(|c| c == '\u{fffc}' || c.is_whitespace())
}

/// The chosen option's name of a combo box, from its subtree (the selected menu or list item).
pub(crate) fn combo_choice(tree: &AppTree, n: &Node) -> Option<String> {
    if n.role != role::COMBO_BOX {
        return None;
    }
    tree.subtree(&n.path, OPTIONS_DEPTH_NODES)
        .into_iter()
        .skip(1)
        .find(|d| matches!(d.role, role::MENU_ITEM | role::LIST_ITEM) && d.has(state::SELECTED))
        .map(|d| d.name.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// An unnamed list item that only wraps a control (Chromium's `<li>` around a link): listing
/// it beside the link doubles the count and gives the model a control it cannot name.
pub(crate) fn is_empty_wrapper(tree: &AppTree, n: &Node, child_text: &str) -> bool {
    n.role == role::LIST_ITEM
        && n.name.trim().is_empty()
        && child_text.trim().is_empty()
        && tree.subtree(&n.path, 32).into_iter().skip(1).any(|d| {
            matches!(
                d.role,
                role::LINK
                    | role::PUSH_BUTTON
                    | role::CHECK_BOX
                    | role::RADIO_BUTTON
                    | role::ENTRY
                    | role::COMBO_BOX
            )
        })
}

/// The place of a page's control outside the page's visible part (`r`, `win`: its box and
/// the window's), when it lies within one window height (width) of the window: a control
/// further away is left to a scroll, so that a long page lists about two screens of it. A
/// control whose box is inside the window while the page says it is not shown lies under
/// the browser's own bars, or at the page's edge: above or below by the half it is in.
pub(crate) fn place_out_of_view(r: Rect, win: Rect) -> Option<Place> {
    if r.w < 2 || r.h < 2 {
        return None;
    }
    let (w, h) = (win.w as i32, win.h as i32);
    let (cx, cy) = (r.x + r.w as i32 / 2, r.y + r.h as i32 / 2);
    let (left, top, right, bottom) = (win.x, win.y, win.x + w, win.y + h);
    if cy >= bottom + h || cy < top - h || cx >= right + w || cx < left - w {
        return None;
    }
    Some(if cy >= bottom {
        Place::Below
    } else if cy < top {
        Place::Above
    } else if cx >= right || cx < left {
        Place::Aside
    } else if cy < top + h / 2 {
        Place::Above
    } else {
        Place::Below
    })
}

/// Pause between the wheel notches of a scroll on a web page.
pub(crate) const NOTCH_PAUSE: Duration = Duration::from_millis(30);

/// Most characters `read_text` returns for a page.
pub(crate) const PAGE_TEXT_MAX: usize = 20_000;
/// Most nodes of a page read for its text.
const PAGE_NODES_MAX: usize = 4_000;
/// How long reading a page's text may take.
const PAGE_TEXT_BUDGET: Duration = Duration::from_secs(3);

/// The text of a node whose own text holds an object replacement character for each embedded
/// child: each one replaced by that child's text, depth first, up to `max` characters.
pub(crate) fn assemble(
    tree: &AppTree,
    texts: &HashMap<String, String>,
    path: &str,
    out: &mut String,
    max: usize,
    depth: usize,
) {
    if out.len() >= max || depth > 64 {
        return;
    }
    // static text children are already part of the parent's text; the others are embedded
    let kids: Vec<&String> = tree
        .kids(path)
        .iter()
        .filter(|k| tree.nodes.get(*k).is_none_or(|n| n.role != role::STATIC))
        .collect();
    match texts.get(path) {
        Some(t) => {
            let mut k = 0;
            for ch in t.chars() {
                if out.len() >= max {
                    return;
                }
                if ch == '\u{fffc}' {
                    if let Some(&kid) = kids.get(k) {
                        let before = out.len();
                        assemble(tree, texts, kid, out, max, depth + 1);
                        if out.len() > before && is_block(tree, kid) && !out.ends_with('\n') {
                            out.push('\n');
                        }
                    }
                    k += 1;
                } else {
                    out.push(ch);
                }
            }
        }
        None => {
            for kid in kids {
                assemble(tree, texts, kid, out, max, depth + 1);
            }
        }
    }
}

/// Paragraph-like nodes end with a line break in the assembled text.
fn is_block(tree: &AppTree, path: &str) -> bool {
    // paragraph, heading, section, list item, list, form, table row
    tree.nodes.get(path).is_some_and(|n| {
        matches!(
            n.role,
            role::PARAGRAPH
                | role::HEADING
                | role::SECTION
                | role::LIST_ITEM
                | role::LIST
                | role::FORM
                | role::TABLE_ROW
        )
    })
}

/// The text of a web page (or any document whose text is made of embedded objects) from
/// its tree walked thoroughly, bounded in characters, nodes and time.
pub(crate) async fn page_text(
    a11y: &A11yBus,
    c: &CtlInfo,
    tree: &AppTree,
) -> Result<String, LinuxError> {
    let nodes: Vec<String> = tree
        .subtree(&c.path, PAGE_NODES_MAX)
        .into_iter()
        .filter(|n| n.ifaces & iface::TEXT != 0)
        .map(|n| n.path.clone())
        .collect();
    let fetch = futures::future::join_all(
        nodes
            .iter()
            .map(|p| async move { (p.clone(), a11y.text(&c.bus, p).await.ok()) }),
    );
    let fetched = tokio::time::timeout(PAGE_TEXT_BUDGET, fetch)
        .await
        .map_err(|_| LinuxError::Timeout {
            what: "reading the page's text".into(),
            ms: PAGE_TEXT_BUDGET.as_millis() as u64,
        })?;
    let texts: HashMap<String, String> = fetched
        .into_iter()
        .filter_map(|(p, t)| t.map(|t| (p, t)))
        .collect();
    let mut out = String::new();
    assemble(tree, &texts, &c.path, &mut out, PAGE_TEXT_MAX, 0);
    if out.len() >= PAGE_TEXT_MAX {
        let mut end = PAGE_TEXT_MAX;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push_str("… (the page goes on; scroll and read again)");
    }
    Ok(out)
}

/// Where the first children of a document are drawn (a sample of up to 8).
async fn document_layout(a11y: &A11yBus, c: &CtlInfo) -> Option<Vec<(i32, i32, i32, i32)>> {
    let kids = a11y.children(&c.bus, &c.path).await.ok()?;
    if kids.is_empty() {
        return None;
    }
    let sample: Vec<&String> = kids.iter().take(8).collect();
    let ext = futures::future::join_all(
        sample
            .iter()
            .map(|p| async move { a11y.extents(&c.bus, p).await.ok() }),
    )
    .await;
    ext.into_iter().collect()
}

/// After a scroll of a web document, wait (bounded) until its content is laid out at the
/// new place: the children's extents changed from `before` and stayed the same for two
/// polls. Chromium's tree shows the old positions for ~0.1 s, then no content, then the new
/// one.
pub(crate) async fn wait_scrolled(
    a11y: &A11yBus,
    c: &CtlInfo,
    before: Option<Vec<(i32, i32, i32, i32)>>,
) {
    const BOUND: Duration = Duration::from_millis(2500);
    const POLL: Duration = Duration::from_millis(100);
    // unchanged for this many polls in a row: a busy renderer applies the wheel notches
    // in bursts, with pauses of about one poll between them
    const STABLE: usize = 2;
    let start = Instant::now();
    let mut last: Option<Vec<(i32, i32, i32, i32)>> = None;
    let mut same = 0;
    while start.elapsed() < BOUND {
        tokio::time::sleep(POLL).await;
        let now = document_layout(a11y, c).await;
        if now.is_some() && now != before && now == last {
            same += 1;
            if same >= STABLE {
                return;
            }
        } else {
            same = 0;
        }
        last = now;
    }
}

/// Sample a document's layout before a scroll (`None` for other controls).
pub(crate) async fn layout_before_scroll(
    a11y: &A11yBus,
    c: &CtlInfo,
) -> Option<Option<Vec<(i32, i32, i32, i32)>>> {
    if !WEB_DOCUMENTS.contains(c.seen.role) {
        return None;
    }
    Some(document_layout(a11y, c).await)
}

/// Close a combo box's popup that choosing an option left open (Chromium keeps a
/// `<select>`'s list open after its option's action): its open action toggles it.
pub(crate) async fn close_popup(a11y: &A11yBus, c: &CtlInfo) {
    if c.seen.role != role::COMBO_BOX || c.states & state::EXPANDED != 0 {
        return;
    }
    let states = a11y.live_states(&c.bus, &c.path).await;
    if states.is_none_or(|s| s & state::EXPANDED == 0) {
        return;
    }
    if let Some(i) = c
        .actions
        .iter()
        .position(|a| a.eq_ignore_ascii_case("open"))
    {
        let _: Result<bool, _> = a11y
            .call(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Action",
                "DoAction",
                &(i as i32,),
            )
            .await;
    }
}

/// Whether choosing an entry of a combo box would be choosing what is chosen already (the
/// entry, read live, is SELECTED): then nothing is done. Blink takes the choice of its
/// `<select>`'s chosen option as "unselect" and leaves the box with no option at all (the
/// form then sends no value for it).
pub(crate) fn chosen_already(control_role: u32, entry_states: Option<u64>) -> bool {
    control_role == role::COMBO_BOX && entry_states.is_some_and(|s| s & state::SELECTED != 0)
}

/// Whether an option became selected within the settle time (a `<select>`'s option keeps
/// its old state when the action only highlighted it).
pub(crate) async fn wait_selected(
    a11y: &A11yBus,
    config: &LinuxConfig,
    bus: &str,
    path: &str,
) -> bool {
    let start = Instant::now();
    loop {
        let states = a11y.live_states(bus, path).await;
        if states.is_some_and(|s| s & state::SELECTED != 0) {
            return true;
        }
        if start.elapsed() >= config.settle_time {
            return false;
        }
        tokio::time::sleep(config.settle_poll * 2).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, parent: &str, index: i32, role: u32, name: &str, states: u64) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index,
            child_count: 0,
            ifaces: 0,
            name: name.into(),
            role,
            description: String::new(),
            states,
        }
    }

    /// Issue 46: Chromium's appearance settings in a window at 10,10 1050×1004: "Font
    /// size" at y 1046 lies below, a control two screens down is left to a scroll, one
    /// scrolled under the toolbar lies above.
    #[test]
    fn a_control_out_of_view_is_placed_within_a_screen_of_the_window() {
        let win = Rect::new(10, 10, 1050, 1004);
        let at = |x, y| Rect::new(x, y, 201, 37);
        assert_eq!(place_out_of_view(at(767, 1046), win), Some(Place::Below));
        assert_eq!(place_out_of_view(at(767, 1990), win), Some(Place::Below));
        assert_eq!(place_out_of_view(at(767, 2100), win), None);
        assert_eq!(place_out_of_view(at(767, -400), win), Some(Place::Above));
        assert_eq!(place_out_of_view(at(767, -1100), win), None);
        assert_eq!(place_out_of_view(at(767, 100), win), Some(Place::Above));
        assert_eq!(place_out_of_view(at(767, 1000), win), Some(Place::Below));
        assert_eq!(place_out_of_view(at(1200, 400), win), Some(Place::Aside));
        assert_eq!(place_out_of_view(Rect::new(767, 1046, 0, 0), win), None);
    }

    #[test]
    fn arrows_go_from_the_chosen_option_to_the_wanted_one() {
        assert_eq!(arrow_keys(Some(0), 1), vec![0xff54]);
        assert_eq!(arrow_keys(Some(2), 0), vec![0xff52, 0xff52]);
        assert_eq!(arrow_keys(Some(1), 1), Vec::<u32>::new());
        assert_eq!(arrow_keys(None, 2), vec![0xff50, 0xff54, 0xff54]);
    }

    #[test]
    fn a_page_text_replaces_each_embedded_object_by_its_text() {
        let tree = AppTree::from_nodes(vec![
            node("/p1", "/doc", 0, 73, "", 0),
            node("/a", "/p1", 0, role::LINK, "x", 0),
            node("/p2", "/doc", 1, 73, "", 0),
            node("/s", "/p2", 0, role::STATIC, "End.", 0),
        ]);
        let texts: HashMap<String, String> = [
            ("/doc", "\u{fffc}\u{fffc}"),
            ("/p1", "See \u{fffc} here."),
            ("/a", "the link"),
            ("/p2", "End."),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let mut out = String::new();
        assemble(&tree, &texts, "/doc", &mut out, 1000, 0);
        assert_eq!(out, "See the link here.\nEnd.\n");
        let mut short = String::new();
        assemble(&tree, &texts, "/doc", &mut short, 5, 0);
        assert!(short.len() <= 6, "{short}");
    }

    #[test]
    fn a_select_is_valued_by_its_chosen_option() {
        let tree = AppTree::from_nodes(vec![
            node("/c", "/doc", 0, role::COMBO_BOX, "Colour", 0),
            node("/m", "/c", 0, 33, "", 0),
            node("/r", "/m", 0, role::MENU_ITEM, "Red", 0),
            node("/g", "/m", 1, role::MENU_ITEM, "Green", state::SELECTED),
        ]);
        let c = tree.nodes.get("/c").cloned().unwrap();
        assert_eq!(combo_choice(&tree, &c).as_deref(), Some("Green"));
        assert!(is_placeholder("\u{fffc}"));
        assert!(is_placeholder(""));
        assert!(!is_placeholder("Red"));
    }

    #[test]
    fn an_unnamed_list_item_around_a_link_is_dropped_a_named_one_is_kept() {
        let tree = AppTree::from_nodes(vec![
            node("/li", "/ul", 0, role::LIST_ITEM, "", 0),
            node("/a", "/li", 0, role::LINK, "Home", 0),
            node("/li2", "/ul", 1, role::LIST_ITEM, "Plain", 0),
            node("/t", "/li2", 0, 61, "", 0),
            node("/li3", "/ul", 2, role::LIST_ITEM, "", 0),
        ]);
        let get = |p: &str| tree.nodes.get(p).cloned().unwrap();
        assert!(is_empty_wrapper(&tree, &get("/li"), ""));
        assert!(!is_empty_wrapper(&tree, &get("/li2"), ""));
        // nothing inside to click: keep it (it may be the only handle on the row)
        assert!(!is_empty_wrapper(&tree, &get("/li3"), ""));
    }

    /// Choosing a `<select>`'s chosen option again is left undone (Blink unselected it and
    /// the form sent no plan); an option not chosen, an unknown state, or a list's entry
    /// are chosen as before.
    #[test]
    fn the_chosen_option_is_not_chosen_again() {
        assert!(chosen_already(role::COMBO_BOX, Some(state::SELECTED)));
        assert!(!chosen_already(role::COMBO_BOX, Some(0)));
        assert!(!chosen_already(role::COMBO_BOX, None));
        assert!(!chosen_already(role::LIST_BOX, Some(state::SELECTED)));
    }
}
