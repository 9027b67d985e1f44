//! The `action` of a `step` record (docs/formats.md, "Trajectory"), typed: what an agent chose
//! ([`Chosen`]) and what became of it ([`Outcome`]: ran, held for the person, decided, not
//! run, dropped), the host's hand-over, the questions of a PENDING step, and an archived
//! subtask.
//!
//! Written as the JSON objects the format has always had (`executed` says whether the action
//! reached the desktop; the golden trajectories of `crates/ufo/tests/golden.rs` hold them
//! byte for byte). Read back tolerantly: an object this version would not write the same way
//! (an older or newer writer's) is kept as it is, as [`StepAction::Other`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ports::Decision;
use crate::subtask::SubtaskOutcome;

/// The `action` of a step record.
#[derive(Debug, Clone, PartialEq)]
pub enum StepAction {
    /// An action an agent chose, and what became of it.
    Act(Act),
    /// The host handed the subtask to an agent (ASSIGN).
    Assign(Assigned),
    /// The questions of a PENDING step (an AppAgent's with the answers it got).
    Questions(Questions),
    /// The host's CONFIRM: the command or window it held, and the person's decision.
    HostDecision(HostDecision),
    /// A finished subtask, archived for the host and the blackboard.
    Archive(Archived),
    /// An object this version does not write (an older or newer trajectory's), as read.
    Other(Value),
}

/// An action an agent chose and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Act {
    /// What was chosen.
    pub chosen: Chosen,
    /// What became of it.
    pub outcome: Outcome,
}

/// What an agent chose to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Chosen {
    /// A GUI function on a control the engine resolved (none for functions that need none).
    Ui(UiChoice),
    /// A tool call (e.g. an MCP server's tool).
    Tool(ToolCall),
    /// A speculative multi-action list, run in order.
    Batch(Vec<Chosen>),
    /// A model's answer as it was given, before any control was resolved (it was dropped).
    Answer(Answer),
    /// The host's shell command and/or window.
    Host(HostCommand),
    /// A shell agent's command.
    Shell(ShellCommand),
    /// An operator agent's action at a point of the window.
    AtPoint(PointAction),
}

/// A GUI function on a resolved control.
#[derive(Debug, Clone, PartialEq)]
pub struct UiChoice {
    /// The canonical function name (`click`, `set_text`, ...).
    pub function: String,
    /// Its arguments, as the function's record writes them.
    pub args: Value,
    /// The control's label in the observation (`""` when it had none or needs none).
    pub control_label: String,
    /// The control, when the function acts on one.
    pub control: Option<ControlRef>,
}

/// The control an action was resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlRef {
    /// The backend's id of the control.
    pub id: String,
    /// Its name.
    pub text: String,
    /// Its role.
    pub role: String,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

/// A model's answer as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// `Function`.
    pub function: String,
    /// `Args`.
    pub args: Value,
    /// `ControlLabel`.
    pub control_label: String,
    /// `ControlText`.
    pub control_text: String,
}

/// The host's command and/or window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostCommand {
    /// `Bash` (`""` when none).
    pub bash: String,
    /// `ControlLabel` of the window.
    pub control_label: String,
    /// `ControlText` of the window.
    pub control_text: String,
    /// The title of the window the host chose, once it was resolved.
    pub window: Option<String>,
}

/// A shell agent's command.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellCommand {
    /// The command line.
    pub command: String,
    /// The working directory it runs in (written with the step that chose it).
    pub workdir: Option<String>,
}

/// An operator agent's action at a point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointAction {
    /// The function (`click_at`, `type_keys`).
    pub function: String,
    /// Its arguments.
    pub args: Value,
    /// The point, in window pixels.
    pub x: i32,
    /// The point, in window pixels.
    pub y: i32,
    /// The control typed into (typing only).
    pub control_id: Option<String>,
    /// The name of the control under the point, when there is one.
    pub control_text: Option<String>,
}

