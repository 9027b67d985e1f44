//! The HostAgent: decomposes the request, picks or launches an application, and assigns
//! subtasks. Its states are [`HostStatus`]; every `match` on them is exhaustive, so a new
//! state cannot be added without deciding each transition.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::context::Cx;
use super::model::{ask_model, ModelCall};
use super::resolution::{
    ambiguous_windows_message, resolve_window, WindowFit, WindowKey, WindowUnresolved,
};
use super::subagent::{AgentFactory, AgentTarget, Assignment, SubAgent};
use super::subtask_log::recent;
use crate::blackboard::QuestionAnswer;
use crate::events::StepReport;
use crate::ports::{ConfirmRequest, Decision, LaunchableApp, Screenshot, WindowId, WindowInfo};
use crate::processor::{Processor, StepError, StepRunner};
use crate::response::HostResponse;
use crate::status::{EndReason, HostStatus, SessionStatus};
use crate::step_action::{
    Act, Assigned, Chosen, HostCommand, HostDecision, Outcome, Questions, StepAction,
};
use crate::text::{clip, clip_chars};

/// How long after a launch a window the model names may still be on its way.
const LAUNCH_LATELY: Duration = Duration::from_secs(30);
/// The longest wait for a window the model names after a launch.
const NAMED_WAIT: Duration = Duration::from_secs(8);
/// How often the windows are listed again meanwhile.
const NAMED_POLL: Duration = Duration::from_millis(250);

/// The host's display name in trajectories.
pub const HOST_NAME: &str = "HostAgent";

/// Most characters of one memory line in the prompt.
const MEMORY_LINE_CHARS: usize = 1_000;
/// Most plan steps in the prompt.
const PLAN_ITEMS: usize = 30;
/// Most characters of one plan step in the prompt.
const PLAN_ITEM_CHARS: usize = 300;
/// Most characters of the last step's result in the prompt.
const LAST_RESULT_CHARS: usize = 2_000;

/// The host's strategies, by phase: DATA_COLLECTION [`CaptureDesktop`, `ListWindows`],
/// LLM_INTERACTION [`AskModel`], ACTION_EXECUTION [`RunBash`, `SelectWindow`],
/// MEMORY_UPDATE [`UpdateMemory`].
///
/// [`CaptureDesktop`]: HostStrategy::CaptureDesktop
/// [`ListWindows`]: HostStrategy::ListWindows
/// [`AskModel`]: HostStrategy::AskModel
/// [`RunBash`]: HostStrategy::RunBash
/// [`SelectWindow`]: HostStrategy::SelectWindow
/// [`UpdateMemory`]: HostStrategy::UpdateMemory
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStrategy {
    /// Take a desktop screenshot.
    CaptureDesktop,
    /// List windows and launchable applications.
    ListWindows,
    /// Build the prompt, ask the model, validate the answer (re-asking when invalid).
    AskModel,
    /// Run the answer's `Bash` command (unless the status holds or drops the action).
    RunBash,
    /// Resolve the window to ASSIGN to (launching the application when needed).
    SelectWindow,
    /// Record the step in the host's memory.
    UpdateMemory,
}

/// Where the round goes after a host state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostNext {
    /// The host, in this state.
    Host(HostStatus),
    /// The sub-agent with this cache key, in its first state.
    Sub(String),
}

/// An action the host chose: a shell command and/or a window (as the person is shown it when
/// it is held).
#[derive(Debug, Clone, Default, Serialize)]
struct HostAction {
    bash: String,
    control_label: String,
    control_text: String,
    /// Why the sensitive-action policy holds it, when the model did not ask for CONFIRM.
    #[serde(skip_serializing_if = "Option::is_none")]
    sensitive: Option<String>,
    /// The status the answer gave, which applies once the action is approved: the answer's
    /// own when the policy held it (ASSIGN to its window, FINISH), CONTINUE when the model
    /// asked CONFIRM itself (docs/states.md, HostAgent CONFIRM).
    #[serde(skip)]
    then: HostStatus,
}

/// What the host assigns to: an application window or a third-party agent.
#[derive(Debug, Clone)]
enum Target {
    Window(WindowInfo),
    Agent(AgentTarget),
}

impl HostAction {
    /// What the person is asked to approve.
    fn description(&self) -> String {
        let mut description = if self.bash.is_empty() {
            format!(
                "assign to window {} {}",
                self.control_label, self.control_text
            )
        } else if self.then == HostStatus::Assign {
            format!(
                "run shell command: {}, then assign to window {} {}",
                self.bash, self.control_label, self.control_text
            )
        } else {
            format!("run shell command: {}", self.bash)
        };
        if let Some(reason) = &self.sensitive {
            description.push_str(&format!(" ({reason})"));
        }
        description
    }

