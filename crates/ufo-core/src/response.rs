//! Typed model responses, built from the tolerant parser's JSON object.
//!
//! Field names are matched after normalisation (lower case, letters and digits only), so the
//! seeds' names (`Current Sub-Task`, `ControlLabel`) and snake_case aliases (`current_subtask`,
//! `control_label`) are one and the same.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::parse::parse_object;
use crate::status::{AppStatus, HostStatus};

/// The HostAgent's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostResponse {
    /// What the model sees.
    pub observation: String,
    /// Its reasoning.
    pub thought: String,
    /// The subtask to hand over.
    pub current_subtask: String,
    /// Extra instructions for the AppAgent.
    pub message: Vec<String>,
    /// Label of the selected window.
    pub control_label: String,
    /// Title or application name of the selected window.
    pub control_text: String,
    /// Remaining subtasks.
    pub plan: Vec<String>,
    /// Next status.
    pub status: HostStatus,
    /// A comment for the person.
    pub comment: String,
    /// Questions for the person (PENDING).
    pub questions: Vec<String>,
    /// A shell command to run before the window is resolved (e.g. to launch an app).
    pub bash: String,
}

/// The AppAgent's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppResponse {
    /// What the model sees.
    pub observation: String,
    /// Its reasoning.
    pub thought: String,
    /// Label of the control to act on.
    pub control_label: String,
    /// Name of that control.
    pub control_text: String,
    /// Function to call (empty: no action this step).
    pub function: String,
    /// Its arguments.
    pub args: Value,
    /// Next status.
    pub status: AppStatus,
    /// A comment for the person.
    pub comment: String,
    /// Remaining steps.
    pub plan: Vec<String>,
    /// Questions for the person (PENDING).
    pub questions: Vec<String>,
    /// The subtask's result, when it produces one.
    pub result: String,
    /// Speculative multi-action: several actions to run in order in this step (when enabled).
    pub actions: Vec<ActionSpec>,
}

/// One action of a multi-action answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionSpec {
    /// Label of the control.
    pub control_label: String,
    /// Name of the control.
    pub control_text: String,
    /// Function to call.
    pub function: String,
    /// Its arguments.
    pub args: Value,
}

fn args_value(v: Option<&Value>) -> Result<Value, String> {
    Ok(match v {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        // Some models send Args as a JSON string; accept it when it holds an object.
        Some(Value::String(s)) => parse_object(s)
            .map(Value::Object)
            .map_err(|e| format!("Args is a string that is not a JSON object: {e}"))?,
        Some(v) => v.clone(),
    })
}

/// Normalise a field name: lower case, letters and digits only.
fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

struct Fields(Map<String, Value>);

impl Fields {
    fn new(obj: Map<String, Value>) -> Self {
        Fields(obj.into_iter().map(|(k, v)| (norm(&k), v)).collect())
    }

    fn get(&self, names: &[&str]) -> Option<&Value> {
        names.iter().find_map(|n| self.0.get(*n))
    }

    fn required(&self, field: &str, names: &[&str]) -> Result<String, String> {
        match self.get(names) {
            None | Some(Value::Null) => Err(format!("the required field {field:?} is missing")),
            Some(v) => Ok(text(v)),
        }
    }

    fn text(&self, names: &[&str]) -> String {
        self.get(names).map(text).unwrap_or_default()
    }

    fn list(&self, names: &[&str]) -> Vec<String> {
        match self.get(names) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(text)
                .filter(|s| !s.trim().is_empty())
                .collect(),
            Some(v) => {
                let s = text(v);
                if s.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![s]
                }
            }
        }
    }
}

/// A value as text: strings as they are, numbers and booleans printed, other JSON compact.
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

impl HostResponse {
    /// Parse and validate a host answer. The error says exactly what is wrong, for the re-ask.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let f = Fields::new(parse_object(raw)?);
        let observation = f.required("Observation", &["observation"])?;
        let thought = f.required("Thought", &["thought"])?;
        let status = HostStatus::parse(&f.required("Status", &["status"])?)?;
        Ok(HostResponse {
            observation,
            thought,
            current_subtask: f.text(&["currentsubtask", "subtask"]),
            message: f.list(&["message"]),
            control_label: f.text(&["controllabel", "label"]),
            control_text: f.text(&["controltext"]),
            plan: f.list(&["plan"]),
            status,
            comment: f.text(&["comment"]),
            questions: f.list(&["questions"]),
            bash: f.text(&["bash"]),
        })
    }
}