/// What became of a chosen action.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing to run: the host chose only a window.
    Chosen,
    /// It ran (whatever its result: a failure is the step's result); a list says how many of
    /// its actions ran.
    Ran {
        /// Actions of a list that ran.
        completed: Option<usize>,
    },
    /// Held by the CONFIRM gate until the person decides.
    Held {
        /// Why the sensitive-action policy held it, when the model did not ask.
        sensitive: Option<String>,
    },
    /// Not run: the status stops it (PENDING, FAIL, ERROR), or it could not be planned or
    /// performed (the step's result says why).
    NotRun,
    /// The person decided on the action held before (a CONFIRM step); approved, it ran.
    Decided(Decision),
    /// Held within the step by the sensitive-action policy, shown to the person, decided
    /// (the operator agent); approved, it ran.
    Gated {
        /// Why the policy held it.
        reason: String,
        /// The person's decision.
        decision: Decision,
    },
    /// Dropped: the person took the desktop over before it ran.
    Discarded,
}

/// The host's hand-over to an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Assigned {
    /// The agent's name (`AppAgent/Writer`).
    pub agent: String,
    /// The window's title (or the third-party agent's name).
    pub window: String,
    /// The agent's cache key.
    pub cache_key: String,
}

/// The questions of a PENDING step.
#[derive(Debug, Clone, PartialEq)]
pub struct Questions {
    /// The questions, in order.
    pub questions: Vec<String>,
    /// Their answers (`None`: unanswered), on an AppAgent's step.
    pub answers: Option<Vec<Option<String>>>,
}

/// The host's CONFIRM step.
#[derive(Debug, Clone, PartialEq)]
pub struct HostDecision {
    /// What was held.
    pub held: HostCommand,
    /// Why the sensitive-action policy held it, when the model did not ask.
    pub sensitive: Option<String>,
    /// The person's decision.
    pub decision: Decision,
}

/// An archived subtask.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    /// The subtask.
    pub subtask: String,
    /// How it ended.
    pub status: SubtaskOutcome,
    /// What it handed back.
    pub result: String,
}

impl StepAction {
    /// An action and what became of it.
    pub fn act(chosen: Chosen, outcome: Outcome) -> Self {
        StepAction::Act(Act { chosen, outcome })
    }

    /// The JSON object the trajectory holds.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        match self {
            StepAction::Act(a) => {
                a.chosen.write(&mut m);
                a.outcome.write(&mut m);
            }
            StepAction::Assign(a) => {
                put(&mut m, "assign", &a.agent);
                put(&mut m, "window", &a.window);
                put(&mut m, "cache_key", &a.cache_key);
            }
            StepAction::Questions(q) => {
                m.insert("questions".into(), strings(&q.questions));
                if let Some(answers) = &q.answers {
                    let list = answers.iter().map(|a| opt(a.as_deref())).collect();
                    m.insert("answers".into(), Value::Array(list));
                }
            }
            StepAction::HostDecision(d) => {
                let mut held = Map::new();
                d.held.write(&mut held);
                if let Some(s) = &d.sensitive {
                    put(&mut held, "sensitive", s);
                }
                m.insert("held".into(), Value::Object(held));
                put(&mut m, "decision", decision_name(d.decision));
            }
            StepAction::Archive(a) => {
                let mut archive = Map::new();
                put(&mut archive, "subtask", &a.subtask);
                put(&mut archive, "status", a.status.as_str());
                put(&mut archive, "result", &a.result);
                m.insert("archive".into(), Value::Object(archive));
            }
            StepAction::Other(v) => return v.clone(),
        }
        Value::Object(m)
    }

    /// Read an `action` object: typed when this version writes it exactly so, else as it is.
    pub fn from_value(value: Value) -> Self {
        match read::action(&value) {
            Some(typed) if typed.to_value() == value => typed,
            _ => StepAction::Other(value),
        }
    }

    /// Whether the action reached the desktop (`executed`), when the record says.
    pub fn executed(&self) -> Option<bool> {
        match self {
            StepAction::Act(a) => a.outcome.executed(),
            StepAction::Other(v) => v.get("executed").and_then(Value::as_bool),
            StepAction::Assign(_)
            | StepAction::Questions(_)
            | StepAction::HostDecision(_)
            | StepAction::Archive(_) => None,
        }
    }
}

