//! Events of the observed applications: one task per application listens to that
//! application's signals only (a match rule with `sender=` its bus name: other applications'
//! events never reach this process) and logs them: which object, and whether its children
//! changed or only its own properties. The applications are asked to send the kinds of events
//! in [`ASKED`] at the first count asked for. Before a count is trusted, the application is
//! pinged through the bus: its earlier signals arrive before the answer, and the task takes
//! every signal already received before it answers (a biased select).
//!
//! What the events are used for (keeping LibreOffice's tree between observations) is
//! `observe::changes`.
//!
//! **Announced objects (issue 48).** at-spi2-atk announces each object it exports to its
//! cache's clients with `Cache.AddAccessible` and the object's whole cache item (role, name,
//! description, states, interfaces, child count). The log keeps the items of the objects
//! announced and follows them: an event about an object's own properties drops its item, an
//! event about its children marks its count stale. A node new to a kept tree or a walk that
//! was announced and not dropped is taken from its item (`observe::refresh`, `new_nodes`)
//! instead of six calls. Every Calc entry rebuilds the sidebar's tab bar: 15 new objects,
//! all taken so (5 with their count read again), and an observation after an entry makes
//! ~295 calls instead of ~365.
//!
//! **Which kinds are asked for (issue 48).** An application's accessibility bridge sends an
//! event only when some client registered a name that matches it, part by part (class, major,
//! minor: `object:` matches every object event, `object:state-changed` every state), with one
//! exception in at-spi2-atk (the bridge of GTK 3, LibreOffice's gtk3 plugin, Firefox and
//! Chromium): for its cache's clients it always sends `ChildrenChanged` (but on a container
//! that manages its descendants: a sheet), `StateChanged` (but on a transient object: a cell;
//! `defunct` always), and the property changes of `accessible-name`, `-description`,
//! `-parent` and `-role`. Every other event costs the application a D-Bus signal (and the
//! export of its object) only because a client asked. ufo asked for every `object:`, `window:`
//! and `focus:` event; it now asks for the kinds its readers need ([`ASKED`]):
//!
//! | kind asked | kept tree (`observe::changes`) | kept cells (`cells_verdict`) | other |
//! |---|---|---|---|
//! | `object:children-changed` | children listed again | the sheet's own (a) | search (b) |
//! | `object:state-changed` | states (c) | | `shown.rs` |
//! | `object:property-change:accessible-name`, `-description` | name, description | | |
//! | `object:active-descendant-changed`, `selection-changed` | | the cursor (d) | |
//! | `object:text-changed` | | a cell's editor (e) | |
//! | `object:visible-data-changed` | | a scroll (f) | |
//! | `object:model-changed` | | rows, columns (g) | |
//! | `window:` | a window made or gone: read whole | | |
//!
//! (a) sent on a sheet only when asked: its cells moved or were rebuilt. (b) a search box's
//! page answered (`act/search.rs`: children changed or removed). (c) a transient object's
//! states are sent only when asked (a menu's items). (d) all a cell entered announces: the
//! sheet's cursor moving on. (e) text that may sit in a cell (the in-place editor, the input
//! line). (f) a wheel sends nothing else on the sheet. (g) LibreOffice sends it after
//! `row-inserted`, `row-deleted`, ..., which are not asked.
//!
//! Not asked any more: `object:bounds-changed` and the other property changes (GTK 3's
//! `widget`, `accessible-value`, a table's captions and headers: a node keeps no extents nor
//! values, they are read at every observation), the caret and the text selection, attributes,
//! `row-*` and `column-*`, `focus:` (`state-changed:focused` says it). `accessible-parent`
//! and `-role` come anyway and are read by nobody: a move shows as the old and the new
//! parent's children changing, and an object's role never changes. `bus.rs` asks for
//! `window:create` (GTK 3 publishes its cache to event clients only) and `shown.rs` for
//! `object:state-changed:showing` (Qt's popups), each for itself. Counted with `dbus-monitor`
//! while six entries were typed into Calc, alternating: LibreOffice sent 3,132 events with
//! everything asked, 2,404 and 2,539 with these kinds (its sidebar's rebuild at each entry:
//! 420 `widget` property changes and 290 `BoundsChanged` gone); the rest is what at-spi2-atk
//! sends whatever is asked. A whole `cells` session of the steps bench: 7,051 -> 6,195. In
//! three runs of that bench, main and this alternating, a Calc entry's step p50 came 15, 2 and
//! 46 ms lower (2.14, 1.87, 2.45 -> 1.93, 1.84, 1.79 times Calc alone): beyond the bench's
//! spread in one run only (docs/desktop.md).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::a11y::node::{node_of, Node, RawItem};

