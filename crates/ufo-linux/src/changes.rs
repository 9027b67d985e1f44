//! Which applications changed since an earlier observation, from the events they send: a
//! LibreOffice window that sent no event at all since its last observation still has the tree
//! and the cell texts read then, so they are kept instead of read again (reading them costs
//! LibreOffice 100-300 ms of work each time).
//!
//! A task counts every signal on the accessibility bus by sender; the applications are asked
//! to send their object, window and focus events at the first observation of LibreOffice
//! (nothing read before that is kept). Before a count is trusted,
//! the application is pinged through the bus (its earlier signals arrive before the answer)
//! and a marker signal sent to this connection comes back through the task (so the task has
//! counted them all). Any event counts as a change; anything unsure (no answer, the task
//! stopped) means "changed".

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;

use crate::bus::AppTree;
use crate::desktop::LinuxDesktop;

const MARKER_PATH: &str = "/org/ufo_rs/Marker";
const MARKER_IFACE: &str = "org.ufo_rs.Marker";
/// Longest wait for an application's ping and for the marker.
const SYNC_WAIT: Duration = Duration::from_millis(300);
/// Events queued for the counting task before the connection waits for it.
const QUEUE: usize = 8192;

/// Event counts by sender, kept up to date by a task.
#[derive(Clone)]
pub(crate) struct Changes {
    counts: Arc<Mutex<HashMap<String, u64>>>,
    marker: tokio::sync::watch::Receiver<u64>,
    next_marker: Arc<std::sync::atomic::AtomicU64>,
    /// whether the applications were asked to send their events (done at the first
    /// observation of LibreOffice, so that other sessions do not make every application
    /// send them)
    registered: Arc<tokio::sync::OnceCell<bool>>,
    timeout: Duration,
    conn: zbus::Connection,
}