impl Serialize for StepAction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StepAction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(StepAction::from_value)
    }
}

impl Chosen {
    /// A GUI function on `control` (labelled `label`), or on none.
    pub fn ui(function: &str, args: Value, label: &str, control: Option<ControlRef>) -> Self {
        Chosen::Ui(UiChoice {
            function: function.to_string(),
            args,
            control_label: label.to_string(),
            control,
        })
    }

    /// The JSON object of the choice alone (as a held action is shown to the person).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        self.write(&mut m);
        Value::Object(m)
    }

    fn write(&self, m: &mut Map<String, Value>) {
        match self {
            Chosen::Ui(u) => {
                put(m, "function", &u.function);
                m.insert("args".into(), u.args.clone());
                put(m, "control_label", &u.control_label);
                let c = u.control.as_ref();
                m.insert("control_id".into(), opt(c.map(|c| c.id.as_str())));
                m.insert("control_text".into(), opt(c.map(|c| c.text.as_str())));
                m.insert("control_role".into(), opt(c.map(|c| c.role.as_str())));
            }
            Chosen::Tool(t) => {
                put(m, "function", &t.name);
                m.insert("args".into(), t.args.clone());
                m.insert("tool".into(), true.into());
            }
            Chosen::Batch(list) => {
                put(m, "function", "batch");
                let items = list.iter().map(Chosen::to_value).collect();
                m.insert("batch".into(), Value::Array(items));
            }
            Chosen::Answer(a) => {
                put(m, "function", &a.function);
                m.insert("args".into(), a.args.clone());
                put(m, "control_label", &a.control_label);
                put(m, "control_text", &a.control_text);
            }
            Chosen::Host(h) => h.write(m),
            Chosen::Shell(s) => {
                put(m, "function", "shell");
                let mut args = Map::new();
                put(&mut args, "command", &s.command);
                m.insert("args".into(), Value::Object(args));
                if let Some(w) = &s.workdir {
                    put(m, "workdir", w);
                }
            }
            Chosen::AtPoint(p) => {
                put(m, "function", &p.function);
                m.insert("args".into(), p.args.clone());
                m.insert("x".into(), p.x.into());
                m.insert("y".into(), p.y.into());
                m.insert("control_id".into(), opt(p.control_id.as_deref()));
                if let Some(t) = &p.control_text {
                    put(m, "control_text", t);
                }
            }
        }
    }
}

impl HostCommand {
    fn write(&self, m: &mut Map<String, Value>) {
        put(m, "bash", &self.bash);
        put(m, "control_label", &self.control_label);
        put(m, "control_text", &self.control_text);
        if let Some(w) = &self.window {
            put(m, "window", w);
        }
    }
}

impl Outcome {
    /// Whether the action reached the desktop; `None` when nothing was to run.
    pub fn executed(&self) -> Option<bool> {
        match self {
            Outcome::Chosen => None,
            Outcome::Ran { .. } => Some(true),
            Outcome::Held { .. } | Outcome::NotRun | Outcome::Discarded => Some(false),
            Outcome::Decided(d) | Outcome::Gated { decision: d, .. } => {
                Some(*d == Decision::Approve)
            }
        }
    }

