//! The options of `ufo knowledge ...` (clap), and what a typed kind or source means.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use ufo_core::knowledge::KnowledgeKind;
use ufo_knowledge::discover::Source;

/// Most entries `list` prints unless told.
pub const DEFAULT_LIST_LIMIT: usize = 200;

/// Options every knowledge command takes.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Configuration file (default ./ufo.toml, else $XDG_CONFIG_HOME/ufo/ufo.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// A sentence-transformers model folder (config.json, tokenizer.json, model.safetensors,
    /// 1_Pooling/config.json; e.g. all-MiniLM-L6-v2) that embeds pages and queries in the
    /// process; overrides [knowledge] embeddings_model_dir.
    #[arg(long, value_name = "DIR", global = true)]
    pub embed_model: Option<PathBuf>,
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

/// A rerank mode as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RerankArg {
    /// The fused order.
    Off,
    /// The model of `--llm` orders the first ten docs.
    Model,
}

impl From<RerankArg> for ufo_core::rerank::RerankMode {
    fn from(r: RerankArg) -> Self {
        match r {
            RerankArg::Off => Self::Off,
            RerankArg::Model => Self::Model,
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
        /// A second stage over the first ten docs found: `model` asks the model of `--llm`
        /// for their order (one call, as a session does with [knowledge] rerank = "model");
        /// default: [knowledge] rerank.
        #[arg(long, value_enum, value_name = "off|model")]
        rerank: Option<RerankArg>,
        /// The model `--rerank model` asks (a spec as `ufo run --llm` takes, e.g.
        /// openai:gpt-4o-mini).
        #[arg(long, value_name = "SPEC")]
        llm: Option<String>,
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
