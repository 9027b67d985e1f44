//! `ufo resume <OUT>`: continue a session from its checkpoint, with the options it ran with
//! (`run.json`), as far as they keep the CONFIRM gate as strong as the defaults.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use ufo_core::session::{Checkpoint, CHECKPOINT_FILE};

use crate::config::plan::{Access, ResumePlan, SessionPlan, Start};
use crate::config::{settings, ConfirmPolicy};
use crate::session::run_record::{RunRecord, RUN_RECORD};
use crate::{folder, trajectory};

/// Turn `ufo resume` options into the session of the original run, from its checkpoint.
pub(crate) fn session_plan(args: ResumePlan) -> Result<SessionPlan> {
    let read = |name: &str| -> Result<String> {
        let p = args.out.join(name);
        folder::read_capped(&p, MAX_STATE_FILE)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .with_context(|| {
                format!(
                    "cannot read {}; is {} the trajectory folder of a ufo run?",
                    p.display(),
                    args.out.display()
                )
            })
    };
    if let Some(status) = ended_status(&args.out) {
        return Err(anyhow!(
            "the session in {} already ended {status}; there is nothing to resume (a resume \
             would repeat its actions): start a new session with `ufo run`",
            args.out.display()
        ));
    }
    let checkpoint: Checkpoint = serde_json::from_str(&read(CHECKPOINT_FILE)?)
        .with_context(|| format!("{CHECKPOINT_FILE} in {} is damaged", args.out.display()))?;
    let record: RunRecord = serde_json::from_str(&read(RUN_RECORD)?)
        .with_context(|| format!("{RUN_RECORD} in {} is damaged", args.out.display()))?;
    let (confirm, config) = safe_to_resume_with(&args, &record);
    let recorded_share = crate::sharing::read(&args.out);
    if !recorded_share.is_empty() && args.access.share.is_empty() {
        eprintln!(
            "warning: {} records --share {}; not re-applied (the folder may have been written \
             by someone else): pass --share again to let those tokens reach the session",
            crate::sharing::SHARE_FILE,
            ufo_core::inert(&recorded_share.join(" --share "))
        );
    }
    let access = Access {
        share: args.access.share.clone(),
        no_shell: args.access.no_shell || record.no_shell,
    };
    Ok(SessionPlan {
        request: checkpoint.request.clone(),
        start: Start::Resume(Box::new(checkpoint)),
        desktop: args.desktop.clone().unwrap_or(record.desktop),
        remote: args.remote.clone(),
        devices: args.devices.clone(),
        recorded_devices: record.devices.clone(),
        llm: Some(args.llm.clone().unwrap_or(record.llm)),
        structured_output: args.structured_output,
        out: Some(args.out.clone()),
        // Resume appends to the trajectory in its folder; it never clears it.
        force: false,
        max_steps: Some(args.max_steps.unwrap_or(record.max_steps)),
        max_rounds: None,
        confirm,
        answers: args.answers.clone(),
        requests: None,
        config,
        vision: None,
        record: None,
        access,
        output: args.output,
    })
}

/// The confirm policy and configuration file a resume runs with: the flags given, else what
/// `run.json` recorded, but only what keeps the CONFIRM gate as strong as the defaults. The
/// trajectory folder may have been prepared by someone else, so `confirm: yes` and a
/// configuration file that weakens the gate ([`settings::file_weakens_the_gate`]) are not
/// re-applied: each is named on stderr with the flag that gives it again.
fn safe_to_resume_with(
    args: &ResumePlan,
    record: &RunRecord,
) -> (Option<ConfirmPolicy>, Option<PathBuf>) {
    let confirm = match (args.confirm, record.confirm) {
        (Some(flag), _) => Some(flag),
        (None, ConfirmPolicy::Yes) => {
            eprintln!(
                "warning: {RUN_RECORD} records --confirm yes; not re-applied (held actions are \
                 not approved on a resume): pass --confirm yes again to approve them"
            );
            None
        }
        (None, recorded) => Some(recorded),
    };
    let config = match (&args.config, &record.config) {
        (Some(flag), _) => Some(flag.clone()),
        (None, Some(recorded)) => match unsafe_to_reapply(recorded) {
            Ok(weakens) if !weakens.is_empty() => {
                eprintln!(
                    "warning: {RUN_RECORD} records --config {}, which weakens the confirmation \
                     gate or starts programs ({}); not re-applied: pass --config {} again to use it",
                    ufo_core::inert(&recorded.display().to_string()),
                    ufo_core::inert(&weakens.join("; ")),
                    ufo_core::inert(&recorded.display().to_string())
                );
                None
            }
            // unreadable or harmless: used as before (an unreadable file is then an error
            // that says what to fix)
            _ => Some(recorded.clone()),
        },
        (None, None) => None,
    };
    (confirm, config)
}

/// Why a recorded configuration file is not re-applied on a resume: how it weakens the gate
/// (including `[launch]` commands, which run unconfirmed) and the programs it starts.
fn unsafe_to_reapply(config: &Path) -> Result<Vec<String>> {
    let mut why = settings::file_weakens_the_gate(config)?;
    why.extend(settings::file_starts_programs(config)?);
    Ok(why)
}

/// The largest `checkpoint.json` / `run.json` `ufo resume` reads (bytes).
const MAX_STATE_FILE: u64 = 64 << 20;

/// The status of a session that ended for good (FINISH or FAIL), read (as a stream) from the
/// last `session_start`/`session_end` record of its trajectory in `dir`; `None` while it can
/// still be resumed (cancelled, crashed, ERROR) or when the file cannot be read (the
/// checkpoint read or the folder's lock says why).
fn ended_status(dir: &Path) -> Option<String> {
    let t = trajectory::Trajectory::load(dir, trajectory::Keep::SUMMARY).ok()?;
    let end = t.final_end()?;
    matches!(end.status.as_str(), "FINISH" | "FAIL").then(|| end.status.clone())
}
