//! What every agent works with: the session's [`Services`] and its mutable context [`Cx`]
//! (recorder, blackboard, previous subtasks, counters, and how the round is to end).

use crate::blackboard::Blackboard;
use crate::config::Config;
use crate::events::{Record, StepReport};
use crate::lookup::KnowledgeAccess;
use crate::ports::{Desktop, DesktopError, LlmClient, Recorder, ToolProvider, UserIo};
use crate::processor::{ProcessReport, StepError};
use crate::prompt::Prompts;
use crate::status::{EndReason, SessionStatus};
use crate::subtask::SubtaskHistory;

/// The services a session runs with.
#[derive(Clone, Copy)]
pub struct Services<'a> {
    /// The desktop.
    pub desktop: &'a dyn Desktop,
    /// The HostAgent's model.
    pub host_llm: &'a dyn LlmClient,
    /// The AppAgents' model.
    pub app_llm: &'a dyn LlmClient,
    /// The person.
    pub user: &'a dyn UserIo,
    /// Settings.
    pub config: &'a Config,
    /// Compiled prompt templates.
    pub prompts: &'a Prompts,
    /// Tools for the AppAgents beside the GUI functions, if any.
    pub tools: Option<&'a dyn ToolProvider>,
    /// What the agents may look up before they decide; `None` leaves the prompts as they
    /// are without knowledge.
    pub knowledge: Option<KnowledgeAccess<'a>>,
}

/// The mutable context of a session, shared by every agent.
pub struct Cx<'a> {
    /// Services.
    pub services: Services<'a>,
    /// Where the trajectory goes.
    pub recorder: &'a mut dyn Recorder,
    /// The shared blackboard.
    pub blackboard: Blackboard,
    /// The current round's request.
    pub request: String,
    /// Subtasks finished so far in the session (bounded).
    pub previous_subtasks: SubtaskHistory,
    /// Round number (from 0).
    pub round: u32,
    /// Sequence number of the step record being produced.
    pub seq: u64,
    /// Failed subtasks in this round.
    pub round_failures: u32,
    /// An outcome forced on the round by the system (e.g. `subtask_failed`).
    pub forced_end: Option<(SessionStatus, EndReason)>,
    /// Why the host moved to FAIL, if it did.
    pub fail_reason: Option<EndReason>,
    /// The first failure to record the trajectory (e.g. a full disk): the session ends
    /// ERROR, reason `io`, after the step in which it happened.
    pub io_error: Option<String>,
    /// Why the remote desktop was lost in this round ([`DesktopError::Lost`]), if it was:
    /// the step ends ERROR, and the round's reason is `device_lost`.
    pub device_lost: Option<String>,
}

impl Cx<'_> {
    /// Store an artifact and return its path; a storage failure does not fail the step, but
    /// is kept in [`Cx::io_error`] and ends the session after it.
    pub fn save(&mut self, name: &str, bytes: &[u8]) -> Option<String> {
        match self.recorder.artifact(name, bytes) {
            Ok(p) => Some(p),
            Err(e) => {
                self.io_error.get_or_insert(e.to_string());
                None
            }
        }
    }

    /// Keep what the knowledge lookup gave a step in its `report`, and record the rerank call
    /// it made (a `knowledge_rerank` record, before the step's own).
    pub fn note_knowledge(&mut self, found: &crate::lookup::Retrieved, report: &mut StepReport) {
        report.knowledge.clone_from(&found.used);
        report.knowledge_reranked = found.reranked;
        if let Some(w) = &found.warning {
            report
                .artifacts
                .insert("knowledge_warning".into(), w.clone().into());
        }
        if let Some(call) = &found.rerank_call {
            self.record(&call.record(self.seq));
        }
    }

    /// Record a trajectory record; a failure is kept in [`Cx::io_error`].
    pub fn record(&mut self, record: &Record) {
        if let Err(e) = self.recorder.event(&record.to_value()) {
            self.io_error.get_or_insert(e.to_string());
        }
    }
}

impl StepReport {
    /// Close a processor run: keep the timings, save the prompt transcript as
    /// `step_NNNN_<role>_prompt.txt`, and return the phase error's text, if any.
    pub(crate) fn close(
        &mut self,
        cx: &mut Cx<'_>,
        role: &str,
        transcript: &str,
        outcome: ProcessReport,
    ) -> Option<String> {
        self.timings_ms = outcome.timings_ms;
        let name = format!("step_{:04}_{role}_prompt.txt", cx.seq);
        if let Some(p) = cx.save(&name, transcript.as_bytes()) {
            self.artifacts.insert("prompt".into(), p.into());
        }
        if let Some(e) = &outcome.error {
            if matches!(e.error, StepError::Desktop(DesktopError::Lost(_))) {
                cx.device_lost.get_or_insert(e.to_string());
            }
        }
        let error = outcome.error.map(|e| e.to_string());
        self.error.clone_from(&error);
        error
    }
}
