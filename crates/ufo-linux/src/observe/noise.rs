//! Controls that say nothing on their own: the cells of one table row (GTK3 gives a file
//! chooser's row seven cells, most of them unnamed) are one control named by the row's text,
//! many unnamed alike items are one group, and only one control is focused. The items of an
//! icon view that a toolkit lists as a table's cells (Dolphin: one cell per file, four files
//! to a line) are one control each, not a row.

use ufo_core::Rect;

/// A table cell as the row folding sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    /// The table it belongs to (its nearest table or tree table).
    pub table: String,
    pub rect: Rect,
    pub name: String,
}

/// One row: the cell that stands for it, its name, the rest of its text, and its
/// rectangle (all its cells').
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// Indexes of the row's cells in the input; the first is the one kept.
    pub cells: Vec<usize>,
    /// The row's first text.
    pub name: String,
    /// The row's whole text when it has more than one (" · " between texts).
    pub text: Option<String>,
    pub rect: Rect,
}

/// Whether a cell's name says nothing (empty, or GTK's marker of an unnamed cell).
fn says_nothing(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_whitespace() || c.is_control() || c == '\u{200e}')
}

/// Whether the cells `line` (indexes into `cells`, one line of one table) are the items of an
/// icon view rather than the columns of a row: at least two, each with a name of its own
/// (no two alike), all of one size, none overlapping another. A row's columns differ in
/// width, or some say nothing (GTK3's file chooser: seven cells, four unnamed); Dolphin's
/// icon view lists each file as a 115×87 cell, four to a line, 4 px apart.
fn is_icon_line(cells: &[Cell], line: &[usize]) -> bool {
    let Some(&first) = line.first() else {
        return false;
    };
    let size = (cells[first].rect.w, cells[first].rect.h);
    let mut names: Vec<String> = Vec::new();
    for &i in line {
        let c = &cells[i];
        let name = crate::names::collapse_ws(&c.name);
        if says_nothing(&name) || names.contains(&name) || (c.rect.w, c.rect.h) != size {
            return false;
        }
        names.push(name);
    }
    let mut xs: Vec<(i32, i32)> = line
        .iter()
        .map(|&i| (cells[i].rect.x, cells[i].rect.x + cells[i].rect.w as i32))
        .collect();
    xs.sort_unstable();
    line.len() >= 2 && xs.windows(2).all(|p| p[0].1 <= p[1].0)
}

/// The rows of a table's cells: cells of the same table on the same line (same top, same
/// height) are one row. The row is named by its first text and stands on its first named
/// cell; rows keep the order of their first cell. A line of icon-view items
/// ([`is_icon_line`]) is one row per item.
pub(crate) fn fold_rows(cells: &[Cell]) -> Vec<Row> {
    let rows = lines(cells);
    rows.into_iter()
        .flat_map(|row| {
            if is_icon_line(cells, &row.cells) {
                row.cells
                    .iter()
                    .map(|&i| Row {
                        cells: vec![i],
                        name: crate::names::collapse_ws(&cells[i].name),
                        text: None,
                        rect: cells[i].rect,
                    })
                    .collect()
            } else {
                vec![row]
            }
        })
        .collect()
}

/// The cells of each line of each table, as one row each (see [`fold_rows`]).
fn lines(cells: &[Cell]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut keys: Vec<(&str, i32, u32)> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let key = (c.table.as_str(), c.rect.y, c.rect.h);
        match keys.iter().position(|k| *k == key) {
            Some(r) => {
                let row = &mut rows[r];
                row.cells.push(i);
                row.rect = union(row.rect, c.rect);
            }
            None => {
                keys.push(key);
                rows.push(Row {
                    cells: vec![i],
                    name: String::new(),
                    text: None,
                    rect: c.rect,
                });
            }
        }
    }
    for row in &mut rows {
        let mut texts: Vec<String> = Vec::new();
        for &i in &row.cells {
            let t = crate::names::collapse_ws(&cells[i].name);
            if !says_nothing(&t) && !texts.contains(&t) {
                texts.push(t);
            }
        }
        if let Some(first) = row
            .cells
            .iter()
            .position(|&i| !says_nothing(&cells[i].name))
        {
            row.cells.swap(0, first);
        }
        row.name = texts.first().cloned().unwrap_or_default();
        row.text = (texts.len() > 1).then(|| texts.join(" · "));
    }
    rows
}

