//! Waiting for a page or a document to finish loading before a window is observed (issue 23).
//!
//! A browser that navigates keeps showing the old page until the server answers; a window an
//! application has just mapped can still be empty (LibreOffice maps its document window
//! seconds before it puts the document in it). An observation taken then shows the old page
//! or nothing. Before a window is observed, [`LinuxDesktop::wait_loaded`] reads a few things
//! (a handful of calls on nodes it knows, no tree walk) and [`decide`] (pure) says whether the
//! window is ready, worth waiting for, or given up on:
//!
//! - the documents the window's frame embeds (`RELATION_EMBEDS`, set by Chromium and Gecko on
//!   the frame for its active document): one that is `BUSY` is loading (Gecko sets it on the
//!   old document as soon as a navigation starts, Chromium once the answer comes); a browser
//!   window without a document, or with an empty one (no name, no children), has not got its
//!   page yet (a browser just launched on a page: "Untitled" and empty);
//! - Chromium's reload button (the node whose attribute `class` is `ReloadButton`): while a
//!   navigation waits for the server it turns into a stop button (its description says
//!   "Stop"); nothing else in Chromium's tree changes until the answer comes;
//! - the window's frame has no children yet: the application has not built its content.
//!
//! - after an action that may navigate (Enter, a click on a link) in a browser, the page
//!   may turn busy only some time after the action settled (Firefox under load): until the
//!   look sees the navigation start (busy, stop mode, another document) it waits, at most
//!   [`NAV_START`] after the browser read the action's input (it answered a ping sent
//!   behind it: with three busy loops on two cores Firefox read an Enter 0.5–0.75 s after
//!   it was sent, and its page turned busy 0.28–0.36 s after that); once it has seen the
//!   navigation loading, the old document may stay a while after the answer came (Firefox
//!   on a loaded machine): it waits for another document ([`shown_documents`]: not the old
//!   one emptied), at most [`NAV_SWAP`] after the last sign of the load; a window with no
//!   document at all in between (the old one gone, the new one not there yet) is waited
//!   for up to the bound, as a load.
//!
//! The first look runs at the same time as the observation's own reading of the window, so
//! on a loaded page it adds nothing. When it says the window is loading, the same few calls
//! are repeated every [`POLL`] up to the configured bound (`LinuxConfig::load_wait`), then the
//! window is read again; an observation taken after the bound says that the page was still
//! loading. A bound of 0 switches the wait off (no call at all).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::a11y::bus::AppTree;
use crate::display::WinId;
use crate::vocab::{role, OFFICE_DOCUMENTS};

/// The pause before a window whose accessible frame was not found is read again.
pub(crate) const FRAME_POLL: Duration = Duration::from_millis(200);
/// Interval between two looks while a page loads (the wait ends at most this long after the
/// load does).
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// Longest wait for a browser window's document to appear or get content: an empty page
/// (`about:blank`) is a page.
pub(crate) const EMPTY_MAX: Duration = Duration::from_secs(3);
/// Most reads taken again when a loaded page is missing from the read ([`page_missed`]).
pub(crate) const PAGE_REREADS: usize = 5;
/// The pause before each of them.
pub(crate) const PAGE_REREAD_PAUSE: Duration = Duration::from_millis(100);
/// Interval between two reads of a LibreOffice window whose document is not in it yet (a
/// whole read of the window each time).
pub(crate) const OFFICE_POLL: Duration = Duration::from_millis(250);
/// Longest wait, after the browser read an action that may navigate, for the navigation to
/// start.
pub(crate) const NAV_START: Duration = Duration::from_secs(1);
/// Longest wait, once a navigation was seen loading, between its last sign (busy, a stop
/// button) and the new document in the window: a loaded machine (a load average of 11 with
/// two cores) made Firefox take over 0.9 s to swap the documents after the answer came.
pub(crate) const NAV_SWAP: Duration = Duration::from_secs(3);
/// Longest time into an observation that a browser's own page whose route is not rendered
/// is waited for (route.rs).
pub(crate) const ROUTE_MAX: Duration = Duration::from_secs(4);
/// The pause before such a page is read again.
pub(crate) const ROUTE_POLL: Duration = Duration::from_millis(100);
/// `Accessible.GetRelationSet`'s code of `RELATION_EMBEDS`.
pub(super) const RELATION_EMBEDS: u32 = 13;
/// The `BUSY` state bit.
pub(super) const BUSY: u64 = atspi::State::Busy as u64;
pub(super) const ACC: &str = "org.a11y.atspi.Accessible";

/// What kind of application a window belongs to, as far as loading goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppKind {
    /// A web engine (Chromium, Gecko): its frame embeds the page's document.
    Browser,
    /// LibreOffice: its document window is mapped before the document is put in it.
    Office,
    /// Anything else: only a frame without children counts as loading.
    Other,
}

/// One document the frame embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocRead {
    /// The document says it is loading.
    pub busy: bool,
    /// No name and no children (a browser that has not got its page yet).
    pub empty: bool,
    /// It has children (content the read of the window must reach).
    pub filled: bool,
}

