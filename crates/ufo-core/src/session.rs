//! Session and Round (Module layer): how many rounds and steps, and when to stop.
//!
//! One round is the loop of docs/states.md: handle the state, stop if the round ends or the step limit
//! is hit, else move to the next state and agent. Every visited state gives one `step` record.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::agent::host::{HostAgent, HostNext, HOST_NAME};
use crate::agent::{archive, AgentFactory, Cx, Handoff, Services};
use crate::blackboard::Blackboard;
use crate::events::{self, LlmStats, StepReport, StepWho};
use crate::ports::Recorder;
use crate::status::{EndReason, HostStatus, RoundEnd};
use crate::subtask::{SubtaskHistory, SubtaskOutcome};

pub use crate::status::SessionStatus;

/// The result of a session.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    /// Final status (the last round's).
    pub status: SessionStatus,
    /// Short reason code: `finish`, `host_fail`, `max_steps`, `subtask_failed`, ...
    pub reason: String,
    /// The error or detail behind the reason, if any.
    pub message: Option<String>,
    /// Rounds run.
    pub rounds: u32,
    /// Steps counted.
    pub steps: u32,
    /// Model usage over the session.
    pub llm: LlmStats,
    /// The first trajectory-recording failure, if any.
    pub recorder_error: Option<String>,
}

/// Whose state the round loop handles next: the host's, or the cached sub-agent's of this key.
enum Cursor {
    Host,
    Sub(String),
}

/// What a session has counted so far (carried over a resume by the checkpoint).
struct Tally {
    /// Steps counted.
    steps: u32,
    /// Rounds run.
    rounds: u32,
    /// Model usage.
    llm: LlmStats,
}

/// One state handled: who handled it, and what came of it.
struct Visit {
    /// The agent's display name.
    agent: String,
    /// Its role in the trajectory (`host`, `app`, ...).
    role: &'static str,
    /// The state handled.
    state: &'static str,
    /// Whether the state ran the processor (counts as a step).
    processing: bool,
    /// What the handling produced.
    report: StepReport,
    /// Whether the round ends on the state, with which status and reason.
    end: Option<(SessionStatus, EndReason)>,
}

/// How a pause for the person ended.
enum Pause {
    /// They handed the desktop back.
    HandedBack,
    /// Ctrl-C during the pause.
    Cancelled,
    /// No hand-back within the limit (seconds).
    TimedOut(u64),
}

/// A session: one HostAgent, its cached sub-agents, the blackboard, up to `max_rounds` rounds.
pub struct Session<'a> {
    services: Services<'a>,
    host: HostAgent,
    cancel: Option<Arc<AtomicBool>>,
}

/// The file name of the checkpoint in the trajectory folder.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// What a resume needs, saved after every step as `checkpoint.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The current round's request.
    pub request: String,
    /// The round to run next.
    pub round: u32,
    /// The next step record's sequence number.
    pub seq: u64,
    /// Steps counted so far.
    pub steps: u32,
    /// Rounds completed.
    pub rounds_done: u32,
    /// Subtasks finished so far (bounded; a bare list in older checkpoints).
    pub previous_subtasks: SubtaskHistory,
    /// The host's plan.
    pub plan: Vec<String>,
    /// The blackboard.
    pub blackboard: Blackboard,
    /// Model usage so far.
    pub llm: LlmStats,
}

impl<'a> Session<'a> {
    /// A session over these services; `factory` creates the agents the host assigns to.
    pub fn new(services: Services<'a>, factory: Box<dyn AgentFactory>) -> Self {
        Self {
            services,
            host: HostAgent::new(factory),
            cancel: None,
        }
    }

    /// Stop between states once `flag` is set (e.g. by Ctrl-C): the state being handled
    /// finishes (a sub-agent's FINISH or FAIL state that follows it too, so a completed
    /// subtask is archived with its result), then the round and the session end with status
    /// CANCELLED. A model call the adapter cut because of the flag fails the step; the session
    /// still ends CANCELLED, not ERROR.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Run the session on `request`, recording to `recorder`.
    pub async fn run(&mut self, request: &str, recorder: &mut dyn Recorder) -> SessionOutcome {
        self.follow(request, Vec::new(), recorder).await
    }

