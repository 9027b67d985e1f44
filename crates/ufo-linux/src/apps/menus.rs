//! GTK2 menus (applications whose bridge is GAIL): the items of an open GTK2 menu are VISIBLE but never SHOWING (GIMP with
//! `GTK_MODULES=gail:atk-bridge`), so the usual visibility rule hides them while the menu is
//! open. A menu counts as open when one of its first items is drawn somewhere (real extents);
//! the items of open menus are then read (bounded) and accepted as visible.

use std::collections::HashSet;

use crate::a11y::bus::A11yBus;
use crate::a11y::bus::AppTree;
use crate::vocab::role;
use crate::vocab::state;
use crate::LinuxConfig;

/// How many levels of submenus are followed.
const MAX_DEPTH: usize = 4;
/// How many items of a menu are probed for extents.
const PROBES: usize = 3;

/// The menus directly under a menu bar in `frame`'s subtree (where the GTK2 check starts).
pub(crate) fn top_menus(tree: &AppTree, frame: &str, max_nodes: usize) -> Vec<String> {
    tree.subtree(frame, max_nodes)
        .into_iter()
        .filter(|n| n.role == role::MENU && n.has(state::VISIBLE))
        .filter(|n| {
            tree.nodes
                .get(&n.parent)
                .is_some_and(|p| p.role == role::MENU_BAR)
        })
        .map(|n| n.path.clone())
        .collect()
}

/// Whether `n`'s parent is a menu found open: then a VISIBLE node counts as shown.
pub(crate) fn shown_in_open_menu(open: &HashSet<String>, n: &crate::a11y::bus::Node) -> bool {
    !open.is_empty() && n.has(state::VISIBLE) && !n.has(state::DEFUNCT) && open.contains(&n.parent)
}

/// Reading GTK2's menus: the bus to ask and the bounds of the configuration.
#[derive(Clone, Copy)]
pub(crate) struct Menus<'a> {
    pub bus: &'a A11yBus,
    pub config: &'a LinuxConfig,
}

impl Menus<'_> {
    /// A menu's item paths: from the tree, else asked (one call; a menu claiming more than
    /// `walk_max_children` items, or a negative count, is left alone).
    async fn item_paths(&self, bus: &str, tree: &AppTree, menu: &str) -> Vec<String> {
        let have = tree.kids(menu);
        if !have.is_empty() {
            return have.to_vec();
        }
        let count = tree.nodes.get(menu).map(|n| n.child_count).unwrap_or(0);
        if count <= 0 || count as usize > self.config.walk_max_children {
            return Vec::new();
        }
        self.bus.children(bus, menu).await.unwrap_or_default()
    }

    /// Whether a menu is open: one of its first items (known visible, or not known yet) is
    /// drawn somewhere; GTK3 items of an open menu are SHOWING and need no probe.
    async fn probe_menu(&self, bus: &str, tree: &AppTree, menu: &str) -> (bool, Vec<String>) {
        let items = self.item_paths(bus, tree, menu).await;
        let showing = items
            .iter()
            .any(|k| tree.nodes.get(k).is_some_and(|n| n.has(state::SHOWING)));
        if items.is_empty() || showing {
            return (false, items);
        }
        let probes: Vec<&String> = items
            .iter()
            .filter(|k| tree.nodes.get(*k).is_none_or(|n| n.has(state::VISIBLE)))
            .take(PROBES)
            .collect();
        let ext = futures::future::join_all(probes.iter().map(|p| self.bus.extents(bus, p))).await;
        let open = ext
            .into_iter()
            .flatten()
            .any(|(x, y, w, h)| x != i32::MIN && y != i32::MIN && w > 1 && h > 1);
        (open, items)
    }

    /// Read the nodes of a menu's items the tree lacks.
    async fn read_items(&self, bus: &str, tree: &mut AppTree, menu: &str, items: &[String]) {
        let missing: Vec<(usize, &String)> = items
            .iter()
            .enumerate()
            .filter(|(_, k)| !tree.nodes.contains_key(*k))
            .collect();
        if missing.is_empty() {
            return;
        }
        let nodes = futures::future::join_all(
            missing
                .iter()
                .map(|(i, k)| self.bus.node(bus, k, menu, *i as i32)),
        )
        .await;
        for n in nodes.into_iter().flatten() {
            tree.insert(n);
        }
        tree.sort_children();
    }

    /// The GTK2 menus among `start` (and their submenus) that are open now, their items read
    /// into the tree. With `all`, every menu and submenu is read without probing (to find an
    /// item to activate in a closed menu).
    pub(crate) async fn open_menus(
        &self,
        bus: &str,
        tree: &mut AppTree,
        start: Vec<String>,
        all: bool,
    ) -> HashSet<String> {
        let mut open = HashSet::new();
        let mut level = start;
        for _ in 0..MAX_DEPTH {
            if level.is_empty() {
                break;
            }
            let probed = {
                let t = &*tree;
                futures::future::join_all(level.iter().map(|m| self.probe_menu(bus, t, m))).await
            };
            let mut next = Vec::new();
            for (menu, (is_open, items)) in level.iter().zip(probed) {
                if !(is_open || (all && !items.is_empty())) {
                    continue;
                }
                self.read_items(bus, tree, menu, &items).await;
                open.insert(menu.clone());
                next.extend(
                    items
                        .iter()
                        .filter(|k| {
                            tree.nodes
                                .get(*k)
                                .is_some_and(|n| n.role == role::MENU && n.has(state::VISIBLE))
                        })
                        .cloned(),
                );
            }
            level = next;
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a11y::bus::Node;

    fn node(path: &str, parent: &str, role: u32, states: u64) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index: 0,
            child_count: 0,
            ifaces: 0,
            name: path.into(),
            role,
            description: String::new(),
            states,
        }
    }

    #[test]
    fn items_of_an_open_menu_count_as_shown_others_do_not() {
        let open: HashSet<String> = ["/image".to_string()].into_iter().collect();
        let item = node("/flip", "/image", 35, state::VISIBLE);
        assert!(shown_in_open_menu(&open, &item));
        let closed = node("/cut", "/edit", 35, state::VISIBLE);
        assert!(!shown_in_open_menu(&open, &closed));
        let hidden = node("/x", "/image", 35, 0);
        assert!(!shown_in_open_menu(&open, &hidden));
    }

    #[test]
    fn top_menus_are_the_menus_of_a_menu_bar() {
        let tree = AppTree::from_nodes(vec![
            node("/frame", "/", 23, state::VISIBLE),
            node("/bar", "/frame", role::MENU_BAR, state::VISIBLE),
            node(
                "/image",
                "/bar",
                role::MENU,
                state::VISIBLE | state::SHOWING,
            ),
            node("/sub", "/image", role::MENU, state::VISIBLE),
        ]);
        assert_eq!(top_menus(&tree, "/frame", 100), ["/image"]);
    }
}