    /// The command and window, as the trajectory records them.
    fn command(&self) -> HostCommand {
        HostCommand {
            bash: self.bash.clone(),
            control_label: self.control_label.clone(),
            control_text: self.control_text.clone(),
            window: None,
        }
    }
}

impl Target {
    fn title(&self) -> &str {
        match self {
            Target::Window(w) => &w.title,
            Target::Agent(a) => &a.name,
        }
    }
}

/// The HostAgent.
pub struct HostAgent {
    state: HostStatus,
    status: HostStatus,
    processor: Processor<HostStrategy>,
    memory: Vec<String>,
    plan: Vec<String>,
    last_result: Option<String>,
    current_subtask: String,
    messages: Vec<String>,
    questions: Vec<String>,
    held: Option<HostAction>,
    selected: Option<Target>,
    agents: HashMap<String, Box<dyn SubAgent>>,
    active: Option<String>,
    factory: Box<dyn AgentFactory>,
    /// The error that sent the host to ERROR, for the round's message.
    error: Option<String>,
    /// When a command of the host's last launched an application: the window the model names
    /// next may still be on its way ([`HostStep::wait_for_named`]).
    launched_at: Option<Instant>,
}

impl HostAgent {
    /// A host that creates sub-agents with `factory`.
    pub fn new(factory: Box<dyn AgentFactory>) -> Self {
        Self {
            state: HostStatus::Continue,
            status: HostStatus::Continue,
            processor: Processor::new(
                vec![HostStrategy::CaptureDesktop, HostStrategy::ListWindows],
                vec![HostStrategy::AskModel],
                vec![HostStrategy::RunBash, HostStrategy::SelectWindow],
                vec![HostStrategy::UpdateMemory],
            ),
            memory: Vec::new(),
            plan: Vec::new(),
            last_result: None,
            current_subtask: String::new(),
            messages: Vec::new(),
            questions: Vec::new(),
            held: None,
            selected: None,
            agents: HashMap::new(),
            active: None,
            error: None,
            launched_at: None,
            factory,
        }
    }

    /// The current state.
    pub fn state(&self) -> HostStatus {
        self.state
    }

    /// The host's current plan.
    pub fn plan(&self) -> &[String] {
        &self.plan
    }

    /// Restore a plan (resume).
    pub fn set_plan(&mut self, plan: Vec<String>) {
        self.plan = plan;
    }

    /// Start a round: back to CONTINUE, with memory and cached agents kept.
    pub fn start_round(&mut self) {
        self.state = HostStatus::Continue;
        self.status = HostStatus::Continue;
        self.held = None;
        self.selected = None;
        self.active = None;
        self.error = None;
    }

    /// Enter a state (used when a sub-agent hands control back).
    pub fn enter(&mut self, state: HostStatus) {
        self.state = state;
        self.status = state;
    }

    /// The cached sub-agent with this key.
    pub fn agent_mut(&mut self, key: &str) -> Option<&mut (dyn SubAgent + 'static)> {
        self.agents.get_mut(key).map(|b| b.as_mut())
    }

    /// Whether the current state runs the processor.
    pub fn is_processing(&self) -> bool {
        match self.state {
            HostStatus::Continue => true,
            HostStatus::Assign
            | HostStatus::Finish
            | HostStatus::Fail
            | HostStatus::Error
            | HostStatus::Pending
            | HostStatus::Confirm => false,
        }
    }

    /// Whether the round ends on the current state, with status and reason.
    pub fn round_end(&self, cx: &Cx<'_>) -> Option<(SessionStatus, EndReason)> {
        match self.state {
            HostStatus::Finish => Some(
                cx.forced_end
                    .clone()
                    .unwrap_or((SessionStatus::Finish, EndReason::Finish)),
            ),
            HostStatus::Fail => Some((
                SessionStatus::Fail,
                cx.fail_reason.clone().unwrap_or(EndReason::HostFail),
            )),
            HostStatus::Error => Some((SessionStatus::Error, EndReason::HostError)),
            HostStatus::Continue
            | HostStatus::Assign
            | HostStatus::Pending
            | HostStatus::Confirm => None,
        }
    }

