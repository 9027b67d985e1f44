//! The AppAgent: operates one application window, one action per step, through its labelled
//! controls. Its states are [`AppStatus`]; every `match` on them is exhaustive.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::context::Cx;
use super::follow::{WindowChange, WindowStack};
use super::model::{ask_model, ModelCall};
use super::planned::{result_text, run_batch, ui_choice, Planned};
use super::resolution::{refuse_disabled, resolve_control, unresolved_message, Unresolved};
use super::subagent::{hand_back, AgentFactory, Assignment, Ending, Handoff, SubAgent};
use super::subtask_log::{recent, SubtaskLog};
use crate::action::{canonical_name, UiAction};
use crate::blackboard::QuestionAnswer;
use crate::events::StepReport;
use crate::ports::{
    ConfirmRequest, Control, Decision, DesktopError, ToolProvider, ToolSpec, WindowId, WindowInfo,
    WindowObservation,
};
use crate::processor::{Processor, StepError, StepRunner};
use crate::response::AppResponse;
use crate::status::{AppStatus, EndReason, SessionStatus};
use crate::step_action::{Answer, Chosen, Outcome, Questions, StepAction};
use crate::subtask::SubtaskOutcome;

/// The AppAgent's strategies, by phase: DATA_COLLECTION [`Settle`, `Observe`],
/// [`ListTools`], LLM_INTERACTION [`AskModel`], ACTION_EXECUTION [`Execute`], MEMORY_UPDATE
/// [`Remember`].
///
/// [`Settle`]: AppStrategy::Settle
/// [`Observe`]: AppStrategy::Observe
/// [`ListTools`]: AppStrategy::ListTools
/// [`AskModel`]: AppStrategy::AskModel
/// [`Execute`]: AppStrategy::Execute
/// [`Remember`]: AppStrategy::Remember
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppStrategy {
    /// Wait for the UI to settle (SCREENSHOT only).
    Settle,
    /// Observe the window: controls, labels, screenshots.
    Observe,
    /// List the tools (e.g. MCP) this application's agent may call.
    ListTools,
    /// Build the prompt, ask the model, validate (re-asking when invalid).
    AskModel,
    /// Resolve the control and run the action, or hold it (CONFIRM).
    Execute,
    /// Record the step in memory.
    Remember,
}

/// An action held by the CONFIRM gate.
#[derive(Debug, Clone)]
struct Held {
    planned: Planned,
    /// Why the sensitive-action policy holds it, when the model did not ask for CONFIRM.
    sensitive: Option<String>,
}

/// The AppAgent of one application.
pub struct AppAgent {
    /// The window observed now: the top of `windows`.
    window: WindowInfo,
    /// The assigned window and the windows its actions opened (docs/desktop.md, "Windows an action
    /// opens").
    windows: WindowStack,
    /// The desktop's windows when last listed, to tell which window an action opened.
    known_windows: Option<Vec<WindowInfo>>,
    /// An action ran since the windows were last listed: list them before observing.
    look_for_windows: bool,
    state: AppStatus,
    status: AppStatus,
    processor: Processor<AppStrategy>,
    log: SubtaskLog,
    /// Controls (id, name) seen in the last observation, to tell what is new.
    last_seen: Vec<(String, String)>,
    /// The last observation showed controls the model had not seen before.
    reannotated: bool,
    /// The window id and controls of the last observation, to say what changed since.
    last_controls: Option<(WindowId, Vec<Control>)>,
    questions: Vec<String>,
    held: Option<Held>,
    rejected: bool,
}

impl AppAgent {
    /// A new AppAgent for this window.
    pub fn new(window: WindowInfo) -> Self {
        Self {
            windows: WindowStack::new(window.clone()),
            known_windows: None,
            look_for_windows: false,
            window,
            state: AppStatus::Continue,
            status: AppStatus::Continue,
            processor: Processor::new(
                vec![
                    AppStrategy::Settle,
                    AppStrategy::Observe,
                    AppStrategy::ListTools,
                ],
                vec![AppStrategy::AskModel],
                vec![AppStrategy::Execute],
                vec![AppStrategy::Remember],
            ),
            log: SubtaskLog::default(),
            last_seen: Vec::new(),
            reannotated: false,
            last_controls: None,
            questions: Vec::new(),
            held: None,
            rejected: false,
        }
    }

    /// The current state.
    pub fn state(&self) -> AppStatus {
        self.state
    }

    fn archive(&mut self, cx: &mut Cx<'_>, status: SubtaskOutcome) -> StepReport {
        let name = self.name();
        self.log.archive(cx, &name, self.state.as_str(), status)
    }

