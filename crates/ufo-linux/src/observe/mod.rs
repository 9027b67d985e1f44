//! Observation of one window in one step: the controls an agent can use (through the
//! `Cache.GetItems` fast path, with a bounded walk when the cache is incomplete), the screenshot,
//! and the annotated screenshot.

pub(crate) mod changes;
mod frames;
pub(crate) mod loading;
mod noise;
mod refresh;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ufo_core::{Control, Rect, Screenshot, WindowInfo, WindowObservation};

use crate::a11y::announced::Announced;
use crate::a11y::bus::{AppTree, Node};
use crate::act::modal::{self, ModalityReport};
use crate::apps::office;
use crate::controls::ControlDetail;
use crate::controls::CtlInfo;
use crate::controls::Fetched;
use crate::desktop::LinuxDesktop;
use crate::display::annotate::{self, Mark};
use crate::display::pixels::intersect;
use crate::display::pixels::RgbImage;
use crate::display::{extents_origin, extents_relative, position_unknown, DisplayWindow, WinId};
use crate::names::{self, clean_name, collapse_ws, FieldEvidence, ValueKind};
use crate::vocab::{
    iface, role, role_name, state, ANY_BUTTON, BUTTONS, CHECKABLE, CONTAINERS, FIELDS, INTERACTIVE,
    ITEMS, LISTS, MENU_ITEMS, PAGE_CONTAINERS, RANGES, STATE_LABELS, TABLES, TEXTUAL, WINDOWS,
};
use crate::{LinuxConfig, LinuxError};

/// What [`LinuxDesktop::read_details`] reads of one candidate: its extents (`None` without
/// the component interface), action names, text and value.
type Details = (
    Result<Option<(i32, i32, i32, i32)>, LinuxError>,
    Result<Vec<String>, LinuxError>,
    Result<Option<String>, LinuxError>,
    Option<f64>,
);

/// The most GTK 4 popovers of a window checked for being closed.
const MAX_POPOVERS: usize = 16;

/// Most labels near a field whose relations are asked when the field has none itself.
const MAX_NEAR_LABELS: usize = 8;

/// Relation numbers (`org.a11y.atspi.RelationType`).
const LABEL_FOR: u32 = 1;
const LABELLED_BY: u32 = 2;

/// Every window seen and its process (to follow a window its application replaced: see
/// `successor`).
pub(crate) type SeenWindows = HashMap<WinId, u32>;

/// Most children of one node taken by the walk (lists that manage their descendants can hold
/// thousands of rows).
const MAX_WALK_CHILDREN: usize = 300;

/// Longest value text kept in an observation (the full text is one `read_text` away).
const VALUE_MAX: usize = 2000;

/// Reading order: rows top to bottom (a control joins a row when its top is above the middle
/// of the row's first control), left to right within a row. Returns the permutation.
pub(crate) fn reading_order(rects: &[Rect]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..rects.len()).collect();
    idx.sort_by_key(|&i| (rects[i].y, rects[i].x, i));
    let mut out = Vec::with_capacity(idx.len());
    let mut row: Vec<usize> = Vec::new();
    let mut anchor: Option<Rect> = None;
    for i in idx {
        let r = rects[i];
        let joins = anchor.is_some_and(|a| {
            let half = (a.h.min(r.h) / 2).max(1) as i32;
            r.y < a.y + half
        });
        if !joins {
            row.sort_by_key(|&j| (rects[j].x, rects[j].y, j));
            out.append(&mut row);
            anchor = Some(r);
        }
        row.push(i);
    }
    row.sort_by_key(|&j| (rects[j].x, rects[j].y, j));
    out.append(&mut row);
    out
}

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

struct Candidate {
    node: Node,
    child_text: String,
    /// A button among its descendants (GTK4's inert wrapper around menu buttons).
    wraps_button: bool,
    /// A combo box's chosen option (web content gives no readable text for it).
    choice: Option<String>,
    /// A field's evidence from the tree, for its name (`None`: not a field).
    field: Option<FieldSeed>,
    /// A table cell's table (its row is one control: noise.rs).
    table: Option<String>,
    /// A display: its name is what it shows (KCalc's result), its description its name.
    display: bool,
}

/// What the tree tells of a field's name (the labels that may point at it are asked by
/// `fetch_control`, and only when its own name may not be one).
struct FieldSeed {
    beside: Option<String>,
    parent: Option<String>,
    /// Labels near it (path, text): the ones a `LABEL_FOR` relation may come from.
    near_labels: Vec<(String, String)>,
    /// Its parent when that is an unnamed wrapper around it alone: a label pointing at the
    /// wrapper names it (LibreOffice's sidebar list boxes, a button inside a filler).
    wrapper: Option<String>,
}

impl LinuxDesktop {
    /// Observe a window (engine view).
    pub(crate) async fn observe_window(
        &self,
        window_id: &str,
    ) -> Result<WindowObservation, LinuxError> {
        Ok(self.observe_with(window_id, false).await?.observation)
    }

    /// Observe a window with details (action names included) and timings.
    pub async fn observe_full(&self, window_id: &str) -> Result<FullObservation, LinuxError> {
        self.observe_with(window_id, true).await
    }

    /// Observe a window; `with_actions` also fetches every control's action names (for
    /// `inspect`; the engine's observation leaves them to the action that needs them).
    ///
    /// The steps: find the window and its dialogs (raising it), then read its controls and
    /// capture it at the same time, put the controls in reading order without what a dialog
    /// covers, draw the labels, and remember the controls for the actions.
    pub async fn observe_with(
        &self,
        window_id: &str,
        with_actions: bool,
    ) -> Result<FullObservation, LinuxError> {
        let t0 = Instant::now();
        let located = self.locate(window_id).await?;
        // is the page or document still loading (loading.rs)? Asked while the window is read,
        // so that a loaded window costs nothing; a loading one is waited for (bounded), then
        // found and read again (its title, its size, its content may have changed)
        let (first, read) = tokio::join!(
            self.load_first_look(&located.main),
            self.read_located(&located, with_actions)
        );
        let mut load_wait = Duration::ZERO;
        let (mut located, mut load, mut read) = match first? {
            Some(load) => (located, load, read),
            None => {
                let load = self.wait_loaded(&located.main).await?;
                load_wait = t0.elapsed();
                let located = self.locate(window_id).await?;
                let read = self.read_located(&located, with_actions).await;
                (located, load, read)
            }
        };
        // LibreOffice maps a document window before it puts the document in it (the read
        // found none): read again, bounded (loading.rs)
        while self.office_unbuilt(&located.main, t0) {
            if self.controls.lock().prefetching {
                return Err(LinuxError::ActionFailed(
                    "the document is not in its window yet: observed once it is".into(),
                ));
            }
            tokio::time::sleep(loading::OFFICE_POLL).await;
            load = self.wait_loaded(&located.main).await?;
            load_wait = t0.elapsed();
            located = self.locate(window_id).await?;
            read = self.read_located(&located, with_actions).await;
        }
        // a loaded page whose controls the read found none of on screen (Firefox lays a new
        // window's page out for accessibility after it has loaded): read again, a few times
        // at most and within the load wait
        let mut rereads = 0;
        while loading::page_missed(
            load.pages,
            read.1.stats.document_candidates,
            read.1.stats.document_controls,
        ) && rereads < loading::PAGE_REREADS
            && t0.elapsed() < self.config.load_wait
        {
            rereads += 1;
            tracing::debug!(rereads, "the loaded page is not in the read: reading again");
            tokio::time::sleep(loading::PAGE_REREAD_PAUSE).await;
            located = self.locate(window_id).await?;
            read = self.read_located(&located, with_actions).await;
            load_wait = t0.elapsed();
        }
        // a loaded page whose walk stopped at its budget (a browser just started on its page
        // still answers slowly: Firefox's first walk of `about:preferences` took over 3 s
        // under load, its next one 0.6 s): read once more, within the load wait
        if loading::cut_page(load.pages, read.1.stats.walk_cut)
            && t0.elapsed() < self.config.load_wait
        {
            tracing::debug!("the walk of a loaded page stopped at its budget: reading again");
            located = self.locate(window_id).await?;
            read = self.read_located(&located, with_actions).await;
            load_wait = t0.elapsed();
        }
        // a window whose accessible frame is not there yet (a popup being built): read again
        // within the load wait, then show it without controls, with the warning, rather
        // than another window's controls
        while read.1.frame_missing && t0.elapsed() < self.config.load_wait {
            tracing::debug!("the window's accessible frame is not found yet: reading again");
            tokio::time::sleep(loading::FRAME_POLL).await;
            located = self.locate(window_id).await?;
            read = self.read_located(&located, with_actions).await;
        }
        if self.office_unbuilt_after(&located.main) {
            load.notes.push(loading::gave_up_note(
                loading::Loading::NotBuilt,
                t0.elapsed(),
            ));
        }
        let ((img, capture_time), read) = read;
        let Located {
            main,
            attached,
            area,
            warnings: _,
            windows: _,
        } = located;
        let ReadWindows {
            groups,
            mut warnings,
            mut stats,
            main_bus,
            modal,
            frame_missing: _,
        } = read;
        if let Some(title) = &modal {
            warnings.push(format!(
                "the modal dialog {title:?} is open: the controls of the window under it are not \
                 listed (it takes no input until the dialog is closed)"
            ));
        }
        stats.capture = capture_time;
        stats.load_wait = load_wait;
        warnings.extend(load.notes);
        let fetched = arrange(groups, &attached, modal.is_some());
        if fetched.is_empty() && main_bus.is_some() {
            warnings.extend(established_hint(main.pid, stats.document_nodes));
        }
        let t_enc = Instant::now();
        let (screenshot, annotated) =
            labelled_screenshots(img, &fetched, area.unwrap_or_default(), &mut warnings).await;
        stats.encode = t_enc.elapsed();
        self.remember_controls(main.id, &fetched);
        let window = self.window_info(&main, main_bus).await;
        let details: Vec<ControlDetail> = fetched.into_iter().map(|f| f.detail).collect();
        stats.total = t0.elapsed();
        tracing::debug!(
            tree_ms = stats.tree.as_secs_f64() * 1e3,
            details_ms = stats.details.as_secs_f64() * 1e3,
            capture_ms = stats.capture.as_secs_f64() * 1e3,
            encode_ms = stats.encode.as_secs_f64() * 1e3,
            load_wait_ms = stats.load_wait.as_secs_f64() * 1e3,
            total_ms = stats.total.as_secs_f64() * 1e3,
            "observation phases"
        );
        Ok(FullObservation {
            observation: WindowObservation {
                window,
                controls: details.iter().map(|d| d.control.clone()).collect(),
                screenshot,
                annotated,
                warnings,
            },
            details,
            stats,
        })
    }

    /// Steps 2 and 3 of a located window: its capture (and how long it took) and its controls.
    async fn read_located(
        &self,
        located: &Located,
        with_actions: bool,
    ) -> ((Result<RgbImage, LinuxError>, Duration), ReadWindows) {
        let area = located.area;
        let capture = async {
            let t = Instant::now();
            let img = match area {
                Some(area) => self.run(move |d| d.capture(area)).await,
                None => Err(position_unknown(&located.main)),
            };
            (img, t.elapsed())
        };
        let controls = self.read_windows(located, with_actions, located.warnings.clone());
        tokio::join!(capture, controls)
    }

    /// Step 1: the window (or the one that replaced it), its dialogs, and the area they cover
    /// on the screen; the window is raised so that its screenshot shows it (as UFO does).
    async fn locate(&self, window_id: &str) -> Result<Located, LinuxError> {
        let xid = WinId::parse(window_id)?;
        let (all, active) = self.run(|d| Ok((d.windows()?, d.active_window()?))).await?;
        let main = match all.iter().find(|w| w.id == xid) {
            Some(w) => w.clone(),
            None => self
                .successor(xid, &all)
                .ok_or_else(|| LinuxError::NoWindow(window_id.to_string()))?,
        };
        {
            let mut seen = self.windows.lock();
            for w in &all {
                if let Some(pid) = w.pid {
                    seen.insert(w.id, pid);
                }
            }
        }
        let xid = main.id;
        // dialogs that belong to this window are observed with it (they sit on top of it)
        let attached: Vec<DisplayWindow> = all
            .iter()
            .filter(|w| w.transient_for == Some(xid) && w.id != xid)
            .cloned()
            .collect();
        let mut warnings = Vec::new();
        // a session without a window manager has no active window and is left alone
        if let Some(a) = active {
            if a != xid && !attached.iter().any(|d| d.id == a) {
                if let Err(e) = self.activate(xid).await {
                    warnings.push(format!("could not raise the window: {e}"));
                }
            }
        }
        // (a window placed nowhere has no area: its screenshot is missing, with a warning)
        let area = match main.area {
            Some(_) => crate::display::pixels::union(
                std::iter::once(&main)
                    .chain(&attached)
                    .filter_map(|w| w.area),
            ),
            None => None,
        };
        let screen = self.display.screen();
        let area = match area {
            Some(area) => Some(intersect(area, screen).ok_or_else(|| {
                LinuxError::ActionFailed(format!(
                    "window {window_id} is entirely off screen; move it onto the screen"
                ))
            })?),
            None => None,
        };
        Ok(Located {
            main,
            attached,
            area,
            warnings,
            windows: all,
        })
    }