    /// The next state (docs/states.md's HostAgent table, "next state" column).
    pub fn next_state(&mut self) -> HostNext {
        let next = match self.state {
            HostStatus::Continue | HostStatus::Pending | HostStatus::Confirm => self.status,
            HostStatus::Assign => {
                return match &self.active {
                    Some(key) => HostNext::Sub(key.clone()),
                    // ASSIGN without an agent cannot happen after a successful handle; the
                    // handle set ERROR in that case.
                    None => HostNext::Host(HostStatus::Error),
                };
            }
            HostStatus::Finish | HostStatus::Fail | HostStatus::Error => HostStatus::Finish,
        };
        self.state = next;
        HostNext::Host(next)
    }

    /// Handle the current state.
    pub async fn handle(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let report = match self.state {
            HostStatus::Continue => self.handle_continue(cx).await,
            HostStatus::Assign => self.handle_assign(),
            HostStatus::Pending => self.handle_pending(cx).await,
            HostStatus::Confirm => self.handle_confirm(cx).await,
            HostStatus::Error => StepReport {
                status: self.state.as_str().into(),
                // The round's message: what went wrong, not null.
                error: Some(self.error.clone().unwrap_or_else(|| {
                    "the HostAgent stopped on an error; see the step before".into()
                })),
                ..StepReport::default()
            },
            HostStatus::Finish | HostStatus::Fail => StepReport {
                status: self.state.as_str().into(),
                ..StepReport::default()
            },
        };
        if self.status == HostStatus::Error && self.state != HostStatus::Error {
            self.error = report.error.clone();
        }
        report
    }

    async fn handle_continue(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let processor = self.processor.clone();
        let mut step = HostStep {
            host: self,
            cx,
            windows: Vec::new(),
            launchable: Vec::new(),
            agents: Vec::new(),
            screenshot: None,
            response: None,
            results: Vec::new(),
            report: StepReport::default(),
            transcript: String::new(),
        };
        let outcome = processor.run(&mut step).await;
        let HostStep {
            host,
            cx,
            response,
            results,
            mut report,
            transcript,
            ..
        } = step;
        if report.close(cx, "host", &transcript, outcome).is_some() {
            host.status = HostStatus::Error;
        } else if let Some(r) = &response {
            host.status = r.status;
        }
        if !results.is_empty() {
            let text = results.join("; ");
            report.result = Some(text.clone());
            host.last_result = Some(text);
        } else {
            host.last_result = None;
        }
        report.status = host.status.as_str().into();
        report.subtask = Some(host.current_subtask.clone()).filter(|s| !s.is_empty());
        report
    }

    fn handle_assign(&mut self) -> StepReport {
        let Some(target) = self.selected.clone() else {
            self.status = HostStatus::Error;
            return StepReport {
                status: "ERROR".into(),
                error: Some("ASSIGN without a selected window".into()),
                ..StepReport::default()
            };
        };
        let (key, window) = match &target {
            Target::Window(w) => (cache_key(w), w.clone()),
            Target::Agent(a) => (
                format!("agent/{}", a.name),
                WindowInfo {
                    id: WindowId::new(a.name.clone()),
                    title: a.name.clone(),
                    app_name: a.name.clone(),
                    process: "agent".into(),
                    pid: None,
                    rect: None,
                },
            ),
        };
        if !self.agents.contains_key(&key) {
            let created = match &target {
                Target::Window(w) => Some(self.factory.create(w)),
                Target::Agent(a) => self.factory.create_agent(&a.name),
            };
            let Some(agent) = created else {
                self.status = HostStatus::Error;
                return StepReport {
                    status: "ERROR".into(),
                    error: Some(format!("no agent can be created for {}", target.title())),
                    ..StepReport::default()
                };
            };
            self.agents.insert(key.clone(), agent);
        }
        let Some(agent) = self.agents.get_mut(&key) else {
            self.status = HostStatus::Error;
            return StepReport {
                status: "ERROR".into(),
                error: Some(format!("the agent for {} was not kept", target.title())),
                ..StepReport::default()
            };
        };
        agent.begin(Assignment {
            subtask: self.current_subtask.clone(),
            messages: self.messages.clone(),
            window: window.clone(),
        });
        let name = agent.name();
        self.active = Some(key.clone());
        self.status = HostStatus::Assign;
        StepReport {
            status: "ASSIGN".into(),
            subtask: Some(self.current_subtask.clone()),
            action: Some(StepAction::Assign(Assigned {
                agent: name,
                window: window.title,
                cache_key: key,
            })),
            ..StepReport::default()
        }
    }

