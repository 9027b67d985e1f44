//! The connections `ufo serve` holds open, and which of them have shown a valid token
//! (docs/serve.md, "Connections"). The table is bounded; when it is full, a new connection
//! takes the place of the oldest one that never showed a valid token, so clients without a
//! token (idle, or trickling bytes) can never keep a token holder out. Only when every slot
//! is held by an authenticated connection is a new one refused.
//!
//! [`ConnectionTable`] is the pure decision; [`Connections`] applies it to the server's
//! connection tasks. A connection is marked authenticated when a token check succeeds while
//! one of its requests is handled ([`note_authenticated`], called by the token gate), whatever
//! route did the check: the bearer token on `/mcp`, a console login, a login cookie.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// What [`ConnectionTable::admit`] decided about a new connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission<H> {
    /// Served under this id; `evicted` is the handle of the connection it replaced (to close).
    Admitted {
        /// The new connection's id.
        id: u64,
        /// The oldest connection that had not authenticated, when the table was full.
        evicted: Option<H>,
    },
    /// Every slot is held by an authenticated connection: close the new one.
    Refused,
}

#[derive(Debug)]
struct Entry<H> {
    authenticated: bool,
    handle: H,
}

/// At most `max` connections, each authenticated or not, oldest first (ids grow with each
/// connection accepted). Pure logic, no I/O.
#[derive(Debug)]
pub struct ConnectionTable<H> {
    max: usize,
    next: u64,
    open: BTreeMap<u64, Entry<H>>,
}

impl<H> ConnectionTable<H> {
    /// A table of at most `max` connections (at least one).
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            next: 0,
            open: BTreeMap::new(),
        }
    }

    /// A new connection, not authenticated yet, with `handle` to close it by.
    pub fn admit(&mut self, handle: H) -> Admission<H> {
        let mut evicted = None;
        if self.open.len() >= self.max {
            let oldest = self
                .open
                .iter()
                .find(|(_, e)| !e.authenticated)
                .map(|(id, _)| *id);
            match oldest.and_then(|id| self.open.remove(&id)) {
                Some(entry) => evicted = Some(entry.handle),
                None => return Admission::Refused,
            }
        }
        let id = self.next;
        self.next += 1;
        self.open.insert(
            id,
            Entry {
                authenticated: false,
                handle,
            },
        );
        Admission::Admitted { id, evicted }
    }

    /// Connection `id` showed a valid token.
    pub fn authenticate(&mut self, id: u64) {
        if let Some(e) = self.open.get_mut(&id) {
            e.authenticated = true;
        }
    }

    /// Whether connection `id` showed a valid token (false once it is closed).
    pub fn is_authenticated(&self, id: u64) -> bool {
        self.open.get(&id).is_some_and(|e| e.authenticated)
    }

    /// Connection `id` ended.
    pub fn close(&mut self, id: u64) {
        self.open.remove(&id);
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

/// The server's connection table; each entry's handle cuts its connection.
#[derive(Debug)]
pub(crate) struct Connections {
    table: Mutex<ConnectionTable<CancellationToken>>,
}

impl Connections {
    /// At most `max` connections at once.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(ConnectionTable::new(max)),
        })
    }

    /// A slot for a new connection, cutting the oldest unauthenticated one when all are
    /// taken; `None` when every slot is held by an authenticated connection.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Connection> {
        let cut = CancellationToken::new();
        let admitted = match self.table.lock() {
            Ok(mut t) => t.admit(cut.clone()),
            Err(_) => return None,
        };
        match admitted {
            Admission::Admitted { id, evicted } => {
                if let Some(other) = evicted {
                    other.cancel();
                }
                Some(Connection {
                    id,
                    cut,
                    table: self.clone(),
                })
            }
            Admission::Refused => None,
        }
    }

    fn authenticate(&self, id: u64) {
        if let Ok(mut t) = self.table.lock() {
            t.authenticate(id);
        }
    }

    fn is_authenticated(&self, id: u64) -> bool {
        self.table.lock().is_ok_and(|t| t.is_authenticated(id))
    }
}

/// One admitted connection; its slot is freed when it is dropped.
#[derive(Debug)]
pub(crate) struct Connection {
    id: u64,
    cut: CancellationToken,
    table: Arc<Connections>,
}

impl Connection {
    /// Resolves when the server wants this connection closed (another took its slot).
    pub(crate) fn cut(&self) -> CancellationToken {
        self.cut.clone()
    }

    /// Whether it showed a valid token.
    pub(crate) fn is_authenticated(&self) -> bool {
        self.table.is_authenticated(self.id)
    }

    /// The mark its requests are handled under ([`within`]).
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            id: self.id,
            table: self.table.clone(),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Ok(mut t) = self.table.table.lock() {
            t.close(self.id);
        }
    }
}

/// Which connection a request came on.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    id: u64,
    table: Arc<Connections>,
}