/// Longest wait for an application's ping and for its listening task.
pub(crate) const SYNC_WAIT: Duration = Duration::from_millis(300);
/// Signals queued for one application's task before the connection waits for it.
const QUEUE: usize = 8192;
/// Events logged per application (older ones are dropped: a refresh that needs them reads
/// the whole tree).
const MAX_LOG: usize = 4096;
/// Announced objects followed per application (then forgotten all at once: their nodes
/// are read live).
const MAX_ANNOUNCED: usize = 20_000;
/// The kinds of events the applications are asked to send (the registry's names; the module
/// doc says who reads each).
pub(crate) const ASKED: [&str; 10] = [
    "object:children-changed",
    "object:state-changed",
    "object:property-change:accessible-name",
    "object:property-change:accessible-description",
    "object:active-descendant-changed",
    "object:selection-changed",
    "object:text-changed",
    "object:visible-data-changed",
    "object:model-changed",
    "window:",
];

/// What an event says changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The object's states (focused, selected, active, ...).
    State(String),
    /// The object's own name, text, value or other properties.
    Node(String),
    /// The object's active child or its selection (a sheet's cursor moving on, cells
    /// selected): its own properties otherwise, as [`Change::Node`].
    Cursor(String),
    /// The object's children (added, removed or reordered).
    Children(String),
    /// The object went away (with its subtree).
    Removed(String),
    /// Something this module cannot follow object by object: read the whole tree.
    Whole,
}

/// The change a signal announces, from its interface, member and object path (and, for the
/// cache's signals, the object in its body).
pub(crate) fn classify(iface: &str, member: &str, path: &str, body_path: Option<&str>) -> Change {
    match (iface, member) {
        ("org.a11y.atspi.Event.Object", "ChildrenChanged") => Change::Children(path.into()),
        ("org.a11y.atspi.Event.Object", "StateChanged")
        | ("org.a11y.atspi.Event.Focus", _)
        | ("org.a11y.atspi.Event.Window", "Activate" | "Deactivate") => Change::State(path.into()),
        ("org.a11y.atspi.Event.Object", "ActiveDescendantChanged" | "SelectionChanged") => {
            Change::Cursor(path.into())
        }
        ("org.a11y.atspi.Event.Object", _) => Change::Node(path.into()),
        ("org.a11y.atspi.Cache", "RemoveAccessible") => match body_path {
            Some(p) => Change::Removed(p.into()),
            None => Change::Whole,
        },
        // a new object in the cache: its parent's children changed
        ("org.a11y.atspi.Cache", "AddAccessible") => match body_path {
            Some(p) => Change::Children(p.into()),
            None => Change::Whole,
        },
        _ => Change::Whole,
    }
}

/// An object announced and followed since: its cache item, and whether an event about its
/// children came after it.
struct Announcement {
    node: Node,
    children_since: bool,
}

/// One application's event log.
#[derive(Default)]
struct Log {
    /// Events received so far.
    total: u64,
    /// The latest events (the last is number `total`).
    recent: VecDeque<Change>,
    /// The objects announced (`Cache.AddAccessible`) with what events said of them since.
    announced: HashMap<String, Announcement>,
}

impl Log {
    fn push(&mut self, c: Change) {
        self.total += 1;
        if self.recent.len() >= MAX_LOG {
            self.recent.pop_front();
        }
        self.recent.push_back(c);
    }

    /// What the event just received said of the objects announced: `change`, and the object
    /// it announces, if any. (Only announced objects are followed, each in its entry: an
    /// event costs the listening task a lookup, an announcement one entry. They are
    /// forgotten all at once when too many: their nodes are read live.)
    fn note(&mut self, change: &Change, item: Option<Node>) {
        match change {
            Change::Children(p) => {
                if let Some(a) = self.announced.get_mut(p) {
                    a.children_since = true;
                }
            }
            Change::State(p) | Change::Node(p) | Change::Cursor(p) | Change::Removed(p) => {
                self.announced.remove(p);
            }
            // nothing to follow object by object: no announcement holds any more
            Change::Whole => self.announced.clear(),
        }
        if let Some(node) = item {
            if self.announced.len() >= MAX_ANNOUNCED {
                self.announced.clear();
            }
            let entry = Announcement {
                node,
                children_since: false,
            };
            self.announced.insert(entry.node.path.clone(), entry);
        }
    }

