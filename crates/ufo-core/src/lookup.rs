//! The knowledge lookup of one agent step: the store asked within its bounds, the docs found
//! ordered by the second stage when one is configured ([`crate::rerank`], docs/knowledge.md
//! "Reranked by the session's model"), each kind trimmed to its top-k, and the prompt sections
//! made ([`crate::knowledge::prompt_sections_used`]). The store and the model are ports; this
//! module decides what is asked and what is kept.

use crate::knowledge::{
    prompt_sections_used, Knowledge, KnowledgeKind, KnowledgeLimits, KnowledgeQuery, Snippet,
    UsedSnippet,
};
use crate::rerank::{RerankCall, RerankMemo};

/// The knowledge a session may consult: the store and how much of it a prompt shows.
#[derive(Clone, Copy)]
pub struct KnowledgeAccess<'a> {
    /// The store (an adapter bounds each query's time).
    pub store: &'a dyn Knowledge,
    /// The bounds of one prompt's knowledge.
    pub limits: KnowledgeLimits,
    /// The second stage that orders the docs found (`[knowledge] rerank = "model"`); `None`
    /// keeps the store's order.
    pub rerank: Option<Reranker<'a>>,
}

/// The session's model as the knowledge lookup's second stage, and what the session
/// remembers of its calls.
#[derive(Clone, Copy)]
pub struct Reranker<'a> {
    /// The model asked (the adapter bounds the call's time to
    /// [`RERANK_TIMEOUT`](crate::rerank::RERANK_TIMEOUT)).
    pub model: &'a dyn crate::ports::LlmClient,
    /// The calls made so far: one per distinct query.
    pub memo: &'a RerankMemo,
}

/// What one step found: the prompt text (empty when nothing) and the snippets it shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieved {
    /// The sections for the prompt's `knowledge` variable.
    pub text: String,
    /// The snippets shown, for the step record.
    pub used: Vec<UsedSnippet>,
    /// Why the store could not answer, if it could not (the step goes on without), or why
    /// the docs kept the store's order when a rerank was asked for.
    pub warning: Option<String>,
    /// Whether the docs shown are in the order the session's model gave.
    pub reranked: bool,
    /// The rerank call made for this step, if one was (for its `knowledge_rerank` record).
    pub rerank_call: Option<RerankCall>,
}

/// Ask `access` (if any) for `request`, the `subtask` at hand and its `application`, and
/// make the prompt sections: each kind trimmed to its top-k, the whole within the caps. No
/// access, no kind wanted, or a store error give no text.
pub async fn retrieve(
    access: Option<KnowledgeAccess<'_>>,
    request: &str,
    subtask: Option<&str>,
    application: Option<&str>,
) -> Retrieved {
    let Some(access) = access else {
        return Retrieved::default();
    };
    let limits = access.limits;
    let kinds: Vec<KnowledgeKind> = KnowledgeKind::ALL
        .into_iter()
        .filter(|k| limits.top(*k) > 0)
        .collect();
    let Some(top_k) = kinds.iter().map(|k| limits.top(*k)).max() else {
        return Retrieved::default();
    };
    // the reranker chooses the docs shown among more candidates than are shown
    let rerank = access
        .rerank
        .filter(|_| limits.top(KnowledgeKind::Docs) > 0);
    let top_k = match rerank {
        Some(_) => top_k.max(crate::rerank::RERANK_CANDIDATES),
        None => top_k,
    };
    let query = KnowledgeQuery {
        request: request.to_string(),
        subtask: subtask.map(str::to_string),
        application: application
            .filter(|a| !a.trim().is_empty())
            .map(str::to_string),
        kinds,
        top_k,
    };
    let snippets = match access.store.query(&query).await {
        Ok(s) => s,
        Err(e) => {
            return Retrieved {
                warning: Some(e.to_string()),
                ..Retrieved::default()
            }
        }
    };
    let (snippets, done) = match rerank {
        Some(r) => {
            let key = crate::rerank::query_key(query.text(), query.application.as_deref());
            rerank_docs(r, &key, query.text(), snippets).await
        }
        None => (snippets, RerankOutcome::default()),
    };
    let mut per_kind = [0usize; 4];
    let kept: Vec<Snippet> = snippets
        .into_iter()
        .filter(|s| {
            let i = KnowledgeKind::ALL
                .iter()
                .position(|k| *k == s.kind)
                .unwrap_or(0);
            per_kind[i] += 1;
            per_kind[i] <= limits.top(s.kind)
        })
        .collect();
    let (text, used) = prompt_sections_used(&kept, limits.caps);
    Retrieved {
        text,
        used,
        warning: done.warning,
        reranked: done.reranked,
        rerank_call: done.call,
    }
}

