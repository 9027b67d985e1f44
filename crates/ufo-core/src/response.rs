//! Typed model responses, built from the tolerant parser's JSON object.
//!
//! Field names are matched after normalisation (lower case, letters and digits only), so the
//! seeds' names (`Current Sub-Task`, `ControlLabel`) and snake_case aliases (`current_subtask`,
//! `control_label`) are one and the same.
//!
//! Each answer also has a JSON Schema ([`host_schema`], [`app_schema`], [`shell_schema`],
//! [`operator_schema`], [`evaluation_schema`], [`summary_schema`]), derived from a wire type
//! here ([`HostAnswer`], ...) whose fields are the names the prompts ask for, and sent to
//! providers that constrain output to a schema (`structured_output`, docs/configuration.md).
//! The schemas are in the strict form OpenAI's `json_schema` needs (every property required,
//! optional ones nullable, no other properties); the parsers stay tolerant and accept what
//! they always did (aliases, `Args` as an object or as JSON text, a list or one string). A
//! test checks that the fields a schema makes non-nullable are the ones its parser requires.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ports::ResponseSchema;

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

// ---------------------------------------------------------------------------------------------
// Schemas of the answers
// ---------------------------------------------------------------------------------------------

/// A status the HostAgent's model may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HostAnswerStatus {
    /// Look again, or after a `Bash` command.
    Continue,
    /// Hand the subtask to a window.
    Assign,
    /// The request is done.
    Finish,
    /// The request cannot be done.
    Fail,
    /// Ask the person the questions.
    Pending,
    /// Ask the person to approve.
    Confirm,
}

/// A status an AppAgent's model may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AppAnswerStatus {
    /// More actions are needed.
    Continue,
    /// The action changes the window: capture it afresh.
    Screenshot,
    /// The subtask is done.
    Finish,
    /// The subtask cannot be done here.
    Fail,
    /// Ask the person the questions.
    Pending,
    /// Ask the person to approve the action.
    Confirm,
    /// The application is broken beyond use.
    Error,
}

/// The HostAgent's answer as the prompt asks for it (the wire form of [`HostResponse`]).
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct HostAnswer {
    /// What you see in the window list and screenshot.
    #[serde(rename = "Observation")]
    pub observation: String,
    /// Your reasoning for the next move.
    #[serde(rename = "Thought")]
    pub thought: String,
    /// The one subtask to do now.
    #[serde(rename = "Current Sub-Task")]
    pub current_subtask: Option<String>,
    /// Hints for the AppAgent.
    #[serde(rename = "Message")]
    pub message: Option<Vec<String>>,
    /// The label of the chosen window from the window list.
    #[serde(rename = "ControlLabel")]
    pub control_label: Option<String>,
    /// The title or application name of that window.
    #[serde(rename = "ControlText")]
    pub control_text: Option<String>,
    /// The subtasks still to do after this one.
    #[serde(rename = "Plan")]
    pub plan: Option<Vec<String>>,
    /// The next status.
    #[serde(rename = "Status")]
    pub status: HostAnswerStatus,
    /// A short note for the person.
    #[serde(rename = "Comment")]
    pub comment: Option<String>,
    /// Questions for the person (only with PENDING).
    #[serde(rename = "Questions")]
    pub questions: Option<Vec<String>>,
    /// A shell command to run before the window is chosen.
    #[serde(rename = "Bash")]
    pub bash: Option<String>,
}

/// One action of a multi-action answer, as the prompt asks for it.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct ActionAnswer {
    /// The label of the control.
    #[serde(rename = "ControlLabel")]
    pub control_label: Option<String>,
    /// The name of the control, exactly as listed.
    #[serde(rename = "ControlText")]
    pub control_text: Option<String>,
    /// The function to call.
    #[serde(rename = "Function")]
    pub function: String,
    /// The function's arguments as the text of a JSON object, e.g. `{"text": "x"}`.
    #[serde(rename = "Args")]
    pub args: Option<String>,
}

