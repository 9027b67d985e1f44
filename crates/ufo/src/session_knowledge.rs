//! The knowledge a `ufo run` or `ufo batch` session consults: the store opened read-mostly
//! for the session, each query bounded in time (it runs on a blocking thread; past the
//! budget the step goes on without knowledge and the step record says why).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::lookup::Reranker;
use ufo_core::rerank::{RerankMemo, RerankMode, RERANK_TIMEOUT};
use ufo_core::{
    ChatRequest, ChatResponse, Knowledge, KnowledgeAccess, KnowledgeError, KnowledgeKind,
    KnowledgeLimits, KnowledgeQuery, LlmClient, LlmError, Snippet, Usage,
};
use ufo_knowledge::embed::EmbedLimits;
use ufo_knowledge::store::{SearchRequest, Store};
use ufo_knowledge::web::{WebLimits, WebSearch};

use crate::config::knowledge::KnowledgeSettings;

/// The longest one step waits for the store.
pub const QUERY_BUDGET: Duration = Duration::from_millis(500);

/// The longest one step waits for the web (the search and the pages fetched).
pub const WEB_BUDGET: Duration = Duration::from_secs(6);
/// Searches kept per session, so that the steps of one subtask search the web once.
const WEB_CACHE: usize = 16;

/// The knowledge of one session: the store and, when configured, web search.
pub struct SessionKnowledge {
    store: Option<Arc<Mutex<Store>>>,
    web: Option<WebSearch>,
    web_cache: Mutex<Vec<(String, Vec<Snippet>)>>,
    /// Set when the web search failed once: the rest of the session goes without it, so a
    /// hanging endpoint costs its timeout once.
    web_down: AtomicBool,
    budget: Duration,
    limits: KnowledgeLimits,
    /// With `[knowledge] rerank = "model"`, what the session remembers of its rerank calls.
    rerank: Option<RerankMemo>,
}

