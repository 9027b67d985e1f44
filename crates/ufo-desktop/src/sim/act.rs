//! What an action does in the simulation: who may act (the window, the control, faults, the
//! key syntax), the record of every action that reached the desktop, and each function's
//! effect on the scenario's state.

use std::collections::HashSet;

use ufo_core::keys::KeyPress;
use ufo_core::{DesktopError, UiAction};

use super::world::*;

/// Note an action that reached the simulated desktop (`ok`: it was not refused).
fn note(st: &mut State, ai: usize, control: Option<&str>, action: &UiAction, ok: bool) {
    let app = st.apps[ai].name.clone();
    st.actions.push(ActionRecord::Ui {
        app,
        control: control.map(str::to_string),
        action: action.name().to_string(),
        args: action.args(),
        ok,
    });
}

/// An action on application `ai` without a control (`click_at`): refused when its function
/// needs a control, failed by a fault of the scenario.
pub(super) fn without_control(
    st: &mut State,
    ai: usize,
    action: &UiAction,
) -> Result<String, DesktopError> {
    let name = action.name();
    if action.needs_control() {
        return Err(DesktopError::Unsupported(format!(
            "{name} needs a control; pick one by its label"
        )));
    }
    if let Some(error) = st.fault(ai, None, name) {
        note(st, ai, None, action, false);
        return Err(DesktopError::ActionFailed(error));
    }
    if matches!(action, UiAction::ReadPixels) {
        note(st, ai, None, action, false);
        return Err(no_pixels());
    }
    note(st, ai, None, action, true);
    Ok(match action {
        UiAction::ClickAt { x, y } => format!("clicked at ({x}, {y})"),
        _ => format!("{name} done"),
    })
}

/// `read_pixels` in the simulation: its windows are drawn from their controls, so their
/// pixels hold nothing the controls do not say (its observations never offer the function).
fn no_pixels() -> DesktopError {
    DesktopError::Unsupported(
        "read_pixels: the simulated desktop draws its windows from their controls, there is \
         no text in its pixels to read; use read_text on a control"
            .into(),
    )
}

/// The control `cid` of application `ai`, ready for `action`, with the keys it types: none
/// when it is hidden; refused (and noted as refused) when it is disabled, a fault of the
/// scenario fails the action, or its keys do not parse.
pub(super) fn ready_control(
    st: &mut State,
    ai: usize,
    cid: &str,
    action: &UiAction,
) -> Result<(usize, Vec<KeyPress>), DesktopError> {
    let Some(ci) = st.apps[ai]
        .control(cid)
        .filter(|&ci| !st.apps[ai].controls[ci].hidden)
    else {
        return Err(DesktopError::NoControl {
            window: st.apps[ai].name.clone(),
            control: cid.to_string(),
        });
    };
    if !st.apps[ai].controls[ci].enabled {
        note(st, ai, Some(cid), action, false);
        return Err(DesktopError::ActionFailed("control is disabled".into()));
    }
    if let Some(error) = st.fault(ai, Some(cid), action.name()) {
        note(st, ai, Some(cid), action, false);
        return Err(DesktopError::ActionFailed(error));
    }
    // the one key parser of every desktop: a key string the live desktop refuses is
    // refused here too
    let presses = match action {
        UiAction::TypeKeys { keys } => match ufo_core::keys::parse_keys(keys) {
            Ok(p) => p,
            Err(e) => {
                note(st, ai, Some(cid), action, false);
                return Err(DesktopError::ActionFailed(e.to_string()));
            }
        },
        _ => Vec::new(),
    };
    note(st, ai, Some(cid), action, true);
    Ok((ci, presses))
}

