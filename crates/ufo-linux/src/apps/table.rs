//! Spreadsheets (LibreOffice Calc's sheet): a table that reports every cell of the sheet as a
//! child (2^31, -1 in GTK3's cache) and manages its descendants. Its children are never
//! enumerated (that makes LibreOffice build every cell, at 100% CPU and without end); only its
//! visible range is read, through hit tests of the visible corners and the Table interface, one
//! cell at a time, bounded in cells ([`MAX_ROWS`] x [`MAX_COLS`]) and time. A visible cell that
//! shows nothing in the window's capture is not asked for its text (`inked.rs`: on a fresh
//! sheet that is every cell; asking builds LibreOffice's cell object, most of a read's cost).
//!
//! Cells are controls named by their address (`A1`, `B7`) with their shown text as value. Only
//! filled cells are listed, plus the empty cells next to the data (the first empty cell under
//! each filled column and right of each filled row, or the first visible cell of an empty
//! sheet), so the prompt stays bounded; the sheet itself is listed as a `table` control whose
//! value says which range is visible. Every cell control's id is the sheet's id, `#` and the
//! address, and the engine gives a cell the observation does not list the same kind of id
//! (`ControlText: "A7"` with A7 empty), so actions on cells find their cell by address, fresh
//! each time.
//!
//! Actions on a cell: `read_text` gives the formula and the shown value (`=SUM(A1:A5) → 15`),
//! read from the formula input line after the Name Box moved the cursor there; `set_text`
//! moves the cursor with the Name Box, types the content and presses Enter (LibreOffice's cells
//! have no editable text interface). `set_text` on the Name Box jumps to the cell or selects
//! the range typed (`A1:B5`). The Name Box and the formula input line ("Input line") are named
//! here: LibreOffice gives them no accessible name.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use ufo_core::{Control, Rect};
use zbus::zvariant::OwnedObjectPath;

use crate::a11y::bus::{A11yBus, AppTree, Node};
use crate::apps::inked::{self, PlacedCell, SheetPixels, Shot};
use crate::apps::office::Office;
use crate::apps::sheets::{Cell, SheetCache};
use crate::controls::CtlInfo;
use crate::controls::{ControlDetail, Fetched};
use crate::display::pixels::intersect;
use crate::display::WinId;
use crate::vocab::role;
use crate::vocab::{iface, state};
use crate::{LinuxConfig, LinuxError};

/// Most rows of a sheet read in one observation.
pub(crate) const MAX_ROWS: u32 = 60;
/// Most columns of a sheet read in one observation.
pub(crate) const MAX_COLS: u32 = 30;
/// Where the application's accessible objects live (not `/org/a11y/atspi/null`).
const ACCESSIBLE: &str = "/org/a11y/atspi/accessible/";
/// Longest cell value shown in an observation (`read_text` gives the whole content): a few
/// long texts must not blow the prompt of a sheet.
const CELL_VALUE_MAX: usize = 200;
/// Columns of a LibreOffice sheet (A..XFD) and rows.
const SHEET_COLS: u32 = 16_384;
const SHEET_ROWS: u32 = 1_048_576;

/// The name given to LibreOffice's Name Box (the cell address box left of the input line).
pub(crate) const NAME_BOX: &str = "Name Box";
/// The name of the formula input line (LibreOffice names its panel so, not the text).
pub(crate) const INPUT_LINE: &str = "Input line";

/// The column letters of a zero-based column: 0 → `A`, 25 → `Z`, 26 → `AA`, 702 → `AAA`.
pub(crate) fn column_name(col: u32) -> String {
    let mut n = col as u64 + 1;
    let mut out = Vec::new();
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        out.push(b'A' + rem);
        n = (n - 1) / 26;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The address of a zero-based (row, column): (6, 1) → `B7`.
pub(crate) fn cell_address(row: u32, col: u32) -> String {
    format!("{}{}", column_name(col), row as u64 + 1)
}

/// A cell address (`B7`, `$b$7`) as a zero-based (row, column) within the sheet's size.
pub(crate) fn parse_cell(s: &str) -> Option<(u32, u32)> {
    let canonical = ufo_core::agent::app::cell_address(s)?;
    let letters = canonical
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let (l, r) = canonical.split_at(letters);
    let mut col: u64 = 0;
    for b in l.bytes() {
        col = col * 26 + u64::from(b - b'A' + 1);
    }
    let row: u64 = r.parse().ok()?;
    let (row, col) = (u32::try_from(row - 1).ok()?, u32::try_from(col - 1).ok()?);
    (row < SHEET_ROWS && col < SHEET_COLS).then_some((row, col))
}

/// A range of cells, zero-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellRange {
    pub top: u32,
    pub left: u32,
    pub bottom: u32,
    pub right: u32,
}

impl CellRange {
    /// The range between two corner cells, cut to `max_rows` x `max_cols` from the top left
    /// (the flag: whether it was cut).
    pub(crate) fn between(
        a: (u32, u32),
        b: (u32, u32),
        max_rows: u32,
        max_cols: u32,
    ) -> (CellRange, bool) {
        let (top, bottom) = (a.0.min(b.0), a.0.max(b.0));
        let (left, right) = (a.1.min(b.1), a.1.max(b.1));
        let cut_bottom = bottom.min(top + max_rows.max(1) - 1);
        let cut_right = right.min(left + max_cols.max(1) - 1);
        (
            CellRange {
                top,
                left,
                bottom: cut_bottom,
                right: cut_right,
            },
            cut_bottom != bottom || cut_right != right,
        )
    }

    /// Every cell, row by row.
    pub(crate) fn cells(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (self.top..=self.bottom).flat_map(move |r| (self.left..=self.right).map(move |c| (r, c)))
    }