/// An AppAgent's answer as the prompt asks for it (the wire form of [`AppResponse`], without
/// `Actions`). `Args` is the text of a JSON object: a strict schema cannot leave an object's
/// keys open, and the parser reads both forms.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct AppAnswer {
    /// What you see.
    #[serde(rename = "Observation")]
    pub observation: String,
    /// Your reasoning.
    #[serde(rename = "Thought")]
    pub thought: String,
    /// The label of the control to act on (the number in [N] of its line).
    #[serde(rename = "ControlLabel")]
    pub control_label: Option<String>,
    /// The name of that control, exactly as listed.
    #[serde(rename = "ControlText")]
    pub control_text: Option<String>,
    /// The function to call, or "" for no action.
    #[serde(rename = "Function")]
    pub function: Option<String>,
    /// The function's arguments as the text of a JSON object, e.g. `{"text": "x"}`.
    #[serde(rename = "Args")]
    pub args: Option<String>,
    /// The next status.
    #[serde(rename = "Status")]
    pub status: AppAnswerStatus,
    /// A short note for the person.
    #[serde(rename = "Comment")]
    pub comment: Option<String>,
    /// The steps still to do.
    #[serde(rename = "Plan")]
    pub plan: Option<Vec<String>>,
    /// Questions for the person (only with PENDING).
    #[serde(rename = "Questions")]
    pub questions: Option<Vec<String>>,
    /// The subtask's result when you FINISH.
    #[serde(rename = "Result")]
    pub result: Option<String>,
}

/// An AppAgent's answer when several actions may be given at once (`multi_action`).
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct MultiAppAnswer {
    /// The single-action fields.
    #[serde(flatten)]
    pub answer: AppAnswer,
    /// Several actions to run in order, instead of ControlLabel/ControlText/Function/Args.
    #[serde(rename = "Actions")]
    pub actions: Option<Vec<ActionAnswer>>,
}

/// A status the shell agent's model may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ShellAnswerStatus {
    /// Run the command and show its output.
    Continue,
    /// Run the command (if any) and end the subtask.
    Finish,
    /// End the subtask as impossible.
    Fail,
    /// Ask the person before running the command.
    Confirm,
}

/// The shell agent's answer as its prompt asks for it.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct ShellAnswer {
    /// What the last output shows.
    #[serde(rename = "Observation")]
    pub observation: String,
    /// Your reasoning.
    #[serde(rename = "Thought")]
    pub thought: String,
    /// The one shell command to run now, or empty.
    #[serde(rename = "Command")]
    pub command: Option<String>,
    /// The next status.
    #[serde(rename = "Status")]
    pub status: ShellAnswerStatus,
    /// A note for the person.
    #[serde(rename = "Comment")]
    pub comment: Option<String>,
    /// The subtask's result when you FINISH.
    #[serde(rename = "Result")]
    pub result: Option<String>,
}

/// A status the operator agent's model may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OperatorAnswerStatus {
    /// Act and look again.
    Continue,
    /// Act (if any) and end the subtask.
    Finish,
    /// End the subtask as impossible.
    Fail,
}

/// What the operator agent does at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperatorAnswerAction {
    /// A left click at (X, Y).
    Click,
    /// Type Text into the field at (X, Y).
    Type,
    /// No action.
    None,
}

/// The operator agent's answer as its prompt asks for it.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct OperatorAnswer {
    /// What the screenshot shows.
    #[serde(rename = "Observation")]
    pub observation: String,
    /// Your reasoning.
    #[serde(rename = "Thought")]
    pub thought: String,
    /// click, type or none.
    #[serde(rename = "Action")]
    pub action: Option<OperatorAnswerAction>,
    /// Window pixels from the left.
    #[serde(rename = "X")]
    pub x: Option<i64>,
    /// Window pixels from the top.
    #[serde(rename = "Y")]
    pub y: Option<i64>,
    /// Text to type (type only).
    #[serde(rename = "Text")]
    pub text: Option<String>,
    /// The next status.
    #[serde(rename = "Status")]
    pub status: OperatorAnswerStatus,
    /// The subtask's result when you FINISH.
    #[serde(rename = "Result")]
    pub result: Option<String>,
}

