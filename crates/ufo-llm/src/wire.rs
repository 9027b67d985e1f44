//! The JSON text sent to providers: the answer fields of a schema in the prompts' order.

use serde_json::Value;

/// JSON text of `value` with the answer fields of every object in the order of
/// [`ufo_core::response::FIELD_ORDER`] (a model writes a schema's fields in its order, and
/// should observe and think before it acts); other keys keep their sorted order.
pub fn ordered_json(value: &Value) -> String {
    let mut out = String::new();
    write_ordered(value, &mut out);
    out
}

fn write_ordered(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| (field_rank(k), k.as_str()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_ordered(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ordered(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Where a key goes: its place in the answer order, or after all of them.
fn field_rank(key: &str) -> usize {
    ufo_core::response::FIELD_ORDER
        .iter()
        .position(|f| *f == key)
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answer_fields_are_written_in_the_prompts_order() {
        let v = serde_json::json!({"b": 1, "Status": "x", "Thought": "t", "Observation": "o",
            "a": [{"Args": 1, "Function": 2}]});
        assert_eq!(
            ordered_json(&v),
            r#"{"Observation":"o","Thought":"t","Status":"x","a":[{"Function":2,"Args":1}],"b":1}"#
        );
        let parsed: Value = serde_json::from_str(&ordered_json(&v)).unwrap();
        assert_eq!(parsed, v);
    }
}