    /// Step 2: the controls of the dialogs (first: they are on top and usually what needs an
    /// answer) and of the window, one group each, and the title of a modal dialog among them.
    async fn read_windows(
        &self,
        located: &Located,
        with_actions: bool,
        mut warnings: Vec<String>,
    ) -> ReadWindows {
        let (main, attached) = (&located.main, located.attached.as_slice());
        let mut stats = ObservationStats::default();
        let mut frames: HashMap<WinId, String> = HashMap::new();
        let mut frame_missing = false;
        let pids: Vec<u32> = attached
            .iter()
            .chain(std::iter::once(main))
            .filter_map(|w| w.pid)
            .collect();
        let mut by_pid = self.apps.bus_map(&self.bus, &pids, false).await;
        let mut refreshed = false;
        let mut trees: HashMap<String, AppTree> = HashMap::new();
        let mut groups: Vec<Vec<Fetched>> = Vec::new();
        for w in attached.iter().chain(std::iter::once(main)) {
            let Some(bus) = w.pid.and_then(|p| by_pid.get(&p)).cloned() else {
                let why = crate::launch::toolkit::not_on_bus_hint(w.pid);
                warnings.push(format!(
                    "window {} ({:?}) is not on the accessibility bus: only its screenshot is available ({why})",
                    w.id,
                    w.title
                ));
                continue;
            };
            let sought = Sought {
                window: w,
                windows: &located.windows,
            };
            let mut result = self
                .window_controls(
                    &bus,
                    &sought,
                    with_actions,
                    &mut trees,
                    &mut stats,
                    &mut warnings,
                )
                .await;
            if result.is_err() && !refreshed {
                // the cached bus name may be stale (the application restarted): look again
                refreshed = true;
                by_pid = self.apps.bus_map(&self.bus, &pids, true).await;
                if let Some(bus) = w.pid.and_then(|p| by_pid.get(&p)).cloned() {
                    trees.remove(&bus);
                    result = self
                        .window_controls(
                            &bus,
                            &sought,
                            with_actions,
                            &mut trees,
                            &mut stats,
                            &mut warnings,
                        )
                        .await;
                }
            }
            match result {
                Ok((g, frame)) => {
                    frames.insert(w.id, frame);
                    groups.push(g);
                }
                Err(e) => {
                    frame_missing |= matches!(e, LinuxError::NoFrame { .. });
                    warnings.push(format!(
                        "controls of window {} could not be read: {e}",
                        w.id
                    ))
                }
            }
        }
        let main_bus = main.pid.and_then(|p| by_pid.get(&p)).cloned();
        // a modal dialog on top: the window under it takes no input until it closes
        let mut reports: HashMap<String, ModalityReport> = HashMap::new();
        let mut modal = None;
        for w in attached {
            let bus = w.pid.and_then(|p| by_pid.get(&p));
            let a11y_modal = bus
                .and_then(|b| trees.get(b))
                .and_then(|tree| Some(tree.nodes.get(frames.get(&w.id)?)?.has(state::MODAL)))
                .unwrap_or(false);
            let report = match bus {
                Some(b) => Some(self.modality_report(b, &mut reports).await),
                None => None,
            };
            let facts = modal::Attached {
                transient_for_main: w.transient_for == Some(main.id),
                same_app: main.pid.is_some() && w.pid == main.pid,
                a11y_modal,
                wm_modal: w.wm_modal,
                dialog: w.dialog,
                report,
            };
            if modal::blocks(&facts) {
                modal = Some(w.title.clone());
                break;
            }
        }
        ReadWindows {
            groups,
            warnings,
            stats,
            main_bus,
            modal,
            frame_missing,
        }
    }

    /// What the toolkit of application `bus` says about modality, asked once per
    /// observation.
    async fn modality_report(
        &self,
        bus: &str,
        known: &mut HashMap<String, ModalityReport>,
    ) -> ModalityReport {
        if let Some(r) = known.get(bus) {
            return *r;
        }
        let (name, version) = self.bus.toolkit(bus).await;
        let r = modal::modality_report(&name, &version);
        known.insert(bus.to_string(), r);
        r
    }

