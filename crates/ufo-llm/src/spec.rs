//! `--llm <SPEC>`: build a model client from a spec string and the environment.
//!
//! | spec | client | environment |
//! |---|---|---|
//! | `openai:<model>` | [`OpenAiClient`] | `UFO_LLM_BASE_URL` or `OPENAI_BASE_URL` (default `https://api.openai.com/v1`); key `UFO_LLM_API_KEY` or `OPENAI_API_KEY`, required only for the default base URL |
//! | `azure:<deployment>` | [`OpenAiClient::azure`] | `AZURE_OPENAI_ENDPOINT` (or `UFO_LLM_BASE_URL`), required; key `AZURE_OPENAI_API_KEY` (or `UFO_LLM_API_KEY`), required; `AZURE_OPENAI_API_VERSION` (default [`AZURE_DEFAULT_API_VERSION`]) |
//! | `anthropic:<model>` | [`AnthropicClient`] | `ANTHROPIC_BASE_URL` or `UFO_LLM_BASE_URL` (default `https://api.anthropic.com`); key `ANTHROPIC_API_KEY` or `UFO_LLM_API_KEY`, required only for the default base URL |
//! | `script:<FILE>` | [`ScriptedModel`] | — |
//! | `replay:<DIR>` | [`ReplayModel`] | — |
//!
//! For every HTTP provider: `UFO_LLM_HEADERS` (`Name: value; Name2: value`) adds headers,
//! `UFO_LLM_IMAGE_DETAIL` (`auto|low|high`) sets the image detail, `UFO_LLM_MAX_ATTEMPTS`
//! (1 to 100) and `UFO_LLM_TIMEOUT_SECS` (read and whole-attempt timeouts, seconds above 0 and
//! at most one day) override the retry policy; `UFO_LLM_STREAM` (true/false) asks for streamed
//! answers, bounded by `UFO_LLM_FIRST_TOKEN_SECS` and `UFO_LLM_SILENCE_SECS` ([`crate::stream`]);
//! other values are configuration errors. The environment
//! overrides [`LlmOptions::settings`]; [`LlmOptions::base_url`] overrides the environment.
//! Model names may contain `:` (`openai:llama3.1:8b`): only the first `:` splits.

use std::time::Duration;

use ufo_core::ports::LlmClient;

use crate::anthropic::{AnthropicClient, AnthropicConfig, ANTHROPIC_DEFAULT_BASE_URL};
use crate::openai::{
    AzureConfig, OpenAiClient, OpenAiConfig, AZURE_DEFAULT_API_VERSION, OPENAI_DEFAULT_BASE_URL,
};
use crate::options::{parse_headers, ApiKey, ConfigError, Env, HttpSettings, ImageDetail};
use crate::record::{RecordError, ReplayModel};
use crate::retry::{MAX_ATTEMPTS_LIMIT, MAX_TIMEOUT_SECS};
use crate::script::{ScriptError, ScriptedModel};

/// The accepted forms, quoted in errors.
pub const SPEC_FORMS: &str = "openai:<model>, azure:<deployment>, anthropic:<model>, \
                              script:<FILE.jsonl> or replay:<DIR>";

/// What [`from_spec`] needs besides the spec.
#[derive(Debug, Clone, Default)]
pub struct LlmOptions {
    /// Where environment variables come from (default: the process environment).
    pub env: Env,
    /// Timeouts, retries, headers, image detail, sampling (e.g. from `ufo.toml`).
    pub settings: HttpSettings,
    /// A base URL (or Azure endpoint) that overrides the environment (per-agent config).
    pub base_url: Option<String>,
    /// The Azure `api-version`, overriding `AZURE_OPENAI_API_VERSION`.
    pub azure_api_version: Option<String>,
}

