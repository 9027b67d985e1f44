//! The store: one SQLite file with an FTS5 index.
//!
//! `docs` holds one row per document, keyed by (kind, location) so that indexing a page again
//! replaces it; `docs_fts` (rowid = `docs.id`) indexes its title, headings, index keywords and
//! body with the Porter stemmer, and the applications it serves in `apps`. The file is in WAL
//! mode with a busy timeout, and every write is one `BEGIN IMMEDIATE` transaction, so several
//! processes (parallel batch jobs) can save at once without losing or failing a write.
//!
//! With an embeddings endpoint or a model in the process ([`Store::set_embedder`]), each saved
//! document also gets a vector (table `embeddings`, keyed by the document's id, with the
//! model's name; table `keyword_embeddings` those of its index entries, one by one; table
//! `vectors` keeps each vector under a hash of model and text, so a page indexed again
//! unchanged is not embedded again), and a search fuses the lexical ranking with two rankings
//! of the same application's documents by their vectors (weighted reciprocal-rank fusion,
//! [`crate::embed::fuse`]; `store_dense.rs`). A failed request leaves the
//! documents lexical-only; the first failure is kept for the caller to show
//! ([`Store::embed_warning`]) and the endpoint is not asked again by this store.
//! [`Store::fresh_copy`] and [`Store::replace`] index into a new file and swap it in whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, CachedStatement, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use ufo_core::knowledge::{Knowledge, KnowledgeError, KnowledgeKind, KnowledgeQuery, Snippet};

use crate::embed::{self, Encoder};
use crate::extract::{clip, Page};
use crate::pages::PageKind;
use crate::query;

/// How long a writer waits for another process's write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// Most characters of a hit's text.
pub const HIT_TEXT_CHARS: usize = 1_500;
/// Most hits one search returns.
pub const MAX_TOP: usize = 100;

/// Most lexical and most vector candidates fused per kind when embeddings are on.
pub const FUSE_CANDIDATES: usize = 50;

/// The store's file name under the data directory.
pub const FILE_NAME: &str = "knowledge.sqlite";

/// A store that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused.
    #[error("knowledge store {path}: {source}; {}", hint(.source))]
    Sqlite {
        /// The store's file.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// No place for the store.
    #[error("no place for the knowledge store: neither XDG_DATA_HOME nor HOME is set; set XDG_DATA_HOME")]
    NoDataDir,
    /// The directory could not be made.
    #[error("cannot create {path}: {source}; check the permissions of the data directory")]
    Dir {
        /// The directory.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// What to do about a failed SQLite call.
fn hint(e: &rusqlite::Error) -> &'static str {
    if busy(e) {
        "another process kept the store busy past the wait; try again when it is done"
    } else {
        "check that the file is a ufo knowledge store and that you may write it (`ufo knowledge stats` shows it), or remove it and index again"
    }
}

/// Longest pause between two tries of the switch to WAL ([`switch_to_wal`]).
const WAL_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Put the store in WAL mode. Switching a new store's file needs it alone, and SQLite answers
/// "busy" at once, without the busy timeout, to a connection whose wait could deadlock with
/// another's (one holds a write lock of the file's first, rollback-journal mode): eight
/// processes opening a new store at once failed so (43 of 1,600 such openings in a test). So
/// the switch is tried again, pauses growing to [`WAL_RETRY_PAUSE`], for up to
/// [`BUSY_TIMEOUT`] like any write.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e) if busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(WAL_RETRY_PAUSE);
            }
            done => return done,
        }
    }
}

/// Whether `e` says another connection holds the file.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// The BM25 weight of each column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// The title.
    pub title: f64,
    /// The headings.
    pub headings: f64,
    /// The index keywords.
    pub keywords: f64,
    /// The body text.
    pub body: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            title: 10.0,
            headings: 3.0,
            keywords: 6.0,
            body: 1.0,
        }
    }
}

/// One document to save.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Its kind.
    pub kind: KnowledgeKind,
    /// A file path or URL (docs), an id (experience, demonstration).
    pub location: String,
    /// Where it came from: `libreoffice`, `gimp`, `mallard`, `man`, `user`.
    pub source: String,
    /// The tags of the applications it serves (see [`crate::apps`]).
    pub apps: Vec<String>,
    /// Its text.
    pub page: Page,
}

/// A search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchRequest {
    /// The words searched for.
    pub text: String,
    /// The application (any name [`crate::apps::app_tag`] knows).
    pub app: Option<String>,
    /// The kinds wanted; empty: every kind.
    pub kinds: Vec<KnowledgeKind>,
    /// Most hits per kind.
    pub top: usize,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Its kind.
    pub kind: KnowledgeKind,
    /// The store's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its location.
    pub location: String,
    /// Where it came from.
    pub source: String,
    /// The start of its text.
    pub text: String,
    /// Relevance (the negated BM25 rank): higher is better.
    pub score: f64,
}