    /// Step 5: the controls of this observation, by id, for the actions that name them
    /// (those of the window's earlier observation are forgotten).
    fn remember_controls(&self, xid: WinId, fetched: &[Fetched]) {
        let entries: crate::controls::Labelled = fetched
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut info = f.info.clone();
                info.seen.label = i + 1;
                (f.detail.control.id.clone(), info)
            })
            .collect();
        let mut st = self.controls.lock();
        // an observation made while settling is nobody's yet: its labels count once it is
        // handed out (settle.rs, `take_prefetched`)
        if st.prefetching {
            st.prefetched = Some((xid, entries));
            return;
        }
        st.install(xid, entries);
    }

    /// Step 6: what the engine is told about the window (its application's name from the
    /// bus, else its X class).
    async fn window_info(&self, main: &DisplayWindow, main_bus: Option<String>) -> WindowInfo {
        let by_bus_name = match main_bus {
            Some(bus) => self.apps.name(&self.bus, &bus).await,
            None => None,
        };
        WindowInfo {
            id: main.id.to_string(),
            title: main.title.clone(),
            app_name: by_bus_name
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| main.app_id.clone()),
            process: main
                .pid
                .and_then(crate::launch::process_name)
                .unwrap_or_else(|| main.app_id.clone()),
            pid: main.pid,
            rect: main.area,
        }
    }

    /// The window that took the place of window `xid`, now gone: the only top-level window of
    /// the same process (LibreOffice replaces its start window by the document's window).
    fn successor(&self, xid: WinId, all: &[DisplayWindow]) -> Option<DisplayWindow> {
        let pid = *self.windows.lock().get(&xid)?;
        let mut same: Vec<&DisplayWindow> = all
            .iter()
            .filter(|w| w.pid == Some(pid) && w.transient_for.is_none())
            .collect();
        (same.len() == 1).then(|| same.remove(0).clone())
    }

    /// The accessible frame of window `sought` in its application's tree (frames.rs): the
    /// extents of the top-level windows are read only when their names do not settle it, and
    /// not for a toolkit whose extents are relative to the window.
    async fn frame_of(
        &self,
        bus: &str,
        tree: &AppTree,
        sought: &Sought<'_>,
        relative: bool,
    ) -> Result<String, LinuxError> {
        let w = sought.window;
        let nodes = frames::window_nodes(tree);
        let mut tops: Vec<frames::Top> = nodes.iter().map(|n| frames::top(n, None)).collect();
        let space = self.display.coord_space();
        if !extents_relative(space, relative) && !frames::settled_by_title(&tops, w) {
            let rects = futures::future::join_all(
                nodes
                    .iter()
                    .take(crate::a11y::bus::MAX_WINDOWS)
                    .map(|n| self.bus.extents(bus, &n.path)),
            )
            .await;
            for (t, r) in tops.iter_mut().zip(rects) {
                t.rect = r.ok().map(|(x, y, w, h)| Rect {
                    x,
                    y,
                    w: w.max(0) as u32,
                    h: h.max(0) as u32,
                });
            }
        }
        match frames::choose(&tops, w, sought.windows) {
            Some(c) => {
                tracing::debug!(window = %w.id, frame = %c.path, evidence = ?c.evidence, "frame chosen");
                Ok(c.path)
            }
            None => Err(LinuxError::NoFrame {
                title: w.title.clone(),
                frames: tops.len(),
            }),
        }
    }

    /// The controls of one X window, from its application's tree, and its frame.
    async fn window_controls(
        &self,
        bus: &str,
        sought: &Sought<'_>,
        with_actions: bool,
        trees: &mut HashMap<String, AppTree>,
        stats: &mut ObservationStats,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<Fetched>, String), LinuxError> {
        let w = sought.window;
        let t = Instant::now();
        // LibreOffice's tree of the last observation, when it sent no event since (changes.rs)
        let mut kept_count = None;
        if !trees.contains_key(bus) {
            let (count, kept) = self.kept_tree(bus).await;
            kept_count = Some(count);
            let tree = match kept {
                Some(t) => t,
                None => self.bus.tree(bus).await?,
            };
            trees.insert(bus.to_string(), tree);
        }
        let relative = self.apps.is_relative(&self.bus, bus).await;
        let tree = trees
            .get_mut(bus)
            .ok_or_else(|| LinuxError::ActionFailed("tree vanished".into()))?;
        let frame = self.frame_of(bus, tree, sought, relative).await?;
        let t_items = t.elapsed();
        self.note_loaded_tree(bus, w.id, tree, &frame).await;
        let reading = FreshNodes::for_toolkit(relative);
        let walk = self
            .complete_tree(bus, tree, &frame, true, reading, warnings)
            .await;
        stats.walked |= walk.walked;
        stats.repeats += walk.repeats;
        stats.read_twice += walk.read_twice;
        stats.announced += walk.announced;
        stats.walk_cut |= walk.cut;
        if let Some(count) = kept_count {
            self.kept.keep(bus, count, tree);
        }
        if relative {
            self.drop_closed_popovers(bus, tree, &frame).await;
        }
        let t_walk = t.elapsed();
        // office documents: their visible paragraphs, cells, shapes and slides (office.rs)
        self.office()
            .read_documents(bus, tree, &frame, warnings)
            .await;
        let t_docs = t.elapsed();
        // GTK2: items of an open menu are never SHOWING
        let open_menus = if self.apps.is_gtk2(&self.bus, bus).await {
            let top_menus = crate::apps::menus::top_menus(tree, &frame, self.config.walk_max_nodes);
            self.open_menus(bus, tree, top_menus, false).await
        } else {
            std::collections::HashSet::new()
        };
        let tree = &*tree;
        warnings.extend(crate::launch::toolkit::tree_warnings(
            tree,
            &frame,
            self.config.walk_max_nodes,
        ));
        let subtree_len = tree.subtree(&frame, self.config.walk_max_nodes).len();
        stats.nodes += subtree_len;
        let (candidates, cut, repeats) =
            collect_candidates(tree, &frame, self.config.walk_max_nodes, &open_menus);
        stats.repeats += repeats;
        stats.document_nodes += document_nodes(tree, &frame, self.config.walk_max_nodes);
        if cut {
            warnings.push(format!(
                "the window has more than {} accessible nodes: only the first {} were read, some controls may be missing",
                self.config.walk_max_nodes, self.config.walk_max_nodes
            ));
        }
        stats.tree += t.elapsed();

        let t = Instant::now();
        // (a window placed nowhere: its controls are clipped to the screen)
        let win_rect = w.area.unwrap_or_else(|| self.display.screen());
        // where the controls sit (GTK4's window-relative extents are offset by where the
        // toolkit's window sits; a fresh LibreOffice window reports its own controls shifted,
        // office.rs) is read at the same time as the controls' own details: one round trip to
        // the application instead of two
        let nodes: Vec<&Node> = candidates.iter().map(|c| &c.node).collect();
        let office = self.office();
        let placement = async {
            tokio::join!(
                self.frame_offset(bus, &frame, relative, w),
                office.extent_corrections(bus, tree, &frame, &nodes)
            )
        };
        let details = futures::future::join_all(
            candidates
                .iter()
                .map(|c| self.read_details(bus, &c.node, with_actions)),
        );
        let ((offset, fixes), details) = tokio::join!(placement, details);
        let offset = offset.unwrap_or_else(|e| {
            warnings.push(format!(
                "window extents unknown, rectangles may be off: {e}"
            ));
            w.area.map_or((0, 0), |a| (a.x, a.y))
        });
        let t_details = t.elapsed();
        let results = futures::future::join_all(candidates.iter().zip(details).map(|(c, d)| {
            let (dx, dy) = fixes.get(&c.node.path).copied().unwrap_or((0, 0));
            let offset = (offset.0 + dx, offset.1 + dy);
            self.fetch_control(bus, c, d, offset, win_rect, w.id)
        }))
        .await;
        let in_pages = web_document_paths(tree, &frame, self.config.walk_max_nodes);
        for (c, r) in candidates.iter().zip(&results) {
            if in_pages.contains(c.node.path.as_str()) {
                stats.document_candidates += 1;
                stats.document_controls += usize::from(matches!(r, Ok(Some(_))));
            }
        }
        let t_fetch = t.elapsed();
        let mut out = Vec::new();
        let mut tables = Vec::new();
        let mut parents = Vec::new();
        let mut failed = 0;
        let mut first_err = None;
        for (c, r) in candidates.iter().zip(results) {
            match r {
                Ok(Some(f)) => {
                    out.push(f);
                    tables.push(c.table.clone());
                    parents.push(c.node.parent.clone());
                }
                Ok(None) => {}
                Err(e) => {
                    failed += 1;
                    first_err.get_or_insert(e.to_string());
                }
            }
        }
        let out = group_unnamed(out, &tables, &parents);
        let mut out = rows_as_controls(out, &tables);
        self.one_focused(bus, &mut out).await;
        // spreadsheets: their visible cells, read by range (never enumerated)
        self.sheet_controls(
            bus, tree, &frame, offset, win_rect, w.id, &mut out, warnings,
        )
        .await;
        let out = name_field_arrows(out);
        if failed > 0 {
            warnings.push(format!(
                "{failed} of {} controls did not answer and are left out (first error: {})",
                candidates.len(),
                first_err.unwrap_or_default()
            ));
        }
        stats.details += t.elapsed();
        tracing::debug!(
            items_ms = t_items.as_millis() as u64,
            walk_ms = (t_walk - t_items).as_millis() as u64,
            announced = stats.announced,
            documents_ms = (t_docs - t_walk).as_millis() as u64,
            details_ms = t_details.as_millis() as u64,
            names_ms = (t_fetch - t_details).as_millis() as u64,
            candidates = candidates.len(),
            sheets_ms = (t.elapsed() - t_fetch).as_millis() as u64,
            "window controls read"
        );
        Ok((out, frame))
    }

    /// One candidate from its details (extents, actions, text and value: `read_details`),
    /// named (a field by the labels that point at it); `None` when it is not on screen.
    async fn fetch_control(
        &self,
        bus: &str,
        c: &Candidate,
        (ext, actions, text, value): Details,
        offset: (i32, i32),
        win: Rect,
        xid: WinId,
    ) -> Result<Option<Fetched>, LinuxError> {
        let n = &c.node;
        let Some((x, y, ew, eh)) = ext? else {
            return Ok(None);
        };
        if x == i32::MIN || y == i32::MIN || ew < 2 || eh < 2 {
            return Ok(None);
        }
        let actions = actions.unwrap_or_default();
        let is_button = ANY_BUTTON.contains(n.role);
        if is_button && !n.has(state::FOCUSABLE) && c.wraps_button {
            // GTK4 wraps a menu button in a second, inert button
            return Ok(None);
        }
        let raw = Rect {
            x: x.saturating_add(offset.0),
            y: y.saturating_add(offset.1),
            w: ew as u32,
            h: eh as u32,
        };
        let Some(rect) = intersect(raw, win) else {
            return Ok(None);
        };
        let mut value = shown_value(c, text.unwrap_or(None), value);
        if c.display {
            let shown = names::display(&n.name, &n.description);
            return Ok(Some(fetched(
                bus,
                n,
                shown.name,
                shown.value,
                rect,
                actions,
                xid,
            )));
        }
        let name = match &c.field {
            Some(seed) if !FIELDS.contains(n.role) => {
                // a bare button: only a label pointing at it names it
                let label = match self.labelled_by(bus, n, seed).await {
                    Some(label) => Some(label),
                    None => self.label_left_of(bus, seed, (x, y, ew, eh)).await,
                };
                match label {
                    Some(label) => names::label_as_name(&label),
                    None => shown_name(c, value.as_deref()),
                }
            }
            Some(seed) => {
                let e = self.field_evidence(bus, c, seed, value.as_deref()).await;
                let name = names::field_name(&e);
                // a combo box named by its chosen option shows the option as its value
                if value.is_none() && n.role == role::COMBO_BOX && name != e.own {
                    // (a toolkit type name, GTK4's "GtkDropDown", is no option)
                    value = Some(collapse_ws(&e.own)).filter(|v| !names::is_noise(v));
                }
                name
            }
            None => shown_name(c, value.as_deref()),
        };
        Ok(Some(fetched(bus, n, name, value, rect, actions, xid)))
    }

    /// GTK 4 keeps a closed popover (a drop-down's list) in its cache, VISIBLE, with its
    /// items where they were drawn; a live `GetChildren` of its parent no longer lists it.
    /// Such popovers are taken out of the tree, so that their items are not listed (a click
    /// on one would land on whatever is drawn there now). One call per popover's parent,
    /// [`MAX_POPOVERS`] at most.
    async fn drop_closed_popovers(&self, bus: &str, tree: &mut AppTree, frame: &str) {
        let popovers: Vec<(String, String)> = tree
            .subtree(frame, self.config.walk_max_nodes)
            .into_iter()
            .filter_map(|n| crate::apps::gtk4::popover_of(tree, n))
            .take(MAX_POPOVERS)
            .map(|p| (p.path.clone(), p.parent.clone()))
            .collect();
        let live = futures::future::join_all(
            popovers
                .iter()
                .map(|(_, parent)| self.bus.children(bus, parent)),
        )
        .await;
        for ((path, parent), kids) in popovers.iter().zip(live) {
            // an unanswered call keeps the popover (better listed than lost)
            if kids.is_ok_and(|k| !k.contains(path)) {
                if let Some(k) = tree.children.get_mut(parent) {
                    k.retain(|c| c != path);
                }
            }
        }
    }

    /// Only one control is focused: when several are marked so (a toolkit's cache keeps
    /// the mark on controls that lost the focus), their states are read again live and
    /// the mark stays on one (noise.rs).
    async fn one_focused(&self, bus: &str, out: &mut [Fetched]) {
        let marked: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].detail.control.states.focused)
            .collect();
        if marked.len() < 2 {
            return;
        }
        let paths: Vec<String> = marked.iter().map(|&i| out[i].info.path.clone()).collect();
        let live = futures::future::join_all(paths.iter().map(|p| async move {
            self.bus
                .call::<_, Vec<u32>>(bus, p, "org.a11y.atspi.Accessible", "GetState", &())
                .await
                .ok()
                .map(|w| crate::a11y::bus::state_bits(&w) & state::FOCUSED != 0)
        }))
        .await;
        let keep = noise::one_focused(&live).map(|k| marked[k]);
        for &i in &marked {
            if Some(i) != keep {
                let d = &mut out[i].detail;
                d.control.states.focused = false;
                d.states.retain(|s| *s != "focused");
            }
        }
    }

    /// A step of [`Self::fetch_control`]: the evidence for a field's name. Its relations
    /// (and the relations of the labels near it, and its placeholder) are asked only when
    /// its own name may not be a name: empty, a combo box's (its chosen option), or an
    /// empty entry's (GTK3 names it by its placeholder).
    async fn field_evidence(
        &self,
        bus: &str,
        c: &Candidate,
        seed: &FieldSeed,
        value: Option<&str>,
    ) -> FieldEvidence {
        let n = &c.node;
        let own = n.name.clone();
        let empty = value.is_none_or(|v| v.trim().is_empty());
        let doubtful = own.trim().is_empty() || n.role == role::COMBO_BOX || empty;
        let mut e = FieldEvidence {
            own,
            value: if n.role == role::COMBO_BOX && value.is_none() {
                // GTK3 names a combo box by its chosen option
                Some(n.name.clone())
            } else {
                value.map(str::to_string)
            },
            beside: seed.beside.clone(),
            parent: seed.parent.clone(),
            description: n.description.clone(),
            ..FieldEvidence::default()
        };
        if !doubtful {
            return e;
        }
        let (relation, placeholder) = tokio::join!(self.labelled_by(bus, n, seed), async {
            if empty && !n.name.trim().is_empty() && n.role != role::COMBO_BOX {
                self.bus
                    .attributes(bus, &n.path)
                    .await
                    .ok()
                    .and_then(|a| a.get("placeholder-text").cloned())
            } else {
                None
            }
        });
        e.relation = relation;
        e.placeholder = placeholder;
        e
    }

    /// The text of the labels that point at a field: its `LABELLED_BY` targets, else the
    /// labels near it whose `LABEL_FOR` names it (Thunar's rename entry has only the
    /// latter).
    async fn labelled_by(&self, bus: &str, n: &Node, seed: &FieldSeed) -> Option<String> {
        let own = self.bus.relations(bus, &n.path).await.unwrap_or_default();
        let targets: Vec<String> = own
            .into_iter()
            .filter(|(k, _)| *k == LABELLED_BY)
            .flat_map(|(_, t)| t)
            .collect();
        if !targets.is_empty() {
            let names = futures::future::join_all(targets.iter().take(MAX_NEAR_LABELS).map(
                |t| async move {
                    match seed.near_labels.iter().find(|(p, _)| p == t) {
                        Some((_, name)) => name.clone(),
                        None => self
                            .bus
                            .prop::<String>(bus, t, "org.a11y.atspi.Accessible", "Name")
                            .await
                            .unwrap_or_default(),
                    }
                },
            ))
            .await;
            let text = collapse_ws(&names.join(" "));
            if !text.is_empty() {
                return Some(text);
            }
        }
        let sets = futures::future::join_all(
            seed.near_labels
                .iter()
                .map(|(p, _)| self.bus.relations(bus, p)),
        )
        .await;
        let text: Vec<&str> = seed
            .near_labels
            .iter()
            .zip(sets)
            .filter(|(_, set)| {
                set.as_ref().is_ok_and(|set| {
                    set.iter().any(|(k, t)| {
                        *k == LABEL_FOR
                            && (t.contains(&n.path)
                                || seed.wrapper.as_ref().is_some_and(|w| t.contains(w)))
                    })
                })
            })
            .map(|((_, name), _)| name.as_str())
            .collect();
        (!text.is_empty()).then(|| collapse_ws(&text.join(" ")))
    }

    /// The label just left of a bare button, on its line (LibreOffice's "Master Page:" list
    /// box has no relation): the near labels' extents are read, bounded by their number.
    async fn label_left_of(
        &self,
        bus: &str,
        seed: &FieldSeed,
        at: (i32, i32, i32, i32),
    ) -> Option<String> {
        let boxes = futures::future::join_all(
            seed.near_labels
                .iter()
                .map(|(p, _)| self.bus.extents(bus, p)),
        )
        .await;
        let near: Vec<(names::Extents, &str)> = seed
            .near_labels
            .iter()
            .zip(boxes)
            .filter_map(|((_, name), b)| Some((b.ok()?, name.as_str())))
            .collect();
        names::label_left_of(at, &near).map(str::to_string)
    }

    /// Where a window's controls are offset on the screen (`display::extents_origin`): on
    /// X11, GTK4 (`relative`) gives extents within the toolkit's window, which sits centred in
    /// the X window `w` (its shadow around it); other toolkits give screen extents.
    async fn frame_offset(
        &self,
        bus: &str,
        frame: &str,
        relative: bool,
        w: &DisplayWindow,
    ) -> Result<(i32, i32), LinuxError> {
        let space = self.display.coord_space();
        if !extents_relative(space, relative) {
            return Ok((0, 0));
        }
        let extents = self.bus.extents(bus, frame).await?;
        extents_origin(space, relative, w.area, extents).ok_or_else(|| position_unknown(w))
    }

    /// The node's extents, actions, text and value for [`Self::fetch_control`], read at once
    /// (each only when the node has the interface, and the actions only when asked for or of
    /// a menu).
    async fn read_details(&self, bus: &str, n: &Node, with_actions: bool) -> Details {
        let ext = async {
            if n.ifaces & iface::COMPONENT != 0 {
                self.bus.extents(bus, &n.path).await.map(Some)
            } else {
                Ok(None)
            }
        };
        let acts = async {
            // a menu's actions tell a real menu from LibreOffice's shadow of it
            if (with_actions || n.role == role::MENU) && n.ifaces & iface::ACTION != 0 {
                self.bus.actions(bus, &n.path).await
            } else {
                Ok(Vec::new())
            }
        };
        let text = async {
            if n.ifaces & iface::TEXT != 0
                && (TEXTUAL.contains(n.role) || office::is_text_part(n.role))
            {
                self.bus.text(bus, &n.path).await.map(Some)
            } else {
                Ok(None)
            }
        };
        let value = async {
            if n.ifaces & iface::VALUE != 0 && n.ifaces & iface::TEXT == 0 {
                self.bus.value(bus, &n.path).await.ok()
            } else {
                None
            }
        };
        tokio::join!(ext, acts, text, value)
    }

    /// The tree of a control's application with the control in it and its part walked
    /// thoroughly ([`Self::complete_tree`]: what the application's cache lacks, in GTK3
    /// dialogs and GTK4, comes from a walk; the walk's warnings say nothing here).
    pub(crate) async fn control_tree(&self, c: &CtlInfo) -> Result<AppTree, LinuxError> {
        let mut tree = self.bus.tree(&c.bus).await?;
        let mut ignored = Vec::new();
        if !tree.nodes.contains_key(&c.path) {
            tree.insert(self.bus.node(&c.bus, &c.path, "", 0).await?);
        }
        let reading = FreshNodes::for_toolkit(self.apps.is_relative(&self.bus, &c.bus).await);
        self.complete_tree(&c.bus, &mut tree, &c.path, true, reading, &mut ignored)
            .await;
        Ok(tree)
    }

    /// Fill in the parts of the tree the application's cache did not give (GTK4 before its
    /// first walk) by walking the incomplete visible nodes. The walk is bounded in nodes
    /// (`walk_max_nodes`) and time (`walk_budget`, every round of calls included) and says in
    /// `warnings` when it was cut. It never enumerates a container whose child count is
    /// negative or above `walk_max_children`, read live just before (a spreadsheet manages its
    /// descendants and reports every cell of the sheet: asking for its children makes the
    /// application build them all, at 100% CPU and without end). Returns whether a walk was
    /// needed, and how often it met a node twice.
    ///
    /// The walk stays inside the window's own tree and reads each node once: a child that a
    /// live answer lists under two parents is followed under the first; a known node is
    /// moved under the parent that lists it only when that closes no circle and takes no
    /// window away (a stale answer, as Chromium gives while a page loads, would otherwise
    /// make the window's tree endless).
    ///
    /// `reading` says how the nodes a listing names are read ([`FreshNodes`]).
    pub(crate) async fn complete_tree(
        &self,
        bus: &str,
        tree: &mut AppTree,
        frame: &str,
        thorough: bool,
        reading: FreshNodes,
        warnings: &mut Vec<String>,
    ) -> WalkOutcome {
        let mut w = Walker::new(tree, frame, thorough, &self.config);
        w.reading = reading;
        for n in tree.subtree(frame, w.max_nodes) {
            if w.visible(tree, n) {
                w.place(n, tree.kids(&n.path).len(), false, true);
            }
        }
        if w.frontier.is_empty() && w.probes.is_empty() {
            report_refused(&mut w.refused, warnings);
            return WalkOutcome::default();
        }
        w.deadline = Instant::now() + self.config.walk_budget;
        if w.reading == FreshNodes::FromCache {
            // listening before the first listing: its announcements come before its answer
            w.announced = Announced::listen(&self.bus.conn, bus, self.bus.timeout).await;
        }
        loop {
            // nodes whose cached count cannot be trusted: read the live count (one cheap call
            // each, no child is built) and enumerate only a bounded one
            if !w.probes.is_empty() && !self.read_counts(bus, tree, &mut w).await {
                w.cut = true;
                break;
            }
            if w.frontier.is_empty() {
                // nodes connected during the walk (cached under a parent the cache lacked,
                // as LibreOffice files its root pane and its toolbars' boxes) may be
                // incomplete too: look at the tree again, a few times at most
                if w.rescans < 3 {
                    w.rescans += 1;
                    w.rescan(tree, frame);
                    if !w.frontier.is_empty() || !w.probes.is_empty() {
                        continue;
                    }
                }
                break;
            }
            w.take_frontier();
            if w.frontier.is_empty() {
                continue;
            }
            if Instant::now() >= w.deadline || w.visited >= w.max_nodes {
                w.cut = true;
                break;
            }
            if w.frontier.len() > w.max_nodes - w.visited {
                w.frontier.truncate(w.max_nodes - w.visited);
                w.cut = true;
            }
            w.visited += w.frontier.len();
            let Some(fresh) = self.list_children(bus, tree, &mut w).await else {
                w.cut = true;
                break;
            };
            if !self.read_fresh(bus, tree, &mut w, fresh).await {
                w.cut = true;
                break;
            }
        }
        tree.sort_children();
        let outcome = WalkOutcome {
            walked: true,
            repeats: w.repeats,
            read_twice: w.reads.values().filter(|&&n| n > 1).count(),
            cut: w.cut,
            announced: w.announced_nodes,
        };
        w.report(warnings, self.config.walk_budget);
        outcome
    }

    /// A step of [`Self::complete_tree`]: the live child count of each probed node, and
    /// whether to walk it. `false` when the walk ran out of time.
    async fn read_counts(&self, bus: &str, tree: &mut AppTree, w: &mut Walker) -> bool {
        w.seen.extend(w.probes.iter().cloned());
        for p in std::mem::take(&mut w.probes) {
            w.count_read(Read::Count, &p);
            w.probes.push(p);
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let counts = tokio::time::timeout(
            remaining,
            futures::future::join_all(w.probes.iter().map(|p| {
                self.bus
                    .prop::<i32>(bus, p, "org.a11y.atspi.Accessible", "ChildCount")
            })),
        )
        .await;
        let Ok(counts) = counts else {
            return false;
        };
        let probes = std::mem::take(&mut w.probes);
        for (p, c) in probes.into_iter().zip(counts) {
            match c {
                Ok(c) => {
                    if let Some(n) = tree.nodes.get_mut(&p) {
                        n.child_count = c;
                        w.place(n, 0, true, true);
                    }
                }
                Err(_) => w.errors += 1,
            }
        }
        true
    }

    /// A step of [`Self::complete_tree`]: the children of the frontier, live. Children the
    /// cache filed under another parent move under this one (and are walked when
    /// incomplete); the ones the tree lacks come back to be read (child path, parent,
    /// index). `None` when the walk ran out of time.
    async fn list_children(
        &self,
        bus: &str,
        tree: &mut AppTree,
        w: &mut Walker,
    ) -> Option<Vec<Listed>> {
        for p in std::mem::take(&mut w.frontier) {
            w.count_read(Read::Children, &p);
            w.frontier.push(p);
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let results = tokio::time::timeout(
            remaining,
            futures::future::join_all(w.frontier.iter().map(|p| self.bus.children(bus, p))),
        )
        .await
        .ok()?;
        let frontier = std::mem::take(&mut w.frontier);
        Some(file_children(tree, w, frontier.into_iter().zip(results)))
    }

    /// A step of [`Self::read_fresh`] with [`FreshNodes::FromCache`]: the fresh nodes the
    /// application announced while answering the listing just made ([`Announced`]), then
    /// those its cache lists now (one `GetItems` call: the listing put them there), and the
    /// ones neither has, to be read one by one. A cache larger than [`MAX_CACHE_PER_LEVEL`]
    /// ends the cache reading for the rest of the walk. `None` when the walk ran out of time.
    async fn fresh_from_cache(
        &self,
        bus: &str,
        w: &mut Walker,
        fresh: Vec<Listed>,
    ) -> Option<(Vec<Result<Node, LinuxError>>, Vec<Listed>)> {
        if w.reading == FreshNodes::OneByOne {
            return Some((Vec::new(), fresh));
        }
        let (mut found, fresh) = match &w.announced {
            Some(a) => {
                let mut announced = a.take(fresh.iter().map(|(k, _, _)| k.as_str())).await;
                take_fresh(&mut announced, fresh)
            }
            None => (Vec::new(), fresh),
        };
        w.announced_nodes += found.len();
        if fresh.len() < 2 {
            return Some((found, fresh));
        }
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let items = tokio::time::timeout(remaining, self.bus.get_items(bus))
            .await
            .ok()?;
        let Ok(items) = items else {
            w.reading = FreshNodes::OneByOne;
            return Some((found, fresh));
        };
        if items.len() > MAX_CACHE_PER_LEVEL {
            w.reading = FreshNodes::OneByOne;
        }
        let mut cached: HashMap<String, Node> =
            items.into_iter().map(|n| (n.path.clone(), n)).collect();
        let (from_cache, missing) = take_fresh(&mut cached, fresh);
        found.extend(from_cache);
        Some((found, missing))
    }

    /// A step of [`Self::complete_tree`]: read the nodes new to the tree and put them in;
    /// the visible ones (and the cached nodes that hang under them now) are walked when
    /// incomplete. `false` when the walk ran out of time.
    async fn read_fresh(
        &self,
        bus: &str,
        tree: &mut AppTree,
        w: &mut Walker,
        fresh: Vec<Listed>,
    ) -> bool {
        for (k, _, _) in &fresh {
            w.count_read(Read::Node, k);
        }
        let (mut nodes, fresh) = match self.fresh_from_cache(bus, w, fresh).await {
            Some(split) => split,
            None => return false,
        };
        let remaining = w.deadline.saturating_duration_since(Instant::now());
        let one_by_one = tokio::time::timeout(
            remaining,
            futures::future::join_all(
                fresh
                    .iter()
                    .map(|(k, p, i)| self.nodes.read(&self.bus, bus, k, p, *i)),
            ),
        )
        .await;
        let Ok(one_by_one) = one_by_one else {
            return false;
        };
        nodes.extend(one_by_one);
        let mut attached: Vec<String> = Vec::new();
        for n in nodes {
            match n {
                Ok(n) => {
                    if w.visible(tree, &n) {
                        // a fresh node's count was read live just now
                        w.place(&n, 0, true, true);
                        attached.push(n.path.clone());
                    }
                    tree.insert(n);
                }
                Err(_) => w.errors += 1,
            }
        }
        // cached nodes whose parent was missing from the cache (LibreOffice files its
        // root pane and the boxes of its toolbars so) hang under a fresh node now: walk
        // the incomplete ones among them too
        for p in attached {
            for d in tree.subtree(&p, w.max_nodes).into_iter().skip(1) {
                if w.visible(tree, d) {
                    w.place(d, tree.kids(&d.path).len(), false, true);
                }
            }
        }
        true
    }
}

/// The value a control shows: none for a password; its text (clipped to [`VALUE_MAX`]; a
/// combo box's chosen option when the text is only embedded objects); its number; checked
/// or not for a checkable one.
fn shown_value(c: &Candidate, mut text: Option<String>, value: Option<f64>) -> Option<String> {
    let n = &c.node;
    let unreadable = text.as_deref().is_none_or(|t| {
        t.trim().is_empty() || (t.contains('\u{fffc}') && crate::apps::web::is_placeholder(t))
    });
    if unreadable && c.choice.is_some() {
        // embedded objects only or nothing (a web page, a <select>): its chosen option is
        // what it shows (else its own name would be taken for its option: field_evidence)
        text = c.choice.clone();
    }
    if n.role == role::PASSWORD_TEXT {
        None
    } else if let Some(t) = text {
        let mut t = t;
        if t.len() > VALUE_MAX {
            let mut end = VALUE_MAX;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.truncate(end);
            t.push('…');
        }
        Some(t)
    } else if let Some(v) = value
        .map(|v| format!("{v}"))
        .filter(|v| names::value_says_something(value_kind(n.role), v))
    {
        // (a button's number says nothing: LibreOffice gives its buttons a value of 0, and
        // its toggle buttons are checked or not)
        Some(v)
    } else if CHECKABLE.contains(n.role) {
        Some(
            if n.has(state::CHECKED) {
                "checked"
            } else {
                "unchecked"
            }
            .to_string(),
        )
    } else {
        None
    }
}

/// What a value can mean for a control of role `r` (names.rs).
fn value_kind(r: u32) -> ValueKind {
    if CHECKABLE.contains(r) {
        ValueKind::Checkable
    } else if RANGES.contains(r) {
        ValueKind::Range
    } else if FIELDS.contains(r) || TEXTUAL.contains(r) {
        ValueKind::Field
    } else {
        ValueKind::Plain
    }
}

/// The name a control shows: a paragraph's start (its table cell's name first), an item
/// named by its children's text first, else its own name (then description, children).
fn shown_name(c: &Candidate, value: Option<&str>) -> String {
    let n = &c.node;
    if office::is_text_part(n.role) && n.name.trim().is_empty() {
        // a paragraph: the start of its text (its table cell's name first)
        let cell = c.child_text.strip_prefix('\u{1}');
        office::paragraph_name(value.unwrap_or(""), cell)
    } else if ITEMS.contains(n.role) && !c.child_text.is_empty() {
        clean_name(&n.name, &c.child_text, &n.description)
    } else {
        clean_name(&n.name, &n.description, &c.child_text)
    }
}

/// A control as the actions know it (`info`) and as the agent sees it (`detail`).
fn fetched(
    bus: &str,
    n: &Node,
    name: String,
    value: Option<String>,
    rect: Rect,
    actions: Vec<String>,
    xid: WinId,
) -> Fetched {
    let role = role_name(n.role);
    let enabled = n.has(state::SENSITIVE) || n.has(state::ENABLED);
    let mut states = Vec::new();
    for (bit, label) in STATE_LABELS {
        if n.has(bit) {
            states.push(label);
        }
    }
    if !enabled {
        states.push("disabled");
    }
    let id = format!("{bus}{}", n.path);
    Fetched {
        info: CtlInfo {
            bus: bus.to_string(),
            path: n.path.clone(),
            name: name.clone(),
            rect,
            actions: actions.clone(),
            ifaces: n.ifaces,
            states: n.states,
            window: xid,
            seen: crate::controls::Seen {
                role: n.role,
                name: n.name.clone(),
                label: 0,
            },
        },
        detail: ControlDetail {
            control: Control {
                id,
                role,
                name,
                value,
                rect,
                enabled,
                states: ufo_core::ports::ControlStates {
                    focused: n.has(state::FOCUSED),
                    checked: n.has(state::CHECKED),
                    selected: n.has(state::SELECTED),
                    expanded: n.has(state::EXPANDED),
                    editable: n.has(state::EDITABLE),
                },
            },
            states,
            actions,
        },
    }
}

/// A walk of the incomplete visible nodes under way (see [`LinuxDesktop::complete_tree`]).
struct Walker {
    thorough: bool,
    /// `walk_max_children` and `walk_max_nodes`
    bound: usize,
    max_nodes: usize,
    /// whether visible nodes must also be showing (the application sets SHOWING)
    uses_showing: bool,
    /// the end of the walk's budget (set when the walk starts)
    deadline: Instant,
    /// nodes to ask for their children, and nodes whose cached count is not trusted
    frontier: Vec<String>,
    probes: Vec<String>,
    /// the containers not enumerated, and why
    refused: Vec<String>,
    /// the nodes walked or probed
    seen: HashSet<String>,
    /// the nodes whose children were asked for, and the children a live answer listed:
    /// each is followed once
    listed_parents: HashSet<String>,
    listed: HashSet<String>,
    /// live reads by (kind, node): a count above 1 is a node read twice
    reads: HashMap<(Read, String), u32>,
    /// nodes met again (listed by a second parent, or a move that would close a circle)
    repeats: usize,
    visited: usize,
    /// nodes that did not answer
    errors: usize,
    /// a list longer than [`MAX_WALK_CHILDREN`] was cut
    capped: bool,
    /// the walk stopped at its budget
    cut: bool,
    rescans: usize,
    /// how the nodes a listing names are read
    reading: FreshNodes,
    /// the application's announcements during the walk ([`FreshNodes::FromCache`]), and the
    /// fresh nodes taken from them
    announced: Option<Announced>,
    announced_nodes: usize,
}

/// A node a live listing named and the tree lacks: its path, its parent, its index there.
type Listed = (String, String, i32);

/// Most items of an application's cache read once per level of a walk
/// ([`FreshNodes::FromCache`]); a larger cache is not read again during that walk.
const MAX_CACHE_PER_LEVEL: usize = 2_000;

/// How the walk reads the nodes a listing names.
///
/// A freshly started GTK 4 application's cache lists ten objects; listing a node's children
/// puts them in the cache. Read one by one, each node is six calls, which the application
/// answers in turn: gnome-calculator's 86 nodes took ~55 ms. From the cache, a level of the
/// tree is one `GetItems` call, whatever its width; from the application's announcements of
/// what it exported while answering the listing ([`Announced`]), no call at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FreshNodes {
    /// Each node by its own calls (role, name, description, states, interfaces, count).
    OneByOne,
    /// All of a level from the announcements its listing caused, else by one `GetItems`
    /// call after it (the nodes neither has one by one): for toolkits whose cache gains what
    /// a listing names and announces it (GTK 4).
    FromCache,
}

