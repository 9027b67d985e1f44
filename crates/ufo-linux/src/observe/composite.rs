//! One control, one line (issue 46): a composite a person sees as one control is listed once.
//! A combo box and the entry inside it (mousepad's "Replace with", AbiWord's "Font Size"), a
//! spin button and its text are one line: the outer control's role, its name (else the
//! part's), the part's text as its value. The part is kept for the actions that fit it
//! (`set_text`, `type_keys`, `read_text` go to the entry; a click or `select` to the box).
//!
//! A slide's shape and its only paragraph (Impress: `panel "Title 1"` and `paragraph "Old
//! title"`) are one line too, `panel "Title 1" value: "Old title"`: their names differ (the
//! shape's own name, the paragraph's text), and a model may use either, so the core reaches a
//! control that is no field by the text it shows when no name matches (docs/resolution.md).
//!
//! Measured on mousepad's Find and Replace: 14 lines before (`combo box "Replace with"` and
//! `text "Replace with"`, `set_text` ambiguous), 12 after; GIMP's Preferences 33, 32; the
//! names bench: Gnumeric 68 lines, 67 (its controls named as before), no other window changed.
//! With shapes folded: Impress's deck 110 lines, 109 (named by ufo 98 of 105, listed once 105
//! of 105, both unchanged); Writer, Calc and GIMP unchanged.

use std::collections::HashMap;

use crate::vocab::role;

/// A listed control as the folding sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Its node's path.
    pub path: String,
    /// Its parent's and grandparent's paths (nearest first; fewer near the root).
    pub ancestors: Vec<String>,
    /// Its AT-SPI role number.
    pub role: u32,
    /// Its name as listed.
    pub name: String,
    /// A shape of a slide (a panel right under a presentation document): it holds its
    /// paragraph under another name than the paragraph's (its own, "Title 1").
    pub shape: bool,
}

/// How far up a part may sit under the control it belongs to (GTK3 puts a combo box's entry
/// right under it; other toolkits put a panel between).
const PART_DEPTH: usize = 2;

/// Whether `outer` holds a part of role `inner` that is one control with it.
fn holds(outer: &Piece, inner: u32) -> bool {
    match outer.role {
        role::COMBO_BOX | role::SPIN_BUTTON => {
            matches!(inner, role::TEXT | role::ENTRY | role::SPIN_BUTTON)
        }
        role::PANEL => outer.shape && inner == role::PARAGRAPH,
        _ => false,
    }
}

/// Whether two names may be of one control: the same words (any case), or one of them empty.
fn names_agree(outer: &str, part: &str) -> bool {
    let (o, p) = (outer.trim(), part.trim());
    o.is_empty() || p.is_empty() || o.eq_ignore_ascii_case(p)
}

