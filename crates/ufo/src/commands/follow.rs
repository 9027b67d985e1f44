//! `ufo follow <PLAN.json>`: follower mode. The plan file holds a task and its steps; the
//! session starts with the host's plan set to those steps and `mode = follower`, so the
//! AppAgent's FINISH goes to Host FINISH and the round ends there. Everything else is
//! the session pipeline (`crate::session`).

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::plan::{FollowPlan, Start};
use crate::exit::EXIT_USAGE;
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

/// `ufo follow`: the plan file's task and steps, then the session pipeline.
pub async fn follow_command(mut args: FollowPlan, cancel: Arc<AtomicBool>) -> ExitCode {
    let plan = match read_plan(&args.plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    args.session.request = format!(
        "{}\n(Follower mode: carry out the given plan, step by step, without changing it.)",
        plan.task
    );
    args.session.start = Start::Follow(plan.steps);
    crate::session::run(args.session, cancel).await
}
