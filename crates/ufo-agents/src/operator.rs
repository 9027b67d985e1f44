//! The operator agent: a coordinate-based computer-use agent for applications whose control
//! tree is poor. Each step it sends the window's screenshot (no control list) to the model
//! with a coordinate prompt and performs the answer at window pixels: `click` at x,y
//! (`click_at`), or `type` text into whatever is at x,y.
//!
//! Its states are [`OperatorStatus`]: CONTINUE, FINISH, FAIL, ERROR. An action the
//! sensitive-action policy flags (a click on a control named "Delete All" — the control under
//! the point is judged, as for `click_at` —, `click_at` listed in `[sensitive] functions`,
//! typing into a password field) is shown to the person through
//! [`UserIo::confirm`](ufo_core::UserIo::confirm) before it runs, within the step.

use async_trait::async_trait;
use ufo_core::agent::{ask_model, Assignment, Cx, Handoff, ModelCall, StepReport, SubAgent};
use ufo_core::sensitive::control_at;
use ufo_core::step_action::{Chosen, Outcome, PointAction, StepAction};
use ufo_core::{ConfirmRequest, Decision, SessionStatus, UiAction, WindowInfo, WindowObservation};

use crate::common::{clip, hand_back, recent, Ending, Fields, SubtaskLog, SubtaskOutcome};

/// The operator agent's model kind (the `agent` of its model requests and script lines).
pub const OPERATOR_KIND: &str = "operator";

/// The operator agent's states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorStatus {
    /// Look at the screenshot, ask the model, act at coordinates.
    Continue,
    /// The subtask is done.
    Finish,
    /// The subtask cannot be done.
    Fail,
    /// A system error: the round ends.
    Error,
}

impl OperatorStatus {
    /// The upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorStatus::Continue => "CONTINUE",
            OperatorStatus::Finish => "FINISH",
            OperatorStatus::Fail => "FAIL",
            OperatorStatus::Error => "ERROR",
        }
    }

    fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "CONTINUE" => Ok(OperatorStatus::Continue),
            "FINISH" => Ok(OperatorStatus::Finish),
            "FAIL" => Ok(OperatorStatus::Fail),
            other => Err(format!(
                "unknown Status {other:?} for the operator agent; use CONTINUE, FINISH or FAIL"
            )),
        }
    }
}

/// What the operator does at a point.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Move {
    None,
    Click { x: i32, y: i32 },
    Type { x: i32, y: i32, text: String },
}

#[derive(Debug, Clone)]
struct OperatorResponse {
    thought: String,
    action: Move,
    status: OperatorStatus,
    result: String,
}

fn parse_response(raw: &str) -> Result<OperatorResponse, String> {
    let f = Fields::parse(raw)?;
    let status = OperatorStatus::parse(&f.text("Status"))?;
    let kind = f.text("Action").to_ascii_lowercase();
    let point = || -> Result<(i32, i32), String> {
        let x = f.number("X").ok_or("the action needs X (window pixels)")?;
        let y = f.number("Y").ok_or("the action needs Y (window pixels)")?;
        let x = i32::try_from(x).map_err(|_| "X is out of range".to_string())?;
        let y = i32::try_from(y).map_err(|_| "Y is out of range".to_string())?;
        if x < 0 || y < 0 {
            return Err("X and Y must be 0 or more".into());
        }
        Ok((x, y))
    };
    let action = match kind.as_str() {
        "" | "none" => Move::None,
        "click" | "click_at" | "left_click" => {
            let (x, y) = point()?;
            Move::Click { x, y }
        }
        "type" | "type_at" => {
            let (x, y) = point()?;
            let text = f.text("Text");
            if text.is_empty() {
                return Err("Action type needs Text".into());
            }
            Move::Type { x, y, text }
        }
        other => return Err(format!("unknown Action {other:?}; use click, type or none")),
    };
    Ok(OperatorResponse {
        thought: f.text("Thought"),
        action,
        status,
        result: f.text("Result"),
    })
}

const SYSTEM_PROMPT: &str = "You are an operator agent: you use a computer by looking at a \
screenshot of one application window and acting at pixel coordinates in that window (origin \
top-left). You carry out one subtask, one action per step.\n\
Answer with exactly one JSON object:\n\
{\"Observation\": \"what the screenshot shows\", \"Thought\": \"your reasoning\", \
\"Action\": \"click|type|none\", \"X\": 0, \"Y\": 0, \"Text\": \"text to type (type only)\", \
\"Status\": \"CONTINUE|FINISH|FAIL\", \"Result\": \"the subtask's result when you FINISH\"}\n\
click: a left click at (X, Y). type: type Text into the field at (X, Y). none: no action. \
Status: CONTINUE acts and shows you the new screenshot; FINISH acts (if any) and ends the \
subtask; FAIL ends it as impossible (no action).";

