//! The objects an application announces as it exports them.
//!
//! GTK 4 exports an accessible object the first time a listing names it, and sends
//! `Cache.AddAccessible` with the object's whole cache item (role, name, description, states,
//! interfaces, child count) on the bus before its answer to that listing. A walk that listens
//! to those announcements has every node a level's listings named once the last answer is in,
//! with no further call; asking `Cache.GetItems` after each level instead cost 1–5 ms a level
//! (the call returns the whole cache, which grows level by level), about half the walk of a
//! gnome-calculator just started.
//!
//! One task per walk takes the announcements of one application only (a match rule with its
//! bus name as sender, the cache's path and member) and files them by path. Before the items
//! are taken the task is synced (`events::drain_synced`), so the announcements sent before the
//! answers just read are all filed. An object not announced (an application with a direct
//! connection answers there, not in order with its signals on the bus; an object exported
//! earlier) is read another way by the caller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::a11y::bus::{node_of, Node, RawItem};
use crate::a11y::events::{drain_synced, SyncSender};

/// Signals queued for the task before the connection waits for it: the task takes them as
/// they come, so this only covers a burst (one listing of a long list).
const QUEUE: usize = 4096;
/// Most announced items kept at once (more are dropped: their nodes are read another way).
const MAX_KEPT: usize = 20_000;
/// Longest wait for the task to take what it has received.
const SYNC_WAIT: Duration = Duration::from_millis(300);

/// A listener to one application's `Cache.AddAccessible` announcements, for the length of a
/// walk; the task ends when this is dropped.
pub(crate) struct Announced {
    items: Arc<Mutex<HashMap<String, Node>>>,
    sync: SyncSender,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Announced {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Announced {
    /// Listen to `app`'s announcements from now on; `None` when the bus refuses the match rule
    /// (or does not answer within `timeout`).
    pub(crate) async fn listen(
        conn: &zbus::Connection,
        app: &str,
        timeout: Duration,
    ) -> Option<Announced> {
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(app)
            .ok()?
            .path("/org/a11y/atspi/cache")
            .ok()?
            .interface("org.a11y.atspi.Cache")
            .ok()?
            .member("AddAccessible")
            .ok()?
            .build()
            .to_owned();
        let stream = crate::a11y::events::signals(conn, rule, timeout, QUEUE).await?;
        let items: Arc<Mutex<HashMap<String, Node>>> = Arc::default();
        let filed = Arc::clone(&items);
        let (sync, task) = drain_synced(stream, move |msg| {
            if let Ok(raw) = msg.body().deserialize::<RawItem>() {
                file(&filed, node_of(raw));
            }
        });
        Some(Announced { items, sync, task })
    }

    /// The announced nodes among `paths` (taken out: each is handed once), after every
    /// announcement received so far is filed; empty when the task does not answer in time.
    pub(crate) async fn take<'p>(
        &self,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> HashMap<String, Node> {
        let (tx, rx) = oneshot::channel();
        let synced = tokio::time::timeout(SYNC_WAIT, async {
            self.sync.send(tx).await.ok()?;
            rx.await.ok()
        })
        .await;
        if !matches!(synced, Ok(Some(()))) {
            return HashMap::new();
        }
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        paths
            .into_iter()
            .filter_map(|p| items.remove_entry(p))
            .collect()
    }
}

/// File one announced node (the latest announcement of a path wins), up to [`MAX_KEPT`].
fn file(items: &Mutex<HashMap<String, Node>>, node: Node) {
    let mut items = items.lock().unwrap_or_else(|p| p.into_inner());
    if items.len() < MAX_KEPT || items.contains_key(&node.path) {
        items.insert(node.path.clone(), node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::a11y::node::named as node;

    #[test]
    fn the_latest_announcement_wins_and_the_store_is_bounded() {
        let items = Mutex::new(HashMap::new());
        file(&items, node("/a", "old"));
        file(&items, node("/a", "new"));
        assert_eq!(items.lock().unwrap()["/a"].name, "new");
        for i in 0..MAX_KEPT + 10 {
            file(&items, node(&format!("/n{i}"), ""));
        }
        assert_eq!(items.lock().unwrap().len(), MAX_KEPT);
        // a path already kept is still updated when the store is full
        file(&items, node("/a", "newest"));
        assert_eq!(items.lock().unwrap()["/a"].name, "newest");
    }
}
