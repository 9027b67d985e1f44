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
//! When the first look says ready, nothing is waited for. Otherwise the same few calls are
//! repeated every [`POLL`] up to the configured bound (`LinuxConfig::load_wait`); an
//! observation taken after the bound says that the page was still loading.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::a11y::vocab::{role, ROOT_PATH};
use crate::desktop::LinuxDesktop;
use crate::observe::names::collapse_ws;
use crate::x11::XWindow;
use crate::LinuxError;

/// Interval between two looks while a page loads (the wait ends at most this long after the
/// load does).
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// Longest wait for a browser window's document to appear or get content: an empty page
/// (`about:blank`) is a page.
pub(crate) const EMPTY_MAX: Duration = Duration::from_secs(3);
/// `Accessible.GetRelationSet`'s code of `RELATION_EMBEDS`.
const RELATION_EMBEDS: u32 = 13;
/// The `BUSY` state bit.
const BUSY: u64 = atspi::State::Busy as u64;
const ACC: &str = "org.a11y.atspi.Accessible";

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

/// Decide, `elapsed` into the wait (bounded by `bound`), what to do with what was read.
pub(crate) fn decide(read: &LoadRead, elapsed: Duration, bound: Duration) -> LoadDecision {
    let Some(why) = loading(read) else {
        return LoadDecision::Ready;
    };
    // a page that stays empty, or a window that never gets content, is what it is
    let limit = match why {
        Loading::NoDocument | Loading::NotBuilt => bound.min(EMPTY_MAX),
        Loading::Busy | Loading::Navigating => bound,
    };
    if elapsed >= limit {
        return match why {
            Loading::NoDocument | Loading::NotBuilt => LoadDecision::Ready,
            Loading::Busy | Loading::Navigating => LoadDecision::GiveUp(why),
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
    /// It waited: the window (its title, its size) may have changed since it was located.
    pub waited: bool,
    /// What the observation says about it (when it gave up).
    pub notes: Vec<String>,
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
}

/// The probes of the windows seen, and the kind of each application.
#[derive(Debug, Default)]
pub(crate) struct LoadFacts {
    probes: HashMap<(String, u32), Probe>,
    kinds: HashMap<String, AppKind>,
}

/// Most windows whose probe is kept.
const MAX_PROBES: usize = 256;

impl LoadFacts {
    fn probe(&self, bus: &str, xid: u32) -> Probe {
        self.probes
            .get(&(bus.to_string(), xid))
            .cloned()
            .unwrap_or_default()
    }

    fn keep(&mut self, bus: &str, xid: u32, p: Probe) {
        if self.probes.len() >= MAX_PROBES {
            self.probes.clear();
        }
        self.probes.insert((bus.to_string(), xid), p);
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

/// Chromium's reload button is in its stop mode: its description names stopping.
pub(crate) fn is_stop_mode(description: &str) -> bool {
    description.to_ascii_lowercase().contains("stop")
}

impl LinuxDesktop {
    /// Wait (bounded by `LinuxConfig::load_wait`) until the window's page or document has
    /// loaded; whether it waited, and the notes for the observation (one when the wait gave
    /// up). While settling
    /// (an observation made ahead for the next step) a loading window is not waited for:
    /// the error drops that observation and the next step observes after the load.
    pub(crate) async fn wait_loaded(&self, main: &XWindow) -> Result<LoadWait, LinuxError> {
        let at_once = LoadWait::default();
        let Some(pid) = main.pid else {
            return Ok(at_once);
        };
        let Some(bus) = self.bus_map(&[pid], false).await.get(&pid).cloned() else {
            return Ok(at_once);
        };
        let kind = self.app_kind(&bus).await;
        if kind == AppKind::Other {
            // nothing of it loads: no call at all
            return Ok(at_once);
        }
        let started = Instant::now();
        let mut probe = self.loads.lock().probe(&bus, main.id);
        let prefetching = self.controls.lock().prefetching;
        let bound = self.config.load_wait;
        let mut waits = 0usize;
        loop {
            let read = self.read_load(&bus, &main.title, kind, &mut probe).await;
            let elapsed = started.elapsed();
            let decision = decide(&read, elapsed, bound);
            tracing::debug!(
                ?read,
                ?decision,
                ms = elapsed.as_millis() as u64,
                "load look"
            );
            match decision {
                LoadDecision::Ready => break,
                LoadDecision::GiveUp(why) => {
                    self.loads.lock().keep(&bus, main.id, probe);
                    return Ok(LoadWait {
                        waited: true,
                        notes: vec![gave_up_note(why, elapsed)],
                    });
                }
                LoadDecision::Wait(_) if prefetching => {
                    return Err(LinuxError::ActionFailed(
                        "the window is loading: observed after the load".into(),
                    ));
                }
                LoadDecision::Wait(d) => {
                    waits += 1;
                    tokio::time::sleep(d).await
                }
            }
        }
        self.loads.lock().keep(&bus, main.id, probe);
        Ok(LoadWait {
            waited: waits > 0,
            notes: Vec::new(),
        })
    }

    /// Whether an observation of window `window_id` made earlier (while the last action
    /// settled) can be handed out: one look says its page or document is not loading. A
    /// navigation the action started may have begun after that observation.
    pub(crate) async fn still_loaded(&self, window_id: &str) -> bool {
        let Ok(xid) = crate::x11::parse_window_id(window_id) else {
            return false;
        };
        let Some(pid) = self.apps.lock().window_pids.get(&xid).copied() else {
            return false;
        };
        let Some(bus) = self.bus_map(&[pid], false).await.get(&pid).cloned() else {
            return false;
        };
        let kind = self.app_kind(&bus).await;
        if kind == AppKind::Other {
            return true;
        }
        let mut probe = self.loads.lock().probe(&bus, xid);
        if probe.frame.is_none() {
            return false;
        }
        let read = self.read_load(&bus, "", kind, &mut probe).await;
        loading(&read).is_none()
    }

    /// The application's kind (asked once per application).
    async fn app_kind(&self, bus: &str) -> AppKind {
        if let Some(k) = self.loads.lock().kinds.get(bus) {
            return *k;
        }
        let (toolkit, _) = self.bus.toolkit(bus).await;
        let name = self.app_name(bus).await.unwrap_or_default();
        let kind = kind_of(&toolkit, &name);
        self.loads.lock().kinds.insert(bus.to_string(), kind);
        kind
    }

    /// One look: the frame's children, the documents it embeds and the reload button
    /// (`title`: the window's, to find its frame the first time).
    async fn read_load(
        &self,
        bus: &str,
        title: &str,
        kind: AppKind,
        probe: &mut Probe,
    ) -> LoadRead {
        let mut read = LoadRead {
            kind,
            frame_children: None,
            documents: Vec::new(),
            navigating: false,
        };
        let frame = match &probe.frame {
            Some(f) => Some(f.clone()),
            None => self.find_frame(bus, title).await,
        };
        let Some(frame) = frame else {
            return read;
        };
        let count = self.bus.prop::<i32>(bus, &frame, ACC, "ChildCount").await;
        let Ok(count) = count else {
            // the frame is gone (the window was rebuilt): look for it again next time
            probe.frame = None;
            return read;
        };
        read.frame_children = Some(count);
        probe.frame = Some(frame.clone());
        if kind != AppKind::Browser {
            return read;
        }
        let (docs, navigating) = futures::join!(self.embedded_documents(bus, &frame), async {
            match &probe.reload {
                Some(r) => self
                    .bus
                    .prop::<String>(bus, r, ACC, "Description")
                    .await
                    .is_ok_and(|d| is_stop_mode(&d)),
                None => false,
            }
        });
        read.documents = docs;
        read.navigating = navigating;
        read
    }

    /// The window's frame among the application's top-level nodes: the one named as the
    /// window, else the only one.
    async fn find_frame(&self, bus: &str, title: &str) -> Option<String> {
        let tops = self.bus.children(bus, ROOT_PATH).await.ok()?;
        let names = futures::future::join_all(
            tops.iter()
                .map(|p| self.bus.prop::<String>(bus, p, ACC, "Name")),
        )
        .await;
        let title = collapse_ws(title);
        let named: Vec<(&String, String)> = tops
            .iter()
            .zip(names)
            .filter_map(|(p, n)| n.ok().map(|n| (p, collapse_ws(&n))))
            .collect();
        named
            .iter()
            .find(|(_, n)| *n == title)
            .or_else(|| {
                named
                    .iter()
                    .find(|(_, n)| !n.is_empty() && title.contains(n.as_str()))
            })
            .map(|(p, _)| (*p).clone())
            .or_else(|| (tops.len() == 1).then(|| tops[0].clone()))
    }

    /// The documents the frame embeds, with their state.
    async fn embedded_documents(&self, bus: &str, frame: &str) -> Vec<DocRead> {
        type Rel = (u32, Vec<(String, zbus::zvariant::OwnedObjectPath)>);
        let rels: Vec<Rel> = match self.bus.call(bus, frame, ACC, "GetRelationSet", &()).await {
            Ok(r) => r,
            Err(_) => return Vec::new(),
        };
        let paths: Vec<String> = rels
            .into_iter()
            .filter(|(t, _)| *t == RELATION_EMBEDS)
            .flat_map(|(_, targets)| targets)
            .filter(|(b, _)| b == bus)
            .map(|(_, p)| p.as_str().to_string())
            .collect();
        let reads = futures::future::join_all(paths.iter().map(|p| async move {
            let (states, name, count) = futures::join!(
                self.bus.call::<_, Vec<u32>>(bus, p, ACC, "GetState", &()),
                self.bus.prop::<String>(bus, p, ACC, "Name"),
                self.bus.prop::<i32>(bus, p, ACC, "ChildCount"),
            );
            let states = crate::a11y::bus::state_bits(&states.ok()?);
            Some(DocRead {
                busy: states & BUSY != 0,
                empty: name.unwrap_or_default().trim().is_empty() && count.unwrap_or(0) == 0,
            })
        }))
        .await;
        reads.into_iter().flatten().collect()
    }

    /// After an observation read the window's tree: remember its frame and, in a browser,
    /// its reload button (found once: the buttons of its tool bars are asked their
    /// `class` attribute), for the next look.
    pub(crate) async fn note_loaded_tree(
        &self,
        bus: &str,
        xid: u32,
        tree: &crate::a11y::bus::AppTree,
        frame: &str,
    ) {
        let mut probe = self.loads.lock().probe(bus, xid);
        probe.frame = Some(frame.to_string());
        if !probe.reload_sought && self.app_kind(bus).await == AppKind::Browser {
            probe.reload_sought = true;
            probe.reload = self.find_reload_button(bus, tree, frame).await;
        }
        self.loads.lock().keep(bus, xid, probe);
    }

    /// Chromium's reload button: a push button of a tool bar whose `class` attribute is
    /// `ReloadButton`.
    async fn find_reload_button(
        &self,
        bus: &str,
        tree: &crate::a11y::bus::AppTree,
        frame: &str,
    ) -> Option<String> {
        let buttons: Vec<String> = tree
            .subtree(frame, 2000)
            .into_iter()
            .filter(|n| n.role == role::PUSH_BUTTON)
            .filter(|n| {
                tree.nodes
                    .get(&n.parent)
                    .is_some_and(|p| p.role == role::TOOL_BAR)
            })
            .map(|n| n.path.clone())
            .take(16)
            .collect();
        let attrs = futures::future::join_all(buttons.iter().map(|b| {
            self.bus
                .call::<_, HashMap<String, String>>(bus, b, ACC, "GetAttributes", &())
        }))
        .await;
        buttons
            .into_iter()
            .zip(attrs)
            .find(|(_, a)| {
                a.as_ref()
                    .is_ok_and(|a| a.get("class").is_some_and(|c| c == "ReloadButton"))
            })
            .map(|(b, _)| b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn browser(docs: &[(bool, bool)], navigating: bool) -> LoadRead {
        LoadRead {
            kind: AppKind::Browser,
            frame_children: Some(3),
            documents: docs
                .iter()
                .map(|&(busy, empty)| DocRead { busy, empty })
                .collect(),
            navigating,
        }
    }

    const BOUND: Duration = Duration::from_secs(10);

    #[test]
    fn a_loaded_page_is_ready_at_once() {
        let read = browser(&[(false, false)], false);
        assert_eq!(decide(&read, ms(0), BOUND), LoadDecision::Ready);
    }

    #[test]
    fn a_busy_document_or_a_pending_navigation_is_waited_for_then_given_up() {
        for read in [
            browser(&[(true, false)], false),
            browser(&[(false, false)], true),
        ] {
            assert_eq!(decide(&read, ms(0), BOUND), LoadDecision::Wait(POLL));
            assert_eq!(
                decide(&read, BOUND - ms(5), BOUND),
                LoadDecision::Wait(ms(5))
            );
            assert!(matches!(
                decide(&read, BOUND, BOUND),
                LoadDecision::GiveUp(Loading::Busy | Loading::Navigating)
            ));
        }
    }

    #[test]
    fn a_browser_window_without_a_page_waits_a_little_then_is_shown_as_it_is() {
        for read in [browser(&[], false), browser(&[(false, true)], false)] {
            assert_eq!(loading(&read), Some(Loading::NoDocument));
            assert_eq!(decide(&read, ms(100), BOUND), LoadDecision::Wait(POLL));
            assert_eq!(decide(&read, EMPTY_MAX, BOUND), LoadDecision::Ready);
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
        };
        assert_eq!(loading(&office), Some(Loading::NotBuilt));
        let built = LoadRead {
            frame_children: Some(12),
            ..office.clone()
        };
        assert_eq!(decide(&built, ms(0), BOUND), LoadDecision::Ready);
        let other = LoadRead {
            kind: AppKind::Other,
            ..office
        };
        assert_eq!(decide(&other, ms(0), BOUND), LoadDecision::Ready);
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
}