/// The operator agent of one window.
pub struct OperatorAgent {
    window: WindowInfo,
    state: OperatorStatus,
    status: OperatorStatus,
    log: SubtaskLog,
}

impl OperatorAgent {
    /// An operator agent for this window.
    pub fn new(window: WindowInfo) -> Self {
        Self {
            window,
            state: OperatorStatus::Continue,
            status: OperatorStatus::Continue,
            log: SubtaskLog::default(),
        }
    }

    /// The current state.
    pub fn state(&self) -> OperatorStatus {
        self.state
    }

    fn fail_step(&mut self, mut report: StepReport, error: String) -> StepReport {
        self.status = OperatorStatus::Error;
        self.log.error = Some(error.clone());
        report.error = Some(error);
        report.status = "ERROR".into();
        report.subtask = Some(self.log.subtask.clone());
        report
    }

    async fn handle_continue(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let mut report = StepReport::default();
        let started = std::time::Instant::now();
        let obs = match cx.services.desktop.observe(&self.window.id).await {
            Ok(o) => o,
            Err(e) => return self.fail_step(report, e.to_string()),
        };
        if let Some(s) = &obs.screenshot {
            let name = format!("step_{:04}_screenshot.png", cx.seq);
            if let Some(p) = cx.save(&name, &s.png) {
                report.artifacts.insert("screenshot".into(), p.into());
            }
        }
        let r = match self.ask(cx, &obs, &mut report).await {
            Ok(r) => r,
            Err(e) => return self.fail_step(report, e.to_string()),
        };
        report.thought = Some(r.thought.clone());
        let runs = matches!(r.status, OperatorStatus::Continue | OperatorStatus::Finish);
        if r.action != Move::None {
            let (record, out) = self.perform(cx, &obs, &r.action, runs).await;
            report.action = record;
            report.result = out;
        }
        self.remember(&r, &report);
        self.status = r.status;
        report.timings_ms.insert(
            "total".into(),
            (started.elapsed().as_millis() as u64).into(),
        );
        report.status = r.status.as_str().into();
        report.subtask = Some(self.log.subtask.clone());
        report
    }

    /// Show the model the window's screenshot and ask for the next move; the prompt and every
    /// answer are saved as the step's `prompt` artifact.
    async fn ask(
        &self,
        cx: &mut Cx<'_>,
        obs: &WindowObservation,
        report: &mut StepReport,
    ) -> Result<OperatorResponse, ufo_core::processor::StepError> {
        let svc = cx.services;
        let (width, height) = obs
            .screenshot
            .as_ref()
            .map_or((0, 0), |s| (s.width, s.height));
        let user = format!(
            "Subtask: {}\n{}Whole request: {}\nWindow: {} ({}x{} pixels)\n\nBlackboard (shared by all agents):\n{}\n\nYour steps so far:\n{}\n\nResult of your last action: {}\n",
            self.log.subtask,
            if self.log.messages.is_empty() {
                String::new()
            } else {
                format!("Hints from the host: {}\n", self.log.messages.join("; "))
            },
            cx.request,
            obs.window.title,
            width,
            height,
            cx.blackboard.render(),
            recent(&self.log.memory, svc.config.memory_in_prompt),
            self.log.last_result.as_deref().unwrap_or("(none)"),
        );
        let images = obs
            .screenshot
            .as_ref()
            .map(|s| vec![(s.png.clone(), "window screenshot".to_string())])
            .unwrap_or_default();
        let mut transcript = String::new();
        let asked = ask_model(
            ModelCall {
                llm: svc.app_llm,
                agent_kind: OPERATOR_KIND,
                retries: svc.config.json_parsing_retry,
                system: SYSTEM_PROMPT.to_string(),
                user,
                images,
                schema: Some(ufo_core::response::operator_schema()),
            },
            parse_response,
            &mut report.llm,
            &mut transcript,
        )
        .await;
        let name = format!("step_{:04}_operator_prompt.txt", cx.seq);
        if let Some(p) = cx.save(&name, transcript.as_bytes()) {
            report.artifacts.insert("prompt".into(), p.into());
        }
        asked
    }