    async fn handle_pending(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let questions = std::mem::take(&mut self.questions);
        let mut unanswered = false;
        for q in &questions {
            let answer = if cx.services.config.ask_question {
                cx.services.user.ask(HOST_NAME, q).await
            } else {
                None
            };
            unanswered |= answer.is_none();
            cx.blackboard.add_question(QuestionAnswer {
                agent: HOST_NAME.into(),
                question: q.clone(),
                answer,
            });
        }
        // Only when asking is on does a missing answer fail the round (docs/states.md, HostAgent PENDING).
        self.status = if unanswered && cx.services.config.ask_question {
            cx.fail_reason = Some(EndReason::NoAnswer);
            HostStatus::Fail
        } else {
            HostStatus::Continue
        };
        StepReport {
            status: self.status.as_str().into(),
            action: Some(StepAction::Questions(Questions {
                questions,
                answers: None,
            })),
            result: unanswered.then(|| "a question got no answer".to_string()),
            ..StepReport::default()
        }
    }

    async fn handle_confirm(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let held = self.held.take().unwrap_or_default();
        let action = serde_json::to_value(&held).unwrap_or(Value::Null);
        let decision = if cx.services.config.safe_guard {
            let description = held.description();
            cx.services
                .user
                .confirm(&ConfirmRequest {
                    agent: HOST_NAME.into(),
                    description,
                    action: action.clone(),
                })
                .await
        } else {
            Decision::Approve
        };
        let mut report = StepReport {
            action: Some(StepAction::HostDecision(HostDecision {
                held: held.command(),
                sensitive: held.sensitive.clone(),
                decision,
            })),
            ..StepReport::default()
        };
        match decision {
            Decision::Approve => self.approve(cx, &held, &mut report).await,
            Decision::Reject => {
                cx.fail_reason = Some(EndReason::Rejected);
                report.result = Some("the person rejected the action".into());
                self.status = HostStatus::Fail;
            }
        }
        report.status = self.status.as_str().into();
        report
    }
}

impl HostAgent {
    /// Remember when a command launched an application.
    fn note_launch(&mut self, launched: bool) {
        if launched {
            self.launched_at = Some(Instant::now());
        }
    }

    /// Run an approved held action; the answer's own status applies after it (ASSIGN: its
    /// window is chosen now, as it would have been had nothing been held, and the host is
    /// not asked again; FINISH), CONTINUE when the model asked CONFIRM itself.
    async fn approve(&mut self, cx: &mut Cx<'_>, held: &HostAction, report: &mut StepReport) {
        let mut results = Vec::new();
        if !held.bash.is_empty() {
            let (line, launched) = run_bash(cx, &held.bash).await;
            self.note_launch(launched);
            results.push(line);
        }
        self.status = match held.then {
            HostStatus::Assign => match self.select_held(cx, held).await {
                Ok((status, window, found)) => {
                    results.extend(found);
                    if let Some(StepAction::HostDecision(d)) = report.action.as_mut() {
                        d.held.window = window;
                    }
                    status
                }
                Err(e) => {
                    report.error = Some(e.to_string());
                    HostStatus::Error
                }
            },
            HostStatus::Finish => HostStatus::Finish,
            HostStatus::Continue
            | HostStatus::Fail
            | HostStatus::Error
            | HostStatus::Pending
            | HostStatus::Confirm => HostStatus::Continue,
        };
        if !results.is_empty() {
            let r = results.join("; ");
            self.last_result = Some(r.clone());
            report.result = Some(r);
        }
    }

    /// Resolve the window of an approved answer that said ASSIGN, by the same rule as an
    /// answer that was not held (the held command may have opened it). Returns the next
    /// state (ASSIGN, or CONTINUE when no window fits: the model hears why), the window's
    /// title and what the model is told.
    async fn select_held(
        &mut self,
        cx: &mut Cx<'_>,
        held: &HostAction,
    ) -> Result<(HostStatus, Option<String>, Vec<String>), StepError> {
        let desktop = cx.services.desktop;
        let windows = desktop.windows().await?;
        let launchable = desktop.launchable().await?;
        let agents = self.factory.agents();
        let response = HostResponse {
            observation: String::new(),
            thought: String::new(),
            current_subtask: self.current_subtask.clone(),
            message: self.messages.clone(),
            control_label: held.control_label.clone(),
            control_text: held.control_text.clone(),
            plan: self.plan.clone(),
            status: HostStatus::Assign,
            comment: String::new(),
            questions: Vec::new(),
            bash: String::new(),
        };
        let mut step = HostStep {
            host: self,
            cx,
            windows,
            launchable,
            agents,
            screenshot: None,
            response: Some(response),
            results: Vec::new(),
            report: StepReport::default(),
            transcript: String::new(),
        };
        step.select_window().await?;
        let status = step
            .response
            .as_ref()
            .map_or(HostStatus::Continue, |r| r.status);
        let window = step.host.selected.as_ref().map(|t| t.title().to_string());
        Ok((status, window, step.results))
    }
}

