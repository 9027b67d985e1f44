//! The simulated desktop (`--desktop sim:FILE`): an in-process, deterministic [`Desktop`]
//! loaded from a JSON scenario.
//!
//! The scenario format is the contract of docs/formats.md ("Simulated desktop"):
//!
//! ```json
//! {"apps": [{
//!    "name": "Writer", "process": "writer", "title": "report - Writer",
//!    "running": true, "launch": "writer",
//!    "controls": [
//!      {"id": "export", "role": "button", "name": "Export", "reveals": ["dlg_ok"]},
//!      {"id": "dlg_ok", "role": "button", "name": "OK", "hidden": true, "hides": ["dlg_ok"]},
//!      {"id": "name", "role": "edit", "name": "File name", "value": ""}
//!    ]}],
//!  "faults": [{"app": "Writer", "control": "export", "action": "click", "error": "access denied"}]}
//! ```
//!
//! Defaults: `process` = the name in lower case, `title` = the name, `running` = true,
//! `launch` = `process`, `role` = `"control"`, `name` = `""`, `value` = none, `hidden` = false,
//! `enabled` = true, and the states `focused`, `checked`, `selected`, `expanded`, `editable` =
//! false. Unknown fields are ignored. Control ids must be unique within an app and
//! `reveals`/`hides` must name controls of the same app.
//!
//! `hover_reveals` (an extension; ids of hidden controls of the same app) shows those controls
//! while the pointer rests on the control (`hover`), as a tooltip shows; the next action, of
//! any function, hides them again.
//!
//! The code: `scenario.rs` reads a scenario, `world.rs` holds the applications, their controls,
//! faults and the record of actions, `render.rs` the layout and the pictures; this file is
//! the [`Desktop`] itself.
//!
//! Faults: `action` is a function name (canonical or UFO alias) and makes that action on that
//! control fail with `error`. Extensions: `control` may be omitted (the fault then applies to
//! every control of the app); `"action": "observe"` (or `"screenshot"`) makes observing the app
//! fail with [`DesktopError::Observe`] (a *system* error, which drives an agent to ERROR);
//! An app's `"delay_ms": N` makes each observation of it take N ms (a slow application);
//! `"redraws_late": true` makes every action on it report that it changed nothing on the
//! screen (a loaded machine whose application redraws after the wait), whatever it did.
//! `"action": "launch"` makes launching the app fail; `"times": N` lets the fault fire only
//! `N` times (default: every time). `error` defaults to `"injected fault"`.
//!
//! Layout: every window is 480 px wide; each control has a fixed slot (by scenario order) in
//! one column, so a control keeps its rectangle when others appear or disappear. Screenshots
//! draw the visible controls as boxes; the annotated one numbers them `1..n` in observation
//! order (see [`crate::annotate`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::{json, Value};
use ufo_core::{
    Control, Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowId,
    WindowInfo, WindowObservation,
};

use crate::annotate::{self, RgbaImage};

mod act;
mod render;
mod scenario;
mod world;

use render::*;
pub use scenario::ScenarioError;
use scenario::*;
pub use world::ActionRecord;
use world::*;

/// The simulated desktop. Cheap to query, deterministic, never touches the machine.
///
/// Build it with [`SimDesktop::from_json_str`] or [`SimDesktop::load`], hand it to the engine
/// as a [`Desktop`], and inspect it afterwards with [`Desktop::final_state`],
/// [`SimDesktop::actions`], [`SimDesktop::control_value`] and [`SimDesktop::is_running`].
///
/// ```
/// use ufo_core::{Button, Desktop, UiAction, WindowId};
/// use ufo_desktop::SimDesktop;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let desktop = SimDesktop::from_json_str(r#"{"apps": [{"name": "Writer", "controls": [
///     {"id": "export", "role": "button", "name": "Export", "reveals": ["ok"]},
///     {"id": "ok", "role": "button", "name": "OK", "hidden": true}]}]}"#)?;
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// // a simulated window's id is its application's name
/// let writer = WindowId::from("Writer");
/// rt.block_on(async {
///     let obs = desktop.observe(&writer).await?;
///     assert_eq!(obs.controls.len(), 1); // "ok" is hidden; label 1 = "export"
///     let click = UiAction::Click { button: Button::Left, double: false };
///     desktop.act(&writer, Some("export"), &click).await?;
///     assert_eq!(desktop.observe(&writer).await?.controls.len(), 2);
///     Ok::<_, ufo_core::DesktopError>(())
/// })?;
/// let state = desktop.final_state().unwrap_or_default();
/// assert_eq!(state["actions"][0]["action"], "click");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SimDesktop {
    state: Mutex<State>,
}

