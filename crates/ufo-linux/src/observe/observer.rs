//! The observation's parts ([`Observer`], borrowed from the desktop), how it is taken
//! ([`Pace`]), and what it gives ([`Observation`], [`FullObservation`], [`ObservationStats`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ufo_core::vision::RegionImage;
use ufo_core::WindowObservation;

use super::changes::KeptTrees;
use super::loading::LoadFacts;
pub(crate) use super::loading::Pace;
use super::places::KeptPlaces;
use crate::a11y::apps::KnownApps;
use crate::a11y::bus::A11yBus;
use crate::a11y::nodecache::KnownNodes;
use crate::apps::menus::Menus;
use crate::apps::office::Office;
use crate::apps::sheets::SheetCache;
use crate::apps::table::SheetReader;
use crate::controls::{ControlDetail, KnownControls, Labelled};
use crate::display::{Display, WinId};
use crate::part::Part;
use crate::LinuxConfig;

/// Every window seen and its process (to follow a window its application replaced: see
/// `successor`).
pub(crate) type SeenWindows = HashMap<WinId, u32>;

/// Where the time of one observation went.
#[derive(Debug, Clone, Default)]
pub struct ObservationStats {
    /// Nodes of the window's tree looked at.
    pub nodes: usize,
    /// Whether the slow walk was needed (incomplete cache).
    pub walked: bool,
    /// Tree (GetItems + walk) time.
    pub tree: Duration,
    /// Per-control details (extents, actions, text) time.
    pub details: Duration,
    /// Screen capture time (runs alongside the tree).
    pub capture: Duration,
    /// Annotation and PNG encoding time.
    pub encode: Duration,
    /// Whole observation.
    pub total: Duration,
    /// Time from the start of the observation to the end of the wait for a loading page or
    /// document (0 when it was not loading); the window was read after it.
    pub load_wait: Duration,
    /// Times a traversal reached a node it had reached already (a stale or circular parent
    /// link): such a node is neither read nor listed again.
    pub repeats: usize,
    /// Nodes read live more than once by the walk: 0 (the walk reads each node once).
    pub read_twice: usize,
    /// The walk stopped at its budget (time or nodes): the read may lack controls.
    pub walk_cut: bool,
    /// Nodes the walk took from the application's announcements of what it exported (GTK 4)
    /// instead of reading them.
    pub announced: usize,
    /// Nodes inside the window's web documents (0: the page shows nothing to accessibility).
    pub document_nodes: usize,
    /// Candidate controls inside the window's web documents, and how many of them were on
    /// screen: a page laid out for accessibility late (Firefox's first read of a new
    /// window) has candidates and none on screen.
    pub document_candidates: usize,
    /// See [`Self::document_candidates`].
    pub document_controls: usize,
    /// Controls read in the pixels and listed after the tree's (docs/sight.md).
    pub detected: usize,
    /// Time spent reading the pixels (0 when they were not read).
    pub sight: Duration,
    /// Sight read this window's pixels (`when_to_detect` said so): a window with too few
    /// controls, a silent region, `read_pixels`, or `[vision] mode = always`. Only such
    /// windows get the change evidence in pixels.
    pub pixels_read: bool,
    /// Time spent on the change evidence in pixels: the comparison with the capture before
    /// the last action and the reads of what changed (0 when not compared).
    pub pixel_evidence: Duration,
}

/// A full observation: what the engine gets plus details for `inspect` and benchmarks.
pub struct FullObservation {
    /// What the engine gets.
    pub observation: WindowObservation,
    /// The same controls with states and actions, in label order.
    pub details: Vec<ControlDetail>,
    /// Timings.
    pub stats: ObservationStats,
}

/// An observation and the controls it labelled, not handed out yet: its labels count for the
/// actions once it is ([`KnownControls::install`]).
pub(crate) struct Observation {
    /// What was observed.
    pub full: FullObservation,
    /// The window and its controls by label.
    pub labelled: (WinId, Labelled),
}

/// The windows whose next observation reads the whole window's pixels because the model
/// asked (`read_pixels`, docs/sight.md), each taken by that observation.
#[derive(Debug, Default)]
pub(crate) struct PixelsAsked(std::collections::HashSet<WinId>);

impl PixelsAsked {
    /// The model asked to read window `w`'s pixels.
    pub(crate) fn ask(&mut self, w: WinId) {
        self.0.insert(w);
    }

    /// Whether it asked for window `w` (the ask is used up).
    pub(crate) fn take(&mut self, w: WinId) -> bool {
        self.0.remove(&w)
    }
}

/// Most windows whose last capture is kept for the change evidence (a capture of a
/// 1280×800 window holds 3 MB).
const TRAIL_WINDOWS: usize = 4;