    pub(crate) fn contains(&self, (r, c): (u32, u32)) -> bool {
        (self.top..=self.bottom).contains(&r) && (self.left..=self.right).contains(&c)
    }

    /// `A1:O46`.
    pub(crate) fn name(&self) -> String {
        format!(
            "{}:{}",
            cell_address(self.top, self.left),
            cell_address(self.bottom, self.right)
        )
    }
}

/// The empty cells worth listing beside the filled ones: the first empty cell under the last
/// filled cell of each column and right of the last filled cell of each row (where the next
/// entry usually goes), or the first cell of the range when nothing is filled. Sorted, row by
/// row.
pub(crate) fn cells_next_to_data(filled: &[(u32, u32)], range: &CellRange) -> Vec<(u32, u32)> {
    use std::collections::{BTreeMap, BTreeSet};
    if filled.is_empty() {
        return vec![(range.top, range.left)];
    }
    let set: BTreeSet<(u32, u32)> = filled.iter().copied().collect();
    let mut last_in_col: BTreeMap<u32, u32> = BTreeMap::new();
    let mut last_in_row: BTreeMap<u32, u32> = BTreeMap::new();
    for &(r, c) in filled {
        let e = last_in_col.entry(c).or_insert(r);
        *e = (*e).max(r);
        let e = last_in_row.entry(r).or_insert(c);
        *e = (*e).max(c);
    }
    let mut out: BTreeSet<(u32, u32)> = BTreeSet::new();
    for (c, r) in last_in_col {
        out.insert((r + 1, c));
    }
    for (r, c) in last_in_row {
        out.insert((r, c + 1));
    }
    out.into_iter()
        .filter(|p| range.contains(*p) && !set.contains(p))
        .collect()
}

use ufo_core::text::clip;

/// What the sheet control's value says about its cells.
pub(crate) fn sheet_summary(range: &CellRange, filled: usize, cut: bool) -> String {
    let cut = if cut {
        format!(" (only the first {MAX_ROWS} rows and {MAX_COLS} columns of the window are read)")
    } else {
        String::new()
    };
    format!(
        "cells {} visible{cut}, {filled} filled (listed); empty cells are not listed, except those next to the data: name any cell by its address (ControlText \"B7\"); set_text on a cell enters its content, read_text gives its formula and value; set_text on the Name Box jumps to a cell or selects a range (A1:B5)",
        range.name()
    )
}

/// Whether a node is a spreadsheet whose children must never be enumerated: a table that
/// manages its descendants and reports a child count below 0 or above `bound`.
pub(crate) fn is_sheet(n: &Node, bound: usize) -> bool {
    let bound = i64::try_from(bound).unwrap_or(i64::MAX);
    n.role == role::TABLE
        && n.has(state::MANAGES_DESCENDANTS)
        && (n.child_count < 0 || i64::from(n.child_count) > bound)
}

/// The control id of a cell of the sheet with control id `sheet_id`.
pub(crate) fn cell_id(sheet_id: &str, row: u32, col: u32) -> String {
    format!("{sheet_id}#{}", cell_address(row, col))
}

/// A cell control id split into the sheet's control id and the cell.
pub(crate) fn split_cell_id(id: &str) -> Option<(&str, (u32, u32))> {
    let (sheet, addr) = id.rsplit_once('#')?;
    Some((sheet, parse_cell(addr)?))
}

/// The content of a cell as `read_text` gives it: the formula and the shown value, or the
/// value alone when the cell holds no formula.
pub(crate) fn cell_content(input_line: Option<&str>, shown: &str) -> String {
    match input_line {
        Some(f) if f.starts_with('=') && f != shown => format!("{f} → {shown}"),
        _ => shown.to_string(),
    }
}

type ObjRef = (String, OwnedObjectPath);

const TABLE_IFACE: &str = "org.a11y.atspi.Table";

/// Column → (x, width) or row → (y, height) of a sheet's grid, in bus coordinates.
type Spans = HashMap<u32, (i32, i32)>;

/// Where a sheet's cells are on the screen: the grid's spans, the offset from bus to screen
/// coordinates, and the window that clips them.
struct Grid<'a> {
    cols: &'a Spans,
    rows: &'a Spans,
    offset: (i32, i32),
    win: Rect,
}

impl Grid<'_> {
    /// Where cell (row, col) is on the screen (not cut to the window); `None` when the
    /// grid's geometry lacks its row or column.
    fn on_screen(&self, row: u32, col: u32) -> Option<Rect> {
        let (&(cx, cw), &(cy, ch)) = (self.cols.get(&col)?, self.rows.get(&row)?);
        Some(Rect {
            x: cx + self.offset.0,
            y: cy + self.offset.1,
            w: cw.max(0) as u32,
            h: ch.max(0) as u32,
        })
    }
}

/// The cells a sheet read asks for: those of `range` in sheet `sheet` of application `bus`,
/// by `deadline`, kept from the last observation while the application's event count is
/// `count`, the ones in `blank` (they show nothing on the screen) not read.
#[derive(Clone, Copy)]
struct Wanted<'a> {
    bus: &'a str,
    sheet: &'a Node,
    range: &'a CellRange,
    deadline: Instant,
    count: Option<u64>,
    blank: &'a HashSet<(u32, u32)>,
}

/// How long a sheet's read waits for the window's capture taken beside it (it usually comes
/// well before: 10–30 ms against the 60 ms of LibreOffice's tree); past it, every cell is
/// read.
const PIXELS_WAIT: Duration = Duration::from_millis(250);