/// What an observation keeps of an application for the next one.
pub(crate) struct Kept {
    /// The application's event count when its tree was read.
    pub count: u64,
    /// Its tree, the walk included.
    pub tree: AppTree,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Changes {
    /// Listen to every signal on the accessibility bus. `None` when that fails: nothing is
    /// kept between observations then.
    pub(crate) async fn start(conn: &zbus::Connection, timeout: Duration) -> Option<Changes> {
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .build();
        let stream = tokio::time::timeout(
            timeout,
            zbus::MessageStream::for_match_rule(rule, conn, Some(QUEUE)),
        )
        .await
        .ok()?
        .ok()?;
        let counts: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let (tx, rx) = tokio::sync::watch::channel(0u64);
        let own = conn.unique_name().map(|n| n.to_string());
        let task_counts = counts.clone();
        tokio::spawn(async move {
            let mut stream = stream;
            while let Some(Ok(msg)) = stream.next().await {
                let header = msg.header();
                let Some(sender) = header.sender().map(|s| s.to_string()) else {
                    continue;
                };
                if Some(&sender) == own.as_ref()
                    && header
                        .interface()
                        .is_some_and(|i| i.as_str() == MARKER_IFACE)
                {
                    if let Ok(n) = msg.body().deserialize::<u64>() {
                        tx.send_replace(n);
                    }
                    continue;
                }
                *lock(&task_counts).entry(sender).or_insert(0) += 1;
            }
            // the stream ended: every later sync fails (the marker never comes)
        });
        Some(Changes {
            counts,
            marker: rx,
            next_marker: Arc::new(std::sync::atomic::AtomicU64::new(1)),
            registered: Arc::default(),
            timeout,
            conn: conn.clone(),
        })
    }

    /// Ask the applications to send their object, window and focus events (once); whether
    /// they were asked before this call.
    async fn register(&self) -> bool {
        let mut first = false;
        let ok = *self
            .registered
            .get_or_init(|| async {
                first = true;
                let (conn, timeout) = (&self.conn, self.timeout);
                const REG: &str = "org.a11y.atspi.Registry";
                const PATH: &str = "/org/a11y/atspi/registry";
                for event in ["object:", "window:", "focus:"] {
                    let props: Vec<String> = Vec::new();
                    let with_props = (event, props, "");
                    let call =
                        conn.call_method(Some(REG), PATH, Some(REG), "RegisterEvent", &with_props);
                    if !matches!(tokio::time::timeout(timeout, call).await, Ok(Ok(_))) {
                        let bare = (event,);
                        let call =
                            conn.call_method(Some(REG), PATH, Some(REG), "RegisterEvent", &bare);
                        if !matches!(tokio::time::timeout(timeout, call).await, Ok(Ok(_))) {
                            return false;
                        }
                    }
                }
                true
            })
            .await;
        ok && !first
    }

    /// The number of events `app` has sent so far, every event it sent before this call
    /// counted; `None` when that cannot be made sure of.
    pub(crate) async fn count(&self, app: &str) -> Option<u64> {
        // nothing read before the applications send their events may be kept
        if !self.register().await {
            return None;
        }
        let ping = self.conn.call_method(
            Some(app),
            crate::bus::ROOT_PATH,
            Some("org.freedesktop.DBus.Peer"),
            "Ping",
            &(),
        );
        tokio::time::timeout(SYNC_WAIT, ping).await.ok()?.ok()?;
        let n = self
            .next_marker
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let own = self.conn.unique_name()?.to_string();
        let sent = self
            .conn
            .emit_signal(Some(own.as_str()), MARKER_PATH, MARKER_IFACE, "Sync", &n);
        tokio::time::timeout(SYNC_WAIT, sent).await.ok()?.ok()?;
        let mut rx = self.marker.clone();
        tokio::time::timeout(SYNC_WAIT, rx.wait_for(|seen| *seen >= n))
            .await
            .ok()?
            .ok()?;
        Some(lock(&self.counts).get(app).copied().unwrap_or(0))
    }
}

/// Whether an application's trees may be kept between observations: LibreOffice, whose
/// bridge sends an event for every change (other toolkits do not always).
pub(crate) fn keeps_trees(app_name: &str) -> bool {
    let a = app_name.to_ascii_lowercase();
    a.contains("soffice") || a.contains("libreoffice")
}

impl LinuxDesktop {
    /// The tree of `bus` kept from an earlier observation when the application sent no
    /// event since, and its event count now (to keep what this observation reads).
    pub(crate) async fn kept_tree(&self, bus: &str) -> (Option<u64>, Option<AppTree>) {
        let Some(changes) = self.bus.changes.clone() else {
            return (None, None);
        };
        if !self.app_name(bus).await.is_some_and(|a| keeps_trees(&a)) {
            return (None, None);
        }
        let count = changes.count(bus).await;
        let mut st = self.lock();
        match count {
            Some(c) => {
                st.event_counts.insert(bus.to_string(), c);
            }
            None => {
                st.event_counts.remove(bus);
            }
        }
        let tree = match (count, st.kept.get(bus)) {
            (Some(c), Some(k)) if k.count == c => Some(k.tree.clone()),
            _ => None,
        };
        tracing::debug!(bus, count, kept = tree.is_some(), "kept tree");
        (count, tree)
    }

    /// Keep a tree read (or kept) now, with the application's event count from before it
    /// was read.
    pub(crate) fn keep_tree(&self, bus: &str, count: Option<u64>, tree: &AppTree) {
        let mut st = self.lock();
        match count {
            Some(count) => {
                st.kept.insert(
                    bus.to_string(),
                    Kept {
                        count,
                        tree: tree.clone(),
                    },
                );
            }
            None => {
                st.kept.remove(bus);
            }
        }
    }

    /// The event count of `bus` taken at the start of this observation, when its trees may
    /// be kept.
    pub(crate) fn event_count(&self, bus: &str) -> Option<u64> {
        self.lock().event_counts.get(bus).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_libreoffice_keeps_its_trees() {
        assert!(keeps_trees("soffice"));
        assert!(keeps_trees("LibreOffice"));
        assert!(!keeps_trees("gnome-calculator"));
        assert!(!keeps_trees("Firefox"));
    }
}