/// A spec that cannot be turned into a model; the message says what to fix (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Nothing given.
    #[error("the model spec is empty; use {SPEC_FORMS}")]
    Empty,
    /// No `provider:` prefix.
    #[error("model spec {0:?} has no provider; use {SPEC_FORMS}")]
    NoProvider(String),
    /// An unknown provider.
    #[error("unknown model provider {provider:?} in {spec:?}; use {SPEC_FORMS}")]
    UnknownProvider {
        /// The whole spec.
        spec: String,
        /// The provider given.
        provider: String,
    },
    /// The part after the colon is empty.
    #[error("model spec {spec:?} names no {what}; write e.g. {example}")]
    MissingName {
        /// The whole spec.
        spec: String,
        /// What is missing (model, deployment, file, folder).
        what: &'static str,
        /// A corrected example.
        example: &'static str,
    },
    /// A required API key is not set.
    #[error("{spec} needs an API key: set {vars}{hint}")]
    MissingKey {
        /// The spec.
        spec: String,
        /// The variables that can hold it.
        vars: &'static str,
        /// More advice.
        hint: &'static str,
    },
    /// A required setting is not set.
    #[error("{spec} needs {what}: set {var}")]
    MissingSetting {
        /// The spec.
        spec: String,
        /// What is missing.
        what: &'static str,
        /// The variable to set.
        var: &'static str,
    },
    /// An environment variable has a bad value.
    #[error("{var} is invalid: {problem}")]
    BadVariable {
        /// The variable.
        var: &'static str,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// The provider could not be set up.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The script could not be loaded.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The recording could not be loaded.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Build the model client named by `spec`; see the [module documentation](self).
pub fn from_spec(spec: &str, opts: &LlmOptions) -> Result<Box<dyn LlmClient>, SpecError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(SpecError::Empty);
    }
    let Some((provider, rest)) = spec.split_once(':') else {
        return Err(SpecError::NoProvider(spec.to_string()));
    };
    let provider = provider.trim().to_ascii_lowercase();
    let name = rest.trim();
    let missing = |what, example| SpecError::MissingName {
        spec: spec.to_string(),
        what,
        example,
    };
    match provider.as_str() {
        "openai" => {
            if name.is_empty() {
                return Err(missing("model", "openai:gpt-4o"));
            }
            Ok(Box::new(openai(spec, name, opts)?))
        }
        "azure" => {
            if name.is_empty() {
                return Err(missing("deployment", "azure:my-gpt4o-deployment"));
            }
            Ok(Box::new(azure(spec, name, opts)?))
        }
        "anthropic" => {
            if name.is_empty() {
                return Err(missing("model", "anthropic:claude-sonnet-4-5"));
            }
            Ok(Box::new(anthropic(spec, name, opts)?))
        }
        "script" => {
            if name.is_empty() {
                return Err(missing("file", "script:tests/run.jsonl"));
            }
            Ok(Box::new(ScriptedModel::load(name)?))
        }
        "replay" => {
            if name.is_empty() {
                return Err(missing("folder", "replay:runs/recorded/llm"));
            }
            Ok(Box::new(ReplayModel::load(name)?))
        }
        _ => Err(SpecError::UnknownProvider {
            spec: spec.to_string(),
            provider,
        }),
    }
}

/// The HTTP settings after applying the `UFO_LLM_*` environment variables.
pub fn settings_from_env(opts: &LlmOptions) -> Result<HttpSettings, SpecError> {
    let env = &opts.env;
    let mut settings = opts.settings.clone();
    if let Some(text) = env.get("UFO_LLM_HEADERS") {
        let headers = parse_headers(&text).map_err(|problem| SpecError::BadVariable {
            var: "UFO_LLM_HEADERS",
            problem,
        })?;
        settings.extra_headers.extend(headers);
    }
    if let Some(text) = env.get("UFO_LLM_IMAGE_DETAIL") {
        settings.image_detail =
            ImageDetail::parse(&text).ok_or_else(|| SpecError::BadVariable {
                var: "UFO_LLM_IMAGE_DETAIL",
                problem: format!("{text:?}; use auto, low or high"),
            })?;
    }
    if let Some(text) = env.get("UFO_LLM_MAX_ATTEMPTS") {
        settings.retry.max_attempts = text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_ATTEMPTS_LIMIT).contains(n))
            .ok_or_else(|| SpecError::BadVariable {
                var: "UFO_LLM_MAX_ATTEMPTS",
                problem: format!(
                    "{text:?}; use a whole number of attempts from 1 to {MAX_ATTEMPTS_LIMIT}"
                ),
            })?;
    }
    if let Some(text) = env.get("UFO_LLM_STREAM") {
        settings.stream.enabled = match text.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            _ => {
                return Err(SpecError::BadVariable {
                    var: "UFO_LLM_STREAM",
                    problem: format!("{text:?}; use true or false"),
                })
            }
        };
    }
    for (var, field) in [
        ("UFO_LLM_FIRST_TOKEN_SECS", &mut settings.stream.first_token),
        ("UFO_LLM_SILENCE_SECS", &mut settings.stream.silence),
    ] {
        if let Some(text) = env.get(var) {
            *field =
                timeout_secs(&text).map_err(|problem| SpecError::BadVariable { var, problem })?;
        }
    }
    if let Some(text) = env.get("UFO_LLM_TIMEOUT_SECS") {
        let timeout = timeout_secs(&text).map_err(|problem| SpecError::BadVariable {
            var: "UFO_LLM_TIMEOUT_SECS",
            problem,
        })?;
        // A non-streamed answer sends nothing until it is complete, so the read timeout
        // follows the whole-attempt timeout (slow local models need both raised).
        settings.retry.request_timeout = timeout;
        settings.retry.read_timeout = timeout;
    }
    Ok(settings)
}