    /// The node announced for `path`, when no event received since was about its own
    /// properties (so its cache item is what a live read would give), and whether its child
    /// count still holds (no event about its children since).
    fn announced(&self, path: &str) -> Option<(Node, bool)> {
        let a = self.announced.get(path)?;
        Some((a.node.clone(), !a.children_since))
    }

    /// The events after number `from` up to number `to`; `None` when some were dropped.
    fn between(&self, from: u64, to: u64) -> Option<Vec<Change>> {
        let oldest = self.total - self.recent.len() as u64; // number of the event before the first kept
        if from < oldest || to > self.total || from > to {
            return None;
        }
        let a = (from - oldest) as usize;
        let b = (to - oldest) as usize;
        Some(self.recent.range(a..b).cloned().collect())
    }
}

/// The listening task of one application.
struct Watch {
    log: Arc<Mutex<Log>>,
    /// Asks the task to take every signal already received, then answer.
    sync: SyncSender,
}

/// Event logs of the observed applications, kept up to date by one task each.
#[derive(Clone)]
pub(crate) struct Changes {
    watches: Arc<tokio::sync::Mutex<HashMap<String, Option<Arc<Watch>>>>>,
    /// whether the applications were asked to send their events (done at the first
    /// observation of LibreOffice, so that other sessions do not make every application
    /// send them)
    registered: Arc<tokio::sync::OnceCell<bool>>,
    timeout: Duration,
    conn: zbus::Connection,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The object path in the body of a cache signal (the removed object, or the parent of the
/// added one) and, for an added one, its node.
fn cache_body(msg: &zbus::Message, member: &str) -> (Option<String>, Option<Node>) {
    type Ref = (String, zbus::zvariant::OwnedObjectPath);
    let body = msg.body();
    match member {
        "RemoveAccessible" => (
            body.deserialize::<Ref>()
                .ok()
                .map(|r| r.1.as_str().to_string()),
            None,
        ),
        "AddAccessible" => match body.deserialize::<RawItem>() {
            Ok(raw) => {
                let n = node_of(raw);
                (Some(n.parent.clone()), Some(n))
            }
            Err(_) => (None, None),
        },
        _ => (None, None),
    }
}

/// Ask the applications, through the registry, to send the events of kind `event`
/// (`"object:"`, `"object:state-changed:showing"`); whether the registry took it (with the
/// properties argument newer registries take, else without).
pub(crate) async fn register_event(
    conn: &zbus::Connection,
    timeout: Duration,
    event: &str,
) -> bool {
    const REG: &str = "org.a11y.atspi.Registry";
    const PATH: &str = "/org/a11y/atspi/registry";
    let props: Vec<String> = Vec::new();
    let with_props = (event, props, "");
    let call = conn.call_method(Some(REG), PATH, Some(REG), "RegisterEvent", &with_props);
    if matches!(tokio::time::timeout(timeout, call).await, Ok(Ok(_))) {
        return true;
    }
    let bare = (event,);
    let call = conn.call_method(Some(REG), PATH, Some(REG), "RegisterEvent", &bare);
    matches!(tokio::time::timeout(timeout, call).await, Ok(Ok(_)))
}

/// The signals `rule` matches on `conn`, at most `queue` of them waiting; `None` when the bus
/// refuses the rule or does not answer within `timeout`.
pub(crate) async fn signals(
    conn: &zbus::Connection,
    rule: zbus::MatchRule<'static>,
    timeout: Duration,
    queue: usize,
) -> Option<zbus::MessageStream> {
    let stream = zbus::MessageStream::for_match_rule(rule, conn, Some(queue));
    tokio::time::timeout(timeout, stream).await.ok()?.ok()
}

/// Make sure a listening task has taken every signal `app` sent before this call: the
/// application is pinged through the bus (its earlier signals arrive before the answer),
/// then the task is synced (`drain_synced`); `None` when either does not answer in
/// [`SYNC_WAIT`].
pub(crate) async fn synced_with(
    conn: &zbus::Connection,
    app: &str,
    sync: &SyncSender,
) -> Option<()> {
    let ping = conn.call_method(
        Some(app),
        crate::vocab::ROOT_PATH,
        Some("org.freedesktop.DBus.Peer"),
        "Ping",
        &(),
    );
    tokio::time::timeout(SYNC_WAIT, ping).await.ok()?.ok()?;
    let (tx, rx) = oneshot::channel();
    tokio::time::timeout(SYNC_WAIT, sync.send(tx))
        .await
        .ok()?
        .ok()?;
    tokio::time::timeout(SYNC_WAIT, rx).await.ok()?.ok()
}

/// Asks a listening task to take every message already received, then answer.
pub(crate) type SyncSender = mpsc::Sender<oneshot::Sender<()>>;

/// Spawn the task that hands every message of `stream` to `take`, in order, and answers each
/// sync sent on the returned channel once it has taken every message received before (a
/// biased select: a signal an application sent before its answer to a call is taken before a
/// sync asked after that answer). The task ends with the stream or when the channel is
/// dropped; every later sync fails (nobody answers).
pub(crate) fn drain_synced(
    mut stream: zbus::MessageStream,
    mut take: impl FnMut(zbus::Message) + Send + 'static,
) -> (SyncSender, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<oneshot::Sender<()>>(16);
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                msg = stream.next() => {
                    let Some(Ok(msg)) = msg else { break };
                    take(msg);
                }
                req = rx.recv() => {
                    let Some(req) = req else { break };
                    let _ = req.send(());
                }
            }
        }
    });
    (tx, task)
}