/// What one look at the window read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadRead {
    /// The application's kind.
    pub kind: AppKind,
    /// The window's frame on the bus and its number of children; `None`: no frame (yet).
    pub frame_children: Option<i32>,
    /// The documents the frame embeds.
    pub documents: Vec<DocRead>,
    /// Chromium's reload button is a stop button: a navigation waits for the server.
    pub navigating: bool,
    /// The documents' paths and names (another document: a navigation happened).
    pub doc_ids: Vec<(String, String)>,
}

/// A navigation an action may have started (see [`NAV_START`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expecting {
    /// Time since the last sign of it: the action's end, or the last look that saw the
    /// window loading (Chromium turns its stop button back before it shows the new page).
    pub since_activity: Duration,
    /// The window shows another document than before the action: the navigation is done.
    pub replaced: bool,
    /// The window was seen loading since the action: a navigation began, and is not over
    /// until another document is shown (at most [`NAV_SWAP`] after its last sign).
    pub loading_seen: bool,
}

/// Why a window counts as loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loading {
    /// A document is busy.
    Busy,
    /// A navigation waits for the server's answer.
    Navigating,
    /// A browser window has no document, or an empty one.
    NoDocument,
    /// The window's frame has no content yet.
    NotBuilt,
}

/// What [`decide`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadDecision {
    /// Observe now.
    Ready,
    /// Look again after this long.
    Wait(Duration),
    /// Observe now, and say that the window was still loading.
    GiveUp(Loading),
}

/// How an observation is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// For the step that asks: a loading page or document is waited for (bounded).
    Now,
    /// Ahead of the next step, while an action settles (`act::wait`): a window that is
    /// loading, or whose document is not in it yet, is not waited for (an error: the next
    /// step observes it once loaded).
    Ahead,
}

/// Which look at a loading window is taken: the first (made while the observation reads the
/// window) at the observation's pace, or one of the looks of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Looking {
    First(Pace),
    Waiting,
}

/// What a look does when [`decide`] says to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnWait {
    /// Look again after this long.
    Sleep(Duration),
    /// Let the observation wait (`wait_loaded`) and read the window again.
    HandBack,
    /// Observe no further: ahead of the next step, a loading window is not waited for.
    Refuse,
}

/// What a look does when [`decide`] says to wait `d`: a first look hands the wait to the
/// observation (which reads the window again after it), or refuses it ahead of the next step;
/// the looks of a wait sleep.
pub(crate) fn on_wait(looking: Looking, d: Duration) -> OnWait {
    match looking {
        Looking::First(Pace::Now) => OnWait::HandBack,
        Looking::First(Pace::Ahead) => OnWait::Refuse,
        Looking::Waiting => OnWait::Sleep(d),
    }
}

/// A wait's looks so far: when it started, the last sign of a navigation an action may have
/// started (`activity`: the action, or the last look that saw the window loading), and whether
/// a look saw it loading.
#[derive(Debug, Clone)]
pub(crate) struct Waiting {
    pub started: Instant,
    pub expected: Option<Expected>,
    pub activity: Option<Instant>,
    pub loading_seen: bool,
    pub waits: usize,
}

/// Why an observation reads its window again after a read ([`reread`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reread {
    /// LibreOffice's document is not in its window yet: after [`OFFICE_POLL`] and the load
    /// wait, read again.
    Office,
    /// The loaded page's controls are nowhere in the read (Firefox lays a new window's page
    /// out for accessibility after it has loaded): after [`PAGE_REREAD_PAUSE`], read again.
    Page,
    /// A browser's own page has not rendered its route yet (route.rs): after
    /// [`ROUTE_POLL`], read again, up to [`ROUTE_MAX`] into the observation.
    Route,
    /// The walk of a loaded page stopped at its budget (a browser just started on its page
    /// answers slowly for a while): read once more at once.
    Cut,
    /// The window's accessible frame is not there yet (a popup being built): after
    /// [`FRAME_POLL`], read again.
    Frame,
    /// Ahead of the next step, the document is not in its window yet: not waited for.
    NotYet,
    /// The read stands.
    Done,
}

/// What a read of a window showed, as far as reading it again goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReadFacts {
    /// LibreOffice: the read found the window's document missing (`Probe::office_unbuilt`).
    pub office_unbuilt: bool,
    /// The browser documents the load wait found loaded with children.
    pub pages: usize,
    /// Candidate controls inside the window's web documents, and how many were on screen.
    pub candidates: usize,
    pub on_screen: usize,
    /// The walk stopped at its budget.
    pub walk_cut: bool,
    /// The window's accessible frame was not found.
    pub frame_missing: bool,
    /// A browser's own page has not rendered its route yet (route.rs).
    pub route_pending: bool,
}

/// Which re-read an observation is at: they come in this order, and a kind never comes back
/// once a later one did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    #[default]
    Office,
    Page,
    Route,
    Cut,
    Frame,
}

