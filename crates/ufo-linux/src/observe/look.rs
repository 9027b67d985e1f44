//! The looks at a loading window (`loading.rs` decides what they mean): the few calls on
//! nodes it knows (the frame's children, the documents it embeds, Chromium's reload button),
//! the wait they make an observation take, and what an action leaves for the next
//! observation to expect (a navigation).

use std::collections::HashMap;
use std::time::Instant;

use super::loading::{
    another_document, decide, gave_up_note, is_stop_mode, kind_of, loading,
    office_document_missing, shown_documents, AppKind, DocRead, Expected, Expecting, LoadDecision,
    LoadRead, LoadWait, Probe, ACC, BUSY, RELATION_EMBEDS,
};
use super::loading::{on_wait, Looking, OnWait, Waiting};
use super::observer::{Observer, Pace};
use crate::display::{DisplayWindow, WinId};
use crate::names::collapse_ws;
use crate::vocab::{role, ROOT_PATH};
use crate::LinuxError;

impl Observer<'_> {
    /// The first look, made while the observation reads the window: `Some` when the window
    /// is not loading (or the wait is off, or the application is of a kind that does not
    /// load): what the observation says about it; `None` when it must be waited for
    /// ([`Self::wait_loaded`], then read again). Ahead of the next step (`pace`) a loading
    /// window is an error: that observation is dropped and the next step observes after the
    /// load.
    pub(crate) async fn load_first_look(
        &self,
        main: &DisplayWindow,
        pace: Pace,
    ) -> Result<Option<LoadWait>, LinuxError> {
        self.load_wait_for(main, Looking::First(pace)).await
    }

    /// Wait (bounded by `LinuxConfig::load_wait`) until the window's page or document has
    /// loaded; whether it waited, and the notes for the observation (one when the wait gave
    /// up).
    pub(crate) async fn wait_loaded(&self, main: &DisplayWindow) -> Result<LoadWait, LinuxError> {
        Ok(self
            .load_wait_for(main, Looking::Waiting)
            .await?
            .unwrap_or_default())
    }

    /// The looks at `main` until [`decide`] says it is ready or given up, or, for a first
    /// look that sees it loading, what [`on_wait`] says.
    async fn load_wait_for(
        &self,
        main: &DisplayWindow,
        looking: Looking,
    ) -> Result<Option<LoadWait>, LinuxError> {
        let Some((bus, kind)) = self.loading_app(main).await else {
            return Ok(Some(LoadWait::default()));
        };
        let expected = self.loads.lock().expected.get(&main.id).cloned();
        let mut wait = Waiting {
            started: Instant::now(),
            activity: expected.as_ref().map(|e| e.since),
            loading_seen: expected.as_ref().is_some_and(|e| e.loading_seen),
            expected,
            waits: 0,
        };
        let done = loop {
            let (read, decision, elapsed) = self.look_once(&bus, kind, main, &mut wait).await;
            match decision {
                LoadDecision::Ready => {
                    tracing::debug!(waits = wait.waits, "load wait over");
                    break LoadWait {
                        notes: Vec::new(),
                        pages: read.documents.iter().filter(|d| d.filled).count(),
                    };
                }
                LoadDecision::GiveUp(why) => {
                    break LoadWait {
                        notes: vec![gave_up_note(why, elapsed)],
                        pages: 0,
                    }
                }
                LoadDecision::Wait(d) => match on_wait(looking, d) {
                    OnWait::Refuse => {
                        return Err(LinuxError::ActionFailed(
                            "the window is loading: observed after the load".into(),
                        ))
                    }
                    OnWait::HandBack => return Ok(None),
                    OnWait::Sleep(d) => {
                        wait.waits += 1;
                        tokio::time::sleep(d).await
                    }
                },
            }
        };
        // the navigation the last action may have started has been waited for
        self.loads.lock().expected.remove(&main.id);
        Ok(Some(done))
    }

    /// A step of [`Self::load_wait_for`]: the application of `main` when it is of a kind that
    /// loads and the wait is on (`None`: no call at all).
    async fn loading_app(&self, main: &DisplayWindow) -> Option<(String, AppKind)> {
        let bound = self.config.load_wait;
        let pid = main.pid.filter(|_| !bound.is_zero())?;
        let bus = self
            .apps
            .bus_map(self.bus, &[pid], false)
            .await
            .get(&pid)
            .cloned()?;
        let kind = self.app_kind(&bus).await;
        // nothing of it loads: no call at all
        (kind != AppKind::Other).then_some((bus, kind))
    }

    /// A step of [`Self::load_wait_for`]: one look, what it read, what [`decide`] says of it,
    /// and how long into the wait it was taken. A look that sees the window loading after an
    /// action that may navigate notes it (also for the next observation: this one may hand
    /// out a first look).
    async fn look_once(
        &self,
        bus: &str,
        kind: AppKind,
        main: &DisplayWindow,
        wait: &mut Waiting,
    ) -> (LoadRead, LoadDecision, std::time::Duration) {
        // (the observation running beside the first look may find the reload button)
        let mut probe = self.loads.lock().probe(bus, main.id);
        let read = self.read_load(bus, &main.title, kind, &mut probe).await;
        let elapsed = wait.started.elapsed();
        if loading(&read).is_some() && wait.activity.is_some() {
            let now = Instant::now();
            wait.activity = Some(now);
            wait.loading_seen = true;
            if let Some(e) = self.loads.lock().expected.get_mut(&main.id) {
                e.since = now;
                e.loading_seen = true;
            }
        }
        let expecting = wait
            .expected
            .as_ref()
            .zip(wait.activity)
            .map(|(e, at)| Expecting {
                since_activity: at.elapsed(),
                replaced: another_document(&e.docs, &shown_documents(&read)),
                loading_seen: wait.loading_seen,
            });
        let decision = decide(&read, elapsed, self.config.load_wait, expecting);
        tracing::debug!(
            ?read,
            ?decision,
            ?expecting,
            ms = elapsed.as_millis() as u64,
            "load look"
        );
        self.loads.lock().note_look(bus, main.id, &probe, &read);
        (read, decision, elapsed)
    }

    /// The last read of the window found its document missing (and the wait is on).
    pub(crate) fn office_unbuilt_after(&self, main: &DisplayWindow) -> bool {
        if self.config.load_wait.is_zero() {
            return false;
        }
        let facts = self.loads.lock();
        facts
            .probes
            .iter()
            .any(|((_, x), p)| *x == main.id && p.office_unbuilt)
    }

    /// Whether an observation of window `window_id` made earlier (while the last action
    /// settled) can be handed out: not when the action may have started a navigation that
    /// observation did not wait for (it would show the old page). No call.
    pub(crate) fn still_loaded(&self, window_id: &str) -> bool {
        WinId::parse(window_id).is_ok_and(|xid| !self.loads.lock().expected.contains_key(&xid))
    }

    /// After an action on window `window_id`: the window, when the action may have started a
    /// navigation (`may_navigate`) in a browser, for [`Self::expect_navigation`]; the
    /// navigation expected after an earlier action is dropped either way. No call unless the
    /// window is a browser's.
    pub(crate) async fn navigation_window(
        &self,
        window_id: &str,
        may_navigate: bool,
    ) -> Option<WinId> {
        let xid = WinId::parse(window_id).ok()?;
        self.loads.lock().expected.remove(&xid);
        if !may_navigate || self.config.load_wait.is_zero() {
            return None;
        }
        let pid = self.windows.lock().get(&xid).copied()?;
        let bus = self
            .apps
            .bus_map(self.bus, &[pid], false)
            .await
            .get(&pid)
            .cloned()?;
        (self.app_kind(&bus).await == AppKind::Browser).then_some(xid)
    }

    /// The next observation of browser window `xid` looks for the navigation an action may
    /// have started to start ([`super::loading::NAV_START`]): the browser read the action's
    /// input at `since` (the navigation cannot start before that: a loaded machine made
    /// Firefox read an Enter 0.5–0.7 s after it was sent); it showed `docs_before` before.
    pub(crate) fn expect_navigation(
        &self,
        xid: WinId,
        since: Instant,
        docs_before: Vec<(String, String)>,
    ) {
        self.loads.lock().expect(
            xid,
            Expected {
                since,
                docs: docs_before,
                loading_seen: false,
            },
        );
    }

    /// The documents window `window_id` showed at the last look (before an action).
    pub(crate) fn docs_seen(&self, window_id: &str) -> Vec<(String, String)> {
        let Ok(xid) = WinId::parse(window_id) else {
            return Vec::new();
        };
        let facts = self.loads.lock();
        facts
            .probes
            .iter()
            .find(|((_, x), _)| *x == xid)
            .map(|(_, p)| p.docs.clone())
            .unwrap_or_default()
    }

    /// The application's kind (asked once per application).
    pub(super) async fn app_kind(&self, bus: &str) -> AppKind {
        if let Some(k) = self.loads.lock().kinds.get(bus) {
            return *k;
        }
        let (toolkit, _) = self.bus.toolkit(bus).await;
        let name = self.apps.name(self.bus, bus).await.unwrap_or_default();
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
            doc_ids: Vec::new(),
        };
        let frame = match &probe.frame {
            Some(f) => Some(f.clone()),
            None => self.find_frame(bus, title).await,
        };
        let Some(frame) = frame else {
            return read;
        };
        let count = self.bus.child_count(bus, &frame).await;
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
        (read.documents, read.doc_ids) = docs.into_iter().unzip();
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
    async fn embedded_documents(&self, bus: &str, frame: &str) -> Vec<(DocRead, (String, String))> {
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
                self.bus.child_count(bus, p),
            );
            let states = crate::a11y::bus::state_bits(&states.ok()?);
            let name = name.unwrap_or_default();
            let count = count.unwrap_or(0);
            let read = DocRead {
                busy: states & BUSY != 0,
                empty: name.trim().is_empty() && count == 0,
                filled: count > 0,
            };
            Some((read, (p.clone(), name)))
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
        xid: WinId,
        tree: &crate::a11y::bus::AppTree,
        frame: &str,
    ) {
        let kind = self.app_kind(bus).await;
        let sought = self.loads.lock().probe(bus, xid).reload_sought;
        let reload = if !sought && kind == AppKind::Browser {
            Some(self.find_reload_button(bus, tree, frame).await)
        } else {
            None
        };
        let office_unbuilt = kind == AppKind::Office && office_document_missing(tree, frame);
        // (the documents a look found while the reload button was sought are kept: the next
        // action compares the page after it with them)
        self.loads.lock().update(bus, xid, |probe| {
            probe.frame = Some(frame.to_string());
            if let Some(found) = reload {
                probe.reload_sought = true;
                probe.reload = found;
            }
            probe.office_unbuilt = office_unbuilt;
        });
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
