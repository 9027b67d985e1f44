//! Building the models of a session from specs: per-agent models, a backup, prices and
//! recording, all behind `ufo_core::LlmClient`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use serde::Deserialize;
use ufo_core::{ChatRequest, ChatResponse, LlmClient, LlmError, Usage};
use ufo_llm::{from_spec, BackupModel, LlmOptions, Price, Recording};

/// A price table entry (`[prices."openai:gpt-4o"]` in ufo.toml), per 1000 tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Price of 1000 prompt tokens.
    pub input_per_1k: f64,
    /// Price of 1000 completion tokens.
    pub output_per_1k: f64,
}

/// What the session's models are made of.
pub struct ModelPlan<'a> {
    /// The host's spec.
    pub host: &'a str,
    /// The AppAgents' spec.
    pub app: &'a str,
    /// A backup used when a primary stays unavailable.
    pub backup: Option<&'a str>,
    /// Prices by spec.
    pub prices: &'a HashMap<String, PriceEntry>,
    /// Record every call into this folder.
    pub record: Option<&'a Path>,
    /// How the answers are constrained (`structured_output`).
    pub structured_output: ufo_core::StructuredOutput,
    /// Streamed answers (`[streaming]`).
    pub streaming: ufo_llm::StreamSettings,
}

/// The models of a session: host and app share one client when their specs are equal (a
/// script is one conversation served to both).
pub struct Models {
    clients: Vec<Box<dyn LlmClient>>,
    app_index: usize,
}

impl Models {
    /// Build the clients.
    pub fn build(plan: &ModelPlan<'_>) -> Result<Self> {
        let mut clients = vec![build_one(plan.host, plan, "host")?];
        let app_index = if plan.app == plan.host {
            0
        } else {
            clients.push(build_one(plan.app, plan, "app")?);
            1
        };
        Ok(Self { clients, app_index })
    }

    /// The host's model.
    pub fn host(&self) -> &dyn LlmClient {
        self.clients[0].as_ref()
    }

    /// The AppAgents' model.
    pub fn app(&self) -> &dyn LlmClient {
        self.clients[self.app_index].as_ref()
    }
}

/// The model that summarises saved experience (`[knowledge] summary_model`): asked for at
/// most [`ufo_core::experience::SUMMARY_MAX_TOKENS`], priced by `prices`, its prompts
/// redacted like the session's.
pub fn summary_model(
    spec: &str,
    prices: &HashMap<String, PriceEntry>,
) -> Result<Box<dyn LlmClient>> {
    let mut opts = LlmOptions::default();
    opts.settings.max_tokens = Some(ufo_core::experience::SUMMARY_MAX_TOKENS);
    let mut client = from_spec(spec, &opts).map_err(|e| anyhow!("summary_model {spec}: {e}"))?;
    if let Some(p) = prices.get(spec) {
        client = Box::new(Priced {
            inner: client,
            price: Price::new(p.input_per_1k, p.output_per_1k),
        });
    }
    Ok(Box::new(Redacting { inner: client }))
}

fn build_one(spec: &str, plan: &ModelPlan<'_>, agent: &str) -> Result<Box<dyn LlmClient>> {
    let mut opts = LlmOptions::default();
    opts.settings.structured_output = plan.structured_output;
    opts.settings.stream = plan.streaming.clone();
    let mut client = from_spec(spec, &opts).map_err(|e| anyhow!("--llm {spec}: {e}"))?;
    if let Some(backup) = plan.backup {
        let b = from_spec(backup, &opts).map_err(|e| anyhow!("backup_llm {backup}: {e}"))?;
        client = Box::new(BackupModel::new(client, b));
    }
    if let Some(p) = plan.prices.get(spec) {
        client = Box::new(Priced {
            inner: client,
            price: Price::new(p.input_per_1k, p.output_per_1k),
        });
    }
    if let Some(dir) = plan.record {
        // One folder per distinct model, so host and app recordings never interleave.
        let dir = if plan.app == plan.host {
            dir.to_path_buf()
        } else {
            dir.join(agent)
        };
        client = Box::new(
            Recording::new(client, &dir).map_err(|e| anyhow!("--record {}: {e}", dir.display()))?,
        );
    }
    // last, so the recording and every backend see the prompt without secrets
    Ok(Box::new(Redacting { inner: client }))
}

/// A model whose prompts never carry a known secret value: every text part is passed through
/// the process's redactor ([`ufo_core::secrets::redactor`]) before the call, whatever brought
/// the value into the agent's memory (a file a command printed, a tool's answer, screen text).
struct Redacting {
    inner: Box<dyn LlmClient>,
}

#[async_trait]
impl LlmClient for Redacting {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let redactor = ufo_core::secrets::redactor();
        if redactor.is_empty() {
            return self.inner.complete(request).await;
        }
        let mut clean = request.clone();
        for part in clean.messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
            if let ufo_core::ports::ContentPart::Text(t) = part {
                if let std::borrow::Cow::Owned(r) = redactor.redact(t) {
                    *t = r;
                }
            }
        }
        self.inner.complete(&clean).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.inner.cost(usage)
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }
}

/// A model with a price: reports the cost of each call to the engine.
struct Priced {
    inner: Box<dyn LlmClient>,
    price: Price,
}

#[async_trait]
impl LlmClient for Priced {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner.complete(request).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.price.cost(usage)
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }
}
