//! AppAgent functions: the canonical names of docs/responses.md, UFO's aliases, and their arguments.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Mouse button for `click`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Button {
    /// Left (default).
    Left,
    /// Right.
    Right,
    /// Middle.
    Middle,
}

/// Direction for `scroll`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScrollDirection {
    /// Up.
    Up,
    /// Down.
    Down,
}

/// One UI action, parsed and validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "function", rename_all = "snake_case")]
pub enum UiAction {
    /// Click a control.
    Click {
        /// Which button.
        button: Button,
        /// Double click.
        double: bool,
    },
    /// Replace a control's text.
    SetText {
        /// New text.
        text: String,
    },
    /// Type keys (`{ENTER}`, `{ctrl+s}`, ...).
    TypeKeys {
        /// The key sequence.
        keys: String,
    },
    /// Scroll a control.
    Scroll {
        /// Up or down.
        direction: ScrollDirection,
        /// Notches.
        amount: u32,
    },
    /// Choose an entry in a list or combo box.
    Select {
        /// The entry.
        item: String,
    },
    /// Read a control's text into the step's result.
    ReadText,
    /// Give a control the focus.
    Focus,
    /// Click at window coordinates; no control needed.
    ClickAt {
        /// X in window pixels.
        x: i32,
        /// Y in window pixels.
        y: i32,
    },
    /// Read the text drawn in the window's pixels where its accessibility tree names nothing
    /// (docs/sight.md); what is found is listed in the next observation. No control needed.
    ReadPixels,
    /// Move the pointer onto a control without pressing a button: what shows while the
    /// pointer rests there (a tooltip, a menu that opens on hover) is in the next observation.
    Hover,
}

/// The canonical function names, in the order the prompt lists them. `read_pixels` is not
/// among them: the prompt offers it only where the desktop reads pixels (docs/sight.md).
pub const FUNCTIONS: &[&str] = &[
    "click",
    "set_text",
    "type_keys",
    "scroll",
    "select",
    "read_text",
    "focus",
    "click_at",
    "hover",
];

impl UiAction {
    /// The canonical function name.
    pub fn name(&self) -> &'static str {
        match self {
            UiAction::Click { .. } => "click",
            UiAction::SetText { .. } => "set_text",
            UiAction::TypeKeys { .. } => "type_keys",
            UiAction::Scroll { .. } => "scroll",
            UiAction::Select { .. } => "select",
            UiAction::ReadText => "read_text",
            UiAction::Focus => "focus",
            UiAction::ClickAt { .. } => "click_at",
            UiAction::ReadPixels => "read_pixels",
            UiAction::Hover => "hover",
        }
    }

    /// Whether the action needs a control.
    pub fn needs_control(&self) -> bool {
        !matches!(self, UiAction::ClickAt { .. } | UiAction::ReadPixels)
    }

    /// The arguments as a JSON object (canonical names), for the trajectory.
    pub fn args(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("function");
        }
        v
    }

    /// Parse a function name (canonical or UFO alias, case-insensitive) and its `Args`.
    pub fn parse(function: &str, args: &Value) -> Result<UiAction, String> {
        let empty = Map::new();
        let args = match args {
            Value::Object(m) => m,
            Value::Null => &empty,
            Value::String(s) if s.trim().is_empty() => &empty,
            other => return Err(format!("Args must be a JSON object, got {other}")),
        };
        let canonical = canonical_name(function).ok_or_else(|| {
            format!(
                "unknown function {function:?}; use one of: {}",
                FUNCTIONS.join(", ")
            )
        })?;
        let action = match canonical {
            "click" => {
                let button = match str_arg(args, &["button"]).as_deref() {
                    None | Some("left") | Some("") => Button::Left,
                    Some("right") => Button::Right,
                    Some("middle") => Button::Middle,
                    Some(other) => {
                        return Err(format!(
                            "click: button {other:?} is not left, right or middle"
                        ))
                    }
                };
                let double = bool_arg(args, &["double"])?.unwrap_or(false);
                UiAction::Click { button, double }
            }
            "set_text" => UiAction::SetText {
                text: str_arg(args, &["text"]).ok_or("set_text needs Args.text")?,
            },
            "type_keys" => UiAction::TypeKeys {
                keys: str_arg(args, &["keys", "text"]).ok_or("type_keys needs Args.keys")?,
            },
            "scroll" => {
                let direction = match str_arg(args, &["direction"]).as_deref() {
                    None | Some("down") => ScrollDirection::Down,
                    Some("up") => ScrollDirection::Up,
                    Some(other) => {
                        return Err(format!("scroll: direction {other:?} is not up or down"))
                    }
                };
                let amount = match int_arg(args, &["amount", "wheel_dist"])? {
                    None => 3,
                    Some(n) => {
                        let abs = n.unsigned_abs();
                        u32::try_from(abs).map_err(|_| "scroll: amount is too large")?
                    }
                };
                UiAction::Scroll { direction, amount }
            }
            "select" => UiAction::Select {
                item: str_arg(args, &["item", "value", "text"]).ok_or("select needs Args.item")?,
            },
            "read_text" => UiAction::ReadText,
            "focus" => UiAction::Focus,
            "click_at" => {
                let x = int_arg(args, &["x"])?.ok_or("click_at needs Args.x")?;
                let y = int_arg(args, &["y"])?.ok_or("click_at needs Args.y")?;
                UiAction::ClickAt {
                    x: i32::try_from(x).map_err(|_| "click_at: x is out of range")?,
                    y: i32::try_from(y).map_err(|_| "click_at: y is out of range")?,
                }
            }
            "read_pixels" => UiAction::ReadPixels,
            "hover" => UiAction::Hover,
            _ => unreachable_name(canonical)?,
        };
        Ok(action)
    }
}