/// Run a shell command through the desktop and describe the outcome in one line.
/// Run a host command: what it did, for the model, and whether it launched an application.
async fn run_bash(cx: &mut Cx<'_>, command: &str) -> (String, bool) {
    match cx.services.desktop.shell(command).await {
        Ok(out) => {
            let mut s = format!(
                "ran `{command}`: exit {}",
                out.code.map_or("unknown".to_string(), |c| c.to_string())
            );
            let launched = out.launched.is_some();
            if let Some(app) = out.launched {
                s.push_str(&format!(", launched {app}"));
            }
            let stdout = out.stdout.trim();
            if !stdout.is_empty() {
                s.push_str(&format!(", stdout: {}", clip(stdout, 400)));
            }
            let stderr = out.stderr.trim();
            if !stderr.is_empty() {
                s.push_str(&format!(", stderr: {}", clip(stderr, 400)));
            }
            (s, launched)
        }
        Err(e) => (format!("shell command `{command}` failed: {e}"), false),
    }
}

/// The data of one host processor run.
struct HostStep<'s, 'a> {
    host: &'s mut HostAgent,
    cx: &'s mut Cx<'a>,
    windows: Vec<WindowInfo>,
    launchable: Vec<LaunchableApp>,
    agents: Vec<AgentTarget>,
    screenshot: Option<Screenshot>,
    response: Option<HostResponse>,
    results: Vec<String>,
    report: StepReport,
    transcript: String,
}

impl StepRunner for HostStep<'_, '_> {
    type Strategy = HostStrategy;

    async fn run(&mut self, strategy: HostStrategy) -> Result<(), StepError> {
        match strategy {
            HostStrategy::CaptureDesktop => {
                let shot = self.cx.services.desktop.desktop_screenshot().await?;
                if let Some(shot) = &shot {
                    let name = format!("step_{:04}_desktop.png", self.cx.seq);
                    if let Some(p) = self.cx.save(&name, &shot.png) {
                        self.report.artifacts.insert("screenshot".into(), p.into());
                    }
                }
                self.screenshot = shot;
                Ok(())
            }
            HostStrategy::ListWindows => {
                let d = self.cx.services.desktop;
                self.windows = d.windows().await?;
                self.launchable = d.launchable().await?;
                self.agents = self.host.factory.agents();
                Ok(())
            }
            HostStrategy::AskModel => self.ask().await,
            // The person took the desktop over while the model was deciding: its answer was
            // made on a screen that has changed, so nothing of it runs.
            HostStrategy::RunBash => match self.cx.services.desktop.person_input() {
                Some(input) => {
                    self.discard(&input);
                    Ok(())
                }
                None => self.run_bash_strategy().await,
            },
            HostStrategy::SelectWindow => self.select_window().await,
            HostStrategy::UpdateMemory => {
                let Some(r) = &self.response else {
                    return Ok(());
                };
                let host = &mut *self.host;
                host.plan = r.plan.clone();
                if !r.current_subtask.is_empty() {
                    host.current_subtask = r.current_subtask.clone();
                }
                host.messages = r.message.clone();
                host.questions = if r.questions.is_empty() && r.status == HostStatus::Pending {
                    vec![if r.comment.is_empty() {
                        "The agent needs more information to go on. What should it do?".to_string()
                    } else {
                        r.comment.clone()
                    }]
                } else {
                    r.questions.clone()
                };
                let mut line = format!("Status {}", r.status);
                if !r.current_subtask.is_empty() {
                    line.push_str(&format!(", subtask \"{}\"", r.current_subtask));
                }
                if let Some(t) = &host.selected {
                    line.push_str(&format!(", target \"{}\"", t.title()));
                }
                if !r.bash.is_empty() {
                    line.push_str(&format!(", bash `{}`", r.bash));
                }
                if !self.results.is_empty() {
                    line.push_str(&format!(" -> {}", self.results.join("; ")));
                }
                host.memory.push(line);
                self.report.thought = Some(r.thought.clone());
                Ok(())
            }
        }
    }
}

