//! `ufo batch TASKS...` and `ufo batch merge OUT DIR...`: the batch runner and the merge of
//! shards are `crate::batch`'s; this command hands them their plans.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::plan::{BatchPlan, MergePlan};

/// `ufo batch TASKS...` (or one task's worker).
pub(crate) fn run(
    plan: BatchPlan,
    runtime: &tokio::runtime::Runtime,
    cancel: Arc<AtomicBool>,
) -> ExitCode {
    crate::batch::batch_command(plan, runtime, cancel)
}

/// `ufo batch merge OUT DIR...`.
pub(crate) fn merge(plan: &MergePlan) -> ExitCode {
    crate::batch::shards::merge_command(plan)
}
