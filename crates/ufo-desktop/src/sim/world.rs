//! The world of a simulated desktop: applications, their controls, faults, and what happened.

use std::collections::HashMap;

use serde_json::{json, Value};
use ufo_core::{DesktopError, WindowId};

/// One action that reached the simulated desktop, as listed in `final_state().actions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionRecord {
    /// A UI action on a control (or, for `click_at`, on the window).
    Ui {
        /// Application name.
        app: String,
        /// Control id (`None` for `click_at` without a control).
        control: Option<String>,
        /// Canonical function name ([`ufo_core::UiAction::name`]).
        action: String,
        /// Arguments ([`ufo_core::UiAction::args`]).
        args: Value,
        /// `false` when a fault (or a disabled control) made it fail.
        ok: bool,
    },
    /// An application launch.
    Launch {
        /// Application name.
        app: String,
        /// `false` when a `launch` fault made it fail.
        ok: bool,
    },
    /// A shell command that launched nothing (never run on the machine).
    Shell {
        /// The command as given.
        command: String,
    },
    /// An application's window closed through the port (`Desktop::close`).
    Close {
        /// Application name.
        app: String,
    },
}

impl ActionRecord {
    /// The JSON form used in `desktop_final.json`: UI actions as
    /// `{"app","control","action","args","ok"}`, launches as `{"app","action":"launch"}`
    /// (with `"ok": false` added only for a failed launch), shell commands as
    /// `{"action":"shell","args":{"command":...}}`, closed windows as `{"app","action":"close"}`.
    pub fn to_json(&self) -> Value {
        match self {
            ActionRecord::Ui {
                app,
                control,
                action,
                args,
                ok,
            } => json!({"app": app, "control": control, "action": action, "args": args, "ok": ok}),
            ActionRecord::Launch { app, ok: true } => json!({"app": app, "action": "launch"}),
            ActionRecord::Launch { app, ok: false } => {
                json!({"app": app, "action": "launch", "ok": false})
            }
            ActionRecord::Shell { command } => {
                json!({"action": "shell", "args": {"command": command}})
            }
            ActionRecord::Close { app } => json!({"app": app, "action": "close"}),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SimControl {
    pub(crate) id: String,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) value: Option<String>,
    pub(crate) hidden: bool,
    pub(crate) enabled: bool,
    pub(crate) states: ufo_core::ports::ControlStates,
    pub(crate) reveals: Vec<String>,
    pub(crate) hides: Vec<String>,
    /// Shown while the pointer rests on this control (`hover`), hidden again by the next
    /// action (a tooltip).
    pub(crate) hover_reveals: Vec<String>,
    /// A click opens this further window of the same application (its `windows[].id`).
    pub(crate) opens: Option<String>,
    /// A click closes the window the control is in.
    pub(crate) closes: bool,
}

impl SimControl {
    pub(crate) fn label(&self) -> &str {
        if self.name.is_empty() {
            &self.id
        } else {
            &self.name
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SimApp {
    pub(crate) name: String,
    pub(crate) process: String,
    pub(crate) title: String,
    pub(crate) running: bool,
    pub(crate) launch: String,
    pub(crate) controls: Vec<SimControl>,
    /// Position in `controls` of each control id (ids are unique), so that lookups by id stay
    /// constant-time in scenarios of hundreds of thousands of controls.
    pub(crate) index: HashMap<String, usize>,
    /// Milliseconds each observation of this app takes (a slow application).
    pub(crate) delay_ms: u64,
    /// Its screen changes after the desktop's wait for them (`"redraws_late"`): every action
    /// reports that it changed nothing on the screen, whatever it did to the controls.
    pub(crate) redraws_late: bool,
    /// For a further window of an application (`"windows"` in the scenario): the
    /// application's name and the position of its main window, whose process id it shares.
    pub(crate) owner: Option<(String, usize)>,
}

impl SimApp {
    /// The position of the control `id`.
    pub(crate) fn control(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The application this window belongs to (its own name for a main window).
    pub(crate) fn app_name(&self) -> &str {
        self.owner.as_ref().map_or(&self.name, |(name, _)| name)
    }
}

/// Slots past this one are drawn on top of each other (the window is at most this tall).
pub(crate) const MAX_SLOT: usize = 200;

/// How many names a click's "now visible"/"now hidden" lists spell out.
pub(crate) const LISTED_NAMES: usize = 50;

/// `names` joined with ", ", at most [`LISTED_NAMES`] of them, then how many more there are.
pub(crate) fn name_list(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(LISTED_NAMES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LISTED_NAMES {
        s.push_str(&format!(" and {} more", names.len() - LISTED_NAMES));
    }
    s
}

/// Whether the control in `slot` of `controls` shows in the picture: every control in the
/// first [`MAX_SLOT`] slots, and of the ones in later slots (all drawn at the same place,
/// each covering the one before) only the last visible one. Skipping the covered ones keeps
/// drawing a window of 220k controls as fast as drawing one of 200, with the same pixels.
pub(crate) fn drawn(controls: &[SimControl], slot: usize, last_visible: Option<usize>) -> bool {
    !controls[slot].hidden && (slot < MAX_SLOT || Some(slot) == last_visible)
}

/// The last visible control's slot.
pub(crate) fn last_visible(controls: &[SimControl]) -> Option<usize> {
    controls.iter().rposition(|c| !c.hidden)
}

/// What a fault applies to, besides UI functions.
pub(crate) const OBSERVE: &str = "observe";
pub(crate) const LAUNCH: &str = "launch";

#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) app: usize,
    pub(crate) control: Option<String>,
    /// Canonical function name, `observe` or `launch`.
    pub(crate) action: &'static str,
    pub(crate) error: String,
    pub(crate) remaining: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) apps: Vec<SimApp>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) actions: Vec<ActionRecord>,
    /// whether the last action changed what a person could see
    pub(crate) last_changed: Option<bool>,
    /// a scripted take-over by the person (`"takeover"` in the scenario)
    pub(crate) takeover: Option<ScriptedTakeover>,
    /// observations made so far (the take-over's trigger)
    pub(crate) observations: u32,
    /// set while the person has the desktop: what they did
    pub(crate) taken: Option<String>,
    /// the controls a `hover` showed (app index, control indexes), hidden by the next action
    pub(crate) hovered: Option<(usize, Vec<usize>)>,
}

/// A scripted take-over: right after the agent's `after_observations`-th observation the
/// person takes the desktop, sets a control's value (the screen changes under the agent), and
/// hands it back on the `hand_back_after`-th wait (never when `None`).
#[derive(Debug, Clone)]
pub(crate) struct ScriptedTakeover {
    pub(crate) after_observations: u32,
    /// (app index, control index, new value)
    pub(crate) set: Option<(usize, usize, String)>,
    pub(crate) hand_back_after: Option<u32>,
    pub(crate) waits: u32,
    pub(crate) fired: bool,
}

impl State {
    /// Fire the first matching fault (counting down `times`), returning its error.
    pub(crate) fn fault(
        &mut self,
        app: usize,
        control: Option<&str>,
        action: &str,
    ) -> Option<String> {
        let f = self.faults.iter_mut().find(|f| {
            f.app == app
                && f.action == action
                && f.remaining != Some(0)
                && (f.control.is_none() || f.control.as_deref() == control)
        })?;
        if let Some(n) = f.remaining.as_mut() {
            *n -= 1;
        }
        Some(f.error.clone())
    }

    pub(crate) fn running_app(&self, window_id: &WindowId) -> Result<usize, DesktopError> {
        let window_id = window_id.as_str();
        self.apps
            .iter()
            .position(|a| a.running && a.name == window_id)
            .or_else(|| {
                self.apps
                    .iter()
                    .position(|a| a.running && a.name.eq_ignore_ascii_case(window_id))
            })
            .ok_or_else(|| DesktopError::NoWindow(window_id.to_string()))
    }

    pub(crate) fn find_app(&self, name: &str) -> Option<usize> {
        let name = name.trim();
        self.apps
            .iter()
            .position(|a| a.name.eq_ignore_ascii_case(name))
            .or_else(|| {
                self.apps
                    .iter()
                    .position(|a| a.process.eq_ignore_ascii_case(name))
            })
    }
}