/// The windows' captures around actions, for the change evidence in pixels
/// (`ufo_core::vision::pixel_changes`, read in `sight`): each window's last capture, the one
/// before the last action on it (kept until the engine is handed the observation after it),
/// and where the actions last put the pointer.
#[derive(Default)]
pub(crate) struct PixelTrail {
    last: HashMap<WinId, (u64, RegionImage)>,
    before: HashMap<WinId, RegionImage>,
    pointer: Option<(i32, i32)>,
    seq: u64,
}

impl PixelTrail {
    /// An action on window `w` starts: its last capture is the one compared after it.
    pub(crate) fn acted(&mut self, w: WinId) {
        match self.last.get(&w) {
            Some((_, img)) => {
                self.before.insert(w, img.clone());
            }
            None => {
                self.before.remove(&w);
            }
        }
    }

    /// The pointer was put at screen point (`x`, `y`).
    pub(crate) fn pointed(&mut self, x: i32, y: i32) {
        self.pointer = Some((x, y));
    }

    /// Where the actions last put the pointer.
    pub(super) fn pointer(&self) -> Option<(i32, i32)> {
        self.pointer
    }

    /// The engine was handed an observation of `w`: its evidence is told.
    pub(crate) fn handed_out(&mut self, w: WinId) {
        self.before.remove(&w);
    }

    /// Window `w` was captured as `now`; the capture before its last action, if any.
    pub(super) fn seen(&mut self, w: WinId, now: RegionImage) -> Option<RegionImage> {
        self.seq += 1;
        self.last.insert(w, (self.seq, now));
        while self.last.len() > TRAIL_WINDOWS {
            let oldest = self
                .last
                .iter()
                .min_by_key(|(_, (s, _))| *s)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.last.remove(&k);
            }
        }
        self.before.get(&w).cloned()
    }
}

/// The observation of one window: what it reads and keeps, borrowed from the desktop. It asks
/// the bus and the display, keeps the trees, cells and load facts it learns for the next
/// observation, and hands its controls to the actions ([`Observer::observe`]).
#[derive(Clone, Copy)]
pub(crate) struct Observer<'a> {
    pub bus: &'a A11yBus,
    pub display: &'a Arc<dyn Display>,
    pub config: &'a LinuxConfig,
    /// what is known of the applications on the bus
    pub apps: &'a KnownApps,
    /// nodes read one by one before
    pub nodes: &'a KnownNodes,
    /// LibreOffice's trees kept from the last observation (`changes`)
    pub kept: &'a KeptTrees,
    /// where LibreOffice's bar controls sat at the last observation (`places`)
    pub places: &'a KeptPlaces,
    /// the spreadsheet cells read before
    pub sheets: &'a SheetCache,
    /// where each window's page or document is read before it is observed (`loading`)
    pub loads: &'a Part<LoadFacts>,
    /// every window seen and its process
    pub windows: &'a Part<SeenWindows>,
    /// the controls the actions use: an observation handed out installs its own
    pub controls: &'a Part<KnownControls>,
    /// the windows whose pixels the model asked to read (`sight`)
    pub pixels_asked: &'a Part<PixelsAsked>,
    /// the windows' captures around actions, for the change evidence in pixels (`sight`)
    pub pixel_trail: &'a Part<PixelTrail>,
}

impl<'a> Observer<'a> {
    /// The apps' readers, over the same parts.
    pub(crate) fn office(&self) -> Office<'a> {
        Office {
            bus: self.bus,
            nodes: self.nodes,
            config: self.config,
        }
    }

    pub(super) fn menus(&self) -> Menus<'a> {
        Menus {
            bus: self.bus,
            config: self.config,
        }
    }

    pub(super) fn sheet_reader(&self) -> SheetReader<'a> {
        SheetReader {
            bus: self.bus,
            config: self.config,
            sheets: self.sheets,
            office: self.office(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ufo_core::vision::PixelFormat;

    fn shot(v: u8) -> RegionImage {
        RegionImage::new((0, 0), 2, 2, PixelFormat::Gray8, vec![v; 4]).expect("image")
    }

    /// The capture compared after an action is the window's last one before it, until the
    /// engine is handed the observation after it; a window never captured has none.
    #[test]
    fn the_trail_compares_with_the_capture_before_the_action() {
        let (w, other) = (WinId(1), WinId(2));
        let mut t = PixelTrail::default();
        t.acted(other);
        assert_eq!(t.seen(other, shot(0)), None, "never captured before");
        assert_eq!(t.seen(w, shot(1)), None, "no action yet");
        t.acted(w);
        t.pointed(5, 6);
        assert_eq!(t.seen(w, shot(2)), Some(shot(1)));
        // an observation taken again before the engine gets one still compares with it
        assert_eq!(t.seen(w, shot(3)), Some(shot(1)));
        t.handed_out(w);
        assert_eq!(t.seen(w, shot(4)), None);
        assert_eq!(t.pointer(), Some((5, 6)));
        for k in 10..20 {
            t.seen(WinId(k), shot(0));
        }
        assert!(t.last.len() <= TRAIL_WINDOWS);
    }
}
