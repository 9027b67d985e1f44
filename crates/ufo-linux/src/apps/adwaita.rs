//! libadwaita's tab bar (`AdwTabBar`; libadwaita 1.2, Debian 12's, as gnome-text-editor shows
//! it). It exports no page tab: each tab is a filler named by its type name (`AdwTab`),
//! with no action and not focusable, its title a label inside and its close button beside the
//! label. Left so, the observation listed every tab's "Close Tab" button and no tab, and a
//! model could switch tabs only by keys or by the screenshot. A tab is listed as the page tab
//! it is, named by its title, and clicked at its centre (the title, not the close button).
//! Its close button, which every tab names "Close Tab", is named after its tab ("Close Tab
//! notes.txt"), and clicked through its AT-SPI action: on a tab not in front it is shown only
//! while the pointer rests there, and an XTEST click that moves there at once picks the tab.
//! With one document the bar is hidden (no height) while its tabs keep their boxes, over the
//! header bar: what lies outside the bar's box is not listed. The tree does not say which tab
//! is the current one (no SELECTED state).

use crate::a11y::bus::{AppTree, Node};
use crate::names::is_noise;
use crate::vocab::{role, ANY_BUTTON};

/// How many nodes below a tab are looked at for its title.
const TAB_NODES: usize = 16;

/// The type name libadwaita's tab exports as its name.
const TAB: &str = "AdwTab";

/// The type name of the bar around the tabs.
const BAR: &str = "AdwTabBar";

/// How many levels above a tab its bar is looked for (libadwaita 1.2: five).
const BAR_LEVELS: usize = 8;

/// Whether `n` is a libadwaita tab.
pub(crate) fn is_tab(n: &Node) -> bool {
    n.role == role::FILLER && n.name == TAB
}

/// The role `n` is listed with: a libadwaita tab's is a page tab, every other node's its own.
/// (What is checked before an action stays the node's own role: `act::verify`.)
pub(crate) fn listed_role(n: &Node) -> u32 {
    if is_tab(n) {
        role::PAGE_TAB
    } else {
        n.role
    }
}

/// The title of the libadwaita tab whose close button `n` is (a button right inside the tab);
/// `None` for any other node, or a tab with no title shown.
pub(crate) fn closed_tab(tree: &AppTree, n: &Node) -> Option<String> {
    if !ANY_BUTTON.contains(n.role) {
        return None;
    }
    let tab = tree.nodes.get(&n.parent).filter(|p| is_tab(p))?;
    title(tree, tab)
}

/// The tab bar around `n`, when `n` is a tab or a tab's close button: the box that clips
/// what is shown of it.
pub(crate) fn bar_of<'t>(tree: &'t AppTree, n: &Node) -> Option<&'t Node> {
    let tab = if is_tab(n) {
        n
    } else {
        tree.nodes
            .get(&n.parent)
            .filter(|p| is_tab(p) && ANY_BUTTON.contains(n.role))?
    };
    let mut at = tree.nodes.get(&tab.parent)?;
    for _ in 0..BAR_LEVELS {
        if at.role == role::FILLER && at.name == BAR {
            return Some(at);
        }
        at = tree.nodes.get(&at.parent)?;
    }
    None
}

/// A tab's title: the first label below it that says something.
fn title(tree: &AppTree, tab: &Node) -> Option<String> {
    tree.subtree(&tab.path, TAB_NODES)
        .into_iter()
        .filter(|d| d.role == role::LABEL)
        .map(|d| crate::names::collapse_ws(&d.name))
        .find(|t| !is_noise(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a11y::node::named;

    fn with_role(name: &str, r: u32) -> Node {
        Node {
            role: r,
            ..named("/t", name)
        }
    }

    #[test]
    fn an_adwaita_tab_is_listed_as_a_page_tab() {
        let tab = with_role("AdwTab", role::FILLER);
        assert!(is_tab(&tab));
        assert_eq!(listed_role(&tab), role::PAGE_TAB);
    }

    /// A tab as libadwaita 1.2 exports it: `AdwTab` > `AdwFadingLabel` > label, and the close
    /// button beside the label.
    fn tab_tree(title: &str) -> AppTree {
        let node = |path: &str, parent: &str, name: &str, r: u32| Node {
            path: path.into(),
            parent: parent.into(),
            role: r,
            ..named(path, name)
        };
        AppTree::from_nodes(vec![
            node("/bar", "/view", "AdwTabBar", role::FILLER),
            node("/scroll", "/bar", "", role::SCROLL_PANE),
            node("/box", "/scroll", "AdwTabBox", role::FILLER),
            node("/tab", "/box", "AdwTab", role::FILLER),
            node("/fade", "/tab", "AdwFadingLabel", role::FILLER),
            node("/label", "/fade", title, role::LABEL),
            node("/close", "/tab", "GtkImage", role::PUSH_BUTTON),
            node("/other", "/box", "GtkImage", role::PUSH_BUTTON),
        ])
    }

    #[test]
    fn a_tabs_close_button_is_named_after_its_tab() {
        let tree = tab_tree("notes.txt");
        let close = &tree.nodes["/close"];
        assert_eq!(closed_tab(&tree, close).as_deref(), Some("notes.txt"));
        // a button outside a tab, and the tab's label, close no tab
        assert_eq!(closed_tab(&tree, &tree.nodes["/other"]), None);
        assert_eq!(closed_tab(&tree, &tree.nodes["/label"]), None);
        // a tab whose label shows no title gives none
        let untitled = tab_tree("  ");
        assert_eq!(closed_tab(&untitled, &untitled.nodes["/close"]), None);
    }

    #[test]
    fn a_tab_and_its_close_button_are_clipped_by_their_bar() {
        let tree = tab_tree("notes.txt");
        let bar = |p: &str| bar_of(&tree, &tree.nodes[p]).map(|b| b.path.clone());
        assert_eq!(bar("/tab").as_deref(), Some("/bar"));
        assert_eq!(bar("/close").as_deref(), Some("/bar"));
        // a button beside the tabs, the tab's label, the bar itself: no tab's
        for p in ["/other", "/label", "/bar", "/box"] {
            assert_eq!(bar(p), None, "{p}");
        }
    }

    #[test]
    fn other_fillers_and_named_tabs_keep_their_role() {
        for (name, r) in [
            ("AdwTabBox", role::FILLER),
            ("AdwGizmo", role::FILLER),
            ("AdwTab", role::PANEL),
            ("f1.txt", role::PAGE_TAB),
            ("Close Tab", role::PUSH_BUTTON),
        ] {
            let n = with_role(name, r);
            assert!(!is_tab(&n), "{name} is no libadwaita tab");
            assert_eq!(listed_role(&n), r, "{name} keeps its role");
        }
    }
}
