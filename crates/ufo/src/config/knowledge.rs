//! The `[knowledge]` section of ufo.toml and the `UFO_KNOWLEDGE*` variables resolved into
//! [`KnowledgeSettings`]: where the store is, what the agents get, what is saved after a
//! session. `ufo run`, `ufo batch` and `ufo knowledge` all read it from here.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use ufo_core::knowledge::{KnowledgeKind, PromptCaps};
use ufo_core::rerank::RerankMode;

use ufo_knowledge::embed::{EmbedLimits, Embedder, Encoder};
use ufo_knowledge::model::SentenceModel;
use ufo_knowledge::store;

/// When a session's finished subtasks are saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SavePolicy {
    /// After every session.
    Always,
    /// Never (the default).
    #[default]
    Never,
    /// Ask the person at the end, on a terminal; without one, nothing is saved.
    Ask,
    /// When the session ended FINISH and, in `ufo batch`, the evaluator passed.
    Auto,
}

impl SavePolicy {
    /// The policy named `s` (`always`, `never`, `ask`, `auto`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" => Some(Self::Always),
            "never" => Some(Self::Never),
            "ask" => Some(Self::Ask),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }
}

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
    pub save_experience: Option<SavePolicy>,
    /// A SearXNG-compatible JSON search endpoint (e.g. `http://127.0.0.1:8888/search`); web
    /// search is off without it.
    pub web_search_url: Option<String>,
    /// An OpenAI-compatible embeddings endpoint (a base URL like `http://127.0.0.1:11434/v1`);
    /// without it, the provider's base URL (`UFO_LLM_BASE_URL`/`OPENAI_BASE_URL`) when
    /// `embeddings_model` is set.
    pub embeddings_url: Option<String>,
    /// The embeddings model; embeddings are off without it.
    pub embeddings_model: Option<String>,
    /// A sentence-transformers model folder (e.g. all-MiniLM-L6-v2) run in the process; it
    /// gives the vectors instead of the endpoint.
    pub embeddings_model_dir: Option<PathBuf>,
    /// The model that writes a short summary with tips for each saved experience (a model
    /// spec as `--llm` takes, e.g. `openai:gpt-4o-mini`); no summary without it.
    pub summary_model: Option<String>,
    /// The second stage that orders the docs found for the agents: `off` (the default) or
    /// `model` (the session's own model, one bounded call per query).
    pub rerank: Option<String>,
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

impl KnowledgeSettings {
    /// What gives the store its vectors: the model folder (loaded now; a bad folder is an
    /// error naming its file), else the endpoint, else nothing (lexical ranking).
    pub fn encoder(&self) -> Result<Option<Encoder>> {
        if let Some(dir) = &self.embeddings_model_dir {
            let model = SentenceModel::load(dir)?;
            return Ok(Some(Encoder::Local(Arc::new(model))));
        }
        Ok(self
            .embeddings
            .as_ref()
            .map(|e| Encoder::Http(e.embedder())))
    }