/// A judgement of the evaluation agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Judgement {
    /// Done.
    Yes,
    /// Not done.
    No,
    /// The trajectory does not show enough to decide.
    Unsure,
}

/// One sub-goal's judgement. The prompt shows `sub_scores` as an object keyed by sub-goal; a
/// strict schema cannot leave an object's keys open, so the schema asks for this list and the
/// parser reads both.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct SubScore {
    /// The sub-goal.
    pub sub_goal: String,
    /// Its judgement.
    pub score: Judgement,
}

/// The evaluation agent's answer as its prompt asks for it.
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct EvaluationAnswer {
    /// Why you judge so, citing steps.
    pub reason: Option<String>,
    /// The judgement of each sub-goal.
    pub sub_scores: Option<Vec<SubScore>>,
    /// Whether the task was completed.
    pub complete: Judgement,
}

/// The experience summary as a schema-constrained answer (the prompt asks for plain text;
/// [`crate::experience::kept_summary`] reads both).
#[derive(Debug, Clone, PartialEq, JsonSchema, Deserialize)]
pub struct SummaryAnswer {
    /// At most three short sentences: what was done, then tips for doing it again.
    #[serde(rename = "Summary")]
    pub summary: String,
}

/// The order in which answer fields are written where order matters (a model writes the
/// fields in the schema's order, and should observe and think before it acts); other names
/// follow in sorted order.
pub const FIELD_ORDER: &[&str] = &[
    "Observation",
    "Thought",
    "Current Sub-Task",
    "Message",
    "ControlLabel",
    "ControlText",
    "Function",
    "Args",
    "Action",
    "X",
    "Y",
    "Text",
    "Command",
    "Actions",
    "Plan",
    "Status",
    "Comment",
    "Questions",
    "Bash",
    "Result",
    "reason",
    "sub_scores",
    "sub_goal",
    "score",
    "complete",
    "Summary",
];

/// The strict JSON Schema of `T`: subschemas inlined, no `$schema`, `title` nor `format`,
/// and on every object `additionalProperties: false` and all its properties required
/// (optional fields are already nullable: they are `Option`s).
pub fn strict_schema<T: JsonSchema>() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    make_strict(&mut schema);
    bound_lists(&mut schema);
    nullable_as_any_of(&mut schema);
    schema
}

/// Most items of any list in an answer's schema (`maxItems`, in OpenAI's strict subset too):
/// a list the model writes has an end (SmolLM2-135M under a grammar wrote list items until
/// its context ran out).
pub const MAX_LIST_ITEMS: u64 = 10;

/// Most characters of any string in [`with_length_bounds`]'s form of a schema.
pub const MAX_TEXT_CHARS: u64 = 1000;

/// `maxItems` ([`MAX_LIST_ITEMS`]) on every list that has no bound.
fn bound_lists(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_list = match map.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
                _ => false,
            };
            if is_list && !map.contains_key("maxItems") {
                map.insert("maxItems".into(), Value::from(MAX_LIST_ITEMS));
            }
            map.values_mut().for_each(bound_lists);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_lists),
        _ => {}
    }
}