impl FreshNodes {
    /// How an application's fresh nodes are read: [`FreshNodes::FromCache`] for GTK 4
    /// (whose extents are `relative` to its window), else [`FreshNodes::OneByOne`].
    pub(crate) fn for_toolkit(relative: bool) -> FreshNodes {
        if relative {
            FreshNodes::FromCache
        } else {
            FreshNodes::OneByOne
        }
    }
}

/// The fresh nodes (child, parent, index) found among `by_path` (cache items by path, taken
/// out), placed where the live listing put them, and the fresh nodes it lacks.
fn take_fresh(
    by_path: &mut HashMap<String, Node>,
    fresh: Vec<Listed>,
) -> (Vec<Result<Node, LinuxError>>, Vec<Listed>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (k, p, i) in fresh {
        match by_path.remove(&k) {
            Some(mut n) => {
                n.parent = p;
                n.index = i;
                found.push(Ok(n));
            }
            None => missing.push((k, p, i)),
        }
    }
    (found, missing)
}

impl Walker {
    fn new(tree: &AppTree, frame: &str, thorough: bool, config: &LinuxConfig) -> Walker {
        Walker {
            thorough,
            bound: config.walk_max_children,
            max_nodes: config.walk_max_nodes,
            uses_showing: uses_showing(tree, frame),
            deadline: Instant::now(),
            frontier: Vec::new(),
            probes: Vec::new(),
            refused: Vec::new(),
            seen: HashSet::new(),
            listed_parents: HashSet::new(),
            listed: HashSet::new(),
            reads: HashMap::new(),
            repeats: 0,
            visited: 0,
            errors: 0,
            capped: false,
            cut: false,
            rescans: 0,
            reading: FreshNodes::OneByOne,
            announced: None,
            announced_nodes: 0,
        }
    }

