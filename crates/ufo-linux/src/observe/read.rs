//! Step 2 of an observation: the controls of the window and its dialogs, one group each,
//! from each application's tree (its frame found, the tree completed by a walk, its documents,
//! menus and sheets read), with the title of a modal dialog among them.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use ufo_core::Rect;

use super::arrange::{group_unnamed, name_field_arrows, rows_as_controls};
use super::candidates::{collect_candidates, combo_lists, Candidate};
use super::composite;
use super::frames;
use super::locate::Located;
use super::modal::{self, ModalityReport};
use super::noise;
use super::observer::{ObservationStats, Observer};
use super::popups;
use super::walk::FreshNodes;
use crate::a11y::bus::{AppTree, Node};
use crate::apps::inked::SheetPixels;
use crate::apps::office::{Corrections, KnownFix};
use crate::controls::Fetched;
use crate::display::{extents_origin, extents_relative, position_unknown, DisplayWindow, WinId};
use crate::vocab::{role, state};
use crate::LinuxError;

/// The most menus of a Qt menu bar listed before its popups are read (`prime_menus`).
const MAX_PRIMED: usize = 16;

/// The most GTK 4 popovers of a window checked for being closed.
const MAX_POPOVERS: usize = 16;

/// A window whose controls are read, and the windows on the screen (to tell its frame from
/// theirs).
pub(super) struct Sought<'a> {
    pub(super) window: &'a DisplayWindow,
    pub(super) windows: &'a [DisplayWindow],
    /// The frame to read, when known already: a popup drawn in the window (popups.rs).
    pub(super) frame: Option<&'a str>,
}

/// What reading the controls of a window and its dialogs gave.
pub(super) struct ReadWindows {
    /// One group per window read, dialogs first, the main window last.
    pub(super) groups: Vec<Vec<Fetched>>,
    pub(super) warnings: Vec<String>,
    pub(super) stats: ObservationStats,
    /// The bus name of the main window's application.
    pub(super) main_bus: Option<String>,
    /// The title of a modal dialog on top.
    pub(super) modal: Option<String>,
    /// A window whose accessible frame was not found (not on the bus yet, or not told apart
    /// from its siblings yet): its controls are not listed, and it is looked at again.
    pub(super) frame_missing: bool,
    /// Drawn nodes the trees do not list, for sight (`Observer::silent_regions`).
    pub(super) silent: Vec<Rect>,
    /// Where the popups read with the main window lie (popups.rs): what they cover of it is
    /// left out, as under a dialog.
    pub(super) popups: Vec<Rect>,
    /// The window's page has not rendered its route yet (route.rs).
    pub(super) route_pending: bool,
}