/// Step 3 of `read_sheet`: the cells of `range` that show nothing in the window's capture
/// (apps/inked.rs), once it is taken (bounded by [`PIXELS_WAIT`]); none without a capture.
async fn blank_on_screen(
    pixels: &SheetPixels,
    grid: &Grid<'_>,
    range: &CellRange,
) -> HashSet<(u32, u32)> {
    let mut shot = pixels.shot.clone();
    let taken =
        tokio::time::timeout(PIXELS_WAIT, shot.wait_for(|s| !matches!(s, Shot::Pending))).await;
    let shown = match &taken {
        Ok(Ok(shot)) => match &**shot {
            Shot::Taken(img, area) => Some((img.clone(), *area)),
            Shot::Pending | Shot::Missing => None,
        },
        Ok(Err(_)) | Err(_) => None,
    };
    drop(taken);
    let Some((img, area)) = shown else {
        return HashSet::new();
    };
    let placed: Vec<PlacedCell> = range
        .cells()
        .filter_map(|(r, c)| Some(((r, c), grid.on_screen(r, c)?)))
        .collect();
    inked::blank_cells(&img, area, &pixels.covered, &placed)
}

/// Step 6 of `read_sheet`: the listed cells as controls, each at its place in the grid and
/// clipped to the window (a cell outside it is left out).
fn cell_controls(
    bus: &str,
    sheet_id: &str,
    listed: &[&Cell],
    grid: &Grid<'_>,
    xid: WinId,
) -> Vec<Fetched> {
    let mut out = Vec::new();
    for c in listed {
        let Some(raw) = grid.on_screen(c.row, c.col) else {
            continue;
        };
        let Some(rect) = intersect(raw, grid.win) else {
            continue;
        };
        let name = cell_address(c.row, c.col);
        let value = (!c.text.is_empty()).then(|| clip(&c.text, CELL_VALUE_MAX));
        out.push(fetched(
            cell_id(sheet_id, c.row, c.col),
            "table cell",
            name,
            value,
            rect,
            CtlInfo {
                place: Default::default(),
                bus: bus.to_string(),
                path: c.path.clone(),
                name: cell_address(c.row, c.col),
                rect,
                actions: Vec::new(),
                ifaces: iface::TEXT | iface::COMPONENT | iface::VALUE,
                states: 0,
                window: xid,
                // a cell's name is its address; only its role is compared before acting
                seen: crate::controls::Seen {
                    role: crate::vocab::role::TABLE_CELL,
                    name: cell_address(c.row, c.col),
                    label: 0,
                },
                part: None,
                shown_on_hover: false,
            },
        ));
    }
    out
}

/// Step 7 of `read_sheet`: the sheet itself as a control, its value the summary of what is
/// visible.
fn sheet_control(
    bus: &str,
    sheet: &Node,
    sheet_id: String,
    summary: String,
    rect: Rect,
    xid: WinId,
) -> Fetched {
    let name = crate::names::clean_name(&sheet.name, &sheet.description, "");
    fetched(
        sheet_id,
        "table",
        name.clone(),
        Some(summary),
        rect,
        CtlInfo {
            place: Default::default(),
            bus: bus.to_string(),
            path: sheet.path.clone(),
            name,
            rect,
            actions: Vec::new(),
            ifaces: sheet.ifaces,
            states: sheet.states,
            window: xid,
            seen: crate::controls::Seen {
                role: sheet.role,
                name: sheet.name.clone(),
                label: 0,
            },
            part: None,
            shown_on_hover: false,
        },
    )
}

/// Reading spreadsheets during an observation: the bus, the bounds of the configuration, the
/// cells read before ([`SheetCache`]) and the office documents' placement fixes.
#[derive(Clone, Copy)]
pub(crate) struct SheetReader<'a> {
    pub bus: &'a A11yBus,
    pub config: &'a LinuxConfig,
    pub sheets: &'a SheetCache,
    pub office: Office<'a>,
}

