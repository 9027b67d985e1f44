//! GTK4's drop-down (`GtkDropDown`): a combo box named by its type name around a toggle
//! button, whose stack holds two pages: an empty page with a "(None)" label, shown only when
//! nothing is chosen, and the chosen item's page (a `GtkListItemWidget` with the item's
//! labels). GTK does not mark the hidden page as not SHOWING, so the "(None)" label would
//! name the button; the combo box is the control, its chosen item's labels its value.

use crate::a11y::bus::{AppTree, Node};
use crate::names::is_noise;
use crate::vocab::role;

/// How many nodes below a drop-down are looked at.
const DROPDOWN_NODES: usize = 64;

/// The type name GTK4 gives the chosen item's widget.
const ITEM_WIDGET: &str = "GtkListItemWidget";

/// The chosen option of a GTK4 drop-down: the labels of its chosen item's page (never the
/// empty page's "(None)"); `None` when nothing readable is chosen.
pub(crate) fn dropdown_choice(tree: &AppTree, n: &Node) -> Option<String> {
    if n.role != role::COMBO_BOX {
        return None;
    }
    let below = tree.subtree(&n.path, DROPDOWN_NODES);
    let item = below.iter().find(|d| d.name == ITEM_WIDGET)?;
    let text: Vec<String> = tree
        .subtree(&item.path, DROPDOWN_NODES)
        .iter()
        .filter(|d| d.role == role::LABEL && !is_noise(d.name.trim()))
        .map(|d| d.name.trim().to_string())
        .collect();
    Some(text.join(" ")).filter(|t| !t.is_empty())
}

/// Whether `n` is the toggle button inside a GTK4 drop-down: the drop-down itself is the
/// control (listed with its name and chosen option); the button would be a second control
/// named by the hidden "(None)" label.
pub(crate) fn is_dropdown_button(tree: &AppTree, n: &Node) -> bool {
    crate::vocab::BUTTONS.contains(n.role)
        && is_noise(n.name.trim())
        && tree
            .nodes
            .get(&n.parent)
            .is_some_and(|p| p.role == role::COMBO_BOX)
}

/// The button inside a GTK4 drop-down (`n`, a combo box) that opens its list: its child
/// button named by its type name. `None` when `n` is no GTK4 drop-down.
pub(crate) fn dropdown_button<'t>(tree: &'t AppTree, n: &Node) -> Option<&'t Node> {
    if n.role != role::COMBO_BOX {
        return None;
    }
    tree.kids(&n.path)
        .iter()
        .filter_map(|k| tree.nodes.get(k))
        .find(|k| is_dropdown_button(tree, k))
}

/// The type name of a popover's content: the popover is its parent (the cache may name the
/// popover itself nothing, while a live read names it "GtkPopover").
const POPOVER_CONTENT: &str = "GtkPopoverContent";

/// The popover whose content `n` is (GTK 4: a drop-down's list, a menu button's menu).
pub(crate) fn popover_of<'t>(tree: &'t AppTree, n: &Node) -> Option<&'t Node> {
    (n.name.trim() == POPOVER_CONTENT)
        .then(|| tree.nodes.get(&n.parent))
        .flatten()
}

/// The type name of a drop-down's open list.
const LIST_WIDGET: &str = "GtkListView";

/// The open list of a drop-down, in a tree of its popup (read live: the application's cache
/// keeps a closed popup's items).
pub(crate) fn popup_list<'t>(tree: &'t AppTree, popup: &str) -> Option<&'t Node> {
    tree.subtree(popup, DROPDOWN_NODES)
        .into_iter()
        .find(|d| d.role == role::LIST && d.name == LIST_WIDGET)
}

