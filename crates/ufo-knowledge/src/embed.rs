//! Optional embeddings: an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM)
//! gives each document and each query a vector; the store ranks by cosine as well as by BM25
//! and fuses the two rankings (reciprocal-rank fusion). Nothing is downloaded: without an
//! endpoint configured the store ranks lexically, as it does without this module.
//!
//! Every request is bounded: a connect timeout, a timeout for the whole request, a cap on the
//! body read, a cap on the texts per request and on the characters of each text. The store is
//! synchronous, so each request runs on a thread of its own with a small runtime: it can be
//! called from a blocking thread, from a command, or from inside another runtime alike.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::model::SentenceModel;

/// Most bytes read of one answer.
pub const MAX_BODY_BYTES: usize = 16 << 20;
/// Most texts sent in one request.
pub const BATCH: usize = 32;
/// Most characters of one text sent.
pub const TEXT_CHARS: usize = 2_000;
/// Most numbers in one vector.
pub const MAX_DIM: usize = 8_192;

/// How long embedding requests may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedLimits {
    /// Connecting to the server.
    pub connect: Duration,
    /// One request of documents (a batch).
    pub batch: Duration,
    /// Embedding a query (the step waits for it).
    pub query: Duration,
}

impl Default for EmbedLimits {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(1),
            batch: Duration::from_secs(30),
            query: Duration::from_secs(1),
        }
    }
}

/// An embedding request that failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The endpoint did not answer usefully.
    #[error("embeddings at {url}: {what}; check [knowledge] embeddings_url and embeddings_model (an OpenAI-compatible /v1/embeddings endpoint)")]
    Endpoint {
        /// The endpoint.
        url: String,
        /// What went wrong.
        what: String,
    },
    /// The in-process model failed.
    #[error("the embedding model: {0}")]
    Model(String),
}

/// An OpenAI-compatible embeddings endpoint and its model.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedder {
    url: String,
    model: String,
    key: Option<String>,
    limits: EmbedLimits,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl Embedder {
    /// The endpoint at `base` (a base URL like `http://127.0.0.1:11434/v1` or
    /// `https://api.openai.com`, or the full `.../embeddings` URL) with `model`.
    pub fn new(base: &str, model: &str, limits: EmbedLimits) -> Self {
        Self {
            url: endpoint_url(base),
            model: model.to_string(),
            key: None,
            limits,
        }
    }

    /// The same endpoint, sending `key` as a bearer token.
    pub fn with_key(mut self, key: Option<String>) -> Self {
        self.key = key.filter(|k| !k.is_empty());
        self
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model asked for (stored with each vector, so vectors of another model are not
    /// compared with this one's).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors of `texts`, in order, in requests of at most [`BATCH`] texts, each within
    /// the batch timeout.
    pub fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.request(chunk, self.limits.batch)?);
        }
        Ok(out)
    }

    /// The vectors of a query's phrasings (at most [`BATCH`]), in one request within the
    /// query timeout.
    pub fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.request(&texts[..texts.len().min(BATCH)], self.limits.query)
    }

    fn error(&self, what: impl Into<String>) -> EmbedError {
        EmbedError::Endpoint {
            url: self.url.clone(),
            what: what.into(),
        }
    }

    /// One request for `texts` (at most [`BATCH`]), on a thread of its own, within `timeout`.
    fn request(&self, texts: &[String], timeout: Duration) -> Result<Vec<Vec<f32>>, EmbedError> {
        let input: Vec<String> = texts
            .iter()
            .map(|t| t.chars().take(TEXT_CHARS).collect())
            .collect();
        let body = serde_json::json!({ "model": self.model, "input": input });
        let (url, key, connect) = (&self.url, self.key.as_deref(), self.limits.connect);
        let answer = std::thread::scope(|s| {
            s.spawn(move || post(url, key, &body, connect, timeout))
                .join()
                .unwrap_or_else(|_| Err("the request thread stopped".into()))
        })
        .map_err(|e| self.error(e))?;
        let answer: Answer = serde_json::from_slice(&answer)
            .map_err(|e| self.error(format!("not an embeddings answer: {e}")))?;
        if answer.data.len() != texts.len() {
            return Err(self.error(format!(
                "{} vectors for {} texts",
                answer.data.len(),
                texts.len()
            )));
        }
        let mut items = answer.data;
        if items.iter().all(|i| i.index.is_some()) {
            items.sort_by_key(|i| i.index);
        }
        let dim = items.first().map_or(0, |i| i.embedding.len());
        if dim == 0 || dim > MAX_DIM || items.iter().any(|i| i.embedding.len() != dim) {
            return Err(self.error(format!(
                "vectors of unequal or unusable length (1 to {MAX_DIM} numbers)"
            )));
        }
        if items
            .iter()
            .any(|i| i.embedding.iter().any(|x| !x.is_finite()))
        {
            return Err(self.error("a vector holds a number that is not finite"));
        }
        Ok(items.into_iter().map(|i| i.embedding).collect())
    }
}

