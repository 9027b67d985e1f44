//! The knowledge a `ufo run` or `ufo batch` session consults: the store opened read-mostly
//! for the session, each query bounded in time (it runs on a blocking thread; past the
//! budget the step goes on without knowledge and the step record says why).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Knowledge, KnowledgeAccess, KnowledgeError, KnowledgeKind, KnowledgeLimits, KnowledgeQuery,
    Snippet,
};
use ufo_knowledge::store::{SearchRequest, Store};

use crate::commands::knowledge::KnowledgeSettings;

/// The longest one step waits for the store.
pub const QUERY_BUDGET: Duration = Duration::from_millis(500);

/// The store of one session.
pub struct SessionKnowledge {
    store: Arc<Mutex<Store>>,
    budget: Duration,
    limits: KnowledgeLimits,
}

impl SessionKnowledge {
    /// The session's knowledge under `settings`: `None` when knowledge is off, or when the
    /// store file does not exist yet (nothing was indexed or saved: the prompts stay as they
    /// are without knowledge).
    pub fn open(settings: Option<&KnowledgeSettings>) -> Result<Option<Self>, String> {
        let Some(s) = settings.filter(|s| s.enabled) else {
            return Ok(None);
        };
        if !Path::new(&s.store).is_file() {
            return Ok(None);
        }
        let store = Store::open(&s.store).map_err(|e| e.to_string())?;
        let top = |kind: KnowledgeKind| {
            s.top
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, n)| *n)
        };
        Ok(Some(Self {
            store: Arc::new(Mutex::new(store)),
            budget: QUERY_BUDGET,
            limits: KnowledgeLimits {
                top: KnowledgeKind::ALL.map(top),
                caps: s.caps,
            },
        }))
    }

    /// What the session's services carry.
    pub fn access(&self) -> KnowledgeAccess<'_> {
        KnowledgeAccess {
            store: self,
            limits: self.limits,
        }
    }
}

#[async_trait]
impl Knowledge for SessionKnowledge {
    async fn query(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
        let store = self.store.clone();
        let req = SearchRequest {
            text: q.text().to_string(),
            app: q.application.clone(),
            kinds: q.kinds.clone(),
            top: q.top_k,
        };
        let search = tokio::task::spawn_blocking(move || {
            let store = store
                .lock()
                .map_err(|_| KnowledgeError::Store("an earlier query panicked".into()))?;
            store
                .search(&req)
                .map_err(|e| KnowledgeError::Store(e.to_string()))
        });
        let hits = match tokio::time::timeout(self.budget, search).await {
            Ok(Ok(found)) => found?,
            Ok(Err(e)) => return Err(KnowledgeError::Store(format!("the query stopped: {e}"))),
            Err(_) => {
                return Err(KnowledgeError::Store(format!(
                    "no answer within {} ms, so this step goes without",
                    self.budget.as_millis()
                )))
            }
        };
        Ok(hits
            .into_iter()
            .map(|h| Snippet {
                kind: h.kind,
                id: h.id,
                title: h.title,
                location: h.location,
                text: h.text,
                score: h.score,
            })
            .collect())
    }
}