impl HostStep<'_, '_> {
    /// Run the answer's `Bash`, hold it (CONFIRM, or a command the shell policy does not
    /// allow), or drop it (PENDING, FAIL).
    /// Drop the model's answer because the person took the desktop over (`input` says how):
    /// no command, no window chosen; the host stays in CONTINUE and decides anew after the
    /// hand-back.
    fn discard(&mut self, input: &str) {
        let Some(r) = self.response.as_mut() else {
            return;
        };
        if !r.bash.trim().is_empty() || !r.control_label.is_empty() || !r.control_text.is_empty() {
            let answer = Chosen::Host(HostCommand {
                bash: r.bash.clone(),
                control_label: r.control_label.clone(),
                control_text: r.control_text.clone(),
                window: None,
            });
            self.report.action = Some(StepAction::act(answer, Outcome::Discarded));
        }
        r.status = HostStatus::Continue;
        r.bash.clear();
        r.questions.clear();
        self.results.push(format!(
            "not executed: the person took the desktop over ({input}) while this answer was \
             decided; the desktop is looked at again once they hand it back"
        ));
    }

    async fn run_bash_strategy(&mut self) -> Result<(), StepError> {
        let Some(r) = &self.response else {
            return Ok(());
        };
        let bash = r.bash.trim().to_string();
        let mut action = HostAction {
            bash: bash.clone(),
            control_label: r.control_label.clone(),
            control_text: r.control_text.clone(),
            sensitive: None,
            then: HostStatus::Continue,
        };
        let has_action =
            !bash.is_empty() || !r.control_label.is_empty() || !r.control_text.is_empty();
        let mut status = r.status;
        if !bash.is_empty()
            && matches!(
                status,
                HostStatus::Continue | HostStatus::Assign | HostStatus::Finish
            )
        {
            let launch: Vec<String> = self.launchable.iter().map(|a| a.command.clone()).collect();
            let policy = &self.cx.services.config.sensitive;
            let desktop = self.cx.services.desktop;
            let find = |name: &str| desktop.find_program(name);
            if let Some(reason) = policy.shell_reason(&bash, &launch, &find) {
                // The model did not ask, but the policy holds this command all the same; the
                // rest of the answer (its window, its FINISH) applies once it is approved.
                action.sensitive = Some(reason);
                action.then = status;
                status = HostStatus::Confirm;
            }
        }
        let chosen = Chosen::Host(action.command());
        let outcome = match status {
            HostStatus::Confirm => {
                // The gate: nothing reaches the desktop before approval.
                let sensitive = action.sensitive.clone();
                self.host.held = Some(action);
                Outcome::Held { sensitive }
            }
            HostStatus::Continue | HostStatus::Assign | HostStatus::Finish => {
                if bash.is_empty() {
                    Outcome::Chosen
                } else {
                    let (line, launched) = run_bash(self.cx, &bash).await;
                    self.host.note_launch(launched);
                    self.results.push(line);
                    Outcome::Ran { completed: None }
                }
            }
            HostStatus::Pending | HostStatus::Fail | HostStatus::Error => Outcome::NotRun,
        };
        if let Some(resp) = self.response.as_mut() {
            resp.status = status;
        }
        if has_action {
            self.report.action = Some(StepAction::act(chosen, outcome));
        }
        Ok(())
    }

