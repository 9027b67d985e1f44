//! Reading a scenario (by hand, for precise error locations: `apps[0].controls[2]: missing id`).

use std::collections::HashMap;

use serde_json::{Map, Value};
use ufo_core::action::canonical_name;

use super::world::*;

/// Errors in a scenario: what is wrong and where (`apps[0].controls[2]: missing id`).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("scenario is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON does not describe a valid scenario.
    #[error("{at}: {message}")]
    Invalid {
        /// Where, as a JSON path (`apps[0].controls[2].id`, or `scenario` for the root).
        at: String,
        /// What is wrong.
        message: String,
    },
    /// An error in a scenario file, with the file's path.
    #[error("scenario {path}: {source}")]
    InFile {
        /// The file.
        path: String,
        /// The error inside it.
        source: Box<ScenarioError>,
    },
}

pub(crate) fn invalid(at: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        at: at.into(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario parsing (by hand, for precise error locations)
// ---------------------------------------------------------------------------------------------

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, ScenarioError> {
    v.as_object()
        .ok_or_else(|| invalid(at, format!("expected an object, got {}", kind(v))))
}

pub(crate) fn opt_str(
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, ScenarioError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(
            format!("{at}.{key}"),
            format!("expected a string, got {}", kind(other)),
        )),
    }
}

pub(crate) fn req_str(
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<String, ScenarioError> {
    match opt_str(m, key, at)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(invalid(format!("{at}.{key}"), "must not be empty")),
        None => Err(invalid(at, format!("missing {key}"))),
    }
}

pub(crate) fn opt_bool(
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<bool>, ScenarioError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(invalid(
            format!("{at}.{key}"),
            format!("expected true or false, got {}", kind(other)),
        )),
    }
}

pub(crate) fn str_list(
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Vec<String>, ScenarioError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(invalid(
                    format!("{at}.{key}[{i}]"),
                    format!("expected a control id (string), got {}", kind(other)),
                )),
            })
            .collect(),
        Some(other) => Err(invalid(
            format!("{at}.{key}"),
            format!("expected a list of control ids, got {}", kind(other)),
        )),
    }
}

pub(crate) fn parse_control(v: &Value, at: &str) -> Result<SimControl, ScenarioError> {
    let m = object(v, at)?;
    let value = match m.get("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(other) => {
            return Err(invalid(
                format!("{at}.value"),
                format!("expected a string, got {}", kind(other)),
            ))
        }
    };
    Ok(SimControl {
        id: req_str(m, "id", at)?,
        role: opt_str(m, "role", at)?.unwrap_or_else(|| "control".into()),
        name: opt_str(m, "name", at)?.unwrap_or_default(),
        value,
        hidden: opt_bool(m, "hidden", at)?.unwrap_or(false),
        enabled: opt_bool(m, "enabled", at)?.unwrap_or(true),
        states: ufo_core::ports::ControlStates {
            focused: opt_bool(m, "focused", at)?.unwrap_or(false),
            checked: opt_bool(m, "checked", at)?.unwrap_or(false),
            selected: opt_bool(m, "selected", at)?.unwrap_or(false),
            expanded: opt_bool(m, "expanded", at)?.unwrap_or(false),
            editable: opt_bool(m, "editable", at)?.unwrap_or(false),
            place: Default::default(),
        },
        reveals: str_list(m, "reveals", at)?,
        hides: str_list(m, "hides", at)?,
        hover_reveals: str_list(m, "hover_reveals", at)?,
        opens: opt_str(m, "opens", at)?.filter(|s| !s.trim().is_empty()),
        closes: opt_bool(m, "closes", at)?.unwrap_or(false),
    })
}

/// Read an application: its main window, and its further windows (`"windows"`, each an
/// entry named `App/id` whose `owner` is filled in by the caller).
pub(crate) fn parse_app(v: &Value, at: &str) -> Result<(SimApp, Vec<SimApp>), ScenarioError> {
    let m = object(v, at)?;
    let name = req_str(m, "name", at)?;
    let process = opt_str(m, "process", at)?.unwrap_or_else(|| name.to_lowercase());
    let title = opt_str(m, "title", at)?.unwrap_or_else(|| name.clone());
    let running = opt_bool(m, "running", at)?.unwrap_or(true);
    let delay_ms = match m.get("delay_ms") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
        Some(other) => {
            return Err(invalid(
                format!("{at}.delay_ms"),
                format!(
                    "expected a whole number of milliseconds, got {}",
                    kind(other)
                ),
            ))
        }
    };
    let redraws_late = opt_bool(m, "redraws_late", at)?.unwrap_or(false);
    let launch = opt_str(m, "launch", at)?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| process.clone());
    let (controls, index) = parse_controls(m, at, &name)?;
    let window_ids = window_ids(m, at)?;
    check_opens(&controls, at, &name, &window_ids)?;
    let mut windows = Vec::new();
    if let Some(Value::Array(list)) = m.get("windows") {
        for (k, w) in list.iter().enumerate() {
            let wat = format!("{at}.windows[{k}]");
            let wm = object(w, &wat)?;
            let id = req_str(wm, "id", &wat)?;
            let (wcontrols, windex) = parse_controls(wm, &wat, &name)?;
            check_opens(&wcontrols, &wat, &name, &window_ids)?;
            windows.push(SimApp {
                name: format!("{name}/{id}"),
                process: process.clone(),
                title: opt_str(wm, "title", &wat)?.unwrap_or_else(|| id.clone()),
                running: opt_bool(wm, "open", &wat)?.unwrap_or(false),
                launch: String::new(),
                controls: wcontrols,
                index: windex,
                delay_ms,
                redraws_late,
                owner: Some((name.clone(), 0)),
            });
        }
    }
    Ok((
        SimApp {
            name,
            process,
            title,
            running,
            launch,
            controls,
            index,
            delay_ms,
            redraws_late,
            owner: None,
        },
        windows,
    ))
}