    async fn handle_processing(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let processor = self.processor.clone();
        let fresh = self.state == AppStatus::Screenshot;
        let mut step = AppStep {
            agent: self,
            cx,
            fresh,
            obs: None,
            changes: None,
            tools: Vec::new(),
            response: None,
            result: None,
            report: StepReport::default(),
            transcript: String::new(),
        };
        let outcome = processor.run(&mut step).await;
        let AppStep {
            agent,
            cx,
            response,
            result,
            mut report,
            transcript,
            ..
        } = step;
        let closed = report
            .close(cx, "app", &transcript, outcome)
            .or_else(|| cx.device_lost.clone());
        if let Some(error) = closed {
            report.error = Some(error.clone());
            agent.status = AppStatus::Error;
            agent.log.error = Some(error);
        } else if let Some(r) = &response {
            agent.status = r.status;
        }
        agent.log.last_result = result.clone();
        report.result = result;
        report.status = agent.status.as_str().into();
        report.subtask = Some(agent.log.subtask.clone());
        report
    }

    async fn handle_pending(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let questions = std::mem::take(&mut self.questions);
        let name = self.name();
        let mut answers = Vec::new();
        for q in &questions {
            let answer = if cx.services.config.ask_question {
                cx.services.user.ask(&name, q).await
            } else {
                None
            };
            answers.push(answer.clone());
            // An unanswered question is noted on the blackboard (docs/states.md, AppAgent PENDING).
            cx.blackboard.add_question(QuestionAnswer {
                agent: name.clone(),
                question: q.clone(),
                answer,
            });
        }
        self.status = AppStatus::Continue;
        StepReport {
            status: "CONTINUE".into(),
            subtask: Some(self.log.subtask.clone()),
            action: Some(StepAction::Questions(Questions {
                questions,
                answers: Some(answers),
            })),
            ..StepReport::default()
        }
    }

    async fn handle_confirm(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let Some(held) = self.held.take() else {
            // Nothing was held (CONFIRM without an action): nothing to approve.
            self.status = AppStatus::Continue;
            return StepReport {
                status: "CONTINUE".into(),
                subtask: Some(self.log.subtask.clone()),
                result: Some("CONFIRM without an action; nothing to approve".into()),
                ..StepReport::default()
            };
        };
        let mut described = held.planned.describe();
        if let Some(reason) = &held.sensitive {
            described.push_str(&format!(" ({reason})"));
        }
        let chosen = held.planned.chosen();
        let decision = if cx.services.config.safe_guard {
            cx.services
                .user
                .confirm(&ConfirmRequest {
                    agent: self.name(),
                    description: described.clone(),
                    action: chosen.to_value(),
                })
                .await
        } else {
            Decision::Approve
        };
        let mut report = StepReport {
            subtask: Some(self.log.subtask.clone()),
            action: Some(StepAction::act(chosen, Outcome::Decided(decision))),
            ..StepReport::default()
        };
        match decision {
            Decision::Approve => {
                let r = result_text(held.planned.run(cx, &self.window).await);
                self.look_for_windows = true;
                self.log
                    .actions
                    .push(format!("{described} (approved) -> {r}"));
                self.log
                    .memory
                    .push(format!("approved and ran {described} -> {r}"));
                self.log.last_result = Some(r.clone());
                report.result = Some(r);
                self.status = AppStatus::Continue;
            }
            Decision::Reject => {
                self.rejected = true;
                self.log
                    .memory
                    .push(format!("the person rejected {described}"));
                self.log.result = format!("the person rejected the action: {described}");
                report.result = Some(self.log.result.clone());
                self.status = AppStatus::Finish;
            }
        }
        report.status = self.status.as_str().into();
        report
    }
}

#[async_trait]
impl SubAgent for AppAgent {
    fn name(&self) -> String {
        format!("AppAgent/{}", self.window.app_name)
    }