    async fn ask(&mut self) -> Result<(), StepError> {
        let svc = self.cx.services;
        let windows: Vec<Value> = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| {
                json!({"label": i + 1, "title": w.title, "app_name": w.app_name, "process": w.process})
            })
            .collect();
        // Everything that grows with the session is bounded here (the host prompt stays
        // within about 16,000 tokens however many subtasks ran).
        let memory: Vec<String> = recent(&self.host.memory, svc.config.memory_in_prompt)
            .iter()
            .map(|m| clip_chars(m, MEMORY_LINE_CHARS))
            .collect();
        let mut plan: Vec<String> = self
            .host
            .plan
            .iter()
            .take(PLAN_ITEMS)
            .map(|p| clip_chars(p, PLAN_ITEM_CHARS))
            .collect();
        if self.host.plan.len() > PLAN_ITEMS {
            plan.push(format!(
                "… ({} more steps)",
                self.host.plan.len() - PLAN_ITEMS
            ));
        }
        let found = crate::lookup::retrieve(svc.knowledge, &self.cx.request, None, None).await;
        self.cx.note_knowledge(&found, &mut self.report);
        let history = &self.cx.previous_subtasks;
        let ctx = json!({
            "request": self.cx.request,
            "blackboard": self.cx.blackboard.render(),
            "windows": windows,
            "launchable": self.launchable,
            "agents": self
                .agents
                .iter()
                .enumerate()
                .map(|(i, a)| json!({"label": self.windows.len() + i + 1, "name": a.name, "description": a.description}))
                .collect::<Vec<_>>(),
            "previous_subtasks": history.recent,
            "earlier_subtasks": history.summarised,
            "earlier_summary": history.summary(),
            "plan": plan,
            "memory": memory,
            "last_result": self.host.last_result.as_deref().map(|r| clip_chars(r, LAST_RESULT_CHARS)),
            "knowledge": found.text,
        });
        let system = svc.prompts.render("host_system", &ctx)?;
        let user = svc.prompts.render("host_user", &ctx)?;
        let images = match (&self.screenshot, svc.config.screenshots_to_model) {
            (Some(s), true) => vec![(s.png.clone(), "desktop screenshot".to_string())],
            _ => Vec::new(),
        };
        let response = ask_model(
            ModelCall {
                llm: svc.host_llm,
                agent_kind: "host",
                retries: svc.config.json_parsing_retry,
                system,
                user,
                images,
                schema: Some(crate::response::host_schema()),
            },
            validate_host,
            &mut self.report.llm,
            &mut self.transcript,
        )
        .await?;
        self.response = Some(response);
        Ok(())
    }

    /// On ASSIGN, resolve the window (or third-party agent) the answer names; none found is
    /// not an ERROR: the model hears why and answers again in CONTINUE.
    async fn select_window(&mut self) -> Result<(), StepError> {
        let Some(r) = &self.response else {
            return Ok(());
        };
        if r.status != HostStatus::Assign {
            return Ok(());
        }
        let (label, text) = (r.control_label.clone(), r.control_text.clone());
        if !r.bash.trim().is_empty() {
            // The command may have opened the window: look again.
            let desktop = self.cx.services.desktop;
            self.windows = desktop.windows().await?;
            self.launchable = desktop.launchable().await?;
        }
        let mut selection = self.resolve_target(&label, &text).await;
        if matches!(selection, Selection::NoMatch) && self.named_window_may_come(&text) {
            selection = self.wait_for_named(&label, &text).await?;
        }
        match selection {
            Selection::Target(t) => {
                if let Some(StepAction::Act(Act {
                    chosen: Chosen::Host(h),
                    ..
                })) = self.report.action.as_mut()
                {
                    h.window = Some(t.title().to_string());
                }
                self.host.selected = Some(t);
            }
            // no window is picked or raised: the model sees the candidates
            Selection::Ambiguous(message) => self.answer_again(message),
            Selection::NoMatch => {
                let message = self.no_window_message(&label, &text);
                self.answer_again(message);
            }
        }
        Ok(())
    }

    /// The window or third-party agent `label` / `text` names, by one rule
    /// (docs/resolution.md, "Window resolution"); an application that is not running, named
    /// exactly, is launched rather than a window whose title merely contains its name.
    async fn resolve_target(&mut self, label: &str, text: &str) -> Selection {
        let n = self.windows.len();
        let keys: Vec<WindowKey<'_>> = self
            .windows
            .iter()
            .map(WindowKey::from)
            .chain(self.agents.iter().map(|a| WindowKey {
                id: &a.name,
                title: &a.name,
                app: &a.name,
                process: "",
            }))
            .collect();
        let found = resolve_window(label, text, &keys);
        let text = text.trim();
        let launch = self
            .launchable
            .iter()
            .find(|a| !text.is_empty() && a.name.eq_ignore_ascii_case(text));
        let weak = match &found {
            Ok((_, fit)) | Err(WindowUnresolved::Ambiguous { fit, .. }) => {
                *fit == WindowFit::PartOfTitle
            }
            Err(WindowUnresolved::NoMatch) => true,
        };
        match (found, launch) {
            (_, Some(app)) if weak => match self.cx.services.desktop.launch(&app.name).await {
                Ok(w) => {
                    self.results.push(format!("launched {}", app.name));
                    Selection::Target(Target::Window(w))
                }
                Err(e) => {
                    self.results
                        .push(format!("launching {} failed: {e}", app.name));
                    Selection::NoMatch
                }
            },
            (Ok((i, _)), _) if i < n => Selection::Target(Target::Window(self.windows[i].clone())),
            (Ok((i, _)), _) => match self.agents.get(i - n) {
                Some(a) => Selection::Target(Target::Agent(a.clone())),
                None => Selection::NoMatch,
            },
            (Err(WindowUnresolved::Ambiguous { fit, candidates }), _) => {
                Selection::Ambiguous(ambiguous_windows_message(
                    text,
                    fit,
                    &candidates,
                    &keys,
                    true,
                    "answer again with the ControlLabel of the window you mean",
                ))
            }
            (Err(WindowUnresolved::NoMatch), _) => Selection::NoMatch,
        }
    }

    /// Whether a window the model names and the desktop lacks may still come: an
    /// application was launched lately, and the name is no application ufo would launch
    /// itself (looking again must not launch it again).
    fn named_window_may_come(&self, text: &str) -> bool {
        let launchable = self
            .launchable
            .iter()
            .any(|a| a.name.eq_ignore_ascii_case(text.trim()));
        !launchable
            && self
                .host
                .launched_at
                .is_some_and(|t| t.elapsed() < LAUNCH_LATELY)
    }

    /// After a launch the window the model names may not be listed yet: an application
    /// shows a first window and retitles it once its document is in (GIMP's "GNU Image
    /// Manipulation Program" takes the image's title a moment later; under load the model
    /// named it first). The windows are listed again every [`NAMED_POLL`], at most
    /// [`NAMED_WAIT`], until one matches; what still matches nothing is told as before.
    async fn wait_for_named(&mut self, label: &str, text: &str) -> Result<Selection, StepError> {
        let until = Instant::now() + NAMED_WAIT;
        let polls = NAMED_WAIT.as_millis() / NAMED_POLL.as_millis();
        for _ in 0..polls {
            if Instant::now() >= until {
                break;
            }
            self.cx.services.desktop.pause(NAMED_POLL).await;
            self.windows = self.cx.services.desktop.windows().await?;
            match self.resolve_target(label, text).await {
                Selection::NoMatch => {}
                found => return Ok(found),
            }
        }
        Ok(Selection::NoMatch)
    }

    /// What the model is told when nothing matches: the windows there are.
    fn no_window_message(&self, label: &str, text: &str) -> String {
        let titles: Vec<String> = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| format!("[{}] {}", i + 1, w.title))
            .collect();
        format!(
            "no window matches ControlLabel {label:?} / ControlText {text:?}; the windows are: {}",
            if titles.is_empty() {
                "(none)".to_string()
            } else {
                titles.join(", ")
            }
        )
    }

    /// No window was chosen: not an ERROR; the model hears `why` and answers again.
    fn answer_again(&mut self, why: String) {
        self.results.push(why);
        self.host.selected = None;
        if let Some(resp) = self.response.as_mut() {
            resp.status = HostStatus::Continue;
        }
    }
}

