//! `ufo follow <PLAN.json>`: follower mode. The plan file holds a task and its steps; the
//! session starts with the host's plan set to those steps and `mode = follower`, so the
//! AppAgent's FINISH goes to Host FINISH and the round ends there. Everything else is
//! `ufo run`'s pipeline (`crate::commands::run`).

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cli::{FollowArgs, RunArgs};
use anyhow::{anyhow, Context, Result};
use serde::Deserialize;

/// A plan file.
#[derive(Debug, Deserialize)]
struct PlanFile {
    /// The task, in plain words.
    task: String,
    /// Its steps, in order.
    #[serde(default)]
    steps: Vec<String>,
}

fn read_plan(path: &std::path::Path) -> Result<PlanFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the plan {}", path.display()))?;
    let plan: PlanFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a plan; write {{\"task\": \"...\", \"steps\": [\"...\"]}}",
            path.display()
        )
    })?;
    if plan.task.trim().is_empty() {
        return Err(anyhow!("the plan {} has an empty \"task\"", path.display()));
    }
    Ok(plan)
}

/// `ufo follow`.
pub async fn follow_command(args: FollowArgs, cancel: Arc<AtomicBool>) -> ExitCode {
    let plan = match read_plan(&args.plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(crate::EXIT_USAGE);
        }
    };
    let run_args = RunArgs {
        request: format!(
            "{}\n(Follower mode: carry out the given plan, step by step, without changing it.)",
            plan.task
        ),
        desktop: args.desktop.clone(),
        remote: args.remote.clone(),
        llm: args.llm.clone(),
        out: args.out.clone(),
        force: args.force,
        max_steps: args.max_steps,
        max_rounds: Some(1),
        confirm: args.confirm,
        answers: None,
        requests: None,
        config: args.config.clone(),
        record: None,
        private: args.private,
        access: args.access.clone(),
        output: args.output,
    };
    crate::commands::run::run(
        run_args,
        crate::commands::run::Start::Follow(plan.steps),
        cancel,
    )
    .await
}