    fn write(&self, m: &mut Map<String, Value>) {
        if let Some(executed) = self.executed() {
            m.insert("executed".into(), executed.into());
        }
        match self {
            Outcome::Chosen | Outcome::NotRun => {}
            Outcome::Ran { completed } => {
                if let Some(n) = completed {
                    m.insert("completed".into(), (*n).into());
                }
            }
            Outcome::Held { sensitive } => {
                m.insert("held".into(), true.into());
                if let Some(s) = sensitive {
                    put(m, "sensitive", s);
                }
            }
            Outcome::Decided(d) => put(m, "decision", decision_name(*d)),
            Outcome::Gated { reason, decision } => {
                put(m, "sensitive", reason);
                m.insert("held".into(), true.into());
                put(m, "decision", decision_name(*decision));
            }
            Outcome::Discarded => put(m, "discarded", "takeover"),
        }
    }
}

/// How a decision is written (`Approve`, `Reject`).
fn decision_name(d: Decision) -> &'static str {
    match d {
        Decision::Approve => "Approve",
        Decision::Reject => "Reject",
    }
}

fn put(m: &mut Map<String, Value>, key: &str, text: &str) {
    m.insert(key.into(), Value::String(text.to_string()));
}

fn opt(text: Option<&str>) -> Value {
    text.map_or(Value::Null, |t| Value::String(t.to_string()))
}

fn strings(list: &[String]) -> Value {
    Value::Array(list.iter().cloned().map(Value::String).collect())
}

/// Reading an `action` object back into the types; [`StepAction::from_value`] keeps the
/// result only when it writes the same object again.
mod read {
    use super::*;

    type Obj = Map<String, Value>;

    pub(super) fn action(v: &Value) -> Option<StepAction> {
        let m = v.as_object()?;
        if let Some(archive) = m.get("archive") {
            return archived(archive.as_object()?).map(StepAction::Archive);
        }
        if m.contains_key("assign") {
            return Some(StepAction::Assign(Assigned {
                agent: text(m, "assign")?,
                window: text(m, "window")?,
                cache_key: text(m, "cache_key")?,
            }));
        }
        if m.contains_key("questions") {
            return questions(m).map(StepAction::Questions);
        }
        if let (Some(Value::Object(held)), Some(d)) = (m.get("held"), m.get("decision")) {
            return Some(StepAction::HostDecision(HostDecision {
                held: host(held)?,
                sensitive: optional_text(held, "sensitive")?,
                decision: decision(d)?,
            }));
        }
        Some(StepAction::act(chosen(m)?, outcome(m)?))
    }

    fn archived(a: &Obj) -> Option<Archived> {
        let status = serde_json::from_value(a.get("status")?.clone()).ok()?;
        Some(Archived {
            subtask: text(a, "subtask")?,
            status,
            result: text(a, "result")?,
        })
    }

