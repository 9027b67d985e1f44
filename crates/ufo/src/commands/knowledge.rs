//! `ufo knowledge`: index the help installed on this machine and a person's own docs, search
//! them, list, forget and count what is stored.
//!
//! The store is one SQLite file, per user: `store` of the `[knowledge]` section, else
//! `$XDG_DATA_HOME/ufo/knowledge.sqlite` (`~/.local/share/ufo/` without it). The section is
//! read from `--config`, else `./ufo.toml`, else `$XDG_CONFIG_HOME/ufo/ufo.toml`
//! (`~/.config/ufo/ufo.toml`); `UFO_KNOWLEDGE*` variables override it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use ufo_core::inert;
use ufo_core::knowledge::{KnowledgeKind, PromptCaps};
use ufo_knowledge::discover::{self, HelpRoots, Source};
use ufo_knowledge::embed::{EmbedLimits, Embedder};
use ufo_knowledge::store::{self, Forget, SearchRequest, Store};

/// Exit status of bad usage or configuration.
const EXIT_USAGE: u8 = 2;
/// Most entries `list` prints unless told.
const DEFAULT_LIST_LIMIT: usize = 200;

/// The `[knowledge]` section of ufo.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSection {
    /// Whether the agents get knowledge in their prompts (default true; with an empty store
    /// they get none).
    pub enabled: Option<bool>,
    /// The store's file (default `$XDG_DATA_HOME/ufo/knowledge.sqlite`).
    pub store: Option<PathBuf>,
    /// Most help snippets per prompt.
    pub top_docs: Option<usize>,
    /// Most experience snippets per prompt.
    pub top_experience: Option<usize>,
    /// Most demonstration snippets per prompt.
    pub top_demo: Option<usize>,
    /// Most web snippets per prompt.
    pub top_web: Option<usize>,
    /// Most characters of knowledge in one prompt.
    pub total_chars: Option<usize>,
    /// Most characters of one snippet.
    pub snippet_chars: Option<usize>,
    /// Whether a session's finished subtasks are saved as experience: `always`, `never`
    /// (the default), `ask` (at the end, on a terminal) or `auto` (the session ended FINISH
    /// and, in `ufo batch`, the evaluator passed).
    pub save_experience: Option<crate::experience::SavePolicy>,
    /// A SearXNG-compatible JSON search endpoint (e.g. `http://127.0.0.1:8888/search`); web
    /// search is off without it.
    pub web_search_url: Option<String>,
    /// An OpenAI-compatible embeddings endpoint (a base URL like `http://127.0.0.1:11434/v1`);
    /// without it, the provider's base URL (`UFO_LLM_BASE_URL`/`OPENAI_BASE_URL`) when
    /// `embeddings_model` is set.
    pub embeddings_url: Option<String>,
    /// The embeddings model; embeddings are off without it.
    pub embeddings_model: Option<String>,
    /// The model that writes a short summary with tips for each saved experience (a model
    /// spec as `--llm` takes, e.g. `openai:gpt-4o-mini`); no summary without it.
    pub summary_model: Option<String>,
}

/// Where documents and queries get their vectors.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsSettings {
    /// The endpoint's base URL.
    pub url: String,
    /// The model.
    pub model: String,
    /// The bearer token sent: `UFO_KNOWLEDGE_EMBEDDINGS_KEY`, or the provider's key when the
    /// URL is the provider's (never the provider's key to another host).
    pub key: Option<String>,
}

impl EmbeddingsSettings {
    /// The store's embedder.
    pub fn embedder(&self) -> Embedder {
        Embedder::new(&self.url, &self.model, EmbedLimits::default()).with_key(self.key.clone())
    }
}

/// The knowledge settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeSettings {
    /// Whether the agents get knowledge.
    pub enabled: bool,
    /// The store's file.
    pub store: PathBuf,
    /// Most snippets per kind in a prompt.
    pub top: [(KnowledgeKind, usize); 4],
    /// The prompt's caps.
    pub caps: PromptCaps,
    /// When a session's finished subtasks are saved as experience.
    pub save_experience: crate::experience::SavePolicy,
    /// The web search endpoint, if web search is on.
    pub web_search_url: Option<String>,
    /// The embeddings endpoint, if embeddings are on.
    pub embeddings: Option<EmbeddingsSettings>,
    /// The model spec that summarises saved experience, if one is configured.
    pub summary_model: Option<String>,
}