/// The re-reads an observation made so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rereads {
    stage: Stage,
    pages: usize,
}

/// Whether to read a window again after a read that showed `facts`, `elapsed` into the
/// observation, the load wait bounded by `bound` (0: off); `done` is updated. In order: while
/// LibreOffice's document is not in its window (ahead of the next step: [`Reread::NotYet`]);
/// while a loaded page's controls are nowhere on screen, [`PAGE_REREADS`] times at most; while
/// a browser's own page has not rendered its route, up to [`ROUTE_MAX`] into the
/// observation (ahead of the next step: [`Reread::NotYet`]); once when the walk of a loaded
/// page was cut; while the window's frame is missing. Nothing past the bound.
pub(crate) fn reread(
    facts: &ReadFacts,
    done: &mut Rereads,
    elapsed: Duration,
    bound: Duration,
    pace: Pace,
) -> Reread {
    let within = elapsed < bound;
    if done.stage == Stage::Office {
        if facts.office_unbuilt && within {
            return match pace {
                Pace::Now => Reread::Office,
                Pace::Ahead => Reread::NotYet,
            };
        }
        done.stage = Stage::Page;
    }
    if done.stage == Stage::Page {
        if page_missed(facts.pages, facts.candidates, facts.on_screen)
            && done.pages < PAGE_REREADS
            && within
        {
            done.pages += 1;
            return Reread::Page;
        }
        done.stage = Stage::Route;
    }
    if done.stage == Stage::Route {
        if facts.route_pending && within && elapsed < ROUTE_MAX {
            return match pace {
                Pace::Now => Reread::Route,
                Pace::Ahead => Reread::NotYet,
            };
        }
        done.stage = Stage::Cut;
    }
    if done.stage == Stage::Cut {
        done.stage = Stage::Frame;
        if cut_page(facts.pages, facts.walk_cut) && within {
            return Reread::Cut;
        }
    }
    if facts.frame_missing && within {
        return Reread::Frame;
    }
    Reread::Done
}

/// Why the window counts as loading, if it does.
pub(crate) fn loading(read: &LoadRead) -> Option<Loading> {
    if read.navigating {
        return Some(Loading::Navigating);
    }
    if read.documents.iter().any(|d| d.busy) {
        return Some(Loading::Busy);
    }
    match (read.kind, read.frame_children) {
        (AppKind::Other, _) => None,
        (_, None) | (_, Some(0)) => Some(Loading::NotBuilt),
        (AppKind::Browser, Some(_))
            if read.documents.is_empty() || read.documents.iter().all(|d| d.empty) =>
        {
            Some(Loading::NoDocument)
        }
        _ => None,
    }
}

/// Decide, `elapsed` into the wait (bounded by `bound`), what to do with what was read;
/// `expecting`: the last action may have started a navigation.
pub(crate) fn decide(
    read: &LoadRead,
    elapsed: Duration,
    bound: Duration,
    expecting: Option<Expecting>,
) -> LoadDecision {
    let Some(why) = loading(read) else {
        // a navigation the action started may not have begun yet (Firefox under load)
        return match expecting {
            Some(e) if !e.replaced && elapsed < bound => {
                let patience = if e.loading_seen { NAV_SWAP } else { NAV_START };
                match patience.checked_sub(e.since_activity) {
                    Some(left) if !left.is_zero() => LoadDecision::Wait(POLL.min(left)),
                    _ => LoadDecision::Ready,
                }
            }
            _ => LoadDecision::Ready,
        };
    };
    // a page that stays empty, or a window that never gets content, is what it is
    // (LibreOffice shows its window seconds before it puts the document in it: that is a
    // load, not an empty window)
    let patient = match why {
        // a navigation seen loading whose old document is gone and whose new one is not
        // there yet: Firefox swapping its documents (under load the window had no document
        // for a while right after the answer came), not an empty page
        Loading::NoDocument => expecting.is_some_and(|e| e.loading_seen && !e.replaced),
        Loading::NotBuilt => read.kind == AppKind::Office,
        Loading::Busy | Loading::Navigating => true,
    };
    let limit = if patient { bound } else { bound.min(EMPTY_MAX) };
    if elapsed >= limit {
        return if patient {
            LoadDecision::GiveUp(why)
        } else {
            LoadDecision::Ready
        };
    }
    LoadDecision::Wait(POLL.min(limit - elapsed))
}

/// The note an observation carries when the wait gave up after `waited`.
pub(crate) fn gave_up_note(why: Loading, waited: Duration) -> String {
    let what = match why {
        Loading::Busy => "the page was still loading",
        Loading::Navigating => "the page was still waiting for the server's answer",
        Loading::NoDocument => "the window had no page yet",
        Loading::NotBuilt => "the window had no content yet",
    };
    format!(
        "{what} after {:.1} s: what is shown may be incomplete or the previous page; observe \
         again later",
        waited.as_secs_f64()
    )
}