/// `{"type": [X, "null"], ...}` as `{"anyOf": [{"type": X, ...}, {"type": "null"}]}`, the
/// description kept outside. Both are strict JSON Schema, but llama.cpp's schema-to-grammar
/// converter (llama-cpp-python 0.3, and the servers built on it) keeps nothing of a type list
/// but the type names: a nullable list lost its `items` (SmolLM2 then wrote objects and lists
/// into `Message` until its context ran out) and a nullable enum its values.
fn nullable_as_any_of(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.values_mut().for_each(nullable_as_any_of);
            let Some(Value::Array(types)) = map.get("type") else {
                return;
            };
            let others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
            if types.len() != 2 || others.len() != 1 {
                return;
            }
            let description = map.remove("description");
            let mut inner = std::mem::take(map);
            inner.insert("type".into(), others[0].clone());
            if let Some(Value::Array(values)) = inner.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            let null = serde_json::json!({"type": "null"});
            map.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(inner), null]),
            );
            if let Some(d) = description {
                map.insert("description".into(), d);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_any_of),
        _ => {}
    }
}

/// `schema` with `maxLength` ([`MAX_TEXT_CHARS`]) on every string that has none, for the
/// servers that take any JSON Schema and turn it into a grammar (llama-cpp-python's
/// `json_object` with a `schema`): with bounded strings and lists every answer the grammar
/// allows has an end, where an unbounded one lets a small model write one string until its
/// context is full. OpenAI's strict subset has no `maxLength`, so the strict form
/// ([`strict_schema`]) goes without.
pub fn with_length_bounds(schema: &Value) -> Value {
    let mut out = schema.clone();
    add_max_length(&mut out);
    out
}

fn add_max_length(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_free_text = map.get("type") == Some(&Value::from("string"))
                && !map.contains_key("enum")
                && !map.contains_key("maxLength");
            if is_free_text {
                map.insert("maxLength".into(), Value::from(MAX_TEXT_CHARS));
            }
            map.values_mut().for_each(add_max_length);
        }
        Value::Array(items) => items.iter_mut().for_each(add_max_length),
        _ => {}
    }
}

fn make_strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for keyword in ["$schema", "title", "format"] {
                map.remove(keyword);
            }
            consts_to_enum(map);
            nullable_in_place(map);
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                let mut names: Vec<&String> = props.keys().collect();
                names.sort_by_key(|k| {
                    FIELD_ORDER
                        .iter()
                        .position(|f| *f == k.as_str())
                        .unwrap_or(usize::MAX)
                });
                let names: Vec<Value> = names.into_iter().cloned().map(Value::String).collect();
                for sub in props.values_mut() {
                    make_strict(sub);
                }
                map.insert("required".into(), Value::Array(names));
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (key, sub) in map.iter_mut() {
                if key != "properties" {
                    make_strict(sub);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// A `oneOf` of string constants (an enum whose variants have doc comments) as a plain
/// `enum`, each constant's meaning added to the description: the form every provider takes
/// (OpenAI's strict mode has no `oneOf`).
fn consts_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = map.get("oneOf") else {
        return;
    };
    let Some(consts) = alternatives
        .iter()
        .map(|a| {
            let c = a.get("const")?.as_str()?;
            Some((c.to_string(), a.get("description").and_then(Value::as_str)))
        })
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let meanings: Vec<String> = consts
        .iter()
        .filter_map(|(c, d)| d.map(|d| format!("{c}: {d}")))
        .collect();
    let names: Vec<Value> = consts.into_iter().map(|(c, _)| Value::String(c)).collect();
    map.remove("oneOf");
    map.insert("type".into(), Value::from("string"));
    map.insert("enum".into(), Value::Array(names));
    if !meanings.is_empty() {
        let before = map.get("description").and_then(Value::as_str).unwrap_or("");
        let text = format!("{before} {}", meanings.join(" "))
            .trim()
            .to_string();
        map.insert("description".into(), Value::String(text));
    }
}

/// `anyOf: [X, {"type": "null"}]` (an optional enum) as X with `null` added to its type and
/// its `enum`.
fn nullable_in_place(map: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = map.get_mut("anyOf") else {
        return;
    };
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    if alternatives.len() != 2 || !alternatives.iter().any(is_null) {
        return;
    }
    let Some(mut inner) = alternatives.iter().find(|a| !is_null(a)).cloned() else {
        return;
    };
    make_strict(&mut inner);
    let Value::Object(mut inner) = inner else {
        return;
    };
    let Some(Value::String(kind)) = inner.remove("type") else {
        return;
    };
    inner.insert("type".into(), Value::from(vec![kind, "null".to_string()]));
    if let Some(Value::Array(values)) = inner.get_mut("enum") {
        values.push(Value::Null);
    }
    map.remove("anyOf");
    let description = map.remove("description");
    map.extend(inner);
    if let Some(d) = description {
        map.insert("description".into(), d);
    }
}

fn named<T: JsonSchema>(name: &str) -> ResponseSchema {
    ResponseSchema {
        name: name.to_string(),
        schema: strict_schema::<T>(),
    }
}

/// The schema of the HostAgent's answer.
pub fn host_schema() -> ResponseSchema {
    named::<HostAnswer>("host_response")
}

/// The schema of an AppAgent's answer; with `multi_action`, `Actions` is one of its fields.
pub fn app_schema(multi_action: bool) -> ResponseSchema {
    if multi_action {
        named::<MultiAppAnswer>("app_response")
    } else {
        named::<AppAnswer>("app_response")
    }
}

/// The schema of the shell agent's answer.
pub fn shell_schema() -> ResponseSchema {
    named::<ShellAnswer>("shell_response")
}

/// The schema of the operator agent's answer.
pub fn operator_schema() -> ResponseSchema {
    named::<OperatorAnswer>("operator_response")
}

/// The schema of the evaluation agent's answer.
pub fn evaluation_schema() -> ResponseSchema {
    named::<EvaluationAnswer>("evaluation_response")
}

/// The schema of the experience summary.
pub fn summary_schema() -> ResponseSchema {
    named::<SummaryAnswer>("experience_summary")
}

/// The properties a schema makes required and not nullable (for tests that compare them
/// with what a parser requires).
pub fn non_nullable_fields(schema: &Value) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<String> = props
        .iter()
        .filter(|(_, s)| !accepts_null(s))
        .map(|(k, _)| k.clone())
        .collect();
    out.sort();
    out
}