    /// Note the step in the subtask's log: the model's result, a memory line with the
    /// action's record, the result the next prompt shows.
    fn remember(&mut self, r: &OperatorResponse, report: &StepReport) {
        if !r.result.is_empty() {
            self.log.result = r.result.clone();
        }
        let mut line = format!("Status {}", r.status.as_str());
        if let Some(a) = &report.action {
            line.push_str(&format!(", {}", a.to_value()));
        }
        if let Some(res) = &report.result {
            line.push_str(&format!(" -> {}", clip(res, 400)));
        }
        self.log.memory.push(line);
        self.log.last_result = report.result.clone();
    }

    /// Run a move (or record it as not run); returns its record and result text.
    async fn perform(
        &mut self,
        cx: &mut Cx<'_>,
        obs: &WindowObservation,
        mv: &Move,
        runs: bool,
    ) -> (Option<StepAction>, Option<String>) {
        let (action, x, y) = match mv {
            Move::None => return (None, None),
            Move::Click { x, y } => (UiAction::ClickAt { x: *x, y: *y }, *x, *y),
            Move::Type { x, y, text } => (UiAction::TypeKeys { keys: text.clone() }, *x, *y),
        };
        // The control under the point: what a click there acts on (for the sensitive-action
        // gate), and what typing goes into.
        let under = control_at(obs, x, y).cloned();
        let control = match mv {
            Move::Type { .. } => under.clone(),
            Move::Click { .. } | Move::None => None,
        };
        let chosen = Chosen::AtPoint(PointAction {
            function: action.name().to_string(),
            args: action.args(),
            x,
            y,
            control_id: control.as_ref().map(|c| c.id.clone()),
            control_text: under.as_ref().map(|c| c.name.clone()),
        });
        let record = |outcome| Some(StepAction::act(chosen.clone(), outcome));
        if !runs {
            return (record(Outcome::NotRun), None);
        }
        if matches!(mv, Move::Type { .. }) && control.is_none() {
            return (
                record(Outcome::NotRun),
                Some(format!(
                    "action failed: nothing to type into at ({x}, {y}); click a text field first or pick other coordinates"
                )),
            );
        }
        let gate = cx
            .services
            .config
            .sensitive
            .action_reason(&action, under.as_ref());
        let mut outcome = Outcome::Ran { completed: None };
        if let Some(reason) = gate {
            let decision = self.ask_person(cx, &chosen, &action, (x, y), &reason).await;
            outcome = Outcome::Gated { reason, decision };
            if decision == Decision::Reject {
                return (
                    record(outcome),
                    Some("the person rejected the action".into()),
                );
            }
        }
        let out = match cx
            .services
            .desktop
            .act(
                &self.window.id,
                control.as_ref().map(|c| c.id.as_str()),
                &action,
            )
            .await
        {
            Ok(t) if t.is_empty() => "ok".to_string(),
            Ok(t) => clip(&t, 2000),
            Err(e) => format!("action failed: {e}"),
        };
        self.log
            .actions
            .push(format!("{} at ({x}, {y}) -> {out}", action.name()));
        (record(outcome), Some(out))
    }

    /// Show the person the action the sensitive-action policy holds (`reason`), unless the
    /// safeguard is off; their decision.
    async fn ask_person(
        &self,
        cx: &mut Cx<'_>,
        chosen: &Chosen,
        action: &UiAction,
        (x, y): (i32, i32),
        reason: &str,
    ) -> Decision {
        if !cx.services.config.safe_guard {
            return Decision::Approve;
        }
        let held = StepAction::act(
            chosen.clone(),
            Outcome::Held {
                sensitive: Some(reason.to_string()),
            },
        );
        cx.services
            .user
            .confirm(&ConfirmRequest {
                agent: self.name(),
                description: format!("{} at ({x}, {y}) ({reason})", action.name()),
                action: held.to_value(),
            })
            .await
    }
}

#[async_trait]
impl SubAgent for OperatorAgent {
    fn name(&self) -> String {
        format!("OperatorAgent/{}", self.window.app_name)
    }