/// The composites among `pieces`: (outer control, its part), by index. A part is a listed
/// control under a listed combo box or spin button (an entry, a text) with its name or none,
/// or a slide's shape's paragraph (named by its text, the shape by its own name), at most
/// [`PART_DEPTH`] levels down, the only listed control under it. Each outer control has one
/// part.
pub(crate) fn composites(pieces: &[Piece]) -> Vec<(usize, usize)> {
    let by_path: HashMap<&str, usize> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| (p.path.as_str(), i))
        .collect();
    // every listed control under each listed control, within PART_DEPTH levels
    let mut under: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, p) in pieces.iter().enumerate() {
        for a in p.ancestors.iter().take(PART_DEPTH) {
            if let Some(&o) = by_path.get(a.as_str()) {
                if o != i {
                    under.entry(o).or_default().push(i);
                }
            }
        }
    }
    let mut out: Vec<(usize, usize)> = under
        .into_iter()
        .filter_map(|(o, parts)| match parts.as_slice() {
            [p] => Some((o, *p)),
            _ => None,
        })
        .filter(|&(o, p)| {
            let (outer, part) = (&pieces[o], &pieces[p]);
            holds(outer, part.role) && (outer.shape || names_agree(&outer.name, &part.name))
        })
        .collect();
    out.sort_unstable();
    // a part that is itself the outer control of another fold stays listed (never a chain)
    let outers: Vec<usize> = out.iter().map(|&(o, _)| o).collect();
    out.retain(|(_, p)| !outers.contains(p));
    // (in a consistent tree a part has one outer control; a stale one may say otherwise)
    let mut parts = std::collections::HashSet::new();
    out.retain(|&(_, p)| parts.insert(p));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(path: &str, ancestors: &[&str], role: u32, name: &str) -> Piece {
        Piece {
            path: path.into(),
            ancestors: ancestors.iter().map(|a| a.to_string()).collect(),
            role,
            name: name.into(),
            shape: false,
        }
    }

    fn shape(path: &str, name: &str) -> Piece {
        Piece {
            shape: true,
            ..piece(path, &["/slide"], role::PANEL, name)
        }
    }

    /// mousepad's Find and Replace (GTK3): each combo box holds its entry, both named by the
    /// label that points at the box; the direction box has no entry; the check box beside
    /// it is no part of it.
    #[test]
    fn a_combo_box_and_its_entry_are_one_control() {
        let pieces = vec![
            piece("/s", &["/f1", "/f0"], role::COMBO_BOX, "Search for"),
            piece("/s/t", &["/s", "/f1"], role::TEXT, "Search for"),
            piece("/r", &["/f2", "/f0"], role::COMBO_BOX, "Replace with"),
            piece("/r/t", &["/r", "/f2"], role::TEXT, "Replace with"),
            piece("/d", &["/f3", "/f0"], role::COMBO_BOX, "Search direction"),
            piece("/w", &["/f3", "/f0"], role::CHECK_BOX, "Wrap around"),
        ];
        assert_eq!(composites(&pieces), vec![(0, 1), (2, 3)]);
    }

    /// An entry with no name of its own (or the box with none) still folds; an entry named
    /// otherwise is a control of its own.
    #[test]
    fn names_must_agree_for_a_field() {
        let pieces = vec![
            piece("/c", &["/p"], role::COMBO_BOX, "Font Size"),
            piece("/c/t", &["/c"], role::TEXT, ""),
            piece("/e", &["/p"], role::COMBO_BOX, ""),
            piece("/e/t", &["/e"], role::ENTRY, "Zoom"),
            piece("/g", &["/p"], role::COMBO_BOX, "Unit"),
            piece("/g/t", &["/g"], role::TEXT, "Width"),
            piece("/s", &["/p"], role::SPIN_BUTTON, "Size"),
            piece("/s/t", &["/s/x", "/s"], role::TEXT, "size"),
        ];
        assert_eq!(composites(&pieces), vec![(0, 1), (2, 3), (6, 7)]);
    }

    /// Impress: a shape and its only paragraph are one control whatever their names (the
    /// shape is named by its own name, the paragraph by its text); a shape of two paragraphs
    /// (a list of points) stays apart, and so does a panel that is no shape of a slide.
    #[test]
    fn a_shape_and_its_only_paragraph_are_one_control() {
        let pieces = vec![
            shape("/t", "Title 1"),
            piece("/t/p", &["/t", "/slide"], role::PARAGRAPH, "Old title"),
            shape("/c", "Content Placeholder 2"),
            piece("/c/p1", &["/c", "/slide"], role::PARAGRAPH, "First point"),
            piece("/c/p2", &["/c", "/slide"], role::PARAGRAPH, "Second point"),
            piece("/n", &["/page"], role::PANEL, "Note"),
            piece("/n/p", &["/n", "/page"], role::PARAGRAPH, "Note text"),
        ];
        assert_eq!(composites(&pieces), vec![(0, 1)]);
    }

    /// Roles that are no composite: a panel's entry, a button's text, a list's items.
    #[test]
    fn other_containers_fold_nothing() {
        let pieces = vec![
            piece("/p", &["/f"], role::PANEL, "Search"),
            piece("/p/e", &["/p"], role::ENTRY, "Search"),
            piece("/b", &["/f"], role::PUSH_BUTTON, "Go"),
            piece("/b/t", &["/b"], role::TEXT, "Go"),
            piece("/c", &["/f"], role::COMBO_BOX, "Mode"),
            piece("/c/i", &["/c/m", "/c"], role::MENU_ITEM, "Normal"),
        ];
        assert_eq!(composites(&pieces), vec![]);
    }

    proptest::proptest! {
        /// Whatever the pieces, a control is folded into at most one other, an outer control
        /// is never itself folded, and outer and part are different controls.
        #[test]
        fn folds_are_disjoint(
            spec in proptest::collection::vec(
                (0usize..6, 0usize..6, proptest::sample::select(vec![
                    role::COMBO_BOX, role::TEXT, role::ENTRY, role::SPIN_BUTTON, role::PANEL,
                    role::PARAGRAPH, role::PUSH_BUTTON,
                ]), "[ab]?"),
                0..12,
            )
        ) {
            let pieces: Vec<Piece> = spec
                .iter()
                .enumerate()
                .map(|(i, (a, b, r, n))| Piece {
                    path: format!("/{i}"),
                    ancestors: vec![format!("/{a}"), format!("/{b}")],
                    role: *r,
                    name: n.clone(),
                    shape: i % 2 == 0,
                })
                .collect();
            let folds = composites(&pieces);
            let parts: Vec<usize> = folds.iter().map(|&(_, p)| p).collect();
            let outers: Vec<usize> = folds.iter().map(|&(o, _)| o).collect();
            for &(o, p) in &folds {
                proptest::prop_assert_ne!(o, p);
                proptest::prop_assert!(!parts.contains(&o));
                proptest::prop_assert_eq!(parts.iter().filter(|&&q| q == p).count(), 1);
                proptest::prop_assert_eq!(outers.iter().filter(|&&q| q == o).count(), 1);
            }
        }
    }
}
