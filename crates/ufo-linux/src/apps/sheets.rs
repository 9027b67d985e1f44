//! The spreadsheet cells read before (`table` reads through it): which object each cell
//! is (LibreOffice keeps every cell object it hands out, so asking it again is cheaper than
//! finding it), and the cells of the last observation with the event count they were read
//! at (taken again while LibreOffice sent no event since).
//!
//! After ufo itself entered text into cells (`set_text` on a cell) and LibreOffice sent only
//! the events of such an entry (`observe::changes::entries_only`), the kept cells are
//! brought up to date cell by cell instead of read whole: the cells entered and every cell
//! that showed something ([`to_read_again`]). LibreOffice announces no recalculated cell, but
//! a formula always shows something (its value, an error), so the cells it feeds are among
//! those read again. A change made outside ufo, or any other action of ufo's (keys, clicks,
//! a paste), has every visible cell read again.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most cell references remembered between observations (then forgotten all at once).
const MAX_KNOWN_CELLS: usize = 50_000;

/// A cell read from the sheet.
#[derive(Clone)]
pub(crate) struct Cell {
    pub row: u32,
    pub col: u32,
    /// Its object (empty when not asked for: a cell not read whose object is not known).
    pub path: String,
    pub text: String,
    /// Not read: it showed nothing on the screen (apps/inked.rs), so its text is taken as
    /// empty until an entry into it or a later capture that shows something there.
    pub unread: bool,
}

/// (bus, sheet path, row, column): one cell of one sheet.
pub(crate) type CellKey = (String, String, u32, u32);

/// (row, column) of some cells of one sheet.
pub(crate) type CellSet = BTreeSet<(u32, u32)>;

/// (bus, sheet path): one sheet.
pub(crate) type SheetKey = (String, String);

/// Spreadsheet cells read before, behind a lock of their own.
#[derive(Default)]
pub(crate) struct SheetCache {
    cells: Mutex<Cells>,
    /// cell texts read live so far (for tests and benchmarks: `LinuxDesktop::cells_read`)
    read: AtomicU64,
}

#[derive(Default)]
struct Cells {
    /// cell → its object's path
    paths: HashMap<CellKey, String>,
    /// sheet → the cells read last
    kept: HashMap<SheetKey, KeptCells>,
    /// sheet → the path of its document (its parent)
    documents: HashMap<SheetKey, String>,
}

/// The cells of a sheet read last.
struct KeptCells {
    /// the application's event count they hold at
    at: u64,
    cells: Vec<Cell>,
    /// (row, column) of the cells to read again before they are taken (the rest hold)
    stale: BTreeSet<(u32, u32)>,
    /// the cells ufo entered text into since they were read whole; `None` once ufo did
    /// anything else that may change cells
    entered: Option<BTreeSet<(u32, u32)>>,
    /// when ufo last entered text into one of them
    entered_at: Option<Instant>,
}

/// How long after ufo's last cell entry the events LibreOffice sends are taken for that
/// entry's (it sends them for a while: several observations of one settle may follow it).
/// Past it, an event is someone else's and the sheet is read whole.
pub(crate) const ENTRY_WINDOW: Duration = Duration::from_secs(2);

/// The cells to read again after ufo entered text into `entered`: those, and every cell
/// that showed something (a formula always shows its value or an error, so the cells an
/// entry recalculates are among them; a cell emptied shows nothing after, which reading it
/// finds).
pub(crate) fn to_read_again(kept: &[Cell], entered: &BTreeSet<(u32, u32)>) -> BTreeSet<(u32, u32)> {
    kept.iter()
        .filter(|c| !c.text.trim().is_empty())
        .map(|c| (c.row, c.col))
        .chain(entered.iter().copied())
        .collect()
}