fn union(a: Rect, b: Rect) -> Rect {
    let x = a.x.min(b.x);
    let y = a.y.min(b.y);
    let r = (a.x + a.w as i32).max(b.x + b.w as i32);
    let bottom = (a.y + a.h as i32).max(b.y + b.h as i32);
    Rect {
        x,
        y,
        w: (r - x).max(0) as u32,
        h: (bottom - y).max(0) as u32,
    }
}

/// Fewest unnamed alike items grouped into one control.
pub(crate) const MIN_GROUP: usize = 5;

/// A control as the grouping of unnamed items sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// Its parent node.
    pub parent: String,
    pub role: String,
    pub name: String,
    pub rect: Rect,
}

/// What makes items alike: parent, role, width, height.
type Alike<'a> = (&'a str, &'a str, u32, u32);

/// Groups of unnamed alike items (same parent, same role, same size, no name): at least
/// [`MIN_GROUP`] of them are one control (Inkscape's 70 unnamed palette swatches). Each group
/// lists the indexes of its items, the first one kept.
pub(crate) fn unnamed_groups(items: &[Item]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Alike, Vec<usize>)> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        if !says_nothing(&it.name) {
            continue;
        }
        let key = (it.parent.as_str(), it.role.as_str(), it.rect.w, it.rect.h);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
        .into_iter()
        .map(|(_, g)| g)
        .filter(|g| g.len() >= MIN_GROUP)
        .collect()
}

/// The name of a group of `n` unnamed items of role `role` ("70 unnamed list items").
pub(crate) fn group_name(n: usize, role: &str) -> String {
    format!("{n} unnamed {role}s")
}

/// The rectangle of all of `rects`.
pub(crate) fn union_all(rects: impl IntoIterator<Item = Rect>) -> Option<Rect> {
    rects.into_iter().reduce(union)
}

/// Which of several controls marked focused is: the last one whose state, read again
/// live, still says focused (a toolkit's cache keeps the mark on controls that lost the
/// focus: KDE showed six). `None` when none does.
pub(crate) fn one_focused(live: &[Option<bool>]) -> Option<usize> {
    live.iter().rposition(|f| *f == Some(true))
}

/// The most pixels between a field's right edge and the arrow button beside it.
const ARROW_GAP: i32 = 4;

/// Unnamed arrow buttons of named fields (LibreOffice's Name Box: an entry and its unnamed
/// drop-down toggle in one container): each is named after its field, "<field> list"
/// (index, name). An arrow is a nameless button or toggle button that starts where a named
/// text, entry or combo box ends, on the same line and as tall (by place only: the Name
/// Box is found by the spreadsheet's reading, after the tree's).
///
/// The arrow half of a split button (GTK 3's menu tool button: Geany's "Open", "New" and
/// "Build") is a toggle button GTK names "Menu", whatever its button: a generic name a
/// person never reads. A toggle button named so, or unnamed, that starts where a named push
/// button ends (same line, as tall) is named after it, "<button> menu" ("Open menu").
pub(crate) fn field_arrows(items: &[Item]) -> Vec<(usize, String)> {
    let field = |it: &Item| matches!(it.role.as_str(), "text" | "entry" | "combo box");
    let arrow = |it: &Item| matches!(it.role.as_str(), "button" | "toggle button");
    let beside = |a: &Item, f: &Item| {
        (a.rect.h as i32 - f.rect.h as i32).abs() <= ARROW_GAP
            && (a.rect.x - (f.rect.x + f.rect.w as i32)).abs() <= ARROW_GAP
            && (a.rect.y - f.rect.y).abs() <= ARROW_GAP
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let named_by = |f: &&Item| !says_nothing(&f.name) && beside(a, f);
            if arrow(a) && says_nothing(&a.name) {
                if let Some(f) = items.iter().filter(|f| field(f)).find(named_by) {
                    return Some((i, format!("{} list", f.name)));
                }
            }
            if a.role == "toggle button" && (says_nothing(&a.name) || a.name == SPLIT_ARROW) {
                let mut buttons = items.iter().filter(|f| f.role == "button");
                if let Some(b) = buttons.find(named_by) {
                    return Some((i, format!("{} menu", b.name)));
                }
            }
            None
        })
        .collect()
}