// Layout (window pixels).
/// Read the scenario's `"takeover"`: `{"after_observations": N, "app": A, "control": C,
/// "value": V, "hand_back_after": K}` (`app`/`control`/`value` optional; `hand_back_after`
/// defaults to 1, `null` never hands back).
fn parse_takeover(v: &Value, apps: &[SimApp]) -> Result<ScriptedTakeover, ScenarioError> {
    let at = "takeover";
    let o = v
        .as_object()
        .ok_or_else(|| invalid(at, format!("expected an object, got {}", kind(v))))?;
    let count = |key: &str| -> Result<Option<u32>, ScenarioError> {
        match o.get(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(u32::MAX)),
            Some(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| invalid(format!("{at}.{key}"), "expected a whole number")),
        }
    };
    let after_observations = count("after_observations")?.unwrap_or(1);
    let hand_back_after = match count("hand_back_after")? {
        None => Some(1),
        Some(u32::MAX) => None,
        Some(n) => Some(n),
    };
    let text = |key: &str| o.get(key).and_then(Value::as_str);
    let set = match (text("app"), text("control")) {
        (Some(app), Some(control)) => {
            let a = apps
                .iter()
                .position(|x| x.name.eq_ignore_ascii_case(app))
                .ok_or_else(|| invalid(format!("{at}.app"), format!("no app {app:?}")))?;
            let c = apps[a].control(control).ok_or_else(|| {
                invalid(
                    format!("{at}.control"),
                    format!("no control {control:?} in {app}"),
                )
            })?;
            Some((a, c, text("value").unwrap_or_default().to_string()))
        }
        (None, None) => None,
        _ => return Err(invalid(
            at,
            "give both app and control (the control whose value the person changes), or neither",
        )),
    };
    Ok(ScriptedTakeover {
        after_observations,
        set,
        hand_back_after,
        waits: 0,
        fired: false,
    })
}

impl State {
    /// A scripted take-over fires right after its observation: the agent's picture is stale.
    fn person_after_observation(&mut self) {
        self.observations += 1;
        let Some(t) = self.takeover.as_mut() else {
            return;
        };
        if t.fired || self.observations < t.after_observations {
            return;
        }
        t.fired = true;
        if let Some((a, c, value)) = &t.set {
            if let Some(control) = self.apps.get_mut(*a).and_then(|x| x.controls.get_mut(*c)) {
                control.value = Some(value.clone());
            }
        }
        self.taken = Some("scripted person input".into());
    }
}