/// What `action` (accepted) does to control `ci` of application `ai`: the result text.
pub(super) fn perform(
    st: &mut State,
    ai: usize,
    ci: usize,
    action: &UiAction,
    presses: &[KeyPress],
) -> String {
    let app = &mut st.apps[ai];
    let label = app.controls[ci].label().to_string();
    match action {
        UiAction::Click { .. } => click(st, ai, ci),
        UiAction::SetText { text } => {
            app.controls[ci].value = Some(text.clone());
            format!("set the text of {label} to {text:?}")
        }
        UiAction::TypeKeys { .. } => {
            let value = app.controls[ci].value.get_or_insert_with(String::new);
            ufo_core::keys::apply_to_text(value, presses);
            format!("typed into {label}; its text is now {value:?}")
        }
        UiAction::Select { item } => {
            app.controls[ci].value = Some(item.clone());
            format!("selected {item:?} in {label}")
        }
        UiAction::ReadText => {
            let c = &app.controls[ci];
            c.value.clone().unwrap_or_else(|| c.name.clone())
        }
        UiAction::Focus => format!("focused {label}"),
        UiAction::Scroll { direction, amount } => {
            let dir = match direction {
                ufo_core::ScrollDirection::Up => "up",
                ufo_core::ScrollDirection::Down => "down",
            };
            format!("scrolled {label} {dir} by {amount}")
        }
        UiAction::ClickAt { x, y } => format!("clicked at ({x}, {y}) in {label}"),
        UiAction::Hover => hover(st, ai, ci),
        // `act_now` sends it to `without_control`, which refuses it
        UiAction::ReadPixels => no_pixels().to_string(),
    }
}

/// The pointer rests on control `ci` of application `ai`: its `hover_reveals` show until the
/// next action ([`end_hover`]).
fn hover(st: &mut State, ai: usize, ci: usize) -> String {
    let app = &mut st.apps[ai];
    let label = app.controls[ci].label().to_string();
    let mut ids: Vec<usize> = app.controls[ci]
        .hover_reveals
        .iter()
        .filter_map(|id| app.control(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut shown = Vec::new();
    let mut names = Vec::new();
    for j in ids {
        let c = &mut app.controls[j];
        if c.hidden {
            c.hidden = false;
            shown.push(j);
            names.push(c.label().to_string());
        }
    }
    st.hovered = Some((ai, shown));
    if names.is_empty() {
        format!("the pointer rests on {label}")
    } else {
        format!(
            "the pointer rests on {label}; now visible: {}",
            name_list(&names)
        )
    }
}

/// The pointer leaves the control it rested on: what its hover showed is hidden again.
pub(super) fn end_hover(st: &mut State) {
    if let Some((ai, shown)) = st.hovered.take() {
        if let Some(app) = st.apps.get_mut(ai) {
            for j in shown {
                if let Some(c) = app.controls.get_mut(j) {
                    c.hidden = true;
                }
            }
        }
    }
}

/// A click on control `ci` of application `ai`: it reveals and hides controls (by position,
/// in scenario order: a control both revealed and hidden ends hidden), may close its window
/// and open another; the text says what changed.
fn click(st: &mut State, ai: usize, ci: usize) -> String {
    let app = &mut st.apps[ai];
    let label = app.controls[ci].label().to_string();
    let positions = |ids: &[String]| {
        let mut v: Vec<usize> = ids.iter().filter_map(|id| app.control(id)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let hides = positions(&app.controls[ci].hides);
    let hidden_by_click: HashSet<usize> = hides.iter().copied().collect();
    let reveals = positions(&app.controls[ci].reveals);
    let mut shown = Vec::new();
    for j in reveals {
        let c = &mut app.controls[j];
        if c.hidden && !hidden_by_click.contains(&j) {
            c.hidden = false;
            shown.push(c.label().to_string());
        }
    }
    let mut gone = Vec::new();
    for j in hides {
        let c = &mut app.controls[j];
        if !c.hidden {
            c.hidden = true;
            gone.push(c.label().to_string());
        }
    }
    let mut s = format!("clicked {label}");
    if !shown.is_empty() {
        s.push_str(&format!("; now visible: {}", name_list(&shown)));
    }
    if !gone.is_empty() {
        s.push_str(&format!("; now hidden: {}", name_list(&gone)));
    }
    let opens = app.controls[ci]
        .opens
        .as_ref()
        .map(|id| format!("{}/{id}", app.app_name()));
    if app.controls[ci].closes {
        app.running = false;
        s.push_str(&format!("; closed window {:?}", app.title));
    }
    if let Some(w) = opens.and_then(|name| st.apps.iter_mut().find(|a| a.name == name)) {
        w.running = true;
        s.push_str(&format!("; opened window {:?}", w.title));
    }
    s
}