/// How [`LinuxDesktop::wait_loaded`] went.
#[derive(Debug, Default)]
pub(crate) struct LoadWait {
    /// What the observation says about it (when it gave up).
    pub notes: Vec<String>,
    /// The browser documents the look found loaded with children: the read must reach them.
    pub pages: usize,
}

/// Whether a read must be taken again: the look found a loaded page with content, the read
/// found candidate controls in it, and none of them on screen. Firefox lays a new window's
/// page out for accessibility after the page has loaded: the first read can find the page's
/// controls without their places, the next has them.
pub(crate) fn page_missed(pages: usize, candidates: usize, on_screen: usize) -> bool {
    pages > 0 && candidates > 0 && on_screen == 0
}

/// Whether a read is taken once more because its walk stopped at its budget: only for a
/// loaded page (a browser just started on it answers slowly for a while; the next walk of
/// the same page is quick). A window without a page keeps its one read: a large office
/// document or dialog cut by the budget would only be cut again.
pub(crate) fn cut_page(pages: usize, walk_cut: bool) -> bool {
    pages > 0 && walk_cut
}

/// What is known of a window's nodes for the look (found once, kept per X window).
#[derive(Debug, Clone, Default)]
pub(crate) struct Probe {
    /// The window's frame.
    pub frame: Option<String>,
    /// Chromium's reload button in the window.
    pub reload: Option<String>,
    /// The reload button was looked for (in the tree of an observation).
    pub reload_sought: bool,
    /// The documents the last look saw (paths and names).
    pub docs: Vec<(String, String)>,
    /// LibreOffice: the last observation's tree of the window had no document node yet.
    pub office_unbuilt: bool,
}

/// A navigation the last action on a window may have started.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// When the browser had read the action (or the action ended, if it did not answer).
    pub since: Instant,
    /// The documents before it.
    pub docs: Vec<(String, String)>,
    /// A look saw the window loading since (at `since`, then).
    pub loading_seen: bool,
}

/// The documents a look found with a name or content (paths and names): Firefox empties its
/// old document (no name, no children) a while before the new one takes its place, and that
/// empty one is not the new page.
pub(crate) fn shown_documents(read: &LoadRead) -> Vec<(String, String)> {
    read.documents
        .iter()
        .zip(&read.doc_ids)
        .filter(|(d, _)| !d.empty)
        .map(|(_, id)| id.clone())
        .collect()
}

/// The window shows other documents than `before` (a navigation replaced the page).
pub(crate) fn another_document(before: &[(String, String)], now: &[(String, String)]) -> bool {
    !now.is_empty() && now.iter().any(|d| !before.contains(d))
}

/// The probes of the windows seen, and the kind of each application.
#[derive(Debug, Default)]
pub(crate) struct LoadFacts {
    pub(super) probes: HashMap<(String, WinId), Probe>,
    pub(super) kinds: HashMap<String, AppKind>,
    /// Browser windows whose last action may have started a navigation.
    pub(super) expected: HashMap<WinId, Expected>,
}

/// Most windows whose probe is kept.
const MAX_PROBES: usize = 256;

impl LoadFacts {
    pub(super) fn probe(&self, bus: &str, xid: WinId) -> Probe {
        self.probes
            .get(&(bus.to_string(), xid))
            .cloned()
            .unwrap_or_default()
    }

    pub(super) fn keep(&mut self, bus: &str, xid: WinId, p: Probe) {
        if self.probes.len() >= MAX_PROBES {
            self.probes.clear();
        }
        self.probes.insert((bus.to_string(), xid), p);
    }

    /// Change some of what is kept of window `xid`, leaving the rest as it is now: a look and
    /// an observation's `note_loaded_tree` run at the same time, each learning its part.
    pub(super) fn update(&mut self, bus: &str, xid: WinId, change: impl FnOnce(&mut Probe)) {
        let mut kept = self.probe(bus, xid);
        change(&mut kept);
        self.keep(bus, xid, kept);
    }

    /// What a look learnt: the frame and the documents (the reload button is the
    /// observation's to find, `note_loaded_tree`, which may run at the same time).
    pub(super) fn note_look(&mut self, bus: &str, xid: WinId, p: &Probe, read: &LoadRead) {
        self.update(bus, xid, |kept| {
            kept.frame = p.frame.clone();
            kept.docs = read.doc_ids.clone();
        });
    }

    pub(super) fn expect(&mut self, xid: WinId, e: Expected) {
        if self.expected.len() >= MAX_PROBES {
            self.expected.clear();
        }
        self.expected.insert(xid, e);
    }
}

/// Whether an action may make a browser navigate: Enter typed, or a click on a link
/// (`role`: the control's AT-SPI role, when known).
pub(crate) fn may_navigate(action: &ufo_core::UiAction, role: Option<u32>) -> bool {
    use ufo_core::UiAction;
    match action {
        UiAction::TypeKeys { keys } => {
            let k = keys.to_ascii_lowercase();
            k.contains("{enter}") || k.contains("{return}") || k.contains('\n')
        }
        UiAction::Click { .. } => role == Some(role::LINK),
        UiAction::SetText { .. }
        | UiAction::Scroll { .. }
        | UiAction::Select { .. }
        | UiAction::ReadText
        | UiAction::Focus
        | UiAction::ClickAt { .. }
        | UiAction::ReadPixels
        | UiAction::Hover => false,
    }
}

