//! MCP sessions and the tokens they belong to (docs/serve.md, "MCP sessions"). An MCP
//! session belongs to the token that sent its `initialize`; a request naming another token's
//! session id is answered as if the session did not exist (404). A token keeps at most a few
//! sessions: a new `initialize` beyond the bound closes that token's least recently used one,
//! so a client that crashed and starts again is never locked out and memory stays flat. A
//! sweep every second ends the sessions (and so their open streams) of tokens that were
//! revoked, and forgets sessions rmcp ended by itself.
//!
//! [`SessionTable`] is the pure bookkeeping; [`McpEndpoint`] puts it in front of rmcp's
//! streamable HTTP service, whose [`LocalSessionManager`] holds the sessions themselves.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::StreamableHttpService;
use tokio_util::sync::CancellationToken;

use super::gate::Gate;
use super::tokens::Holder;
use crate::DesktopServer;

/// How often the sessions of revoked tokens are looked for.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Longest wait for a session's worker to take its close (it is dropped after, which ends it
/// too).
const CLOSE_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
struct Owned {
    token_id: String,
    /// The table's clock when it was last used.
    used: u64,
}

/// Which token each live MCP session belongs to, and when it was last used. Pure logic.
#[derive(Debug)]
pub struct SessionTable {
    per_token: usize,
    clock: u64,
    sessions: HashMap<String, Owned>,
}