    fn role(&self) -> &'static str {
        OPERATOR_KIND
    }

    fn begin(&mut self, a: Assignment) {
        self.window = a.window;
        self.state = OperatorStatus::Continue;
        self.status = OperatorStatus::Continue;
        self.log.begin(a.subtask, a.messages);
    }

    fn state_name(&self) -> &'static str {
        self.state.as_str()
    }

    fn is_processing(&self) -> bool {
        match self.state {
            OperatorStatus::Continue => true,
            OperatorStatus::Finish | OperatorStatus::Fail | OperatorStatus::Error => false,
        }
    }

    fn subtask(&self) -> &str {
        &self.log.subtask
    }

    async fn handle(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let status = match self.state {
            OperatorStatus::Continue => return self.handle_continue(cx).await,
            OperatorStatus::Finish => SubtaskOutcome::Finish,
            OperatorStatus::Fail => {
                cx.round_failures += 1;
                SubtaskOutcome::Fail
            }
            OperatorStatus::Error => SubtaskOutcome::Error,
        };
        let name = self.name();
        self.log.archive(cx, &name, self.state.as_str(), status)
    }

    fn round_end(&self) -> Option<(SessionStatus, String)> {
        match self.state {
            OperatorStatus::Error => Some((SessionStatus::Error, "operator_error".into())),
            OperatorStatus::Continue | OperatorStatus::Finish | OperatorStatus::Fail => None,
        }
    }

    fn is_subtask_end(&self) -> bool {
        match self.state {
            OperatorStatus::Finish | OperatorStatus::Fail | OperatorStatus::Error => true,
            OperatorStatus::Continue => false,
        }
    }

    fn next_state(&mut self, cx: &mut Cx<'_>) -> Handoff {
        match self.state {
            OperatorStatus::Continue => {
                self.state = self.status;
                Handoff::Stay
            }
            OperatorStatus::Finish => hand_back(cx, Ending::Finish),
            OperatorStatus::Fail => hand_back(cx, Ending::Fail),
            OperatorStatus::Error => hand_back(cx, Ending::Error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema-constrained answer validates and parses; the fields the schema cannot leave
    /// out are the ones the parser requires; its actions and statuses are the parser's.
    #[test]
    fn the_schema_and_the_parser_agree() {
        let schema = ufo_core::response::operator_schema();
        let validator = jsonschema::validator_for(&schema.schema).expect("a schema");
        let answer = serde_json::json!({"Observation": "a form", "Thought": "type the name",
            "Action": "type", "X": 40, "Y": 12, "Text": "Ada", "Status": "CONTINUE",
            "Result": null});
        assert!(validator.is_valid(&answer));
        let r = parse_response(&answer.to_string()).expect("parsed");
        assert_eq!(
            r.action,
            Move::Type {
                x: 40,
                y: 12,
                text: "Ada".into()
            }
        );
        crate::common::assert_schema_requires_the_parsers_fields(
            &schema.schema,
            &validator,
            &answer,
            parse_response,
        );
        let props = &schema.schema["properties"];
        for status in props["Status"]["enum"].as_array().expect("statuses") {
            assert!(
                OperatorStatus::parse(status.as_str().unwrap_or("")).is_ok(),
                "{status}"
            );
        }
        // a nullable enum is `anyOf` its values and null (response.rs)
        let actions = &props["Action"]["anyOf"][0]["enum"];
        assert_eq!(props["Action"]["anyOf"][1]["type"], "null");
        for action in actions.as_array().expect("actions") {
            let Some(action) = action.as_str() else {
                panic!("the enum of a nullable field holds its values only: {actions}");
            };
            let mut a = answer.clone();
            a["Action"] = action.into();
            assert!(parse_response(&a.to_string()).is_ok(), "{action}");
        }
    }

    #[test]
    fn coordinate_answers_are_checked() {
        let r = parse_response(
            r#"{"Observation":"o","Thought":"t","Action":"click","X":10,"Y":"20","Status":"CONTINUE"}"#,
        )
        .expect("valid");
        assert_eq!(r.action, Move::Click { x: 10, y: 20 });
        assert!(parse_response(
            r#"{"Observation":"o","Thought":"t","Action":"click","Status":"CONTINUE"}"#
        )
        .expect_err("no X")
        .contains("X"));
        assert!(parse_response(
            r#"{"Observation":"o","Thought":"t","Action":"type","X":1,"Y":1,"Status":"CONTINUE"}"#
        )
        .expect_err("no text")
        .contains("Text"));
        assert!(parse_response(
            r#"{"Observation":"o","Thought":"t","Action":"drag","X":1,"Y":1,"Status":"CONTINUE"}"#
        )
        .is_err());
    }
}