/// The items of an open drop-down list, in order: (path, text, selected). GTK4 names the
/// items nothing; their labels hold the text.
pub(crate) fn popup_items(tree: &AppTree, list: &Node) -> Vec<(String, String, bool)> {
    tree.kids(&list.path)
        .iter()
        .filter_map(|k| tree.nodes.get(k))
        .filter(|k| k.role == role::LIST_ITEM)
        .map(|k| {
            let text: Vec<String> = tree
                .subtree(&k.path, DROPDOWN_NODES)
                .iter()
                .filter(|d| d.role == role::LABEL && !is_noise(d.name.trim()))
                .map(|d| d.name.trim().to_string())
                .collect();
            (
                k.path.clone(),
                text.join(" "),
                k.has(crate::vocab::state::SELECTED),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, parent: &str, role: u32, name: &str) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index: 0,
            child_count: 0,
            ifaces: 0,
            name: name.into(),
            role,
            description: String::new(),
            states: 0,
        }
    }

    /// gnome-text-editor's "Line Ending" drop-down as GTK 4 shows it.
    fn dropdown(chosen: &str) -> AppTree {
        AppTree::from_nodes(vec![
            node("/c", "/w", role::COMBO_BOX, "GtkDropDown"),
            node("/b", "/c", role::PUSH_BUTTON, "GtkToggleButton"),
            node("/empty", "/b", role::PANEL, "GtkStackPage"),
            node("/none", "/empty", role::LABEL, "(None)"),
            node("/page", "/b", role::PANEL, "GtkStackPage"),
            node("/item", "/page", role::FILLER, ITEM_WIDGET),
            node("/l", "/item", role::LABEL, chosen),
        ])
    }

    #[test]
    fn a_dropdowns_choice_is_its_item_never_the_empty_pages_label() {
        let t = dropdown("Unix/Linux (LF)");
        let combo = t.nodes.get("/c").unwrap();
        assert_eq!(
            dropdown_choice(&t, combo).as_deref(),
            Some("Unix/Linux (LF)")
        );
        let t = dropdown("GtkLabel");
        assert_eq!(dropdown_choice(&t, t.nodes.get("/c").unwrap()), None);
    }

    #[test]
    fn the_dropdowns_inner_button_is_not_a_control_but_a_named_one_is() {
        let t = dropdown("x");
        assert!(is_dropdown_button(&t, t.nodes.get("/b").unwrap()));
        let t = AppTree::from_nodes(vec![
            node("/c", "/w", role::COMBO_BOX, "Zoom"),
            node("/b", "/c", role::PUSH_BUTTON, "Open"),
        ]);
        assert!(!is_dropdown_button(&t, t.nodes.get("/b").unwrap()));
    }

    /// The open list of "Line Ending": its items read by their labels, the highlighted one
    /// marked; the button that opens it found from the drop-down.
    #[test]
    fn an_open_dropdowns_items_are_read_by_their_labels() {
        let mut nodes = vec![
            node("/c", "/w", role::COMBO_BOX, "GtkDropDown"),
            node("/b", "/c", role::PUSH_BUTTON, "GtkToggleButton"),
            node("/pop", "/c", role::FILLER, "GtkPopover"),
            node("/list", "/pop", role::LIST, LIST_WIDGET),
        ];
        for (i, text) in ["Unix/Linux (LF)", "Mac OS Classic (CR)", "Windows (CR+LF)"]
            .iter()
            .enumerate()
        {
            let mut item = node(&format!("/i{i}"), "/list", role::LIST_ITEM, "");
            if i == 0 {
                item.states = crate::vocab::state::SELECTED;
            }
            nodes.push(item);
            nodes.push(node(&format!("/p{i}"), &format!("/i{i}"), role::PANEL, ""));
            nodes.push(node(
                &format!("/l{i}"),
                &format!("/p{i}"),
                role::LABEL,
                text,
            ));
            nodes.push(node(
                &format!("/g{i}"),
                &format!("/p{i}"),
                role::LABEL,
                "GtkLabel",
            ));
        }
        let t = AppTree::from_nodes(nodes);
        let combo = t.nodes.get("/c").unwrap();
        assert_eq!(
            dropdown_button(&t, combo).map(|b| b.path.as_str()),
            Some("/b")
        );
        let list = popup_list(&t, "/pop").unwrap();
        let items = popup_items(&t, list);
        let texts: Vec<(&str, bool)> = items.iter().map(|(_, t, s)| (t.as_str(), *s)).collect();
        assert_eq!(
            texts,
            [
                ("Unix/Linux (LF)", true),
                ("Mac OS Classic (CR)", false),
                ("Windows (CR+LF)", false)
            ]
        );
        // a combo box of another toolkit has no drop-down button
        let t = AppTree::from_nodes(vec![node("/c", "/w", role::COMBO_BOX, "Zoom")]);
        assert!(dropdown_button(&t, t.nodes.get("/c").unwrap()).is_none());
    }

    #[test]
    fn a_popover_is_the_parent_of_its_content() {
        let t = AppTree::from_nodes(vec![
            node("/c", "/w", role::COMBO_BOX, "GtkDropDown"),
            node("/pop", "/c", role::FILLER, ""),
            node("/content", "/pop", role::FILLER, POPOVER_CONTENT),
            node("/other", "/c", role::FILLER, "GtkBuiltinIcon"),
        ]);
        let content = t.nodes.get("/content").unwrap();
        assert_eq!(
            popover_of(&t, content).map(|p| p.path.as_str()),
            Some("/pop")
        );
        assert!(popover_of(&t, t.nodes.get("/other").unwrap()).is_none());
    }
}
