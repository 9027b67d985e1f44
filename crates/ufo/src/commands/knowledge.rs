//! `ufo knowledge`: index the help installed on this machine and a person's own docs, search
//! them, list, forget and count what is stored.
//!
//! The store is one SQLite file, per user: `store` of the `[knowledge]` section, else
//! `$XDG_DATA_HOME/ufo/knowledge.sqlite` (`~/.local/share/ufo/` without it). The section is
//! read from `--config`, else `./ufo.toml`, else `$XDG_CONFIG_HOME/ufo/ufo.toml`
//! (`~/.config/ufo/ufo.toml`); `UFO_KNOWLEDGE*` variables override it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use ufo_core::inert;
use ufo_core::knowledge::KnowledgeKind;
use ufo_core::knowledge::Snippet;
use ufo_core::lookup::{rerank_docs, Reranker};
use ufo_core::rerank::{query_key, RerankMemo, RerankMode, RERANK_CANDIDATES};
use ufo_core::LlmClient;
use ufo_knowledge::discover::{self, HelpRoots, Source};
use ufo_knowledge::store::{self, Forget, Hit, SearchRequest, Store};

use crate::cli::knowledge::{KnowledgeCommand, StoreArgs};
use crate::config::knowledge::settings;

/// Exit status of bad usage or configuration.
const EXIT_USAGE: u8 = 2;

/// Run a knowledge command; 0 done, 1 failed, 2 bad usage or configuration.
pub fn command(cmd: KnowledgeCommand) -> ExitCode {
    match run(cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(if e.downcast_ref::<Usage>().is_some() {
                EXIT_USAGE
            } else {
                1
            })
        }
    }
}

/// A usage error (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

fn open(args: &StoreArgs) -> Result<Store> {
    let mut s = settings(args.config.as_deref()).map_err(|e| Usage(format!("{e:#}")))?;
    if let Some(dir) = &args.embed_model {
        s.embeddings_model_dir = Some(dir.clone());
    }
    let encoder = s.encoder().map_err(|e| Usage(format!("{e:#}")))?;
    let mut st = Store::open(&s.store)?;
    st.set_embedder(encoder);
    Ok(st)
}

/// Say on stderr (once) that the embeddings endpoint failed.
fn tell_embed_warning(st: &Store) {
    if let Some(w) = st.embed_warning() {
        eprintln!("warning: {}", inert(&w));
    }
}

fn run(cmd: KnowledgeCommand) -> Result<ExitCode> {
    match cmd {
        KnowledgeCommand::Index { sources, store } => {
            let st = open(&store)?;
            let sources: Vec<Source> = if sources.is_empty() {
                Source::ALL.to_vec()
            } else {
                sources.into_iter().map(Source::from).collect()
            };
            index(st, &sources)
        }
        KnowledgeCommand::Search {
            app,
            kind,
            top,
            json,
            rerank,
            llm,
            query,
            store,
        } => {
            let req = SearchRequest {
                text: query.join(" "),
                app,
                kinds: kind.map(|k| vec![k.into()]).unwrap_or_default(),
                top,
            };
            let rerank = match rerank {
                Some(r) => r.into(),
                None => {
                    settings(store.config.as_deref())
                        .map_err(|e| Usage(format!("{e:#}")))?
                        .rerank
                }
            };
            let model = match (rerank, llm) {
                (RerankMode::Off, _) => None,
                (RerankMode::Model, Some(spec)) => Some(
                    crate::models::plain_model(&spec, "--llm")
                        .map_err(|e| Usage(format!("{e:#}")))?,
                ),
                (RerankMode::Model, None) => bail!(Usage(
                    "--rerank model needs the model to ask: add --llm SPEC (e.g. openai:gpt-4o-mini), or --rerank off".into()
                )),
            };
            search(&req, json, &store, model.as_deref())
        }
        KnowledgeCommand::AddDocs { app, paths, store } => add_docs(&app, &paths, &store),
        KnowledgeCommand::AddDemo {
            request,
            app,
            dir,
            store,
        } => add_demo(&request, app.as_deref(), &dir, &store),
        KnowledgeCommand::List {
            kind,
            app,
            limit,
            json,
            store,
        } => list(kind.map(Into::into), app.as_deref(), limit, json, &store),
        KnowledgeCommand::Forget {
            kind,
            source,
            app,
            locations,
            store,
        } => {
            let what = Forget {
                kind: kind.map(Into::into),
                source,
                app,
                locations,
            };
            forget(what, &store)
        }
        KnowledgeCommand::Stats { json, store } => stats(json, &store),
    }
}