    fn role(&self) -> &'static str {
        "app"
    }

    fn begin(&mut self, a: Assignment) {
        self.windows = WindowStack::new(a.window.clone());
        self.known_windows = None;
        self.look_for_windows = false;
        self.window = a.window;
        self.state = AppStatus::Continue;
        self.status = AppStatus::Continue;
        self.held = None;
        self.rejected = false;
        self.log.begin(a.subtask, a.messages);
    }

    fn state_name(&self) -> &'static str {
        self.state.as_str()
    }

    fn subtask(&self) -> &str {
        &self.log.subtask
    }

    fn is_processing(&self) -> bool {
        match self.state {
            AppStatus::Continue | AppStatus::Screenshot => true,
            AppStatus::Finish
            | AppStatus::Fail
            | AppStatus::Error
            | AppStatus::Pending
            | AppStatus::Confirm => false,
        }
    }

    async fn handle(&mut self, cx: &mut Cx<'_>) -> StepReport {
        match self.state {
            AppStatus::Continue | AppStatus::Screenshot => self.handle_processing(cx).await,
            AppStatus::Pending => self.handle_pending(cx).await,
            AppStatus::Confirm => self.handle_confirm(cx).await,
            AppStatus::Finish => {
                let status = if self.rejected {
                    SubtaskOutcome::Rejected
                } else {
                    SubtaskOutcome::Finish
                };
                self.archive(cx, status)
            }
            AppStatus::Fail => {
                cx.round_failures += 1;
                self.archive(cx, SubtaskOutcome::Fail)
            }
            AppStatus::Error => self.archive(cx, SubtaskOutcome::Error),
        }
    }

    fn round_end(&self) -> Option<(SessionStatus, String)> {
        match self.state {
            AppStatus::Error => Some((SessionStatus::Error, EndReason::AppError.to_string())),
            AppStatus::Continue
            | AppStatus::Screenshot
            | AppStatus::Finish
            | AppStatus::Fail
            | AppStatus::Pending
            | AppStatus::Confirm => None,
        }
    }

    fn is_subtask_end(&self) -> bool {
        match self.state {
            AppStatus::Finish | AppStatus::Fail | AppStatus::Error => true,
            AppStatus::Continue
            | AppStatus::Screenshot
            | AppStatus::Pending
            | AppStatus::Confirm => false,
        }
    }

    fn next_state(&mut self, cx: &mut Cx<'_>) -> Handoff {
        let next = match self.state {
            AppStatus::Continue => self.status,
            AppStatus::Screenshot => {
                // Another SCREENSHOT while nothing new appeared: nothing is left to
                // re-annotate, so go on in CONTINUE.
                if self.status == AppStatus::Screenshot && !self.reannotated {
                    AppStatus::Continue
                } else {
                    self.status
                }
            }
            AppStatus::Pending => AppStatus::Continue,
            AppStatus::Confirm => self.status,
            AppStatus::Finish => return hand_back(cx, Ending::Finish),
            AppStatus::Fail => return hand_back(cx, Ending::Fail),
            AppStatus::Error => return hand_back(cx, Ending::Error),
        };
        self.state = next;
        Handoff::Stay
    }
}

/// Why the sensitive-action policy holds a planned action (any action of a list). A
/// `click_at` is judged by the control of `obs` under its point, like a `click` on it.
fn sensitive_reason(
    policy: &crate::sensitive::SensitivePolicy,
    planned: &Planned,
    obs: Option<&WindowObservation>,
) -> Option<String> {
    match planned {
        Planned::Ui {
            action: action @ UiAction::ClickAt { x, y },
            control,
            ..
        } => {
            let under = obs.and_then(|o| crate::sensitive::control_at(o, *x, *y));
            policy.action_reason(action, under.or(control.as_ref()))
        }
        Planned::Ui {
            action, control, ..
        } => policy.action_reason(action, control.as_ref()),
        Planned::Tool { name, .. } => policy.tool_reason(name),
        Planned::Batch(list) => list.iter().find_map(|p| sensitive_reason(policy, p, obs)),
    }
}

/// One control as the AppAgent prompt's control list gets it.
fn prompt_control(label: usize, c: &Control) -> Value {
    let mut v = json!({"label": label, "role": c.role, "name": c.name, "value": c.value,
           "enabled": c.enabled, "states": state_words(&c.states)});
    // only a control read in the pixels says where it comes from: prompts of runs without
    // detection stay as they were (docs/sight.md)
    if let (false, Some(o)) = (c.source.is_tree(), v.as_object_mut()) {
        o.insert("source".into(), json!(c.source));
    }
    v
}

/// The states a model sees beside a control (`focused`, `checked`, ...), in a fixed order.
fn state_words(s: &crate::ports::ControlStates) -> Vec<&'static str> {
    [
        (s.focused, "focused"),
        (s.checked, "checked"),
        (s.selected, "selected"),
        (s.expanded, "expanded"),
        (s.editable, "editable"),
    ]
    .into_iter()
    .filter_map(|(on, word)| on.then_some(word))
    .chain(s.place.words())
    .collect()
}

/// Turn one chosen function into a planned action: a tool call, or a GUI function on the
/// control resolved from the label and text. The error is the step's result.
fn plan(
    function: &str,
    args: &Value,
    label: &str,
    text: &str,
    obs: &WindowObservation,
    tools: &[ToolSpec],
) -> Result<Planned, String> {
    let function = function.trim();
    if canonical_name(function).is_none() {
        if let Some(tool) = tools.iter().find(|t| t.name == function) {
            return Ok(Planned::Tool {
                name: tool.name.clone(),
                args: args.clone(),
            });
        }
    }
    let action = UiAction::parse(function, args)?;
    let control = if action.needs_control() {
        match resolve_control(label, text, &obs.controls, action.name()) {
            Ok(i) => Some(obs.controls[i].clone()),
            // a spreadsheet cell the observation does not list is named by its address
            Err(Unresolved::NoMatch) if cell_of_table(text, &obs.controls).is_some() => {
                cell_of_table(text, &obs.controls)
            }
            Err(why) => {
                return Err(unresolved_message(
                    &why,
                    label,
                    text,
                    action.name(),
                    &obs.controls,
                ))
            }
        }
    } else {
        None
    };
    let label = match &control {
        Some(c) => obs
            .controls
            .iter()
            .position(|x| x.id == c.id)
            .map(|i| (i + 1).to_string())
            .unwrap_or_default(),
        None => String::new(),
    };
    // A control listed as disabled: fail now, before any CONFIRM and before the desktop.
    if let Some(why) = control
        .as_ref()
        .and_then(|c| refuse_disabled(&action, c, &label))
    {
        return Err(why);
    }
    Ok(Planned::Ui {
        action,
        control,
        label,
    })
}

