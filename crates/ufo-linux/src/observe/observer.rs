//! The observation's parts ([`Observer`], borrowed from the desktop), how it is taken
//! ([`Pace`]), and what it gives ([`Observation`], [`FullObservation`], [`ObservationStats`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ufo_core::WindowObservation;

use super::changes::KeptTrees;
use super::loading::LoadFacts;
pub(crate) use super::loading::Pace;
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
