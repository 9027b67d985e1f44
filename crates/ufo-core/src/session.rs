//! Session and Round (Module layer): how many rounds and steps, and when to stop.
//!
//! One round is DESIGN.md's loop: handle the state, stop if the round ends or the step limit
//! is hit, else move to the next state and agent. Every visited state gives one `step` record.

use serde::Serialize;

use crate::agent::host::{HostAgent, HostNext, HOST_NAME};
use crate::agent::{AgentFactory, Cx, Handoff, LlmStats, Services};
use crate::blackboard::Blackboard;
use crate::events::{self, StepWho};
use crate::ports::Recorder;

/// How a round or session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SessionStatus {
    /// Done.
    Finish,
    /// Could not be done.
    Fail,
    /// A system error.
    Error,
}

impl SessionStatus {
    /// Upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Finish => "FINISH",
            SessionStatus::Fail => "FAIL",
            SessionStatus::Error => "ERROR",
        }
    }
}

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

enum Cursor {
    Host,
    Sub(String),
}

/// A session: one HostAgent, its cached sub-agents, the blackboard, up to `max_rounds` rounds.
pub struct Session<'a> {
    services: Services<'a>,
    host: HostAgent,
}

impl<'a> Session<'a> {
    /// A session over these services; `factory` creates the agents the host assigns to.
    pub fn new(services: Services<'a>, factory: Box<dyn AgentFactory>) -> Self {
        Self {
            services,
            host: HostAgent::new(factory),
        }
    }

    /// Run the session on `request`, recording to `recorder`.
    pub async fn run(&mut self, request: &str, recorder: &mut dyn Recorder) -> SessionOutcome {
        let config = self.services.config;
        let mut recorder_error: Option<String> = None;
        let mut record = |rec: &mut dyn Recorder, v: &serde_json::Value| {
            if let Err(e) = rec.event(v) {
                recorder_error.get_or_insert(e.to_string());
            }
        };
        record(
            recorder,
            &events::session_start(
                request,
                config,
                &self.services.host_llm.describe(),
                &self.services.app_llm.describe(),
            ),
        );
        let mut blackboard = Blackboard::new(config.blackboard.clone());
        blackboard.add_request(request);
        let mut cx = Cx {
            services: self.services,
            recorder,
            blackboard,
            request: request.to_string(),
            previous_subtasks: Vec::new(),
            round: 0,
            seq: 0,
            round_failures: 0,
            forced_end: None,
            fail_reason: None,
        };
        let mut steps = 0u32;
        let mut total = LlmStats::default();
        let mut rounds = 0u32;
        let (status, reason, message) = loop {
            let (status, reason, message) = self
                .run_round(&mut cx, &mut steps, &mut total, &mut record)
                .await;
            rounds += 1;
            record(
                cx.recorder,
                &events::round_end(cx.round, status, &reason, message.as_deref(), steps),
            );
            save_blackboard(&mut cx);
            if rounds >= config.max_rounds.max(1) || steps >= config.max_steps {
                break (status, reason, message);
            }
            let Some(next) = self.services.user.follow_up().await else {
                break (status, reason, message);
            };
            cx.round += 1;
            cx.request = next.clone();
            cx.blackboard.add_request(next);
            cx.round_failures = 0;
            cx.forced_end = None;
            cx.fail_reason = None;
        };
        record(
            cx.recorder,
            &events::session_end(status, &reason, message.as_deref(), rounds, steps, &total),
        );
        SessionOutcome {
            status,
            reason,
            message,
            rounds,
            steps,
            llm: total,
            recorder_error,
        }
    }

    async fn run_round(
        &mut self,
        cx: &mut Cx<'_>,
        steps: &mut u32,
        total: &mut LlmStats,
        record: &mut impl FnMut(&mut dyn Recorder, &serde_json::Value),
    ) -> (SessionStatus, String, Option<String>) {
        let max_steps = self.services.config.max_steps;
        self.host.start_round();
        let mut cursor = Cursor::Host;
        loop {
            let (name, role, state, processing, report, end) = match &cursor {
                Cursor::Host => {
                    let state = self.host.state().as_str();
                    let processing = self.host.is_processing();
                    let report = self.host.handle(cx).await;
                    let end = self.host.round_end(cx);
                    (
                        HOST_NAME.to_string(),
                        "host",
                        state,
                        processing,
                        report,
                        end,
                    )
                }
                Cursor::Sub(key) => {
                    let Some(agent) = self.host.agent_mut(key) else {
                        return (
                            SessionStatus::Error,
                            "internal".into(),
                            Some(format!("no agent {key} in the cache")),
                        );
                    };
                    let state = agent.state_name();
                    let processing = agent.is_processing();
                    let report = agent.handle(cx).await;
                    let end = agent.round_end();
                    (agent.name(), agent.role(), state, processing, report, end)
                }
            };
            if processing {
                *steps += 1;
            }
            total.calls += report.llm.calls;
            total.prompt_tokens += report.llm.prompt_tokens;
            total.completion_tokens += report.llm.completion_tokens;
            let limit = *steps >= max_steps;
            let who = StepWho {
                round: cx.round,
                seq: cx.seq,
                agent: &name,
                role,
                state,
                steps: *steps,
                terminal: end.is_some() || limit,
            };
            record(cx.recorder, &events::step(&who, &report));
            cx.seq += 1;
            if let Some((status, reason)) = end {
                return (status, reason, report.error.or(report.result));
            }
            if limit {
                return (
                    SessionStatus::Fail,
                    "max_steps".into(),
                    Some(format!("the step limit ({max_steps}) was reached")),
                );
            }
            cursor = match cursor {
                Cursor::Host => match self.host.next_state() {
                    HostNext::Host(_) => Cursor::Host,
                    HostNext::Sub(key) => Cursor::Sub(key),
                },
                Cursor::Sub(key) => {
                    let handoff = match self.host.agent_mut(&key) {
                        Some(agent) => agent.next_state(cx),
                        None => Handoff::Host(crate::status::HostStatus::Error),
                    };
                    match handoff {
                        Handoff::Stay => Cursor::Sub(key),
                        Handoff::Host(state) => {
                            self.host.enter(state);
                            Cursor::Host
                        }
                    }
                }
            };
        }
    }
}

fn save_blackboard(cx: &mut Cx<'_>) {
    if let Ok(bytes) = serde_json::to_vec_pretty(&cx.blackboard) {
        cx.save("blackboard.json", &bytes);
    }
}