impl KnowledgeSettings {
    /// The section over the defaults, then `UFO_KNOWLEDGE` (switch), `UFO_KNOWLEDGE_STORE`,
    /// `UFO_KNOWLEDGE_TOP_DOCS`/`_EXPERIENCE`/`_DEMO`/`_WEB`, `UFO_KNOWLEDGE_TOTAL_CHARS`,
    /// `UFO_KNOWLEDGE_SNIPPET_CHARS`, `UFO_KNOWLEDGE_SUMMARY_MODEL` (an empty value turns the
    /// summary off).
    pub fn resolve(
        section: &KnowledgeSection,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<KnowledgeSettings> {
        let caps = PromptCaps::default();
        let mut s = KnowledgeSettings {
            enabled: section.enabled.unwrap_or(true),
            store: match &section.store {
                Some(p) => p.clone(),
                None => store::default_path()?,
            },
            top: [
                (KnowledgeKind::Docs, section.top_docs.unwrap_or(3)),
                (
                    KnowledgeKind::Experience,
                    section.top_experience.unwrap_or(2),
                ),
                (KnowledgeKind::Demo, section.top_demo.unwrap_or(1)),
                (KnowledgeKind::Web, section.top_web.unwrap_or(0)),
            ],
            caps: PromptCaps {
                total_chars: section.total_chars.unwrap_or(caps.total_chars),
                snippet_chars: section.snippet_chars.unwrap_or(caps.snippet_chars),
            },
            save_experience: section.save_experience.unwrap_or_default(),
            web_search_url: section.web_search_url.clone().filter(|u| !u.is_empty()),
            embeddings: embeddings(section, env)?,
            summary_model: env("UFO_KNOWLEDGE_SUMMARY_MODEL")
                .or_else(|| section.summary_model.clone())
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty()),
        };
        if let Some(v) = env("UFO_KNOWLEDGE_WEB_SEARCH_URL") {
            s.web_search_url = Some(v).filter(|u| !u.is_empty());
        }
        if let Some(v) = env("UFO_SAVE_EXPERIENCE").filter(|v| !v.trim().is_empty()) {
            s.save_experience = crate::experience::SavePolicy::parse(&v).with_context(|| {
                format!("UFO_SAVE_EXPERIENCE is {v:?}; set it to always, never, ask or auto")
            })?;
        }
        if let Some(v) = env("UFO_KNOWLEDGE") {
            s.enabled = match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => bail!("UFO_KNOWLEDGE is {v:?}; set it to true or false"),
            };
        }
        if let Some(v) = env("UFO_KNOWLEDGE_STORE").filter(|v| !v.is_empty()) {
            s.store = PathBuf::from(v);
        }
        for (kind, top) in s.top.iter_mut() {
            let name = format!("UFO_KNOWLEDGE_TOP_{}", kind.as_str().to_uppercase());
            if let Some(v) = env(&name) {
                *top = count(&name, &v)?;
            }
        }
        if let Some(v) = env("UFO_KNOWLEDGE_TOTAL_CHARS") {
            s.caps.total_chars = count("UFO_KNOWLEDGE_TOTAL_CHARS", &v)?;
        }
        if let Some(v) = env("UFO_KNOWLEDGE_SNIPPET_CHARS") {
            s.caps.snippet_chars = count("UFO_KNOWLEDGE_SNIPPET_CHARS", &v)?;
        }
        // web search, when configured, gives two results unless told
        let web_told = section.top_web.is_some() || env("UFO_KNOWLEDGE_TOP_WEB").is_some();
        if s.web_search_url.is_some() && !web_told {
            for (kind, top) in s.top.iter_mut() {
                if *kind == KnowledgeKind::Web {
                    *top = 2;
                }
            }
        }
        Ok(s)
    }
}