tokio::task_local! {
    /// The connection whose request is being handled. A task-local, so the token gate marks
    /// the connection whichever route checked the token (the console's routes check through
    /// the same gate without knowing about connections).
    static CURRENT: Mark;
}

/// Handle a request of the connection `mark` names.
pub(crate) async fn within<F: std::future::Future>(mark: Mark, f: F) -> F::Output {
    CURRENT.scope(mark, f).await
}

/// A valid token was shown while handling the current request: its connection is
/// authenticated (no effect outside a request).
pub(crate) fn note_authenticated() {
    let _ = CURRENT.try_with(|m| m.table.authenticate(m.id));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn admitted(a: Admission<u32>) -> (u64, Option<u32>) {
        match a {
            Admission::Admitted { id, evicted } => (id, evicted),
            Admission::Refused => panic!("refused"),
        }
    }

    #[test]
    fn a_full_table_gives_the_oldest_unauthenticated_slot_to_a_new_connection() {
        let mut t = ConnectionTable::new(3);
        let (a, _) = admitted(t.admit(1));
        let (b, _) = admitted(t.admit(2));
        let (_c, _) = admitted(t.admit(3));
        t.authenticate(a);
        // b is the oldest that never authenticated
        let (d, evicted) = admitted(t.admit(4));
        assert_eq!(evicted, Some(2));
        assert!(!t.is_authenticated(b));
        assert_eq!(t.len(), 3);
        t.authenticate(d);
        let (_, evicted) = admitted(t.admit(5));
        assert_eq!(evicted, Some(3));
        // now a, d and e: e is the only one without a token
        let (_, evicted) = admitted(t.admit(6));
        assert_eq!(evicted, Some(5));
    }

    #[test]
    fn a_table_of_authenticated_connections_refuses_new_ones() {
        let mut t = ConnectionTable::new(2);
        let (a, _) = admitted(t.admit(1));
        let (b, _) = admitted(t.admit(2));
        t.authenticate(a);
        t.authenticate(b);
        assert_eq!(t.admit(3), Admission::Refused);
        t.close(a);
        assert!(matches!(
            t.admit(4),
            Admission::Admitted { evicted: None, .. }
        ));
    }

    #[test]
    fn the_mark_authenticates_only_inside_a_request_of_its_connection() {
        let conns = Connections::new(4);
        let one = conns.admit().expect("a slot");
        let two = conns.admit().expect("a slot");
        note_authenticated();
        assert!(!one.is_authenticated() && !two.is_authenticated());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(within(two.mark(), async { note_authenticated() }));
        assert!(!one.is_authenticated());
        assert!(two.is_authenticated());
        drop(two);
        assert_eq!(conns.table.lock().expect("lock").len(), 1);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Connect,
        Authenticate(usize),
        Close(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => Just(Step::Connect),
            2 => (0usize..64).prop_map(Step::Authenticate),
            1 => (0usize..64).prop_map(Step::Close),
        ]
    }

    proptest! {
        /// Whatever connects, authenticates and closes: the table never holds more than its
        /// bound, never evicts an authenticated connection, evicts only when full and then
        /// the oldest connection without a token, and refuses only when all hold tokens.
        #[test]
        fn no_one_without_a_token_can_take_an_authenticated_slot(
            max in 1usize..8,
            steps in proptest::collection::vec(step(), 0..200),
        ) {
            let mut t = ConnectionTable::new(max);
            // the model: open connections in order: (id, handle, authenticated)
            let mut model: Vec<(u64, u64, bool)> = Vec::new();
            let mut next_handle = 0u64;
            for s in steps {
                match s {
                    Step::Connect => {
                        let full = model.len() >= max;
                        let oldest = model.iter().position(|(_, _, auth)| !auth);
                        next_handle += 1;
                        match t.admit(next_handle) {
                            Admission::Admitted { id, evicted } => {
                                if full {
                                    let i = oldest.expect("evicts only an unauthenticated one");
                                    let (_, gone, _) = model.remove(i);
                                    prop_assert_eq!(evicted, Some(gone));
                                } else {
                                    prop_assert_eq!(evicted, None);
                                }
                                model.push((id, next_handle, false));
                            }
                            Admission::Refused => {
                                prop_assert!(full && oldest.is_none());
                            }
                        }
                    }
                    Step::Authenticate(i) => {
                        if let Some(e) = model.get_mut(i) {
                            t.authenticate(e.0);
                            e.2 = true;
                        }
                    }
                    Step::Close(i) => {
                        if i < model.len() {
                            let (id, _, _) = model.remove(i);
                            t.close(id);
                        }
                    }
                }
                prop_assert!(t.len() <= max);
                prop_assert_eq!(t.len(), model.len());
                for (id, _, auth) in &model {
                    prop_assert_eq!(t.is_authenticated(*id), *auth);
                }
            }
        }
    }
}