/// A spreadsheet cell named by its address (`A7`, `$B$12`) that the observation does not list
/// (an empty cell: listing every empty cell would blow the prompt): the cell of the window's
/// only `table` control, as a control whose id is the table's id, `#` and the address. The
/// desktop resolves that id to the cell; a desktop that does not know such ids says so.
pub fn cell_of_table(text: &str, controls: &[Control]) -> Option<Control> {
    let address = cell_address(text)?;
    let mut tables = controls.iter().filter(|c| c.role == "table");
    let table = tables.next()?;
    if tables.next().is_some() {
        return None;
    }
    Some(Control {
        source: Default::default(),
        id: format!("{}#{address}", table.id),
        role: "table cell".to_string(),
        name: address,
        value: None,
        rect: table.rect,
        enabled: table.enabled,
        states: Default::default(),
    })
}

/// An A1-style cell address in canonical form (`b7` and `$B$7` give `B7`): one to three
/// letters, then a row number from 1 to 1,048,576.
pub fn cell_address(text: &str) -> Option<String> {
    let t: String = text.trim().chars().filter(|c| *c != '$').collect();
    let letters = t.chars().take_while(|c| c.is_ascii_alphabetic()).count();
    let (col, row) = t.split_at(letters);
    if !(1..=3).contains(&letters) || row.is_empty() || !row.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u32 = row.parse().ok()?;
    if n == 0 || n > 1_048_576 || row.starts_with('0') {
        return None;
    }
    Some(format!("{}{n}", col.to_ascii_uppercase()))
}

/// The tools as prompt lines.
fn tools_text(tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "Tools (call one with \"Function\": its name and \"Args\" matching its schema; no control needed):\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- {}: {} Args schema: {}\n",
            t.name, t.description, t.input_schema
        ));
    }
    s
}

/// What the AppAgent's memory line says of the action it chose: `, FUNCTION ARGS on [LABEL]
/// CONTROL` (a list, `, batch null on [] `: its actions are in the result).
fn memory_note(chosen: &Chosen) -> String {
    let none = Value::Null;
    let (function, args, label, text) = match chosen {
        Chosen::Ui(u) => (
            u.function.as_str(),
            &u.args,
            u.control_label.as_str(),
            u.control.as_ref().map_or("", |c| c.text.as_str()),
        ),
        Chosen::Tool(t) => (t.name.as_str(), &t.args, "", ""),
        Chosen::Batch(_) => ("batch", &none, "", ""),
        Chosen::Answer(a) => (
            a.function.as_str(),
            &a.args,
            a.control_label.as_str(),
            a.control_text.as_str(),
        ),
        // (other agents' choices, which an AppAgent does not make)
        Chosen::Host(h) => ("", &none, h.control_label.as_str(), h.control_text.as_str()),
        Chosen::Shell(_) => ("shell", &none, "", ""),
        Chosen::AtPoint(p) => (
            p.function.as_str(),
            &p.args,
            "",
            p.control_text.as_deref().unwrap_or(""),
        ),
    };
    format!(", {function} {args} on [{label}] {text}")
}

/// The data of one AppAgent processor run.
struct AppStep<'s, 'a> {
    agent: &'s mut AppAgent,
    cx: &'s mut Cx<'a>,
    fresh: bool,
    obs: Option<WindowObservation>,
    /// What changed in the window since the last observation (one line), when known.
    changes: Option<String>,
    tools: Vec<ToolSpec>,
    response: Option<AppResponse>,
    result: Option<String>,
    report: StepReport,
    transcript: String,
}

impl StepRunner for AppStep<'_, '_> {
    type Strategy = AppStrategy;

    async fn run(&mut self, strategy: AppStrategy) -> Result<(), StepError> {
        match strategy {
            AppStrategy::Settle => {
                if self.fresh {
                    self.cx.services.desktop.settle().await;
                }
                Ok(())
            }
            AppStrategy::Observe => self.observe().await,
            AppStrategy::ListTools => {
                self.list_tools().await;
                Ok(())
            }
            AppStrategy::AskModel => self.ask().await,
            AppStrategy::Execute => {
                // The person took the desktop over while the model was deciding: the answer
                // was made on a screen that has changed, so it is dropped, not executed.
                match self.cx.services.desktop.person_input() {
                    Some(input) => self.discard(&input),
                    None => self.execute().await,
                }
                Ok(())
            }
            AppStrategy::Remember => {
                let Some(r) = &self.response else {
                    return Ok(());
                };
                let agent = &mut *self.agent;
                agent.questions = if r.questions.is_empty() && r.status == AppStatus::Pending {
                    vec![if r.comment.is_empty() {
                        "The agent needs more information to go on. What should it do?".to_string()
                    } else {
                        r.comment.clone()
                    }]
                } else {
                    r.questions.clone()
                };
                if !r.result.is_empty() {
                    agent.log.result = r.result.clone();
                }
                let mut line = format!("Status {}", r.status);
                if let Some(StepAction::Act(a)) = &self.report.action {
                    line.push_str(&memory_note(&a.chosen));
                }
                if let Some(res) = &self.result {
                    line.push_str(&format!(" -> {res}"));
                }
                agent.log.memory.push(line);
                self.report.thought = Some(r.thought.clone());
                Ok(())
            }
        }
    }
}