impl SessionKnowledge {
    /// The session's knowledge under `settings`: `None` when knowledge is off, or when there
    /// is neither a store file (nothing was indexed or saved yet) nor a web search endpoint:
    /// the prompts then stay as they are without knowledge.
    pub fn open(settings: Option<&KnowledgeSettings>) -> Result<Option<Self>, String> {
        let Some(s) = settings.filter(|s| s.enabled) else {
            return Ok(None);
        };
        let store = if Path::new(&s.store).is_file() {
            let mut store = Store::open(&s.store).map_err(|e| e.to_string())?;
            store.set_embedder(s.encoder().map_err(|e| format!("{e:#}"))?);
            Some(Arc::new(Mutex::new(store)))
        } else {
            None
        };
        let web = match &s.web_search_url {
            Some(url) => {
                Some(WebSearch::new(url, WebLimits::default()).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        if store.is_none() && web.is_none() {
            return Ok(None);
        }
        let top = |kind: KnowledgeKind| {
            let n = s
                .top
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, n)| *n);
            // a kind with no source is not asked for
            match kind {
                KnowledgeKind::Web if web.is_none() => 0,
                KnowledgeKind::Web => n,
                _ if store.is_none() => 0,
                _ => n,
            }
        };
        let limits = KnowledgeLimits {
            top: KnowledgeKind::ALL.map(top),
            caps: s.caps,
        };
        // only the store's docs are reranked
        let rerank = (s.rerank == RerankMode::Model && store.is_some()).then(RerankMemo::new);
        Ok(Some(Self {
            store,
            web,
            web_cache: Mutex::new(Vec::new()),
            web_down: AtomicBool::new(false),
            // the query's vector may take its own timeout on top of the lexical search
            budget: match s.embeds() {
                true => QUERY_BUDGET + EmbedLimits::default().query,
                false => QUERY_BUDGET,
            },
            limits,
            rerank,
        }))
    }

    /// What the session's services carry; with `[knowledge] rerank = "model"`, `model` (the
    /// session's own, bounded by [`RerankModel`]) orders the docs found.
    pub fn access<'a>(&'a self, model: &'a dyn LlmClient) -> KnowledgeAccess<'a> {
        KnowledgeAccess {
            store: self,
            limits: self.limits,
            rerank: self.rerank.as_ref().map(|memo| Reranker { model, memo }),
        }
    }

    /// The store's answer for the query's kinds other than web, within the budget.
    async fn ask_store(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
        let kinds: Vec<KnowledgeKind> = KnowledgeKind::ALL
            .into_iter()
            .filter(|k| *k != KnowledgeKind::Web && q.wants(*k))
            .collect();
        let Some(store) = self.store.clone().filter(|_| !kinds.is_empty()) else {
            return Ok(Vec::new());
        };
        let req = SearchRequest {
            text: q.text().to_string(),
            app: q.application.clone(),
            kinds,
            top: q.top_k,
        };
        let search = tokio::task::spawn_blocking(move || {
            let store = store
                .lock()
                .map_err(|_| KnowledgeError::Store("an earlier query panicked".into()))?;
            let found = store
                .search(&req)
                .map_err(|e| KnowledgeError::Store(e.to_string()));
            // a failed embeddings endpoint is said once; the search went on lexically
            if let Some(w) = store.embed_warning() {
                tracing::warn!(warning = %w, "knowledge embeddings");
            }
            found
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
        Ok(hits.into_iter().map(Snippet::from).collect())
    }

    /// The web's answer, once per query text in a session, within [`WEB_BUDGET`].
    async fn ask_web(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
        let top = self.limits.top(KnowledgeKind::Web);
        let wanted =
            q.wants(KnowledgeKind::Web) && top > 0 && !self.web_down.load(Ordering::Relaxed);
        let Some(web) = self.web.as_ref().filter(|_| wanted) else {
            return Ok(Vec::new());
        };
        let text = q.text().to_string();
        if let Ok(cache) = self.web_cache.lock() {
            if let Some((_, found)) = cache.iter().find(|(t, _)| *t == text) {
                return Ok(found.clone());
            }
        }
        let found = match tokio::time::timeout(WEB_BUDGET, web.search(&text, top)).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                self.web_down.store(true, Ordering::Relaxed);
                return Err(KnowledgeError::Store(format!(
                    "{e}; the rest of the session goes without web search"
                )));
            }
            Err(_) => {
                self.web_down.store(true, Ordering::Relaxed);
                return Err(KnowledgeError::Store(format!(
                    "the web search gave no answer within {} s; the rest of the session goes without it",
                    WEB_BUDGET.as_secs()
                )));
            }
        };
        if let Ok(mut cache) = self.web_cache.lock() {
            if cache.len() >= WEB_CACHE {
                cache.remove(0);
            }
            cache.push((text, found.clone()));
        }
        Ok(found)
    }
}

#[async_trait]
impl Knowledge for SessionKnowledge {
    async fn query(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
        let (store, web) = tokio::join!(self.ask_store(q), self.ask_web(q));
        match (store, web) {
            (Ok(mut a), Ok(b)) => {
                a.extend(b);
                Ok(a)
            }
            // one source failing leaves the other's answer; the failure is logged
            (Ok(a), Err(e)) | (Err(e), Ok(a)) if !a.is_empty() => {
                tracing::warn!(error = %e, "a knowledge source did not answer");
                Ok(a)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }
}

/// The session's model as the knowledge reranker: each call bounded by [`RERANK_TIMEOUT`]
/// (its completion tokens by the request's own bound), a call that fails logged.
pub struct RerankModel<'a> {
    inner: &'a dyn LlmClient,
}

impl<'a> RerankModel<'a> {
    /// `inner`, bounded.
    pub fn new(inner: &'a dyn LlmClient) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl LlmClient for RerankModel<'_> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer = match tokio::time::timeout(RERANK_TIMEOUT, self.inner.complete(request)).await
        {
            Ok(a) => a,
            Err(_) => Err(LlmError::Unavailable(format!(
                "no answer within {} s",
                RERANK_TIMEOUT.as_secs()
            ))),
        };
        // once: a model that gave no answer is not asked again in the session
        if let Err(e) = &answer {
            tracing::warn!(error = %e, "the knowledge rerank call failed; the docs keep the store's order for the rest of the session");
        }
        answer
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.inner.cost(usage)
    }
}