/// The embeddings endpoint of `section` and the environment (`UFO_KNOWLEDGE_EMBEDDINGS_URL`,
/// `UFO_KNOWLEDGE_EMBEDDINGS_MODEL`, `UFO_KNOWLEDGE_EMBEDDINGS_KEY`): off without a model; the
/// URL defaults to the OpenAI-compatible provider's (`UFO_LLM_BASE_URL`, `OPENAI_BASE_URL`).
fn embeddings(
    section: &KnowledgeSection,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<EmbeddingsSettings>> {
    let given = |var: &str, field: &Option<String>| {
        env(var)
            .or_else(|| field.clone())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let url = given("UFO_KNOWLEDGE_EMBEDDINGS_URL", &section.embeddings_url);
    let Some(model) = given("UFO_KNOWLEDGE_EMBEDDINGS_MODEL", &section.embeddings_model) else {
        if let Some(url) = url {
            bail!("the embeddings endpoint {url} has no model: set [knowledge] embeddings_model (or UFO_KNOWLEDGE_EMBEDDINGS_MODEL), or remove embeddings_url");
        }
        return Ok(None);
    };
    let own_key = env("UFO_KNOWLEDGE_EMBEDDINGS_KEY").filter(|k| !k.is_empty());
    let (url, key) = match url {
        Some(url) => (url, own_key),
        None => {
            let Some(base) = env("UFO_LLM_BASE_URL")
                .or_else(|| env("OPENAI_BASE_URL"))
                .filter(|u| !u.trim().is_empty())
            else {
                bail!("the embeddings model {model} has no endpoint: set [knowledge] embeddings_url (or UFO_KNOWLEDGE_EMBEDDINGS_URL, e.g. http://127.0.0.1:11434/v1), or the provider's UFO_LLM_BASE_URL");
            };
            let key = own_key.or_else(|| {
                env("UFO_LLM_API_KEY")
                    .or_else(|| env("OPENAI_API_KEY"))
                    .filter(|k| !k.is_empty())
            });
            (base.trim().to_string(), key)
        }
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("the embeddings endpoint {url:?} is not an http(s) URL; set [knowledge] embeddings_url to one like http://127.0.0.1:11434/v1");
    }
    Ok(Some(EmbeddingsSettings { url, model, key }))
}

fn count(name: &str, v: &str) -> Result<usize> {
    v.trim()
        .parse()
        .with_context(|| format!("{name} is {v:?}; set it to a whole number"))
}

/// The configuration file the knowledge section comes from: `--config`, else `./ufo.toml`,
/// else `$XDG_CONFIG_HOME/ufo/ufo.toml` (`~/.config/ufo/ufo.toml`); `None` when none exists.
fn config_path(config: Option<&Path>) -> Option<PathBuf> {
    if let Some(c) = config {
        return Some(c.to_path_buf());
    }
    let here = PathBuf::from("ufo.toml");
    if here.exists() {
        return Some(here);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let p = base.join("ufo").join("ufo.toml");
    p.exists().then_some(p)
}

/// The `[knowledge]` section of the file at `path` (the other keys are read by `ufo run`).
fn load_section(path: &Path) -> Result<KnowledgeSection> {
    #[derive(Deserialize)]
    struct OnlyKnowledge {
        knowledge: Option<KnowledgeSection>,
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the configuration file {}", path.display()))?;
    let file: OnlyKnowledge = toml::from_str(&text).with_context(|| {
        format!(
            "the [knowledge] section of {} is not valid; fix the key named below",
            path.display()
        )
    })?;
    Ok(file.knowledge.unwrap_or_default())
}

/// The store a batch's workers use (they run with a fresh `HOME`): the one the batch itself
/// resolves, as an absolute path; `None` when `UFO_KNOWLEDGE_STORE` already names it (the
/// workers inherit it) or no store can be placed.
pub fn store_for_workers(config: Option<&Path>) -> Option<PathBuf> {
    if std::env::var_os("UFO_KNOWLEDGE_STORE").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let s = settings(config).ok()?;
    std::path::absolute(&s.store).ok()
}

/// The settings for a command given `--config`.
fn settings(config: Option<&Path>) -> Result<KnowledgeSettings> {
    let section = match config_path(config) {
        Some(p) => load_section(&p)?,
        None => KnowledgeSection::default(),
    };
    KnowledgeSettings::resolve(&section, &|k| std::env::var(k).ok())
}

/// Options every knowledge command takes.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Configuration file (default ./ufo.toml, else $XDG_CONFIG_HOME/ufo/ufo.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

/// A kind as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// Help pages and a person's docs.
    Docs,
    /// Past sessions' experience.
    Experience,
    /// Demonstrations.
    Demo,
    /// Web pages.
    Web,
}

impl From<KindArg> for KnowledgeKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Docs => KnowledgeKind::Docs,
            KindArg::Experience => KnowledgeKind::Experience,
            KindArg::Demo => KnowledgeKind::Demo,
            KindArg::Web => KnowledgeKind::Web,
        }
    }
}