    fn visible(&self, tree: &AppTree, n: &Node) -> bool {
        n.has(state::VISIBLE)
            && (!self.uses_showing || n.has(state::SHOWING) || passes_through(tree, n))
    }

    /// Keep in the frontier the nodes whose children were not asked for yet (once each).
    fn take_frontier(&mut self) {
        let before = self.frontier.len();
        let listed = &mut self.listed_parents;
        self.frontier.retain(|p| listed.insert(p.clone()));
        self.repeats += before - self.frontier.len();
        self.seen.extend(self.frontier.iter().cloned());
    }

    /// Note one live read of `path`.
    fn count_read(&mut self, kind: Read, path: &str) {
        *self.reads.entry((kind, path.to_string())).or_default() += 1;
    }

    /// Put a visible node where [`walk_verdict`] says (`known`: its children in the tree;
    /// `live`: its count was just read); a refusal is noted when `note_refused`.
    fn place(&mut self, n: &Node, known: usize, live: bool, note_refused: bool) {
        match walk_verdict(n, known, self.thorough, self.bound, live) {
            Walk::Children => self.frontier.push(n.path.clone()),
            Walk::Probe => self.probes.push(n.path.clone()),
            Walk::Refuse if note_refused => self.refused.push(refusal(n, self.bound)),
            Walk::Refuse | Walk::Done => {}
        }
    }

    /// Look at the tree again for visible nodes not walked yet (refusals are not noted
    /// again).
    fn rescan(&mut self, tree: &AppTree, frame: &str) {
        for n in tree.subtree(frame, self.max_nodes) {
            if self.visible(tree, n) && !self.seen.contains(&n.path) {
                self.place(n, tree.kids(&n.path).len(), false, false);
            }
        }
    }

    /// Say in `warnings` what the walk left out.
    fn report(mut self, warnings: &mut Vec<String>, budget: Duration) {
        if self.cut {
            warnings.push(format!(
                "the tree walk stopped at its budget ({} ms, {} nodes): some controls may be missing",
                budget.as_millis(),
                self.max_nodes
            ));
        }
        if self.errors > 0 {
            warnings.push(format!(
                "{} nodes did not answer during the tree walk and are left out",
                self.errors
            ));
        }
        if self.capped {
            warnings.push(format!(
                "a list has more than {MAX_WALK_CHILDREN} entries: only the first {MAX_WALK_CHILDREN} are shown"
            ));
        }
        report_refused(&mut self.refused, warnings);
    }
}

/// What [`LinuxDesktop::complete_tree`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WalkOutcome {
    /// A walk was needed (the cache lacked part of the window).
    pub walked: bool,
    /// Nodes met again and not followed (see [`ObservationStats::repeats`]).
    pub repeats: usize,
    /// Nodes read live more than once (0).
    pub read_twice: usize,
    /// It stopped at its budget.
    pub cut: bool,
    /// Nodes taken from the application's announcements instead of read.
    pub announced: usize,
}

/// The kinds of live read the walk makes of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Read {
    /// Its live child count.
    Count,
    /// Its children.
    Children,
    /// The node itself.
    Node,
}

/// A step of [`LinuxDesktop::complete_tree`]: file the live children of the frontier
/// (parent, its `GetChildren` answer) in the tree. A child listed before (by another parent,
/// or twice) is followed once; a known child filed under another parent moves under this one
/// (the live answer beats GTK3's cache) unless the move would close a circle or take a
/// window away, and is then walked when incomplete. Returns the children the tree lacks, to
/// be read (child, parent, index).
fn file_children(
    tree: &mut AppTree,
    w: &mut Walker,
    answers: impl IntoIterator<Item = (String, Result<Vec<String>, LinuxError>)>,
) -> Vec<Listed> {
    let mut fresh: Vec<Listed> = Vec::new();
    let mut moved: Vec<Listed> = Vec::new();
    for (p, r) in answers {
        let kids = match r {
            Ok(kids) => kids,
            Err(_) => {
                w.errors += 1;
                continue;
            }
        };
        if kids.len() > MAX_WALK_CHILDREN {
            w.capped = true;
        }
        for (i, k) in kids.into_iter().enumerate().take(MAX_WALK_CHILDREN) {
            if k == p || !w.listed.insert(k.clone()) {
                w.repeats += 1;
                continue;
            }
            match tree.nodes.get(&k) {
                None => fresh.push((k, p.clone(), i as i32)),
                // GTK3's cache can file a dialog's children under another parent: the live
                // answer wins
                Some(n) if n.parent != p => moved.push((k, p.clone(), i as i32)),
                Some(_) => {}
            }
        }
    }
    for (k, p, i) in moved {
        if !tree.reparent(&k, &p, i) {
            w.repeats += 1;
            continue;
        }
        if let Some(n) = tree.nodes.get(&k) {
            if w.visible(tree, n) {
                w.place(n, tree.kids(&k).len(), false, true);
            }
        }
    }
    fresh
}

/// For a window on the bus without controls: the toolkit's fix, only when its cause is
/// established: the page shows no node to accessibility and the process lacks what turns it
/// on (Chromium: the renderer switch on its command line; Firefox: `GNOME_ACCESSIBILITY=1` in
/// its environment). A page that is still loading, or a window with its switch set, gets no
/// hint.
fn established_hint(pid: Option<u32>, document_nodes: usize) -> Option<String> {
    use crate::launch::toolkit::{detect, no_controls_hint, Toolkit, CHROMIUM_A11Y_FLAG};
    let pid = pid?;
    if document_nodes > 0 {
        return None;
    }
    let lacks = |file: &str, arg: &str| {
        std::fs::read(format!("/proc/{pid}/{file}"))
            .map(|text| !has_arg(&text, arg))
            .unwrap_or(false)
    };
    let established = match detect(pid) {
        Toolkit::Chromium => lacks("cmdline", CHROMIUM_A11Y_FLAG),
        Toolkit::Firefox => lacks("environ", "GNOME_ACCESSIBILITY=1"),
        Toolkit::Gtk2
        | Toolkit::Gtk3
        | Toolkit::Gtk4
        | Toolkit::Qt
        | Toolkit::LibreOffice
        | Toolkit::Java
        | Toolkit::Unknown => false,
    };
    if established {
        no_controls_hint(Some(pid))
    } else {
        None
    }
}

/// Whether a `/proc` argument or environment list (NUL-separated; a process that rewrote
/// its title may separate them by spaces) holds `arg` (or `arg=…`).
fn has_arg(list: &[u8], arg: &str) -> bool {
    list.split(|b| *b == 0 || *b == b' ').any(|a| {
        a == arg.as_bytes()
            || a.strip_prefix(arg.as_bytes())
                .is_some_and(|rest| rest.first() == Some(&b'='))
    })
}