    /// Whether queries get a vector (a model folder or an endpoint is configured).
    pub fn embeds(&self) -> bool {
        self.embeddings_model_dir.is_some() || self.embeddings.is_some()
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
    pub save_experience: SavePolicy,
    /// The web search endpoint, if web search is on.
    pub web_search_url: Option<String>,
    /// The embeddings endpoint, if embeddings are on.
    pub embeddings: Option<EmbeddingsSettings>,
    /// The embedding model's folder, run in the process (before the endpoint).
    pub embeddings_model_dir: Option<PathBuf>,
    /// The model spec that summarises saved experience, if one is configured.
    pub summary_model: Option<String>,
    /// Whether the session's model orders the docs found (`rerank`).
    pub rerank: RerankMode,
}

impl KnowledgeSettings {
    /// The section over the defaults, then `UFO_KNOWLEDGE` (switch), `UFO_KNOWLEDGE_STORE`,
    /// `UFO_KNOWLEDGE_TOP_DOCS`/`_EXPERIENCE`/`_DEMO`/`_WEB`, `UFO_KNOWLEDGE_TOTAL_CHARS`,
    /// `UFO_KNOWLEDGE_SNIPPET_CHARS`, `UFO_KNOWLEDGE_SUMMARY_MODEL` (an empty value turns the
    /// summary off), `UFO_KNOWLEDGE_RERANK`.
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
            embeddings_model_dir: env("UFO_KNOWLEDGE_EMBEDDINGS_MODEL_DIR")
                .map(PathBuf::from)
                .or_else(|| section.embeddings_model_dir.clone())
                .filter(|p| !p.as_os_str().is_empty()),
            summary_model: env("UFO_KNOWLEDGE_SUMMARY_MODEL")
                .or_else(|| section.summary_model.clone())
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty()),
            rerank: rerank_of(section, env)?,
        };
        if let Some(v) = env("UFO_KNOWLEDGE_WEB_SEARCH_URL") {
            s.web_search_url = Some(v).filter(|u| !u.is_empty());
        }
        if let Some(v) = env("UFO_SAVE_EXPERIENCE").filter(|v| !v.trim().is_empty()) {
            s.save_experience = SavePolicy::parse(&v).with_context(|| {
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

/// `UFO_KNOWLEDGE_RERANK`, else the section's `rerank`, else off.
fn rerank_of(
    section: &KnowledgeSection,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RerankMode> {
    match (
        env("UFO_KNOWLEDGE_RERANK").filter(|v| !v.trim().is_empty()),
        &section.rerank,
    ) {
        (Some(v), _) => rerank_mode("UFO_KNOWLEDGE_RERANK", &v),
        (None, Some(v)) => rerank_mode("[knowledge] rerank", v),
        (None, None) => Ok(RerankMode::Off),
    }
}

/// The rerank mode `v` of the setting `name`; anything else is an error naming both and the
/// values allowed.
pub fn rerank_mode(name: &str, v: &str) -> Result<RerankMode> {
    RerankMode::parse(v).with_context(|| {
        let allowed: Vec<&str> = RerankMode::ALL.iter().map(|m| m.as_str()).collect();
        format!("{name} is {v:?}; set it to {}", allowed.join(" or "))
    })
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
pub(crate) fn settings(config: Option<&Path>) -> Result<KnowledgeSettings> {
    let section = match config_path(config) {
        Some(p) => load_section(&p)?,
        None => KnowledgeSection::default(),
    };
    KnowledgeSettings::resolve(&section, &|k| std::env::var(k).ok())
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
    fn a_model_folder_comes_from_the_section_or_the_environment_and_a_bad_one_is_named() {
        let none = |_: &str| None;
        let section: KnowledgeSection =
            toml::from_str("embeddings_model_dir = \"/nonexistent/minilm\"").unwrap();
        let s = KnowledgeSettings::resolve(&section, &none).unwrap();
        assert_eq!(
            s.embeddings_model_dir.as_deref(),
            Some(Path::new("/nonexistent/minilm"))
        );
        assert!(s.embeds());
        let err = s.encoder().unwrap_err().to_string();
        assert!(err.contains("/nonexistent/minilm: not a folder"), "{err}");
        // an empty variable turns it off; another path replaces it
        let off = |k: &str| (k == "UFO_KNOWLEDGE_EMBEDDINGS_MODEL_DIR").then(String::new);
        let s = KnowledgeSettings::resolve(&section, &off).unwrap();
        assert_eq!(s.embeddings_model_dir, None);
        assert!(!s.embeds());
        assert!(s.encoder().unwrap().is_none());
        let other = |k: &str| (k == "UFO_KNOWLEDGE_EMBEDDINGS_MODEL_DIR").then(|| "/m".to_string());
        let s = KnowledgeSettings::resolve(&section, &other).unwrap();
        assert_eq!(s.embeddings_model_dir.as_deref(), Some(Path::new("/m")));
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

    #[test]
    fn the_rerank_mode_comes_from_the_section_or_the_environment_and_a_bad_one_is_named() {
        let none = |_: &str| None;
        let off = KnowledgeSettings::resolve(&KnowledgeSection::default(), &none).unwrap();
        assert_eq!(off.rerank, RerankMode::Off);
        let section: KnowledgeSection = toml::from_str("rerank = \"model\"").unwrap();
        let s = KnowledgeSettings::resolve(&section, &none).unwrap();
        assert_eq!(s.rerank, RerankMode::Model);
        let env = |k: &str| (k == "UFO_KNOWLEDGE_RERANK").then(|| "OFF".into());
        assert_eq!(
            KnowledgeSettings::resolve(&section, &env).unwrap().rerank,
            RerankMode::Off
        );
        let bad: KnowledgeSection = toml::from_str("rerank = \"llm\"").unwrap();
        let err = format!("{:#}", KnowledgeSettings::resolve(&bad, &none).unwrap_err());
        assert!(err.contains("[knowledge] rerank is \"llm\""), "{err}");
        assert!(err.contains("off or model"), "{err}");
        let env = |k: &str| (k == "UFO_KNOWLEDGE_RERANK").then(|| "cross-encoder".into());
        let err = format!(
            "{:#}",
            KnowledgeSettings::resolve(&section, &env).unwrap_err()
        );
        assert!(err.contains("UFO_KNOWLEDGE_RERANK"), "{err}");
    }
}
