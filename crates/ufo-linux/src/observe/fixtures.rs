//! Fake accessibility trees the observation's unit tests share.

use crate::a11y::bus::{AppTree, Node};
use crate::vocab::{iface, role, state, ROOT_PATH};

/// A node of a fake tree: `path` under `parent`, visible and showing.
pub(super) fn at(path: &str, parent: &str, index: i32, role: u32) -> Node {
    Node {
        path: path.into(),
        parent: parent.into(),
        index,
        child_count: 0,
        ifaces: iface::COMPONENT,
        name: format!("n{path}"),
        role,
        description: String::new(),
        states: state::VISIBLE | state::SHOWING,
    }
}

/// frame /f (under the application's root) with /a, /a/b, /a/b/c.
pub(super) fn chain() -> AppTree {
    let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
    f.child_count = 1;
    AppTree::from_nodes(vec![
        f,
        at("/a", "/f", 0, role::PANEL),
        at("/b", "/a", 0, role::PUSH_BUTTON),
        at("/c", "/b", 0, role::PUSH_BUTTON),
    ])
}