impl AppResponse {
    /// Parse and validate an app answer. The error says exactly what is wrong, for the re-ask.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let f = Fields::new(parse_object(raw)?);
        let observation = f.required("Observation", &["observation"])?;
        let thought = f.required("Thought", &["thought"])?;
        let status = AppStatus::parse(&f.required("Status", &["status"])?)?;
        let args = args_value(f.get(&["args", "arguments"]))?;
        let actions = match f.get(&["actions"]) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Object(m) => {
                        let a = Fields::new(m.clone());
                        Ok(ActionSpec {
                            control_label: a.text(&["controllabel", "label"]),
                            control_text: a.text(&["controltext"]),
                            function: a.text(&["function"]),
                            args: args_value(a.get(&["args", "arguments"]))
                                .map_err(|e| format!("Actions[{i}]: {e}"))?,
                        })
                    }
                    _ => Err(format!("Actions[{i}] is not an object")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("Actions must be a list of action objects".into()),
        };
        Ok(AppResponse {
            observation,
            thought,
            control_label: f.text(&["controllabel", "label"]),
            control_text: f.text(&["controltext"]),
            function: f.text(&["function"]),
            args,
            status,
            comment: f.text(&["comment"]),
            plan: f.list(&["plan"]),
            questions: f.list(&["questions"]),
            result: f.text(&["result"]),
            actions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_and_snake_case_names_are_both_accepted() {
        let a = HostResponse::parse(
            r#"{"Observation":"o","Thought":"t","Current Sub-Task":"s","ControlLabel":3,
                "ControlText":"Word","Status":"assign","Plan":["a","b"],"Message":"m"}"#,
        )
        .expect("valid");
        let b = HostResponse::parse(
            r#"{"observation":"o","thought":"t","current_subtask":"s","control_label":"3",
                "control_text":"Word","status":"ASSIGN","plan":["a","b"],"message":["m"]}"#,
        )
        .expect("valid");
        assert_eq!(a, b);
        assert_eq!(a.status, HostStatus::Assign);
        assert_eq!(a.control_label, "3");
    }

    #[test]
    fn missing_required_fields_are_named() {
        let e = AppResponse::parse(r#"{"Observation":"o","Status":"FINISH"}"#).unwrap_err();
        assert!(e.contains("Thought"), "{e}");
        let e = AppResponse::parse(r#"{"Observation":"o","Thought":"t"}"#).unwrap_err();
        assert!(e.contains("Status"), "{e}");
        let e =
            HostResponse::parse(r#"{"Observation":"o","Thought":"t","Status":"GO"}"#).unwrap_err();
        assert!(e.contains("unknown Status"), "{e}");
    }

    #[test]
    fn args_given_as_a_string_are_parsed() {
        let r = AppResponse::parse(
            r#"{"Observation":"o","Thought":"t","Function":"set_text","Args":"{\"text\":\"x\"}","Status":"CONTINUE"}"#,
        )
        .expect("valid");
        assert_eq!(r.args["text"], "x");
    }

    /// ControlLabel and ControlText stay apart: digits in ControlText are a name (KCalc's
    /// button "1"), a number in ControlLabel a label, in every answer and every action of a
    /// list.
    #[test]
    fn control_label_and_control_text_are_never_mixed() {
        let r = AppResponse::parse(
            r#"{"Observation":"o","Thought":"t","ControlText":1,"Function":"click",
                "Status":"CONTINUE","Actions":[{"ControlText":"3","Function":"click"},
                {"ControlLabel":4,"Function":"click"}]}"#,
        )
        .expect("valid");
        assert_eq!(
            (r.control_label.as_str(), r.control_text.as_str()),
            ("", "1")
        );
        assert_eq!(
            (
                r.actions[0].control_label.as_str(),
                r.actions[0].control_text.as_str()
            ),
            ("", "3")
        );
        assert_eq!(
            (
                r.actions[1].control_label.as_str(),
                r.actions[1].control_text.as_str()
            ),
            ("4", "")
        );
        let h = HostResponse::parse(
            r#"{"Observation":"o","Thought":"t","ControlText":"2","Status":"ASSIGN"}"#,
        )
        .expect("valid");
        assert_eq!(
            (h.control_label.as_str(), h.control_text.as_str()),
            ("", "2")
        );
    }
}
