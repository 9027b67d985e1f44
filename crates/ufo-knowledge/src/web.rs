//! Web search (off unless configured): a SearXNG-compatible JSON endpoint
//! (`GET URL?q=...&format=json` answering `{"results": [{"url", "title", "content"}]}`), the top
//! results' pages fetched and reduced to text like the help pages. Every request is bounded:
//! a connect timeout, a timeout for the whole request, a cap on the body read, and a cap on
//! the results fetched; a page that cannot be fetched gives its search snippet instead.

use std::time::Duration;

use serde::Deserialize;
use ufo_core::knowledge::clip;
use ufo_core::{KnowledgeKind, Snippet};

/// Most bytes read of the search answer or of one page.
pub const MAX_BODY_BYTES: usize = 2 << 20;
/// Most characters of a result's text.
pub const TEXT_CHARS: usize = 1_500;
/// Most results fetched per search.
pub const MAX_RESULTS: usize = 5;

/// How long web requests may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebLimits {
    /// Connecting to a server.
    pub connect: Duration,
    /// One whole request (headers and body).
    pub request: Duration,
}

impl Default for WebLimits {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(2),
            request: Duration::from_secs(4),
        }
    }
}

/// A web search that failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The HTTP client could not be built.
    #[error("web search client: {0}")]
    Client(String),
    /// The search endpoint did not answer usefully.
    #[error("web search at {url}: {what}; check [knowledge] web_search_url (a SearXNG-compatible JSON endpoint)")]
    Search {
        /// The endpoint.
        url: String,
        /// What went wrong.
        what: String,
    },
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

/// A SearXNG-compatible search endpoint.
#[derive(Debug, Clone)]
pub struct WebSearch {
    endpoint: String,
    client: reqwest::Client,
}

impl WebSearch {
    /// The search at `endpoint` (e.g. `http://127.0.0.1:8888/search`) within `limits`.
    pub fn new(endpoint: &str, limits: WebLimits) -> Result<Self, WebError> {
        let client = reqwest::Client::builder()
            .connect_timeout(limits.connect)
            .timeout(limits.request)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| WebError::Client(e.to_string()))?;
        Ok(Self {
            endpoint: endpoint.to_string(),
            client,
        })
    }

    /// The top `top` results for `text` (at most [`MAX_RESULTS`]), each page fetched and
    /// reduced to text (its search snippet when it cannot be), best first.
    pub async fn search(&self, text: &str, top: usize) -> Result<Vec<Snippet>, WebError> {
        let err = |what: String| WebError::Search {
            url: self.endpoint.clone(),
            what,
        };
        let response = self
            .client
            .get(&self.endpoint)
            .query(&[("q", text), ("format", "json")])
            .send()
            .await
            .map_err(|e| err(e.to_string()))?;
        if !response.status().is_success() {
            return Err(err(format!("status {}", response.status())));
        }
        let body = read_capped(response)
            .await
            .map_err(|e| err(e.to_string()))?;
        let answer: Answer =
            serde_json::from_slice(&body).map_err(|e| err(format!("not JSON results: {e}")))?;
        let top = top.min(MAX_RESULTS);
        let mut out = Vec::new();
        for (i, r) in answer
            .results
            .into_iter()
            .filter(|r| r.url.starts_with("http://") || r.url.starts_with("https://"))
            .take(top)
            .enumerate()
        {
            let page = self.page_text(&r.url).await;
            let (title, text) = match page {
                Some((t, body)) if !body.is_empty() => {
                    (if r.title.is_empty() { t } else { r.title }, body)
                }
                _ => (r.title, r.content),
            };
            out.push(Snippet {
                kind: KnowledgeKind::Web,
                id: format!("web:{}", clip(&r.url, 500)),
                title: clip(&title, 300),
                location: clip(&r.url, 2_000),
                text: clip(&text, TEXT_CHARS),
                score: 1.0 / (i as f64 + 1.0),
            });
        }
        Ok(out)
    }

    /// The page at `url` as (title, text), or `None` when it cannot be fetched.
    async fn page_text(&self, url: &str) -> Option<(String, String)> {
        let response = self.client.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = read_capped(response).await.ok()?;
        let text = String::from_utf8_lossy(&body);
        let page = crate::extract::html(&text);
        Some((page.title, clip(&page.body, TEXT_CHARS)))
    }
}

/// The body of `response`, at most [`MAX_BODY_BYTES`] (the rest is not read).
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_BODY_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY_BYTES {
            break;
        }
    }
    Ok(body)
}