impl From<Hit> for Snippet {
    fn from(h: Hit) -> Self {
        Snippet {
            kind: h.kind,
            id: h.id,
            title: h.title,
            location: h.location,
            text: h.text,
            score: h.score,
        }
    }
}

/// One stored document as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The store's id.
    pub id: String,
    /// Its kind.
    pub kind: KnowledgeKind,
    /// Where it came from.
    pub source: String,
    /// The applications it serves.
    pub apps: String,
    /// Its title.
    pub title: String,
    /// Its location.
    pub location: String,
}

/// Counts of the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// The store's file.
    pub path: String,
    /// Its size in bytes (with the write-ahead log).
    pub bytes: u64,
    /// Documents in all.
    pub documents: u64,
    /// Documents per kind and source.
    pub by_source: Vec<(String, String, u64)>,
}

/// Which documents `forget` removes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Forget {
    /// Only this kind.
    pub kind: Option<KnowledgeKind>,
    /// Only this source.
    pub source: Option<String>,
    /// Only documents serving this application.
    pub app: Option<String>,
    /// Only these locations (a location ending in `/` removes everything under it) or ids.
    pub locations: Vec<String>,
}

/// A kind, an application and a model: the vectors one search compares with.
type VectorSet = (String, Option<String>, String);
/// Documents' ids, page kinds and vectors.
type Vectors = Arc<Vec<PageVectors>>;

/// One document's vectors as stored.
#[derive(Debug, Clone, PartialEq)]
struct DocVectors {
    /// One per part of the page ([`crate::pages::embed_texts`]), laid end to end.
    parts: Vec<f32>,
    /// One per index entry ([`crate::pages::keyword_texts`]), laid end to end (empty: none).
    keywords: Vec<f32>,
}

/// The vectors a search compares with, of one document.
#[derive(Debug)]
struct PageVectors {
    id: i64,
    kind: PageKind,
    /// As [`DocVectors`]'.
    parts: Vec<f32>,
    keywords: Vec<f32>,
}

/// Which rankings a search with an embedder uses (the benchmark compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    /// Lexical and dense rankings fused (the default).
    #[default]
    Fused,
    /// BM25 alone, as without an embedder.
    Lexical,
    /// The model's rankings alone: the pages' closeness and their closest index entry.
    Dense,
}

/// The knowledge store.
#[derive(Debug)]
pub struct Store {
    ranking: Ranking,
    conn: Connection,
    path: PathBuf,
    weights: Weights,
    /// The embeddings endpoint or model, when configured.
    embedder: Option<Encoder>,
    /// Set after the endpoint failed once: it is not asked again.
    embed_down: AtomicBool,
    /// The first failure, for the caller to show once.
    embed_warning: Mutex<Option<String>>,
    /// The words of the `apps` and `kind` columns (read on the first search; cleared by a
    /// write): only query words like them need the column filter.
    tag_words: Mutex<Option<Vec<String>>>,
    /// The vectors a search compares with, by kind, application and model, read once until
    /// the next write (reading 3,000 of them from SQLite took longer than the query's own
    /// embedding).
    vector_sets: Mutex<HashMap<VectorSet, Vectors>>,
}

#[path = "store_swap.rs"]
mod swap;

#[path = "store_dense.rs"]
mod dense;