/// Nodes inside the web documents of the window (at most `limit` looked at).
/// The paths of the nodes inside the window's web documents.
fn web_document_paths<'t>(
    tree: &'t AppTree,
    frame: &str,
    limit: usize,
) -> std::collections::HashSet<&'t str> {
    tree.subtree(frame, limit)
        .iter()
        .filter(|n| n.role == role::DOCUMENT_WEB)
        .flat_map(|d| tree.subtree(&d.path, limit).into_iter().skip(1))
        .map(|n| n.path.as_str())
        .collect()
}

fn document_nodes(tree: &AppTree, frame: &str, limit: usize) -> usize {
    tree.subtree(frame, limit)
        .iter()
        .filter(|n| n.role == role::DOCUMENT_WEB)
        .map(|d| tree.subtree(&d.path, limit).len().saturating_sub(1))
        .sum()
}

/// What the walk does with one visible node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Nothing: its children are known, it has none, or it keeps them to itself.
    Done,
    /// Ask for its children (its count is known and within the bound).
    Children,
    /// Its cached count says nothing (-1): read the live count before deciding.
    Probe,
    /// Never ask for its children: it reports more than the bound, or (read live) a
    /// negative count.
    Refuse,
}

/// The walk's decision for a node with `known` children in the tree. `live`: its child count
/// was read from the application just now (not from the cache).
pub(crate) fn walk_verdict(
    n: &Node,
    known: usize,
    thorough: bool,
    bound: usize,
    live: bool,
) -> Walk {
    let count = n.child_count;
    let bound = i32::try_from(bound).unwrap_or(i32::MAX);
    let list = LISTS.contains(n.role);
    let manages = n.has(state::MANAGES_DESCENDANTS);
    if count > bound {
        return if list || manages || thorough {
            Walk::Refuse
        } else {
            Walk::Done
        };
    }
    if count < 0 {
        // GTK3 reports -1 for menus whose items it does cache: look only when none is
        return match (thorough && list, live) {
            (true, false) if known == 0 => Walk::Probe,
            (true, true) => Walk::Refuse,
            _ => Walk::Done,
        };
    }
    // `thorough` (for `select` and observations): lists that manage their descendants are
    // walked too (GTK3 keeps their rows out of its cache), within the bound
    let may = !manages || (thorough && list);
    if may && count > 0 && (known as i32) < count {
        Walk::Children
    } else {
        Walk::Done
    }
}

/// The window to observe, found on the screen.
struct Located {
    main: DisplayWindow,
    /// Its dialogs (transient for it).
    attached: Vec<DisplayWindow>,
    /// The part of the screen the window and its dialogs cover (`None`: the window is placed
    /// nowhere on this display).
    area: Option<Rect>,
    warnings: Vec<String>,
    /// Every window on the screen (a frame named as, or lying where, another window of the
    /// same process is that window's: frames.rs).
    windows: Vec<DisplayWindow>,
}

/// A window whose controls are read, and the windows on the screen (to tell its frame from
/// theirs).
struct Sought<'a> {
    window: &'a DisplayWindow,
    windows: &'a [DisplayWindow],
}

/// What reading the controls of a window and its dialogs gave.
struct ReadWindows {
    /// One group per window read, dialogs first, the main window last.
    groups: Vec<Vec<Fetched>>,
    warnings: Vec<String>,
    stats: ObservationStats,
    /// The bus name of the main window's application.
    main_bus: Option<String>,
    /// The title of a modal dialog on top.
    modal: Option<String>,
    /// A window whose accessible frame was not found (not on the bus yet, or not told apart
    /// from its siblings yet): its controls are not listed, and it is looked at again.
    frame_missing: bool,
}

/// Step 3: the controls in label order: each group in reading order, without LibreOffice's
/// shadow menus and what an open menu covers, and without the main window's controls that a
/// dialog covers (all of them under a modal dialog).
fn arrange(groups: Vec<Vec<Fetched>>, attached: &[DisplayWindow], modal: bool) -> Vec<Fetched> {
    let dialog_rects: Vec<Rect> = attached.iter().filter_map(|w| w.area).collect();
    let n_groups = groups.len();
    let mut fetched: Vec<Fetched> = Vec::new();
    for (gi, group) in groups.into_iter().enumerate() {
        let group = without_shadows_and_covered(group);
        let is_main = gi + 1 == n_groups && !dialog_rects.is_empty();
        if is_main && modal {
            continue;
        }
        let rects: Vec<Rect> = group.iter().map(|f| f.detail.control.rect).collect();
        let order = reading_order(&rects);
        let mut group: Vec<Option<Fetched>> = group.into_iter().map(Some).collect();
        for i in order {
            let Some(f) = group[i].take() else { continue };
            if is_main {
                let r = f.detail.control.rect;
                let (cx, cy) = (r.x + r.w as i32 / 2, r.y + r.h as i32 / 2);
                if dialog_rects.iter().any(|d| {
                    cx >= d.x && cy >= d.y && cx < d.x + d.w as i32 && cy < d.y + d.h as i32
                }) {
                    continue;
                }
            }
            fetched.push(f);
        }
    }
    fetched
}

/// Step 4: the screenshot and the annotated screenshot (the labels drawn where the controls
/// are, relative to the captured `area`); a failure is a warning.
async fn labelled_screenshots(
    img: Result<RgbImage, LinuxError>,
    fetched: &[Fetched],
    area: Rect,
    warnings: &mut Vec<String>,
) -> (Option<Screenshot>, Option<Screenshot>) {
    let img = match img {
        Ok(img) => img,
        Err(e) => {
            warnings.push(format!("no screenshot: {e}"));
            return (None, None);
        }
    };
    let marks: Vec<Mark> = fetched
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let r = f.detail.control.rect;
            Mark {
                x: r.x - area.x,
                y: r.y - area.y,
                w: r.w,
                h: r.h,
                label: i + 1,
            }
        })
        .collect();
    match encode_pair(img, marks).await {
        Ok((a, b)) => (Some(a), Some(b)),
        Err(e) => {
            warnings.push(format!("screenshot could not be encoded: {e}"));
            (None, None)
        }
    }
}

/// Drop LibreOffice's shadow menus and the controls an open menu covers (office.rs).
fn without_shadows_and_covered(group: Vec<Fetched>) -> Vec<Fetched> {
    let placed: Vec<office::Placed> = group
        .iter()
        .map(|f| office::Placed {
            role: f.detail.control.role.clone(),
            name: f.detail.control.name.clone(),
            has_action: f.info.actions.iter().any(|a| !a.trim().is_empty()),
            rect: f.detail.control.rect,
        })
        .collect();
    let keep = office::keep_mask(&placed);
    group
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect()
}

/// The warning for a container the walk did not enumerate.
fn refusal(n: &Node, bound: usize) -> String {
    let count = if n.child_count < 0 {
        "an unknown number of children".to_string()
    } else {
        format!("{} children", n.child_count)
    };
    let manages = if n.has(state::MANAGES_DESCENDANTS) {
        ", manages its descendants"
    } else {
        ""
    };
    format!(
        "{} {:?} ({count}{manages}) was not enumerated (a child count below 0 or above {bound}; asking for them all would make the application build every one): its cells or entries are not listed as controls",
        role_name(n.role),
        collapse_ws(&n.name)
    )
}

/// Add the refusals to the warnings, once each, at most five.
fn report_refused(refused: &mut Vec<String>, warnings: &mut Vec<String>) {
    refused.sort();
    refused.dedup();
    let more = refused.len().saturating_sub(5);
    for r in refused.drain(..).take(5) {
        if !warnings.contains(&r) {
            warnings.push(r);
        }
    }
    if more > 0 {
        warnings.push(format!("{more} more large containers were not enumerated"));
    }
}

/// How far up a node's parents [`passes_through`] looks for a web document.
const PAGE_DEPTH: usize = 256;

/// Whether a VISIBLE node that is not SHOWING is gone through anyway: a plain container
/// inside a web document. Gecko reports some groups of its settings pages ("Tabs",
/// "Interaction") as not showing while the controls in them are; the controls are then
/// judged one by one. Outside web pages (a GTK notebook's hidden page) nothing changes.
fn passes_through(tree: &AppTree, n: &Node) -> bool {
    if n.has(state::SHOWING) || !n.has(state::VISIBLE) || !PAGE_CONTAINERS.contains(n.role) {
        return false;
    }
    let mut parent = n.parent.as_str();
    for _ in 0..PAGE_DEPTH {
        let Some(p) = tree.nodes.get(parent) else {
            return false;
        };
        if p.role == role::DOCUMENT_WEB {
            return true;
        }
        if p.parent == p.path {
            return false;
        }
        parent = p.parent.as_str();
    }
    false
}

/// Whether the toolkit sets SHOWING on descendants (GTK3 does, GTK4 only on the window).
fn uses_showing(tree: &AppTree, frame: &str) -> bool {
    tree.subtree(frame, 400)
        .iter()
        .skip(1)
        .any(|n| n.has(state::SHOWING))
}

/// Visible interactive nodes under the frame, in tree order, with their children's label
/// text, looking at no more than `max_nodes` nodes, each once (the flag: whether it stopped
/// there; the count: nodes reached again through a stale or circular parent link, skipped).
fn collect_candidates(
    tree: &AppTree,
    frame: &str,
    max_nodes: usize,
    open_menus: &std::collections::HashSet<String>,
) -> (Vec<Candidate>, bool, usize) {
    let uses_showing = uses_showing(tree, frame);
    let visible = |n: &Node| {
        (n.has(state::VISIBLE)
            && (!uses_showing || n.has(state::SHOWING) || passes_through(tree, n))
            && !n.has(state::DEFUNCT))
            || crate::apps::menus::shown_in_open_menu(open_menus, n)
    };
    let mut out = Vec::new();
    let mut stack: Vec<String> = tree.kids(frame).iter().rev().cloned().collect();
    let mut seen: HashSet<String> = HashSet::from([frame.to_string()]);
    let mut repeats = 0usize;
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) {
            repeats += 1;
            continue;
        }
        if seen.len() > max_nodes + 1 {
            return (out, true, repeats);
        }
        let Some(n) = tree.nodes.get(&p) else {
            continue;
        };
        if !visible(n) {
            continue;
        }
        let display = is_display(n, frame);
        let interactive = display
            || INTERACTIVE.contains(n.role)
            || (n.has(state::FOCUSABLE)
                && n.ifaces & iface::ACTION != 0
                && !CONTAINERS.contains(n.role))
            || office::is_document_part(tree, n);
        if interactive && !office::is_hidden_part(tree, n) {
            let mut child_text = label_text(tree, &n.path);
            if child_text.is_empty() && TEXTUAL.contains(n.role) {
                child_text = sibling_label(tree, n).unwrap_or_default();
            }
            if child_text.is_empty() && n.name.trim().is_empty() && n.description.is_empty() {
                // a paragraph in a table cell: the cell's address, marked by \u{1} so that
                // fetch_control puts it before the paragraph's text
                child_text = office::cell_of(tree, n)
                    .map(|c| format!("\u{1}{c}"))
                    .or_else(|| office::ancestor_name(tree, n, TEXTUAL.contains(n.role)))
                    .unwrap_or_default();
            }
            let wraps_button = tree
                .subtree(&n.path, 16)
                .iter()
                .skip(1)
                .any(|d| BUTTONS.contains(d.role));
            if !crate::apps::web::is_empty_wrapper(tree, n, &child_text)
                && !crate::apps::gtk4::is_dropdown_button(tree, n)
            {
                let field = (FIELDS.contains(n.role) || is_bare_button(n, &child_text))
                    .then(|| field_seed(tree, n));
                out.push(Candidate {
                    node: n.clone(),
                    child_text,
                    wraps_button,
                    choice: crate::apps::web::combo_choice(tree, n)
                        .or_else(|| crate::apps::gtk4::dropdown_choice(tree, n)),
                    field,
                    display,
                    table: (n.role == role::TABLE_CELL)
                        .then(|| table_of(tree, n))
                        .flatten(),
                });
            }
        }
        // a menu's items are visible only while it is open; GTK3 marks them SHOWING then
        for k in tree.kids(&p).iter().rev() {
            stack.push(k.clone());
        }
    }
    (out, false, repeats)
}

/// Whether a role is an entry of a list, tree, table, tab bar or menu (what `select` picks).
pub(crate) fn is_entry(r: u32) -> bool {
    ITEMS.contains(r) || MENU_ITEMS.contains(r)
}

/// A node's name as the observation shows it.
pub(crate) fn display_name(tree: &AppTree, n: &Node) -> String {
    let child_text = label_text(tree, &n.path);
    if ITEMS.contains(n.role) && !child_text.is_empty() {
        clean_name(&n.name, &child_text, &n.description)
    } else {
        clean_name(&n.name, &n.description, &child_text)
    }
}