impl SheetReader<'_> {
    /// The controls of the spreadsheets among the window's nodes: each sheet's visible filled
    /// cells (and the empty ones next to the data), the sheet itself, and the formula input
    /// line; also names the Name Box among `out`. Replaces the warning that the sheet was not
    /// enumerated. `count`: the application's event count at the start of this observation
    /// (`observe::changes`: the cells of the last one are kept while it is the same);
    /// `pixels`: the window's capture, once taken (the cells that show nothing in it are not
    /// read: apps/inked.rs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn sheet_controls(
        &self,
        bus: &str,
        tree: &AppTree,
        frame: &str,
        (offset, win, xid): ((i32, i32), Rect, WinId),
        (count, pixels): (Option<u64>, Option<&SheetPixels>),
        out: &mut Vec<Fetched>,
        warnings: &mut Vec<String>,
    ) {
        let bound = self.config.walk_max_children;
        let sheets: Vec<Node> = tree
            .subtree(frame, self.config.walk_max_nodes)
            .into_iter()
            .filter(|n| is_sheet(n, bound) && n.has(state::SHOWING) && n.has(state::VISIBLE))
            .cloned()
            .collect();
        if sheets.is_empty() {
            return;
        }
        // a fresh LibreOffice window reports the extents under its root pane shifted
        // (office.rs): the sheet's correction applies to its cells (the formula bar, outside
        // that part of the tree, is reported where it is)
        let refs: Vec<&Node> = sheets.iter().collect();
        let fixes = self
            .office
            .extent_corrections(bus, tree, frame, &refs, &HashMap::new())
            .await
            .fixes;
        for sheet in &sheets {
            let (dx, dy) = fixes.get(&sheet.path).copied().unwrap_or((0, 0));
            let offset = (offset.0 + dx, offset.1 + dy);
            let name = crate::names::clean_name(&sheet.name, &sheet.description, "");
            let refused = format!("table {:?} (", name);
            warnings.retain(|w| !w.starts_with(&refused));
            match self
                .read_sheet(bus, sheet, (offset, win, xid), (count, pixels))
                .await
            {
                Ok(mut cells) => out.append(&mut cells),
                Err(e) => warnings.push(format!(
                    "the visible cells of sheet {name:?} could not be read ({e}): they are not listed; name a cell by its address or use the Name Box"
                )),
            }
        }
        let t = Instant::now();
        let bar = self.formula_bar(bus, tree, frame, offset, win, xid).await;
        tracing::debug!(
            ms = t.elapsed().as_millis() as u64,
            found = bar.len(),
            "formula bar read"
        );
        for f in bar {
            match out
                .iter_mut()
                .find(|o| o.detail.control.id == f.detail.control.id)
            {
                // named already (a dialog's field): left as it is
                Some(o) if !o.detail.control.name.is_empty() => {}
                Some(o) => *o = f,
                None => out.push(f),
            }
        }
    }

    /// The visible cells of one sheet, then the sheet: the visible range, the grid's geometry,
    /// the cells that show nothing on the screen, the others' texts, the objects of the empty
    /// cells listed, then the controls.
    async fn read_sheet(
        &self,
        bus: &str,
        sheet: &Node,
        (offset, win, xid): ((i32, i32), Rect, WinId),
        (count, pixels): (Option<u64>, Option<&SheetPixels>),
    ) -> Result<Vec<Fetched>, LinuxError> {
        let t0 = Instant::now();
        let deadline = t0 + self.config.walk_budget;
        let (vis, range, cut) = self.visible_range(bus, sheet, offset, win).await?;
        let t_corners = Instant::now();
        let (cols, rows) = self
            .grid_geometry(bus, &sheet.path, &range, deadline)
            .await?;
        let t_grid = Instant::now();
        let grid = Grid {
            cols: &cols,
            rows: &rows,
            offset,
            win,
        };
        let blank = match pixels {
            Some(p) => blank_on_screen(p, &grid, &range).await,
            None => HashSet::new(),
        };
        let t_pixels = Instant::now();
        let wanted = Wanted {
            bus,
            sheet,
            range: &range,
            deadline,
            count,
            blank: &blank,
        };
        let mut cells = self.read_cells(wanted).await?;
        let t_cells = Instant::now();
        let filled: Vec<(u32, u32)> = cells
            .iter()
            .filter(|c| !c.text.trim().is_empty())
            .map(|c| (c.row, c.col))
            .collect();
        let next = cells_next_to_data(&filled, &range);
        self.find_listed(bus, &sheet.path, &mut cells, &next).await;
        self.remember_cell_paths(bus, sheet, &cells);
        let listed: Vec<&Cell> = cells
            .iter()
            .filter(|c| !c.text.trim().is_empty() || next.contains(&(c.row, c.col)))
            .collect();
        tracing::debug!(
            range = %range.name(),
            cells = cells.len(),
            blank = blank.len(),
            unread = cells.iter().filter(|c| c.unread).count(),
            corners_ms = (t_corners - t0).as_millis() as u64,
            geometry_ms = (t_grid - t_corners).as_millis() as u64,
            pixels_ms = (t_pixels - t_grid).as_millis() as u64,
            texts_ms = (t_cells - t_pixels).as_millis() as u64,
            listed_ms = t_cells.elapsed().as_millis() as u64,
            "sheet read"
        );
        let sheet_id = format!("{bus}{}", sheet.path);
        let mut out = cell_controls(bus, &sheet_id, &listed, &grid, xid);
        tracing::debug!(
            cols = cols.len(),
            rows = rows.len(),
            listed = listed.len(),
            out = out.len(),
            "sheet controls"
        );
        let rect = Rect {
            x: vis.x + offset.0,
            y: vis.y + offset.1,
            ..vis
        };
        let summary = sheet_summary(&range, filled.len(), cut);
        out.push(sheet_control(bus, sheet, sheet_id, summary, rect, xid));
        Ok(out)
    }

    /// Step 1 of [`Self::read_sheet`]: the sheet's part inside the window (bus coordinates)
    /// and the cells there, from the cells at its two corners (two hit tests); whether the
    /// range was cut to [`MAX_ROWS`] × [`MAX_COLS`].
    async fn visible_range(
        &self,
        bus: &str,
        sheet: &Node,
        offset: (i32, i32),
        win: Rect,
    ) -> Result<(Rect, CellRange, bool), LinuxError> {
        let (x, y, w, h) = self.bus.extents(bus, &sheet.path).await?;
        let raw_win = Rect {
            x: win.x - offset.0,
            y: win.y - offset.1,
            ..win
        };
        let table_rect = Rect {
            x,
            y,
            w: w.max(0) as u32,
            h: h.max(0) as u32,
        };
        let vis = intersect(table_rect, raw_win).ok_or_else(|| {
            LinuxError::ActionFailed("the sheet is outside the window".to_string())
        })?;
        let corner = |px: i32, py: i32| async move {
            let r: ObjRef = self
                .bus
                .call(
                    bus,
                    &sheet.path,
                    "org.a11y.atspi.Component",
                    "GetAccessibleAtPoint",
                    &(px, py, 0u32),
                )
                .await?;
            self.cell_position(bus, &sheet.path, r.1.as_str()).await
        };
        let (tl, br) = tokio::join!(
            corner(vis.x + 1, vis.y + 1),
            corner(vis.x + vis.w as i32 - 2, vis.y + vis.h as i32 - 2)
        );
        let (range, cut) = CellRange::between(tl?, br?, MAX_ROWS, MAX_COLS);
        Ok((vis, range, cut))
    }

    /// Step 4 of [`Self::read_sheet`]: every visible cell with its text, all at once, bounded
    /// by `deadline`, but those in `blank` (they show nothing: taken as empty, not read). The
    /// cells of the last observation are taken again when LibreOffice sent no event since;
    /// otherwise the cell objects of earlier observations are asked again (they follow their
    /// cell's content), and only cells never seen before are looked up.
    async fn read_cells(&self, wanted: Wanted<'_>) -> Result<Vec<Cell>, LinuxError> {
        let Wanted {
            bus,
            sheet,
            range,
            deadline,
            count,
            blank,
        } = wanted;
        let key = (bus.to_string(), sheet.path.clone());
        if let Some(cells) = self.kept_read(wanted).await {
            return Ok(cells);
        }
        let known = self.sheets.known_paths(bus, &sheet.path, range.cells());
        let known = &known;
        let read = futures::future::join_all(range.cells().map(|(r, c)| async move {
            let path = known.get(&(r, c));
            if blank.contains(&(r, c)) {
                return Ok(Cell {
                    row: r,
                    col: c,
                    path: path.cloned().unwrap_or_default(),
                    text: String::new(),
                    unread: true,
                });
            }
            if let Some(path) = path {
                if let Ok(text) = self.bus.text(bus, path).await {
                    return Ok(Cell {
                        row: r,
                        col: c,
                        path: path.clone(),
                        text,
                        unread: false,
                    });
                }
            }
            let path = cell_path(self.bus, bus, &sheet.path, r, c).await?;
            let text = self.bus.text(bus, &path).await.unwrap_or_default();
            Ok::<_, LinuxError>(Cell {
                row: r,
                col: c,
                path,
                text,
                unread: false,
            })
        }));
        let remaining = deadline.saturating_duration_since(Instant::now());
        let cells =
            tokio::time::timeout(remaining, read)
                .await
                .map_err(|_| LinuxError::Timeout {
                    what: format!("reading the {} visible cells", range.name()),
                    ms: self.config.walk_budget.as_millis() as u64,
                })?;
        let cells: Vec<Cell> = cells.into_iter().filter_map(Result::ok).collect();
        self.sheets
            .count_read(cells.iter().filter(|c| !c.unread).count());
        self.sheets.keep_cells(key, count, &cells);
        Ok(cells)
    }

    /// A step of [`Self::read_cells`]: the cells of the last observation, when LibreOffice
    /// sent no event since (or only those of ufo's own entries), with the cells that may have
    /// changed and those not read before that do not show nothing now read again; `None`
    /// when there are none or a cell could not be read again (then every cell is read).
    async fn kept_read(&self, w: Wanted<'_>) -> Option<Vec<Cell>> {
        let key = (w.bus.to_string(), w.sheet.path.clone());
        let (cells, mut stale) = self.sheets.kept_cells(&key, w.count?, |cells| {
            cells.len() == w.range.cells().count()
                && cells.iter().all(|c| w.range.contains((c.row, c.col)))
        })?;
        stale.extend(
            cells
                .iter()
                .filter(|c| c.unread && !w.blank.contains(&(c.row, c.col)))
                .map(|c| (c.row, c.col)),
        );
        if stale.is_empty() {
            return Some(cells);
        }
        // after ufo's own entries: only the cells that may have changed (sheets.rs)
        let Some(cells) = self
            .read_again(w.bus, &w.sheet.path, cells, &stale, w.deadline)
            .await
        else {
            tracing::debug!("kept cells: a cell could not be read again; reading them all");
            return None;
        };
        self.sheets.keep_refreshed(key, w.count, &cells);
        Some(cells)
    }

    /// The texts of the `stale` cells among `cells` read again (through the objects kept
    /// with them, which follow their cell's content; a cell not read before is looked up),
    /// bounded by `deadline`; `None` when a read failed (then every cell is read).
    async fn read_again(
        &self,
        bus: &str,
        sheet: &str,
        mut cells: Vec<Cell>,
        stale: &BTreeSet<(u32, u32)>,
        deadline: Instant,
    ) -> Option<Vec<Cell>> {
        let which: Vec<usize> = (0..cells.len())
            .filter(|&i| stale.contains(&(cells[i].row, cells[i].col)))
            .collect();
        let reads = futures::future::join_all(which.iter().map(|&i| {
            let c = &cells[i];
            async move {
                if !c.path.is_empty() {
                    if let Ok(text) = self.bus.text(bus, &c.path).await {
                        return Ok((c.path.clone(), text));
                    }
                }
                // never asked for, or the cell's object went with its edit: ask the sheet
                let path = cell_path(self.bus, bus, sheet, c.row, c.col).await?;
                let text = self.bus.text(bus, &path).await?;
                Ok::<_, LinuxError>((path, text))
            }
        }));
        let remaining = deadline.saturating_duration_since(Instant::now());
        let texts = tokio::time::timeout(remaining, reads).await.ok()?;
        self.sheets.count_read(which.len());
        for (i, t) in which.into_iter().zip(texts) {
            (cells[i].path, cells[i].text) = t.ok()?;
            cells[i].unread = false;
        }
        tracing::debug!(cells = stale.len(), "kept cells: read again one by one");
        Some(cells)
    }

    /// Step 5 of [`Self::read_sheet`]: the objects of the empty cells listed next to the data
    /// (`next`) that were not asked for (their controls carry them).
    async fn find_listed(&self, bus: &str, sheet: &str, cells: &mut [Cell], next: &[(u32, u32)]) {
        let want: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].path.is_empty() && next.contains(&(cells[i].row, cells[i].col)))
            .collect();
        let paths = futures::future::join_all(
            want.iter()
                .map(|&i| cell_path(self.bus, bus, sheet, cells[i].row, cells[i].col)),
        )
        .await;
        for (i, p) in want.into_iter().zip(paths) {
            if let Ok(p) = p {
                cells[i].path = p;
            }
        }
    }

    /// A step of [`Self::read_sheet`]: remember the cells' objects for the next observation
    /// (bounded, see [`crate::apps::sheets::SheetCache::remember_paths`]).
    fn remember_cell_paths(&self, bus: &str, sheet: &Node, cells: &[Cell]) {
        self.sheets.remember_paths(bus, &sheet.path, cells);
    }

    /// Step 2 of [`Self::read_sheet`]: the grid's geometry from the cells of its first
    /// visible row and column (one call per row and per column, not per cell; their objects
    /// those known, else asked for and remembered): column → (x, width) and row → (y,
    /// height), in bus coordinates.
    async fn grid_geometry(
        &self,
        bus: &str,
        sheet: &str,
        range: &CellRange,
        deadline: Instant,
    ) -> Result<(Spans, Spans), LinuxError> {
        let edges: Vec<(u32, u32)> = range
            .cells()
            .filter(|&(r, c)| r == range.top || c == range.left)
            .collect();
        let known = self.sheets.known_paths(bus, sheet, edges.iter().copied());
        let known = &known;
        let extents = tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(500),
            futures::future::join_all(edges.iter().map(|&(r, c)| async move {
                if let Some(path) = known.get(&(r, c)) {
                    if let Ok(e) = self.bus.extents(bus, path).await {
                        return Ok(e);
                    }
                }
                // never asked for, or the object kept for the cell went away (another client
                // asked LibreOffice for the cell since): ask the sheet for it
                let path = cell_path(self.bus, bus, sheet, r, c).await?;
                let e = self.bus.extents(bus, &path).await?;
                self.sheets
                    .set_cell_path((bus.to_string(), sheet.to_string(), r, c), path);
                Ok::<_, LinuxError>(e)
            })),
        )
        .await
        .map_err(|_| LinuxError::Timeout {
            what: "reading the extents of the visible cells".to_string(),
            ms: self.config.walk_budget.as_millis() as u64,
        })?;
        let mut cols: Spans = HashMap::new();
        let mut rows: Spans = HashMap::new();
        for (&(r, c), e) in edges.iter().zip(extents) {
            let Ok((x, y, w, h)) = e else { continue };
            if r == range.top {
                cols.insert(c, (x, w));
            }
            if c == range.left {
                rows.insert(r, (y, h));
            }
        }
        Ok((cols, rows))
    }

    /// A cell's (row, column): from its name (LibreOffice names cells by address), else from
    /// its index through the Table interface.
    async fn cell_position(
        &self,
        bus: &str,
        sheet: &str,
        cell: &str,
    ) -> Result<(u32, u32), LinuxError> {
        let name: String = self
            .bus
            .prop(bus, cell, "org.a11y.atspi.Accessible", "Name")
            .await?;
        if let Some(p) = parse_cell(&name) {
            return Ok(p);
        }
        let index: i32 = self
            .bus
            .call(
                bus,
                cell,
                "org.a11y.atspi.Accessible",
                "GetIndexInParent",
                &(),
            )
            .await?;
        let arg = (index,);
        let (r, c) = tokio::join!(
            self.bus
                .call::<_, i32>(bus, sheet, TABLE_IFACE, "GetRowAtIndex", &arg),
            self.bus
                .call::<_, i32>(bus, sheet, TABLE_IFACE, "GetColumnAtIndex", &arg)
        );
        match (r?, c?) {
            (r, c) if r >= 0 && c >= 0 => Ok((r as u32, c as u32)),
            _ => Err(LinuxError::ActionFailed(format!(
                "the cell under the sheet's corner ({name:?}) has no row and column"
            ))),
        }
    }

    /// The formula input line (the text inside the panel LibreOffice names "Input line") and
    /// the Name Box (the unnamed one-line text box left of it). LibreOffice's cache files
    /// them under parents it does not list, so they are looked for among all the
    /// application's showing nodes, by where they are: inside this window, on one row.
    async fn formula_bar(
        &self,
        bus: &str,
        tree: &AppTree,
        frame: &str,
        offset: (i32, i32),
        win: Rect,
        xid: WinId,
    ) -> Vec<Fetched> {
        // the window's own nodes (its root pane among them), the frame itself left out
        let inside: HashSet<&str> = tree
            .subtree(frame, self.config.walk_max_nodes)
            .into_iter()
            .skip(1)
            .map(|n| n.path.as_str())
            .collect();
        let Some((line, line_rect)) = self.input_line(bus, tree, &inside, offset, win).await else {
            return Vec::new();
        };
        let text = self.bus.text(bus, &line.path).await.unwrap_or_default();
        let mut out = vec![fetched(
            format!("{bus}{}", line.path),
            "text",
            INPUT_LINE.to_string(),
            Some(text),
            line_rect,
            info(bus, &line, INPUT_LINE, line_rect, xid),
        )];
        let best = self
            .name_box(bus, tree, &inside, (offset, win), line_rect)
            .await;
        if let Some((n, rect)) = best {
            let value = self.bus.text(bus, &n.path).await.ok();
            out.push(fetched(
                format!("{bus}{}", n.path),
                "text",
                NAME_BOX.to_string(),
                value,
                rect,
                info(bus, n, NAME_BOX, rect, xid),
            ));
        }
        out
    }

    /// A step of [`Self::formula_bar`]: the text inside the first "Input line" panel on
    /// the screen that shows and lies inside the window (of at most 8), with the panel's
    /// rectangle.
    async fn input_line(
        &self,
        bus: &str,
        tree: &AppTree,
        inside: &HashSet<&str>,
        offset: (i32, i32),
        win: Rect,
    ) -> Option<(Node, Rect)> {
        let panels: Vec<&Node> = tree
            .nodes
            .values()
            .filter(|n| n.role == role::PANEL && n.name.trim() == INPUT_LINE)
            .take(8)
            .collect();
        for panel in panels {
            let Some(rect) = self
                .bus
                .extents(bus, &panel.path)
                .await
                .ok()
                .and_then(|e| on_screen(e, offset, win))
            else {
                continue;
            };
            let kid = match tree.kids(&panel.path).first() {
                Some(k) => Some(k.clone()),
                None => self
                    .bus
                    .children(bus, &panel.path)
                    .await
                    .ok()
                    .and_then(|k| k.into_iter().next()),
            };
            let Some(kid) = kid else { continue };
            let node = match tree.nodes.get(&kid) {
                Some(n) => Some(n.clone()),
                None => self.bus.node(bus, &kid, &panel.path, 0).await.ok(),
            };
            // the panel itself says "defunct"; the text inside tells whether it shows
            let node = node.filter(|n| n.ifaces & iface::TEXT != 0);
            let Some(node) = node else { continue };
            if self.live_showing(bus, node.path.clone()).await
                && self.under(bus, &panel.path, inside).await
            {
                return Some((node, rect));
            }
        }
        None
    }

    /// A step of [`Self::formula_bar`]: the Name Box: of the unnamed editable one-line text
    /// boxes (at most 40) that show, on the screen, on the input line's row and left of it,
    /// the one nearest the input line that lies inside the window (of the 4 nearest).
    async fn name_box<'t>(
        &self,
        bus: &str,
        tree: &'t AppTree,
        inside: &HashSet<&str>,
        (offset, win): ((i32, i32), Rect),
        line_rect: Rect,
    ) -> Option<(&'t Node, Rect)> {
        let boxes: Vec<&Node> = tree
            .nodes
            .values()
            .filter(|n| {
                n.role == role::TEXT
                    && n.name.trim().is_empty()
                    && n.ifaces & iface::EDITABLE_TEXT != 0
            })
            .take(40)
            .collect();
        let (extents, shown) = tokio::join!(
            futures::future::join_all(boxes.iter().map(|n| self.bus.extents(bus, &n.path))),
            futures::future::join_all(boxes.iter().map(|n| self.live_showing(bus, n.path.clone())))
        );
        let mid = |r: Rect| r.y + r.h as i32 / 2;
        let mut near: Vec<(&Node, Rect)> = boxes
            .into_iter()
            .zip(extents)
            .zip(shown)
            .filter(|(_, shown)| *shown)
            .filter_map(|((n, e), _)| Some((n, e.ok().and_then(|e| on_screen(e, offset, win))?)))
            .filter(|(_, r)| {
                r.x + r.w as i32 <= line_rect.x
                    && (mid(*r) - mid(line_rect)).abs() <= (line_rect.h.max(r.h) / 2) as i32 + 4
            })
            .collect();
        // nearest the input line first; another window's box can sit in the same place
        near.sort_by_key(|(_, r)| std::cmp::Reverse(r.x));
        for (n, r) in near.into_iter().take(4) {
            if self.under(bus, &n.path, inside).await {
                return Some((n, r));
            }
        }
        None
    }

    /// Whether a node shows and is visible, read live: the cache's states of the formula
    /// bar's nodes are stale (it can say "defunct" of a live one).
    async fn live_showing(&self, bus: &str, path: String) -> bool {
        self.bus
            .live_states(bus, &path)
            .await
            .is_some_and(|s| s & state::SHOWING != 0 && s & state::VISIBLE != 0)
    }

    /// Whether a node lies inside the window: one of its live parents is among the window's
    /// nodes (`inside`; the cache's parents are missing for these nodes, and another Calc
    /// window has the same boxes in the same place).
    async fn under(&self, bus: &str, path: &str, inside: &HashSet<&str>) -> bool {
        let mut p = path.to_string();
        for _ in 0..16 {
            let parent: Result<(String, OwnedObjectPath), _> = self
                .bus
                .prop(bus, &p, "org.a11y.atspi.Accessible", "Parent")
                .await;
            match parent {
                Ok((_, next)) if inside.contains(next.as_str()) => return true,
                Ok((_, next)) if next.as_str() != p && next.as_str().starts_with(ACCESSIBLE) => {
                    p = next.as_str().to_string();
                }
                _ => return false,
            }
        }
        false
    }
}

