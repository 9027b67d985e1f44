//! Helpers shared by the agents of this crate: reading model answers tolerantly, archiving a
//! finished subtask, and where control goes after one.

use serde_json::{Map, Value};
use ufo_core::parse::parse_object;

/// A model answer's fields, by normalised name (lower case, letters and digits only), so
/// `ControlText`, `control_text` and `Control Text` are one field.
pub(crate) struct Fields(Map<String, Value>);

fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl Fields {
    /// Parse a raw answer (code fences, prose around it and trailing commas are repaired) and
    /// check the required fields `Observation`, `Thought`, `Status`.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let obj = parse_object(raw)?;
        let f = Fields(obj.into_iter().map(|(k, v)| (norm(&k), v)).collect());
        for required in ["Observation", "Thought", "Status"] {
            if !f.0.contains_key(&norm(required)) {
                return Err(format!("missing required field {required:?}"));
            }
        }
        Ok(f)
    }

    /// A field as text (numbers are written out; absent or null: empty).
    pub(crate) fn text(&self, name: &str) -> String {
        match self.0.get(&norm(name)) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(other) => other.to_string(),
        }
    }

    /// A field as a number, if it is one (or a string holding one).
    pub(crate) fn number(&self, name: &str) -> Option<i64> {
        match self.0.get(&norm(name))? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.round() as i64)),
            Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f.round() as i64),
            _ => None,
        }
    }
}

pub(crate) use ufo_core::agent::{clip, hand_back, Ending, SubtaskLog, SubtaskOutcome};

/// The last `keep` memory lines, numbered, as one text.
pub(crate) fn recent(memory: &[String], keep: usize) -> String {
    ufo_core::agent::recent(memory, keep).join("\n")
}
