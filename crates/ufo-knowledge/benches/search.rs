//! Knowledge benchmark: index the installed LibreOffice and GIMP help (timed), then rank the
//! evaluation set's requests (`eval/requests.jsonl`: a request, its application, the help
//! pages that give its steps) with the store's search and with a plain BM25 over the pages'
//! visible text (same FTS5 engine, body only, no titles, keywords or application scoping),
//! and report hit@3 and MRR@10 of both and the store's query time.
//!
//! `cargo bench -p ufo-knowledge --bench search`. Needs `libreoffice-help-en-us` and
//! `gimp-help-en` (scripts/test-deps.sh installs them).
//!
//! `UFO_BENCH_RERANK=SPEC` (with `UFO_EMBED_MODEL_DIR`): the fused top 10 of each request is
//! also ordered by the model SPEC (`openai:NAME` with `UFO_LLM_BASE_URL`, ...) as a session
//! does with `[knowledge] rerank = "model"` (one call a request, bounded), and its hit@1/3,
//! MRR and call times are reported; `UFO_BENCH_RERANK=llama` starts the tests' llama.cpp
//! server with SmolLM2-135M (scripts/test-deps.sh install_llama) and asks it.
//! `UFO_BENCH_RERANK_EVERY=K`: only every K-th request (a call takes 6-36 s with SmolLM2 on a
//! loaded 2-core machine); `UFO_BENCH_RERANK_TIMEOUT_S`: the call's bound (default a session's,
//! 20 s), so that a slow server's order is measured rather than its timeouts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use serde::Deserialize;
use std::sync::Arc;
use ufo_core::knowledge::KnowledgeKind;
use ufo_knowledge::discover::{self, HelpRoots, Source};
use ufo_knowledge::embed::Encoder;
use ufo_knowledge::query;
use ufo_knowledge::store::{Hit, Ranking, SearchRequest, Store};

#[allow(clippy::unwrap_used)]
#[path = "../../ufo/tests/common/llama.rs"]
mod llama;

