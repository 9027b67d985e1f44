//! Nodes read one by one, remembered between observations. The parts of a window that an
//! application's cache does not give (LibreOffice's root pane, toolbars, a document's
//! paragraphs) are read node by node on every observation; a node's role, description and
//! interfaces never change while its object lives (AT-SPI object paths are not reused), so a
//! node seen before has only its name, states and child count read again: three calls
//! instead of six.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::a11y::bus::{A11yBus, Node};
use crate::LinuxError;

/// Most nodes remembered (then forgotten all at once).
const MAX_KNOWN_NODES: usize = 20_000;

const ACC: &str = "org.a11y.atspi.Accessible";

/// A remembered node with what was read again now.
fn refreshed(
    mut n: Node,
    name: String,
    states: &[u32],
    count: i32,
    parent: &str,
    index: i32,
) -> Node {
    n.name = name;
    n.states = crate::a11y::bus::state_bits(states);
    n.child_count = count;
    n.parent = parent.to_string();
    n.index = index;
    n
}

/// The nodes read one by one before: (bus name, path) → the node.
#[derive(Default)]
pub(crate) struct KnownNodes {
    by_key: Mutex<HashMap<(String, String), Node>>,
}

impl KnownNodes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Node>> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.by_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One node (child `index` of `parent`), read live: whole when it was never read, else
    /// its name, states and child count only.
    pub(crate) async fn read(
        &self,
        a11y: &A11yBus,
        bus: &str,
        path: &str,
        parent: &str,
        index: i32,
    ) -> Result<Node, LinuxError> {
        let key = (bus.to_string(), path.to_string());
        let known = self.lock().get(&key).cloned();
        let n = match known {
            Some(old) => {
                let (name, states, count) = futures::try_join!(
                    a11y.prop::<String>(bus, path, ACC, "Name"),
                    a11y.call::<_, Vec<u32>>(bus, path, ACC, "GetState", &()),
                    a11y.child_count(bus, path),
                )?;
                refreshed(old, name, &states, count, parent, index)
            }
            None => a11y.node(bus, path, parent, index).await?,
        };
        let mut known = self.lock();
        if known.len() >= MAX_KNOWN_NODES {
            known.clear();
        }
        known.insert(key, n.clone());
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered node keeps its role, description and interfaces and takes what was read
    /// again: name, states, child count, and where it hangs now.
    #[test]
    fn a_known_node_takes_what_was_read_again() {
        let old = Node {
            path: "/a/7".into(),
            parent: "/a/1".into(),
            index: 3,
            child_count: 0,
            ifaces: 5,
            name: "old".into(),
            role: 73,
            description: "d".into(),
            states: 0,
        };
        // SHOWING (bit 25) in the first word
        let n = refreshed(old, "new".into(), &[1 << 25, 0], 2, "/a/2", 0);
        assert_eq!((n.role, n.ifaces, n.description.as_str()), (73, 5, "d"));
        assert_eq!((n.name.as_str(), n.child_count), ("new", 2));
        assert_eq!((n.parent.as_str(), n.index), ("/a/2", 0));
        assert_eq!(n.states, crate::a11y::bus::state_bits(&[1 << 25, 0]));
        assert_ne!(n.states, 0);
    }
}