impl Changes {
    /// Ready to listen to the applications observed later. `None` never happens today; kept
    /// so that a bus without signals can switch keeping off.
    pub(crate) async fn start(conn: &zbus::Connection, timeout: Duration) -> Option<Changes> {
        Some(Changes {
            watches: Arc::default(),
            registered: Arc::default(),
            timeout,
            conn: conn.clone(),
        })
    }

    /// The listening task of `app`, started at the first call; `None` when its signals
    /// cannot be listened to.
    async fn watch(&self, app: &str) -> Option<Arc<Watch>> {
        let mut watches = self.watches.lock().await;
        if let Some(w) = watches.get(app) {
            return w.clone();
        }
        let w = self.listen(app).await.map(Arc::new);
        watches.insert(app.to_string(), w.clone());
        w
    }

    async fn listen(&self, app: &str) -> Option<Watch> {
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(app)
            .ok()?
            .build()
            .to_owned();
        let stream = signals(&self.conn, rule, self.timeout, QUEUE).await?;
        let log: Arc<Mutex<Log>> = Arc::default();
        let task_log = log.clone();
        let (tx, _task) = drain_synced(stream, move |msg| {
            let header = msg.header();
            let iface = header
                .interface()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let member = header.member().map(|m| m.to_string()).unwrap_or_default();
            let path = header.path().map(|p| p.to_string()).unwrap_or_default();
            let (body_path, item) = if iface == "org.a11y.atspi.Cache" {
                cache_body(&msg, &member)
            } else {
                (None, None)
            };
            let change = classify(&iface, &member, &path, body_path.as_deref());
            let mut log = lock(&task_log);
            log.note(&change, item);
            log.push(change);
        });
        Some(Watch { log, sync: tx })
    }

    /// Ask the applications to send the kinds of events in [`ASKED`] (once, all at once);
    /// whether they were asked before this call.
    async fn register(&self) -> bool {
        let mut first = false;
        let ok = *self
            .registered
            .get_or_init(|| async {
                first = true;
                let asks = ASKED
                    .iter()
                    .map(|event| register_event(&self.conn, self.timeout, event));
                futures::future::join_all(asks)
                    .await
                    .into_iter()
                    .all(|ok| ok)
            })
            .await;
        ok && !first
    }

    /// The number of events `app` has sent since it is listened to, every event it sent
    /// before this call counted; `None` when that cannot be made sure of.
    pub(crate) async fn count(&self, app: &str) -> Option<u64> {
        // listen first, so that nothing sent after the registration is missed
        let watch = self.watch(app).await?;
        // nothing read before the applications send their events may be kept
        if !self.register().await {
            return None;
        }
        synced_with(&self.conn, app, &watch.sync).await?;
        let n = lock(&watch.log).total;
        Some(n)
    }

    /// The nodes among `paths` that `app` announced (`Cache.AddAccessible`) and that no
    /// event received since was about: each is what its cache item said, as a live read
    /// would give it (at-spi2-atk sends its cache's clients an event whenever an object's
    /// role, name, description, states or children change; an event still on its way is as
    /// if the node had been read live a moment earlier, and the next observation's events
    /// name it), with whether its child count holds (no event about its children since).
    pub(crate) async fn announced<'p>(
        &self,
        app: &str,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> HashMap<String, (Node, bool)> {
        let Some(watch) = self.watches.lock().await.get(app).cloned().flatten() else {
            return HashMap::new();
        };
        let log = lock(&watch.log);
        paths
            .into_iter()
            .filter_map(|p| Some((p.to_string(), log.announced(p)?)))
            .collect()
    }