/// What the second stage did for one query.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RerankOutcome {
    /// Whether the docs are in the order the model gave.
    pub reranked: bool,
    /// Why they kept the store's order, when a call was made and failed.
    pub warning: Option<String>,
    /// The call made, if one was (none when the query's order was remembered, the memo is
    /// closed, or there was less than two docs to order).
    pub call: Option<RerankCall>,
}

/// `snippets` with their docs (the first [`RERANK_CANDIDATES`](crate::rerank::RERANK_CANDIDATES))
/// in the order `r.model` gives for `text`: asked once per distinct query (`key`), its answer
/// remembered for later steps with the same query. A failed call, an unusable answer, or a
/// closed memo keep the store's order; every outcome keeps every snippet (the order is a
/// permutation of the candidates), and the other kinds keep their places.
pub async fn rerank_docs(
    r: Reranker<'_>,
    key: &str,
    text: &str,
    snippets: Vec<Snippet>,
) -> (Vec<Snippet>, RerankOutcome) {
    let mut done = RerankOutcome::default();
    use crate::rerank::{merge_order, Recall, RERANK_CANDIDATES};
    let mut docs: Vec<Snippet> = Vec::new();
    let mut others: Vec<(usize, Snippet)> = Vec::new();
    for (i, s) in snippets.into_iter().enumerate() {
        match s.kind {
            KnowledgeKind::Docs => docs.push(s),
            _ => others.push((i, s)),
        }
    }
    let n = docs.len().min(RERANK_CANDIDATES);
    let named: Vec<usize> = match (n, r.memo.recall(key)) {
        // nothing to order
        (0 | 1, _) | (_, Recall::Closed | Recall::Known(None)) => Vec::new(),
        (_, Recall::Known(Some(ids))) => ids
            .iter()
            .filter_map(|id| docs[..n].iter().position(|d| d.id == *id))
            .collect(),
        (_, Recall::Ask) => {
            let (named, call) = ask(r, text, &docs[..n]).await;
            let order: Option<Vec<String>> =
                (!named.is_empty()).then(|| named.iter().map(|&i| docs[i].id.clone()).collect());
            // a model that gave no answer at all is not asked again in this session
            let model_down = call.error.as_deref().is_some_and(is_no_answer);
            r.memo.keep(key, order, model_down);
            if let Some(e) = &call.error {
                done.warning = Some(format!("{e}; the docs keep the store's order"));
            }
            done.call = Some(call);
            named
        }
    };
    done.reranked = !named.is_empty();
    let tail = docs.split_off(n);
    let mut ordered = merge_order(docs, &named);
    ordered.extend(tail);
    if let Some(call) = done.call.as_mut() {
        call.order = ordered.iter().take(n).map(|d| d.id.clone()).collect();
    }
    // the other kinds keep their places; the docs fill the docs' places in the new order
    let total = ordered.len() + others.len();
    let mut docs = ordered.into_iter();
    let mut others = others.into_iter().peekable();
    let mut out = Vec::with_capacity(total);
    for i in 0..total {
        match others.next_if(|(at, _)| *at == i) {
            Some((_, s)) => out.push(s),
            None => out.extend(docs.next()),
        }
    }
    (out, done)
}

/// Whether a call's error says the model gave no answer at all (rather than a bad one).
fn is_no_answer(error: &str) -> bool {
    error.starts_with(NO_ANSWER)
}

/// How an error of the model port (not of its answer) starts in a rerank record.
const NO_ANSWER: &str = "the model did not answer the rerank";

