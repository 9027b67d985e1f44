//! Helpers shared by the agents of this crate: reading model answers tolerantly, archiving a
//! finished subtask, and where control goes after one.

use serde_json::{Map, Value};
use ufo_core::parse::parse_object;

/// The fields every agent answer of this crate must have ([`Fields::parse`] checks them).
const REQUIRED: [&str; 3] = ["Observation", "Thought", "Status"];

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
        for required in REQUIRED {
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

/// Check that the fields a response schema cannot leave out are the ones [`Fields::parse`]
/// requires: `answer` (valid, and read by `parse`) without any one of them is refused by the
/// schema's `validator` and by `parse` alike.
#[cfg(test)]
pub(crate) fn assert_schema_requires_the_parsers_fields<T>(
    schema: &Value,
    validator: &jsonschema::Validator,
    answer: &Value,
    parse: impl Fn(&str) -> Result<T, String>,
) {
    let mut required = REQUIRED.map(String::from).to_vec();
    required.sort();
    assert_eq!(ufo_core::response::non_nullable_fields(schema), required);
    for field in REQUIRED {
        let mut without = answer.clone();
        without.as_object_mut().map(|m| m.remove(field));
        assert!(!validator.is_valid(&without), "{field}");
        assert!(parse(&without.to_string()).is_err(), "{field}");
    }
}