impl AppStep<'_, '_> {
    async fn observe(&mut self) -> Result<(), StepError> {
        self.follow_windows(false).await;
        let desktop = self.cx.services.desktop;
        let obs = match desktop.observe(&self.agent.window.id).await {
            // a followed window closed by other means than the agent's action: the window
            // before it returns
            Err(DesktopError::NoWindow(_)) if self.agent.windows.depth() > 1 => {
                self.follow_windows(true).await;
                desktop.observe(&self.agent.window.id).await?
            }
            other => other?,
        };
        let seen: Vec<(String, String)> = obs
            .controls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        self.agent.reannotated = seen.iter().any(|s| !self.agent.last_seen.contains(s));
        self.agent.last_seen = seen;
        // what changed since the last observation of the same window (the action's evidence)
        let window_id = self.agent.window.id.clone();
        if let Some((id, before)) = &self.agent.last_controls {
            if *id == window_id {
                let mut line = super::changes::diff(before, &obs.controls).line();
                // and what changed in the pixels, where the desktop compared them
                if let Some(px) = &obs.pixel_changes {
                    line.push('\n');
                    line.push_str(&crate::vision::pixel_changes::evidence_line(px));
                }
                self.report
                    .artifacts
                    .insert("observation_changes".into(), line.clone().into());
                self.changes = Some(line);
            }
        }
        self.agent.last_controls = Some((window_id, obs.controls.clone()));
        let seq = self.cx.seq;
        if let Some(s) = &obs.screenshot {
            if let Some(p) = self
                .cx
                .save(&format!("step_{seq:04}_screenshot.png"), &s.png)
            {
                self.report.artifacts.insert("screenshot".into(), p.into());
            }
        }
        if let Some(s) = &obs.annotated {
            if let Some(p) = self
                .cx
                .save(&format!("step_{seq:04}_annotated.png"), &s.png)
            {
                self.report.artifacts.insert("annotated".into(), p.into());
            }
        }
        if !obs.warnings.is_empty() {
            self.report
                .artifacts
                .insert("observation_warnings".into(), obs.warnings.clone().into());
        }
        self.obs = Some(obs);
        Ok(())
    }

    /// After an action (or at the first observation of a subtask, or when `forced`), list the
    /// windows once and follow the one the action opened or return from the one that closed
    /// (the decision is [`WindowStack::follow`]); the model hears of a switch in its next
    /// prompt and the step records it as `window_change`.
    async fn follow_windows(&mut self, forced: bool) {
        let agent = &mut *self.agent;
        if !(forced || agent.look_for_windows || agent.known_windows.is_none()) {
            return;
        }
        agent.look_for_windows = false;
        let after = match self.cx.services.desktop.windows().await {
            Ok(list) => list,
            Err(e) => {
                self.report.artifacts.insert(
                    "window_warning".into(),
                    format!("the window list could not be read, so a window the action opened is not followed: {e}").into(),
                );
                return;
            }
        };
        let before = agent
            .known_windows
            .replace(after.clone())
            .unwrap_or_else(|| after.clone());
        let changes = agent.windows.follow(&before, &after);
        if changes.is_empty() {
            return;
        }
        agent.window = agent.windows.current().clone();
        let note = changes
            .iter()
            .map(WindowChange::note)
            .collect::<Vec<_>>()
            .join("; ");
        agent.log.last_result = Some(match agent.log.last_result.take() {
            Some(r) if !r.is_empty() => format!("{r}; {note}"),
            _ => note.clone(),
        });
        agent.log.memory.push(format!("Window: {note}"));
        self.report.window_change = Some(Value::Array(
            changes.iter().map(WindowChange::record).collect(),
        ));
    }

