//! Engine configuration: the `ufo.toml` keys the core reads. The binary loads the file and
//! applies `UFO_*` environment variables and flags on top.

use serde::{Deserialize, Serialize};

use crate::sensitive::SensitivePolicy;

/// What happens after an AppAgent's subtask FAILs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnSubtaskFail {
    /// Back to Host CONTINUE, which sees the failure and may retry, pick another app or FAIL.
    #[default]
    Replan,
    /// Host FINISH; the round ends FAIL with reason `subtask_failed` (UFO's behaviour).
    Finish,
}

/// Whether the host plans (normal) or follows a given plan (follower).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// The host decomposes the request.
    #[default]
    Normal,
    /// An AppAgent's FINISH goes to Host FINISH.
    Follower,
}

/// How a model's answers are constrained (`structured_output` in ufo.toml, env
/// `UFO_STRUCTURED_OUTPUT`, flag `--structured-output`; docs/configuration.md "Structured
/// output"). Scripted and replayed models ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StructuredOutput {
    /// Send the schema; a server that refuses it (HTTP 4xx naming the schema or the response
    /// format) is asked with JSON mode, then with neither, once per server and session, said
    /// once and recorded in the trajectory.
    #[default]
    Auto,
    /// Always send each answer's JSON Schema (OpenAI-compatible `response_format`
    /// `json_schema`, strict; Anthropic a forced tool call); a refusal is an error.
    Schema,
    /// Ask for a JSON object (`response_format` `json_object`) without a schema.
    Json,
    /// Send no response format: the prompt asks for JSON and the tolerant parser reads it.
    Off,
}

impl StructuredOutput {
    /// Every mode, in the order of the docs.
    pub const ALL: [StructuredOutput; 4] = [Self::Auto, Self::Schema, Self::Json, Self::Off];

    /// The name used in ufo.toml and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Schema => "schema",
            Self::Json => "json",
            Self::Off => "off",
        }
    }

    /// Parse a name (any case, surrounding blanks ignored); the error lists the choices.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == t)
            .ok_or_else(|| {
                format!("{text:?} is not a structured output mode; use auto, schema, json or off")
            })
    }
}

/// Bounds of the blackboard, so prompts do not grow without limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlackboardLimits {
    /// Most entries kept over all categories.
    pub max_entries: usize,
    /// Most bytes of rendered blackboard text.
    pub max_bytes: usize,
}

impl Default for BlackboardLimits {
    fn default() -> Self {
        Self {
            max_entries: 60,
            max_bytes: 12_000,
        }
    }
}

/// Prompt templates (minijinja). `None` uses the built-in template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptTemplates {
    /// HostAgent system prompt.
    pub host_system: Option<String>,
    /// HostAgent user prompt.
    pub host_user: Option<String>,
    /// AppAgent system prompt.
    pub app_system: Option<String>,
    /// AppAgent user prompt.
    pub app_user: Option<String>,
}

/// The engine's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Ask before running an action whose response says CONFIRM (off: approve without asking).
    pub safe_guard: bool,
    /// Ask the person PENDING questions (off: go on best effort).
    pub ask_question: bool,
    /// Processor runs per session.
    pub max_steps: u32,
    /// Rounds per session (each further round is a follow-up request).
    pub max_rounds: u32,
    /// Re-asks of the model after an invalid answer, before ERROR.
    pub json_parsing_retry: u32,
    /// What an AppAgent FAIL leads to.
    pub on_subtask_fail: OnSubtaskFail,
    /// Failed subtasks in a round before the host FAILs (with `replan`).
    pub max_subtask_failures: u32,
    /// Host planning mode.
    pub mode: AgentMode,
    /// How many recent steps of its own memory an agent sees in its prompt.
    pub memory_in_prompt: usize,
    /// Send screenshots to the model.
    pub screenshots_to_model: bool,
    /// How the model's answers are constrained (schema, JSON mode, nothing).
    pub structured_output: StructuredOutput,
    /// Blackboard bounds.
    pub blackboard: BlackboardLimits,
    /// Prompt template overrides.
    pub prompts: PromptTemplates,
    /// Actions that always go through CONFIRM.
    pub sensitive: SensitivePolicy,
    /// Stop the session with FAIL, reason `budget`, once model calls cost more than this.
    pub max_cost: Option<f64>,
    /// Speculative multi-action: the AppAgent may answer with a list of `Actions`.
    pub multi_action: bool,
    /// Longest pause, in seconds, while the person has taken the desktop over (a watched
    /// private desktop); without a hand-back by then the round ends FAIL, reason
    /// `takeover_timeout`.
    pub takeover_limit_s: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            safe_guard: true,
            ask_question: true,
            max_steps: 50,
            max_rounds: 1,
            json_parsing_retry: 3,
            on_subtask_fail: OnSubtaskFail::Replan,
            max_subtask_failures: 2,
            mode: AgentMode::Normal,
            memory_in_prompt: 10,
            screenshots_to_model: true,
            structured_output: StructuredOutput::Auto,
            blackboard: BlackboardLimits::default(),
            prompts: PromptTemplates::default(),
            sensitive: SensitivePolicy::default(),
            max_cost: None,
            multi_action: false,
            takeover_limit_s: 600,
        }
    }
}