/// A help source as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourceArg {
    /// LibreOffice's HTML help.
    Libreoffice,
    /// GIMP's help.
    Gimp,
    /// GNOME's Mallard pages.
    Mallard,
    /// Section-1 man pages.
    Man,
}

impl From<SourceArg> for Source {
    fn from(s: SourceArg) -> Self {
        match s {
            SourceArg::Libreoffice => Source::LibreOffice,
            SourceArg::Gimp => Source::Gimp,
            SourceArg::Mallard => Source::Mallard,
            SourceArg::Man => Source::Man,
        }
    }
}

/// `ufo knowledge ...`.
#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// Index the help installed on this machine (LibreOffice, GIMP, GNOME's Mallard pages,
    /// section-1 man pages; all of them unless SOURCEs are named). Indexing again replaces.
    Index {
        /// Only these sources.
        #[arg(value_enum)]
        sources: Vec<SourceArg>,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Search the store; best first.
    Search {
        /// The application (libreoffice-calc, libreoffice-writer, libreoffice-impress, gimp, a
        /// process name such as soffice or gimp-2.10, ...): its pages only, when it has any.
        #[arg(long, value_name = "APP")]
        app: Option<String>,
        /// Only this kind.
        #[arg(long, value_enum, value_name = "docs|experience|demo|web")]
        kind: Option<KindArg>,
        /// Most results (per kind).
        #[arg(long, value_name = "N", default_value_t = 5)]
        top: usize,
        /// One JSON object per line: kind, id, title, location, source, score, text.
        #[arg(long)]
        json: bool,
        /// What to look for, in plain words.
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Add a person's own documents (HTML, Markdown, text, and JSON guidance records
    /// `{application, request, guidance[]}`) for an application; a directory adds every such
    /// file under it. Adding a file again replaces it.
    AddDocs {
        /// The application they are for.
        #[arg(long, value_name = "NAME")]
        app: String,
        /// Files or directories.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Add a recorded demonstration (`ufo demo record --out DIR`) as the answer to a request;
    /// adding the same DIR again replaces it.
    AddDemo {
        /// The request the demonstration answers.
        #[arg(long, value_name = "TEXT")]
        request: String,
        /// The application it is for (default: none, found for every application).
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
        /// The demonstration's folder.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List what is stored (location order).
    List {
        /// Only this kind.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Only what serves this application.
        #[arg(long, value_name = "APP")]
        app: Option<String>,
        /// Most entries.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_LIST_LIMIT)]
        limit: usize,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Remove stored entries: by location (a directory ending in `/` removes everything
    /// under it) or id, or every entry of a kind, source or application.
    Forget {
        /// Only this kind.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Only this source (libreoffice, gimp, mallard, man, user).
        #[arg(long, value_name = "SOURCE")]
        source: Option<String>,
        /// Only what serves this application.
        #[arg(long, value_name = "APP")]
        app: Option<String>,
        /// Locations or ids.
        #[arg(value_name = "LOCATION")]
        locations: Vec<String>,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Where the store is, its size, and how many entries of each kind and source it holds.
    Stats {
        /// As one JSON object.
        #[arg(long)]
        json: bool,
        /// Store options.
        #[command(flatten)]
        store: StoreArgs,
    },
}

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

fn open(config: Option<&Path>) -> Result<Store> {
    let s = settings(config).map_err(|e| Usage(format!("{e:#}")))?;
    let mut st = Store::open(&s.store)?;
    st.set_embedder(s.embeddings.as_ref().map(EmbeddingsSettings::embedder));
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
            let mut st = open(store.config.as_deref())?;
            let sources: Vec<Source> = if sources.is_empty() {
                Source::ALL.to_vec()
            } else {
                sources.into_iter().map(Source::from).collect()
            };
            index(&mut st, &sources)
        }
        KnowledgeCommand::Search {
            app,
            kind,
            top,
            json,
            query,
            store,
        } => {
            let st = open(store.config.as_deref())?;
            let req = SearchRequest {
                text: query.join(" "),
                app,
                kinds: kind.map(|k| vec![k.into()]).unwrap_or_default(),
                top,
            };
            let hits = st.search(&req)?;
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
        KnowledgeCommand::AddDocs { app, paths, store } => add_docs(&app, &paths, &store),
        KnowledgeCommand::AddDemo {
            request,
            app,
            dir,
            store,
        } => {
            if request.trim().is_empty() {
                bail!(Usage(
                    "--request is empty: say which request the demonstration answers".into()
                ));
            }
            let demo = crate::commands::demo::read(&dir).map_err(|e| Usage(format!("{e:#}")))?;
            let location = std::fs::canonicalize(&dir)
                .unwrap_or(dir.clone())
                .display()
                .to_string();
            let steps = ufo_core::demo::plan(&demo.task, &demo.steps).steps;
            let doc = store::Document {
                kind: KnowledgeKind::Demo,
                location: location.clone(),
                source: "demo".into(),
                apps: app
                    .as_deref()
                    .and_then(ufo_knowledge::apps::app_tag)
                    .into_iter()
                    .collect(),
                page: ufo_knowledge::extract::Page {
                    title: request.clone(),
                    headings: String::new(),
                    keywords: demo.task.clone(),
                    body: steps.join("\n"),
                },
            };
            let mut st = open(store.config.as_deref())?;
            st.save(&[doc])?;
            eprintln!(
                "added the demonstration {} ({} step(s)) to {}",
                inert(&location),
                steps.len(),
                st.path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        KnowledgeCommand::List {
            kind,
            app,
            limit,
            json,
            store,
        } => {
            let st = open(store.config.as_deref())?;
            for e in st.list(kind.map(Into::into), app.as_deref(), limit)? {
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
        KnowledgeCommand::Forget {
            kind,
            source,
            app,
            locations,
            store,
        } => {
            if kind.is_none() && source.is_none() && app.is_none() && locations.is_empty() {
                return Err(Usage(
                    "say what to forget: LOCATIONs or ids, or --kind, --source or --app".into(),
                )
                .into());
            }
            let mut st = open(store.config.as_deref())?;
            let n = st.forget(&Forget {
                kind: kind.map(Into::into),
                source,
                app,
                locations,
            })?;
            eprintln!("forgot {n} entr{}", if n == 1 { "y" } else { "ies" });
            Ok(ExitCode::SUCCESS)
        }
        KnowledgeCommand::Stats { json, store } => {
            let st = open(store.config.as_deref())?;
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
    }
}

/// `add-docs`: every readable document under `paths` is added; a file that cannot be read or
/// parsed is skipped with a warning naming it and why. Exit 0 when nothing was skipped or at
/// least one document was added (the warnings say what was left out), 1 when files were
/// skipped and none added, 2 for a path that is not there or a bad `--app`.
fn add_docs(app: &str, paths: &[PathBuf], store: &StoreArgs) -> Result<ExitCode> {
    let mut st = open(store.config.as_deref())?;
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

/// Index the installed help of `sources` with a progress bar (on a terminal).
fn index(st: &mut Store, sources: &[Source]) -> Result<ExitCode> {
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
    let bar = indicatif::ProgressBar::new(files.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("indexing {bar:40} {pos}/{len} pages ({eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let report = discover::index_files(st, &files, &mut |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    tell_embed_warning(st);
    eprintln!(
        "indexed {} pages in {:.1} s ({} unreadable) into {}",
        report.saved,
        started.elapsed().as_secs_f64(),
        report.unreadable,
        st.path().display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_then_environment() {
        let section: KnowledgeSection = toml::from_str(
            "enabled = false\nstore = \"/x/k.sqlite\"\ntop_docs = 4\nsnippet_chars = 500",
        )
        .unwrap();
        let none = |_: &str| None;
        let s = KnowledgeSettings::resolve(&section, &none).unwrap();
        assert!(!s.enabled);
        assert_eq!(s.store, PathBuf::from("/x/k.sqlite"));
        assert_eq!(s.top[0], (KnowledgeKind::Docs, 4));
        assert_eq!(s.caps.snippet_chars, 500);
        let env = |k: &str| match k {
            "UFO_KNOWLEDGE" => Some("on".to_string()),
            "UFO_KNOWLEDGE_TOP_DOCS" => Some("7".to_string()),
            "UFO_KNOWLEDGE_STORE" => Some("/y.sqlite".to_string()),
            _ => None,
        };
        let s = KnowledgeSettings::resolve(&section, &env).unwrap();
        assert!(s.enabled);
        assert_eq!(s.top[0], (KnowledgeKind::Docs, 7));
        assert_eq!(s.store, PathBuf::from("/y.sqlite"));
        let bad = |k: &str| (k == "UFO_KNOWLEDGE_TOP_WEB").then(|| "lots".to_string());
        let e = KnowledgeSettings::resolve(&section, &bad).unwrap_err();
        assert!(e.to_string().contains("UFO_KNOWLEDGE_TOP_WEB"), "{e}");
        assert!(toml::from_str::<KnowledgeSection>("nope = 1").is_err());
    }

    #[test]
    fn embeddings_need_a_model_and_the_provider_key_goes_only_to_the_provider() {
        let none = |_: &str| None;
        let off = KnowledgeSettings::resolve(&KnowledgeSection::default(), &none).unwrap();
        assert_eq!(off.embeddings, None);
        let section: KnowledgeSection = toml::from_str(
            "embeddings_url = \"http://127.0.0.1:11434/v1\"\nembeddings_model = \"nomic-embed-text\"",
        )
        .unwrap();
        let provider = |k: &str| match k {
            "OPENAI_API_KEY" => Some("sk-provider".to_string()),
            "OPENAI_BASE_URL" => Some("https://llm.example/v1".to_string()),
            _ => None,
        };
        let own = KnowledgeSettings::resolve(&section, &provider)
            .unwrap()
            .embeddings
            .unwrap();
        assert_eq!(own.url, "http://127.0.0.1:11434/v1");
        assert_eq!(own.model, "nomic-embed-text");
        assert_eq!(
            own.key, None,
            "the provider's key is not sent to another endpoint"
        );
        let model_only: KnowledgeSection =
            toml::from_str("embeddings_model = \"text-embedding-3-small\"").unwrap();
        let from_provider = KnowledgeSettings::resolve(&model_only, &provider)
            .unwrap()
            .embeddings
            .unwrap();
        assert_eq!(from_provider.url, "https://llm.example/v1");
        assert_eq!(from_provider.key.as_deref(), Some("sk-provider"));
        let env = |k: &str| match k {
            "UFO_KNOWLEDGE_EMBEDDINGS_URL" => Some("http://10.0.0.2:8000".to_string()),
            "UFO_KNOWLEDGE_EMBEDDINGS_MODEL" => Some("bge".to_string()),
            _ => None,
        };
        let e = KnowledgeSettings::resolve(&section, &env)
            .unwrap()
            .embeddings
            .unwrap();
        assert_eq!(
            (e.url.as_str(), e.model.as_str()),
            ("http://10.0.0.2:8000", "bge")
        );
        let url_only: KnowledgeSection =
            toml::from_str("embeddings_url = \"http://127.0.0.1:1/v1\"").unwrap();
        let err = KnowledgeSettings::resolve(&url_only, &none).unwrap_err();
        assert!(err.to_string().contains("embeddings_model"), "{err}");
        let err = KnowledgeSettings::resolve(&model_only, &none).unwrap_err();
        assert!(err.to_string().contains("embeddings_url"), "{err}");
    }

    #[test]
    fn the_summary_model_comes_from_the_section_or_the_environment() {
        let none = |_: &str| None;
        let off = KnowledgeSettings::resolve(&KnowledgeSection::default(), &none).unwrap();
        assert_eq!(off.summary_model, None);
        let section: KnowledgeSection =
            toml::from_str("summary_model = \"openai:gpt-4o-mini\"").unwrap();
        let s = KnowledgeSettings::resolve(&section, &none).unwrap();
        assert_eq!(s.summary_model.as_deref(), Some("openai:gpt-4o-mini"));
        let env = |k: &str| (k == "UFO_KNOWLEDGE_SUMMARY_MODEL").then(|| " script:s.jsonl ".into());
        let s = KnowledgeSettings::resolve(&section, &env).unwrap();
        assert_eq!(s.summary_model.as_deref(), Some("script:s.jsonl"));
        // an empty value turns it off
        let empty = |k: &str| (k == "UFO_KNOWLEDGE_SUMMARY_MODEL").then(String::new);
        let s = KnowledgeSettings::resolve(&section, &empty).unwrap();
        assert_eq!(s.summary_model, None);
    }
}