    async fn ask(&mut self) -> Result<(), StepError> {
        let Some(obs) = &self.obs else {
            return Err(StepError::NoObservation);
        };
        let svc = self.cx.services;
        let controls: Vec<Value> = obs
            .controls
            .iter()
            .enumerate()
            .map(|(i, c)| prompt_control(i + 1, c))
            .collect();
        let memory = recent(&self.agent.log.memory, svc.config.memory_in_prompt);
        let window = &obs.window;
        let application = if window.process.is_empty() {
            &window.app_name
        } else {
            &window.process
        };
        let found = crate::lookup::retrieve(
            svc.knowledge,
            &self.cx.request,
            Some(&self.agent.log.subtask),
            Some(application),
        )
        .await;
        self.cx.note_knowledge(&found, &mut self.report);
        let ctx = json!({
            "subtask": self.agent.log.subtask,
            "messages": self.agent.log.messages,
            "request": self.cx.request,
            "blackboard": self.cx.blackboard.render(),
            "window_title": obs.window.title,
            "fresh": self.fresh,
            "controls": controls,
            "memory": memory,
            "last_result": self.agent.log.last_result,
            "changes": self.changes,
            "extra_functions": tools_text(&self.tools),
            "read_pixels": obs.pixels_readable,
            "multi_action": svc.config.multi_action,
            "knowledge": found.text,
        });
        let system = svc.prompts.render("app_system", &ctx)?;
        let user = svc.prompts.render("app_user", &ctx)?;
        let images = match (
            &obs.annotated,
            &obs.screenshot,
            svc.config.screenshots_to_model,
        ) {
            (Some(a), _, true) => vec![(a.png.clone(), "annotated screenshot".to_string())],
            (None, Some(s), true) => vec![(s.png.clone(), "screenshot".to_string())],
            _ => Vec::new(),
        };
        let from = self.agent.state;
        let tools = self.tools.clone();
        let response = ask_model(
            ModelCall {
                llm: svc.app_llm,
                agent_kind: "app",
                retries: svc.config.json_parsing_retry,
                system,
                user,
                images,
                schema: Some(crate::response::app_schema(svc.config.multi_action)),
            },
            |raw| validate_app(raw, from, &tools, svc.tools, svc.config.multi_action),
            &mut self.report.llm,
            &mut self.transcript,
        )
        .await?;
        self.response = Some(response);
        Ok(())
    }

    async fn execute(&mut self) {
        let (Some(r), Some(obs)) = (&self.response, &self.obs) else {
            return;
        };
        if !r.actions.is_empty() {
            let mut list = Vec::new();
            for (i, a) in r.actions.iter().enumerate() {
                match plan(
                    &a.function,
                    &a.args,
                    &a.control_label,
                    &a.control_text,
                    obs,
                    &self.tools,
                ) {
                    Ok(p) => list.push(p),
                    Err(e) => {
                        if list.is_empty() {
                            self.nothing_to_confirm();
                            self.result = Some(format!("action 1 of the list: {e}"));
                            return;
                        }
                        // Run what can run; the model hears where the list stopped.
                        self.result = Some(format!("action {} of the list: {e}", i + 1));
                        break;
                    }
                }
            }
            let planned = Planned::Batch(list);
            self.carry_out(planned).await;
            return;
        }
        if r.function.trim().is_empty() {
            return;
        }
        let planned = match plan(
            &r.function,
            &r.args,
            &r.control_label,
            &r.control_text,
            obs,
            &self.tools,
        ) {
            Ok(p) => p,
            Err(e) => {
                if let Ok(action) = UiAction::parse(&r.function, &r.args) {
                    let chosen = ui_choice(&action, None, &r.control_label);
                    self.report.action = Some(StepAction::act(chosen, Outcome::NotRun));
                }
                self.nothing_to_confirm();
                self.result = Some(e);
                return;
            }
        };
        self.carry_out(planned).await;
    }

    /// The answer's action could not be planned (no such control, a disabled one): a CONFIRM
    /// has nothing to ask about, so the agent goes on in CONTINUE and the model hears why.
    fn nothing_to_confirm(&mut self) {
        if let Some(r) = self.response.as_mut() {
            if r.status == AppStatus::Confirm {
                r.status = AppStatus::Continue;
            }
        }
    }

    /// Drop the model's answer because the person took the desktop over (`input` says how):
    /// nothing runs, the agent stays in CONTINUE, and its next step (after the hand-back)
    /// observes the window again and asks the model anew.
    fn discard(&mut self, input: &str) {
        let Some(r) = self.response.as_mut() else {
            return;
        };
        if !r.function.trim().is_empty() || !r.actions.is_empty() {
            let answer = Chosen::Answer(Answer {
                function: r.function.clone(),
                args: r.args.clone(),
                control_label: r.control_label.clone(),
                control_text: r.control_text.clone(),
            });
            self.report.action = Some(StepAction::act(answer, Outcome::Discarded));
        }
        r.status = AppStatus::Continue;
        r.questions.clear();
        r.result.clear();
        self.result = Some(format!(
            "not executed: the person took the desktop over ({input}) after the window was \
             observed; it is observed again once they hand it back"
        ));
    }

    /// Hold, run or drop the planned action according to the status (and the sensitive-action
    /// policy), and record it.
    async fn carry_out(&mut self, planned: Planned) {
        let Some(r) = &self.response else {
            return;
        };
        let mut status = r.status;
        let mut sensitive = None;
        if matches!(
            status,
            AppStatus::Continue | AppStatus::Screenshot | AppStatus::Finish
        ) {
            let policy = &self.cx.services.config.sensitive;
            sensitive = sensitive_reason(policy, &planned, self.obs.as_ref());
            if sensitive.is_some() {
                // The model did not ask, but the policy holds this action all the same.
                status = AppStatus::Confirm;
            }
        }
        if let Some(resp) = self.response.as_mut() {
            resp.status = status;
        }
        let chosen = planned.chosen();
        let outcome = match status {
            AppStatus::Confirm => {
                // The gate: the action is held, not executed, until the person approves.
                self.agent.held = Some(Held {
                    planned,
                    sensitive: sensitive.clone(),
                });
                self.result = Some("held for confirmation".into());
                Outcome::Held { sensitive }
            }
            AppStatus::Continue | AppStatus::Screenshot | AppStatus::Finish => {
                self.run_now(&planned).await
            }
            AppStatus::Pending | AppStatus::Fail | AppStatus::Error => Outcome::NotRun,
        };
        self.report.action = Some(StepAction::act(chosen, outcome));
    }