/// Names of label descendants (four levels, at most three labels), for controls whose own
/// name is noise.
fn label_text(tree: &AppTree, path: &str) -> String {
    fn walk(tree: &AppTree, path: &str, depth: usize, parts: &mut Vec<String>) {
        if depth == 0 || parts.len() >= 3 {
            return;
        }
        for k in tree.kids(path) {
            if let Some(n) = tree.nodes.get(k) {
                if n.role == role::LABEL && !n.name.trim().is_empty() {
                    parts.push(n.name.trim().to_string());
                    if parts.len() >= 3 {
                        return;
                    }
                }
                walk(tree, k, depth - 1, parts);
            }
        }
    }
    let mut parts = Vec::new();
    walk(tree, path, 4, &mut parts);
    parts.join(" ")
}

/// A display inside a window: a frame that takes the focus, holds nothing and shows a text
/// (KCalc's result, a frame named by the number it shows). Containers are never controls
/// otherwise, so the result could not be read. (A selectable label takes the focus too: it
/// is left out, it is text to read, not a display.)
fn is_display(n: &Node, frame: &str) -> bool {
    n.role == role::FRAME
        && n.path != frame
        && n.child_count == 0
        && n.has(state::FOCUSABLE)
        && !n.name.trim().is_empty()
}

/// The table a cell belongs to: its nearest table or tree table (eight levels at most).
fn table_of(tree: &AppTree, n: &Node) -> Option<String> {
    let mut p = n.parent.as_str();
    for _ in 0..8 {
        let a = tree.nodes.get(p)?;
        if TABLES.contains(a.role) {
            return Some(a.path.clone());
        }
        p = a.parent.as_str();
    }
    None
}

/// Many unnamed alike items (not table cells: their rows are folded) as one control
/// (noise.rs, `unnamed_groups`): named by their count and role, over all of them, acting on
/// the first. `tables` and `parents` go along with `out`, and are returned so too.
fn group_unnamed(out: Vec<Fetched>, tables: &[Option<String>], parents: &[String]) -> Vec<Fetched> {
    let items: Vec<noise::Item> = out
        .iter()
        .zip(parents)
        .zip(tables)
        .map(|((f, p), t)| noise::Item {
            // (a table cell is never grouped here: its parent is made unique)
            parent: if t.is_some() {
                format!("{p}\0cell")
            } else {
                p.clone()
            },
            role: f.detail.control.role.clone(),
            name: if t.is_some() {
                "\u{1}cell".into()
            } else {
                f.detail.control.name.clone()
            },
            rect: f.detail.control.rect,
        })
        .collect();
    let groups = noise::unnamed_groups(&items);
    if groups.is_empty() {
        return out;
    }
    let mut drop = HashSet::new();
    let mut renamed: HashMap<usize, (String, Rect)> = HashMap::new();
    for g in &groups {
        let rect = noise::union_all(g.iter().map(|&i| items[i].rect)).unwrap_or(items[g[0]].rect);
        renamed.insert(g[0], (noise::group_name(g.len(), &items[g[0]].role), rect));
        drop.extend(g[1..].iter().copied());
    }
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(i, mut f)| {
            if let Some((name, rect)) = renamed.remove(&i) {
                f.detail.control.name = name.clone();
                f.info.name = name;
                f.detail.control.rect = rect;
                f.info.rect = rect;
            }
            f
        })
        .collect()
}

/// The cells of one table row as one control (noise.rs, `fold_rows`): named by the row's
/// first text, its whole text as its value, over the whole row, acting on its named cell.
/// Unnamed arrow buttons beside a named field are named after it (noise.rs,
/// `field_arrows`: LibreOffice's Name Box toggle).
fn name_field_arrows(mut out: Vec<Fetched>) -> Vec<Fetched> {
    let items: Vec<noise::Item> = out
        .iter()
        .map(|f| noise::Item {
            parent: String::new(),
            role: f.detail.control.role.clone(),
            name: f.detail.control.name.clone(),
            rect: f.detail.control.rect,
        })
        .collect();
    for (i, name) in noise::field_arrows(&items) {
        out[i].detail.control.name = name.clone();
        out[i].info.name = name;
    }
    out
}

fn rows_as_controls(out: Vec<Fetched>, tables: &[Option<String>]) -> Vec<Fetched> {
    let cells: Vec<(usize, noise::Cell)> = out
        .iter()
        .zip(tables)
        .enumerate()
        .filter_map(|(i, (f, t))| {
            Some((
                i,
                noise::Cell {
                    table: t.clone()?,
                    rect: f.detail.control.rect,
                    name: f.detail.control.name.clone(),
                },
            ))
        })
        .collect();
    if cells.is_empty() {
        return out;
    }
    let plain: Vec<noise::Cell> = cells.iter().map(|(_, c)| c.clone()).collect();
    let rows = noise::fold_rows(&plain);
    let mut slots: Vec<Option<Fetched>> = out.into_iter().map(Some).collect();
    let mut kept_rows: HashMap<usize, Fetched> = HashMap::new();
    for row in rows {
        let members: Vec<usize> = row.cells.iter().map(|&k| cells[k].0).collect();
        let Some(mut f) = slots[members[0]].take() else {
            continue;
        };
        for &m in &members[1..] {
            if let Some(other) = slots[m].take() {
                let c = &mut f.detail.control;
                c.states.focused |= other.detail.control.states.focused;
                c.states.selected |= other.detail.control.states.selected;
            }
        }
        f.detail.control.name = row.name.clone();
        f.info.name = row.name;
        f.detail.control.value = row.text;
        f.detail.control.rect = row.rect;
        f.info.rect = row.rect;
        kept_rows.insert(members[0], f);
    }
    slots
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.or_else(|| kept_rows.remove(&i)))
        .collect()
}

/// What the tree tells of a field's name: the label beside it, the nearest named container
/// around it, and the labels near it (within two levels up) that may point at it.
fn field_seed(tree: &AppTree, n: &Node) -> FieldSeed {
    let mut near_labels = Vec::new();
    let mut top = n.parent.as_str();
    if let Some(p) = tree.nodes.get(top) {
        if tree.nodes.contains_key(&p.parent) {
            top = p.parent.as_str();
        }
    }
    for d in tree.subtree(top, 64) {
        if d.role == role::LABEL && !d.name.trim().is_empty() && d.has(state::VISIBLE) {
            near_labels.push((d.path.clone(), d.name.clone()));
            if near_labels.len() >= MAX_NEAR_LABELS {
                break;
            }
        }
    }
    FieldSeed {
        beside: sibling_label(tree, n),
        parent: parent_name(tree, n)
            // LibreOffice's font and style boxes: a panel further up names them
            .or_else(|| office::ancestor_name(tree, n, true))
            .or_else(|| crate::apps::gnumeric::edit_line_name(tree, n).map(str::to_string)),
        near_labels,
        wrapper: tree
            .nodes
            .get(&n.parent)
            .filter(|p| p.name.trim().is_empty() && only_visible_child(tree, p, n))
            .map(|p| p.path.clone()),
    }
}

/// Whether `n` is the only visible child of `p` (LibreOffice's list box wrapper also holds
/// a hidden entry and a hidden combo box).
fn only_visible_child(tree: &AppTree, p: &Node, n: &Node) -> bool {
    tree.kids(&p.path)
        .iter()
        .filter_map(|k| tree.nodes.get(k))
        .filter(|k| k.has(state::VISIBLE))
        .all(|k| k.path == n.path)
}

/// A push or toggle button with nothing that names it (no name, description or text
/// inside): the labels that point at it (or at its wrapper) are asked for its name.
fn is_bare_button(n: &Node, child_text: &str) -> bool {
    BUTTONS.contains(n.role)
        && n.name.trim().is_empty()
        && n.description.trim().is_empty()
        && child_text.trim().is_empty()
}

/// The name of the nearest named container around a field (four levels at most, inside its
/// window; a combo box's name is its chosen option, not a name).
fn parent_name(tree: &AppTree, n: &Node) -> Option<String> {
    let mut p = n.parent.as_str();
    for _ in 0..4 {
        let a = tree.nodes.get(p)?;
        if WINDOWS.contains(a.role) || a.role == role::APPLICATION || office::is_document(a.role) {
            return None;
        }
        let name = collapse_ws(&a.name);
        if a.role != role::COMBO_BOX && !names::is_noise(&name) {
            return Some(name);
        }
        p = a.parent.as_str();
    }
    None
}

/// The label next to an unnamed entry ("Name:" beside a file name field), without the colon
/// and mnemonic underscores: the nearest label among its siblings.
fn sibling_label(tree: &AppTree, n: &Node) -> Option<String> {
    tree.kids(&n.parent)
        .iter()
        .filter_map(|p| tree.nodes.get(p))
        .filter(|s| s.role == role::LABEL && !s.name.trim().is_empty())
        .min_by_key(|s| (s.index - n.index).abs())
        .map(|s| {
            s.name
                .trim()
                .trim_end_matches(':')
                .replace('_', "")
                .trim()
                .to_string()
        })
}

