//! `ufo run <REQUEST>`: one session on the request, as its plan says; the pipeline is
//! `crate::session`'s.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::plan::SessionPlan;

/// `ufo run`.
pub(crate) async fn run(plan: SessionPlan, cancel: Arc<AtomicBool>) -> ExitCode {
    crate::session::run(plan, cancel).await
}