/// The application kind from its toolkit's and its own name.
pub(crate) fn kind_of(toolkit: &str, app_name: &str) -> AppKind {
    let tk = toolkit.to_ascii_lowercase();
    if tk == "chromium" || tk == "gecko" {
        AppKind::Browser
    } else if tk == "vcl" || app_name.eq_ignore_ascii_case("soffice") {
        AppKind::Office
    } else {
        AppKind::Other
    }
}

/// A LibreOffice window named after a document ("Untitled 1 - LibreOffice Calc"; not the
/// Start Center, "LibreOffice", which has no document).
pub(crate) fn is_office_document_window(title: &str) -> bool {
    title.contains(" - LibreOffice")
}

/// A LibreOffice document window (by its frame's name) whose tree shows no document under
/// its frame: the document is not in it yet. Judged on the tree after the walk: the cache
/// alone files the document under a root pane it lacks (as if the window were empty).
pub(crate) fn office_document_missing(tree: &AppTree, frame: &str) -> bool {
    let name = tree.nodes.get(frame).map(|n| n.name.as_str()).unwrap_or("");
    is_office_document_window(name)
        && !tree
            .subtree(frame, 20_000)
            .iter()
            .any(|n| OFFICE_DOCUMENTS.contains(n.role))
}

/// Chromium's reload button is in its stop mode: its description names stopping.
pub(crate) fn is_stop_mode(description: &str) -> bool {
    description.to_ascii_lowercase().contains("stop")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Issue 48: LibreOffice's cache files a loaded sheet under a root pane it lacks: the
    /// cache alone shows the window without its document (a loaded Calc was read three
    /// times for it); the walk connects the root pane, and then the document is there.
    #[test]
    fn an_office_document_is_judged_on_the_walked_tree() {
        use crate::observe::fixtures::at;
        use crate::vocab::ROOT_PATH;
        let mut frame = at("/f", ROOT_PATH, 0, role::FRAME);
        frame.name = "cells.fods - LibreOffice Calc".into();
        frame.child_count = 1;
        let cached = vec![
            frame,
            at("/menu", "/f", 0, role::MENU_BAR),
            // under the root pane the cache lacks
            at("/doc", "/pane", 0, role::DOCUMENT_SPREADSHEET),
        ];
        let mut tree = AppTree::from_nodes(cached.clone());
        assert!(office_document_missing(&tree, "/f"), "the cache alone");
        // the walk lists the frame's children live and reads the root pane
        tree.insert(at("/pane", "/f", 1, role::ROOT_PANE));
        assert!(!office_document_missing(&tree, "/f"), "after the walk");
        // a window of another application is never judged so
        let mut other = cached;
        other[0].name = "Calculator".into();
        assert!(!office_document_missing(&AppTree::from_nodes(other), "/f"));
    }

    fn browser(docs: &[(bool, bool)], navigating: bool) -> LoadRead {
        LoadRead {
            kind: AppKind::Browser,
            frame_children: Some(3),
            documents: docs
                .iter()
                .map(|&(busy, empty)| DocRead {
                    busy,
                    empty,
                    filled: !empty,
                })
                .collect(),
            navigating,
            doc_ids: vec![("/doc/1".into(), "Page".into())],
        }
    }

    const BOUND: Duration = Duration::from_secs(10);

    #[test]
    fn the_documents_a_look_saw_outlive_the_tree_noted_after_it() {
        // an observation's note of its tree (the reload button, sought while the look ran)
        // lands after the look: the documents the next action compares with stay
        let mut facts = LoadFacts::default();
        let read = browser(&[(false, false)], false);
        let probe = Probe {
            frame: Some("/frame".into()),
            ..Probe::default()
        };
        facts.note_look(":1.5", WinId(7), &probe, &read);
        facts.update(":1.5", WinId(7), |p| {
            p.reload_sought = true;
            p.reload = Some("/reload".into());
        });
        let kept = facts.probe(":1.5", WinId(7));
        assert_eq!(kept.docs, read.doc_ids);
        assert_eq!(kept.frame.as_deref(), Some("/frame"));
        assert_eq!(kept.reload.as_deref(), Some("/reload"));
        // without them, any page would count as another document after the action
        assert!(another_document(&[], &read.doc_ids));
        assert!(!another_document(&kept.docs, &read.doc_ids));
    }

    #[test]
    fn a_loaded_page_is_ready_at_once() {
        let read = browser(&[(false, false)], false);
        assert_eq!(decide(&read, ms(0), BOUND, None), LoadDecision::Ready);
    }

    #[test]
    fn a_busy_document_or_a_pending_navigation_is_waited_for_then_given_up() {
        for read in [
            browser(&[(true, false)], false),
            browser(&[(false, false)], true),
        ] {
            assert_eq!(decide(&read, ms(0), BOUND, None), LoadDecision::Wait(POLL));
            assert_eq!(
                decide(&read, BOUND - ms(5), BOUND, None),
                LoadDecision::Wait(ms(5))
            );
            assert!(matches!(
                decide(&read, BOUND, BOUND, None),
                LoadDecision::GiveUp(Loading::Busy | Loading::Navigating)
            ));
        }
    }

    #[test]
    fn a_browser_window_without_a_page_waits_a_little_then_is_shown_as_it_is() {
        for read in [browser(&[], false), browser(&[(false, true)], false)] {
            assert_eq!(loading(&read), Some(Loading::NoDocument));
            assert_eq!(
                decide(&read, ms(100), BOUND, None),
                LoadDecision::Wait(POLL)
            );
            assert_eq!(decide(&read, EMPTY_MAX, BOUND, None), LoadDecision::Ready);
        }
        // one real document among empty ones (Chromium keeps empty frames) is a page
        assert_eq!(
            loading(&browser(&[(false, true), (false, false)], false)),
            None
        );
    }

    #[test]
    fn a_frame_without_content_loads_except_in_other_applications() {
        let office = LoadRead {
            kind: AppKind::Office,
            frame_children: Some(0),
            documents: vec![],
            navigating: false,
            doc_ids: vec![],
        };
        assert_eq!(loading(&office), Some(Loading::NotBuilt));
        let built = LoadRead {
            frame_children: Some(12),
            ..office.clone()
        };
        assert_eq!(decide(&built, ms(0), BOUND, None), LoadDecision::Ready);
        // LibreOffice fills its window seconds after showing it: waited for up to the bound
        assert_eq!(
            decide(&office, EMPTY_MAX + ms(4000), BOUND, None),
            LoadDecision::Wait(POLL)
        );
        assert_eq!(
            decide(&office, BOUND, BOUND, None),
            LoadDecision::GiveUp(Loading::NotBuilt)
        );
        let other = LoadRead {
            kind: AppKind::Other,
            ..office
        };
        assert_eq!(decide(&other, ms(0), BOUND, None), LoadDecision::Ready);
    }

    #[test]
    fn the_note_says_how_long_and_what_to_do() {
        let n = gave_up_note(Loading::Busy, ms(10_000));
        assert!(n.contains("still loading after 10.0 s"), "{n}");
        assert!(n.contains("observe again"), "{n}");
    }

    #[test]
    fn kinds_and_stop_mode() {
        assert_eq!(kind_of("Chromium", "Chromium"), AppKind::Browser);
        assert_eq!(kind_of("Gecko", "Firefox"), AppKind::Browser);
        assert_eq!(kind_of("VCL", "soffice"), AppKind::Office);
        assert_eq!(kind_of("GTK", "gnome-calculator"), AppKind::Other);
        assert!(is_stop_mode("Stop loading this page"));
        assert!(!is_stop_mode("Reload this page"));
    }

    #[test]
    fn after_a_navigating_action_the_start_of_the_load_is_waited_for_a_little() {
        let loaded = browser(&[(false, false)], false);
        let pending = |since: u64, replaced: bool| {
            Some(Expecting {
                since_activity: ms(since),
                replaced,
                loading_seen: false,
            })
        };
        // nothing seen yet: look again, until NAV_START after the action
        assert_eq!(
            decide(&loaded, ms(0), BOUND, pending(100, false)),
            LoadDecision::Wait(POLL)
        );
        assert_eq!(
            decide(&loaded, ms(0), BOUND, pending(990, false)),
            LoadDecision::Wait(ms(10))
        );
        assert_eq!(
            decide(&loaded, ms(0), BOUND, pending(1000, false)),
            LoadDecision::Ready
        );
        // another document is shown: the navigation is over
        assert_eq!(
            decide(&loaded, ms(0), BOUND, pending(100, true)),
            LoadDecision::Ready
        );
        // loading: waited for as any load
        let busy = browser(&[(true, false)], false);
        assert_eq!(
            decide(&busy, ms(0), BOUND, pending(100, false)),
            LoadDecision::Wait(POLL)
        );
        // and never past the bound
        assert_eq!(
            decide(&loaded, BOUND, BOUND, pending(100, false)),
            LoadDecision::Ready
        );
    }

    /// Firefox on a loaded machine: the old document stopped being busy when the answer
    /// came, and the new one took over 0.9 s more to replace it; the observation showed the
    /// old page.
    #[test]
    fn a_navigation_seen_loading_is_waited_for_until_the_new_document_shows() {
        let loaded = browser(&[(false, false)], false);
        let seen = |since: u64, replaced: bool| {
            Some(Expecting {
                since_activity: ms(since),
                replaced,
                loading_seen: true,
            })
        };
        assert_eq!(
            decide(&loaded, ms(0), BOUND, seen(1500, false)),
            LoadDecision::Wait(POLL)
        );
        assert_eq!(
            decide(&loaded, ms(0), BOUND, seen(2990, false)),
            LoadDecision::Wait(ms(10))
        );
        // at most NAV_SWAP after its last sign (a download replaces nothing)
        assert_eq!(
            decide(&loaded, ms(0), BOUND, seen(3000, false)),
            LoadDecision::Ready
        );
        assert_eq!(
            decide(&loaded, ms(0), BOUND, seen(100, true)),
            LoadDecision::Ready
        );
        assert_eq!(
            decide(&loaded, BOUND, BOUND, seen(100, false)),
            LoadDecision::Ready
        );
    }

    /// Firefox under load: the old document, busy for the 3 s the server took, left the
    /// frame just as the wait's EMPTY_MAX ran out; the window was observed without its page.
    #[test]
    fn a_navigation_between_two_documents_is_waited_for_past_the_empty_page_limit() {
        let between = browser(&[], false);
        let seen = Some(Expecting {
            since_activity: ms(0),
            replaced: false,
            loading_seen: true,
        });
        assert_eq!(
            decide(&between, EMPTY_MAX + ms(50), BOUND, seen),
            LoadDecision::Wait(POLL)
        );
        assert_eq!(
            decide(&between, BOUND, BOUND, seen),
            LoadDecision::GiveUp(Loading::NoDocument)
        );
        // without a navigation, an empty window is shown as it is after EMPTY_MAX
        assert_eq!(
            decide(&between, EMPTY_MAX + ms(50), BOUND, None),
            LoadDecision::Ready
        );
    }

    #[test]
    fn only_a_loaded_page_cut_by_the_walk_budget_is_read_again() {
        assert!(cut_page(1, true));
        assert!(!cut_page(1, false));
        assert!(!cut_page(0, true));
    }

    #[test]
    fn another_document_is_a_navigation() {
        let doc = |p: &str, n: &str| (p.to_string(), n.to_string());
        let before = vec![doc("/1", "First page")];
        assert!(!another_document(&before, &before));
        assert!(another_document(&before, &[doc("/2", "Slow page")]));
        assert!(another_document(&before, &[doc("/1", "Slow page")]));
        // no document at all is not a new page (it is waited for as a missing one)
        assert!(!another_document(&before, &[]));
        // nor is the old one emptied (Firefox, between the answer and the new page)
        let mut emptied = browser(&[(false, true)], false);
        emptied.doc_ids = vec![doc("/1", "")];
        assert!(!another_document(&before, &shown_documents(&emptied)));
        let mut next = browser(&[(false, false)], false);
        next.doc_ids = vec![doc("/1", "Slow page")];
        assert!(another_document(&before, &shown_documents(&next)));
    }

    #[test]
    fn enter_and_links_may_navigate() {
        use ufo_core::{Button, UiAction};
        let keys = |k: &str| UiAction::TypeKeys { keys: k.into() };
        assert!(may_navigate(&keys("{ctrl+a}example.org{ENTER}"), None));
        assert!(may_navigate(&keys("x{Enter}"), None));
        assert!(!may_navigate(&keys("{ctrl+s}"), None));
        let click = UiAction::Click {
            button: Button::Left,
            double: false,
        };
        assert!(may_navigate(&click, Some(role::LINK)));
        assert!(!may_navigate(&click, Some(role::PUSH_BUTTON)));
        assert!(!may_navigate(&click, None));
    }

    fn facts() -> ReadFacts {
        ReadFacts::default()
    }

    /// The re-reads come in their order and in their numbers: LibreOffice's unbuilt document
    /// while it lasts, a page missing from the read five times at most, a cut walk once, a
    /// missing frame while it lasts; a kind never comes back once a later one came.
    #[test]
    fn rereads_come_in_order_and_in_number() {
        let mut done = Rereads::default();
        let at = ms(100);
        let office = ReadFacts {
            office_unbuilt: true,
            ..facts()
        };
        assert_eq!(
            reread(&office, &mut done, at, BOUND, Pace::Now),
            Reread::Office
        );
        assert_eq!(
            reread(&office, &mut done, at, BOUND, Pace::Now),
            Reread::Office
        );
        let missed = ReadFacts {
            pages: 1,
            candidates: 7,
            on_screen: 0,
            walk_cut: true,
            ..facts()
        };
        for _ in 0..PAGE_REREADS {
            assert_eq!(
                reread(&missed, &mut done, at, BOUND, Pace::Now),
                Reread::Page
            );
        }
        assert_eq!(
            reread(&missed, &mut done, at, BOUND, Pace::Now),
            Reread::Cut
        );
        // (the office's document missing again after the page: not read again for it)
        let everything = ReadFacts {
            office_unbuilt: true,
            frame_missing: true,
            ..missed
        };
        assert_eq!(
            reread(&everything, &mut done, at, BOUND, Pace::Now),
            Reread::Frame
        );
        assert_eq!(
            reread(&everything, &mut done, at, BOUND, Pace::Now),
            Reread::Frame
        );
        assert_eq!(
            reread(&facts(), &mut done, at, BOUND, Pace::Now),
            Reread::Done
        );
    }

    /// A read that needs nothing stands; a page whose controls were found stands.
    #[test]
    fn a_good_read_stands() {
        let mut done = Rereads::default();
        let found = ReadFacts {
            pages: 1,
            candidates: 7,
            on_screen: 7,
            ..facts()
        };
        assert_eq!(
            reread(&found, &mut done, ms(0), BOUND, Pace::Now),
            Reread::Done
        );
    }

    /// Ahead of the next step an unbuilt document is not waited for, and a wait never asks
    /// for the looks of a first look ahead.
    #[test]
    fn ahead_of_the_next_step_nothing_is_waited_for() {
        let office = ReadFacts {
            office_unbuilt: true,
            ..facts()
        };
        let mut done = Rereads::default();
        assert_eq!(
            reread(&office, &mut done, ms(0), BOUND, Pace::Ahead),
            Reread::NotYet
        );
        assert_eq!(on_wait(Looking::First(Pace::Ahead), POLL), OnWait::Refuse);
        assert_eq!(on_wait(Looking::First(Pace::Now), POLL), OnWait::HandBack);
        assert_eq!(on_wait(Looking::Waiting, ms(7)), OnWait::Sleep(ms(7)));
    }

    fn any_facts() -> impl proptest::strategy::Strategy<Value = ReadFacts> {
        use proptest::prelude::*;
        (
            any::<bool>(),
            0usize..3,
            0usize..9,
            0usize..9,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(office_unbuilt, pages, candidates, on_screen, walk_cut, frame_missing, route)| {
                    ReadFacts {
                        office_unbuilt,
                        pages,
                        candidates,
                        on_screen,
                        walk_cut,
                        frame_missing,
                        route_pending: route,
                    }
                },
            )
    }

    proptest::proptest! {
        /// Past the load wait's bound (or with it off) a read always stands; before it, any
        /// sequence of reads ends within its bounded re-reads unless the office's document or
        /// the frame stays missing.
        #[test]
        fn rereads_are_bounded(
            seq in proptest::collection::vec(any_facts(), 1..40),
            elapsed in 0u64..20_000,
            ahead: bool,
        ) {
            let pace = if ahead { Pace::Ahead } else { Pace::Now };
            let mut done = Rereads::default();
            let (mut pages, mut cuts) = (0, 0);
            for f in &seq {
                let r = reread(f, &mut done, ms(elapsed), BOUND, pace);
                if ms(elapsed) >= BOUND {
                    proptest::prop_assert_eq!(r, Reread::Done);
                }
                if ahead {
                    proptest::prop_assert_ne!(r, Reread::Office);
                }
                pages += usize::from(r == Reread::Page);
                cuts += usize::from(r == Reread::Cut);
            }
            proptest::prop_assert!(pages <= PAGE_REREADS);
            proptest::prop_assert!(cuts <= 1);
            let mut off = Rereads::default();
            for f in &seq {
                proptest::prop_assert_eq!(
                    reread(f, &mut off, ms(elapsed), Duration::ZERO, pace),
                    Reread::Done
                );
            }
        }
    }

    /// Issue 46: a settings sub-page reached by its address shows its side menu before its
    /// section: read again while its route is not rendered, up to ROUTE_MAX into the
    /// observation; ahead of the next step, not waited for.
    #[test]
    fn a_page_whose_route_is_not_rendered_is_read_again_for_a_while() {
        let pending = ReadFacts {
            route_pending: true,
            ..facts()
        };
        let mut done = Rereads::default();
        for at in [0, 500, 3900] {
            assert_eq!(
                reread(&pending, &mut done, ms(at), BOUND, Pace::Now),
                Reread::Route
            );
        }
        let late = super::ROUTE_MAX;
        assert_eq!(
            reread(&pending, &mut done, late, BOUND, Pace::Now),
            Reread::Done
        );
        // once past, it does not come back
        assert_eq!(
            reread(&pending, &mut done, ms(0), BOUND, Pace::Now),
            Reread::Done
        );
        let mut ahead = Rereads::default();
        assert_eq!(
            reread(&pending, &mut ahead, ms(0), BOUND, Pace::Ahead),
            Reread::NotYet
        );
        let mut rendered = Rereads::default();
        assert_eq!(
            reread(&facts(), &mut rendered, ms(0), BOUND, Pace::Now),
            Reread::Done
        );
    }

    #[test]
    fn a_loaded_page_whose_controls_are_nowhere_is_read_again() {
        assert!(page_missed(1, 7, 0));
        assert!(!page_missed(1, 7, 7));
        assert!(!page_missed(1, 7, 1));
        // a page with nothing to act on, or no page with content found by the look
        assert!(!page_missed(1, 0, 0));
        assert!(!page_missed(0, 7, 0));
    }
}