#[derive(Debug, Deserialize)]
struct Case {
    app: String,
    request: String,
    /// The pages named with the request, found by reading the help.
    relevant: Vec<String>,
    /// Pages judged right afterwards, among the first three of each ranking measured (pooled
    /// judgments: docs/knowledge.md); right as the ones above are.
    #[serde(default)]
    pooled: Vec<String>,
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
    hits1: usize,
    hits3: usize,
    rr: f64,
    n: usize,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            if r == 1 {
                self.hits1 += 1;
            }
            if r <= 3 {
                self.hits3 += 1;
            }
            if r <= 10 {
                self.rr += 1.0 / r as f64;
            }
        }
    }
    fn hit1(&self) -> f64 {
        self.hits1 as f64 / self.n.max(1) as f64
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
    let cases: Vec<Case> = parse(include_str!("../eval/requests.jsonl"));
    let dir = tempfile::tempdir().expect("temp dir");
    // UFO_BENCH_KEEP=DIR: keep the indexes there for a look.
    let dir_path = std::env::var_os("UFO_BENCH_KEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().to_path_buf());
    // UFO_BENCH_REUSE=1 (with UFO_BENCH_KEEP): keep the store, so its vectors are reused
    if std::env::var_os("UFO_BENCH_REUSE").is_none() {
        let _ = std::fs::remove_file(dir_path.join("knowledge.sqlite"));
    }
    let _ = std::fs::remove_file(dir_path.join("plain.sqlite"));

    // Index (timed): discovery, extraction and saving.
    // UFO_EMBED_MODEL_DIR: the pages are embedded too, and dense and fused rankings measured
    let model = std::env::var_os("UFO_EMBED_MODEL_DIR").map(|d| {
        let t = Instant::now();
        let m = ufo_knowledge::model::SentenceModel::load(Path::new(&d)).expect("the model loads");
        println!("model loaded in {:.2} s", t.elapsed().as_secs_f64());
        // one thread: a request (about 15 tokens) and a page cut to DOC_TOKENS
        let page = "Freezing Rows or Columns as Headers. ".repeat(40);
        for (what, text, max) in [
            ("query", "make the white around the photo see-through", 64),
            ("page", page.as_str(), ufo_knowledge::embed::DOC_TOKENS),
        ] {
            let mut times: Vec<Duration> = (0..20)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(m.embed(text, max));
                    t.elapsed()
                })
                .collect();
            times.sort();
            println!(
                "embed one {what} ({} tokens): p50 {:.1} ms",
                m.tokens(text, max).len(),
                percentile(&times, 0.5).as_secs_f64() * 1e3
            );
        }
        let m = Arc::new(m);
        // a query as a search embeds it: its operation in a person's phrasings, one batch
        let text = "Make the white around the photo see-through";
        let encoder = Encoder::Local(m.clone());
        let mut times: Vec<Duration> = (0..20)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(encoder.embed_query(&query::asked(text)).expect("a vector"));
                t.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "embed a query as searched ({:?}): p50 {:.1} ms",
            query::asked(text),
            percentile(&times, 0.5).as_secs_f64() * 1e3
        );
        m
    });
    let t = Instant::now();
    let files = discover::installed_help(&roots, &[Source::LibreOffice, Source::Gimp]);
    let mut store = Store::open(&dir_path.join("knowledge.sqlite")).expect("store");
    store.set_embedder(model.clone().map(Encoder::Local));
    let report = discover::index_files(&mut store, &files, &mut |_, _| {}).expect("index");
    let index_time = t.elapsed();
    if model.is_some() {
        // again, as `ufo knowledge index` does: into a copy, every vector reused
        let t = Instant::now();
        let mut copy = store.fresh_copy().expect("copy");
        discover::index_files(&mut copy, &files, &mut |_, _| {}).expect("index again");
        store = copy.replace(store).expect("swap");
        println!(
            "index again (unchanged pages, into a copy, swapped): {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }

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
                        let relevant = relevant_of(c, &lo_lang, &gimp_lang);
                        s.add(first_relevant(&found(&store, c, 10), &relevant));
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

    // the held-out part is measured only with UFO_BENCH_HELDOUT=1 (never while tuning)
    let heldout: Vec<Case> = parse(include_str!("../eval/heldout.jsonl"));
    let mut sets = vec![("tuning", &cases)];
    if std::env::var_os("UFO_BENCH_HELDOUT").is_some() {
        sets.push(("held-out", &heldout));
    }
    for (set, cases) in sets {
        let cases: &[Case] = cases;
        let rankings: &[Ranking] = match model {
            Some(_) => &[Ranking::Lexical, Ranking::Dense, Ranking::Fused],
            None => &[Ranking::Lexical],
        };
        let mut base = Score::default();
        let mut results = Vec::new();
        for c in cases {
            let relevant = relevant_of(c, &lo_lang, &gimp_lang);
            base.add(first_relevant(&plain_search(&c.request), &relevant));
        }
        for ranking in rankings {
            store.set_ranking(*ranking);
            results.push((*ranking, evaluate(&store, cases, &lo_lang, &gimp_lang)));
        }
        // UFO_BENCH_MISSES=1: where each ranking alone put a right page (in its top 50)
        let mut deep: Vec<(Ranking, Vec<Option<usize>>)> = Vec::new();
        if std::env::var_os("UFO_BENCH_MISSES").is_some() {
            for ranking in rankings {
                store.set_ranking(*ranking);
                deep.push((*ranking, deep_ranks(&store, cases, &lo_lang, &gimp_lang)));
            }
        }
        store.set_ranking(Ranking::Fused);
        println!("knowledge benchmark, {set} set ({} requests)", cases.len());
        println!(
            "index: {} pages ({} unreadable) in {:.1} s{}",
            report.saved,
            report.unreadable,
            index_time.as_secs_f64(),
            if model.is_some() {
                " with embeddings"
            } else {
                ""
            }
        );
        println!("| ranking | hit@1 | hit@3 | MRR@10 | query p50 | p95 |");
        println!("| --- | --- | --- | --- | --- | --- |");
        for (ranking, r) in &results {
            let mut times = r.times.clone();
            times.sort();
            println!(
                "| {ranking:?} | {:.2} | {:.2} | {:.2} | {:.1} ms | {:.1} ms |",
                r.all.hit1(),
                r.all.hit3(),
                r.all.mrr(),
                percentile(&times, 0.5).as_secs_f64() * 1e3,
                percentile(&times, 0.95).as_secs_f64() * 1e3
            );
            let mut apps: Vec<_> = r.per_app.iter().collect();
            apps.sort_by_key(|(a, _)| a.to_string());
            for (app, o) in apps {
                println!(
                    "|   {app} ({}) | {:.2} | {:.2} | {:.2} | | |",
                    o.n,
                    o.hit1(),
                    o.hit3(),
                    o.mrr()
                );
            }
        }
        println!(
            "| plain BM25 over visible text | {:.2} | {:.2} | {:.2} | | |",
            base.hit1(),
            base.hit3(),
            base.mrr()
        );
        if let (Some(spec), Some(_)) = (std::env::var_os("UFO_BENCH_RERANK"), &model) {
            store.set_ranking(Ranking::Fused);
            rerank_row(&spec.to_string_lossy(), &store, cases, &lo_lang, &gimp_lang);
        }
        // UFO_BENCH_MISSES=lexical (or dense): that ranking's misses instead of the fused one's
        let of = std::env::var("UFO_BENCH_MISSES").unwrap_or_default();
        let misses = &results
            .iter()
            .find(|(r, _)| format!("{r:?}").eq_ignore_ascii_case(&of))
            .or(results.last())
            .expect("a ranking")
            .1
            .misses;
        if !misses.is_empty() {
            println!("not in the top 3:");
            for (i, m) in misses {
                let ranks: Vec<String> = deep
                    .iter()
                    .map(|(r, ranks)| format!("{r:?} {:?}", ranks[*i]))
                    .collect();
                match ranks.is_empty() {
                    true => println!("{m}"),
                    false => println!("{m}\n    top 50: {}", ranks.join(", ")),
                }
            }
        }
    }
}

/// The fused top 10 of each case ordered by the model `spec` (or the tests' llama.cpp server
/// with `llama`), one call each as a session makes it: the row of its scores and call times.
fn rerank_row(spec: &str, store: &Store, cases: &[Case], lo_lang: &Path, gimp_lang: &Path) {
    use ufo_core::knowledge::Snippet;
    use ufo_core::lookup::{rerank_docs, Reranker};
    use ufo_core::rerank::{query_key, RerankMemo, RERANK_TIMEOUT};
    let mut server = None;
    // the server's log, removed with the server
    let logs = tempfile::tempdir().expect("temp dir");
    let (spec, opts) = match spec {
        "llama" => {
            let inst = llama::installed().expect("install_llama (scripts/test-deps.sh) first");
            let s = llama::LlamaServer::start(&inst, logs.path());
            let base = s.base_url();
            server = Some(s);
            let opts = ufo_llm::LlmOptions {
                base_url: Some(base),
                ..Default::default()
            };
            (format!("openai:{}", llama::MODEL_NAME), opts)
        }
        other => (other.to_string(), ufo_llm::LlmOptions::default()),
    };
    let model = ufo_llm::from_spec(&spec, &opts).expect("the rerank model");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let every: usize = std::env::var("UFO_BENCH_RERANK_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let timeout = std::env::var("UFO_BENCH_RERANK_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(RERANK_TIMEOUT, Duration::from_secs);
    let (mut score, mut fused) = (Score::default(), Score::default());
    let mut times = Vec::new();
    let (mut failed, mut moved, mut tokens) = (0, 0, 0u64);
    let cases: Vec<&Case> = cases.iter().step_by(every).collect();
    for c in &cases {
        let relevant = relevant_of(c, lo_lang, gimp_lang);
        let req = SearchRequest {
            text: c.request.clone(),
            app: Some(c.app.clone()),
            kinds: vec![KnowledgeKind::Docs],
            top: 10,
        };
        let hits: Vec<Hit> = store.search(&req).expect("search");
        let snippets: Vec<Snippet> = hits.iter().cloned().map(Snippet::from).collect();
        let memo = RerankMemo::new();
        let r = Reranker {
            model: model.as_ref(),
            memo: &memo,
        };
        let key = query_key(&c.request, Some(&c.app));
        let t = Instant::now();
        let ordered = runtime.block_on(async {
            tokio::time::timeout(timeout, rerank_docs(r, &key, &c.request, snippets.clone())).await
        });
        times.push(t.elapsed());
        let ordered = match ordered {
            Ok((ordered, done)) => {
                if let Some(call) = &done.call {
                    tokens += call.llm.prompt_tokens + call.llm.completion_tokens;
                    failed += usize::from(call.error.is_some());
                }
                moved +=
                    usize::from(ordered.first().map(|s| &s.id) != snippets.first().map(|s| &s.id));
                ordered
            }
            Err(_) => {
                failed += 1;
                snippets
            }
        };
        let found: Vec<String> = ordered.iter().map(|s| s.location.clone()).collect();
        score.add(first_relevant(&found, &relevant));
        let before: Vec<String> = hits.iter().map(|h| h.location.clone()).collect();
        fused.add(first_relevant(&before, &relevant));
    }
    println!(
        "| Fused, the same {} requests | {:.2} | {:.2} | {:.2} | | |",
        cases.len(),
        fused.hit1(),
        fused.hit3(),
        fused.mrr()
    );
    times.sort();
    println!(
        "| Fused + rerank by {spec} | {:.2} | {:.2} | {:.2} | {:.0} ms a call | {:.0} ms |",
        score.hit1(),
        score.hit3(),
        score.mrr(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3
    );
    println!(
        "rerank: {} calls, {failed} failed or unusable (fused order kept), first page changed for {moved}, {tokens} tokens",
        cases.len()
    );
    drop(server);
    drop(logs);
}

fn relevant_of(c: &Case, lo_lang: &Path, gimp_lang: &Path) -> Vec<String> {
    // UFO_BENCH_LABELLED=1: the pages named with the requests only, without pooled judgments
    let pooled: &[String] = match std::env::var_os("UFO_BENCH_LABELLED") {
        Some(_) => &[],
        None => &c.pooled,
    };
    let relevant: Vec<String> = c
        .relevant
        .iter()
        .chain(pooled)
        .map(|r| resolve(r, lo_lang, gimp_lang).display().to_string())
        .collect();
    for r in &relevant {
        assert!(Path::new(r).is_file(), "eval set: {r} is not installed");
    }
    relevant
}

/// One ranking's scores over the cases.
struct Evaluation {
    all: Score,
    per_app: HashMap<String, Score>,
    times: Vec<Duration>,
    /// The cases a right page was not in the top 3 of (index, what to print).
    misses: Vec<(usize, String)>,
}

fn evaluate(store: &Store, cases: &[Case], lo_lang: &Path, gimp_lang: &Path) -> Evaluation {
    let mut e = Evaluation {
        all: Score::default(),
        per_app: HashMap::new(),
        times: Vec::new(),
        misses: Vec::new(),
    };
    for (i, c) in cases.iter().enumerate() {
        let relevant = relevant_of(c, lo_lang, gimp_lang);
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
            e.times.push(t.elapsed());
        }
        let hits = found;
        let found: Vec<String> = hits.iter().map(|h| h.location.clone()).collect();
        let rank = first_relevant(&found, &relevant);
        e.all.add(rank);
        e.per_app.entry(c.app.clone()).or_default().add(rank);
        if rank.is_none_or(|r| r > 3) {
            let mut m = format!("  {:?} ({}): rank {:?}", c.request, c.app, rank);
            // UFO_BENCH_MISSES=1: the whole top 10 of a miss, with titles and page kinds
            if std::env::var_os("UFO_BENCH_MISSES").is_some() {
                let want: Vec<&str> = c.relevant.iter().map(|r| r.as_str()).collect();
                m.push_str(&format!("; wanted {want:?}"));
                for (i, h) in hits.iter().enumerate() {
                    let mark = if relevant.contains(&h.location) {
                        "*"
                    } else {
                        " "
                    };
                    m.push_str(&format!(
                        "\n    {mark}{:>2} {:?} [{}] {}",
                        i + 1,
                        h.title,
                        page_kind(&h.location),
                        h.location.rsplit('/').next().unwrap_or(&h.location)
                    ));
                }
            } else {
                m.push_str(&format!(
                    "; top: {:?}",
                    found
                        .iter()
                        .take(3)
                        .map(|l| l.rsplit('/').next().unwrap_or(l))
                        .collect::<Vec<_>>()
                ));
            }
            e.misses.push((i, m));
        }
    }
    e
}

/// The rank of the first right page of each case among the store's top 50.
fn deep_ranks(
    store: &Store,
    cases: &[Case],
    lo_lang: &Path,
    gimp_lang: &Path,
) -> Vec<Option<usize>> {
    cases
        .iter()
        .map(|c| first_relevant(&found(store, c, 50), &relevant_of(c, lo_lang, gimp_lang)))
        .collect()
}

/// The locations the store finds for a case, best first, at most `top`.
fn found(store: &Store, c: &Case, top: usize) -> Vec<String> {
    let req = SearchRequest {
        text: c.request.clone(),
        app: Some(c.app.clone()),
        kinds: vec![KnowledgeKind::Docs],
        top,
    };
    store
        .search(&req)
        .expect("search")
        .into_iter()
        .map(|h| h.location)
        .collect()
}

/// A page's kind as its place in the help tells it (for reading the misses).
fn page_kind(location: &str) -> &'static str {
    let name = location.rsplit('/').next().unwrap_or(location);
    if location.contains("/func_") || name.starts_with("func_") || location.contains("/04060") {
        "function"
    } else if location.contains("/guide/") {
        "guide"
    } else if location.contains("/01/") || location.contains("/02/") {
        "menu/dialog"
    } else if name.starts_with("gimp-tool-") {
        "gimp tool"
    } else if name.starts_with("gimp-filter-") {
        "gimp filter"
    } else if name.contains("-dialog")
        || name.starts_with("gimp-image-")
        || name.starts_with("gimp-layer-")
    {
        "gimp menu/dialog"
    } else if name.starts_with("gimp-") {
        "gimp other"
    } else {
        "other"
    }
}

fn parse(lines: &str) -> Vec<Case> {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("eval: a bad line"))
        .collect()
}
