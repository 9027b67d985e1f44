//! Knowledge benchmark: index the installed LibreOffice and GIMP help (timed), then rank the
//! evaluation set's requests (`eval/requests.jsonl`: a request, its application, the help
//! pages that give its steps) with the store's search and with a plain BM25 over the pages'
//! visible text (same FTS5 engine, body only, no titles, keywords or application scoping),
//! and report hit@3 and MRR@10 of both and the store's query time.
//!
//! `cargo bench -p ufo-knowledge --bench search`. Needs `libreoffice-help-en-us` and
//! `gimp-help-en` (scripts/test-deps.sh installs them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use serde::Deserialize;
use ufo_core::knowledge::KnowledgeKind;
use ufo_knowledge::discover::{self, HelpRoots, Source};
use ufo_knowledge::query;
use ufo_knowledge::store::{SearchRequest, Store};

#[derive(Debug, Deserialize)]
struct Case {
    app: String,
    request: String,
    relevant: Vec<String>,
}

/// Where a relevant page (`libreoffice:text/...`, `gimp:page.html`) is on this machine.
fn resolve(spec: &str, lo_lang: &Path, gimp_lang: &Path) -> PathBuf {
    match spec.split_once(':') {
        Some(("libreoffice", rest)) => lo_lang.join(rest),
        Some(("gimp", rest)) => gimp_lang.join(rest),
        _ => PathBuf::from(spec),
    }
}

fn first_dir(root: &Path, langs: &[&str]) -> Option<PathBuf> {
    langs.iter().map(|l| root.join(l)).find(|d| d.is_dir())
}

/// Rank (1-based) of the first relevant location among `found`.
fn first_relevant(found: &[String], relevant: &[String]) -> Option<usize> {
    found
        .iter()
        .position(|l| relevant.contains(l))
        .map(|i| i + 1)
}