/// One call asking `r.model` to order `candidates` for `text`: the indices it names, in its
/// order (none when it failed), and the call for the record.
async fn ask(r: Reranker<'_>, text: &str, candidates: &[Snippet]) -> (Vec<usize>, RerankCall) {
    let request = crate::rerank::rerank_request(text, candidates);
    let started = std::time::Instant::now();
    let answer = r.model.complete(&request).await;
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut llm = crate::events::LlmStats {
        calls: 1,
        ..Default::default()
    };
    let named = match answer {
        Ok(a) => {
            llm.prompt_tokens = a.usage.prompt_tokens;
            llm.completion_tokens = a.usage.completion_tokens;
            llm.cost = r.model.cost(&a.usage);
            crate::rerank::parse_order(&a.text, candidates.len()).map_err(|e| e.to_string())
        }
        Err(e) => Err(format!("{NO_ANSWER}: {e}")),
    };
    let (named, error) = match named {
        Ok(n) => (n, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let call = RerankCall {
        query: text.to_string(),
        model: r.model.describe(),
        llm,
        offered: candidates.iter().map(|c| c.id.clone()).collect(),
        order: Vec::new(),
        error,
        ms,
    };
    (named, call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::tests::snip;
    use crate::knowledge::{KnowledgeError, PromptCaps};
    use async_trait::async_trait;

    struct Fixed(Result<Vec<Snippet>, String>);

    #[async_trait]
    impl Knowledge for Fixed {
        async fn query(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
            assert_eq!(
                q.kinds,
                vec![KnowledgeKind::Docs, KnowledgeKind::Experience]
            );
            assert_eq!(q.top_k, 2);
            self.0.clone().map_err(KnowledgeError::Store)
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn retrieve_keeps_each_kinds_top_k_and_names_what_it_shows() {
        let store = Fixed(Ok(vec![
            snip(KnowledgeKind::Docs, "a", "one"),
            snip(KnowledgeKind::Experience, "b", "two"),
            snip(KnowledgeKind::Docs, "c", "three"),
            snip(KnowledgeKind::Experience, "d", "four"),
        ]));
        let access = KnowledgeAccess {
            store: &store,
            limits: KnowledgeLimits {
                top: [1, 2, 0, 0],
                caps: PromptCaps::default(),
            },
            rerank: None,
        };
        let found = block_on(retrieve(Some(access), "r", Some("s"), Some("calc")));
        let ids: Vec<&str> = found.used.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(ids, ["experience:b", "experience:d", "docs:a"]);
        assert!(found.text.contains("Examples:") && found.text.contains("Reference:"));
        assert!(!found.text.contains("three"));
        assert_eq!(found.warning, None);
    }

    #[test]
    fn retrieve_without_access_or_on_error_gives_no_text() {
        assert_eq!(
            block_on(retrieve(None, "r", None, None)),
            Retrieved::default()
        );
        let store = Fixed(Err("locked".into()));
        let access = KnowledgeAccess {
            store: &store,
            limits: KnowledgeLimits {
                top: [2, 1, 0, 0],
                caps: PromptCaps::default(),
            },
            rerank: None,
        };
        let found = block_on(retrieve(Some(access), "r", None, None));
        assert_eq!(found.text, "");
        assert!(found.used.is_empty());
        assert!(found.warning.is_some_and(|w| w.contains("locked")));
    }

    /// A store of docs `docs:0`..`docs:N` (best first) and one experience.
    struct Docs(usize);

    #[async_trait]
    impl Knowledge for Docs {
        async fn query(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
            // the reranker asks for its candidates, more than are shown
            assert!(q.top_k >= crate::rerank::RERANK_CANDIDATES, "{}", q.top_k);
            let mut v = vec![snip(KnowledgeKind::Experience, "e", "past")];
            v.extend((0..self.0.min(q.top_k)).map(|i| Snippet {
                id: format!("docs:{i}"),
                ..snip(KnowledgeKind::Docs, &format!("p{i}"), "text")
            }));
            Ok(v)
        }
    }

    /// A model that answers `answer` (or fails), counting its calls.
    struct Answers {
        answer: Result<String, String>,
        calls: std::sync::atomic::AtomicUsize,
        prompts: std::sync::Mutex<Vec<String>>,
    }

    impl Answers {
        fn new(answer: Result<&str, &str>) -> Self {
            Self {
                answer: answer.map(str::to_string).map_err(str::to_string),
                calls: Default::default(),
                prompts: Default::default(),
            }
        }
    }

    #[async_trait]
    impl crate::ports::LlmClient for Answers {
        async fn complete(
            &self,
            r: &crate::ports::ChatRequest,
        ) -> Result<crate::ports::ChatResponse, crate::ports::LlmError> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Ok(mut p) = self.prompts.lock() {
                p.push(r.prompt_text());
            }
            match &self.answer {
                Ok(text) => Ok(crate::ports::ChatResponse {
                    text: text.clone(),
                    usage: crate::ports::Usage {
                        prompt_tokens: 100,
                        completion_tokens: 8,
                    },
                }),
                Err(e) => Err(crate::ports::LlmError::Unavailable(e.clone())),
            }
        }

        fn describe(&self) -> String {
            "test:model".into()
        }
    }

    fn reranked(model: &Answers, memo: &RerankMemo, docs: usize, subtask: &str) -> Retrieved {
        let store = Docs(docs);
        let access = KnowledgeAccess {
            store: &store,
            limits: KnowledgeLimits {
                top: [3, 1, 0, 0],
                caps: PromptCaps::default(),
            },
            rerank: Some(Reranker { model, memo }),
        };
        block_on(retrieve(Some(access), "r", Some(subtask), Some("calc")))
    }

    fn ids(found: &Retrieved) -> Vec<&str> {
        found.used.iter().map(|u| u.id.as_str()).collect()
    }

    #[test]
    fn the_models_order_chooses_the_docs_shown_and_is_asked_once_per_query() {
        let model = Answers::new(Ok("```json\n{\"Order\": [7, 2, 99]}\n```"));
        let memo = RerankMemo::new();
        let found = reranked(&model, &memo, 12, "freeze the first row");
        // its two first, then the fused order; the tenth and later were not offered
        assert_eq!(ids(&found), ["experience:e", "docs:6", "docs:1", "docs:0"]);
        assert!(found.reranked);
        let call = found.rerank_call.expect("a call");
        assert_eq!(call.offered.len(), crate::rerank::RERANK_CANDIDATES);
        assert_eq!(call.order[..3], ["docs:6", "docs:1", "docs:0"]);
        assert_eq!(call.llm.calls, 1);
        assert_eq!(call.error, None);
        assert!(model.prompts.lock().expect("prompts")[0].contains("Task: freeze the first row"));
        // the same query again: the remembered order, no call
        let again = reranked(&model, &memo, 12, "freeze the first row");
        assert_eq!(
            ids(&again),
            ids(&reranked(&model, &memo, 12, "freeze the first row"))
        );
        assert!(again.reranked && again.rerank_call.is_none());
        assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // another query: another call
        reranked(&model, &memo, 12, "sort the column");
        assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn a_bad_answer_or_a_failed_call_keeps_the_fused_order() {
        for answer in [
            Ok("I like page two"),
            Ok("{\"Order\": [40]}"),
            Err("refused"),
        ] {
            let model = Answers::new(answer);
            let memo = RerankMemo::new();
            let found = reranked(&model, &memo, 5, "freeze");
            assert_eq!(
                ids(&found),
                ["experience:e", "docs:0", "docs:1", "docs:2"],
                "{answer:?}"
            );
            assert!(!found.reranked);
            let call = found.rerank_call.expect("recorded");
            assert!(call.error.is_some(), "{answer:?}");
            assert_eq!(call.order, call.offered);
            assert!(found.warning.is_some_and(|w| w.contains("store's order")));
            // a model that gave no answer is not asked again; a bad answer only for its query
            reranked(&model, &memo, 5, "another query");
            let calls = model.calls.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(calls, if answer.is_err() { 1 } else { 2 }, "{answer:?}");
        }
    }

    #[test]
    fn one_candidate_needs_no_call() {
        let model = Answers::new(Ok("{\"Order\": [1]}"));
        let memo = RerankMemo::new();
        let found = reranked(&model, &memo, 1, "freeze");
        assert_eq!(ids(&found), ["experience:e", "docs:0"]);
        assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert!(found.rerank_call.is_none() && !found.reranked);
    }
}