/// The store's default file: `$XDG_DATA_HOME/ufo/knowledge.sqlite`, else
/// `~/.local/share/ufo/knowledge.sqlite`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or(StoreError::NoDataDir)?;
            PathBuf::from(home).join(".local").join("share")
        }
    };
    Ok(base.join("ufo").join(FILE_NAME))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docs(
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    location TEXT NOT NULL,
    source TEXT NOT NULL,
    apps TEXT NOT NULL,
    title TEXT NOT NULL,
    UNIQUE(kind, location)
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    title, headings, keywords, body, apps, kind,
    tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS embeddings(
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS keyword_embeddings(
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors(
    key BLOB PRIMARY KEY,
    vec BLOB NOT NULL
) WITHOUT ROWID;
";

impl Store {
    /// Open (creating it and its directory if need be) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let err = |source| StoreError::Sqlite {
            path: path.display().to_string(),
            source,
        };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        switch_to_wal(&conn).map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute_batch(SCHEMA).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Store {
            ranking: Ranking::default(),
            conn,
            path: path.to_path_buf(),
            weights: Weights::default(),
            embedder: None,
            embed_down: AtomicBool::new(false),
            embed_warning: Mutex::new(None),
            tag_words: Mutex::new(None),
            vector_sets: Mutex::new(HashMap::new()),
        })
    }

    /// Open the store at its default place ([`default_path`]).
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open(&default_path()?)
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rank with other column weights (the benchmark tries some).
    pub fn set_weights(&mut self, weights: Weights) {
        self.weights = weights;
    }

    /// Embed documents at save time and queries at search time with `embedder` (`None`:
    /// lexical ranking only).
    pub fn set_embedder(&mut self, embedder: Option<Encoder>) {
        self.embedder = embedder;
        self.embed_down.store(false, Ordering::Relaxed);
    }

    /// Rank by `ranking` when an embedder is set.
    pub fn set_ranking(&mut self, ranking: Ranking) {
        self.ranking = ranking;
    }

    /// Whether documents and queries get vectors (an embedder is set).
    pub fn embeds(&self) -> bool {
        self.embedder.is_some()
    }

    /// The first embeddings failure of this store, if any (once: taking it clears it).
    pub fn embed_warning(&self) -> Option<String> {
        self.embed_warning.lock().ok().and_then(|mut w| w.take())
    }

    /// The embedder, unless it failed before.
    fn live_embedder(&self) -> Option<&Encoder> {
        self.embedder
            .as_ref()
            .filter(|_| !self.embed_down.load(Ordering::Relaxed))
    }

    /// Note a failed request: the endpoint is not asked again; the first failure is kept.
    fn embed_failed(&self, what: String) {
        self.embed_down.store(true, Ordering::Relaxed);
        if let Ok(mut w) = self.embed_warning.lock() {
            w.get_or_insert(what);
        }
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Save `docs` in one transaction; a document already stored under the same kind and
    /// location is replaced. Returns how many were saved.
    pub fn save(&mut self, docs: &[Document]) -> Result<usize, StoreError> {
        // asked before the write transaction, so other writers do not wait on the network
        let vectors = self.document_vectors(docs);
        let model = self.embedder.as_ref().map(Encoder::model);
        let path = self.path.display().to_string();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        {
            let mut writes = DocWrites::prepare(&tx).map_err(err)?;
            for (d, vector) in docs.iter().zip(&vectors) {
                writes
                    .write(&tx, d, vector.as_ref(), model.as_deref())
                    .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        self.forget_tag_words();
        Ok(docs.len())
    }

    /// The best hits for `req`, at most `req.top` per kind, best first (by score over all
    /// kinds). With an application, its pages only; if it has none, every page.
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>, StoreError> {
        let top = req.top.clamp(1, MAX_TOP);
        let app = req.app.as_deref().and_then(crate::apps::app_tag);
        let kinds: Vec<KnowledgeKind> = if req.kinds.is_empty() {
            KnowledgeKind::ALL.to_vec()
        } else {
            req.kinds.clone()
        };
        let tag_words = self.tag_words()?;
        let tag = |w: &str| is_tag_word(w, &tag_words);
        let query_vector = match self.ranking {
            Ranking::Lexical => None,
            Ranking::Fused | Ranking::Dense => self.query_vector(&req.text)?,
        };
        // more candidates than are shown: fused with the vectors' ones, and in the place of
        // navigation pages (ranked last)
        let lexical_top = top.max(FUSE_CANDIDATES);
        let mut hits = Vec::new();
        for kind in kinds {
            let mut found = Vec::new();
            let mut scoped = app.clone();
            let Some(only) = self.kind_filter(kind)? else {
                continue; // no document of this kind
            };
            if let Some(expr) = query::fast_match_expression(&req.text, app.as_deref(), &tag) {
                found = self.run(&expr, kind, only, lexical_top)?;
            }
            if found.is_empty() && app.is_some() {
                if let Some(expr) = query::fast_match_expression(&req.text, None, &tag) {
                    found = self.run(&expr, kind, only, lexical_top)?;
                }
                if query_vector.is_some()
                    && (!found.is_empty() || !self.has_app(kind, app.as_deref())?)
                {
                    scoped = None;
                }
            }
            if let Some((model, v)) = &query_vector {
                if self.ranking == Ranking::Dense {
                    found.clear();
                }
                found = self.fuse(found, kind, scoped.as_deref(), model, v, top)?;
            }
            content_first(&mut found);
            found.truncate(top);
            hits.extend(found);
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        content_first(&mut hits);
        Ok(hits)
    }

    /// Whether documents of `kind` are stored (`None`: none) and whether documents of other
    /// kinds are too (`Some(true)`: the kind must be matched; `Some(false)`: every document is
    /// of this kind, and matching it would only cost time).
    fn kind_filter(&self, kind: KnowledgeKind) -> Result<Option<bool>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM docs WHERE kind = ?1),
                        EXISTS(SELECT 1 FROM docs WHERE kind < ?1),
                        EXISTS(SELECT 1 FROM docs WHERE kind > ?1)",
            )
            .map_err(|e| self.err(e))?;
        let (this, before, after): (bool, bool, bool) = stmt
            .query_row(params![kind.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(|e| self.err(e))?;
        Ok(this.then_some(before || after))
    }

    /// The words of the `apps` and `kind` columns, read once until the next write.
    fn tag_words(&self) -> Result<Vec<String>, StoreError> {
        if let Some(words) = self.tag_words.lock().ok().and_then(|w| w.clone()) {
            return Ok(words);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT apps FROM docs UNION SELECT DISTINCT kind FROM docs")
            .map_err(|e| self.err(e))?;
        let columns = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let mut words: Vec<String> = columns
            .iter()
            .flat_map(|c| query::words_in_order(c))
            .collect();
        words.sort();
        words.dedup();
        if let Ok(mut w) = self.tag_words.lock() {
            *w = Some(words.clone());
        }
        Ok(words)
    }

    fn forget_tag_words(&self) {
        if let Ok(mut w) = self.tag_words.lock() {
            *w = None;
        }
        if let Ok(mut v) = self.vector_sets.lock() {
            v.clear();
        }
    }

    /// One FTS5 query for one kind: the kind is matched inside the index and the ranking is
    /// FTS5's own `rank` (so `ORDER BY rank LIMIT` stays inside FTS5), the rest joined after.
    /// `filter_kind`: other kinds are stored, so the kind is matched too.
    fn run(
        &self,
        expr: &str,
        kind: KnowledgeKind,
        filter_kind: bool,
        top: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        let w = self.weights;
        let rank = format!(
            "bm25({}, {}, {}, {}, 0.0, 0.0)",
            w.title, w.headings, w.keywords, w.body
        );
        let expr = match filter_kind {
            true => format!("kind : \"{}\" AND {expr}", kind.as_str()),
            false => expr.to_string(),
        };
        let sql = format!(
            "SELECT d.id, d.title, d.location, d.source, s.text, s.rank FROM
               (SELECT rowid, substr(body, 1, {HIT_TEXT_CHARS}) AS text, rank FROM docs_fts
                WHERE docs_fts MATCH ?1 AND rank MATCH ?2 ORDER BY rank LIMIT ?3) s
             JOIN docs d ON d.id = s.rowid ORDER BY s.rank"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![expr, rank, top as i64], |r| {
                Ok(Hit {
                    kind,
                    id: format!("{}:{}", kind.as_str(), r.get::<_, i64>(0)?),
                    title: r.get(1)?,
                    location: r.get(2)?,
                    source: r.get(3)?,
                    text: clip(&r.get::<_, String>(4)?, HIT_TEXT_CHARS),
                    score: -r.get::<_, f64>(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Stored documents, by kind and application, at most `limit`, in location order.
    pub fn list(
        &self,
        kind: Option<KnowledgeKind>,
        app: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let app = app.and_then(crate::apps::app_tag);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, source, apps, title, location FROM docs
                 WHERE (?1 IS NULL OR kind = ?1)
                   AND (?2 IS NULL OR (' ' || apps || ' ') LIKE ('% ' || ?2 || ' %'))
                 ORDER BY location LIMIT ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![kind.map(|k| k.as_str()), app, limit as i64], |r| {
                let kind: String = r.get(1)?;
                let kind = KnowledgeKind::parse(&kind).unwrap_or(KnowledgeKind::Docs);
                Ok(Entry {
                    id: format!("{}:{}", kind.as_str(), r.get::<_, i64>(0)?),
                    kind,
                    source: r.get(2)?,
                    apps: r.get(3)?,
                    title: r.get(4)?,
                    location: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Remove the documents `what` selects; returns how many. Selecting nothing (no kind,
    /// source, application or location) removes nothing.
    pub fn forget(&mut self, what: &Forget) -> Result<usize, StoreError> {
        if what.kind.is_none()
            && what.source.is_none()
            && what.app.is_none()
            && what.locations.is_empty()
        {
            return Ok(0);
        }
        let app = what.app.as_deref().and_then(crate::apps::app_tag);
        let ids = {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT id, kind, location FROM docs
                     WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR source = ?2)
                       AND (?3 IS NULL OR (' ' || apps || ' ') LIKE ('% ' || ?3 || ' %'))",
                )
                .map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map(
                    params![what.kind.map(|k| k.as_str()), what.source, app],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                        ))
                    },
                )
                .map_err(|e| self.err(e))?;
            let all = rows
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?;
            all.into_iter()
                .filter(|(id, kind, loc)| {
                    what.locations.is_empty()
                        || what.locations.iter().any(|l| {
                            l == loc
                                || *l == format!("{kind}:{id}")
                                || (l.ends_with('/') && loc.starts_with(l.as_str()))
                        })
                })
                .map(|(id, _, _)| id)
                .collect::<Vec<_>>()
        };
        let path = self.path.display().to_string();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for id in &ids {
            tx.execute("DELETE FROM docs_fts WHERE rowid = ?1", params![id])
                .map_err(err)?;
            tx.execute("DELETE FROM docs WHERE id = ?1", params![id])
                .map_err(err)?;
            tx.execute("DELETE FROM embeddings WHERE id = ?1", params![id])
                .map_err(err)?;
            tx.execute("DELETE FROM keyword_embeddings WHERE id = ?1", params![id])
                .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        self.forget_tag_words();
        Ok(ids.len())
    }

    /// Counts of the store.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let documents: i64 = self
            .conn
            .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT kind, source, count(*) FROM docs GROUP BY kind, source ORDER BY kind, source")
            .map_err(|e| self.err(e))?;
        let by_source = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        Ok(Stats {
            path: self.path.display().to_string(),
            bytes: size(&self.path) + size(Path::new(&wal)),
            documents: documents as u64,
            by_source,
        })
    }
}

/// The statements that write documents, prepared once per [`Store::save`].
struct DocWrites<'t> {
    find: CachedStatement<'t>,
    insert: CachedStatement<'t>,
    update: CachedStatement<'t>,
    unindex: CachedStatement<'t>,
    index: CachedStatement<'t>,
    unembed: CachedStatement<'t>,
    embed: CachedStatement<'t>,
    unembed_entries: CachedStatement<'t>,
    embed_entries: CachedStatement<'t>,
}

impl<'t> DocWrites<'t> {
    fn prepare(tx: &'t Connection) -> rusqlite::Result<DocWrites<'t>> {
        Ok(DocWrites {
            find: tx.prepare_cached("SELECT id FROM docs WHERE kind = ?1 AND location = ?2")?,
            insert: tx.prepare_cached(
                "INSERT INTO docs(kind, location, source, apps, title) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            update: tx.prepare_cached(
                "UPDATE docs SET source = ?2, apps = ?3, title = ?4 WHERE id = ?1",
            )?,
            unindex: tx.prepare_cached("DELETE FROM docs_fts WHERE rowid = ?1")?,
            index: tx.prepare_cached(
                "INSERT INTO docs_fts(rowid, title, headings, keywords, body, apps, kind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            unembed: tx.prepare_cached("DELETE FROM embeddings WHERE id = ?1")?,
            embed: tx.prepare_cached("INSERT INTO embeddings(id, model, vec) VALUES (?1, ?2, ?3)")?,
            unembed_entries: tx.prepare_cached("DELETE FROM keyword_embeddings WHERE id = ?1")?,
            embed_entries: tx.prepare_cached(
                "INSERT INTO keyword_embeddings(id, model, vec) VALUES (?1, ?2, ?3)",
            )?,
        })
    }

    /// Write one document: its row (the one stored under its kind and location replaced),
    /// its text indexed, and its vector when there is one (with the model that made it).
    fn write(
        &mut self,
        tx: &Connection,
        d: &Document,
        vector: Option<&DocVectors>,
        model: Option<&str>,
    ) -> rusqlite::Result<()> {
        let apps = d.apps.join(" ");
        let id = self.row(tx, d, &apps)?;
        self.index.execute(params![
            id,
            d.page.title,
            d.page.headings,
            d.page.keywords,
            d.page.body,
            apps,
            d.kind.as_str()
        ])?;
        if let (Some(v), Some(model)) = (vector, model) {
            self.embed
                .execute(params![id, model, embed::to_blob(&v.parts)])?;
            if !v.keywords.is_empty() {
                self.embed_entries
                    .execute(params![id, model, embed::to_blob(&v.keywords)])?;
            }
        }
        Ok(())
    }

    /// The document's row id: its stored row updated (its old text and vector removed), or a
    /// new row.
    fn row(&mut self, tx: &Connection, d: &Document, apps: &str) -> rusqlite::Result<i64> {
        let found: Option<i64> = self
            .find
            .query_row(params![d.kind.as_str(), d.location], |r| r.get(0))
            .optional()?;
        match found {
            Some(id) => {
                self.update
                    .execute(params![id, d.source, apps, d.page.title])?;
                self.unindex.execute(params![id])?;
                self.unembed.execute(params![id])?;
                self.unembed_entries.execute(params![id])?;
                Ok(id)
            }
            None => {
                self.insert.execute(params![
                    d.kind.as_str(),
                    d.location,
                    d.source,
                    apps,
                    d.page.title
                ])?;
                Ok(tx.last_insert_rowid())
            }
        }
    }
}

/// Reorder `hits` (best first) so that pages which only point elsewhere come after every page
/// that gives steps ([`crate::pages`]), each group in its order.
fn content_first(hits: &mut [Hit]) {
    hits.sort_by_key(|h| crate::pages::kind_of(&h.source, &h.location) == PageKind::Navigation);
}

/// The key of a vector in table `vectors`: a hash of the model and the text embedded.
fn vector_key(model: &str, text: &str) -> Vec<u8> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(model.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    h.finalize().to_vec()
}

/// Whether the query word `w` may match one of `tags` (the words of the `apps` and `kind`
/// columns) once stemmed: the same start, five letters or the whole shorter word.
fn is_tag_word(w: &str, tags: &[String]) -> bool {
    tags.iter().any(|t| {
        let common = w.chars().zip(t.chars()).take_while(|(a, b)| a == b).count();
        common >= 5.min(w.chars().count()).min(t.chars().count())
    })
}

/// The store behind the core's [`Knowledge`] port (one connection, used by one query at a
/// time).
#[derive(Debug)]
pub struct StoreKnowledge {
    store: Mutex<Store>,
}

impl StoreKnowledge {
    /// The port over `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store: Mutex::new(store),
        }
    }
}

#[async_trait]
impl Knowledge for StoreKnowledge {
    async fn query(&self, q: &KnowledgeQuery) -> Result<Vec<Snippet>, KnowledgeError> {
        let store = self
            .store
            .lock()
            .map_err(|_| KnowledgeError::Store("an earlier query panicked".into()))?;
        let req = SearchRequest {
            text: q.text().to_string(),
            app: q.application.clone(),
            kinds: q.kinds.clone(),
            top: q.top_k,
        };
        let hits = store
            .search(&req)
            .map_err(|e| KnowledgeError::Store(e.to_string()))?;
        Ok(hits.into_iter().map(Snippet::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn doc(
        location: &str,
        apps: &[&str],
        title: &str,
        keywords: &str,
        body: &str,
    ) -> Document {
        Document {
            kind: KnowledgeKind::Docs,
            location: location.into(),
            source: "test".into(),
            apps: apps.iter().map(|s| s.to_string()).collect(),
            page: Page {
                title: title.into(),
                headings: title.into(),
                keywords: keywords.into(),
                body: body.into(),
            },
        }
    }

    pub(super) fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("ufo").join(FILE_NAME)).unwrap();
        (dir, s)
    }

    #[test]
    fn search_ranks_title_and_keywords_above_body_and_scopes_by_app() {
        let (_d, mut s) = store();
        s.save(&[
            doc(
                "/h/calc/freeze.html",
                &["calc"],
                "Freezing Rows or Columns",
                "rows, freezing",
                "Select the row below.",
            ),
            doc(
                "/h/calc/other.html",
                &["calc"],
                "Sorting",
                "sort",
                "You can freeze a row and sort rows and rows.",
            ),
            doc(
                "/h/writer/freeze.html",
                &["writer"],
                "Freezing table rows",
                "rows, freezing",
                "Writer text.",
            ),
        ])
        .unwrap();
        let hits = s
            .search(&SearchRequest {
                text: "How do I freeze the first rows?".into(),
                app: Some("libreoffice-calc".into()),
                top: 5,
                ..Default::default()
            })
            .unwrap();
        let locs: Vec<&str> = hits.iter().map(|h| h.location.as_str()).collect();
        assert_eq!(locs, ["/h/calc/freeze.html", "/h/calc/other.html"]);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(hits[0].kind, KnowledgeKind::Docs);
        // An application with no pages: every page.
        let hits = s
            .search(&SearchRequest {
                text: "freeze rows".into(),
                app: Some("kcalc-unknown".into()),
                top: 5,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(hits.len(), 3);
    }

    #[test]
    fn saving_again_replaces_and_forget_removes() {
        let (_d, mut s) = store();
        s.save(&[doc("/a.html", &["calc"], "Old title", "", "old words")])
            .unwrap();
        s.save(&[doc("/a.html", &["calc"], "New title", "", "new words")])
            .unwrap();
        assert_eq!(s.stats().unwrap().documents, 1);
        let q = |s: &Store, t: &str| {
            s.search(&SearchRequest {
                text: t.into(),
                top: 5,
                ..Default::default()
            })
            .unwrap()
            .len()
        };
        assert_eq!(q(&s, "old"), 0);
        assert_eq!(q(&s, "new"), 1);
        assert_eq!(
            s.forget(&Forget::default()).unwrap(),
            0,
            "selecting nothing removes nothing"
        );
        assert_eq!(
            s.forget(&Forget {
                locations: vec!["/a.html".into()],
                ..Default::default()
            })
            .unwrap(),
            1
        );
        assert_eq!(q(&s, "new"), 0);
        assert_eq!(s.stats().unwrap().documents, 0);
    }

    /// A new store held by another process's write in its first (rollback-journal) mode:
    /// SQLite refuses the switch to WAL at once, without the busy timeout; opening tries
    /// again and gets the store once that write is done.
    #[test]
    fn opening_a_new_store_another_process_writes_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.sqlite");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .unwrap();
        let probe = Connection::open(&path).unwrap();
        probe.busy_timeout(Duration::from_secs(5)).unwrap();
        let started = std::time::Instant::now();
        let refused = probe
            .pragma_update(None, "journal_mode", "WAL")
            .unwrap_err();
        assert!(busy(&refused), "{refused}");
        assert!(started.elapsed() < Duration::from_secs(1), "SQLite waited");
        drop(probe);
        let done = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            holder.execute_batch("COMMIT;").unwrap();
        });
        let store = Store::open(&path).expect("the store opens once the write is done");
        done.join().unwrap();
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_busy_store_says_to_try_again() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let e = StoreError::Sqlite {
            path: "/k.sqlite".into(),
            source: busy,
        };
        assert!(e.to_string().contains("try again"), "{e}");
    }

    #[test]
    fn list_filters_by_app_and_kind() {
        let (_d, mut s) = store();
        s.save(&[
            doc("/c.html", &["calc", "libreoffice"], "C", "", "x"),
            doc("/g.html", &["gimp"], "G", "", "x"),
        ])
        .unwrap();
        assert_eq!(s.list(None, None, 10).unwrap().len(), 2);
        let calc = s
            .list(Some(KnowledgeKind::Docs), Some("scalc"), 10)
            .unwrap();
        assert_eq!(calc.len(), 1);
        assert_eq!(calc[0].location, "/c.html");
        assert!(s
            .list(Some(KnowledgeKind::Experience), None, 10)
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn the_port_answers_with_snippets() {
        let (_d, mut s) = store();
        s.save(&[doc("/c.html", &["calc"], "Freezing", "freeze", "steps")])
            .unwrap();
        let k = StoreKnowledge::new(s);
        let snippets = k
            .query(&KnowledgeQuery {
                request: "freeze".into(),
                application: Some("libreoffice-calc".into()),
                top_k: 3,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(snippets.len(), 1);
        assert_eq!(snippets[0].location, "/c.html");
        assert!(snippets[0].id.starts_with("docs:"));
    }

    /// A fake OpenAI-compatible `/v1/embeddings` on 127.0.0.1: each text's vector counts its
    /// words, the words of one concept on one shared dimension (so texts that share no word
    /// can be close), every other word on a hashed one. `hang`: it reads the request and
    /// never answers. Returns its base URL and the number of requests it got.
    pub(super) mod fake {
        use std::hash::{Hash, Hasher};
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;

        const DIM: usize = 256;
        const CONCEPTS: &[&[&str]] = &[&["highlight", "conditional", "formatting"]];

        pub fn vector(text: &str) -> Vec<f32> {
            let mut v = vec![0f32; DIM];
            for w in text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                let w = w.to_lowercase();
                let dim = match CONCEPTS.iter().position(|c| c.contains(&w.as_str())) {
                    Some(c) => c,
                    None => {
                        let mut h = std::collections::hash_map::DefaultHasher::new();
                        w.hash(&mut h);
                        CONCEPTS.len() + (h.finish() as usize) % (DIM - CONCEPTS.len())
                    }
                };
                v[dim] += 1.0;
            }
            v
        }

        pub fn server(hang: bool) -> (String, Arc<AtomicUsize>) {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let count = Arc::new(AtomicUsize::new(0));
            let c = count.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    c.fetch_add(1, Ordering::SeqCst);
                    std::thread::spawn(move || answer(stream, hang));
                }
            });
            (format!("http://{addr}/v1"), count)
        }

        fn answer(mut stream: TcpStream, hang: bool) {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head_end, len) = loop {
                let Ok(n) = stream.read(&mut chunk) else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (i + 4, len);
                }
            };
            while buf.len() < head_end + len {
                let Ok(n) = stream.read(&mut chunk) else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            if hang {
                std::thread::sleep(std::time::Duration::from_secs(60));
                return;
            }
            let req: serde_json::Value =
                serde_json::from_slice(&buf[head_end..head_end + len]).unwrap();
            let data: Vec<serde_json::Value> = req["input"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    serde_json::json!({"index": i, "embedding": vector(t.as_str().unwrap())})
                })
                .collect();
            let body = serde_json::json!({ "data": data }).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }

    pub(super) fn embedder(url: &str, timeout_ms: u64) -> Encoder {
        let t = Duration::from_millis(timeout_ms);
        Encoder::Http(embed::Embedder::new(
            url,
            "fake-embed",
            embed::EmbedLimits {
                connect: t,
                batch: t,
                query: t,
            },
        ))
    }

    pub(super) fn calc_pages() -> Vec<Document> {
        vec![
            doc(
                "/h/cond.html",
                &["calc"],
                "Conditional Formatting",
                "conditional formatting",
                "Conditional formatting of cells.",
            ),
            doc(
                "/h/numbers.html",
                &["calc"],
                "Number Formats",
                "formats",
                "Choose how numbers are shown: decimals, currency, negative numbers.",
            ),
            doc(
                "/h/color.html",
                &["calc"],
                "Font Color",
                "font",
                "Change the color of the text to red or blue.",
            ),
            doc(
                "/h/sort.html",
                &["calc"],
                "Sorting",
                "sort",
                "Sort rows by a column.",
            ),
            doc(
                "/h/freeze.html",
                &["calc"],
                "Freezing",
                "rows",
                "Freeze the first row.",
            ),
        ]
    }

    pub(super) fn top3(s: &Store, text: &str) -> Vec<String> {
        s.search(&SearchRequest {
            text: text.into(),
            app: Some("libreoffice-calc".into()),
            top: 3,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|h| h.location)
        .collect()
    }

    #[test]
    fn embeddings_find_a_page_whose_words_the_query_misses() {
        let query = "highlight negative numbers in red";
        // without embeddings: the words miss the page
        let (_d, mut plain) = store();
        plain.save(&calc_pages()).unwrap();
        assert!(!top3(&plain, query).contains(&"/h/cond.html".to_string()));
        // with them: its vector is close to the query's
        let (url, requests) = fake::server(false);
        let (_d2, mut s) = store();
        s.set_embedder(Some(embedder(&url, 5_000)));
        s.save(&calc_pages()).unwrap();
        assert_eq!(s.embed_warning(), None);
        let found = top3(&s, query);
        assert!(found.contains(&"/h/cond.html".to_string()), "{found:?}");
        assert!(found.contains(&"/h/numbers.html".to_string()), "{found:?}");
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 2);
        // the same store without the embedder ranks as the lexical store does
        s.set_embedder(None);
        assert_eq!(top3(&s, query), top3(&plain, query));
    }

    #[test]
    fn a_hanging_endpoint_costs_its_timeout_once_and_the_search_answers_lexically() {
        let (url, _) = fake::server(false);
        let (_d, mut s) = store();
        s.set_embedder(Some(embedder(&url, 5_000)));
        s.save(&calc_pages()).unwrap();
        let (hanging, requests) = fake::server(true);
        s.set_embedder(Some(embedder(&hanging, 300)));
        let t = std::time::Instant::now();
        let found = top3(&s, "highlight negative numbers in red");
        let waited = t.elapsed();
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        assert_eq!(found[0], "/h/numbers.html");
        let warning = s.embed_warning().expect("a warning");
        assert!(warning.contains("searching lexically"), "{warning}");
        assert!(warning.contains(&hanging), "{warning}");
        // not asked again, and said once
        let t = std::time::Instant::now();
        top3(&s, "negative numbers");
        assert!(t.elapsed() < Duration::from_millis(250));
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(s.embed_warning(), None);
    }

    #[test]
    fn an_unreachable_endpoint_leaves_the_documents_lexical_and_says_so_once() {
        // a port that was free a moment ago: nothing listens
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (_d, mut s) = store();
        s.set_embedder(Some(embedder(&format!("http://127.0.0.1:{port}"), 1_000)));
        s.save(&calc_pages()).unwrap();
        s.save(&[doc("/h/more.html", &["calc"], "More", "", "more")])
            .unwrap();
        let warning = s.embed_warning().expect("a warning");
        assert!(warning.contains("lexical search only"), "{warning}");
        assert_eq!(s.embed_warning(), None);
        assert_eq!(s.stats().unwrap().documents, 6);
        assert_eq!(top3(&s, "negative numbers")[0], "/h/numbers.html");
    }
}