/// `ufo knowledge search`: the hits, best first; with a `model`, the first docs in the order
/// it gives (one bounded call).
fn search(
    req: &SearchRequest,
    json: bool,
    store: &StoreArgs,
    model: Option<&dyn LlmClient>,
) -> Result<ExitCode> {
    let st = open(store)?;
    let hits = match model {
        Some(m) => {
            // more candidates than are shown: the model chooses among the first ten
            let wide = SearchRequest {
                top: req.top.max(RERANK_CANDIDATES),
                ..req.clone()
            };
            let hits = st.search(&wide)?;
            let mut hits = rerank_hits(m, req, hits)?;
            let mut per_kind: Vec<(KnowledgeKind, usize)> = Vec::new();
            hits.retain(|h| {
                let n = match per_kind.iter_mut().find(|(k, _)| *k == h.kind) {
                    Some((_, n)) => n,
                    None => {
                        per_kind.push((h.kind, 0));
                        &mut per_kind.last_mut().expect("just pushed").1
                    }
                };
                *n += 1;
                *n <= req.top
            });
            hits
        }
        None => st.search(req)?,
    };
    tell_embed_warning(&st);
    for (i, h) in hits.iter().enumerate() {
        if json {
            println!("{}", serde_json::to_string(h)?);
        } else {
            println!(
                "{}. [{}] {} (score {:.2})\n   {}",
                i + 1,
                h.kind.as_str(),
                inert(&h.title),
                h.score,
                inert(&h.location)
            );
        }
    }
    if hits.is_empty() && !json {
        eprintln!("nothing found; `ufo knowledge stats` shows what is stored, `ufo knowledge index` indexes the installed help");
    }
    Ok(ExitCode::SUCCESS)
}

/// `hits` with their docs in the order `model` gives for the query (one call, bounded as a
/// session's; a failure keeps the order and says why on stderr); what the call did on stderr.
fn rerank_hits(model: &dyn LlmClient, req: &SearchRequest, hits: Vec<Hit>) -> Result<Vec<Hit>> {
    let snippets: Vec<Snippet> = hits.iter().cloned().map(Snippet::from).collect();
    let bounded = crate::session_knowledge::RerankModel::new(model);
    let memo = RerankMemo::new();
    let r = Reranker {
        model: &bounded,
        memo: &memo,
    };
    let key = query_key(&req.text, req.app.as_deref());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (ordered, done) = runtime.block_on(rerank_docs(r, &key, &req.text, snippets));
    if let Some(call) = &done.call {
        let tokens = call.llm.prompt_tokens + call.llm.completion_tokens;
        match &call.error {
            None => eprintln!(
                "reranked {} docs with {} in {} ms ({tokens} tokens)",
                call.offered.len(),
                inert(&call.model),
                call.ms
            ),
            Some(e) => eprintln!(
                "warning: {}; the docs keep the store's order ({} ms)",
                inert(e),
                call.ms
            ),
        }
    }
    let mut hits: Vec<Option<Hit>> = hits.into_iter().map(Some).collect();
    Ok(ordered
        .iter()
        .filter_map(|s| {
            hits.iter_mut()
                .find(|h| h.as_ref().is_some_and(|h| h.id == s.id && h.kind == s.kind))
                .and_then(Option::take)
        })
        .collect())
}