/// A fresh reference to one cell of `sheet` in application `app` (LibreOffice builds a new
/// cell object each time, and keeps it: callers reuse the ones they have).
pub(crate) async fn cell_path(
    bus: &A11yBus,
    app: &str,
    sheet: &str,
    row: u32,
    col: u32,
) -> Result<String, LinuxError> {
    let cell: ObjRef = bus
        .call(
            app,
            sheet,
            TABLE_IFACE,
            "GetAccessibleAt",
            &(row as i32, col as i32),
        )
        .await?;
    Ok(cell.1.as_str().to_string())
}

/// Extents (bus coordinates) moved to the screen by `offset` and cut to the window `win`;
/// `None` outside it.
fn on_screen((x, y, w, h): (i32, i32, i32, i32), offset: (i32, i32), win: Rect) -> Option<Rect> {
    intersect(
        Rect {
            x: x + offset.0,
            y: y + offset.1,
            w: w.max(0) as u32,
            h: h.max(0) as u32,
        },
        win,
    )
}

fn info(bus: &str, n: &Node, name: &str, rect: Rect, xid: WinId) -> CtlInfo {
    CtlInfo {
        place: Default::default(),
        bus: bus.to_string(),
        path: n.path.clone(),
        name: name.to_string(),
        rect,
        actions: Vec::new(),
        ifaces: n.ifaces,
        states: n.states,
        window: xid,
        seen: crate::controls::Seen {
            role: n.role,
            name: n.name.clone(),
            label: 0,
        },
        part: None,
        shown_on_hover: false,
    }
}

