//! Gnumeric's edit line: its Name Box and its formula bar are unnamed entries with no label,
//! no relation and no description; the toolbar they sit in tells them apart (the Name Box
//! before the "Enter formula..." button, the formula bar after it).

use crate::a11y::bus::{AppTree, Node};
use crate::vocab::role;

/// The description of the edit line's function button (Gnumeric's own words).
const FORMULA_BUTTON: &str = "Enter formula...";

/// The name of an entry of Gnumeric's edit line, by its place around the "Enter
/// formula..." button; `None` for any other entry.
pub(crate) fn edit_line_name(tree: &AppTree, n: &Node) -> Option<&'static str> {
    // the entry sits in a panel (and a filler) of the toolbar
    let mut p = tree.nodes.get(&n.parent)?;
    let mut branch = n;
    for _ in 0..3 {
        if p.role == role::TOOL_BAR {
            break;
        }
        branch = p;
        p = tree.nodes.get(&p.parent)?;
    }
    if p.role != role::TOOL_BAR {
        return None;
    }
    let kids = tree.kids(&p.path);
    let button = kids.iter().position(|k| {
        tree.nodes.get(k).is_some_and(|k| {
            k.description.trim() == FORMULA_BUTTON
                || tree
                    .kids(&k.path)
                    .iter()
                    .filter_map(|c| tree.nodes.get(c))
                    .any(|c| c.description.trim() == FORMULA_BUTTON)
        })
    })?;
    let here = kids.iter().position(|k| *k == branch.path)?;
    Some(if here < button {
        "Name Box"
    } else {
        "Formula bar"
    })
}