/// `base` made the embeddings URL: a URL ending in `/embeddings` is kept, one ending in `/v1`
/// gets `/embeddings`, anything else `/v1/embeddings`.
pub fn endpoint_url(base: &str) -> String {
    let b = base.trim().trim_end_matches('/');
    if b.ends_with("/embeddings") {
        b.to_string()
    } else if b.ends_with("/v1") {
        format!("{b}/embeddings")
    } else {
        format!("{b}/v1/embeddings")
    }
}

/// POST `body` to `url` and read the answer (at most [`MAX_BODY_BYTES`]), within `timeout`.
fn post(
    url: &str,
    key: Option<&str>,
    body: &serde_json::Value,
    connect: Duration,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime for the request: {e}"))?;
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .connect_timeout(connect)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| format!("client: {e}"))?;
        let mut request = client.post(url).json(body);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let work = async {
            let mut response = request.send().await.map_err(|e| e.to_string())?;
            if !response.status().is_success() {
                return Err(format!("status {}", response.status()));
            }
            let mut out = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
                if out.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(format!("answer larger than {MAX_BODY_BYTES} bytes"));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(out)
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
    })
}

/// The cosine similarity of `a` and `b` (0 for vectors of different length or zero vectors).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// `v` as little-endian bytes (a BLOB column).
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A BLOB column back as a vector (`None` when its length is not whole numbers).
pub fn from_blob(b: &[u8]) -> Option<Vec<f32>> {
    let chunks = b.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(
        chunks
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// How close a page is to `query`, from its parts (vectors of the query's length laid end to
/// end, as a page's parts are stored): the mean of the closest part's cosine and the parts'
/// average cosine, so a page whose name and steps both match ranks above one that matches
/// in one part only; 0 when `parts` is not made of such vectors. On the tuning set the
/// closest part alone gave dense hit@3 0.69, this 0.73 (docs/knowledge.md).
pub fn page_closeness(parts: &[f32], query: &[f32]) -> f32 {
    if query.is_empty() || parts.is_empty() || !parts.len().is_multiple_of(query.len()) {
        return 0.0;
    }
    let (mut best, mut sum, mut n) = (f32::NEG_INFINITY, 0.0f32, 0.0f32);
    for p in parts.chunks_exact(query.len()) {
        let c = cosine(p, query);
        best = best.max(c);
        sum += c;
        n += 1.0;
    }
    (best + sum / n) / 2.0
}

/// The cosine of the vector closest to `query` among `vectors` (vectors of the query's length
/// laid end to end, as a page's index entries are stored); `None` when there are none or
/// `vectors` is not made of such vectors.
pub fn best_closeness(vectors: &[f32], query: &[f32]) -> Option<f32> {
    if query.is_empty() || vectors.is_empty() || !vectors.len().is_multiple_of(query.len()) {
        return None;
    }
    vectors
        .chunks_exact(query.len())
        .map(|v| cosine(v, query))
        .max_by(f32::total_cmp)
}

/// Most tokens of one part of a document the in-process model reads (a page is embedded in
/// parts: `pages::embed_texts`). 128 keeps indexing all LibreOffice and GIMP help within
/// minutes on 2 cores; two more parts of the body per page took 150 s more for no gain on the
/// tuning set (docs/knowledge.md).
pub const DOC_TOKENS: usize = 128;
/// Most tokens of a query the in-process model reads.
pub const QUERY_TOKENS: usize = 64;
/// Most threads that embed documents at once with the in-process model.
pub const MAX_THREADS: usize = 4;
/// Most tokens the in-process model embeds in one batch (its largest intermediate matrix is
/// this many rows of 1,536 numbers for MiniLM: 12 MB).
pub const BATCH_TOKENS: usize = 2_048;

/// The texts (indices into `ids`) each of `threads` threads embeds: longest first, each text
/// to the share with the fewest tokens so far, so the threads finish together.
fn token_shares(ids: &[Vec<u32>], threads: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(ids[*i].len()));
    let mut shares = vec![(0usize, Vec::new()); threads.max(1)];
    for i in order {
        if let Some(least) = shares.iter_mut().min_by_key(|s| s.0) {
            least.0 += ids[i].len();
            least.1.push(i);
        }
    }
    shares
        .into_iter()
        .map(|s| s.1)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `share` cut into consecutive batches of at most `max_tokens` tokens (a longer text alone).
fn token_batches<'a>(share: &'a [usize], ids: &[Vec<u32>], max_tokens: usize) -> Vec<&'a [usize]> {
    let mut batches = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (at, i) in share.iter().enumerate() {
        let n = ids[*i].len();
        if at > start && tokens + n > max_tokens {
            batches.push(&share[start..at]);
            (start, tokens) = (at, 0);
        }
        tokens += n;
    }
    if start < share.len() {
        batches.push(&share[start..]);
    }
    batches
}