    /// Run the session on `request` with the host's plan set to `plan` from the start (a
    /// given plan, for follower mode: set `mode = follower` in the config so that the
    /// AppAgent's FINISH ends the round). With an empty plan this is [`Session::run`].
    pub async fn follow(
        &mut self,
        request: &str,
        plan: Vec<String>,
        recorder: &mut dyn Recorder,
    ) -> SessionOutcome {
        let mut blackboard = Blackboard::new(self.services.config.blackboard.clone());
        blackboard.add_request(request);
        let start = Checkpoint {
            request: request.to_string(),
            round: 0,
            seq: 0,
            steps: 0,
            rounds_done: 0,
            previous_subtasks: SubtaskHistory::default(),
            plan,
            blackboard,
            llm: LlmStats::default(),
        };
        self.run_from(start, false, recorder).await
    }

    /// Continue a cancelled or crashed session from its last checkpoint, with the desktop as
    /// it is now: a new round on the same request, with the blackboard, previous subtasks and
    /// plan restored.
    pub async fn resume(
        &mut self,
        mut checkpoint: Checkpoint,
        recorder: &mut dyn Recorder,
    ) -> SessionOutcome {
        checkpoint
            .blackboard
            .set_limits(self.services.config.blackboard.clone());
        self.run_from(checkpoint, true, recorder).await
    }

    async fn run_from(
        &mut self,
        start: Checkpoint,
        resumed: bool,
        recorder: &mut dyn Recorder,
    ) -> SessionOutcome {
        let first = self.start_record(&start, resumed);
        let mut tally = Tally {
            steps: start.steps,
            rounds: start.rounds_done,
            llm: start.llm,
        };
        self.host.set_plan(start.plan);
        let mut cx = Cx {
            services: self.services,
            recorder,
            blackboard: start.blackboard,
            request: start.request,
            previous_subtasks: start.previous_subtasks,
            round: start.round,
            seq: start.seq,
            round_failures: 0,
            forced_end: None,
            fail_reason: None,
            io_error: None,
            device_lost: None,
        };
        cx.record(&events::Record::SessionStart(first));
        let end = self.run_rounds(&mut cx, &mut tally).await;
        end_session(cx, end, tally)
    }

    /// The `session_start` record; a resumed part says where it goes on from.
    fn start_record(&self, start: &Checkpoint, resumed: bool) -> events::SessionStart {
        let mut first = events::session_start(
            &start.request,
            self.services.config,
            &self.services.host_llm.describe(),
            &self.services.app_llm.describe(),
        );
        if resumed {
            first.resumed = Some(true);
            first.round = Some(start.round);
            first.seq = Some(start.seq);
        }
        first
    }

    /// Run rounds until one is cancelled, the trajectory cannot be written, a limit is
    /// reached, or the person has no follow-up request; the last round's end.
    async fn run_rounds(&mut self, cx: &mut Cx<'_>, tally: &mut Tally) -> RoundEnd {
        let config = self.services.config;
        loop {
            let end = self.run_round(cx, tally).await;
            self.close_round(cx, &end, tally);
            if end.status == SessionStatus::Cancelled
                || cx.io_error.is_some()
                || tally.rounds >= config.max_rounds.max(1)
                || tally.steps >= config.max_steps
            {
                return end;
            }
            let Some(next) = self.services.user.follow_up().await else {
                return end;
            };
            begin_round(cx, next);
        }
    }

