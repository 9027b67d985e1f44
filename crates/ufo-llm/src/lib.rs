//! Model backends for ufo-rs: implementations of the [`ufo_core::ports::LlmClient`] port.
//!
//! - [`script`]: the scripted model (`--llm script:FILE`), answers from a JSON Lines file;
//! - [`openai`]: OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, LM
//!   Studio) and Azure OpenAI;
//! - [`anthropic`]: the Anthropic Messages API;
//! - [`retry`]: timeouts, retries, backoff shared by the HTTP providers;
//! - [`learn`]: what a server accepts (response schema, JSON mode, images), learnt from its
//!   refusals;
//! - [`record`]: [`Recording`] of calls to a folder and [`ReplayModel`] (`replay:DIR`);
//! - [`backup`]: [`BackupModel`], a primary model with a backup;
//! - [`spec`]: [`from_spec`], which turns `--llm <SPEC>` into a client;
//! - [`stream`]: streamed answers, bounded by the time to the first token and the silence
//!   between tokens;
//! - [`wire`]: the JSON text sent, answer fields in the prompts' order;
//! - [`price`]: cost of a call from its usage;
//! - [`redact_url`] (from `ufo_core::redact`): credentials hidden from every URL shown.
//!
//! See the crate's README for the environment variables and the retry policy.

pub mod anthropic;
pub mod backup;
pub mod learn;
pub mod openai;
pub mod options;
pub mod price;
pub mod record;
pub mod retry;
pub mod script;
pub mod spec;
pub mod stream;
pub mod wire;

pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use backup::BackupModel;
pub use openai::{AzureConfig, OpenAiClient, OpenAiConfig};
pub use options::{ApiKey, ConfigError, Env, HttpSettings, ImageDetail, RetryPolicy};
pub use price::Price;
pub use record::{RecordError, Recording, ReplayModel};
pub use script::{ScriptError, ScriptedModel};
pub use spec::{from_spec, LlmOptions, SpecError};
pub use stream::StreamSettings;
pub use ufo_core::redact::redact_url;