fn fetched(
    id: String,
    role: &str,
    name: String,
    value: Option<String>,
    rect: Rect,
    info: CtlInfo,
) -> Fetched {
    let states = if info.states & state::EDITABLE != 0 {
        vec!["editable"]
    } else {
        Vec::new()
    };
    Fetched {
        detail: ControlDetail {
            control: Control {
                source: Default::default(),
                id,
                role: role.to_string(),
                name,
                value,
                rect,
                enabled: true,
                states: Default::default(),
            },
            states,
            actions: Vec::new(),
        },
        info,
        by_container: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 11, item 2: cells are named by their address, columns past Z included.
    #[test]
    fn addresses_and_column_letters() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(27), "AB");
        assert_eq!(column_name(51), "AZ");
        assert_eq!(column_name(52), "BA");
        assert_eq!(column_name(701), "ZZ");
        assert_eq!(column_name(702), "AAA");
        assert_eq!(column_name(SHEET_COLS - 1), "XFD");
        assert_eq!(cell_address(6, 1), "B7");
        for (r, c) in [(0, 0), (6, 1), (99, 26), (1_048_575, 16_383), (41, 702)] {
            assert_eq!(parse_cell(&cell_address(r, c)), Some((r, c)));
        }
        assert_eq!(parse_cell("$aa$10"), Some((9, 26)));
        assert_eq!(parse_cell("XFE1"), None, "past the last column");
        assert_eq!(parse_cell("A1048577"), None);
        assert_eq!(parse_cell("Sheet1"), None);
        assert_eq!(parse_cell("A"), None);
        assert_eq!(
            split_cell_id(":1.42/org/a11y/atspi/accessible/7#AB12"),
            Some((":1.42/org/a11y/atspi/accessible/7", (11, 27)))
        );
        assert_eq!(split_cell_id(":1.42/org/a11y/atspi/accessible/7"), None);
        assert_eq!(
            cell_id(":1.4/p", 6, 1),
            ":1.4/p#B7",
            "the same id as the engine gives an unlisted cell"
        );
    }

    /// The visible range from its two corner cells, cut to the bound.
    #[test]
    fn the_visible_range_is_bounded() {
        let (r, cut) = CellRange::between((0, 0), (45, 14), MAX_ROWS, MAX_COLS);
        assert_eq!(r.name(), "A1:O46");
        assert!(!cut);
        assert_eq!(r.cells().count(), 46 * 15);
        // corners given the other way round, far from A1, wider than the bound
        let (r, cut) = CellRange::between((120, 60), (20, 10), MAX_ROWS, MAX_COLS);
        assert!(cut);
        assert_eq!(r.name(), "K21:AN80");
        assert_eq!(r.cells().count(), (MAX_ROWS * MAX_COLS) as usize);
    }

    /// Only the empty cells next to the data are listed; an empty sheet lists its first cell.
    #[test]
    fn empty_cells_next_to_the_data() {
        let (range, _) = CellRange::between((0, 0), (45, 14), MAX_ROWS, MAX_COLS);
        assert_eq!(cells_next_to_data(&[], &range), vec![(0, 0)]);
        // A1:A5 filled: A6 below, B1..B5 to the right
        let filled: Vec<(u32, u32)> = (0..5).map(|r| (r, 0)).collect();
        let next: Vec<String> = cells_next_to_data(&filled, &range)
            .into_iter()
            .map(|(r, c)| cell_address(r, c))
            .collect();
        assert_eq!(next, ["B1", "B2", "B3", "B4", "B5", "A6"]);
        // a full visible block lists nothing more (the cells beyond are not visible)
        let full: Vec<(u32, u32)> = range.cells().collect();
        assert!(cells_next_to_data(&full, &range).is_empty());
        let s = sheet_summary(&range, 5, false);
        assert!(s.starts_with("cells A1:O46 visible, 5 filled"), "{s}");
        assert!(s.contains("name any cell by its address"), "{s}");
    }

    #[test]
    fn long_cell_values_are_clipped() {
        assert_eq!(clip("15", CELL_VALUE_MAX), "15");
        let long = "é".repeat(300);
        let c = clip(&long, CELL_VALUE_MAX);
        assert!(
            c.len() <= CELL_VALUE_MAX + '…'.len_utf8() && c.ends_with('…'),
            "{c}"
        );
    }

    #[test]
    fn read_text_gives_formula_and_value() {
        assert_eq!(cell_content(Some("=SUM(A1:A5)"), "15"), "=SUM(A1:A5) → 15");
        assert_eq!(cell_content(Some("7"), "7"), "7");
        assert_eq!(cell_content(None, "7"), "7");
        assert_eq!(cell_content(Some("=\"a\""), "a"), "=\"a\" → a");
    }

    #[test]
    fn only_huge_tables_that_manage_their_descendants_are_sheets() {
        let n = |count, states| Node {
            path: "/s".into(),
            parent: "/p".into(),
            index: 0,
            child_count: count,
            ifaces: 0,
            name: "Sheet Sheet1".into(),
            role: role::TABLE,
            description: String::new(),
            states,
        };
        let m = state::MANAGES_DESCENDANTS;
        assert!(is_sheet(&n(-1, m), 2000));
        assert!(is_sheet(&n(i32::MAX, m), 2000));
        assert!(!is_sheet(&n(12, m), 2000));
        assert!(!is_sheet(&n(i32::MAX, 0), 2000));
    }
}