#[derive(Default)]
struct Score {
    hits3: usize,
    rr: f64,
    n: usize,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            if r <= 3 {
                self.hits3 += 1;
            }
            if r <= 10 {
                self.rr += 1.0 / r as f64;
            }
        }
    }
    fn hit3(&self) -> f64 {
        self.hits3 as f64 / self.n.max(1) as f64
    }
    fn mrr(&self) -> f64 {
        self.rr / self.n.max(1) as f64
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let roots = HelpRoots::system();
    let (Some(lo_lang), Some(gimp_lang)) = (
        first_dir(&roots.libreoffice, &["en-US"]),
        first_dir(&roots.gimp, &["en"]),
    ) else {
        eprintln!("the LibreOffice and GIMP help are not installed: install libreoffice-help-en-us and gimp-help-en (scripts/test-deps.sh)");
        std::process::exit(1);
    };
    let cases: Vec<Case> = include_str!("../eval/requests.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("eval/requests.jsonl: a bad line"))
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    // UFO_BENCH_KEEP=DIR: keep the indexes there for a look.
    let dir_path = std::env::var_os("UFO_BENCH_KEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().to_path_buf());
    let _ = std::fs::remove_file(dir_path.join("knowledge.sqlite"));
    let _ = std::fs::remove_file(dir_path.join("plain.sqlite"));

    // Index (timed): discovery, extraction and saving.
    let t = Instant::now();
    let files = discover::installed_help(&roots, &[Source::LibreOffice, Source::Gimp]);
    let mut store = Store::open(&dir_path.join("knowledge.sqlite")).expect("store");
    let report = discover::index_files(&mut store, &files, &mut |_, _| {}).expect("index");
    let index_time = t.elapsed();

    // The baseline: the same pages' visible text only, plain BM25.
    let plain = Connection::open(dir_path.join("plain.sqlite")).expect("plain store");
    plain
        .execute_batch(
            "CREATE VIRTUAL TABLE plain USING fts5(location UNINDEXED, body, tokenize = 'porter unicode61');",
        )
        .expect("plain schema");
    {
        let tx = plain.unchecked_transaction().expect("tx");
        for f in &files {
            let Ok(text) = discover::read_bounded(&f.path) else {
                continue;
            };
            let page =
                ufo_knowledge::extract::extract(ufo_knowledge::extract::Format::Html, &text, "");
            tx.execute(
                "INSERT INTO plain(location, body) VALUES (?1, ?2)",
                params![f.path.display().to_string(), page.body],
            )
            .expect("plain insert");
        }
        tx.commit().expect("commit");
    }
    let plain_search = |text: &str| -> Vec<String> {
        let Some(expr) = query::plain_expression(text) else {
            return vec![];
        };
        let mut stmt = plain
            .prepare_cached(
                "SELECT location FROM plain WHERE plain MATCH ?1 ORDER BY bm25(plain) LIMIT 10",
            )
            .expect("plain query");
        stmt.query_map(params![expr], |r| r.get::<_, String>(0))
            .expect("plain rows")
            .collect::<Result<Vec<_>, _>>()
            .expect("plain rows")
    };

    // UFO_BENCH_GRID=1: the evaluation under other column weights (to choose the defaults).
    if std::env::var_os("UFO_BENCH_GRID").is_some() {
        for t in [2.0, 5.0, 10.0] {
            for k in [2.0, 5.0, 10.0, 20.0] {
                for h in [1.0, 3.0] {
                    store.set_weights(ufo_knowledge::store::Weights {
                        title: t,
                        headings: h,
                        keywords: k,
                        body: 1.0,
                    });
                    let mut s = Score::default();
                    for c in &cases {
                        let relevant: Vec<String> = c
                            .relevant
                            .iter()
                            .map(|r| resolve(r, &lo_lang, &gimp_lang).display().to_string())
                            .collect();
                        let req = SearchRequest {
                            text: c.request.clone(),
                            app: Some(c.app.clone()),
                            kinds: vec![KnowledgeKind::Docs],
                            top: 10,
                        };
                        let found: Vec<String> = store
                            .search(&req)
                            .expect("search")
                            .into_iter()
                            .map(|h| h.location)
                            .collect();
                        s.add(first_relevant(&found, &relevant));
                    }
                    println!(
                        "weights title {t} headings {h} keywords {k}: hit@3 {:.2} MRR@10 {:.2}",
                        s.hit3(),
                        s.mrr()
                    );
                }
            }
        }
        store.set_weights(ufo_knowledge::store::Weights::default());
    }

    let mut ours = Score::default();
    let mut base = Score::default();
    let mut per_app: HashMap<String, (Score, Score)> = HashMap::new();
    let mut times = Vec::new();
    let mut misses = Vec::new();
    for c in &cases {
        let relevant: Vec<String> = c
            .relevant
            .iter()
            .map(|r| resolve(r, &lo_lang, &gimp_lang).display().to_string())
            .collect();
        for r in &relevant {
            assert!(Path::new(r).is_file(), "eval set: {r} is not installed");
        }
        let req = SearchRequest {
            text: c.request.clone(),
            app: Some(c.app.clone()),
            kinds: vec![KnowledgeKind::Docs],
            top: 10,
        };
        let mut found = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            found = store.search(&req).expect("search");
            times.push(t.elapsed());
        }
        let found: Vec<String> = found.into_iter().map(|h| h.location).collect();
        let ours_rank = first_relevant(&found, &relevant);
        let base_rank = first_relevant(&plain_search(&c.request), &relevant);
        ours.add(ours_rank);
        base.add(base_rank);
        let e = per_app.entry(c.app.clone()).or_default();
        e.0.add(ours_rank);
        e.1.add(base_rank);
        if ours_rank.is_none_or(|r| r > 3) {
            misses.push(format!(
                "  {:?} ({}): rank {:?}; top: {:?}",
                c.request,
                c.app,
                ours_rank,
                found
                    .iter()
                    .take(3)
                    .map(|l| l.rsplit('/').next().unwrap_or(l))
                    .collect::<Vec<_>>()
            ));
        }
    }
    times.sort();

    println!("knowledge benchmark ({} requests)", cases.len());
    println!(
        "index: {} pages ({} unreadable) in {:.1} s",
        report.saved,
        report.unreadable,
        index_time.as_secs_f64()
    );
    println!("| ranking | hit@3 | MRR@10 |");
    println!("| --- | --- | --- |");
    println!(
        "| ufo knowledge search | {:.2} | {:.2} |",
        ours.hit3(),
        ours.mrr()
    );
    println!(
        "| plain BM25 over visible text | {:.2} | {:.2} |",
        base.hit3(),
        base.mrr()
    );
    let mut apps: Vec<_> = per_app.iter().collect();
    apps.sort_by_key(|(a, _)| a.to_string());
    for (app, (o, b)) in apps {
        println!(
            "|   {app} ({}) | {:.2} vs {:.2} | {:.2} vs {:.2} |",
            o.n,
            o.hit3(),
            b.hit3(),
            o.mrr(),
            b.mrr()
        );
    }
    println!(
        "query: p50 {:.2} ms, p95 {:.2} ms",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3
    );
    if !misses.is_empty() {
        println!("not in the top 3:");
        for m in misses {
            println!("{m}");
        }
    }
}