    /// Count the round, write its `round_end` record, and save the blackboard and the
    /// checkpoint.
    fn close_round(&self, cx: &mut Cx<'_>, end: &RoundEnd, tally: &mut Tally) {
        tally.rounds += 1;
        cx.record(&events::round_end(
            cx.round,
            end.status,
            end.reason.as_str(),
            end.message.as_deref(),
            tally.steps,
        ));
        save_blackboard(cx);
        let cancelled = end.status == SessionStatus::Cancelled;
        // A cancelled round is not done: a resume runs it again.
        self.checkpoint(
            cx,
            tally.steps,
            tally.rounds - u32::from(cancelled),
            tally.llm,
            cancelled,
        );
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::SeqCst))
    }

    /// Whether `cursor` is on a sub-agent state that closes a completed subtask without a
    /// model call or an action and without ending the round (the AppAgent's FINISH and FAIL).
    fn closing_subtask(&mut self, cursor: &Cursor) -> bool {
        match cursor {
            Cursor::Host => false,
            Cursor::Sub(key) => self.host.agent_mut(key).is_some_and(|a| {
                !a.is_processing() && a.is_subtask_end() && a.round_end().is_none()
            }),
        }
    }

    /// Wait while the person has the desktop (bounded by `takeover_limit_s`, in short slices
    /// so that Ctrl-C ends the wait), recording the `takeover` and `handback` records.
    async fn pause(&self, cx: &mut Cx<'_>, input: String, steps: u32) -> Pause {
        const SLICE: Duration = Duration::from_millis(200);
        let limit_s = self.services.config.takeover_limit_s;
        let limit = Duration::from_secs(limit_s);
        cx.record(&events::Record::Takeover(events::Takeover {
            ts: None,
            round: cx.round,
            seq: cx.seq,
            steps,
            input,
        }));
        let started = Instant::now();
        let user = self.services.user;
        let _ = user.handback_requested(true).await;
        let outcome = loop {
            if self.cancelled() {
                break Pause::Cancelled;
            }
            let left = limit.saturating_sub(started.elapsed());
            if left.is_zero() {
                break Pause::TimedOut(limit_s);
            }
            if self.services.desktop.wait_handback(left.min(SLICE)).await {
                break Pause::HandedBack;
            }
            if user.handback_requested(false).await {
                self.services.desktop.hand_back();
                break Pause::HandedBack;
            }
        };
        let how = match outcome {
            Pause::HandedBack => "handed_back",
            Pause::Cancelled => "cancelled",
            Pause::TimedOut(_) => "timeout",
        };
        cx.record(&events::Record::Handback(events::Handback {
            ts: None,
            round: cx.round,
            seq: cx.seq,
            steps,
            how: how.into(),
            paused_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }));
        outcome
    }

    /// Save what a resume needs (`checkpoint.json`).
    fn checkpoint(
        &self,
        cx: &mut Cx<'_>,
        steps: u32,
        rounds_done: u32,
        llm: LlmStats,
        same_round: bool,
    ) {
        let cp = Checkpoint {
            request: cx.request.clone(),
            round: if same_round { cx.round } else { cx.round + 1 },
            seq: cx.seq,
            steps,
            rounds_done,
            previous_subtasks: cx.previous_subtasks.clone(),
            plan: self.host.plan().to_vec(),
            blackboard: cx.blackboard.clone(),
            llm,
        };
        if let Ok(bytes) = serde_json::to_vec_pretty(&cp) {
            cx.save(CHECKPOINT_FILE, &bytes);
        }
    }

    /// Run one round: handle the state under the cursor, one `step` record each, until the
    /// round ends (docs/states.md).
    async fn run_round(&mut self, cx: &mut Cx<'_>, tally: &mut Tally) -> RoundEnd {
        if let Some(e) = &cx.io_error {
            return RoundEnd::io(e);
        }
        self.host.start_round();
        let mut cursor = Cursor::Host;
        loop {
            // After Ctrl-C a sub-agent's FINISH or FAIL state still runs: the step before it
            // completed the subtask, and that state only archives the result with its real
            // status (no model call, no action), so the result is kept and a resume does not
            // redo the subtask.
            if self.cancelled() && !self.closing_subtask(&cursor) {
                self.archive_cancelled(cx, &cursor);
                return RoundEnd::cancelled();
            }
            if let Some(pause) = self.person_pause(cx, tally.steps).await {
                match pause {
                    Pause::HandedBack => {}
                    // the check at the top of the loop ends the round
                    Pause::Cancelled => continue,
                    Pause::TimedOut(limit_s) => return RoundEnd::takeover_timeout(limit_s),
                }
                if let Some(e) = &cx.io_error {
                    return RoundEnd::io(e);
                }
            }
            let visit = match self.visit(cx, &cursor).await {
                Ok(visit) => visit,
                Err(end) => return end,
            };
            if let Some(end) = self.record_step(cx, visit, tally) {
                return end;
            }
            cursor = self.next_cursor(cx, cursor);
        }
    }

    /// Archive the subtask of the sub-agent under `cursor`, if any, as CANCELLED.
    fn archive_cancelled(&mut self, cx: &mut Cx<'_>, cursor: &Cursor) {
        let Cursor::Sub(key) = cursor else {
            return;
        };
        if let Some(agent) = self.host.agent_mut(key) {
            let (name, subtask) = (agent.name(), agent.subtask().to_string());
            archive(
                cx,
                &name,
                agent.state_name(),
                &subtask,
                SubtaskOutcome::Cancelled,
                "the person cancelled the session during this subtask",
                &[],
            );
        }
    }

    /// The person took the desktop over: no state runs (so no action) until they hand it
    /// back; then the step observes again and the model decides anew. `None` when they have
    /// not (or Ctrl-C was pressed, which ends the round anyway).
    async fn person_pause(&self, cx: &mut Cx<'_>, steps: u32) -> Option<Pause> {
        if self.cancelled() {
            return None;
        }
        let input = self.services.desktop.person_input()?;
        Some(self.pause(cx, input, steps).await)
    }

    /// Handle the state under `cursor`; a sub-agent missing from the cache ends the round.
    async fn visit(&mut self, cx: &mut Cx<'_>, cursor: &Cursor) -> Result<Visit, RoundEnd> {
        match cursor {
            Cursor::Host => {
                let state = self.host.state().as_str();
                let processing = self.host.is_processing();
                let report = self.host.handle(cx).await;
                let end = self.host.round_end(cx);
                Ok(Visit {
                    agent: HOST_NAME.to_string(),
                    role: "host",
                    state,
                    processing,
                    report,
                    end,
                })
            }
            Cursor::Sub(key) => {
                let Some(agent) = self.host.agent_mut(key) else {
                    return Err(RoundEnd::no_agent(key));
                };
                let state = agent.state_name();
                let processing = agent.is_processing();
                let report = agent.handle(cx).await;
                let end = agent
                    .round_end()
                    .map(|(status, reason)| (status, EndReason::named(reason)));
                Ok(Visit {
                    agent: agent.name(),
                    role: agent.role(),
                    state,
                    processing,
                    report,
                    end,
                })
            }
        }
    }

    /// What the host's and the AppAgents' models learnt since the last step (a client that
    /// serves both is drained by the first call).
    fn model_notes(&self) -> Vec<crate::ports::ModelNote> {
        let mut notes = self.services.host_llm.take_notes();
        notes.extend(self.services.app_llm.take_notes());
        notes
    }

    /// Count the visited state (when it ran the processor) and its model use, write its
    /// `step` record and the checkpoint, and say whether the round ends on it: on a failed
    /// write, on the agent's state, over `max_cost`, or at `max_steps`.
    fn record_step(&self, cx: &mut Cx<'_>, visit: Visit, tally: &mut Tally) -> Option<RoundEnd> {
        let config = self.services.config;
        if visit.processing {
            tally.steps += 1;
        }
        tally.llm.add(&visit.report.llm);
        let over_budget = config.max_cost.is_some_and(|max| tally.llm.cost > max);
        let limit = tally.steps >= config.max_steps || over_budget;
        let who = StepWho {
            round: cx.round,
            seq: cx.seq,
            agent: &visit.agent,
            role: visit.role,
            state: visit.state,
            steps: tally.steps,
            // A failed write during the step ends the round after it.
            terminal: visit.end.is_some() || limit || cx.io_error.is_some(),
        };
        let mut record = events::step(&who, &visit.report);
        // The host's plan as it stands after its step, for readers that show progress.
        if let (events::Record::Step(step), "host") = (&mut record, visit.role) {
            step.plan = self.host.plan().to_vec();
        }
        if let events::Record::Step(step) = &mut record {
            step.model_notes = self.model_notes();
            if visit.report.llm.calls > 0 {
                let llm = if visit.role == "host" {
                    self.services.host_llm
                } else {
                    self.services.app_llm
                };
                step.tokens_per_s = llm.throughput().map(|r| (r * 10.0).round() / 10.0);
            }
        }
        cx.record(&record);
        cx.seq += 1;
        // After every step, what a resume needs, in case the process dies.
        self.checkpoint(cx, tally.steps, 0, tally.llm, true);
        if let Some(e) = &cx.io_error {
            return Some(RoundEnd::io(e));
        }
        if let Some((status, reason)) = visit.end {
            let report = visit.report;
            // An ERROR reached because the remote desktop was lost says so.
            let reason = if status == SessionStatus::Error && cx.device_lost.is_some() {
                EndReason::DeviceLost
            } else {
                reason
            };
            return Some(RoundEnd::new(
                status,
                reason,
                report.error.or(report.result),
            ));
        }
        if over_budget {
            return Some(RoundEnd::budget(
                tally.llm.cost,
                config.max_cost.unwrap_or_default(),
            ));
        }
        limit.then(|| RoundEnd::max_steps(config.max_steps))
    }

    /// Where control goes after the state under `cursor`.
    fn next_cursor(&mut self, cx: &mut Cx<'_>, cursor: Cursor) -> Cursor {
        match cursor {
            Cursor::Host => match self.host.next_state() {
                HostNext::Host(_) => Cursor::Host,
                HostNext::Sub(key) => Cursor::Sub(key),
            },
            Cursor::Sub(key) => {
                let handoff = match self.host.agent_mut(&key) {
                    Some(agent) => agent.next_state(cx),
                    None => Handoff::Host(HostStatus::Error),
                };
                match handoff {
                    Handoff::Stay => Cursor::Sub(key),
                    Handoff::Host(state) => {
                        self.host.enter(state);
                        Cursor::Host
                    }
                }
            }
        }
    }
}