/// What gives documents and queries their vectors: an endpoint, or a model in the process.
#[derive(Debug, Clone)]
pub enum Encoder {
    /// An OpenAI-compatible endpoint.
    Http(Embedder),
    /// A sentence-transformers model run in the process ([`crate::model`]).
    Local(Arc<SentenceModel>),
}

impl From<Embedder> for Encoder {
    fn from(e: Embedder) -> Self {
        Encoder::Http(e)
    }
}

impl From<Arc<SentenceModel>> for Encoder {
    fn from(m: Arc<SentenceModel>) -> Self {
        Encoder::Local(m)
    }
}

impl Encoder {
    /// The name stored with each vector (vectors of different models are never compared).
    pub fn model(&self) -> String {
        match self {
            Encoder::Http(e) => e.model().to_string(),
            Encoder::Local(m) => format!("local:{}:{DOC_TOKENS}", m.name()),
        }
    }

    /// The vectors of `texts`, in order (the in-process model on up to [`MAX_THREADS`]
    /// threads, each given texts of about the same number of tokens, in batches of at most
    /// [`BATCH_TOKENS`] tokens).
    pub fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self {
            Encoder::Http(e) => e.embed_documents(texts),
            Encoder::Local(m) => {
                let ids: Vec<Vec<u32>> = texts.iter().map(|t| m.tokens(t, DOC_TOKENS)).collect();
                let threads = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .clamp(1, MAX_THREADS);
                let shares = token_shares(&ids, threads);
                let done: Vec<Vec<(usize, Vec<f32>)>> = std::thread::scope(|s| {
                    let handles: Vec<_> = shares
                        .iter()
                        .map(|share| {
                            let ids = &ids;
                            s.spawn(move || {
                                let mut out = Vec::with_capacity(share.len());
                                for batch in token_batches(share, ids, BATCH_TOKENS) {
                                    let texts: Vec<&[u32]> =
                                        batch.iter().map(|i| ids[*i].as_slice()).collect();
                                    out.extend(batch.iter().copied().zip(m.embed_many(&texts)));
                                }
                                out
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_default())
                        .collect()
                });
                let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
                for (i, v) in done.into_iter().flatten() {
                    out[i] = Some(v);
                }
                out.into_iter()
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| EmbedError::Model("a thread of the model stopped".into()))
            }
        }
    }

    /// The vector of a query asked in several phrasings (`query::asked`): the sum of their
    /// unit vectors, so each phrasing counts alike. One request to an endpoint; with the
    /// in-process model, a thread a phrasing (at most [`MAX_THREADS`]).
    pub fn embed_query(&self, phrasings: &[String]) -> Result<Vec<f32>, EmbedError> {
        let vectors = match self {
            Encoder::Http(e) => e.embed_queries(phrasings)?,
            // a query waits for the slowest phrasing alone: two took 10.6 ms p50 on two
            // threads, 18.6 in one batch on one, and one phrasing 11.5 (2 free cores)
            Encoder::Local(m) => std::thread::scope(|s| {
                let handles: Vec<_> = phrasings
                    .iter()
                    .take(MAX_THREADS)
                    .map(|t| s.spawn(move || m.embed(t, QUERY_TOKENS)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect::<Vec<_>>()
            }),
        };
        unit_sum(&vectors).ok_or_else(|| EmbedError::Model("no vector for the query".into()))
    }
}

/// The sum of `vectors` each scaled to length 1 (`None` when there are none or their
/// lengths differ; a zero vector adds nothing).
fn unit_sum(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0f32; first.len()];
    for v in vectors {
        if v.len() != sum.len() {
            return None;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for (s, x) in sum.iter_mut().zip(v) {
                *s += x / norm;
            }
        }
    }
    Some(sum)
}

/// Reciprocal-rank fusion constant: how far down a ranking still counts (smaller: its first
/// places count more). With the query asked in a person's phrasings (`query::asked`) the
/// rankings' first places are surer: on the 205 tuning requests fused hit@3 was 0.81 at 10-15,
/// 0.80 at 20 and 0.79 at 30 (docs/knowledge.md); with two rankings 10-120 made no difference.
pub const RRF_K: f64 = 15.0;

/// The weight of the lexical ranking in the fusion.
pub const LEXICAL_WEIGHT: f64 = 1.0;
/// The weight of the ranking of pages by their parts' closeness. Above the others: on the
/// tuning set fused hit@3 went from 0.83 to 0.85 with 1.25-2 (docs/knowledge.md), and the
/// model's ranking was the stronger one on requests it was not tuned on.
pub const PAGE_WEIGHT: f64 = 1.5;
/// The weight of the ranking of pages by their closest index entry.
pub const ENTRY_WEIGHT: f64 = 1.0;

/// Weighted reciprocal-rank fusion of rankings (each best first, with its weight): each item
/// scores the sum of `weight / (RRF_K + rank)` over the rankings it is in (rank from 1).
/// Best first; ties keep the order of first appearance.
pub fn fuse<T: PartialEq + Clone>(rankings: &[(Vec<T>, f64)]) -> Vec<(T, f64)> {
    let mut out: Vec<(T, f64)> = Vec::new();
    for (ranking, weight) in rankings {
        for (i, item) in ranking.iter().enumerate() {
            let s = weight / (RRF_K + i as f64 + 1.0);
            match out.iter_mut().find(|(t, _)| t == item) {
                Some((_, score)) => *score += s,
                None => out.push((item.clone(), s)),
            }
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_s_phrasings_count_alike_whatever_their_length() {
        let sum = unit_sum(&[vec![3.0, 0.0], vec![0.0, 0.5]]).unwrap();
        assert_eq!(sum, vec![1.0, 1.0]);
        // a zero vector adds nothing; vectors of unequal length or none give no vector
        assert_eq!(
            unit_sum(&[vec![0.0, 2.0], vec![0.0, 0.0]]).unwrap(),
            vec![0.0, 1.0]
        );
        assert_eq!(unit_sum(&[vec![1.0], vec![1.0, 0.0]]), None);
        assert_eq!(unit_sum(&[]), None);
    }

    #[test]
    fn the_model_embeds_a_query_as_the_sum_of_its_phrasings() {
        let Some(dir) = crate::model::test_model_dir("query phrasings") else {
            return;
        };
        let m = Arc::new(SentenceModel::load(&dir).unwrap());
        let phrasings = crate::query::asked("Make the white around the photo see-through");
        let v = Encoder::Local(m.clone()).embed_query(&phrasings).unwrap();
        let apart: Vec<Vec<f32>> = phrasings.iter().map(|t| m.embed(t, QUERY_TOKENS)).collect();
        let want = unit_sum(&apart).unwrap();
        assert_eq!(v.len(), m.dim());
        assert!(v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6));
        // nearer each phrasing than the phrasings are to each other
        let between = cosine(&apart[0], &apart[1]);
        assert!(apart.iter().all(|a| cosine(a, &v) > between), "{between}");
    }

    #[test]
    fn endpoint_urls_from_base_urls() {
        assert_eq!(
            endpoint_url("http://127.0.0.1:11434/v1/"),
            "http://127.0.0.1:11434/v1/embeddings"
        );
        assert_eq!(
            endpoint_url("https://api.openai.com"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint_url("http://h/x/embeddings"),
            "http://h/x/embeddings"
        );
    }

    #[test]
    fn shares_are_even_and_batches_bounded_and_every_text_is_embedded_once() {
        let ids: Vec<Vec<u32>> = [128, 3, 100, 40, 128, 7, 64, 90, 2]
            .iter()
            .map(|n| vec![1; *n])
            .collect();
        let shares = token_shares(&ids, 2);
        let tokens = |s: &[usize]| s.iter().map(|i| ids[*i].len()).sum::<usize>();
        assert_eq!(shares.len(), 2);
        assert!(tokens(&shares[0]).abs_diff(tokens(&shares[1])) <= 128);
        let mut seen: Vec<usize> = shares.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..ids.len()).collect::<Vec<_>>());
        for share in &shares {
            let batches = token_batches(share, &ids, 200);
            assert_eq!(batches.concat(), *share);
            assert!(batches.iter().all(|b| tokens(b) <= 200));
        }
        // a text longer than a batch is a batch of its own; no text, no thread
        assert_eq!(token_batches(&[0, 1], &ids, 50), vec![&[0][..], &[1][..]]);
        assert!(token_shares(&[], 4).is_empty());
    }

    #[test]
    fn fusion_rewards_being_in_both_rankings() {
        let fused = fuse(&[(vec![1, 2, 3], 1.0), (vec![3, 4], 1.0)]);
        assert_eq!(fused[0].0, 3);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [3, 1, 2, 4]);
        // a heavier ranking's first place passes a lighter one's
        let fused = fuse(&[(vec![1, 2], 1.0), (vec![3, 4], 1.5)]);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [3, 4, 1, 2]);
        // a weight scales an item's score, rank for rank
        let one = fuse(&[(vec![7], 1.0)])[0].1;
        let half = fuse(&[(vec![7], 0.5)])[0].1;
        assert!((one - 2.0 * half).abs() < 1e-12);
    }