    /// Run the planned action now, and note its result: in the subtask's actions, for the
    /// model, and (a read that did not fail) as the subtask's result.
    async fn run_now(&mut self, planned: &Planned) -> Outcome {
        let (run, completed) = match planned {
            Planned::Batch(list) => {
                let seen = self.obs.as_ref().map(|o| o.controls.clone());
                let (out, done) = run_batch(self.cx, &self.agent.window, list, seen).await;
                // A cut-short list is news the model must see: keep going.
                if done < list.len() {
                    if let Some(resp) = self.response.as_mut() {
                        if resp.status == AppStatus::Finish {
                            resp.status = AppStatus::Continue;
                        }
                    }
                }
                (Ok(out), Some(done))
            }
            _ => (planned.run(self.cx, &self.agent.window).await, None),
        };
        let failed = run.is_err();
        let out = result_text(run);
        self.agent
            .log
            .actions
            .push(format!("{} -> {out}", planned.describe()));
        let reads_text = matches!(
            planned,
            Planned::Ui {
                action: UiAction::ReadText,
                ..
            }
        );
        // reading opens no window; anything else may have
        if !reads_text {
            self.agent.look_for_windows = true;
        }
        if (reads_text || matches!(planned, Planned::Tool { .. })) && !failed {
            self.agent.log.result = out.clone();
        }
        self.result = Some(match self.result.take() {
            // A list planned only in part: say which action could not be planned.
            Some(note) => format!("{out}; {note}"),
            None => out,
        });
        Outcome::Ran { completed }
    }

    /// List the tools this application's AppAgent may call. A provider that cannot list them
    /// is a warning, not a failed step: the GUI functions still work.
    async fn list_tools(&mut self) {
        let Some(provider) = self.cx.services.tools else {
            return;
        };
        match provider.tools_for(&self.agent.window.app_name).await {
            Ok(tools) => self.tools = tools,
            Err(e) => {
                self.tools.clear();
                self.report
                    .artifacts
                    .insert("tool_warning".into(), e.to_string().into());
            }
        }
    }
}

/// Parse an app answer, check the status against the matrix and the function against the
/// function table or the tools (their Args against the tool's schema).
fn validate_app(
    raw: &str,
    from: AppStatus,
    tools: &[ToolSpec],
    provider: Option<&dyn ToolProvider>,
    multi: bool,
) -> Result<AppResponse, String> {
    let r = AppResponse::parse(raw)?;
    if !from.llm_may_go(r.status) {
        return Err(format!(
            "Status {} is not allowed for the AppAgent in {from}",
            r.status
        ));
    }
    if !r.actions.is_empty() {
        if !multi {
            return Err(
                "several Actions in one answer are turned off; give one action with Function and Args"
                    .into(),
            );
        }
        for (i, a) in r.actions.iter().enumerate() {
            check_function(&a.function, &a.args, tools, provider)
                .map_err(|e| format!("Actions[{i}]: {e}"))?;
        }
        return Ok(r);
    }
    check_function(&r.function, &r.args, tools, provider)?;
    Ok(r)
}

/// A function must be a GUI function with valid Args, or a tool whose schema the Args match.
fn check_function(
    function: &str,
    args: &Value,
    tools: &[ToolSpec],
    provider: Option<&dyn ToolProvider>,
) -> Result<(), String> {
    let function = function.trim();
    if function.is_empty() {
        return Ok(());
    }
    if canonical_name(function).is_none() {
        if let (Some(tool), Some(provider)) = (tools.iter().find(|t| t.name == function), provider)
        {
            return provider.validate(tool, args).map_err(|e| e.to_string());
        }
    }
    UiAction::parse(function, args).map_err(|e| {
        if tools.is_empty() {
            e
        } else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            format!("{e}; or one of the tools: {}", names.join(", "))
        }
    })?;
    Ok(())
}

/// The default factory: an AppAgent per application window.
#[derive(Debug, Default, Clone, Copy)]
pub struct AppAgentFactory;