impl SessionTable {
    /// A table keeping at most `per_token` sessions per token (at least one).
    pub fn new(per_token: usize) -> Self {
        Self {
            per_token: per_token.max(1),
            clock: 0,
            sessions: HashMap::new(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Session `id` was opened by the token `token_id`: the ids of that token's sessions to
    /// close (least recently used first) so that it keeps at most `per_token`.
    pub fn opened(&mut self, id: &str, token_id: &str) -> Vec<String> {
        let used = self.tick();
        self.sessions.insert(
            id.to_string(),
            Owned {
                token_id: token_id.to_string(),
                used,
            },
        );
        let mut mine: Vec<(u64, String)> = self
            .sessions
            .iter()
            .filter(|(_, o)| o.token_id == token_id)
            .map(|(sid, o)| (o.used, sid.clone()))
            .collect();
        let excess = mine.len().saturating_sub(self.per_token);
        mine.sort();
        let gone: Vec<String> = mine.into_iter().take(excess).map(|(_, s)| s).collect();
        for sid in &gone {
            self.sessions.remove(sid);
        }
        gone
    }

    /// Whether session `id` is alive and `token_id`'s; if so it counts as used now.
    pub fn use_as(&mut self, id: &str, token_id: &str) -> bool {
        let now = self.tick();
        match self.sessions.get_mut(id) {
            Some(o) if o.token_id == token_id => {
                o.used = now;
                true
            }
            Some(_) | None => false,
        }
    }

    /// Session `id` ended.
    pub fn closed(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// Forget the sessions whose token `valid` no longer accepts, and those `alive` no longer
    /// holds; the ids of the first (to close).
    pub fn sweep(
        &mut self,
        valid: impl Fn(&str) -> bool,
        alive: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut revoked = Vec::new();
        self.sessions.retain(|id, o| {
            if !valid(&o.token_id) {
                revoked.push(id.clone());
                false
            } else {
                alive(id)
            }
        });
        revoked
    }

    /// How many sessions `token_id` has.
    pub fn of_token(&self, token_id: &str) -> usize {
        self.sessions
            .values()
            .filter(|o| o.token_id == token_id)
            .count()
    }

    /// How many sessions in all.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// `/mcp`: rmcp's streamable HTTP service behind the session-ownership check.
pub(crate) struct McpEndpoint {
    service: StreamableHttpService<DesktopServer, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    table: Mutex<SessionTable>,
}

impl McpEndpoint {
    /// The endpoint over `service`, whose sessions `manager` holds; `per_token` sessions per
    /// token at most.
    pub(crate) fn new(
        service: StreamableHttpService<DesktopServer, LocalSessionManager>,
        manager: Arc<LocalSessionManager>,
        per_token: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            service,
            manager,
            table: Mutex::new(SessionTable::new(per_token)),
        })
    }

    /// Close these sessions (their streams end with them).
    async fn close(&self, ids: Vec<String>) {
        for id in ids {
            let handle = self.manager.sessions.write().await.remove(id.as_str());
            if let Some(handle) = handle {
                // a worker busy with a long tool call may take a while; dropping the handle
                // after the wait ends the session anyway
                let _ = tokio::time::timeout(CLOSE_WAIT, handle.close()).await;
            }
        }
    }

    /// End the sessions of revoked tokens; forget the sessions rmcp ended (idle, or closed
    /// by their client). `valid` is the set of token digests the token file holds.
    async fn sweep(&self, valid: &HashSet<String>) -> usize {
        let alive: HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|k| k.to_string())
            .collect();
        let revoked = match self.table.lock() {
            Ok(mut t) => t.sweep(|token| valid.contains(token), |id| alive.contains(id)),
            Err(_) => Vec::new(),
        };
        let n = revoked.len();
        self.close(revoked).await;
        n
    }

    fn has_sessions(&self) -> bool {
        self.table.lock().is_ok_and(|t| !t.is_empty())
    }
}

/// Every [`SWEEP_EVERY`], end the MCP sessions whose token was revoked, until `stop`.
pub(crate) async fn sweep_revoked(
    endpoint: Arc<McpEndpoint>,
    gate: Arc<Gate>,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if !endpoint.has_sessions() {
            continue;
        }
        let valid = gate.valid_token_ids();
        let ended = endpoint.sweep(&valid).await;
        if ended > 0 {
            tracing::info!(
                sessions = ended,
                "ended the MCP sessions of a revoked token"
            );
        }
    }
}

/// The answer to a session id that is not the caller's (or not alive): the same either way,
/// so a token learns nothing about other tokens' sessions.
fn no_such_session() -> Response {
    (
        StatusCode::NOT_FOUND,
        "no MCP session with this id: it ended (idle, closed, or its token was revoked) or was \
         never opened with this token; send `initialize` without a session id to open one\n",
    )
        .into_response()
}

/// `/mcp` (after the token check, which put the [`Holder`] on the request): a request naming
/// a session goes on only when that session is the token's; an `initialize` that opened one
/// records it, closing the token's least recently used session beyond the bound.
pub(crate) async fn handle(State(endpoint): State<Arc<McpEndpoint>>, req: Request) -> Response {
    let Some(holder) = req.extensions().get::<Holder>().cloned() else {
        // the token check runs before this route; without it nothing is served
        return (StatusCode::UNAUTHORIZED, "a valid bearer token is needed\n").into_response();
    };
    let named = req
        .headers()
        .get(HEADER_SESSION_ID)
        .map(|v| v.to_str().map(str::to_string));
    match named {
        Some(Ok(id)) => {
            let mine = endpoint
                .table
                .lock()
                .is_ok_and(|mut t| t.use_as(&id, &holder.token_id));
            if !mine {
                return no_such_session();
            }
            let delete = req.method() == Method::DELETE;
            let response = endpoint.service.handle(req).await;
            // past the token check, rmcp's 401 means only "session not found": it ended by
            // itself (idle) before the sweep noticed
            let gone = response.status() == StatusCode::UNAUTHORIZED;
            if gone || (delete && response.status().is_success()) {
                if let Ok(mut t) = endpoint.table.lock() {
                    t.closed(&id);
                }
            }
            if gone {
                return no_such_session();
            }
            response.map(Body::new)
        }
        Some(Err(_)) => no_such_session(),
        None => {
            let response = endpoint.service.handle(req).await;
            let opened = response
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|v| v.to_str().ok());
            if let Some(id) = opened {
                let surplus = endpoint
                    .table
                    .lock()
                    .map(|mut t| t.opened(id, &holder.token_id))
                    .unwrap_or_default();
                if !surplus.is_empty() {
                    tracing::info!(
                        client = %holder.principal.name,
                        closed = surplus.len(),
                        "a token opened more MCP sessions than it may keep; closed its least recently used"
                    );
                }
                endpoint.close(surplus).await;
            }
            response.map(Body::new)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_session_is_its_token_s_alone() {
        let mut t = SessionTable::new(4);
        assert!(t.opened("s1", "alice").is_empty());
        assert!(t.use_as("s1", "alice"));
        assert!(!t.use_as("s1", "bob"));
        assert!(!t.use_as("s2", "alice"));
        t.closed("s1");
        assert!(!t.use_as("s1", "alice"));
    }

    #[test]
    fn past_the_bound_the_least_recently_used_session_closes() {
        let mut t = SessionTable::new(3);
        t.opened("a", "tok");
        t.opened("b", "tok");
        t.opened("c", "tok");
        t.opened("x", "other");
        assert!(t.use_as("a", "tok"));
        // b is now the least recently used
        assert_eq!(t.opened("d", "tok"), vec!["b".to_string()]);
        assert_eq!(t.opened("e", "tok"), vec!["c".to_string()]);
        assert_eq!(t.of_token("tok"), 3);
        assert_eq!(t.of_token("other"), 1, "another token's sessions stay");
    }

    #[test]
    fn a_sweep_ends_revoked_tokens_sessions_and_forgets_dead_ones() {
        let mut t = SessionTable::new(4);
        t.opened("a1", "alice");
        t.opened("a2", "alice");
        t.opened("b1", "bob");
        t.opened("b2", "bob");
        let mut revoked = t.sweep(|tok| tok != "alice", |id| id != "b2");
        revoked.sort();
        assert_eq!(revoked, vec!["a1".to_string(), "a2".to_string()]);
        assert_eq!(t.len(), 1);
        assert!(t.use_as("b1", "bob"));
    }

    proptest! {
        /// Whatever tokens open and use sessions: no token ever holds more than the bound,
        /// the session just opened always survives, and no token reaches another's session.
        #[test]
        fn a_token_never_holds_more_than_its_bound(
            per_token in 1usize..6,
            steps in proptest::collection::vec((0u8..3, 0u16..40, any::<bool>()), 0..300),
        ) {
            let mut t = SessionTable::new(per_token);
            let mut owner = HashMap::<String, String>::new();
            for (token, session, open) in steps {
                let token = format!("t{token}");
                let id = format!("s{session}");
                if open && !owner.contains_key(&id) {
                    let gone = t.opened(&id, &token);
                    prop_assert!(!gone.contains(&id));
                    for g in &gone {
                        prop_assert_eq!(owner.get(g), Some(&token), "only its own sessions close");
                    }
                    owner.insert(id.clone(), token.clone());
                    prop_assert!(t.use_as(&id, &token));
                } else if let Some(real) = owner.get(&id) {
                    let reached = t.use_as(&id, &token);
                    prop_assert!(!reached || real == &token);
                }
                for k in 0..3u8 {
                    let held = t.of_token(&format!("t{}", k));
                    prop_assert!(held <= per_token);
                }
            }
        }
    }
}
