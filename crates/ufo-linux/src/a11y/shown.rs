//! Popups an application shows without listing them (issue 46). Qt 5 leaves its popup
//! windows out of the application's children (a context menu, the menu of a tool button:
//! Dolphin's hamburger and context menus), though each names the application as its parent:
//! a walk of the tree never reaches them, and the observation said "nothing changed in the
//! window's controls". Qt announces each popup as it shows it (`object:state-changed:showing`
//! from the popup menu itself), so one task per application listens to those announcements
//! (a match rule with its bus name as sender, the signal's member and its first argument)
//! and keeps the objects that were shown, the latest first, at most [`MAX_SHOWN`]. Whether
//! one is still open is read live when it is used (observe/popups.rs).
//!
//! The applications are asked for these events only (once, the first time an application is
//! listened to): a narrow registration, not every object event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::a11y::events::{drain_synced, register_event, signals, synced_with, SyncSender};

/// Objects kept per application (a menu and its submenus; older ones are dropped).
pub(crate) const MAX_SHOWN: usize = 8;
/// Most applications listened to at once (all are dropped when more come: applications come
/// and go in a long session).
const MAX_APPS: usize = 256;
/// Signals queued for one application's task before the connection waits for it.
const QUEUE: usize = 256;
/// The event asked for.
const EVENT: &str = "object:state-changed:showing";

/// The objects one application announced as shown, the latest first.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Log(Vec<String>);

impl Log {
    /// `path` was shown (or hidden: it is read live anyway); the latest comes first.
    fn push(&mut self, path: &str) {
        self.0.retain(|p| p != path);
        self.0.insert(0, path.to_string());
        self.0.truncate(MAX_SHOWN);
    }
}

/// One application's listening task and what it heard.
struct Watch {
    log: Arc<Mutex<Log>>,
    sync: SyncSender,
    _task: Abort,
}

/// Ends a listening task when its watch is dropped.
struct Abort(tokio::task::JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The popups shown by the applications listened to.
#[derive(Clone)]
pub(crate) struct Shown {
    conn: zbus::Connection,
    timeout: Duration,
    /// bus name → its task (`None`: its signals cannot be listened to)
    watches: Arc<tokio::sync::Mutex<HashMap<String, Option<Arc<Watch>>>>>,
    registered: Arc<tokio::sync::OnceCell<bool>>,
}

impl Shown {
    /// Ready to listen to the applications named later.
    pub(crate) fn new(conn: &zbus::Connection, timeout: Duration) -> Shown {
        Shown {
            conn: conn.clone(),
            timeout,
            watches: Arc::default(),
            registered: Arc::default(),
        }
    }

    /// Listen to `app`'s announcements from now on (nothing when listened to already);
    /// whether this call started listening.
    pub(crate) async fn watch(&self, app: &str) -> bool {
        let mut first = false;
        self.watch_of(app, &mut first).await;
        first
    }

    async fn watch_of(&self, app: &str, first: &mut bool) -> Option<Arc<Watch>> {
        let w = {
            let mut watches = self.watches.lock().await;
            if let Some(w) = watches.get(app) {
                return w.clone();
            }
            *first = true;
            if watches.len() >= MAX_APPS {
                watches.clear();
            }
            let w = self.listen(app).await.map(Arc::new);
            watches.insert(app.to_string(), w.clone());
            w
        };
        // (listen first, then ask: nothing sent after the registration is missed)
        let (conn, timeout) = (&self.conn, self.timeout);
        self.registered
            .get_or_init(|| async { register_event(conn, timeout, EVENT).await })
            .await;
        w
    }

    async fn listen(&self, app: &str) -> Option<Watch> {
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(app)
            .ok()?
            .interface("org.a11y.atspi.Event.Object")
            .ok()?
            .member("StateChanged")
            .ok()?
            .arg(0, "showing")
            .ok()?
            .build()
            .to_owned();
        let stream = signals(&self.conn, rule, self.timeout, QUEUE).await?;
        let log: Arc<Mutex<Log>> = Arc::default();
        let task_log = log.clone();
        let (sync, task) = drain_synced(stream, move |msg| {
            if let Some(path) = msg.header().path() {
                lock(&task_log).push(path.as_str());
            }
        });
        Some(Watch {
            log,
            sync,
            _task: Abort(task),
        })
    }

    /// The objects `app` announced as shown since it is listened to, the latest first, every
    /// announcement sent before this call taken (the application is pinged first); empty when
    /// it is not listened to or does not answer.
    pub(crate) async fn shown(&self, app: &str) -> Vec<String> {
        let Some(watch) = self.watches.lock().await.get(app).cloned().flatten() else {
            return Vec::new();
        };
        // (not synced: what was taken is all there is)
        let _ = synced_with(&self.conn, app, &watch.sync).await;
        let log = lock(&watch.log);
        log.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_shown_comes_first_once_and_the_log_is_bounded() {
        let mut log = Log::default();
        log.push("/a");
        log.push("/b");
        log.push("/a");
        assert_eq!(log.0, ["/a", "/b"]);
        for i in 0..20 {
            log.push(&format!("/{i}"));
        }
        assert_eq!(log.0.len(), MAX_SHOWN);
        assert_eq!(log.0[0], "/19");
    }
}