/// The ids of an application's further windows (`"windows": [{"id": ...}]`), unique.
fn window_ids(m: &Map<String, Value>, at: &str) -> Result<Vec<String>, ScenarioError> {
    let list = match m.get("windows") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(invalid(
                format!("{at}.windows"),
                format!("expected a list of windows, got {}", kind(other)),
            ))
        }
    };
    let mut ids: Vec<String> = Vec::with_capacity(list.len());
    for (k, w) in list.iter().enumerate() {
        let wat = format!("{at}.windows[{k}]");
        let id = req_str(object(w, &wat)?, "id", &wat)?;
        if ids.contains(&id) {
            return Err(invalid(
                format!("{wat}.id"),
                format!("duplicate window id {id:?}"),
            ));
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Check that every `opens` names a further window of the application.
fn check_opens(
    controls: &[SimControl],
    at: &str,
    app: &str,
    window_ids: &[String],
) -> Result<(), ScenarioError> {
    for (i, c) in controls.iter().enumerate() {
        if let Some(w) = &c.opens {
            if !window_ids.iter().any(|id| id == w) {
                return Err(invalid(
                    format!("{at}.controls[{i}].opens"),
                    format!(
                        "no window with id {w:?} in app {app:?}; list it in the app's \"windows\""
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Read a window's `controls`: unique ids, `reveals`/`hides`/`hover_reveals` naming controls
/// of the same window.
fn parse_controls(
    m: &Map<String, Value>,
    at: &str,
    name: &str,
) -> Result<(Vec<SimControl>, HashMap<String, usize>), ScenarioError> {
    let mut controls: Vec<SimControl> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    match m.get("controls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            controls.reserve(list.len());
            index.reserve(list.len());
            for (i, c) in list.iter().enumerate() {
                let cat = format!("{at}.controls[{i}]");
                let control = parse_control(c, &cat)?;
                if let Some(j) = index.insert(control.id.clone(), i) {
                    return Err(invalid(
                        format!("{cat}.id"),
                        format!(
                            "duplicate control id {:?} (first at {at}.controls[{j}])",
                            control.id
                        ),
                    ));
                }
                controls.push(control);
            }
        }
        Some(other) => {
            return Err(invalid(
                format!("{at}.controls"),
                format!("expected a list, got {}", kind(other)),
            ))
        }
    }
    for (i, c) in controls.iter().enumerate() {
        for (key, ids) in [
            ("reveals", &c.reveals),
            ("hides", &c.hides),
            ("hover_reveals", &c.hover_reveals),
        ] {
            for (k, id) in ids.iter().enumerate() {
                if !index.contains_key(id) {
                    return Err(invalid(
                        format!("{at}.controls[{i}].{key}[{k}]"),
                        format!("no control with id {id:?} in app {name:?}"),
                    ));
                }
            }
        }
    }
    Ok((controls, index))
}

pub(crate) fn parse_fault(v: &Value, at: &str, apps: &[SimApp]) -> Result<Fault, ScenarioError> {
    let m = object(v, at)?;
    let app_name = req_str(m, "app", at)?;
    let app = apps
        .iter()
        .position(|a| a.name.eq_ignore_ascii_case(&app_name))
        .ok_or_else(|| invalid(format!("{at}.app"), format!("no app named {app_name:?}")))?;
    let action_s = req_str(m, "action", at)?;
    let action: &'static str = match action_s.trim().to_ascii_lowercase().as_str() {
        "observe" | "screenshot" => OBSERVE,
        "launch" => LAUNCH,
        other => canonical_name(other).ok_or_else(|| {
            invalid(
                format!("{at}.action"),
                format!(
                    "unknown action {action_s:?}; use a function ({}), observe or launch",
                    ufo_core::action::FUNCTIONS.join(", ")
                ),
            )
        })?,
    };
    let control = opt_str(m, "control", at)?.filter(|c| !c.is_empty());
    if let Some(c) = &control {
        if apps[app].control(c).is_none() {
            return Err(invalid(
                format!("{at}.control"),
                format!("no control with id {c:?} in app {:?}", apps[app].name),
            ));
        }
    }
    let error = match m.get("error") {
        None | Some(Value::Null) => "injected fault".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(invalid(
                format!("{at}.error"),
                format!("expected a string, got {}", kind(other)),
            ))
        }
    };
    let remaining = match m.get("times") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => n.as_u64(),
        Some(other) => {
            return Err(invalid(
                format!("{at}.times"),
                format!("expected a positive integer, got {other}"),
            ))
        }
    };
    Ok(Fault {
        app,
        // observe and launch faults concern the whole app
        control: if action == OBSERVE || action == LAUNCH {
            None
        } else {
            control
        },
        action,
        error,
        remaining,
    })
}
