//! libadwaita's tab bar (`AdwTabBar`; libadwaita 1.2, Debian 12's, as gnome-text-editor shows
//! it). It exports no page tab: each tab is a filler named by its type name (`AdwTab`),
//! with no action and not focusable, its title a label inside and its close button beside the
//! label. Left so, the observation listed every tab's "Close Tab" button and no tab, and a
//! model could switch tabs only by keys or by the screenshot. A tab is listed as the page tab
//! it is, named by its title, and clicked at its centre (the title, not the close button).
//! The tree does not say which tab is the current one (no SELECTED state).

use crate::a11y::bus::Node;
use crate::vocab::role;

/// The type name libadwaita's tab exports as its name.
const TAB: &str = "AdwTab";

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