impl SimDesktop {
    /// Parse a scenario from JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ScenarioError> {
        let value: Value = serde_json::from_str(text)?;
        Self::from_value(&value)
    }

    /// Read and parse a scenario file; errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json_str(&text).map_err(|e| ScenarioError::InFile {
            path: path.display().to_string(),
            source: Box::new(e),
        })
    }

    /// Build from an already parsed JSON scenario.
    pub fn from_value(value: &Value) -> Result<Self, ScenarioError> {
        let root = value
            .as_object()
            .ok_or_else(|| invalid("scenario", "expected a JSON object with \"apps\""))?;
        let apps_v = root
            .get("apps")
            .ok_or_else(|| invalid("scenario", "missing apps (a list of applications)"))?;
        let apps_list = apps_v
            .as_array()
            .ok_or_else(|| invalid("apps", format!("expected a list, got {}", kind(apps_v))))?;
        let mut apps: Vec<SimApp> = Vec::with_capacity(apps_list.len());
        let mut names: HashMap<String, usize> = HashMap::with_capacity(apps_list.len());
        // further windows come after every application, so that the applications keep the
        // positions (process ids, places on screen) they have without them
        let mut further: Vec<SimApp> = Vec::new();
        for (i, a) in apps_list.iter().enumerate() {
            let at = format!("apps[{i}]");
            let (app, windows) = parse_app(a, &at)?;
            if let Some(j) = names.insert(app.name.to_ascii_lowercase(), i) {
                return Err(invalid(
                    format!("{at}.name"),
                    format!("duplicate app name {:?} (first at apps[{j}])", app.name),
                ));
            }
            apps.push(app);
            further.extend(windows.into_iter().map(|mut w| {
                if let Some(owner) = w.owner.as_mut() {
                    owner.1 = i;
                }
                w
            }));
        }
        for w in further {
            if names.contains_key(&w.name.to_ascii_lowercase()) {
                return Err(invalid(
                    "apps",
                    format!(
                        "window {:?} has the name of an application; rename one of them",
                        w.name
                    ),
                ));
            }
            names.insert(w.name.to_ascii_lowercase(), apps.len());
            apps.push(w);
        }
        let mut faults = Vec::new();
        match root.get("faults") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, f) in list.iter().enumerate() {
                    faults.push(parse_fault(f, &format!("faults[{i}]"), &apps)?);
                }
            }
            Some(other) => {
                return Err(invalid(
                    "faults",
                    format!("expected a list, got {}", kind(other)),
                ))
            }
        }
        let takeover = match root.get("takeover") {
            None | Some(Value::Null) => None,
            Some(t) => Some(parse_takeover(t, &apps)?),
        };
        Ok(Self {
            state: Mutex::new(State {
                apps,
                faults,
                actions: Vec::new(),
                last_changed: None,
                takeover,
                observations: 0,
                taken: None,
                hovered: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every action that reached the desktop so far, in order.
    pub fn actions(&self) -> Vec<ActionRecord> {
        self.lock().actions.clone()
    }

    /// The current value of a control (`None` if the app or control is unknown or the control
    /// has no value).
    pub fn control_value(&self, app: &str, control: &str) -> Option<String> {
        let st = self.lock();
        let a = &st.apps[st.find_app(app)?];
        a.controls[a.control(control)?].value.clone()
    }

    /// Whether a control is currently hidden (`None` if the app or control is unknown).
    pub fn is_hidden(&self, app: &str, control: &str) -> Option<bool> {
        let st = self.lock();
        let a = &st.apps[st.find_app(app)?];
        Some(a.controls[a.control(control)?].hidden)
    }

    /// Whether an application is running (`false` if unknown).
    pub fn is_running(&self, app: &str) -> bool {
        let st = self.lock();
        st.find_app(app).is_some_and(|i| st.apps[i].running)
    }
}

impl SimDesktop {
    /// Carry out one action (the [`Desktop::act`] of the simulation).
    async fn act_now(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        let mut st = self.lock();
        let ai = st.running_app(window_id)?;
        // the pointer leaves what it rested on: a tooltip goes with the next action
        act::end_hover(&mut st);
        // read_pixels reads the window, whatever control the model named
        let cid = control_id.filter(|_| !matches!(action, UiAction::ReadPixels));
        let Some(cid) = cid else {
            return act::without_control(&mut st, ai, action);
        };
        let (ci, presses) = act::ready_control(&mut st, ai, cid, action)?;
        Ok(act::perform(&mut st, ai, ci, action, &presses))
    }
}

#[async_trait]
impl Desktop for SimDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        let st = self.lock();
        Ok(st
            .apps
            .iter()
            .enumerate()
            .filter(|(_, a)| a.running)
            .map(|(i, a)| window_info(i, a))
            .collect())
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        let st = self.lock();
        Ok(st
            .apps
            .iter()
            .filter(|a| !a.running && a.owner.is_none())
            .map(|a| LaunchableApp {
                name: a.name.clone(),
                command: a.launch.clone(),
            })
            .collect())
    }

    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        let st = self.lock();
        let running: Vec<(usize, &SimApp)> = st
            .apps
            .iter()
            .enumerate()
            .filter(|(_, a)| a.running)
            .collect();
        let (mut w, mut h) = (640u32, 480u32);
        for (i, a) in &running {
            let r = window_rect(*i, a.controls.len());
            w = w.max(r.x as u32 + r.w + 40);
            h = h.max(r.y as u32 + r.h + 40);
        }
        let mut img = RgbaImage::new(w, h, [40, 70, 100, 255]);
        for (i, a) in &running {
            let r = window_rect(*i, a.controls.len());
            img.blit(&render_window(a, *i), r.x, r.y);
        }
        annotate::to_screenshot(&img)
            .map(Some)
            .map_err(|e| DesktopError::Backend(Box::new(e)))
    }

    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError> {
        let delay = {
            let st = self.lock();
            st.running_app(window_id)
                .map(|i| st.apps[i].delay_ms)
                .unwrap_or(0)
        };
        if delay > 0 {
            // A slow application: the lock is not held while it "works".
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        }
        let mut st = self.lock();
        let i = st.running_app(window_id)?;
        if let Some(error) = st.fault(i, None, OBSERVE) {
            return Err(DesktopError::Observe(error));
        }
        let app = &st.apps[i];
        let window = window_info(i, app);
        let win_rect = window_rect(i, app.controls.len());
        let mut controls = Vec::new();
        let mut labels = Vec::new();
        let last = last_visible(&app.controls);
        for (slot, c) in app.controls.iter().enumerate() {
            if c.hidden {
                continue;
            }
            let r = slot_rect(slot);
            // Labels of covered controls would be drawn over (the later label is at least as
            // wide), so only the drawn controls get one in the picture.
            if drawn(&app.controls, slot, last) {
                labels.push(((controls.len() + 1).to_string(), r));
            }
            controls.push(Control {
                source: Default::default(),
                id: c.id.clone(),
                role: c.role.clone(),
                name: c.name.clone(),
                value: c.value.clone(),
                rect: on_screen(r, win_rect),
                enabled: c.enabled,
                states: c.states,
            });
        }
        let image = render_window(app, i);
        st.person_after_observation();
        drop(st);
        let mut warnings = Vec::new();
        let screenshot = annotate::to_screenshot(&image)
            .map_err(|e| warnings.push(format!("screenshot: {e}")))
            .ok();
        let annotated = annotate::annotated_screenshot(&image, &labels)
            .map_err(|e| warnings.push(format!("annotated screenshot: {e}")))
            .ok();
        Ok(WindowObservation {
            window,
            controls,
            screenshot,
            annotated,
            warnings,
            pixels_readable: false,
            pixel_changes: None,
        })
    }

    async fn act(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        // whether the action changed anything a person could see: values, hidden controls,
        // running applications (multi-action stops at an action that changed nothing)
        let shown = |d: &Self| d.final_state().map(|v| v["apps"].clone());
        let before = shown(self);
        let late = {
            let st = self.lock();
            st.running_app(window_id)
                .is_ok_and(|i| st.apps[i].redraws_late)
        };
        let out = self.act_now(window_id, control_id, action).await;
        let changed = shown(self) != before && !late;
        self.lock().last_changed = Some(changed);
        out
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.lock().last_changed
    }

    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        let mut st = self.lock();
        let i = st
            .find_app(app)
            .ok_or_else(|| DesktopError::UnknownApp(app.to_string()))?;
        if st.apps[i].running {
            return Ok(window_info(i, &st.apps[i]));
        }
        let name = st.apps[i].name.clone();
        if let Some(error) = st.fault(i, None, LAUNCH) {
            st.actions.push(ActionRecord::Launch {
                app: name,
                ok: false,
            });
            return Err(DesktopError::ActionFailed(error));
        }
        st.apps[i].running = true;
        st.actions.push(ActionRecord::Launch {
            app: name,
            ok: true,
        });
        Ok(window_info(i, &st.apps[i]))
    }

    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        // every simulated window is in front of the model when observed: nothing to raise
        self.lock().running_app(window_id).map(|_| ())
    }

    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        let mut st = self.lock();
        let i = st.running_app(window_id)?;
        st.apps[i].running = false;
        let app = st.apps[i].name.clone();
        st.actions.push(ActionRecord::Close { app });
        Ok(())
    }

    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        let wanted = command.trim();
        let wanted = wanted.strip_suffix('&').unwrap_or(wanted).trim();
        let target = {
            let st = self.lock();
            st.apps
                .iter()
                .find(|a| a.owner.is_none() && !wanted.is_empty() && a.launch.trim() == wanted)
                .map(|a| a.name.clone())
        };
        match target {
            Some(name) => match self.launch(&name).await {
                Ok(_) => Ok(ShellOutput {
                    code: Some(0),
                    stdout: String::new(),
                    stderr: String::new(),
                    launched: Some(name),
                }),
                Err(e) => Ok(ShellOutput {
                    code: Some(1),
                    stdout: String::new(),
                    stderr: e.to_string(),
                    launched: None,
                }),
            },
            None => {
                self.lock().actions.push(ActionRecord::Shell {
                    command: command.to_string(),
                });
                Ok(ShellOutput {
                    code: Some(0),
                    ..ShellOutput::default()
                })
            }
        }
    }

    /// The simulated machine is a standard system: every program is in `/usr/bin` (nothing
    /// runs here; the allow-list still tells relative paths and other folders apart).
    fn find_program(&self, name: &str) -> Option<String> {
        (!name.is_empty() && !name.contains('/')).then(|| format!("/usr/bin/{name}"))
    }

    async fn settle(&self) {}

    fn person_input(&self) -> Option<String> {
        self.lock().taken.clone()
    }

    fn hand_back(&self) {
        self.lock().taken = None;
    }

    async fn wait_handback(&self, within: std::time::Duration) -> bool {
        let handed_back = {
            let mut st = self.lock();
            let st = &mut *st;
            match st.takeover.as_mut() {
                Some(t) if st.taken.is_some() => {
                    t.waits += 1;
                    t.hand_back_after.is_some_and(|n| t.waits >= n)
                }
                _ => true,
            }
        };
        if handed_back {
            self.lock().taken = None;
        } else {
            tokio::time::sleep(within).await;
        }
        handed_back
    }

    fn final_state(&self) -> Option<Value> {
        let st = self.lock();
        let apps: Vec<Value> = st
            .apps
            .iter()
            .map(|a| {
                let controls: Vec<Value> = a
                    .controls
                    .iter()
                    .map(|c| json!({"id": c.id, "value": c.value, "hidden": c.hidden}))
                    .collect();
                json!({"name": a.name, "running": a.running, "controls": controls})
            })
            .collect();
        let actions: Vec<Value> = st.actions.iter().map(ActionRecord::to_json).collect();
        Some(json!({"apps": apps, "actions": actions}))
    }
}
#[cfg(test)]
mod tests;