/// The name GTK 3 gives every menu tool button's arrow (in an English session).
const SPLIT_ARROW: &str = "Menu";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell(table: &str, x: i32, y: i32, w: u32, name: &str) -> Cell {
        Cell {
            table: table.into(),
            rect: Rect { x, y, w, h: 21 },
            name: name.into(),
        }
    }

    /// Issue 24, item 7: a GTK3 file chooser's seven cells per row are one row.
    #[test]
    fn a_file_choosers_row_is_one_control() {
        let t = "/t";
        let cells = vec![
            cell(t, 160, 147, 763, ""),
            cell(t, 160, 147, 28, "\u{1}"),
            cell(t, 188, 147, 739, "crates"),
            cell(t, 927, 147, 41, ""),
            cell(t, 972, 147, 45, ""),
            cell(t, 1021, 147, 74, ""),
            cell(t, 1021, 147, 76, "22\u{200e}∶47"),
            cell(t, 160, 170, 763, ""),
            cell(t, 188, 170, 739, "docs"),
            cell("/other", 188, 170, 739, "Home"),
        ];
        let rows = fold_rows(&cells);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "crates");
        assert_eq!(rows[0].cells[0], 2, "the row stands on its named cell");
        assert_eq!(rows[0].cells.len(), 7);
        assert_eq!(rows[0].text.as_deref(), Some("crates · 22\u{200e}∶47"));
        assert_eq!(
            rows[0].rect,
            Rect {
                x: 160,
                y: 147,
                w: 937,
                h: 21
            }
        );
        assert_eq!(rows[1].name, "docs");
        assert_eq!(rows[1].text, None);
        assert_eq!(rows[2].name, "Home");
    }

    /// Issue 46: Dolphin's icon view lists each file as a table cell, four to a line; the
    /// line was one control (`"draft.txt" value "draft.txt · notes.txt"`). Each item is one
    /// control; a line of a table whose cells differ in size, or repeat a name, is a row.
    #[test]
    fn an_icon_views_items_are_one_control_each() {
        let icon = |x: i32, y: i32, name: &str| Cell {
            table: "/view".into(),
            rect: Rect {
                x,
                y,
                w: 115,
                h: 87,
            },
            name: name.into(),
        };
        let cells = vec![
            icon(527, 355, "draft.txt"),
            icon(646, 355, "notes.txt"),
            icon(765, 355, "todo.txt"),
            icon(527, 446, "zeta.txt"),
        ];
        let rows = fold_rows(&cells);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["draft.txt", "notes.txt", "todo.txt", "zeta.txt"]);
        assert!(rows.iter().all(|r| r.cells.len() == 1 && r.text.is_none()));
        assert_eq!(rows[1].rect, cells[1].rect);
        // the same names in cells of different widths: a row's columns
        let mut row = cells[..2].to_vec();
        row[1].rect.w = 60;
        assert_eq!(fold_rows(&row).len(), 1);
        // equal cells repeating a name, or overlapping: one row
        let mut twice = cells[..2].to_vec();
        twice[1].name = "draft.txt".into();
        assert_eq!(fold_rows(&twice).len(), 1);
        let mut over = cells[..2].to_vec();
        over[1].rect.x = 600;
        assert_eq!(fold_rows(&over).len(), 1);
    }

    #[test]
    fn only_the_last_live_focused_control_is_focused() {
        assert_eq!(
            one_focused(&[Some(false), Some(true), None, Some(true)]),
            Some(3)
        );
        assert_eq!(one_focused(&[Some(false), None]), None);
    }

    /// Issue 24, item 7: Inkscape's 70 unnamed swatches are one control; named items and
    /// short runs stay.
    #[test]
    fn unnamed_alike_items_are_grouped() {
        let it = |parent: &str, name: &str, x: i32| Item {
            parent: parent.into(),
            role: "list item".into(),
            name: name.into(),
            rect: Rect {
                x,
                y: 972,
                w: 16,
                h: 16,
            },
        };
        let mut items: Vec<Item> = (0..70).map(|i| it("/palette", "", i * 17)).collect();
        items.push(it("/palette", "Black", 2000));
        items.extend((0..3).map(|i| it("/other", "", i * 17)));
        let groups = unnamed_groups(&items);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].len(), 70);
        assert_eq!(group_name(70, "list item"), "70 unnamed list items");
        assert_eq!(
            union_all(groups[0].iter().map(|&i| items[i].rect)),
            Some(Rect {
                x: 0,
                y: 972,
                w: 69 * 17 + 16,
                h: 16
            })
        );
    }

    proptest! {
        /// Every cell is in exactly one row, and no row has two cells of another line.
        #[test]
        fn every_cell_is_in_one_row(
            spec in proptest::collection::vec((0u8..2, 0i32..4, "[a-c]{0,2}"), 0..40)
        ) {
            let cells: Vec<Cell> = spec
                .iter()
                .map(|(t, line, n)| cell(&format!("/t{t}"), 0, line * 21, 10, n))
                .collect();
            let rows = fold_rows(&cells);
            let mut seen: Vec<usize> = rows.iter().flat_map(|r| r.cells.clone()).collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..cells.len()).collect::<Vec<_>>());
            for r in &rows {
                let first = &cells[r.cells[0]];
                for &i in &r.cells {
                    prop_assert_eq!(&cells[i].table, &first.table);
                    prop_assert_eq!(cells[i].rect.y, first.rect.y);
                }
                prop_assert!(r.name.is_empty() || !says_nothing(&r.name));
            }
        }
    }

    #[test]
    fn an_unnamed_arrow_beside_a_named_field_is_named_after_it() {
        let it = |parent: &str, role: &str, name: &str, x: i32| Item {
            parent: parent.into(),
            role: role.into(),
            name: name.into(),
            rect: Rect {
                x,
                y: 124,
                w: if role == "text" { 126 } else { 36 },
                h: 34,
            },
        };
        // Calc's Name Box (x 4, 126 wide) and its toggle at 130
        let items = vec![
            it("/f", "text", "Name Box", 4),
            it("/f", "toggle button", "", 130),
            Item {
                rect: Rect {
                    y: 200,
                    ..it("/f", "toggle button", "", 130).rect
                },
                ..it("/f", "toggle button", "", 130)
            },
            it("/f", "toggle button", "", 300),
            it("/f", "toggle button", "Bold", 130),
        ];
        assert_eq!(field_arrows(&items), vec![(1, "Name Box list".to_string())]);
    }

    /// Geany's tool bar (GTK 3): "Open" (273, 42 wide) and its arrow at 315 named "Menu";
    /// "Save" after it is no arrow (a push button, its own name), an arrow away from any
    /// button keeps its name, and a "Menu" push button is no split button's arrow.
    #[test]
    fn a_split_buttons_arrow_is_named_after_its_button() {
        let it = |role: &str, name: &str, x: i32, w: u32| Item {
            parent: String::new(),
            role: role.into(),
            name: name.into(),
            rect: Rect {
                x,
                y: 248,
                w,
                h: 50,
            },
        };
        let items = vec![
            it("button", "New", 194, 42),
            it("toggle button", "Menu", 236, 36),
            it("button", "Open", 273, 42),
            it("toggle button", "Menu", 315, 36),
            it("button", "Save", 352, 43),
            it("toggle button", "Menu", 600, 36),
            it("button", "Build", 695, 42),
            it("button", "Menu", 737, 36),
            it("button", "Compile", 800, 42),
            it("toggle button", "Bold", 842, 36),
        ];
        assert_eq!(
            field_arrows(&items),
            vec![(1, "New menu".to_string()), (3, "Open menu".to_string())]
        );
    }
}