    /// The events `app` sent after number `from` up to number `to` (two counts); `None` when
    /// they are not all known.
    pub(crate) async fn between(&self, app: &str, from: u64, to: u64) -> Option<Vec<Change>> {
        let watch = self.watches.lock().await.get(app).cloned().flatten()?;
        let log = lock(&watch.log);
        log.between(from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_classified_by_what_they_change() {
        let o = "org.a11y.atspi.Event.Object";
        assert_eq!(
            classify(o, "StateChanged", "/a/1", None),
            Change::State("/a/1".into())
        );
        assert_eq!(
            classify(o, "TextChanged", "/a/1", None),
            Change::Node("/a/1".into())
        );
        assert_eq!(
            classify(o, "ActiveDescendantChanged", "/sheet", None),
            Change::Cursor("/sheet".into())
        );
        assert_eq!(
            classify(o, "SelectionChanged", "/sheet", None),
            Change::Cursor("/sheet".into())
        );
        assert_eq!(
            classify(o, "ChildrenChanged", "/a/1", None),
            Change::Children("/a/1".into())
        );
        assert_eq!(
            classify("org.a11y.atspi.Event.Window", "Activate", "/w", None),
            Change::State("/w".into())
        );
        assert_eq!(
            classify("org.a11y.atspi.Event.Window", "Create", "/w", None),
            Change::Whole
        );
        assert_eq!(
            classify(
                "org.a11y.atspi.Cache",
                "RemoveAccessible",
                "/c",
                Some("/a/9")
            ),
            Change::Removed("/a/9".into())
        );
        assert_eq!(
            classify("org.a11y.atspi.Cache", "AddAccessible", "/c", Some("/a/2")),
            Change::Children("/a/2".into())
        );
        assert_eq!(
            classify("org.a11y.atspi.Event.Document", "LoadComplete", "/d", None),
            Change::Whole
        );
    }

    /// Whether an application's bridge sends `event` (`object:state-changed:focused`) to a
    /// client that registered `asked`, as at-spi2-atk matches them: part by part (class,
    /// major, minor), a registered name's missing or empty part matching anything, the
    /// event's minor compared up to its first `:`.
    fn sent(asked: &[&str], event: &str) -> bool {
        let parts: Vec<&str> = event.splitn(3, ':').collect();
        let minor = parts.get(2).map(|m| m.split(':').next().unwrap_or(""));
        let event = [parts.first().copied(), parts.get(1).copied(), minor];
        asked.iter().any(|a| {
            a.splitn(3, ':')
                .zip(event)
                .take_while(|(want, _)| !want.is_empty())
                .all(|(want, got)| got == Some(want))
        })
    }

    #[test]
    fn the_bridge_matches_a_registered_name_part_by_part() {
        assert!(sent(&["object:"], "object:bounds-changed"));
        assert!(sent(
            &["object:state-changed"],
            "object:state-changed:focused"
        ));
        assert!(!sent(
            &["object:state-changed:showing"],
            "object:state-changed:focused"
        ));
        assert!(sent(
            &["object:text-changed"],
            "object:text-changed:insert:system"
        ));
        assert!(!sent(
            &["object:property-change:accessible-name"],
            "object:property-change"
        ));
        assert!(!sent(&["window:create"], "window:activate"));
        assert!(sent(&["window:"], "window:activate"));
    }

    /// What each reader of the events needs is asked for; what none reads is not (the
    /// module's table).
    #[test]
    fn the_kinds_asked_are_those_the_kept_tree_the_cells_and_the_search_read() {
        let needed = [
            // the kept tree
            "object:children-changed:add",
            "object:children-changed:remove",
            "object:state-changed:focused",
            "object:state-changed:showing",
            "object:state-changed:checked",
            "object:property-change:accessible-name",
            "object:property-change:accessible-description",
            "window:create",
            "window:destroy",
            "window:activate",
            // the kept cells
            "object:active-descendant-changed",
            "object:selection-changed",
            "object:text-changed:insert",
            "object:text-changed:delete",
            "object:visible-data-changed",
            "object:model-changed",
        ];
        for e in needed {
            assert!(sent(&ASKED, e), "{e} is not asked for");
        }
        let dropped = [
            "object:bounds-changed",
            "object:property-change:widget",
            "object:property-change:accessible-value",
            "object:property-change:accessible-table-caption-object",
            "object:text-caret-moved",
            "object:text-selection-changed",
            "object:text-attributes-changed",
            "object:attributes-changed",
            "object:row-inserted",
            "object:column-deleted",
            "focus:",
            "document:load-complete",
        ];
        for e in dropped {
            assert!(!sent(&ASKED, e), "{e} is asked for though nothing reads it");
        }
        // no kind asked twice (one covering another)
        for (i, a) in ASKED.iter().enumerate() {
            for (j, b) in ASKED.iter().enumerate() {
                assert!(i == j || !sent(&[a], b), "{b} is already asked by {a}");
            }
        }
    }

    /// Each kind asked is classified as what its readers take it for (no kind asked falls to
    /// a whole read, but windows made or gone).
    #[test]
    fn every_kind_asked_is_classified_as_its_readers_take_it() {
        let o = "org.a11y.atspi.Event.Object";
        let w = "org.a11y.atspi.Event.Window";
        let p = "/p";
        let cases = [
            (o, "ChildrenChanged", Change::Children(p.into())),
            (o, "StateChanged", Change::State(p.into())),
            (o, "PropertyChange", Change::Node(p.into())),
            (o, "ActiveDescendantChanged", Change::Cursor(p.into())),
            (o, "SelectionChanged", Change::Cursor(p.into())),
            (o, "TextChanged", Change::Node(p.into())),
            (o, "VisibleDataChanged", Change::Node(p.into())),
            (o, "ModelChanged", Change::Node(p.into())),
            (w, "Activate", Change::State(p.into())),
            (w, "Create", Change::Whole),
            (w, "Destroy", Change::Whole),
        ];
        for (iface, member, want) in cases {
            assert_eq!(classify(iface, member, p, None), want, "{member}");
        }
    }

    #[test]
    fn the_log_gives_the_events_between_two_counts_or_none_when_dropped() {
        let mut log = Log::default();
        for i in 0..(MAX_LOG + 10) {
            log.push(Change::Node(format!("/n/{i}")));
        }
        let total = log.total;
        assert_eq!(
            log.between(total - 2, total),
            Some(vec![
                Change::Node(format!("/n/{}", MAX_LOG + 8)),
                Change::Node(format!("/n/{}", MAX_LOG + 9))
            ])
        );
        assert_eq!(log.between(total, total), Some(vec![]));
        assert_eq!(log.between(5, total), None, "dropped events");
        assert_eq!(log.between(total - 1, total + 1), None, "not yet received");
    }

    use crate::a11y::node::named as node;

    /// An announced node is handed out while no later event was about its own properties;
    /// its child count only while no event was about its children.
    #[test]
    fn an_announcement_holds_until_an_event_is_about_its_object() {
        let mut log = Log::default();
        let event = |log: &mut Log, c: Change, item: Option<Node>| {
            log.note(&c, item);
            log.push(c);
        };
        event(
            &mut log,
            Change::Children("/p".into()),
            Some(node("/a", "a")),
        );
        event(
            &mut log,
            Change::Children("/p".into()),
            Some(node("/b", "b")),
        );
        // an event about the parent says nothing of its children
        event(&mut log, Change::Children("/p".into()), None);
        event(&mut log, Change::State("/p".into()), None);
        assert_eq!(
            log.announced("/a").map(|(n, c)| (n.name, c)),
            Some(("a".into(), true))
        );
        // a child announced under /a: its count is read again, the rest holds
        event(
            &mut log,
            Change::Children("/a".into()),
            Some(node("/a/1", "a1")),
        );
        assert_eq!(
            log.announced("/a").map(|(n, c)| (n.name, c)),
            Some(("a".into(), false))
        );
        // its states changed after its announcement: read it live
        event(&mut log, Change::State("/b".into()), None);
        assert_eq!(log.announced("/b"), None);
        // announced again: the new item holds
        event(
            &mut log,
            Change::Children("/p".into()),
            Some(node("/b", "b2")),
        );
        assert_eq!(log.announced("/b").map(|(n, _)| n.name), Some("b2".into()));
        assert_eq!(log.announced("/c"), None, "never announced");
        // something not followed object by object: nothing announced holds
        event(&mut log, Change::Whole, None);
        assert_eq!(log.announced("/a/1"), None);
    }
}
