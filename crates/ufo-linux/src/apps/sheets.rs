//! The spreadsheet cells read before (`table` reads through it): which object each cell
//! is (LibreOffice keeps every cell object it hands out, so asking it again is cheaper than
//! finding it), and the cells of the last observation with the event count they were read
//! at (taken again while LibreOffice sent no event since).

use std::collections::HashMap;
use std::sync::Mutex;

/// Most cell references remembered between observations (then forgotten all at once).
const MAX_KNOWN_CELLS: usize = 50_000;

/// A cell read from the sheet.
#[derive(Clone)]
pub(crate) struct Cell {
    pub row: u32,
    pub col: u32,
    pub path: String,
    pub text: String,
}

/// (bus, sheet path, row, column): one cell of one sheet.
pub(crate) type CellKey = (String, String, u32, u32);

/// (bus, sheet path): one sheet.
pub(crate) type SheetKey = (String, String);

/// Spreadsheet cells read before, behind a lock of their own.
#[derive(Default)]
pub(crate) struct SheetCache(Mutex<Cells>);

#[derive(Default)]
struct Cells {
    /// cell → its object's path
    paths: HashMap<CellKey, String>,
    /// sheet → the cells read last, with the event count they were read at
    kept: HashMap<SheetKey, (u64, Vec<Cell>)>,
}

impl SheetCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Cells> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The known paths of these cells of a sheet: (row, column) → path.
    pub(crate) fn known_paths(
        &self,
        bus: &str,
        sheet: &str,
        cells: impl Iterator<Item = (u32, u32)>,
    ) -> HashMap<(u32, u32), String> {
        let st = self.lock();
        cells
            .filter_map(|(r, c)| {
                st.paths
                    .get(&(bus.to_string(), sheet.to_string(), r, c))
                    .map(|p| ((r, c), p.clone()))
            })
            .collect()
    }

    /// The path of one cell, if known.
    pub(crate) fn cell_path(&self, key: &CellKey) -> Option<String> {
        self.lock().paths.get(key).cloned()
    }

    /// Remember the path of one cell.
    pub(crate) fn set_cell_path(&self, key: CellKey, path: String) {
        self.lock().paths.insert(key, path);
    }

    /// Remember the paths of cells read now (at most [`MAX_KNOWN_CELLS`], then forgotten
    /// all at once).
    pub(crate) fn remember_paths(&self, bus: &str, sheet: &str, cells: &[Cell]) {
        let mut st = self.lock();
        if st.paths.len() > MAX_KNOWN_CELLS {
            st.paths.clear();
        }
        for c in cells {
            st.paths.insert(
                (bus.to_string(), sheet.to_string(), c.row, c.col),
                c.path.clone(),
            );
        }
    }

    /// The cells of a sheet read last, when they were read at event count `count` and
    /// `fit` says they are the ones wanted.
    pub(crate) fn kept_cells(
        &self,
        key: &SheetKey,
        count: u64,
        fit: impl Fn(&[Cell]) -> bool,
    ) -> Option<Vec<Cell>> {
        let st = self.lock();
        let (at, cells) = st.kept.get(key)?;
        (*at == count && fit(cells)).then(|| cells.clone())
    }

    /// Keep the cells of a sheet read now at event count `count` (`None`: forget them).
    pub(crate) fn keep_cells(&self, key: SheetKey, count: Option<u64>, cells: &[Cell]) {
        let mut st = self.lock();
        match count {
            Some(n) => {
                st.kept.insert(key, (n, cells.to_vec()));
            }
            None => {
                st.kept.remove(&key);
            }
        }
    }

    /// The cells of `bus` kept at event count `then` still hold at `now` (no event since
    /// changed them).
    pub(crate) fn still_hold(&self, bus: &str, then: u64, now: u64) {
        let mut st = self.lock();
        for ((b, _), (at, _)) in st.kept.iter_mut() {
            if b == bus && *at == then {
                *at = now;
            }
        }
    }
}