impl Observer<'_> {
    /// Step 2: the controls of the dialogs (first: they are on top and usually what needs an
    /// answer) and of the window, one group each, the popups drawn in it, and the title of a
    /// modal dialog among them (long: the windows are read one by one with one retry on a
    /// stale bus name, and the popups and the modal dialog are found from what that gathered).
    pub(super) async fn read_windows(
        &self,
        located: &Located,
        with_actions: bool,
        warnings: Vec<String>,
        pixels: Option<SheetPixels>,
    ) -> ReadWindows {
        let (main, attached) = (&located.main, located.attached.as_slice());
        let mut reading = Reading {
            trees: HashMap::new(),
            stats: ObservationStats::default(),
            warnings,
            silent: Vec::new(),
            route_pending: false,
            moved: HashMap::new(),
            pixels,
            counts: HashMap::new(),
        };
        let mut frames: HashMap<WinId, String> = HashMap::new();
        let mut frame_missing = false;
        let pids: Vec<u32> = attached
            .iter()
            .chain(std::iter::once(main))
            .filter_map(|w| w.pid)
            .collect();
        let mut by_pid = self.apps.bus_map(self.bus, &pids, false).await;
        let mut refreshed = false;
        let mut groups: Vec<Vec<Fetched>> = Vec::new();
        for w in attached.iter().chain(std::iter::once(main)) {
            let Some(bus) = w.pid.and_then(|p| by_pid.get(&p)).cloned() else {
                reading.warnings.push(not_on_bus(w));
                continue;
            };
            let sought = Sought {
                window: w,
                windows: &located.windows,
                frame: None,
            };
            let mut result = self
                .window_controls(&bus, &sought, with_actions, &mut reading)
                .await;
            if result.is_err() && !refreshed {
                // the cached bus name may be stale (the application restarted): look again
                refreshed = true;
                by_pid = self.apps.bus_map(self.bus, &pids, true).await;
                if let Some(bus) = w.pid.and_then(|p| by_pid.get(&p)).cloned() {
                    reading.trees.remove(&bus);
                    result = self
                        .window_controls(&bus, &sought, with_actions, &mut reading)
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
                    let e = format!("controls of window {} could not be read: {e}", w.id);
                    reading.warnings.push(e)
                }
            }
        }
        let main_bus = main.pid.and_then(|p| by_pid.get(&p)).cloned();
        let popups = self
            .read_popups(
                located,
                main_bus.as_deref(),
                &frames,
                with_actions,
                &mut reading,
                &mut groups,
            )
            .await;
        let modal = self
            .modal_dialog(main, attached, &by_pid, &reading.trees, &frames)
            .await;
        ReadWindows {
            groups,
            warnings: reading.warnings,
            stats: reading.stats,
            main_bus,
            modal,
            frame_missing,
            silent: reading.silent,
            popups,
            route_pending: reading.route_pending,
        }
    }

    /// A step of [`Self::read_windows`]: the popups drawn in the main window (popups.rs) read
    /// as groups on top of its own (the last of `groups`), once the window itself was read;
    /// returns where they lie.
    async fn read_popups(
        &self,
        located: &Located,
        main_bus: Option<&str>,
        frames: &HashMap<WinId, String>,
        with_actions: bool,
        reading: &mut Reading,
        groups: &mut Vec<Vec<Fetched>>,
    ) -> Vec<Rect> {
        let main = &located.main;
        let mut popups = Vec::new();
        let (Some(bus), true) = (main_bus, frames.contains_key(&main.id)) else {
            return popups;
        };
        let frame = frames.get(&main.id).map(String::as_str).unwrap_or_default();
        let unlisted = self.add_shown_popups(bus, frame, &mut reading.trees).await;
        let taken: Vec<String> = frames.values().cloned().collect();
        let found = self
            .popups_of(bus, &reading.trees, main, &located.windows, &taken)
            .await;
        for (frame, rect) in found {
            if unlisted.contains(&frame) {
                self.place_entries(bus, &frame, rect, reading).await;
            }
            let sought = Sought {
                window: main,
                windows: &located.windows,
                frame: Some(&frame),
            };
            match self
                .window_controls(bus, &sought, with_actions, reading)
                .await
            {
                // on top of the window, as its dialogs are: read before it
                Ok((g, _)) => {
                    groups.insert(groups.len().saturating_sub(1), g);
                    popups.push(rect);
                }
                Err(e) => reading.warnings.push(format!(
                    "controls of a popup of the window could not be read: {e}"
                )),
            }
        }
        popups
    }

    /// A step of [`Self::read_popups`]: a Qt application's popups that its tree does not
    /// list (a11y/shown.rs: its context and tool button menus), read live and put under its
    /// root while they are open, so that they are found as the popups of its window. The
    /// application is listened to from its first observation on (before that, nothing).
    /// Returns the popups put in. At the first observation of the application its menu
    /// bar's menus are listed once (`prime_menus`).
    async fn add_shown_popups(
        &self,
        bus: &str,
        frame: &str,
        trees: &mut HashMap<String, AppTree>,
    ) -> HashSet<String> {
        let mut added = HashSet::new();
        if !self.apps.is_qt(self.bus, bus).await {
            return added;
        }
        let first = self.bus.shown.watch(bus).await;
        let Some(tree) = trees.get(bus) else {
            return added;
        };
        if first {
            self.prime_menus(bus, tree, frame).await;
        }
        let first = tree.kids(crate::vocab::ROOT_PATH).len();
        let unlisted: Vec<String> = self
            .bus
            .shown
            .shown(bus)
            .await
            .into_iter()
            .filter(|p| !tree.nodes.contains_key(p))
            .collect();
        let nodes = futures::future::join_all(unlisted.iter().enumerate().map(|(i, p)| {
            self.bus
                .node(bus, p, crate::vocab::ROOT_PATH, (first + i) as i32)
        }))
        .await;
        if let Some(tree) = trees.get_mut(bus) {
            for n in nodes.into_iter().flatten() {
                if popups::is_open_menu(&n) {
                    added.insert(n.path.clone());
                    tree.insert(n);
                }
            }
            tree.sort_children();
        }
        added
    }

    /// Qt makes one accessible object per action, for the first menu that lists it, and
    /// answers nothing for it once that menu is gone: Dolphin makes a context menu at each
    /// right click, and the actions it shares with the menu bar ("Rename...", "Copy") were
    /// null objects in every later context menu. Listing the menu bar's menus (hidden or
    /// not) before any popup opens makes those menus, which live as long as the window,
    /// the owners (about 2 calls per menu; at most [`MAX_PRIMED`] menus).
    async fn prime_menus(&self, bus: &str, tree: &AppTree, frame: &str) {
        let bars: Vec<String> = tree
            .subtree(frame, self.config.walk_max_nodes)
            .into_iter()
            .filter(|n| n.role == role::MENU_BAR)
            .take(2)
            .map(|n| n.path.clone())
            .collect();
        for bar in bars {
            let Ok(menus) = self.bus.children(bus, &bar).await else {
                continue;
            };
            futures::future::join_all(menus.iter().take(MAX_PRIMED).map(|m| async move {
                for popup in self.bus.children(bus, m).await.unwrap_or_default() {
                    let _ = self.bus.children(bus, &popup).await;
                }
            }))
            .await;
        }
    }

    /// A step of [`Self::read_popups`]: the entries of Qt popup `popup` (at `rect`) read live
    /// and put under it in the tree; those Qt places elsewhere (popups.rs, `entry_places`)
    /// are marked shown where they are drawn, and their places kept for their details.
    async fn place_entries(&self, bus: &str, popup: &str, rect: Rect, reading: &mut Reading) {
        // (every child, those Qt answers with a null object too: they may take room)
        let Ok(kids) = self
            .bus
            .call::<_, Vec<(String, zbus::zvariant::OwnedObjectPath)>>(
                bus,
                popup,
                "org.a11y.atspi.Accessible",
                "GetChildren",
                &(),
            )
            .await
        else {
            return;
        };
        let kids: Vec<Option<String>> = kids
            .into_iter()
            .take(popups::MAX_ENTRIES)
            .map(|(b, p)| (b == bus).then(|| p.as_str().to_string()))
            .collect();
        let read = futures::future::join_all(kids.iter().enumerate().map(|(i, p)| async move {
            let Some(p) = p else {
                return (None, None);
            };
            let (n, ext) = tokio::join!(
                self.bus.node(bus, p, popup, i as i32),
                self.bus.extents(bus, p)
            );
            (n.ok(), ext.ok())
        }))
        .await;
        let entries: Vec<popups::Entry> = read
            .iter()
            .map(|(n, ext)| popups::Entry {
                role: n.as_ref().map_or(role::INVALID, |n| n.role),
                rect: ext.map(|(x, y, w, h)| Rect {
                    x,
                    y,
                    w: w.max(0) as u32,
                    h: h.max(0) as u32,
                }),
            })
            .collect();
        let places = popups::entry_places(rect, &entries);
        let Some(tree) = reading.trees.get_mut(bus) else {
            return;
        };
        for ((n, _), place) in read.into_iter().zip(places) {
            let Some(mut n) = n else { continue };
            if let Some(r) = place {
                n.states |= state::SHOWING | state::VISIBLE;
                reading.moved.insert(n.path.clone(), r);
            }
            tree.insert(n);
        }
        tree.sort_children();
    }

    /// A step of [`Self::read_windows`]: the popups drawn in window `main` that its
    /// application lists as top-level nodes of their own (popups.rs), the extents read only
    /// for the nodes that may be one; `taken`: the frames of the windows read already.
    async fn popups_of(
        &self,
        bus: &str,
        trees: &HashMap<String, AppTree>,
        main: &DisplayWindow,
        windows: &[DisplayWindow],
        taken: &[String],
    ) -> Vec<(String, Rect)> {
        let Some(tree) = trees.get(bus) else {
            return Vec::new();
        };
        let others: Vec<String> = windows
            .iter()
            .filter(|o| o.id != main.id && main.pid.is_some() && o.pid == main.pid)
            .map(|o| crate::names::collapse_ws(&o.title))
            .collect();
        let mut tops: Vec<popups::TopNode> = popups::top_nodes(tree)
            .into_iter()
            .filter(|t| popups::may_be_popup(t, taken, &others))
            .take(crate::a11y::bus::MAX_WINDOWS)
            .collect();
        // (extents relative to the window cannot be told from the window's own)
        let relative = self.apps.is_relative(self.bus, bus).await;
        if tops.is_empty() || extents_relative(self.display.coord_space(), relative) {
            return Vec::new();
        }
        let rects =
            futures::future::join_all(tops.iter().map(|t| self.bus.extents(bus, &t.path))).await;
        for (t, r) in tops.iter_mut().zip(rects) {
            t.rect = r.ok().map(|(x, y, w, h)| Rect {
                x,
                y,
                w: w.max(0) as u32,
                h: h.max(0) as u32,
            });
        }
        popups::popups(&tops, main.area, taken, &others)
    }

    /// A step of [`Self::read_windows`]: the title of a modal dialog on top of `main` among
    /// the windows `attached` to it (`modal::blocks`): the window under it takes no input
    /// until it closes. `frames`: the dialogs' accessible frames in their applications'
    /// `trees`.
    async fn modal_dialog(
        &self,
        main: &DisplayWindow,
        attached: &[DisplayWindow],
        by_pid: &HashMap<u32, String>,
        trees: &HashMap<String, AppTree>,
        frames: &HashMap<WinId, String>,
    ) -> Option<String> {
        let mut reports: HashMap<String, ModalityReport> = HashMap::new();
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
                return Some(w.title.clone());
            }
        }
        None
    }

    /// What the toolkit of application `bus` says about modality, asked once per
    /// observation.
    pub(super) async fn modality_report(
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

    /// The accessible frame of window `sought` in its application's tree (frames.rs): the
    /// extents of the top-level windows are read only when their names do not settle it, and
    /// not for a toolkit whose extents are relative to the window.
    pub(super) async fn frame_of(
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

    /// The controls of one window, from its application's tree, and its frame. The steps:
    /// the tree and the window's frame in it ([`Self::window_tree`]), the candidates in it,
    /// their details read and placed on the screen ([`Self::placed`]), then the controls as
    /// the agent sees them (alike unnamed items grouped, table rows folded, one focus, the
    /// sheets' cells, arrows named after their field).
    async fn window_controls(
        &self,
        bus: &str,
        sought: &Sought<'_>,
        with_actions: bool,
        reading: &mut Reading,
    ) -> Result<(Vec<Fetched>, String), LinuxError> {
        let Reading {
            trees,
            stats,
            warnings,
            silent,
            route_pending,
            moved,
            pixels,
            counts,
        } = reading;
        let w = sought.window;
        let t = Instant::now();
        let (frame, relative, open_menus, times) = self
            .window_tree(bus, sought, (trees, counts), stats, warnings)
            .await?;
        let tree = trees
            .get(bus)
            .ok_or_else(|| LinuxError::ActionFailed("tree vanished".into()))?;
        warnings.extend(crate::launch::toolkit::tree_warnings(
            tree,
            &frame,
            self.config.walk_max_nodes,
        ));
        // a browser's own page whose route is not drawn yet is read again (route.rs)
        *route_pending |= sought.frame.is_none() && self.route_pending(bus, tree, &frame).await;
        let subtree_len = tree.subtree(&frame, self.config.walk_max_nodes).len();
        stats.nodes += subtree_len;
        let (candidates, cut, repeats) =
            collect_candidates(tree, &frame, self.config.walk_max_nodes, &open_menus);
        let candidates = self.without_closed_lists(bus, tree, candidates).await;
        stats.repeats += repeats;
        stats.document_nodes += document_nodes(tree, &frame, self.config.walk_max_nodes);
        if cut {
            warnings.push(walk_cut_warning(self.config.walk_max_nodes));
        }
        stats.tree += t.elapsed();

        let t = Instant::now();
        let count = counts.get(bus).copied();
        let place = (bus, tree, frame.as_str(), relative, w, count);
        let (results, offset, win_rect, t_details) = self
            .placed(place, &candidates, moved, with_actions, warnings)
            .await;
        let drawn = self.silent_regions(bus, (tree, &frame), offset, win_rect);
        silent.extend(drawn.await);
        let in_pages = web_document_paths(tree, &frame, self.config.walk_max_nodes);
        count_page_controls(stats, &in_pages, &candidates, &results);
        let t_fetch = t.elapsed();
        let placed = (offset, win_rect, w.id);
        let seen = (&candidates[..], results, pixels.as_ref());
        let out = self
            .as_seen(bus, tree, &frame, seen, placed, warnings)
            .await;
        stats.details += t.elapsed();
        tracing::debug!(
            items_ms = times.0.as_millis() as u64,
            walk_ms = (times.1 - times.0).as_millis() as u64,
            announced = stats.announced,
            documents_ms = (times.2 - times.1).as_millis() as u64,
            details_ms = t_details.as_millis() as u64,
            names_ms = (t_fetch - t_details).as_millis() as u64,
            candidates = candidates.len(),
            sheets_ms = (t.elapsed() - t_fetch).as_millis() as u64,
            "window controls read"
        );
        Ok((out, frame))
    }

    /// A step of [`Self::window_controls`]: the candidates without the items of a closed
    /// combo box's list (a list of no size: candidates.rs, `combo_lists`).
    async fn without_closed_lists(
        &self,
        bus: &str,
        tree: &AppTree,
        candidates: Vec<Candidate>,
    ) -> Vec<Candidate> {
        let lists = combo_lists(tree, &candidates);
        if lists.is_empty() {
            return candidates;
        }
        let sizes =
            futures::future::join_all(lists.iter().map(|(p, _)| self.bus.extents(bus, p))).await;
        let closed: HashSet<usize> = lists
            .iter()
            .zip(sizes)
            .filter(|(_, e)| matches!(e, Ok((_, _, w, h)) if *w <= 0 || *h <= 0))
            .flat_map(|((_, items), _)| items.iter().copied())
            .collect();
        candidates
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !closed.contains(i))
            .map(|(_, c)| c)
            .collect()
    }

    /// A step of [`Self::window_controls`]: the controls that answered on screen as the agent
    /// sees them: alike unnamed items grouped, table rows folded, one focus, the sheets'
    /// visible cells read by range (never enumerated), arrows named after their field, only
    /// the shown one of controls stacked on one box (stacked.rs); the ones that did not
    /// answer are counted in a warning.
    #[allow(clippy::too_many_arguments)]
    async fn as_seen(
        &self,
        bus: &str,
        tree: &AppTree,
        frame: &str,
        (candidates, results, pixels): Seen<'_>,
        placed: ((i32, i32), Rect, WinId),
        warnings: &mut Vec<String>,
    ) -> Vec<Fetched> {
        // (a box and its entry named by one container are one control before names are counted)
        let answered = unshared(folded(answered(candidates, results), tree));
        let out = group_unnamed(answered.out, &answered.tables, &answered.parents);
        let mut out = rows_as_controls(out, &answered.tables);
        self.one_focused(bus, &mut out).await;
        self.sheet_reader()
            .sheet_controls(
                bus,
                tree,
                frame,
                placed,
                (self.kept.event_count(bus), pixels),
                &mut out,
                warnings,
            )
            .await;
        let out = name_field_arrows(out);
        let out = self.without_stacked(bus, frame, placed.0, out).await;
        if answered.failed > 0 {
            warnings.push(format!(
                "{} of {} controls did not answer and are left out (first error: {})",
                answered.failed,
                candidates.len(),
                answered.first_err.unwrap_or_default()
            ));
        }
        out
    }

    /// A step of [`Self::window_controls`]: the application's tree (LibreOffice's kept from
    /// the last observation when it sent no event since, changes.rs), the window's frame in
    /// it, completed by a walk where the cache lacks nodes, with GTK 4's closed popovers
    /// taken out, its office documents read, and GTK2's open menus found. Returns the frame,
    /// whether the toolkit's extents are window-relative, the open menus, and when the tree,
    /// the walk and the documents were done (since the start of the observation of it).
    async fn window_tree(
        &self,
        bus: &str,
        sought: &Sought<'_>,
        (trees, counts): (&mut HashMap<String, AppTree>, &mut HashMap<String, u64>),
        stats: &mut ObservationStats,
        warnings: &mut Vec<String>,
    ) -> Result<
        (
            String,
            bool,
            HashSet<String>,
            (Duration, Duration, Duration),
        ),
        LinuxError,
    > {
        let t = Instant::now();
        let mut kept_count = None;
        if !trees.contains_key(bus) {
            let (count, kept) = self.kept_tree(bus).await;
            kept_count = Some(count);
            if let Some(c) = count {
                counts.insert(bus.to_string(), c);
            }
            let tree = match kept {
                Some(t) => t,
                None => self.bus.tree(bus).await?,
            };
            trees.insert(bus.to_string(), tree);
        }
        let relative = self.apps.is_relative(self.bus, bus).await;
        let tree = trees
            .get_mut(bus)
            .ok_or_else(|| LinuxError::ActionFailed("tree vanished".into()))?;
        let frame = match sought.frame {
            Some(f) => f.to_string(),
            None => self.frame_of(bus, tree, sought, relative).await?,
        };
        let t_items = t.elapsed();
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
        // after the walk: LibreOffice's cache files its document under a root pane it lacks,
        // so the cache alone never shows the document in its window (judged from it, a
        // loaded Calc was read three times, 1.2 s, before its first observation)
        // (a popup's frame is not the window's: what is known of the window's page stays)
        if sought.frame.is_none() {
            self.note_loaded_tree(bus, sought.window.id, tree, &frame)
                .await;
        }
        let t_walk = t.elapsed();
        // office documents: their visible paragraphs, cells, shapes and slides (office.rs)
        self.office()
            .read_documents(bus, tree, &frame, warnings)
            .await;
        let t_docs = t.elapsed();
        // GTK2: items of an open menu are never SHOWING
        let open_menus = if self.apps.is_gtk2(self.bus, bus).await {
            let top_menus = crate::apps::menus::top_menus(tree, &frame, self.config.walk_max_nodes);
            self.menus().open_menus(bus, tree, top_menus, false).await
        } else {
            HashSet::new()
        };
        Ok((frame, relative, open_menus, (t_items, t_walk, t_docs)))
    }

    /// A step of [`Self::window_controls`]: each candidate's details read and placed on the
    /// screen (`fetch_control`), with the offset of the window's extents and the rectangle
    /// that clips them, and how long the details took. Where the controls sit (GTK4's
    /// window-relative extents are offset by where the toolkit's window sits; a fresh
    /// LibreOffice window reports its own controls shifted, office.rs) is read at the same
    /// time as the controls' own details: one round trip to the application instead of two.
    #[allow(clippy::type_complexity)]
    async fn placed(
        &self,
        (bus, tree, frame, relative, w, count): (
            &str,
            &AppTree,
            &str,
            bool,
            &DisplayWindow,
            Option<u64>,
        ),
        candidates: &[Candidate],
        moved: &HashMap<String, Rect>,
        with_actions: bool,
        warnings: &mut Vec<String>,
    ) -> (
        Vec<Result<Option<Fetched>, LinuxError>>,
        (i32, i32),
        Rect,
        Duration,
    ) {
        let t = Instant::now();
        // (a window placed nowhere: its controls are clipped to the screen)
        let win_rect = w.area.unwrap_or_else(|| self.display.screen());
        let nodes: Vec<&Node> = candidates.iter().map(|c| &c.node).collect();
        let office = self.office();
        let placing =
            count.map(|now| self.placing((bus, tree, frame), candidates, now, with_actions));
        let known = placing
            .as_ref()
            .map(|p| p.known_fixes(candidates))
            .unwrap_or_default();
        let placement = async {
            tokio::join!(
                self.frame_offset(bus, frame, relative, w),
                office.extent_corrections(bus, tree, frame, &nodes, &known)
            )
        };
        let details = self.details_placed(bus, candidates, placing.as_ref(), with_actions);
        let ((offset, mut corrections), read) = tokio::join!(placement, details);
        self.correct_again(
            (bus, tree, frame),
            &nodes,
            &read.read_again,
            &known,
            &mut corrections,
        )
        .await;
        if let Some(places) = read.read_now {
            self.places.keep(bus, places.with_fixes(&corrections));
        }
        let details = read.details;
        let fixes = corrections.fixes;
        let offset = offset.unwrap_or_else(|e| {
            warnings.push(format!(
                "window extents unknown, rectangles may be off: {e}"
            ));
            w.area.map_or((0, 0), |a| (a.x, a.y))
        });
        let t_details = t.elapsed();
        let results = futures::future::join_all(candidates.iter().zip(details).map(|(c, d)| {
            let (dx, dy) = fixes.get(&c.node.path).copied().unwrap_or((0, 0));
            // (a Qt popup's entry drawn elsewhere than it says: where it is drawn)
            let d = match moved.get(&c.node.path) {
                Some(r) => (Ok(Some((r.x, r.y, r.w as i32, r.h as i32))), d.1, d.2, d.3),
                None => d,
            };
            let offset = (offset.0 + dx, offset.1 + dy);
            self.fetch_control(bus, c, d, offset, win_rect, w.id)
        }))
        .await;
        (results, offset, win_rect, t_details)
    }

    /// A kept control whose bar changed size is placed anew: its rectangle correction too,
    /// when it was taken from what was kept (the others' were just worked out).
    async fn correct_again(
        &self,
        (bus, tree, frame): (&str, &AppTree, &str),
        nodes: &[&Node],
        read_again: &[usize],
        known: &HashMap<String, KnownFix>,
        corrections: &mut Corrections,
    ) {
        let again: Vec<&Node> = read_again
            .iter()
            .map(|i| nodes[*i])
            .filter(|n| known.contains_key(&n.path))
            .collect();
        if again.is_empty() || corrections.shift.is_none() {
            return;
        }
        let anew = self
            .office()
            .extent_corrections(bus, tree, frame, &again, &HashMap::new())
            .await;
        for n in &again {
            corrections.fixes.remove(&n.path);
        }
        corrections.fixes.extend(anew.fixes);
    }

    /// GTK 4 keeps a closed popover (a drop-down's list) in its cache, VISIBLE, with its
    /// items where they were drawn; a live `GetChildren` of its parent no longer lists it.
    /// Such popovers are taken out of the tree, so that their items are not listed (a click
    /// on one would land on whatever is drawn there now). One call per popover's parent,
    /// [`MAX_POPOVERS`] at most.
    pub(super) async fn drop_closed_popovers(&self, bus: &str, tree: &mut AppTree, frame: &str) {
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
    pub(super) async fn one_focused(&self, bus: &str, out: &mut [Fetched]) {
        let marked: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].detail.control.states.focused)
            .collect();
        if marked.len() < 2 {
            return;
        }
        let paths: Vec<String> = marked.iter().map(|&i| out[i].info.path.clone()).collect();
        let live = futures::future::join_all(paths.iter().map(|p| async move {
            self.bus
                .live_states(bus, p)
                .await
                .map(|s| s & state::FOCUSED != 0)
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

    /// Where a window's controls are offset on the screen (`display::extents_origin`): on
    /// X11, GTK4 (`relative`) gives extents within the toolkit's window, which sits centred in
    /// the X window `w` (its shadow around it); other toolkits give screen extents.
    pub(super) async fn frame_offset(
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
}

/// What reading the windows of one observation gathers: the applications' trees (each read
/// once), the timings and the warnings.
/// The candidates of a window, what reading their details gave, and the window's capture
/// while it is taken (for its sheets).
type Seen<'a> = (
    &'a [Candidate],
    Vec<Result<Option<Fetched>, LinuxError>>,
    Option<&'a SheetPixels>,
);

struct Reading {
    trees: HashMap<String, AppTree>,
    stats: ObservationStats,
    warnings: Vec<String>,
    silent: Vec<Rect>,
    route_pending: bool,
    /// Entries of a Qt popup drawn elsewhere than they say, and where they are drawn
    /// (popups.rs, `entry_places`).
    moved: HashMap<String, Rect>,
    /// The window's capture while it is taken, for the sheets' read (apps/inked.rs).
    pixels: Option<SheetPixels>,
    /// Each application's event count when this observation began, where its events are
    /// counted (the count its tree and its controls' places are kept at: places.rs).
    counts: HashMap<String, u64>,
}

/// The warning for a window whose application is not on the accessibility bus.
fn not_on_bus(w: &DisplayWindow) -> String {
    let why = crate::launch::toolkit::not_on_bus_hint(w.pid);
    format!(
        "window {} ({:?}) is not on the accessibility bus: only its screenshot is available ({why})",
        w.id, w.title
    )
}

/// The controls that answered on screen, each with its table (when a cell) and its parent,
/// and how many did not answer (with the first error).
struct Answered {
    out: Vec<Fetched>,
    tables: Vec<Option<String>>,
    parents: Vec<String>,
    failed: usize,
    first_err: Option<String>,
}

/// A step of `window_controls`: the candidates' results sorted into the controls on screen
/// and the failures.
fn answered(
    candidates: &[Candidate],
    results: Vec<Result<Option<Fetched>, LinuxError>>,
) -> Answered {
    let mut a = Answered {
        out: Vec::new(),
        tables: Vec::new(),
        parents: Vec::new(),
        failed: 0,
        first_err: None,
    };
    for (c, r) in candidates.iter().zip(results) {
        match r {
            Ok(Some(f)) => {
                a.out.push(f);
                a.tables.push(c.table.clone());
                a.parents.push(c.node.parent.clone());
            }
            Ok(None) => {}
            Err(e) => {
                a.failed += 1;
                a.first_err.get_or_insert(e.to_string());
            }
        }
    }
    a
}

/// A container's name that would name several fields of the window at once names none of
/// them: each takes the name it has without it (names.rs, `shared_container_names`).
fn unshared(mut a: Answered) -> Answered {
    let shared: HashSet<String> = crate::names::shared_container_names(a.out.iter().map(|f| {
        f.by_container
            .as_ref()
            .map(|_| f.detail.control.name.as_str())
    }))
    .into_iter()
    .map(str::to_string)
    .collect();
    let mut renamed = Vec::new();
    for (i, f) in a.out.iter_mut().enumerate() {
        if shared.contains(&f.detail.control.name) {
            if let Some(name) = f.by_container.take() {
                f.detail.control.name = name.clone();
                f.info.name = name;
                renamed.push(i);
            }
        }
    }
    // the names they take instead may be shared too (KolourPaint's three "Dimensions" spin
    // buttons each have the label "x" just left of them): those name none of them either
    let again: HashSet<String> = crate::names::shared_container_names(
        renamed
            .iter()
            .map(|&i| Some(a.out[i].detail.control.name.as_str())),
    )
    .into_iter()
    .map(str::to_string)
    .collect();
    for &i in &renamed {
        let f = &mut a.out[i];
        if again.contains(&f.detail.control.name) {
            f.detail.control.name.clear();
            f.info.name.clear();
        }
    }
    a
}

/// The controls that answered, each composite (a combo box and its entry: composite.rs) as
/// one line, the part kept for the actions that fit it.
fn folded(a: Answered, tree: &AppTree) -> Answered {
    let pieces: Vec<composite::Piece> = a
        .out
        .iter()
        .map(|f| {
            let mut ancestors = Vec::new();
            let mut at = f.info.path.as_str();
            while let Some(n) = tree.nodes.get(at).filter(|_| ancestors.len() < 2) {
                if n.parent == n.path || n.parent.is_empty() {
                    break;
                }
                ancestors.push(n.parent.clone());
                at = n.parent.as_str();
            }
            // a slide's shape: a panel right under the presentation (apps/office.rs)
            let shape = f.info.seen.role == role::PANEL
                && ancestors
                    .first()
                    .and_then(|p| tree.nodes.get(p.as_str()))
                    .is_some_and(|p| p.role == role::DOCUMENT_PRESENTATION);
            composite::Piece {
                path: f.info.path.clone(),
                ancestors,
                shape,
                role: f.info.seen.role,
                // a container's name is none of its own: GIMP's "Swap compression" box and
                // its entry named "Resource Consumption" are one control
                name: if f.by_container.is_some() {
                    String::new()
                } else {
                    f.detail.control.name.clone()
                },
            }
        })
        .collect();
    let folds = composite::composites(&pieces);
    if folds.is_empty() {
        return a;
    }
    let Answered {
        out,
        tables,
        parents,
        failed,
        first_err,
    } = a;
    let mut slots: Vec<Option<Fetched>> = out.into_iter().map(Some).collect();
    let mut parts: HashMap<usize, Fetched> = HashMap::new();
    for &(_, p) in &folds {
        if let Some(f) = slots[p].take() {
            parts.insert(p, f);
        }
    }
    let mut kept = Answered {
        out: Vec::new(),
        tables: Vec::new(),
        parents: Vec::new(),
        failed,
        first_err,
    };
    let outer_of: HashMap<usize, usize> = folds.iter().copied().collect();
    for (i, ((slot, t), parent)) in slots.into_iter().zip(tables).zip(parents).enumerate() {
        let Some(mut f) = slot else { continue };
        if let Some(part) = outer_of.get(&i).and_then(|p| parts.remove(p)) {
            super::arrange::merge_part(&mut f, part);
        }
        kept.out.push(f);
        kept.tables.push(t);
        kept.parents.push(parent);
    }
    kept
}

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

/// Nodes inside the web documents of the window (at most `limit` looked at).
fn document_nodes(tree: &AppTree, frame: &str, limit: usize) -> usize {
    tree.subtree(frame, limit)
        .iter()
        .filter(|n| n.role == role::DOCUMENT_WEB)
        .map(|d| tree.subtree(&d.path, limit).len().saturating_sub(1))
        .sum()
}

/// A step of `Observer::window_controls`: the warning for a walk cut at `max` nodes.
fn walk_cut_warning(max: usize) -> String {
    format!(
        "the window has more than {max} accessible nodes: only the first {max} were read, some \
         controls may be missing"
    )
}

/// A step of `Observer::window_controls`: count the candidates inside the window's web
/// documents, and those of them on screen (one listed out of view does not say the page was
/// laid out).
fn count_page_controls(
    stats: &mut ObservationStats,
    in_pages: &HashSet<&str>,
    candidates: &[Candidate],
    results: &[Result<Option<Fetched>, LinuxError>],
) {
    for (c, r) in candidates.iter().zip(results) {
        if in_pages.contains(c.node.path.as_str()) {
            stats.document_candidates += 1;
            stats.document_controls +=
                usize::from(matches!(r, Ok(Some(f)) if f.info.place.is_in_view()));
        }
    }
}