/// Where an ASSIGN goes.
enum Selection {
    /// The window or agent found (or launched).
    Target(Target),
    /// Several fit equally: the message lists them.
    Ambiguous(String),
    /// None fits (or the launch failed).
    NoMatch,
}

/// Parse a host answer and check it against the transition matrix.
fn validate_host(raw: &str) -> Result<HostResponse, String> {
    let r = HostResponse::parse(raw)?;
    if !HostStatus::Continue.llm_may_go(r.status) {
        return Err(format!(
            "Status {} is not allowed for the HostAgent here; use one of: {}",
            r.status,
            HostStatus::LLM_OUTCOMES.map(HostStatus::as_str).join(", ")
        ));
    }
    if r.status == HostStatus::Assign
        && r.control_label.trim().is_empty()
        && r.control_text.trim().is_empty()
    {
        return Err(
            "Status ASSIGN needs ControlLabel or ControlText naming the window to assign to".into(),
        );
    }
    Ok(r)
}

/// The AppAgent cache key: `app_root/process_name`.
pub fn cache_key(window: &WindowInfo) -> String {
    format!("{}/{}", window.app_name, window.process)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_cannot_drive_the_host_to_error_or_screenshot() {
        let e = validate_host(r#"{"Observation":"o","Thought":"t","Status":"ERROR"}"#).unwrap_err();
        assert!(e.contains("not allowed"), "{e}");
        let e = validate_host(r#"{"Observation":"o","Thought":"t","Status":"SCREENSHOT"}"#)
            .unwrap_err();
        assert!(e.contains("unknown Status"), "{e}");
        let e =
            validate_host(r#"{"Observation":"o","Thought":"t","Status":"ASSIGN"}"#).unwrap_err();
        assert!(e.contains("ControlText"), "{e}");
        assert!(validate_host(r#"{"Observation":"o","Thought":"t","Status":"FAIL"}"#).is_ok());
    }
}
