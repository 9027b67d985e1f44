//! The store's vectors: what a document is embedded as when it is saved, and the rankings by
//! closeness to a query's vector that a search fuses with the lexical one.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{params, OptionalExtension};
use ufo_core::knowledge::KnowledgeKind;

use super::{
    vector_key, DocVectors, Document, Hit, PageVectors, Store, StoreError, Vectors,
    FUSE_CANDIDATES, HIT_TEXT_CHARS,
};
use crate::embed;
use crate::extract::clip;
use crate::pages::PageKind;
use crate::query;

impl Store {
    /// The vectors of `docs` (all `None` without an embedder or when the request failed): one
    /// per part of the page ([`crate::pages::embed_texts`]) and one per index entry
    /// ([`crate::pages::keyword_texts`]), each laid end to end. A vector made before for the
    /// same text by the same model (table `vectors`, keyed by a hash of both) is reused:
    /// indexing unchanged pages again embeds nothing.
    pub(super) fn document_vectors(&self, docs: &[Document]) -> Vec<Option<DocVectors>> {
        let Some(e) = self.live_embedder().filter(|_| !docs.is_empty()) else {
            return vec![None; docs.len()];
        };
        let model = e.model();
        // each document's parts, then its index entries
        let groups: Vec<[Vec<String>; 2]> = docs
            .iter()
            .map(|d| {
                [
                    crate::pages::embed_texts(&d.page),
                    crate::pages::keyword_texts(&d.page),
                ]
            })
            .collect();
        let texts: Vec<&String> = groups.iter().flatten().flatten().collect();
        let keys: Vec<Vec<u8>> = texts.iter().map(|t| vector_key(&model, t)).collect();
        let mut vectors: Vec<Option<Vec<f32>>> =
            keys.iter().map(|k| self.cached_vector(k)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|i| vectors[*i].is_none()).collect();
        if !missing.is_empty() {
            let todo: Vec<String> = missing.iter().map(|i| texts[*i].clone()).collect();
            match e.embed_documents(&todo) {
                Ok(made) => {
                    for (i, v) in missing.into_iter().zip(made) {
                        self.cache_vector(&keys[i], &v);
                        vectors[i] = Some(v);
                    }
                }
                Err(err) => {
                    self.embed_failed(format!(
                        "{err}; the documents were saved for lexical search only"
                    ));
                    return vec![None; docs.len()];
                }
            }
        }
        let mut made = vectors.into_iter();
        let mut joined = |n: usize| -> Option<Vec<f32>> {
            let mut out = Vec::new();
            for v in made.by_ref().take(n) {
                out.extend(v?);
            }
            Some(out)
        };
        groups
            .iter()
            .map(|[parts, keywords]| {
                let parts = joined(parts.len());
                let keywords = joined(keywords.len());
                Some(DocVectors {
                    parts: parts?,
                    keywords: keywords?,
                })
            })
            .collect()
    }

    /// The vector kept under `key`, if any (a read error counts as none: it is made again).
    fn cached_vector(&self, key: &[u8]) -> Option<Vec<f32>> {
        self.conn
            .prepare_cached("SELECT vec FROM vectors WHERE key = ?1")
            .and_then(|mut s| {
                s.query_row(params![key], |r| r.get::<_, Vec<u8>>(0))
                    .optional()
            })
            .ok()
            .flatten()
            .and_then(|b| embed::from_blob(&b))
    }

