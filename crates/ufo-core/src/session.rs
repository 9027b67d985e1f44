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
mod tests {
    //! The round loop over in-test fakes of every port, logging each port call in order.
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use serde_json::{json, Value};

    use super::*;
    use crate::agent::AppAgentFactory;
    use crate::config::Config;
    use crate::ports::*;
    use crate::prompt::Prompts;
    use crate::UiAction;

    type Log = Arc<Mutex<Vec<String>>>;

    struct FakeDesktop {
        log: Log,
        controls: Mutex<Vec<Control>>,
    }

    fn button(id: &str, name: &str) -> Control {
        Control {
            source: Default::default(),
            id: id.into(),
            role: "button".into(),
            name: name.into(),
            value: None,
            rect: Rect::default(),
            enabled: true,
            states: Default::default(),
        }
    }

    fn window() -> WindowInfo {
        WindowInfo {
            id: "w".into(),
            title: "Doc - Writer".into(),
            app_name: "Writer".into(),
            process: "writer".into(),
            pid: None,
            rect: None,
        }
    }

    #[async_trait]
    impl Desktop for FakeDesktop {
        async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
            Ok(vec![window()])
        }
        async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
            Ok(vec![])
        }
        async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
            Ok(None)
        }
        async fn observe(&self, _w: &WindowId) -> Result<WindowObservation, DesktopError> {
            let controls = self.controls.lock().map(|c| c.clone()).unwrap_or_default();
            Ok(WindowObservation {
                window: window(),
                controls,
                screenshot: None,
                annotated: None,
                warnings: vec![],
                pixels_readable: false,
                pixel_changes: None,
            })
        }
        async fn act(
            &self,
            _w: &WindowId,
            control: Option<&str>,
            action: &UiAction,
        ) -> Result<String, DesktopError> {
            self.log
                .lock()
                .map(|mut l| l.push(format!("act {} {:?}", action.name(), control)))
                .ok();
            if control == Some("open") {
                if let Ok(mut c) = self.controls.lock() {
                    c.push(button("ok", "OK"));
                }
            }
            Ok(String::new())
        }
        async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
            Err(DesktopError::UnknownApp(app.into()))
        }
        async fn shell(&self, _c: &str) -> Result<ShellOutput, DesktopError> {
            Ok(ShellOutput::default())
        }
        async fn settle(&self) {}
    }

    /// Answers in order, the prompts it got, and the notes of answers with a `_note` (what a
    /// real backend learns about its server while answering).
    struct FakeLlm(
        Mutex<VecDeque<Value>>,
        Mutex<Vec<String>>,
        Mutex<Vec<crate::ports::ModelNote>>,
    );

    #[async_trait]
    impl LlmClient for FakeLlm {
        async fn complete(&self, r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            if let Ok(mut p) = self.1.lock() {
                p.push(r.prompt_text());
            }
            let next = self.0.lock().ok().and_then(|mut q| q.pop_front());
            if let (Some(note), Ok(mut notes)) = (next.as_ref().map(|v| &v["_note"]), self.2.lock())
            {
                if let Some(now) = note.as_str() {
                    notes.push(crate::ports::ModelNote {
                        about: "structured_output".into(),
                        now: now.into(),
                        message: format!("settled on {now}"),
                    });
                }
            }
            match next {
                Some(v) => Ok(ChatResponse {
                    text: v.to_string(),
                    usage: Usage::default(),
                }),
                None => Err(LlmError::Fatal("fake model: no more answers".into())),
            }
        }
        fn describe(&self) -> String {
            "fake".into()
        }
        fn take_notes(&self) -> Vec<crate::ports::ModelNote> {
            self.2
                .lock()
                .map(|mut n| std::mem::take(&mut *n))
                .unwrap_or_default()
        }
        fn throughput(&self) -> Option<f64> {
            Some(12.34)
        }
    }

    struct FakeUser {
        log: Log,
        decision: Decision,
    }

    #[async_trait]
    impl UserIo for FakeUser {
        async fn confirm(&self, r: &ConfirmRequest) -> Decision {
            self.log
                .lock()
                .map(|mut l| l.push(format!("confirm {}", r.description)))
                .ok();
            self.decision
        }
        async fn ask(&self, _a: &str, _q: &str) -> Option<String> {
            None
        }
        async fn follow_up(&self) -> Option<String> {
            None
        }
    }

    use crate::testing::MemoryRecorder as MemRecorder;

    fn host(status: &str) -> Value {
        json!({"Observation": "o", "Thought": "t", "Current Sub-Task": "delete it",
               "ControlLabel": "1", "ControlText": "Doc - Writer", "Status": status})
    }

    fn app(label: &str, name: &str, status: &str) -> Value {
        json!({"Observation": "o", "Thought": "t", "ControlLabel": label, "ControlText": name,
               "Function": "click", "Args": {}, "Status": status})
    }

    struct FakeTools(Log);

    #[async_trait]
    impl ToolProvider for FakeTools {
        async fn tools_for(&self, app: &str) -> Result<Vec<ToolSpec>, ToolError> {
            Ok(vec![ToolSpec {
                name: "write_file".into(),
                description: format!("Write a file for {app}."),
                input_schema: json!({"type": "object", "required": ["path"]}),
                source: "fake".into(),
            }])
        }
        fn validate(&self, tool: &ToolSpec, args: &Value) -> Result<(), ToolError> {
            match args.get("path") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(ToolError::BadArgs {
                    tool: tool.name.clone(),
                    message: "\"path\" is a required property".into(),
                }),
            }
        }
        async fn call(&self, _app: &str, tool: &str, args: &Value) -> Result<String, ToolError> {
            self.0
                .lock()
                .map(|mut l| l.push(format!("tool {tool} {args}")))
                .ok();
            // a tool's own words may look like a failure's: they are its result all the same
            if args.get("path") == Some(&json!("log.txt")) {
                return Ok("action failed: 3 times (the last line of log.txt)".into());
            }
            Ok("wrote 5 bytes".into())
        }
    }

    struct Run {
        log: Vec<String>,
        prompts: Vec<String>,
        seq: Vec<(String, String)>,
        events: Vec<Value>,
        outcome: SessionOutcome,
    }

    async fn run(answers: Vec<Value>, decision: Decision, config: Config) -> Run {
        run_with(answers, decision, config, false).await
    }

    async fn run_with(answers: Vec<Value>, decision: Decision, config: Config, tools: bool) -> Run {
        let log: Log = Arc::default();
        let desktop = FakeDesktop {
            log: log.clone(),
            controls: Mutex::new(vec![button("del", "Delete"), button("open", "Open")]),
        };
        let llm = FakeLlm(
            Mutex::new(answers.into()),
            Mutex::default(),
            Mutex::default(),
        );
        let user = FakeUser {
            log: log.clone(),
            decision,
        };
        let prompts = Prompts::new(&config.prompts).expect("templates");
        let fake_tools = FakeTools(log.clone());
        let services = Services {
            desktop: &desktop,
            host_llm: &llm,
            app_llm: &llm,
            user: &user,
            config: &config,
            prompts: &prompts,
            tools: if tools { Some(&fake_tools) } else { None },
            knowledge: None,
        };
        let mut rec = MemRecorder::default();
        let outcome = Session::new(services, Box::new(AppAgentFactory))
            .run("request", &mut rec)
            .await;
        let seq = rec
            .events
            .iter()
            .filter(|e| e["type"] == "step")
            .map(|e| {
                (
                    e["role"].as_str().unwrap_or("").to_string(),
                    e["state"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let log = log.lock().map(|l| l.clone()).unwrap_or_default();
        let prompts = llm.1.lock().map(|p| p.clone()).unwrap_or_default();
        Run {
            log,
            prompts,
            seq,
            events: rec.events,
            outcome,
        }
    }

    fn seq(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// The person takes the desktop over while the host's model decides (right after its
    /// first window list), and hands it back at the first wait.
    struct PersonDesktop {
        inner: FakeDesktop,
        lists: Mutex<u32>,
        taken: Mutex<bool>,
    }

    #[async_trait]
    impl Desktop for PersonDesktop {
        async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
            if let Ok(mut n) = self.lists.lock() {
                *n += 1;
                if *n == 1 {
                    *self.taken.lock().expect("lock") = true;
                }
            }
            self.inner.windows().await
        }
        async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
            self.inner.launchable().await
        }
        async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
            self.inner.desktop_screenshot().await
        }
        async fn observe(&self, w: &WindowId) -> Result<WindowObservation, DesktopError> {
            self.inner.observe(w).await
        }
        async fn act(
            &self,
            w: &WindowId,
            control: Option<&str>,
            action: &UiAction,
        ) -> Result<String, DesktopError> {
            self.inner.act(w, control, action).await
        }
        async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
            self.inner.launch(app).await
        }
        async fn shell(&self, c: &str) -> Result<ShellOutput, DesktopError> {
            self.inner
                .log
                .lock()
                .map(|mut l| l.push(format!("shell {c}")))
                .ok();
            self.inner.shell(c).await
        }
        async fn settle(&self) {}
        fn person_input(&self) -> Option<String> {
            self.taken
                .lock()
                .ok()
                .filter(|t| **t)
                .map(|_| "key press".to_string())
        }
        async fn wait_handback(&self, _within: std::time::Duration) -> bool {
            self.inner
                .log
                .lock()
                .map(|mut l| l.push("handback".into()))
                .ok();
            *self.taken.lock().expect("lock") = false;
            true
        }
    }

    /// After a host command launched an application, its window shows a first title and
    /// takes the document's a few lists later ([`LaunchingDesktop::retitled_after`]).
    struct LaunchingDesktop {
        inner: FakeDesktop,
        launched: Mutex<bool>,
        lists: Mutex<u32>,
        retitled_after: u32,
        pauses: Mutex<u32>,
    }

    #[async_trait]
    impl Desktop for LaunchingDesktop {
        async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
            if !*self.launched.lock().expect("lock") {
                return Ok(vec![]);
            }
            let mut n = self.lists.lock().expect("lock");
            *n += 1;
            let title = if *n > self.retitled_after {
                "Doc - Writer"
            } else {
                "LibreOffice"
            };
            Ok(vec![WindowInfo {
                title: title.into(),
                ..window()
            }])
        }
        async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
            Ok(vec![])
        }
        async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
            Ok(None)
        }
        async fn observe(&self, w: &WindowId) -> Result<WindowObservation, DesktopError> {
            self.inner.observe(w).await
        }
        async fn act(
            &self,
            w: &WindowId,
            control: Option<&str>,
            action: &UiAction,
        ) -> Result<String, DesktopError> {
            self.inner.act(w, control, action).await
        }
        async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
            self.inner.launch(app).await
        }
        async fn shell(&self, _c: &str) -> Result<ShellOutput, DesktopError> {
            *self.launched.lock().expect("lock") = true;
            Ok(ShellOutput {
                launched: Some("Writer".into()),
                ..ShellOutput::default()
            })
        }
        async fn settle(&self) {}
        async fn pause(&self, _within: std::time::Duration) {
            *self.pauses.lock().expect("lock") += 1;
        }
    }

    /// The host runs `launch` (when given) in a first answer, then assigns "Doc - Writer"; the
    /// app agent finishes. What the session ended with, the desktop's pauses, the results.
    async fn assign_after(launch: bool, retitled_after: u32) -> (SessionOutcome, u32, Vec<Value>) {
        let desktop = LaunchingDesktop {
            inner: FakeDesktop {
                log: Arc::default(),
                controls: Mutex::new(vec![button("del", "Delete")]),
            },
            launched: Mutex::new(!launch),
            lists: Mutex::new(0),
            retitled_after,
            pauses: Mutex::new(0),
        };
        let mut start = host("CONTINUE");
        start["Bash"] = "libreoffice --writer doc.odt &".into();
        start["ControlLabel"] = "".into();
        start["ControlText"] = "".into();
        let mut answers = vec![];
        if launch {
            answers.push(start);
        }
        let mut assign = host("ASSIGN");
        assign["ControlLabel"] = "".into();
        answers.extend([
            assign,
            json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
            host("FINISH"),
        ]);
        let llm = FakeLlm(
            Mutex::new(answers.into()),
            Mutex::default(),
            Mutex::default(),
        );
        let user = FakeUser {
            log: Arc::default(),
            decision: Decision::Approve,
        };
        let config = Config::default();
        let prompts = Prompts::new(&config.prompts).expect("templates");
        let services = Services {
            desktop: &desktop,
            host_llm: &llm,
            app_llm: &llm,
            user: &user,
            config: &config,
            prompts: &prompts,
            tools: None,
            knowledge: None,
        };
        let mut rec = MemRecorder::default();
        let outcome = Session::new(services, Box::new(AppAgentFactory))
            .run("request", &mut rec)
            .await;
        let pauses = *desktop.pauses.lock().expect("lock");
        (outcome, pauses, rec.events)
    }

    /// A window the model names right after a launch, still under its application's first
    /// title, is waited for (the desktop listed again after each pause) and assigned; with
    /// no launch, or a name that never comes, the model hears the windows there are.
    #[tokio::test]
    async fn a_window_named_right_after_a_launch_is_waited_for() {
        let (outcome, pauses, events) = assign_after(true, 3).await;
        assert_eq!(outcome.status, SessionStatus::Finish, "{events:?}");
        assert!((1..=4).contains(&pauses), "{pauses} pauses");
        let assigned = events.iter().any(|e| {
            e["action"]["assign"] == "AppAgent/Writer" && e["action"]["window"] == "Doc - Writer"
        });
        assert!(assigned, "the window was assigned: {events:?}");

        // never retitled: the wait is bounded, and the model hears no window matches
        let (_, pauses, events) = assign_after(true, u32::MAX).await;
        assert_eq!(pauses, 32, "{events:?}");
        let told = events
            .iter()
            .filter_map(|e| e["result"].as_str())
            .any(|r| r.contains("no window matches"));
        assert!(told, "{events:?}");

        // no launch: nothing to wait for
        let (_, pauses, _) = assign_after(false, u32::MAX).await;
        assert_eq!(pauses, 0);
    }

    /// A host answer decided before the person took over is dropped (its command never runs);
    /// the loop pauses, records the hand-over, and the host decides anew.
    #[tokio::test]
    async fn a_host_answer_from_before_a_take_over_is_dropped() {
        let log: Log = Arc::default();
        let desktop = PersonDesktop {
            inner: FakeDesktop {
                log: log.clone(),
                controls: Mutex::new(vec![button("del", "Delete")]),
            },
            lists: Mutex::new(0),
            taken: Mutex::new(false),
        };
        let mut stale = host("ASSIGN");
        stale["Bash"] = "touch stale".into();
        let llm = FakeLlm(
            Mutex::new(
                vec![
                    stale,
                    host("ASSIGN"),
                    json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
                    host("FINISH"),
                ]
                .into(),
            ),
            Mutex::default(),
            Mutex::default(),
        );
        let user = FakeUser {
            log: log.clone(),
            decision: Decision::Reject,
        };
        let config = Config::default();
        let prompts = Prompts::new(&config.prompts).expect("templates");
        let services = Services {
            desktop: &desktop,
            host_llm: &llm,
            app_llm: &llm,
            user: &user,
            config: &config,
            prompts: &prompts,
            tools: None,
            knowledge: None,
        };
        let mut rec = MemRecorder::default();
        let outcome = Session::new(services, Box::new(AppAgentFactory))
            .run("request", &mut rec)
            .await;
        assert_eq!(
            outcome.status,
            SessionStatus::Finish,
            "{:?}",
            outcome.message
        );
        assert_eq!(
            log.lock().map(|l| l.clone()).unwrap_or_default(),
            vec!["handback".to_string()]
        );
        let kinds: Vec<String> = rec
            .events
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["type"].as_str().unwrap_or(""),
                    e["state"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            kinds[..5],
            [
                "session_start ",
                "step CONTINUE",
                "takeover ",
                "handback ",
                "step CONTINUE"
            ]
        );
        let dropped = &rec.events[1];
        assert_eq!(dropped["status"], "CONTINUE", "{dropped}");
        assert_eq!(dropped["action"]["discarded"], "takeover", "{dropped}");
        assert_eq!(dropped["action"]["executed"], false, "{dropped}");
    }

    #[tokio::test]
    async fn a_rejected_confirm_never_reaches_the_desktop() {
        let r = run(
            vec![
                host("ASSIGN"),
                app("1", "Delete", "CONFIRM"),
                host("FINISH"),
            ],
            Decision::Reject,
            Config::default(),
        )
        .await;
        assert_eq!(
            r.log,
            vec![
                "confirm click {\"button\":\"left\",\"double\":false} on [1] button \"Delete\""
                    .to_string()
            ]
        );
        assert_eq!(
            r.seq,
            seq(&[
                ("host", "CONTINUE"),
                ("host", "ASSIGN"),
                ("app", "CONTINUE"),
                ("app", "CONFIRM"),
                ("app", "FINISH"),
                ("host", "CONTINUE"),
                ("host", "FINISH"),
            ])
        );
        assert_eq!(r.outcome.status, SessionStatus::Finish);
    }

    /// What the model learnt about its server during a step is in that step's record, once;
    /// the configured mode is in `session_start`.
    #[tokio::test]
    async fn model_notes_are_recorded_in_the_step_they_happened_in() {
        let mut first = host("ASSIGN");
        first["_note"] = "json".into();
        let r = run(
            vec![
                first,
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
                host("FINISH"),
            ],
            Decision::Approve,
            Config {
                structured_output: crate::StructuredOutput::Json,
                ..Config::default()
            },
        )
        .await;
        assert_eq!(r.events[0]["type"], "session_start");
        assert_eq!(r.events[0]["structured_output"], "json");
        let steps: Vec<&Value> = r.events.iter().filter(|e| e["type"] == "step").collect();
        assert_eq!(
            steps[0]["model_notes"],
            json!([{"about": "structured_output", "now": "json", "message": "settled on json"}])
        );
        for later in &steps[1..] {
            assert!(later.get("model_notes").is_none(), "said once: {later}");
        }
        // the status line's tokens per second, rounded, on steps that asked the model
        assert_eq!(steps[0]["tokens_per_s"], 12.3);
    }

    #[tokio::test]
    async fn an_approved_confirm_runs_the_action_once_after_approval() {
        let r = run(
            vec![
                host("ASSIGN"),
                app("1", "Delete", "CONFIRM"),
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
                host("FINISH"),
            ],
            Decision::Approve,
            Config::default(),
        )
        .await;
        assert_eq!(
            r.log,
            vec![
                "confirm click {\"button\":\"left\",\"double\":false} on [1] button \"Delete\""
                    .to_string(),
                "act click Some(\"del\")".to_string()
            ]
        );
    }

    #[tokio::test]
    async fn only_processing_states_count_as_steps() {
        let config = Config {
            max_steps: 2,
            ..Config::default()
        };
        // host CONTINUE (1) → ASSIGN (not counted) → app CONTINUE (2) → limit.
        let r = run(
            vec![host("ASSIGN"), app("1", "Delete", "CONTINUE")],
            Decision::Approve,
            config,
        )
        .await;
        assert_eq!(r.outcome.status, SessionStatus::Fail);
        assert_eq!(r.outcome.reason, "max_steps");
        assert_eq!(r.outcome.steps, 2);
        assert_eq!(r.seq.len(), 3);
    }

    #[tokio::test]
    async fn host_steps_carry_the_plan_and_app_steps_do_not() {
        let mut planned = host("ASSIGN");
        planned["Plan"] = json!(["delete it", "report back"]);
        let r = run(
            vec![planned, app("1", "Delete", "FINISH"), host("FINISH")],
            Decision::Approve,
            Config::default(),
        )
        .await;
        let plans: Vec<(String, Value)> = r
            .events
            .iter()
            .filter(|e| e["type"] == "step")
            .map(|e| {
                (
                    e["role"].as_str().unwrap_or("").to_string(),
                    e["plan"].clone(),
                )
            })
            .collect();
        let first = plans
            .iter()
            .find(|(role, _)| role == "host")
            .expect("a host step");
        assert_eq!(first.1, json!(["delete it", "report back"]), "{plans:?}");
        assert!(
            plans
                .iter()
                .filter(|(role, _)| role == "app")
                .all(|(_, p)| p.is_null()),
            "{plans:?}"
        );
    }

    #[tokio::test]
    async fn screenshot_goes_to_continue_when_nothing_new_appeared() {
        // Click "Open" (reveals OK) with SCREENSHOT; in SCREENSHOT, OK is new, so a further
        // SCREENSHOT is honoured; the next capture shows nothing new, so SCREENSHOT → CONTINUE.
        let r = run(
            vec![
                host("ASSIGN"),
                app("2", "Open", "SCREENSHOT"),
                json!({"Observation": "o", "Thought": "t", "Status": "SCREENSHOT"}),
                json!({"Observation": "o", "Thought": "t", "Status": "SCREENSHOT"}),
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
                host("FINISH"),
            ],
            Decision::Approve,
            Config::default(),
        )
        .await;
        assert_eq!(
            r.seq,
            seq(&[
                ("host", "CONTINUE"),
                ("host", "ASSIGN"),
                ("app", "CONTINUE"),
                ("app", "SCREENSHOT"),
                ("app", "SCREENSHOT"),
                ("app", "CONTINUE"),
                ("app", "FINISH"),
                ("host", "CONTINUE"),
                ("host", "FINISH"),
            ])
        );
    }

    #[tokio::test]
    async fn tools_are_listed_validated_and_called() {
        let tool = |args: Value, status: &str| {
            json!({"Observation": "o", "Thought": "t", "Function": "write_file", "Args": args,
                   "Status": status})
        };
        let r = run_with(
            vec![
                host("ASSIGN"),
                tool(json!({}), "CONTINUE"),
                tool(json!({"path": "a.txt"}), "FINISH"),
                host("FINISH"),
            ],
            Decision::Approve,
            Config::default(),
            true,
        )
        .await;
        assert_eq!(r.outcome.status, SessionStatus::Finish);
        assert_eq!(
            r.log,
            vec!["tool write_file {\"path\":\"a.txt\"}".to_string()]
        );
        // The app prompt listed the tool; the bad Args were sent back with the schema error.
        assert!(r.prompts[1].contains("write_file: Write a file for Writer."));
        assert!(r.prompts[2].contains("\"path\" is a required property"));
        // The host saw the tool's result as the subtask's result.
        assert!(r.prompts[3].contains("wrote 5 bytes"), "{}", r.prompts[3]);
    }

    /// A list's action failed only when it failed, not when its result reads like a failure:
    /// a tool whose text starts "action failed" succeeded, and the list goes on.
    #[tokio::test]
    async fn a_list_stops_at_a_failure_not_at_its_words() {
        let list = json!({"Observation": "o", "Thought": "t", "Status": "FINISH", "Actions": [
            {"Function": "write_file", "Args": {"path": "log.txt"}},
            {"Function": "click", "Args": {}, "ControlLabel": "2", "ControlText": "Open"}]});
        let config = Config {
            multi_action: true,
            ..Config::default()
        };
        let r = run_with(
            vec![host("ASSIGN"), list, host("FINISH")],
            Decision::Approve,
            config,
            true,
        )
        .await;
        assert_eq!(r.outcome.status, SessionStatus::Finish, "{:#?}", r.events);
        assert_eq!(
            r.log,
            [
                "tool write_file {\"path\":\"log.txt\"}",
                "act click Some(\"open\")"
            ]
        );
        let step = r
            .events
            .iter()
            .find(|e| e["action"]["function"] == "batch")
            .expect("the list's step");
        assert_eq!(step["action"]["completed"], 2, "{step}");
        let result = step["result"].as_str().unwrap_or("");
        assert!(result.starts_with("ran 2 of 2 actions"), "{result}");
    }

    /// A model that sets the Ctrl-C flag during its `at`-th call (from 0), as a Ctrl-C pressed
    /// while that call runs; that call then answers, or with `cut` fails as a cut call does.
    struct CtrlCDuring {
        answers: Mutex<VecDeque<Value>>,
        calls: Mutex<usize>,
        at: usize,
        flag: Arc<AtomicBool>,
        cut: bool,
    }

    #[async_trait]
    impl LlmClient for CtrlCDuring {
        async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let n = {
                let mut c = self.calls.lock().expect("lock");
                *c += 1;
                *c - 1
            };
            let next = self.answers.lock().ok().and_then(|mut q| q.pop_front());
            if n == self.at {
                self.flag.store(true, Ordering::SeqCst);
                if self.cut {
                    return Err(LlmError::Fatal("the model call was cancelled".into()));
                }
            }
            match next {
                Some(v) => Ok(ChatResponse {
                    text: v.to_string(),
                    usage: Usage::default(),
                }),
                None => Err(LlmError::Fatal("fake model: no more answers".into())),
            }
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    async fn run_cancelled(
        answers: Vec<Value>,
        at: usize,
        cut: bool,
    ) -> (Vec<Value>, SessionOutcome) {
        let log: Log = Arc::default();
        let desktop = FakeDesktop {
            log: log.clone(),
            controls: Mutex::new(vec![button("ok", "OK")]),
        };
        let flag = Arc::new(AtomicBool::new(false));
        let llm = CtrlCDuring {
            answers: Mutex::new(answers.into()),
            calls: Mutex::default(),
            at,
            flag: flag.clone(),
            cut,
        };
        let user = FakeUser {
            log,
            decision: Decision::Approve,
        };
        let config = Config::default();
        let prompts = Prompts::new(&config.prompts).expect("templates");
        let services = Services {
            desktop: &desktop,
            host_llm: &llm,
            app_llm: &llm,
            user: &user,
            config: &config,
            prompts: &prompts,
            tools: None,
            knowledge: None,
        };
        let mut rec = MemRecorder::default();
        let outcome = Session::new(services, Box::new(AppAgentFactory))
            .with_cancel(flag)
            .run("request", &mut rec)
            .await;
        (rec.events, outcome)
    }

    fn states(events: &[Value]) -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == "step")
            .map(|e| {
                format!(
                    "{}:{}:{}",
                    e["role"].as_str().unwrap_or(""),
                    e["state"].as_str().unwrap_or(""),
                    e["status"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn ctrl_c_during_a_step_that_finishes_the_subtask_keeps_its_result() {
        let mut finish = app("1", "OK", "FINISH");
        finish["Result"] = "deleted".into();
        let (events, outcome) = run_cancelled(vec![host("ASSIGN"), finish], 1, false).await;
        assert_eq!(outcome.status, SessionStatus::Cancelled);
        assert_eq!(
            states(&events),
            [
                "host:CONTINUE:ASSIGN",
                "host:ASSIGN:ASSIGN",
                "app:CONTINUE:FINISH",
                "app:FINISH:FINISH"
            ]
        );
        let finished = events
            .iter()
            .find(|e| e["type"] == "step" && e["state"] == "FINISH")
            .expect("FINISH step");
        assert!(
            finished["result"]
                .as_str()
                .unwrap_or("")
                .contains("deleted"),
            "{finished}"
        );
    }

    #[tokio::test]
    async fn a_model_call_cut_by_ctrl_c_ends_cancelled_not_error() {
        // The AppAgent's call is cut: the subtask is archived CANCELLED, no ERROR state runs.
        let (events, outcome) =
            run_cancelled(vec![host("ASSIGN"), app("1", "OK", "FINISH")], 1, true).await;
        assert_eq!(outcome.status, SessionStatus::Cancelled);
        assert_eq!(outcome.reason, "cancelled");
        assert_eq!(
            states(&events),
            [
                "host:CONTINUE:ASSIGN",
                "host:ASSIGN:ASSIGN",
                "app:CONTINUE:ERROR"
            ]
        );
        // The host's call is cut: likewise.
        let (events, outcome) = run_cancelled(vec![host("ASSIGN")], 0, true).await;
        assert_eq!(outcome.status, SessionStatus::Cancelled);
        assert_eq!(states(&events), ["host:CONTINUE:ERROR"]);
    }
}
