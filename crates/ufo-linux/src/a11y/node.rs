//! One accessible object as ufo keeps it, and the cache item an application lists
//! (`Cache.GetItems`) or announces (`Cache.AddAccessible`) it by. Below `bus` and `events`,
//! which both read cache items.

use zbus::zvariant::OwnedObjectPath;

use crate::vocab::iface;

/// One accessible object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub path: String,
    pub parent: String,
    pub index: i32,
    pub child_count: i32,
    pub ifaces: u32,
    pub name: String,
    pub role: u32,
    pub description: String,
    pub states: u64,
}

impl Node {
    pub fn has(&self, s: u64) -> bool {
        self.states & s != 0
    }
}

pub(crate) type ObjRef = (String, OwnedObjectPath);
/// One item of an application's cache, as `Cache.GetItems` lists it and `Cache.AddAccessible`
/// announces it: the object, its application, its parent, its index there, its child count,
/// interfaces, name, role, description and states.
pub(crate) type RawItem = (
    ObjRef,
    ObjRef,
    ObjRef,
    i32,
    i32,
    Vec<String>,
    String,
    u32,
    String,
    Vec<u32>,
);

/// The node a cache item describes.
pub(crate) fn node_of(raw: RawItem) -> Node {
    let (obj, _app, parent, index, children, ifaces, name, role, desc, states) = raw;
    Node {
        path: obj.1.as_str().to_string(),
        parent: parent.1.as_str().to_string(),
        index,
        child_count: children,
        ifaces: iface_bits(&ifaces),
        name,
        role,
        description: desc,
        states: state_bits(&states),
    }
}

pub(crate) fn iface_bits(names: &[String]) -> u32 {
    let mut bits = 0;
    for n in names {
        bits |= match n.as_str() {
            "org.a11y.atspi.Action" => iface::ACTION,
            "org.a11y.atspi.Component" => iface::COMPONENT,
            "org.a11y.atspi.Text" => iface::TEXT,
            "org.a11y.atspi.EditableText" => iface::EDITABLE_TEXT,
            "org.a11y.atspi.Value" => iface::VALUE,
            "org.a11y.atspi.Selection" => iface::SELECTION,
            "org.a11y.atspi.Application" => iface::APPLICATION,
            _ => 0,
        };
    }
    bits
}

pub(crate) fn state_bits(words: &[u32]) -> u64 {
    let lo = u64::from(words.first().copied().unwrap_or(0));
    let hi = u64::from(words.get(1).copied().unwrap_or(0));
    lo | (hi << 32)
}

/// A node named `name` at `path` under `/p`, with nothing else set (for tests).
#[cfg(test)]
pub(crate) fn named(path: &str, name: &str) -> Node {
    Node {
        path: path.into(),
        parent: "/p".into(),
        index: 0,
        child_count: 0,
        ifaces: 0,
        name: name.into(),
        role: 0,
        description: String::new(),
        states: 0,
    }
}