fn accepts_null(schema: &Value) -> bool {
    let is_null = |v: &Value| v.as_str() == Some("null");
    match schema.get("type") {
        Some(Value::Array(types)) if types.iter().any(is_null) => return true,
        Some(t) if is_null(t) => return true,
        _ => {}
    }
    ["anyOf", "oneOf"].iter().any(|k| {
        schema
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(|alts| alts.iter().any(accepts_null))
    })
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

    /// Every object of a strict schema lists all its properties as required and allows no
    /// others (OpenAI's strict mode refuses anything else).
    fn assert_strict(schema: &Value, at: &str) {
        match schema {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    let mut names: Vec<&String> = props.keys().collect();
                    names.sort();
                    let mut required: Vec<&str> = map["required"]
                        .as_array()
                        .expect("required is a list")
                        .iter()
                        .filter_map(Value::as_str)
                        .collect();
                    required.sort_unstable();
                    assert_eq!(names, required, "at {at}");
                    assert_eq!(map["additionalProperties"], false, "at {at}");
                    for (k, v) in props {
                        assert_strict(v, &format!("{at}.{k}"));
                    }
                }
                for (k, v) in map.iter().filter(|(k, _)| *k != "properties") {
                    assert_strict(v, &format!("{at}/{k}"));
                }
                assert!(!map.contains_key("$ref"), "inlined at {at}");
            }
            Value::Array(items) => items.iter().for_each(|v| assert_strict(v, at)),
            _ => {}
        }
    }

    fn valid(schema: &ResponseSchema, answer: &Value) -> bool {
        let validator = jsonschema::validator_for(&schema.schema).expect("a valid JSON Schema");
        validator.is_valid(answer)
    }

    #[test]
    fn host_answers_validate_and_the_required_fields_are_the_parsers() {
        let schema = host_schema();
        assert_eq!(schema.name, "host_response");
        assert_strict(&schema.schema, "host");
        let answer = serde_json::json!({
            "Observation": "a calculator", "Thought": "hand it over",
            "Current Sub-Task": "compute 12*7", "Message": ["use the keypad"],
            "ControlLabel": "1", "ControlText": "Calculator", "Plan": [],
            "Status": "ASSIGN", "Comment": null, "Questions": null, "Bash": ""
        });
        assert!(valid(&schema, &answer));
        let parsed = HostResponse::parse(&answer.to_string()).expect("the parser reads it");
        assert_eq!(parsed.status, HostStatus::Assign);
        assert_eq!(parsed.current_subtask, "compute 12*7");
        // what the schema cannot leave out is what the parser requires
        assert_eq!(
            non_nullable_fields(&schema.schema),
            ["Observation", "Status", "Thought"]
        );
        for required in ["Observation", "Thought", "Status"] {
            let mut without = answer.clone();
            without.as_object_mut().map(|m| m.remove(required));
            assert!(!valid(&schema, &without), "{required}");
            assert!(
                HostResponse::parse(&without.to_string()).is_err(),
                "{required}"
            );
        }
        // the schema's statuses are the ones the parser reads
        for status in ["CONTINUE", "ASSIGN", "FINISH", "FAIL", "PENDING", "CONFIRM"] {
            assert!(HostStatus::parse(status).is_ok(), "{status}");
        }
        let mut bad = answer.clone();
        bad["Status"] = "GO".into();
        assert!(!valid(&schema, &bad));
        bad["Status"] = "ASSIGN".into();
        bad["Extra"] = "x".into();
        assert!(!valid(&schema, &bad), "no other properties");
    }

    #[test]
    fn app_answers_validate_and_the_required_fields_are_the_parsers() {
        for multi in [false, true] {
            let schema = app_schema(multi);
            assert_strict(&schema.schema, "app");
            let mut answer = serde_json::json!({
                "Observation": "o", "Thought": "t", "ControlLabel": "3",
                "ControlText": "Name", "Function": "set_text", "Args": "{\"text\": \"x\"}",
                "Status": "CONTINUE", "Comment": null, "Plan": ["save"], "Questions": null,
                "Result": null
            });
            if multi {
                answer["Actions"] = serde_json::json!([{"ControlLabel": "4",
                    "ControlText": null, "Function": "click", "Args": null}]);
            }
            assert!(valid(&schema, &answer), "multi {multi}");
            let parsed = AppResponse::parse(&answer.to_string()).expect("parsed");
            assert_eq!(parsed.args["text"], "x", "Args as JSON text is read");
            assert_eq!(parsed.actions.len(), usize::from(multi));
            assert_eq!(
                non_nullable_fields(&schema.schema),
                ["Observation", "Status", "Thought"]
            );
            let has_actions = schema.schema["properties"].get("Actions").is_some();
            assert_eq!(has_actions, multi);
        }
        for status in [
            "CONTINUE",
            "SCREENSHOT",
            "FINISH",
            "FAIL",
            "PENDING",
            "CONFIRM",
            "ERROR",
        ] {
            assert!(AppStatus::parse(status).is_ok(), "{status}");
        }
    }

    /// Every type list of `schema` (there must be none: llama.cpp's converter drops what
    /// goes with one) and every list without `maxItems`, as paths.
    fn type_lists_and_unbounded_lists(schema: &Value, at: &str, found: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                if map.get("type").is_some_and(Value::is_array) {
                    found.push(format!("type list at {at}"));
                }
                if map.get("type") == Some(&Value::from("array"))
                    && map.get("maxItems") != Some(&Value::from(MAX_LIST_ITEMS))
                {
                    found.push(format!("list without maxItems at {at}"));
                }
                for (k, v) in map {
                    type_lists_and_unbounded_lists(v, &format!("{at}/{k}"), found);
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|v| type_lists_and_unbounded_lists(v, at, found)),
            _ => {}
        }
    }

    /// A nullable field is `anyOf` of its schema whole (items, enum values) and null; every
    /// list is bounded; with_length_bounds bounds free text, not enums.
    #[test]
    fn nullable_fields_keep_their_constraints_and_lists_are_bounded() {
        for s in [
            host_schema(),
            app_schema(true),
            app_schema(false),
            shell_schema(),
            operator_schema(),
            evaluation_schema(),
            summary_schema(),
        ] {
            let mut found = Vec::new();
            type_lists_and_unbounded_lists(&s.schema, &s.name, &mut found);
            assert!(found.is_empty(), "{}: {found:?}", s.name);
        }
        let host = host_schema().schema;
        let message = &host["properties"]["Message"];
        assert_eq!(
            message["anyOf"],
            serde_json::json!([
                {"type": "array", "items": {"type": "string"}, "maxItems": MAX_LIST_ITEMS},
                {"type": "null"}
            ]),
            "{message}"
        );
        assert_eq!(message["description"], "Hints for the AppAgent.");
        let app = app_schema(true).schema;
        let actions = &app["properties"]["Actions"]["anyOf"][0];
        assert_eq!(actions["items"]["properties"]["Function"]["type"], "string");
        // a list of objects still validates, with at most MAX_LIST_ITEMS of them
        let schema = app_schema(true);
        let action = serde_json::json!({"ControlLabel": "4", "ControlText": null,
            "Function": "click", "Args": null});
        let mut answer = serde_json::json!({
            "Observation": "o", "Thought": "t", "ControlLabel": null, "ControlText": null,
            "Function": null, "Args": null, "Status": "CONTINUE", "Comment": null,
            "Plan": null, "Questions": null, "Result": null,
            "Actions": vec![action.clone(); MAX_LIST_ITEMS as usize]
        });
        assert!(valid(&schema, &answer));
        answer["Actions"] = Value::from(vec![action; MAX_LIST_ITEMS as usize + 1]);
        assert!(!valid(&schema, &answer), "one action too many");

        let bounded = with_length_bounds(&host);
        assert_eq!(
            bounded["properties"]["Thought"]["maxLength"],
            MAX_TEXT_CHARS
        );
        assert_eq!(
            bounded["properties"]["Message"]["anyOf"][0]["items"]["maxLength"],
            MAX_TEXT_CHARS
        );
        assert_eq!(
            bounded["properties"]["Bash"]["anyOf"][0]["maxLength"],
            MAX_TEXT_CHARS
        );
        assert!(bounded["properties"]["Status"].get("maxLength").is_none());
        assert!(host["properties"]["Thought"].get("maxLength").is_none());
        let validator = jsonschema::validator_for(&bounded).expect("valid");
        let mut answer = serde_json::json!({
            "Observation": "o", "Thought": "t", "Current Sub-Task": null, "Message": null,
            "ControlLabel": null, "ControlText": null, "Plan": null, "Status": "FINISH",
            "Comment": null, "Questions": null, "Bash": null
        });
        assert!(validator.is_valid(&answer));
        answer["Thought"] = Value::from("x".repeat(MAX_TEXT_CHARS as usize + 1));
        assert!(!validator.is_valid(&answer));
    }

    #[test]
    fn every_schema_is_strict_and_its_fields_are_ordered() {
        for s in [
            host_schema(),
            app_schema(true),
            shell_schema(),
            operator_schema(),
            evaluation_schema(),
            summary_schema(),
        ] {
            assert_strict(&s.schema, &s.name);
            assert!(
                s.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{}",
                s.name
            );
            for name in s.schema["properties"].as_object().expect("props").keys() {
                assert!(FIELD_ORDER.contains(&name.as_str()), "{name} has a place");
            }
        }
        let summary = summary_schema();
        assert!(valid(
            &summary,
            &serde_json::json!({"Summary": "Typed 12x7."})
        ));
        assert_eq!(non_nullable_fields(&summary.schema), ["Summary"]);
    }
}