impl AgentFactory for AppAgentFactory {
    fn create(&self, window: &WindowInfo) -> Box<dyn SubAgent> {
        Box::new(AppAgent::new(window.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14: the model sees a control's states beside it, in a fixed order.
    #[test]
    fn states_are_words_in_a_fixed_order() {
        let s = crate::ports::ControlStates {
            editable: true,
            focused: true,
            ..Default::default()
        };
        assert_eq!(state_words(&s), ["focused", "editable"]);
        let below = crate::ports::ControlStates {
            place: crate::ports::Place::Below,
            ..Default::default()
        };
        assert_eq!(
            state_words(&below),
            ["below, out of view: scrolled to when used"]
        );
        assert!(state_words(&Default::default()).is_empty());
    }

    /// The copied-line rule (docs/resolution.md, "Control resolution") reads the lines the built-in prompt
    /// renders: `control_line` is that format.
    #[test]
    fn the_prompt_renders_control_lines_as_resolution_reads_them() {
        let prompts = crate::prompt::Prompts::new(&Default::default()).expect("templates");
        let mut a = Control {
            source: Default::default(),
            id: "a".into(),
            role: "spin button".into(),
            name: "Green \"x\"".into(),
            value: Some("3 \"q\"".into()),
            rect: Default::default(),
            enabled: false,
            states: crate::ports::ControlStates {
                focused: true,
                editable: true,
                ..Default::default()
            },
        };
        let mut b = a.clone();
        b.role = "menu".into();
        b.name = "Slide".into();
        b.value = None;
        b.enabled = true;
        b.states = Default::default();
        a.id = "b".into();
        let controls = [prompt_control(1, &a), prompt_control(2, &b)];
        let text = prompts
            .render("app_user", &json!({"controls": controls}))
            .expect("renders");
        for (i, c) in [&a, &b].into_iter().enumerate() {
            let line = super::super::resolution::control_line(i + 1, c, &state_words(&c.states));
            assert!(
                text.contains(&format!("  {line}\n")),
                "{line:?} not in\n{text}"
            );
        }
    }

    fn sheet_obs(controls: Vec<(&str, &str, &str)>) -> WindowObservation {
        WindowObservation {
            window: WindowInfo {
                id: "w".into(),
                title: "Untitled 1 - LibreOffice Calc".into(),
                app_name: "soffice".into(),
                process: "soffice.bin".into(),
                pid: None,
                rect: None,
            },
            controls: controls
                .into_iter()
                .map(|(id, role, name)| Control {
                    source: Default::default(),
                    id: id.into(),
                    role: role.into(),
                    name: name.into(),
                    value: None,
                    rect: Default::default(),
                    enabled: true,
                    states: Default::default(),
                })
                .collect(),
            screenshot: None,
            annotated: None,
            warnings: Vec::new(),
            pixels_readable: false,
            pixel_changes: None,
        }
    }

    /// Issue 11, item 2: `ControlText: "A7"` names cell A7 even when the observation does not
    /// list it (empty cells are summarised): it goes to the sheet, with the address in the id.
    #[test]
    fn an_unlisted_cell_address_resolves_to_the_sheet() {
        let obs = sheet_obs(vec![
            (":1.5/sheet#A1", "table cell", "A1"),
            (":1.5/sheet", "table", "Sheet Sheet1"),
            (":1.5/box", "text", "Name Box"),
        ]);
        let args = json!({"text": "7"});
        let Planned::Ui { control, .. } =
            plan("set_edit_text", &args, "", "a7", &obs, &[]).unwrap()
        else {
            panic!("not a GUI action")
        };
        let c = control.unwrap();
        assert_eq!((c.id.as_str(), c.name.as_str()), (":1.5/sheet#A7", "A7"));
        // a listed cell resolves to itself, as any control does
        let Planned::Ui { control, .. } =
            plan("set_edit_text", &args, "", "A1", &obs, &[]).unwrap()
        else {
            panic!("not a GUI action")
        };
        assert_eq!(control.unwrap().id, ":1.5/sheet#A1");
        // not an address, or no sheet: no control, as before
        assert!(plan("set_edit_text", &args, "", "Total", &obs, &[]).is_err());
        let no_sheet = sheet_obs(vec![(":1.5/box", "text", "Name Box")]);
        assert!(plan("set_edit_text", &args, "", "A7", &no_sheet, &[]).is_err());
        assert_eq!(cell_address("$AB$12").as_deref(), Some("AB12"));
        assert_eq!(cell_address("A0"), None);
        assert_eq!(cell_address("ABCD1"), None);
        assert_eq!(cell_address("A01"), None);
        assert_eq!(cell_address("XFD1048576").as_deref(), Some("XFD1048576"));
        assert_eq!(cell_address("A1048577"), None);
    }

    #[test]
    fn unknown_functions_are_invalid_answers() {
        let e = validate_app(
            r#"{"Observation":"o","Thought":"t","Function":"drag","Status":"CONTINUE"}"#,
            AppStatus::Continue,
            &[],
            None,
            false,
        )
        .unwrap_err();
        assert!(e.contains("unknown function"), "{e}");
        assert!(validate_app(
            r#"{"Observation":"o","Thought":"t","Function":"click_input","Args":{},"Status":"SCREENSHOT"}"#,
            AppStatus::Continue,
            &[],
            None,
            false
        )
        .is_ok());
    }
}