async fn encode_pair(
    img: RgbImage,
    marks: Vec<Mark>,
) -> Result<(Screenshot, Screenshot), LinuxError> {
    let (w, h) = (img.width, img.height);
    let img = Arc::new(img);
    let img2 = img.clone();
    let clean = tokio::task::spawn_blocking(move || annotate::encode_png(&img2));
    let marked = tokio::task::spawn_blocking(move || annotate::annotated_png(&img, &marks));
    let (clean, marked) = tokio::join!(clean, marked);
    let clean = clean??;
    let marked = marked??;
    Ok((
        Screenshot {
            png: Arc::new(clean),
            width: w,
            height: h,
        },
        Screenshot {
            png: Arc::new(marked),
            width: w,
            height: h,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ROOT_PATH;

    fn node(role: u32, child_count: i32, states: u64) -> Node {
        Node {
            path: "/n".into(),
            parent: "/p".into(),
            index: 0,
            child_count,
            ifaces: 0,
            name: "Sheet Sheet1".into(),
            role,
            description: String::new(),
            states,
        }
    }

    /// Issue 11, item 1: Calc's sheet (a table that manages its descendants, -1 in GTK3's
    /// cache, 2^31 - 1 children read live) is never enumerated; this was walked before.
    #[test]
    fn a_sheet_with_every_cell_as_a_child_is_never_enumerated() {
        const TABLE: u32 = 55;
        // the states LibreOffice 7.4 reports for its sheet
        let states = 0xc24c_1980;
        let cached = node(TABLE, -1, states);
        assert_eq!(walk_verdict(&cached, 0, true, 2000, false), Walk::Probe);
        let live = node(TABLE, i32::MAX, states);
        assert_eq!(walk_verdict(&live, 0, true, 2000, true), Walk::Refuse);
        assert_eq!(walk_verdict(&live, 0, false, 2000, true), Walk::Refuse);
        assert_eq!(walk_verdict(&live, 0, true, 2000, false), Walk::Refuse);
        // a negative count read live is refused too
        assert_eq!(
            walk_verdict(&node(TABLE, -1, states), 0, true, 2000, true),
            Walk::Refuse
        );
        // just above the bound (any container): refused; at the bound: walked
        assert_eq!(
            walk_verdict(&node(TABLE, 2001, states), 0, true, 2000, true),
            Walk::Refuse
        );
        assert_eq!(
            walk_verdict(&node(TABLE, 2000, states), 0, true, 2000, true),
            Walk::Children
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 5000, 0), 0, true, 2000, false),
            Walk::Refuse
        );
        assert!(refusal(&live, 2000).contains(
            "\"Sheet Sheet1\" (2147483647 children, manages its descendants) was not enumerated"
        ));
    }

    /// What the walk did before stays: GTK3 menus report -1 with their items cached, GTK3
    /// lists that manage their descendants are walked within the bound, plain containers
    /// with missing children are walked.
    #[test]
    fn bounded_lists_and_containers_are_still_walked() {
        let manages = state::MANAGES_DESCENDANTS;
        assert_eq!(
            walk_verdict(&node(role::MENU, -1, 0), 31, true, 2000, false),
            Walk::Done
        );
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, -1, manages), 0, true, 2000, false),
            Walk::Probe
        );
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, 12, manages), 0, true, 2000, true),
            Walk::Children
        );
        // not thorough: a list that manages its descendants is left alone, as before
        assert_eq!(
            walk_verdict(&node(role::LIST_BOX, 12, manages), 0, false, 2000, true),
            Walk::Done
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, 0), 2, false, 2000, false),
            Walk::Children
        );
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, 0), 4, true, 2000, false),
            Walk::Done
        );
        // a non-list that manages its descendants is never walked
        assert_eq!(
            walk_verdict(&node(role::FRAME, 4, manages), 0, true, 2000, true),
            Walk::Done
        );
    }

    /// A node of a fake tree: `path` under `parent`, visible and showing.
    fn at(path: &str, parent: &str, index: i32, role: u32) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index,
            child_count: 0,
            ifaces: iface::COMPONENT,
            name: format!("n{path}"),
            role,
            description: String::new(),
            states: state::VISIBLE | state::SHOWING,
        }
    }

    /// frame /f (under the application's root) with /a, /a/b, /a/b/c.
    fn chain() -> AppTree {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 1;
        AppTree::from_nodes(vec![
            f,
            at("/a", "/f", 0, role::PANEL),
            at("/b", "/a", 0, role::PUSH_BUTTON),
            at("/c", "/b", 0, role::PUSH_BUTTON),
        ])
    }

    /// Issue 23, item 2: a circle of parent links under the window (a stale answer) is
    /// followed once: every node is looked at once, the window is not "more than N nodes".
    #[test]
    fn candidates_meet_each_node_once_in_a_circle() {
        let mut tree = chain();
        // /c lists /a as its child: a circle /a -> /b -> /c -> /a
        tree.children
            .entry("/c".into())
            .or_default()
            .push("/a".into());
        let (found, cut, repeats) = collect_candidates(&tree, "/f", 5000, &HashSet::new());
        assert!(!cut, "a circle is not an endless tree");
        let paths: Vec<&str> = found.iter().map(|c| c.node.path.as_str()).collect();
        assert_eq!(paths, ["/b", "/c"]);
        assert_eq!(repeats, 1);
    }

    /// A frame with a web document holding a group Gecko reports as not showing (a settings
    /// group) around a check box that is, and a GTK-like hidden page outside the document.
    fn page_with_hidden_group() -> AppTree {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 2;
        let mut group = at("/g", "/d", 0, role::PANEL);
        group.states = state::VISIBLE;
        let mut tab = at("/t", "/f", 1, role::PANEL);
        tab.states = state::VISIBLE;
        let mut check = at("/k", "/g", 0, role::CHECK_BOX);
        check.ifaces |= iface::ACTION;
        let mut hidden = at("/h", "/t", 0, role::PUSH_BUTTON);
        hidden.states = state::VISIBLE;
        AppTree::from_nodes(vec![
            f,
            at("/d", "/f", 0, role::DOCUMENT_WEB),
            group,
            check,
            tab,
            hidden,
        ])
    }

    /// Issue 23: Firefox's settings check boxes sit under a group that is VISIBLE but not
    /// SHOWING; the walk and the candidates go through it inside a web page, and nowhere else.
    #[test]
    fn a_page_group_that_is_not_showing_is_gone_through() {
        let tree = page_with_hidden_group();
        assert!(passes_through(&tree, &tree.nodes["/g"]));
        assert!(
            !passes_through(&tree, &tree.nodes["/t"]),
            "outside a web page"
        );
        let (found, _, _) = collect_candidates(&tree, "/f", 5000, &HashSet::new());
        let paths: Vec<&str> = found.iter().map(|c| c.node.path.as_str()).collect();
        assert!(paths.contains(&"/k"), "{paths:?}");
        assert!(!paths.contains(&"/h"), "{paths:?}");
        let w = walker(&tree);
        assert!(w.visible(&tree, &tree.nodes["/g"]));
        assert!(!w.visible(&tree, &tree.nodes["/t"]));
    }

    fn walker(tree: &AppTree) -> Walker {
        Walker::new(tree, "/f", true, &LinuxConfig::default())
    }

    /// Issue 23: Firefox launched on `about:preferences` keeps in its cache the first, dead
    /// (DEFUNCT) document under the browser's internal frame, with an unknown child count,
    /// and not the page that replaced it; the frame's one child was "known", nothing was
    /// walked and the page's controls were never listed, on every observation. The dead
    /// node is left out of the tree, so the frame is asked for its children live.
    #[test]
    fn a_dead_document_in_the_cache_does_not_hide_the_page() {
        let mut f = at("/f", ROOT_PATH, 0, role::FRAME);
        f.child_count = 1;
        let mut holder = at("/i", "/f", 0, role::INTERNAL_FRAME);
        holder.child_count = 1;
        let mut dead = at("/old", "/i", 0, role::DOCUMENT_WEB);
        dead.child_count = -1;
        dead.states |= state::DEFUNCT;
        let tree = AppTree::from_nodes(vec![f, holder, dead]);
        let holder = &tree.nodes["/i"];
        let verdict = walk_verdict(holder, tree.kids("/i").len(), true, 500, false);
        assert_eq!(
            verdict,
            Walk::Children,
            "the frame's children are read live"
        );
        assert!(!tree.nodes.contains_key("/old"));
    }

    /// Issue 23, item 2: live answers that list an ancestor (a stale parent) or a node twice
    /// close no circle and read nothing twice; the window's tree stays a tree.
    #[test]
    fn the_walk_files_stale_and_repeated_children_once() {
        let mut tree = chain();
        let mut w = walker(&tree);
        let fresh = file_children(
            &mut tree,
            &mut w,
            vec![
                // /c (stale) lists its grandparent /a and a new node /d
                (
                    "/c".to_string(),
                    Ok(vec!["/a".to_string(), "/d".to_string()]),
                ),
                // /b lists /d too, and the window itself
                (
                    "/b".to_string(),
                    Ok(vec!["/d".to_string(), "/f".to_string()]),
                ),
            ],
        );
        assert_eq!(fresh, [("/d".to_string(), "/c".to_string(), 1)]);
        let order: Vec<&str> = tree
            .subtree("/f", 5000)
            .iter()
            .map(|n| n.path.as_str())
            .collect();
        assert_eq!(order, ["/f", "/a", "/b", "/c"]);
        assert_eq!(tree.nodes["/a"].parent, "/f");
        assert_eq!(tree.nodes["/f"].parent, ROOT_PATH);
        assert_eq!(w.repeats, 3);
        // a later round that lists /d again does not read it again
        let again = file_children(
            &mut tree,
            &mut w,
            vec![("/a".to_string(), Ok(vec!["/d".to_string()]))],
        );
        assert!(again.is_empty());
    }

    /// Issue 23, item 2: Chromium lists its application object among its windows (its
    /// parent is the registry's root, at the same path); a window whose title does not match
    /// its accessible name yet is never matched to it (that observed every window at once).
    #[test]
    fn the_application_is_never_taken_for_a_window() {
        let mut app = at(ROOT_PATH, ROOT_PATH, 0, role::APPLICATION);
        app.name = "Chromium".into();
        app.child_count = 3;
        let mut first = at("/1", ROOT_PATH, 1, role::FRAME);
        first.name = "Bookmarks - Chromium".into();
        let mut second = at("/2", ROOT_PATH, 2, role::FRAME);
        second.name = String::new();
        second.states |= state::ACTIVE;
        let tree = AppTree::from_nodes(vec![app, first, second]);
        assert!(!tree.kids(ROOT_PATH).iter().any(|k| k == ROOT_PATH));
        let window = |title: &str| DisplayWindow {
            id: WinId(1),
            title: title.into(),
            pid: None,
            app_id: String::new(),
            area: Some(Rect::new(0, 0, 10, 10)),
            transient_for: None,
            dialog: false,
            wm_modal: false,
        };
        let pick = |title: &str| {
            let tops: Vec<frames::Top> = frames::window_nodes(&tree)
                .into_iter()
                .map(|n| frames::top(n, None))
                .collect();
            let w = window(title);
            frames::choose(&tops, &w, std::slice::from_ref(&w)).map(|c| c.path)
        };
        assert_eq!(pick("Settings - Chromium").as_deref(), Some("/2"));
        assert_eq!(pick("Bookmarks - Chromium").as_deref(), Some("/1"));
    }

    /// A frontier node asked for its children once, even when placed twice.
    #[test]
    fn the_frontier_lists_a_node_once() {
        let tree = chain();
        let mut w = walker(&tree);
        w.frontier = vec!["/a".into(), "/b".into(), "/a".into()];
        w.take_frontier();
        assert_eq!(w.frontier, ["/a", "/b"]);
        w.frontier = vec!["/b".into()];
        w.take_frontier();
        assert!(w.frontier.is_empty());
        assert_eq!(w.repeats, 2);
    }

    /// The live answer still moves a node the cache filed elsewhere (GTK3's dialogs).
    #[test]
    fn the_live_answer_still_moves_a_misfiled_node() {
        let mut tree = chain();
        tree.insert(at("/x", "/elsewhere", 0, role::PUSH_BUTTON));
        let mut w = walker(&tree);
        let fresh = file_children(
            &mut tree,
            &mut w,
            vec![("/c".to_string(), Ok(vec!["/x".to_string()]))],
        );
        assert!(fresh.is_empty());
        assert_eq!(tree.kids("/c"), ["/x"]);
        assert!(tree.kids("/elsewhere").is_empty());
        assert_eq!(w.repeats, 0);
    }

    /// The renderer switch is found on a command line however it is separated.
    #[test]
    fn a_switch_is_found_on_a_command_line() {
        let flag = "--force-renderer-accessibility";
        assert!(has_arg(
            b"chromium\0--no-sandbox\0--force-renderer-accessibility\0",
            flag
        ));
        assert!(has_arg(
            b"chromium --force-renderer-accessibility=complete",
            flag
        ));
        assert!(!has_arg(b"chromium\0--no-sandbox\0about:blank\0", flag));
        assert!(!has_arg(
            b"chromium\0--force-renderer-accessibility-x\0",
            flag
        ));
        assert!(has_arg(
            b"A=1\0GNOME_ACCESSIBILITY=1\0",
            "GNOME_ACCESSIBILITY=1"
        ));
        // no process: nothing is established
        assert_eq!(established_hint(None, 0), None);
        // this test's own process is neither Chromium nor Firefox
        assert_eq!(established_hint(Some(std::process::id()), 0), None);
    }

    #[test]
    fn reading_order_rows_then_columns() {
        let r = |x, y, w, h| Rect { x, y, w, h };
        // a 2x2 grid given shuffled, plus a tall button spanning both rows on the right
        let rects = vec![
            r(60, 50, 40, 40), // 0: row 2 col 2
            r(10, 0, 40, 40),  // 1: row 1 col 1
            r(110, 0, 40, 90), // 2: tall, row 1 col 3
            r(10, 50, 40, 40), // 3: row 2 col 1
            r(60, 0, 40, 40),  // 4: row 1 col 2
        ];
        assert_eq!(reading_order(&rects), vec![1, 4, 2, 3, 0]);
    }

    /// The cache's items stand for the fresh nodes they list, placed where the live listing
    /// put them (the cache's own parent and index lose); the nodes it lacks are left to be
    /// read one by one, and items nobody listed are not taken.
    #[test]
    fn fresh_nodes_come_from_the_cache_where_it_has_them() {
        let items = vec![
            at("/a", "/stale", 7, role::PANEL),
            at("/b", "/p", 1, role::PUSH_BUTTON),
            at("/unlisted", "/p", 2, role::LABEL),
        ];
        let fresh = vec![
            ("/a".to_string(), "/p".to_string(), 0),
            ("/b".to_string(), "/p".to_string(), 1),
            ("/c".to_string(), "/p".to_string(), 2),
        ];
        let mut items: HashMap<String, Node> =
            items.into_iter().map(|n| (n.path.clone(), n)).collect();
        let (found, missing) = take_fresh(&mut items, fresh);
        // what was taken is out; what nobody listed stays
        assert_eq!(items.keys().collect::<Vec<_>>(), ["/unlisted"]);
        let found: Vec<(String, String, i32, u32)> = found
            .into_iter()
            .map(|n| n.expect("from the cache"))
            .map(|n| (n.path, n.parent, n.index, n.role))
            .collect();
        assert_eq!(
            found,
            [
                ("/a".into(), "/p".into(), 0, role::PANEL),
                ("/b".into(), "/p".into(), 1, role::PUSH_BUTTON),
            ]
        );
        assert_eq!(missing, [("/c".to_string(), "/p".to_string(), 2)]);
    }

    /// Only GTK 4 (window-relative extents) has its fresh nodes read from its cache.
    #[test]
    fn only_gtk4_reads_fresh_nodes_from_its_cache() {
        assert_eq!(FreshNodes::for_toolkit(true), FreshNodes::FromCache);
        assert_eq!(FreshNodes::for_toolkit(false), FreshNodes::OneByOne);
    }
}