/// Start the next round of the session on the person's follow-up `request`.
fn begin_round(cx: &mut Cx<'_>, request: String) {
    cx.round += 1;
    cx.request = request.clone();
    cx.blackboard.add_request(request);
    cx.round_failures = 0;
    cx.forced_end = None;
    cx.fail_reason = None;
    cx.device_lost = None;
}

/// End the session on the last round's `end` and write `session_end`. A trajectory that
/// could not be written whole ends the session ERROR, even when the failure came after the
/// last step (e.g. the round's end record).
fn end_session(mut cx: Cx<'_>, mut end: RoundEnd, tally: Tally) -> SessionOutcome {
    if let Some(e) = &cx.io_error {
        if end.reason != EndReason::Io {
            end = RoundEnd::io(e);
        }
    }
    cx.record(&events::session_end(
        end.status,
        end.reason.as_str(),
        end.message.as_deref(),
        tally.rounds,
        tally.steps,
        &tally.llm,
    ));
    SessionOutcome {
        status: end.status,
        reason: end.reason.to_string(),
        message: end.message,
        rounds: tally.rounds,
        steps: tally.steps,
        llm: tally.llm,
        recorder_error: cx.io_error,
    }
}

fn save_blackboard(cx: &mut Cx<'_>) {
    if let Ok(bytes) = serde_json::to_vec_pretty(&cx.blackboard) {
        cx.save("blackboard.json", &bytes);
    }
}

#[cfg(test)]
mod tests;