impl SheetCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Cells> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.cells.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `n` cell texts read live.
    pub(crate) fn count_read(&self, n: usize) {
        self.read.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The cell texts read live so far.
    pub(crate) fn read_so_far(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// ufo entered text into cell `cell` of sheet `key` (set_text: the text, Delete, Enter).
    pub(crate) fn note_entry(&self, key: &SheetKey, cell: (u32, u32)) {
        if let Some(k) = self.lock().kept.get_mut(key) {
            if let Some(e) = k.entered.as_mut() {
                e.insert(cell);
                k.entered_at = Some(Instant::now());
            }
        }
    }

    /// ufo did something that may change cells other than the one it entered (keys, a
    /// click, a command): the kept cells are read whole after the next event.
    pub(crate) fn note_other_action(&self) {
        for k in self.lock().kept.values_mut() {
            k.entered = None;
        }
    }

    /// Whether ufo entered text into cells of `bus` since they were read whole, the last
    /// time within [`ENTRY_WINDOW`] before `now`, and did nothing else there.
    pub(crate) fn only_entered(&self, bus: &str, now: Instant) -> bool {
        let st = self.lock();
        let mine: Vec<&KeptCells> = st
            .kept
            .iter()
            .filter(|((b, _), _)| b == bus)
            .map(|(_, k)| k)
            .collect();
        !mine.is_empty()
            && mine.iter().all(|k| k.entered.is_some())
            && mine.iter().any(|k| {
                k.entered.as_ref().is_some_and(|e| !e.is_empty())
                    && k.entered_at
                        .is_some_and(|t| now.saturating_duration_since(t) < ENTRY_WINDOW)
            })
    }

    /// The cells of `bus` kept at event count `then` hold at `now` except the ones ufo
    /// entered and those that showed something ([`to_read_again`]), which are read again.
    pub(crate) fn hold_except(&self, bus: &str, then: u64, now: u64) {
        let mut st = self.lock();
        for ((b, _), k) in st.kept.iter_mut() {
            if b != bus || k.at != then {
                continue;
            }
            let Some(entered) = k.entered.as_ref() else {
                continue;
            };
            let again = to_read_again(&k.cells, entered);
            k.stale.extend(again);
            k.at = now;
        }
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

    /// The path of the document holding a sheet, if known.
    pub(crate) fn document_of(&self, key: &SheetKey) -> Option<String> {
        self.lock().documents.get(key).cloned()
    }

    /// Remember the path of the document holding a sheet.
    pub(crate) fn set_document_of(&self, key: SheetKey, doc: String) {
        let mut st = self.lock();
        if st.documents.len() > 64 {
            st.documents.clear();
        }
        st.documents.insert(key, doc);
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
        for c in cells.iter().filter(|c| !c.path.is_empty()) {
            st.paths.insert(
                (bus.to_string(), sheet.to_string(), c.row, c.col),
                c.path.clone(),
            );
        }
    }

    /// The cells of a sheet read last, when they hold at event count `count` and `fit` says
    /// they are the ones wanted, with the cells among them to read again.
    pub(crate) fn kept_cells(
        &self,
        key: &SheetKey,
        count: u64,
        fit: impl Fn(&[Cell]) -> bool,
    ) -> Option<(Vec<Cell>, CellSet)> {
        let st = self.lock();
        let k = st.kept.get(key)?;
        (k.at == count && fit(&k.cells)).then(|| (k.cells.clone(), k.stale.clone()))
    }

    /// Keep the cells of a sheet read whole now at event count `count` (`None`: forget
    /// them).
    pub(crate) fn keep_cells(&self, key: SheetKey, count: Option<u64>, cells: &[Cell]) {
        self.keep(key, count, cells, false);
    }

    /// Keep the cells of a sheet brought up to date cell by cell after ufo's entries: the
    /// entries stay noted (LibreOffice goes on sending their events for a while).
    pub(crate) fn keep_refreshed(&self, key: SheetKey, count: Option<u64>, cells: &[Cell]) {
        self.keep(key, count, cells, true);
    }

    fn keep(&self, key: SheetKey, count: Option<u64>, cells: &[Cell], refreshed: bool) {
        let mut st = self.lock();
        match count {
            Some(at) => {
                let (entered, entered_at) = match st.kept.get(&key) {
                    Some(k) if refreshed => (k.entered.clone(), k.entered_at),
                    _ => (Some(BTreeSet::new()), None),
                };
                st.kept.insert(
                    key,
                    KeptCells {
                        at,
                        cells: cells.to_vec(),
                        stale: BTreeSet::new(),
                        entered,
                        entered_at,
                    },
                );
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
        for ((b, _), k) in st.kept.iter_mut() {
            if b == bus && k.at == then {
                k.at = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(row: u32, col: u32, text: &str) -> Cell {
        Cell {
            row,
            col,
            path: format!("/cell/{row}/{col}"),
            text: text.to_string(),
            unread: false,
        }
    }

    #[test]
    fn an_entry_reads_again_the_cell_entered_and_every_cell_that_showed_something() {
        // A1 = 1, A2 = 2, A3 = A1+A2 shows 3, A4 and B1 empty; 42 entered in A1 and 7 in B1
        let kept = [
            cell(0, 0, "1"),
            cell(1, 0, "2"),
            cell(2, 0, "3"),
            cell(3, 0, ""),
            cell(0, 1, " "),
        ];
        let entered: BTreeSet<(u32, u32)> = [(0, 0), (0, 1)].into_iter().collect();
        let again = to_read_again(&kept, &entered);
        assert_eq!(
            again.into_iter().collect::<Vec<_>>(),
            [(0, 0), (0, 1), (1, 0), (2, 0)],
            "the formula in A3 is read again, the empty A4 is not"
        );
    }

    #[test]
    fn kept_cells_are_read_again_only_after_ufos_own_entries() {
        let cache = SheetCache::default();
        let key: SheetKey = (":1.5".into(), "/sheet".into());
        let other: SheetKey = (":1.9".into(), "/sheet".into());
        cache.keep_cells(key.clone(), Some(10), &[cell(0, 0, "1"), cell(1, 0, "")]);
        cache.keep_cells(other.clone(), Some(3), &[cell(0, 0, "x")]);
        let now = Instant::now;
        // nothing entered: a change is someone else's, the cells are read whole
        assert!(!cache.only_entered(":1.5", now()));
        cache.note_entry(&key, (1, 0));
        assert!(cache.only_entered(":1.5", now()));
        assert!(!cache.only_entered(":1.9", now()), "another application");
        assert!(
            !cache.only_entered(":1.5", now() + ENTRY_WINDOW),
            "events long after the entry are someone else's"
        );
        cache.hold_except(":1.5", 10, 14);
        let (cells, stale) = cache.kept_cells(&key, 14, |_| true).expect("kept");
        assert_eq!(cells.len(), 2);
        assert_eq!(stale.into_iter().collect::<Vec<_>>(), [(0, 0), (1, 0)]);
        // refreshed cell by cell: the entry stays noted (LibreOffice's later events of it)
        cache.keep_refreshed(key.clone(), Some(14), &[cell(0, 0, "1"), cell(1, 0, "7")]);
        assert!(cache.only_entered(":1.5", now()));
        let (_, stale) = cache.kept_cells(&key, 14, |_| true).expect("kept");
        assert!(stale.is_empty());
        // read whole: kept anew, nothing entered
        cache.keep_cells(key.clone(), Some(15), &[cell(0, 0, "1"), cell(1, 0, "7")]);
        assert!(!cache.only_entered(":1.5", now()));
        // any other action of ufo's: the next change is read whole
        cache.note_entry(&key, (0, 0));
        cache.note_other_action();
        assert!(!cache.only_entered(":1.5", now()));
        cache.note_entry(&key, (0, 0));
        assert!(
            !cache.only_entered(":1.5", now()),
            "an entry after it does not undo it"
        );
    }
}
