//! Checking a tool's `Args` against its input schema (JSON Schema, with the `jsonschema`
//! crate) before any call, so a mismatch goes back to the model instead of to the server.

use serde_json::{Map, Value};
use ufo_core::{ToolError, ToolSpec};

/// Check `args` against `tool.input_schema`. `null` Args count as `{}`. Every violation is
/// listed, each with the place in the Args where it is (e.g. `at /path: 3 is not of type
/// "string"`).
pub fn validate(tool: &ToolSpec, args: &Value) -> Result<(), ToolError> {
    let empty = Value::Object(Map::new());
    let args = if args.is_null() { &empty } else { args };
    let validator =
        jsonschema::validator_for(&tool.input_schema).map_err(|e| ToolError::BadArgs {
            tool: tool.name.clone(),
            message: format!("the tool's input schema cannot be used: {e}"),
        })?;
    let errors: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ToolError::BadArgs {
            tool: tool.name.clone(),
            message: format!("{}; the schema is {}", errors.join("; "), tool.input_schema),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Write a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"},
                "content": {"type": "string"}}, "required": ["path", "content"]}),
            source: "fs".into(),
        }
    }

    #[test]
    fn args_are_checked_against_the_schema() {
        assert!(validate(&tool(), &json!({"path": "a", "content": "b"})).is_ok());
        let e = validate(&tool(), &json!({"path": "a"})).expect_err("missing content");
        assert!(
            e.to_string().contains("\"content\" is a required property"),
            "{e}"
        );
        let e = validate(&tool(), &json!({"path": 3, "content": "b"})).expect_err("bad type");
        assert!(e.to_string().contains("at /path"), "{e}");
        let e = validate(&tool(), &Value::Null).expect_err("null is {}");
        assert!(
            e.to_string().contains("\"path\" is a required property"),
            "{e}"
        );
    }
}