fn unreachable_name(name: &str) -> Result<UiAction, String> {
    Err(format!("function {name:?} has no parser"))
}

/// Map a function name or UFO alias to its canonical name.
pub fn canonical_name(function: &str) -> Option<&'static str> {
    let f = function.trim().to_ascii_lowercase();
    Some(match f.as_str() {
        "click" | "click_input" => "click",
        "set_text" | "set_edit_text" => "set_text",
        "type_keys" | "keyboard_input" => "type_keys",
        "scroll" | "wheel_mouse_input" => "scroll",
        "select" => "select",
        "read_text" | "texts" => "read_text",
        "focus" => "focus",
        "click_at" | "click_on_coordinates" => "click_at",
        "read_pixels" => "read_pixels",
        "hover" | "mouse_hover" => "hover",
        _ => return None,
    })
}

fn str_arg(args: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match args.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    })
}

fn bool_arg(args: &Map<String, Value>, keys: &[&str]) -> Result<Option<bool>, String> {
    for k in keys {
        match args.get(*k) {
            None | Some(Value::Null) => continue,
            Some(Value::Bool(b)) => return Ok(Some(*b)),
            Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                "true" | "yes" => return Ok(Some(true)),
                "false" | "no" => return Ok(Some(false)),
                _ => return Err(format!("Args.{k} must be true or false, got {s:?}")),
            },
            Some(other) => return Err(format!("Args.{k} must be true or false, got {other}")),
        }
    }
    Ok(None)
}

fn int_arg(args: &Map<String, Value>, keys: &[&str]) -> Result<Option<i64>, String> {
    for k in keys {
        match args.get(*k) {
            None | Some(Value::Null) => continue,
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return Ok(Some(i));
                }
                if let Some(f) = n.as_f64() {
                    if f.is_finite() && f.abs() < 1e9 {
                        return Ok(Some(f.round() as i64));
                    }
                }
                return Err(format!("Args.{k} must be an integer, got {n}"));
            }
            Some(Value::String(s)) => {
                return s
                    .trim()
                    .parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("Args.{k} must be an integer, got {s:?}"))
            }
            Some(other) => return Err(format!("Args.{k} must be an integer, got {other}")),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_map_to_canonical_actions() {
        let a = UiAction::parse("click_input", &json!({"button": "right"}));
        assert_eq!(
            a,
            Ok(UiAction::Click {
                button: Button::Right,
                double: false
            })
        );
        let a = UiAction::parse("set_edit_text", &json!({"text": "hi"}));
        assert_eq!(a, Ok(UiAction::SetText { text: "hi".into() }));
        let a = UiAction::parse("keyboard_input", &json!({"keys": "{ENTER}"}));
        assert_eq!(
            a,
            Ok(UiAction::TypeKeys {
                keys: "{ENTER}".into()
            })
        );
        let a = UiAction::parse("wheel_mouse_input", &json!({"direction": "up"}));
        assert_eq!(
            a,
            Ok(UiAction::Scroll {
                direction: ScrollDirection::Up,
                amount: 3
            })
        );
        assert_eq!(UiAction::parse("texts", &json!({})), Ok(UiAction::ReadText));
        let look = UiAction::parse("Read_Pixels", &Value::Null);
        assert_eq!(look, Ok(UiAction::ReadPixels));
        assert!(!UiAction::ReadPixels.needs_control());
        assert_eq!(UiAction::ReadPixels.name(), "read_pixels");
        assert_eq!(
            UiAction::parse("click_on_coordinates", &json!({"x": 3, "y": "4"})),
            Ok(UiAction::ClickAt { x: 3, y: 4 })
        );
        assert_eq!(
            UiAction::parse("mouse_hover", &json!({})),
            Ok(UiAction::Hover)
        );
        assert_eq!(UiAction::parse("Hover", &Value::Null), Ok(UiAction::Hover));
        assert!(UiAction::Hover.needs_control());
        assert_eq!(UiAction::Hover.args(), json!({}));
    }

    #[test]
    fn bad_functions_and_args_are_explained() {
        let e = UiAction::parse("drag", &json!({})).unwrap_err();
        assert!(e.contains("unknown function") && e.contains("click"), "{e}");
        let e = UiAction::parse("set_text", &json!({})).unwrap_err();
        assert!(e.contains("Args.text"), "{e}");
        let e = UiAction::parse("click", &json!({"button": "side"})).unwrap_err();
        assert!(e.contains("side"), "{e}");
        let e = UiAction::parse("click", &json!([1])).unwrap_err();
        assert!(e.contains("object"), "{e}");
    }

    #[test]
    fn args_round_trip_without_function_tag() {
        let a = UiAction::SetText { text: "x".into() };
        assert_eq!(a.args(), json!({"text": "x"}));
        assert_eq!(a.name(), "set_text");
    }
}