    fn questions(m: &Obj) -> Option<Questions> {
        let list = |v: &Value| -> Option<Vec<Value>> { v.as_array().cloned() };
        let questions = list(m.get("questions")?)?
            .iter()
            .map(|q| q.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        let answers = match m.get("answers") {
            None => None,
            Some(a) => Some(
                list(a)?
                    .iter()
                    .map(|x| match x {
                        Value::Null => Some(None),
                        Value::String(s) => Some(Some(s.clone())),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
        };
        Some(Questions { questions, answers })
    }

    /// What was chosen, by the fields only that kind writes.
    pub(super) fn chosen(m: &Obj) -> Option<Chosen> {
        if m.contains_key("bash") {
            return host(m).map(Chosen::Host);
        }
        if m.contains_key("batch") {
            let items = m.get("batch")?.as_array()?;
            let list = items
                .iter()
                .map(|i| i.as_object().and_then(chosen))
                .collect::<Option<Vec<_>>>()?;
            return Some(Chosen::Batch(list));
        }
        let function = text(m, "function")?;
        let args = m.get("args")?.clone();
        if m.get("tool") == Some(&Value::Bool(true)) {
            return Some(Chosen::Tool(ToolCall {
                name: function,
                args,
            }));
        }
        if m.contains_key("x") {
            return Some(Chosen::AtPoint(PointAction {
                function,
                args,
                x: i32::try_from(m.get("x")?.as_i64()?).ok()?,
                y: i32::try_from(m.get("y")?.as_i64()?).ok()?,
                control_id: optional_text(m, "control_id")?,
                control_text: optional_text(m, "control_text")?,
            }));
        }
        if function == "shell" && !m.contains_key("control_label") {
            return Some(Chosen::Shell(ShellCommand {
                command: text(args.as_object()?, "command")?,
                workdir: optional_text(m, "workdir")?,
            }));
        }
        if !m.contains_key("control_id") {
            return Some(Chosen::Answer(Answer {
                function,
                args,
                control_label: text(m, "control_label")?,
                control_text: text(m, "control_text")?,
            }));
        }
        let control = match (
            optional_text(m, "control_id")?,
            optional_text(m, "control_text")?,
            optional_text(m, "control_role")?,
        ) {
            (Some(id), Some(text), Some(role)) => Some(ControlRef { id, text, role }),
            _ => None,
        };
        Some(Chosen::ui(
            &function,
            args,
            &text(m, "control_label")?,
            control,
        ))
    }

    fn host(m: &Obj) -> Option<HostCommand> {
        Some(HostCommand {
            bash: text(m, "bash")?,
            control_label: text(m, "control_label")?,
            control_text: text(m, "control_text")?,
            window: optional_text(m, "window")?,
        })
    }

    /// What became of it, by the outcome's fields.
    pub(super) fn outcome(m: &Obj) -> Option<Outcome> {
        let held = m.get("held") == Some(&Value::Bool(true));
        let sensitive = optional_text(m, "sensitive")?;
        if m.contains_key("discarded") {
            return Some(Outcome::Discarded);
        }
        if let Some(d) = m.get("decision") {
            let decision = decision(d)?;
            return Some(match sensitive {
                Some(reason) if held => Outcome::Gated { reason, decision },
                _ => Outcome::Decided(decision),
            });
        }
        if held {
            return Some(Outcome::Held { sensitive });
        }
        Some(match m.get("executed") {
            None => Outcome::Chosen,
            Some(Value::Bool(true)) => Outcome::Ran {
                completed: match m.get("completed") {
                    None => None,
                    Some(n) => Some(usize::try_from(n.as_u64()?).ok()?),
                },
            },
            Some(_) => Outcome::NotRun,
        })
    }

    fn decision(v: &Value) -> Option<Decision> {
        match v.as_str()? {
            "Approve" => Some(Decision::Approve),
            "Reject" => Some(Decision::Reject),
            _ => None,
        }
    }

    fn text(m: &Obj, key: &str) -> Option<String> {
        m.get(key)?.as_str().map(str::to_string)
    }

    /// A field that may be absent or null (`Some(None)`), or a text; `None` when it is
    /// something else.
    fn optional_text(m: &Obj, key: &str) -> Option<Option<String>> {
        match m.get(key) {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn click() -> Chosen {
        Chosen::ui(
            "click",
            json!({"button": "left", "double": false}),
            "2",
            Some(ControlRef {
                id: "export".into(),
                text: "Export".into(),
                role: "button".into(),
            }),
        )
    }

    /// Every kind of action writes the object the trajectory has always had (the JSON each
    /// agent built by hand before the types), and reads back as the same type.
    #[test]
    fn every_action_writes_the_format_and_reads_back() {
        let host = HostCommand {
            bash: "ls".into(),
            control_label: "1".into(),
            control_text: "Writer".into(),
            window: Some("report.odt - Writer".into()),
        };
        let cases = [
            (
                StepAction::act(click(), Outcome::Ran { completed: None }),
                json!({"function": "click", "args": {"button": "left", "double": false},
                       "control_label": "2", "control_id": "export", "control_text": "Export",
                       "control_role": "button", "executed": true}),
            ),
            (
                StepAction::act(
                    Chosen::ui("click_at", json!({"x": 1, "y": 2}), "", None),
                    Outcome::NotRun,
                ),
                json!({"function": "click_at", "args": {"x": 1, "y": 2}, "control_label": "",
                       "control_id": null, "control_text": null, "control_role": null,
                       "executed": false}),
            ),
            (
                StepAction::act(
                    click(),
                    Outcome::Held {
                        sensitive: Some("it deletes".into()),
                    },
                ),
                json!({"function": "click", "args": {"button": "left", "double": false},
                       "control_label": "2", "control_id": "export", "control_text": "Export",
                       "control_role": "button", "executed": false, "held": true,
                       "sensitive": "it deletes"}),
            ),
            (
                StepAction::act(click(), Outcome::Decided(Decision::Reject)),
                json!({"function": "click", "args": {"button": "left", "double": false},
                       "control_label": "2", "control_id": "export", "control_text": "Export",
                       "control_role": "button", "decision": "Reject", "executed": false}),
            ),
            (
                StepAction::act(
                    Chosen::Batch(vec![
                        click(),
                        Chosen::Tool(ToolCall {
                            name: "save".into(),
                            args: json!({}),
                        }),
                    ]),
                    Outcome::Ran { completed: Some(1) },
                ),
                json!({"function": "batch", "batch": [
                        {"function": "click", "args": {"button": "left", "double": false},
                         "control_label": "2", "control_id": "export",
                         "control_text": "Export", "control_role": "button"},
                        {"function": "save", "args": {}, "tool": true}],
                       "completed": 1, "executed": true}),
            ),
            (
                StepAction::act(
                    Chosen::Answer(Answer {
                        function: "click".into(),
                        args: json!({}),
                        control_label: "3".into(),
                        control_text: "OK".into(),
                    }),
                    Outcome::Discarded,
                ),
                json!({"function": "click", "args": {}, "control_label": "3",
                       "control_text": "OK", "executed": false, "discarded": "takeover"}),
            ),
            (
                StepAction::act(Chosen::Host(host.clone()), Outcome::Ran { completed: None }),
                json!({"bash": "ls", "control_label": "1", "control_text": "Writer",
                       "window": "report.odt - Writer", "executed": true}),
            ),
            (
                StepAction::act(
                    Chosen::Host(HostCommand {
                        bash: String::new(),
                        window: None,
                        ..host.clone()
                    }),
                    Outcome::Chosen,
                ),
                json!({"bash": "", "control_label": "1", "control_text": "Writer"}),
            ),
            (
                StepAction::HostDecision(HostDecision {
                    held: HostCommand {
                        window: None,
                        ..host
                    },
                    sensitive: Some("not allowed".into()),
                    decision: Decision::Approve,
                }),
                json!({"held": {"bash": "ls", "control_label": "1", "control_text": "Writer",
                                "sensitive": "not allowed"}, "decision": "Approve"}),
            ),
            (
                StepAction::act(
                    Chosen::Shell(ShellCommand {
                        command: "echo hi".into(),
                        workdir: Some(".".into()),
                    }),
                    Outcome::Ran { completed: None },
                ),
                json!({"function": "shell", "args": {"command": "echo hi"}, "workdir": ".",
                       "executed": true}),
            ),
            (
                StepAction::act(
                    Chosen::Shell(ShellCommand {
                        command: "rm x".into(),
                        workdir: None,
                    }),
                    Outcome::Decided(Decision::Approve),
                ),
                json!({"function": "shell", "args": {"command": "rm x"}, "decision": "Approve",
                       "executed": true}),
            ),
            (
                StepAction::act(
                    Chosen::AtPoint(PointAction {
                        function: "click_at".into(),
                        args: json!({"x": 5, "y": 6}),
                        x: 5,
                        y: 6,
                        control_id: None,
                        control_text: Some("Delete All".into()),
                    }),
                    Outcome::Gated {
                        reason: "it deletes".into(),
                        decision: Decision::Reject,
                    },
                ),
                json!({"function": "click_at", "args": {"x": 5, "y": 6}, "x": 5, "y": 6,
                       "control_id": null, "control_text": "Delete All",
                       "sensitive": "it deletes", "held": true, "decision": "Reject",
                       "executed": false}),
            ),
            (
                StepAction::Assign(Assigned {
                    agent: "AppAgent/Writer".into(),
                    window: "report.odt - Writer".into(),
                    cache_key: "Writer/writer".into(),
                }),
                json!({"assign": "AppAgent/Writer", "window": "report.odt - Writer",
                       "cache_key": "Writer/writer"}),
            ),
            (
                StepAction::Questions(Questions {
                    questions: vec!["Which file?".into(), "Why?".into()],
                    answers: Some(vec![Some("a.txt".into()), None]),
                }),
                json!({"questions": ["Which file?", "Why?"], "answers": ["a.txt", null]}),
            ),
            (
                StepAction::Questions(Questions {
                    questions: vec!["Which file?".into()],
                    answers: None,
                }),
                json!({"questions": ["Which file?"]}),
            ),
            (
                StepAction::Archive(Archived {
                    subtask: "s".into(),
                    status: SubtaskOutcome::Rejected,
                    result: "r".into(),
                }),
                json!({"archive": {"subtask": "s", "status": "REJECTED", "result": "r"}}),
            ),
        ];
        for (action, written) in cases {
            assert_eq!(action.to_value(), written, "{action:?}");
            let text = serde_json::to_string(&action).expect("serialises");
            assert_eq!(text, written.to_string());
            let back: StepAction = serde_json::from_str(&text).expect("reads");
            assert_eq!(back, action, "{text}");
        }
    }

    /// What this version would not write the same way is kept as read, not guessed at.
    #[test]
    fn an_unknown_action_is_kept_as_it_is() {
        for v in [
            json!({"function": "click", "args": {}, "executed": "maybe"}),
            json!({"archive": {"status": "LATER"}}),
            json!({"questions": [1]}),
            json!({"something": "new"}),
            json!("text"),
            json!({"bash": "ls", "control_label": "", "control_text": "", "extra": 1}),
        ] {
            assert_eq!(StepAction::from_value(v.clone()), StepAction::Other(v));
        }
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..70_000).prop_map(Value::from),
            prop::sample::select(vec![
                "", "click", "batch", "shell", "Approve", "Reject", "takeover", "FINISH", "x"
            ])
            .prop_map(Value::from),
        ]
    }

    const KEYS: &[&str] = &[
        "function",
        "args",
        "control_label",
        "control_id",
        "control_text",
        "control_role",
        "tool",
        "batch",
        "bash",
        "window",
        "workdir",
        "command",
        "x",
        "y",
        "executed",
        "held",
        "sensitive",
        "decision",
        "completed",
        "discarded",
        "assign",
        "cache_key",
        "questions",
        "answers",
        "archive",
        "subtask",
        "status",
        "result",
    ];

    fn object() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(prop::sample::select(KEYS), inner, 0..8).prop_map(
                    |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                ),
            ]
        })
    }