/// `ufo knowledge add-demo`: a recorded demonstration stored as the answer to `request`.
fn add_demo(request: &str, app: Option<&str>, dir: &Path, store: &StoreArgs) -> Result<ExitCode> {
    if request.trim().is_empty() {
        bail!(Usage(
            "--request is empty: say which request the demonstration answers".into()
        ));
    }
    let demo = crate::demo_file::read(dir).map_err(|e| Usage(format!("{e:#}")))?;
    let location = std::fs::canonicalize(dir)
        .unwrap_or(dir.to_path_buf())
        .display()
        .to_string();
    let steps = ufo_core::demo::plan(&demo.task, &demo.steps).steps;
    let doc = store::Document {
        kind: KnowledgeKind::Demo,
        location: location.clone(),
        source: "demo".into(),
        apps: app
            .and_then(ufo_knowledge::apps::app_tag)
            .into_iter()
            .collect(),
        page: ufo_knowledge::extract::Page {
            title: request.to_string(),
            headings: String::new(),
            keywords: demo.task.clone(),
            body: steps.join("\n"),
        },
    };
    let mut st = open(store)?;
    st.save(&[doc])?;
    eprintln!(
        "added the demonstration {} ({} step(s)) to {}",
        inert(&location),
        steps.len(),
        st.path().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `ufo knowledge list`: what is stored, in location order.
fn list(
    kind: Option<KnowledgeKind>,
    app: Option<&str>,
    limit: usize,
    json: bool,
    store: &StoreArgs,
) -> Result<ExitCode> {
    let st = open(store)?;
    for e in st.list(kind, app, limit)? {
        if json {
            println!("{}", serde_json::to_string(&e)?);
        } else {
            println!(
                "{}\t{}\t{}\t{}\t{}",
                e.id,
                e.source,
                e.apps,
                inert(&e.title),
                inert(&e.location)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `ufo knowledge forget`: remove what `what` names (something must be named).
fn forget(what: Forget, store: &StoreArgs) -> Result<ExitCode> {
    if what.kind.is_none()
        && what.source.is_none()
        && what.app.is_none()
        && what.locations.is_empty()
    {
        return Err(Usage(
            "say what to forget: LOCATIONs or ids, or --kind, --source or --app".into(),
        )
        .into());
    }
    let mut st = open(store)?;
    let n = st.forget(&what)?;
    eprintln!("forgot {n} entr{}", if n == 1 { "y" } else { "ies" });
    Ok(ExitCode::SUCCESS)
}

/// `ufo knowledge stats`: where the store is and what it holds.
fn stats(json: bool, store: &StoreArgs) -> Result<ExitCode> {
    let st = open(store)?;
    let s = st.stats()?;
    if json {
        println!("{}", serde_json::to_string(&s)?);
    } else {
        println!("store: {}", s.path);
        println!("size: {} bytes", s.bytes);
        println!("entries: {}", s.documents);
        for (kind, source, n) in &s.by_source {
            println!("  {kind}\t{source}\t{n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `add-docs`: every readable document under `paths` is added; a file that cannot be read or
/// parsed is skipped with a warning naming it and why. Exit 0 when nothing was skipped or at
/// least one document was added (the warnings say what was left out), 1 when files were
/// skipped and none added, 2 for a path that is not there or a bad `--app`.
fn add_docs(app: &str, paths: &[PathBuf], store: &StoreArgs) -> Result<ExitCode> {
    let mut st = open(store)?;
    let mut docs = Vec::new();
    let mut skipped = 0usize;
    for p in paths {
        let read = discover::user_documents(p, app).map_err(Usage)?;
        for (file, why) in &read.skipped {
            eprintln!(
                "warning: skipped {}: {}",
                inert(&file.display().to_string()),
                inert(why)
            );
        }
        skipped += read.skipped.len();
        docs.extend(read.docs);
    }
    let n = st.save(&docs)?;
    tell_embed_warning(&st);
    let left_out = if skipped > 0 {
        format!("; skipped {skipped} file(s) that could not be read or parsed (named above)")
    } else {
        String::new()
    };
    eprintln!(
        "added {n} document(s) for {} to {}{left_out}",
        inert(app),
        st.path().display()
    );
    Ok(ExitCode::from(u8::from(skipped > 0 && n == 0)))
}

/// Index the installed help of `sources` with a progress bar (on a terminal), into a copy of
/// the store that replaces it once complete (an index stopped half-way leaves the store as it
/// was). Pages whose embedded text is unchanged keep their vectors.
fn index(old: Store, sources: &[Source]) -> Result<ExitCode> {
    let files = discover::installed_help(&HelpRoots::system(), sources);
    if files.is_empty() {
        eprintln!(
            "no installed help found for {}; install e.g. libreoffice-help-en-us or gimp-help-en",
            sources
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    let mut st = old.fresh_copy()?;
    let bar = indicatif::ProgressBar::new(files.len() as u64);
    let what = match st.embeds() {
        true => "indexing and embedding",
        false => "indexing",
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} pages ({{eta}})"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let report = discover::index_files(&mut st, &files, &mut |done, _| {
        bar.set_position(done as u64)
    })?;
    bar.finish_and_clear();
    tell_embed_warning(&st);
    let st = st.replace(old)?;
    eprintln!(
        "indexed {} pages in {:.1} s ({} unreadable) into {}",
        report.saved,
        started.elapsed().as_secs_f64(),
        report.unreadable,
        st.path().display()
    );
    Ok(ExitCode::SUCCESS)
}