    #[test]
    fn the_best_closeness_is_the_closest_vectors_cosine() {
        let query = [1.0, 0.0];
        // cosines 0, 1 and about 0.71: the best
        let best = best_closeness(&[0.0, 2.0, 3.0, 0.0, 1.0, 1.0], &query).unwrap();
        assert!((best - 1.0).abs() < 1e-6);
        let one = best_closeness(&[1.0, 1.0], &query).unwrap();
        assert!((one - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        // nothing to compare, or not whole vectors: none
        assert_eq!(best_closeness(&[], &query), None);
        assert_eq!(best_closeness(&[1.0, 0.0, 1.0], &query), None);
        assert_eq!(best_closeness(&[1.0, 0.0], &[]), None);
    }

    #[test]
    fn blobs_round_trip_and_cosine_is_bounded() {
        let v = vec![0.5f32, -1.0, 3.25];
        assert_eq!(from_blob(&to_blob(&v)).as_deref(), Some(&v[..]));
        assert_eq!(from_blob(&[1, 2, 3]), None);
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&v, &[1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
    }

    #[test]
    fn a_page_is_as_close_as_its_closest_part_and_its_parts_on_average() {
        let query = [1.0, 0.0];
        // one part: its cosine
        assert!((page_closeness(&[3.0, 0.0], &query) - 1.0).abs() < 1e-6);
        assert!((page_closeness(&[0.0, 1.0], &query)).abs() < 1e-6);
        // two parts, cosines 0 and 1: (1 + 0.5) / 2
        assert!((page_closeness(&[0.0, 1.0, 2.0, 0.0], &query) - 0.75).abs() < 1e-6);
        // a page close in both parts is closer than one close in one part only
        let both = page_closeness(&[1.0, 0.2, 1.0, 0.1], &query);
        let one = page_closeness(&[1.0, 0.0, 0.0, 1.0], &query);
        assert!(both > one, "{both} {one}");
        // not made of the query's vectors
        assert_eq!(page_closeness(&[1.0, 0.0, 1.0], &query), 0.0);
        assert_eq!(page_closeness(&[], &query), 0.0);
    }

    proptest::proptest! {
        #[test]
        fn fusion_keeps_every_item_once(a in proptest::collection::vec(0u8..20, 0..20), b in proptest::collection::vec(0u8..20, 0..20)) {
            let mut a = a; a.dedup();
            let fused = fuse(&[(a.clone(), 1.0), (b.clone(), 1.5)]);
            for x in a.iter().chain(&b) {
                proptest::prop_assert_eq!(fused.iter().filter(|f| f.0 == *x).count(), 1);
            }
        }
    }
}