    fn word() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "", "batch", "shell", "click", "Approve", "takeover", "é 1",
        ])
        .prop_map(str::to_string)
    }

    fn args() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!({})),
            word().prop_map(|w| json!({"text": w})),
            Just(Value::Null)
        ]
    }

    fn decision() -> impl Strategy<Value = Decision> {
        prop_oneof![Just(Decision::Approve), Just(Decision::Reject)]
    }

    fn host() -> impl Strategy<Value = HostCommand> {
        (word(), word(), word(), prop::option::of(word())).prop_map(
            |(bash, control_label, control_text, window)| HostCommand {
                bash,
                control_label,
                control_text,
                window,
            },
        )
    }

    fn single() -> impl Strategy<Value = Chosen> {
        let control = prop::option::of((word(), word(), word()))
            .prop_map(|c| c.map(|(id, text, role)| ControlRef { id, text, role }));
        prop_oneof![
            (word(), args(), word(), control).prop_map(|(f, a, l, c)| Chosen::ui(&f, a, &l, c)),
            (word(), args()).prop_map(|(name, args)| Chosen::Tool(ToolCall { name, args })),
        ]
    }

    fn chosen() -> impl Strategy<Value = Chosen> {
        let point = (
            word(),
            args(),
            -5i32..5000,
            0i32..5000,
            prop::option::of(word()),
        )
            .prop_flat_map(|(function, args, x, y, control_id)| {
                prop::option::of(word()).prop_map(move |control_text| {
                    Chosen::AtPoint(PointAction {
                        function: function.clone(),
                        args: args.clone(),
                        x,
                        y,
                        control_id: control_id.clone(),
                        control_text,
                    })
                })
            });
        prop_oneof![
            single(),
            prop::collection::vec(single(), 0..3).prop_map(Chosen::Batch),
            (word(), args(), word(), word()).prop_map(|(function, args, l, t)| {
                Chosen::Answer(Answer {
                    function,
                    args,
                    control_label: l,
                    control_text: t,
                })
            }),
            host().prop_map(Chosen::Host),
            (word(), prop::option::of(word()))
                .prop_map(|(command, workdir)| Chosen::Shell(ShellCommand { command, workdir })),
            point,
        ]
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            Just(Outcome::Chosen),
            prop::option::of(0usize..9).prop_map(|completed| Outcome::Ran { completed }),
            prop::option::of(word()).prop_map(|sensitive| Outcome::Held { sensitive }),
            Just(Outcome::NotRun),
            decision().prop_map(Outcome::Decided),
            (word(), decision()).prop_map(|(reason, decision)| Outcome::Gated { reason, decision }),
            Just(Outcome::Discarded),
        ]
    }

    fn action() -> impl Strategy<Value = StepAction> {
        let status = prop::sample::select(vec![
            SubtaskOutcome::Finish,
            SubtaskOutcome::Fail,
            SubtaskOutcome::Error,
            SubtaskOutcome::Rejected,
            SubtaskOutcome::Cancelled,
        ]);
        prop_oneof![
            (chosen(), outcome()).prop_map(|(c, o)| StepAction::act(c, o)),
            (word(), word(), word()).prop_map(|(agent, window, cache_key)| {
                StepAction::Assign(Assigned {
                    agent,
                    window,
                    cache_key,
                })
            }),
            (
                prop::collection::vec(word(), 0..3),
                prop::option::of(prop::collection::vec(prop::option::of(word()), 0..3))
            )
                .prop_map(|(questions, answers)| {
                    StepAction::Questions(Questions { questions, answers })
                }),
            (host(), prop::option::of(word()), decision()).prop_map(|(h, sensitive, decision)| {
                StepAction::HostDecision(HostDecision {
                    held: HostCommand { window: None, ..h },
                    sensitive,
                    decision,
                })
            }),
            (word(), status, word()).prop_map(|(subtask, status, result)| {
                StepAction::Archive(Archived {
                    subtask,
                    status,
                    result,
                })
            }),
        ]
    }

    proptest! {
        /// Reading any `action` and writing it again gives the same JSON: a reader never
        /// changes or loses a trajectory's action, typed or not.
        #[test]
        fn any_action_writes_back_as_read(v in object()) {
            let read = StepAction::from_value(v.clone());
            prop_assert_eq!(read.to_value(), v);
        }

        /// Whatever an agent writes reads back as what it wrote, typed (never as `Other`),
        /// however its texts look.
        #[test]
        fn every_written_action_reads_back_typed(a in action()) {
            let back = StepAction::from_value(a.to_value());
            prop_assert_eq!(back, a);
        }
    }
}