    /// Keep `v` under `key` (a failed write only costs embedding it again later).
    fn cache_vector(&self, key: &[u8], v: &[f32]) {
        let _ = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO vectors(key, vec) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![key, embed::to_blob(v)]));
    }

    /// The query's vector and the model it is of, when documents of that model are stored and
    /// the endpoint answers within its query timeout (a failure: lexical ranking alone).
    pub(super) fn query_vector(
        &self,
        text: &str,
    ) -> Result<Option<(String, Vec<f32>)>, StoreError> {
        let Some(e) = self.live_embedder() else {
            return Ok(None);
        };
        let stored: bool = self
            .conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM embeddings WHERE model = ?1)")
            .and_then(|mut s| s.query_row(params![e.model()], |r| r.get(0)))
            .map_err(|err| self.err(err))?;
        if !stored || text.trim().is_empty() {
            return Ok(None);
        }
        // the operation asked for, not the person's file names, cells and values, asked as
        // a person asks it
        match e.embed_query(&query::asked(text)) {
            Ok(v) => Ok(Some((e.model(), v))),
            Err(err) => {
                self.embed_failed(format!("{err}; searching lexically"));
                Ok(None)
            }
        }
    }

    /// Whether some document of `kind` serves `app`.
    pub(super) fn has_app(
        &self,
        kind: KnowledgeKind,
        app: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM docs WHERE kind = ?1
                   AND (?2 IS NULL OR (' ' || apps || ' ') LIKE ('% ' || ?2 || ' %')))",
            )
            .and_then(|mut s| s.query_row(params![kind.as_str(), app], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// `lexical` (best first) fused with two rankings of the documents of `kind` (and `app`)
    /// by their vectors: the closest pages ([`embed::page_closeness`]) and the pages with the
    /// closest index entry ([`embed::best_closeness`]). Weighted reciprocal-rank fusion of the
    /// three ([`embed::fuse`]),
    /// how-to guides given their small lead ([`crate::pages::with_prior`]), best first,
    /// scored by their fused score, until `top` pages that give steps are found (navigation
    /// pages met before them are kept, for [`content_first`] to put after them).
    pub(super) fn fuse(
        &self,
        lexical: Vec<Hit>,
        kind: KnowledgeKind,
        app: Option<&str>,
        model: &str,
        vector: &[f32],
        top: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        let set = self.vector_set(kind, app, model)?;
        let pages = closest(
            set.iter()
                .map(|p| (p.id, embed::page_closeness(&p.parts, vector))),
        );
        let entries = closest(
            set.iter()
                .filter_map(|p| Some((p.id, embed::best_closeness(&p.keywords, vector)?))),
        );
        let kinds: HashMap<i64, PageKind> = set.iter().map(|p| (p.id, p.kind)).collect();
        let id_of = |h: &Hit| {
            h.id.rsplit(':')
                .next()
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or(-1)
        };
        let mut fused = embed::fuse(&[
            (lexical.iter().map(id_of).collect(), embed::LEXICAL_WEIGHT),
            (pages, embed::PAGE_WEIGHT),
            (entries, embed::ENTRY_WEIGHT),
        ]);
        for (id, score) in fused.iter_mut() {
            let kind = match lexical.iter().find(|h| id_of(h) == *id) {
                Some(h) => crate::pages::kind_of(&h.source, &h.location),
                None => kinds.get(id).copied().unwrap_or(PageKind::Content),
            };
            *score = crate::pages::with_prior(kind, *score);
        }
        fused.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut out = Vec::new();
        let mut content = 0;
        for (id, score) in fused {
            if content == top {
                break; // the rest would be cut: not read
            }
            let hit = match lexical.iter().find(|h| id_of(h) == id) {
                Some(h) => Some(h.clone()),
                None => self.hit(kind, id)?,
            };
            if let Some(mut h) = hit {
                h.score = score;
                if crate::pages::kind_of(&h.source, &h.location) != PageKind::Navigation {
                    content += 1;
                }
                out.push(h);
            }
        }
        Ok(out)
    }

    /// The vectors of the documents of `kind` (and `app`) made by `model`, read once until the
    /// next write.
    fn vector_set(
        &self,
        kind: KnowledgeKind,
        app: Option<&str>,
        model: &str,
    ) -> Result<Vectors, StoreError> {
        let key = (
            kind.as_str().to_string(),
            app.map(str::to_string),
            model.to_string(),
        );
        if let Some(set) = self
            .vector_sets
            .lock()
            .ok()
            .and_then(|v| v.get(&key).cloned())
        {
            return Ok(set);
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT e.id, e.vec, d.source, d.location, k.vec FROM embeddings e
                 JOIN docs d ON d.id = e.id
                 LEFT JOIN keyword_embeddings k ON k.id = e.id AND k.model = e.model
                 WHERE d.kind = ?1 AND e.model = ?2
                   AND (?3 IS NULL OR (' ' || d.apps || ' ') LIKE ('% ' || ?3 || ' %'))",
            )
            .map_err(|e| self.err(e))?;
        let set: Vec<PageVectors> = stmt
            .query_map(params![kind.as_str(), model, app], |r| {
                let page = crate::pages::kind_of(&r.get::<_, String>(2)?, &r.get::<_, String>(3)?);
                let keywords: Option<Vec<u8>> = r.get(4)?;
                Ok((r.get::<_, i64>(0)?, page, r.get::<_, Vec<u8>>(1)?, keywords))
            })
            .map_err(|e| self.err(e))?
            .filter_map(|r| r.ok())
            .filter_map(|(id, kind, parts, keywords)| {
                Some(PageVectors {
                    id,
                    kind,
                    parts: embed::from_blob(&parts)?,
                    // a store indexed before index entries were embedded: none
                    keywords: keywords
                        .and_then(|b| embed::from_blob(&b))
                        .unwrap_or_default(),
                })
            })
            .collect();
        let set = Arc::new(set);
        if let Ok(mut v) = self.vector_sets.lock() {
            v.insert(key, set.clone());
        }
        Ok(set)
    }

    /// The hit of document `id` (found by its vector alone).
    pub(super) fn hit(&self, kind: KnowledgeKind, id: i64) -> Result<Option<Hit>, StoreError> {
        let sql = format!(
            "SELECT d.title, d.location, d.source, substr(f.body, 1, {HIT_TEXT_CHARS})
             FROM docs d JOIN docs_fts f ON f.rowid = d.id WHERE d.id = ?1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_row(params![id], |r| {
                    Ok(Hit {
                        kind,
                        id: format!("{}:{id}", kind.as_str()),
                        title: r.get(0)?,
                        location: r.get(1)?,
                        source: r.get(2)?,
                        text: clip(&r.get::<_, String>(3)?, HIT_TEXT_CHARS),
                        score: 0.0,
                    })
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }
}

/// The ids of the [`FUSE_CANDIDATES`] documents of highest closeness, closest first.
fn closest(scored: impl Iterator<Item = (i64, f32)>) -> Vec<i64> {
    let mut all: Vec<(i64, f32)> = scored.collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.into_iter()
        .take(FUSE_CANDIDATES)
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{calc_pages, doc, embedder, fake, store, top3};
    use super::super::*;

    /// How many index entries' vectors are stored for the page at `location`.
    fn entry_vectors(s: &Store, location: &str) -> usize {
        s.conn
            .query_row(
                "SELECT coalesce(sum(length(k.vec)), 0) FROM keyword_embeddings k
                 JOIN docs d ON d.id = k.id WHERE d.location = ?1",
                params![location],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as usize
            / (4 * fake::vector("x").len())
    }

    #[test]
    fn index_entries_are_embedded_apart_replaced_forgotten_and_rank_their_page() {
        let (url, _) = fake::server(false);
        let (_d, mut s) = store();
        s.set_embedder(Some(embedder(&url, 5_000)));
        // a page whose name is many entries: the one a person's words match is one of them
        let entries: String = (0..20)
            .map(|i| format!("scenario {i}, managing\n"))
            .chain(["highlight negative values\n".to_string()])
            .collect();
        let mut pages = calc_pages();
        pages.push(doc(
            "/h/many.html",
            &["calc"],
            "Scenarios",
            &entries,
            "Steps.",
        ));
        s.save(&pages).unwrap();
        assert_eq!(entry_vectors(&s, "/h/many.html"), 21);
        assert_eq!(entry_vectors(&s, "/h/sort.html"), 1);
        assert_eq!(top3(&s, "highlight negative values")[0], "/h/many.html");
        // by the model alone, the page is found by its entry: not without it
        s.set_ranking(Ranking::Dense);
        let many = "/h/many.html".to_string();
        assert!(top3(&s, "highlight negative values").contains(&many));
        let kept: Vec<(i64, Vec<u8>)> = s
            .conn
            .prepare("SELECT id, vec FROM keyword_embeddings")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        s.conn
            .execute("DELETE FROM keyword_embeddings", [])
            .unwrap();
        s.forget_tag_words();
        assert!(!top3(&s, "highlight negative values").contains(&many));
        for (id, vec) in kept {
            s.conn
                .execute(
                    "INSERT INTO keyword_embeddings(id, model, vec) VALUES (?1, 'fake-embed', ?2)",
                    params![id, vec],
                )
                .unwrap();
        }
        s.forget_tag_words();
        s.set_ranking(Ranking::Fused);
        // saved again with fewer entries: replaced, not added to
        s.save(&[doc(
            "/h/many.html",
            &["calc"],
            "Scenarios",
            "a\nb",
            "Steps.",
        )])
        .unwrap();
        assert_eq!(entry_vectors(&s, "/h/many.html"), 2);
        s.forget(&Forget {
            locations: vec!["/h/many.html".into()],
            ..Default::default()
        })
        .unwrap();
        let left: i64 = s
            .conn
            .query_row("SELECT count(*) FROM keyword_embeddings", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, pages.len() as i64 - 1, "one row per other page");
        // a store without entry vectors (indexed before them) still ranks by its pages
        s.conn
            .execute("DELETE FROM keyword_embeddings", [])
            .unwrap();
        s.forget_tag_words();
        assert!(top3(&s, "highlight negative numbers in red").contains(&"/h/cond.html".to_string()));
    }
}