/// A timeout in seconds: a finite number above 0 and at most [`MAX_TIMEOUT_SECS`]. NaN,
/// infinities, negative and out-of-range values are refused with a message saying what to
/// write instead (they would otherwise panic converting to a `Duration`, or mean "never").
pub fn timeout_secs(text: &str) -> Result<Duration, String> {
    let problem = || {
        format!(
            "{text:?}; use a number of seconds above 0 and at most {MAX_TIMEOUT_SECS} \
             (e.g. 120)"
        )
    };
    let secs: f64 = text.trim().parse().map_err(|_| problem())?;
    if !(secs > 0.0 && secs <= MAX_TIMEOUT_SECS) {
        return Err(problem());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| problem())
}

fn key(env: &Env, vars: &[&'static str]) -> Option<ApiKey> {
    env.first(vars).map(|(_, value)| ApiKey::new(value))
}

fn openai(spec: &str, model: &str, opts: &LlmOptions) -> Result<OpenAiClient, SpecError> {
    let env = &opts.env;
    let base_url = opts
        .base_url
        .clone()
        .or_else(|| {
            env.first(&["UFO_LLM_BASE_URL", "OPENAI_BASE_URL"])
                .map(|(_, v)| v)
        })
        .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_string());
    let api_key = key(env, &["UFO_LLM_API_KEY", "OPENAI_API_KEY"]);
    let is_default = base_url.trim_end_matches('/') == OPENAI_DEFAULT_BASE_URL;
    if api_key.is_none() && is_default {
        return Err(SpecError::MissingKey {
            spec: spec.to_string(),
            vars: "OPENAI_API_KEY (or UFO_LLM_API_KEY)",
            hint: "; for a local OpenAI-compatible server (Ollama, vLLM, llama.cpp) set \
                   UFO_LLM_BASE_URL=http://127.0.0.1:PORT/v1 instead",
        });
    }
    Ok(OpenAiClient::new(OpenAiConfig {
        model: model.to_string(),
        base_url,
        api_key,
        key_hint: "OPENAI_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: settings_from_env(opts)?,
    })?)
}

fn azure(spec: &str, deployment: &str, opts: &LlmOptions) -> Result<OpenAiClient, SpecError> {
    let env = &opts.env;
    let endpoint = opts
        .base_url
        .clone()
        .or_else(|| {
            env.first(&["AZURE_OPENAI_ENDPOINT", "UFO_LLM_BASE_URL"])
                .map(|(_, v)| v)
        })
        .ok_or_else(|| SpecError::MissingSetting {
            spec: spec.to_string(),
            what: "the resource endpoint",
            var: "AZURE_OPENAI_ENDPOINT=https://<resource>.openai.azure.com",
        })?;
    let api_key = key(env, &["AZURE_OPENAI_API_KEY", "UFO_LLM_API_KEY"]).ok_or_else(|| {
        SpecError::MissingKey {
            spec: spec.to_string(),
            vars: "AZURE_OPENAI_API_KEY (or UFO_LLM_API_KEY)",
            hint: "",
        }
    })?;
    let api_version = opts
        .azure_api_version
        .clone()
        .or_else(|| {
            env.first(&["AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION"])
                .map(|(_, v)| v)
        })
        .unwrap_or_else(|| AZURE_DEFAULT_API_VERSION.to_string());
    Ok(OpenAiClient::azure(AzureConfig {
        endpoint,
        deployment: deployment.to_string(),
        api_version,
        api_key: Some(api_key),
        key_hint: "AZURE_OPENAI_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: settings_from_env(opts)?,
    })?)
}

fn anthropic(spec: &str, model: &str, opts: &LlmOptions) -> Result<AnthropicClient, SpecError> {
    let env = &opts.env;
    let base_url = opts
        .base_url
        .clone()
        .or_else(|| {
            env.first(&["ANTHROPIC_BASE_URL", "UFO_LLM_BASE_URL"])
                .map(|(_, v)| v)
        })
        .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_string());
    let api_key = key(env, &["ANTHROPIC_API_KEY", "UFO_LLM_API_KEY"]);
    if api_key.is_none() && base_url.trim_end_matches('/') == ANTHROPIC_DEFAULT_BASE_URL {
        return Err(SpecError::MissingKey {
            spec: spec.to_string(),
            vars: "ANTHROPIC_API_KEY (or UFO_LLM_API_KEY)",
            hint: "",
        });
    }
    Ok(AnthropicClient::new(AnthropicConfig {
        model: model.to_string(),
        base_url,
        api_key,
        key_hint: "ANTHROPIC_API_KEY (or UFO_LLM_API_KEY)".into(),
        settings: settings_from_env(opts)?,
    })?)
}
