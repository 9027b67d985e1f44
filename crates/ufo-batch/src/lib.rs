//! Batch runs of ufo-rs over task suites in the OSWorld JSON format.
//!
//! - [`task`]: the task format (`id`, `instruction`, `config`, `evaluator`, plus the ufo-rs
//!   extension `ufo_script`) and finding task files;
//! - [`kinds`]: the names of the config steps, getters and metrics this crate runs, as enums
//!   that the task check and the runners share;
//! - [`setup`]: the config-step runner (`launch`, `execute`, `command`, `open`, `sleep`,
//!   `activate_window`) over the [`ufo_core::Desktop`] port;
//! - [`getters`]: `vm_file`, `vm_command_line`, `vm_command_error`, `rule` (and `local_file`);
//! - [`eval`]: the metrics `exact_match`, `check_include_exclude`, `match_in_list`,
//!   `compare_text_file`, `check_list`, `is_in_list`, `infeasible`;
//! - [`llm_eval`]: the LLM evaluation agent (reason, sub-scores, complete yes/no/unsure);
//! - [`results`]: per-task results (JSONL) and the summary table;
//! - [`shard`]: one batch split across machines (`--shard K/N`, `--shard auto`) and the
//!   suite identity that `ufo batch merge` checks.
//!
//! The `ufo batch` command (crate `ufo`) drives these; see this crate's README.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod eval;
pub mod getters;
pub mod kinds;
pub mod llm_eval;
pub mod results;
pub mod setup;
pub mod shard;
pub mod task;

use std::path::PathBuf;

pub use eval::{evaluate, metric, Evaluation, RunFacts};
pub use getters::{Device, GetterEnv};
pub use kinds::{
    GetterKind, MetricKind, StepKind, SUPPORTED_GETTERS, SUPPORTED_METRICS, SUPPORTED_STEPS,
};
pub use llm_eval::{judge, trajectory_text, LlmVerdict};
pub use results::{llm_eval_line, summary_table, task_lines, TaskResult, TaskStatus};
pub use setup::{run_step, SetupOptions};
pub use task::{collect_task_files, folder_name, ConfigStep, EvaluatorSpec, OneOrMany, Task};

/// Errors of batch runs. [`BatchError::Unsupported`] marks a task `skipped`; the others
/// make it `error`.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A task file that is not a valid task.
    #[error("task file {path}: {message}")]
    Task {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file or folder that cannot be read.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A config step, getter or metric this crate does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// A config step that failed.
    #[error("config step `{step}`: {message}")]
    Step {
        /// Step kind.
        step: String,
        /// What failed.
        message: String,
    },
    /// A getter with bad parameters.
    #[error("getter `{getter}`: {message}")]
    Getter {
        /// Getter type.
        getter: String,
        /// What is wrong.
        message: String,
    },
    /// A command that could not run or timed out.
    #[error("command `{command}`: {message}")]
    Command {
        /// The command.
        command: String,
        /// What happened.
        message: String,
    },
    /// A metric that cannot judge (bad rules, unreadable file).
    #[error("metric `{func}`: {message}")]
    Metric {
        /// Metric name.
        func: String,
        /// What is wrong.
        message: String,
    },
}
