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
            id: id.into(),
            role: "button".into(),
            name: name.into(),
            value: None,
            rect: Rect::default(),
            enabled: true,
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
        async fn observe(&self, _w: &str) -> Result<WindowObservation, DesktopError> {
            let controls = self.controls.lock().map(|c| c.clone()).unwrap_or_default();
            Ok(WindowObservation {
                window: window(),
                controls,
                screenshot: None,
                annotated: None,
                warnings: vec![],
            })
        }
        async fn act(
            &self,
            _w: &str,
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

    struct FakeLlm(Mutex<VecDeque<Value>>);

    #[async_trait]
    impl LlmClient for FakeLlm {
        async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let next = self.0.lock().ok().and_then(|mut q| q.pop_front());
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

    #[derive(Default)]
    struct MemRecorder(Vec<Value>);

    impl Recorder for MemRecorder {
        fn event(&mut self, e: &Value) -> Result<(), RecorderError> {
            self.0.push(e.clone());
            Ok(())
        }
        fn artifact(&mut self, name: &str, _b: &[u8]) -> Result<String, RecorderError> {
            Ok(name.into())
        }
    }

    fn host(status: &str) -> Value {
        json!({"Observation": "o", "Thought": "t", "Current Sub-Task": "delete it",
               "ControlLabel": "1", "ControlText": "Doc - Writer", "Status": status})
    }

    fn app(label: &str, name: &str, status: &str) -> Value {
        json!({"Observation": "o", "Thought": "t", "ControlLabel": label, "ControlText": name,
               "Function": "click", "Args": {}, "Status": status})
    }

    struct Run {
        log: Vec<String>,
        seq: Vec<(String, String)>,
        outcome: SessionOutcome,
    }

    async fn run(answers: Vec<Value>, decision: Decision, config: Config) -> Run {
        let log: Log = Arc::default();
        let desktop = FakeDesktop {
            log: log.clone(),
            controls: Mutex::new(vec![button("del", "Delete"), button("open", "Open")]),
        };
        let llm = FakeLlm(Mutex::new(answers.into()));
        let user = FakeUser {
            log: log.clone(),
            decision,
        };
        let prompts = Prompts::new(&config.prompts).expect("templates");
        let services = Services {
            desktop: &desktop,
            host_llm: &llm,
            app_llm: &llm,
            user: &user,
            config: &config,
            prompts: &prompts,
        };
        let mut rec = MemRecorder::default();
        let outcome = Session::new(services, Box::new(AppAgentFactory))
            .run("request", &mut rec)
            .await;
        let seq = rec
            .0
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
        Run { log, seq, outcome }
    }

    fn seq(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
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
}
