//! Several devices in one session (`--device NAME=SPEC`, the `[devices]` table of ufo.toml):
//! [`MultiDesktop`] is one more implementation of the `Desktop` port, over several named
//! desktops (local, simulated or served by `ufo serve` on other machines). The engine sees
//! one desktop whose windows are labelled with their device (`lab: Untitled - LibreOffice
//! Calc`) and whose window ids carry the device (`lab/…`); every call goes to the device of
//! its window. Nothing of the engine changes: the blackboard is shared because it is one
//! session, and AppAgents are cached per device because the application name is labelled.
//!
//! Launching on a device: the launchable applications are listed with the device's label
//! (`lab: Calculator`, command `lab: gnome-calculator`); the HostAgent launches one by its
//! labelled name (`ControlText`) or by its labelled command (`Bash`). A command without a
//! device label runs only when exactly one device lists it as a launch command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use ufo_core::action::UiAction;
use ufo_core::ports::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, WindowId, WindowInfo,
    WindowObservation,
};

use crate::desktop::Remote;

/// Most devices in one session.
pub(crate) const MAX_DEVICES: usize = 16;

/// Longest device name.
const MAX_NAME: usize = 32;

/// Separates the device from the device's own window id (`lab/12`).
const ID_SEP: char = '/';

/// One device of a session: its name and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct DeviceSpec {
    /// The name windows are labelled with (`lab`).
    pub name: String,
    /// `live`, `private`, `sim:FILE` or `remote:URL`.
    pub spec: String,
    /// A remote device's token file (never the token itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// A remote device's pinned certificate fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// An entry of the `[devices]` table: a spec alone (`lab = "remote:https://…"`) or a table
/// `[devices.lab]` with `spec`, `token_file` and `fingerprint`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceTable {
    /// `live`, `private`, `sim:FILE` or `remote:URL`.
    pub spec: String,
    /// The file holding the token of a remote device (relative to the configuration file).
    pub token_file: Option<PathBuf>,
    /// The SHA-256 fingerprint of a remote device's certificate, to pin.
    pub fingerprint: Option<String>,
}

/// Read one `[devices]` entry, saying what is wrong with it and how it is written.
fn entry(name: &str, value: toml::Value, what: &str) -> Result<DeviceTable> {
    let how = "write it as NAME = \"SPEC\" or as a table [devices.NAME] with spec = \"SPEC\" \
               and, for a remote device, token_file = \"FILE\" and fingerprint = \"AB:CD:…\"";
    match value {
        toml::Value::String(spec) => Ok(DeviceTable {
            spec,
            ..DeviceTable::default()
        }),
        v @ toml::Value::Table(_) => v
            .try_into::<DeviceTable>()
            .map_err(|e| anyhow!("[devices] {name} in {what}: {}; {how}", e.message())),
        other => bail!(
            "[devices] {name} in {what} is a {}; {how}",
            other.type_str()
        ),
    }
}

/// Whether `name` may name a device: 1 to 32 letters, digits, `-` or `_` (no `:` or `/`,
/// which label windows and ids).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The `[devices]` table checked and made absolute: relative token files and `sim:` files
/// are read from the configuration file's folder `base`.
pub(crate) fn table(
    entries: BTreeMap<String, toml::Value>,
    base: &Path,
    what: &str,
) -> Result<BTreeMap<String, DeviceSpec>> {
    let mut out = BTreeMap::new();
    for (name, entry_value) in entries {
        if !valid_name(&name) {
            bail!(
                "[devices] {name:?} in {what} is not a device name; use 1 to {MAX_NAME} letters, \
                 digits, '-' or '_'"
            );
        }
        let DeviceTable {
            spec,
            token_file,
            fingerprint,
        } = entry(&name, entry_value, what)?;
        check_spec(&spec).map_err(|e| anyhow!("[devices] {name} in {what}: {e}"))?;
        let spec = match spec.strip_prefix("sim:") {
            Some(f) if Path::new(f).is_relative() => format!("sim:{}", base.join(f).display()),
            _ => spec,
        };
        if (token_file.is_some() || fingerprint.is_some()) && !spec.starts_with("remote:") {
            bail!(
                "[devices] {name} in {what} has a token_file or fingerprint but is not remote; \
                 remove them or give spec = \"remote:https://HOST:PORT\""
            );
        }
        let token_file = token_file.map(|f| if f.is_relative() { base.join(f) } else { f });
        out.insert(
            name.clone(),
            DeviceSpec {
                name,
                spec,
                token_file,
                fingerprint,
            },
        );
    }
    Ok(out)
}

/// Whether `spec` is a desktop a device may be.
fn check_spec(spec: &str) -> Result<()> {
    let ok = matches!(spec, "live" | "private")
        || spec.strip_prefix("sim:").is_some_and(|f| !f.is_empty())
        || spec.strip_prefix("remote:").is_some_and(|u| !u.is_empty());
    if ok {
        Ok(())
    } else {
        bail!("{spec:?} is not a desktop; use live, private, sim:FILE or remote:https://HOST:PORT")
    }
}

/// The devices of `--device` options (`NAME=SPEC`, or `NAME` for an entry of `[devices]`),
/// in order. A remote device without its own token file or fingerprint takes
/// `--token-file` / `--fingerprint`.
pub(crate) fn resolve(
    args: &[String],
    table: &BTreeMap<String, DeviceSpec>,
    remote: &Remote,
) -> Result<Vec<DeviceSpec>> {
    if args.len() > MAX_DEVICES {
        bail!(
            "{} devices given; a session drives at most {MAX_DEVICES}",
            args.len()
        );
    }
    let mut out: Vec<DeviceSpec> = Vec::new();
    for arg in args {
        let mut device = match arg.split_once('=') {
            Some((name, spec)) => named_device(arg, name.trim(), spec.trim(), table)?,
            None => table_device(arg.trim(), table)?,
        };
        if out.iter().any(|d| d.name == device.name) {
            bail!(
                "--device {} is given twice; give each device one name",
                device.name
            );
        }
        if device.spec.starts_with("remote:") {
            if device.token_file.is_none() {
                device.token_file = remote.token_file.clone();
            }
            if device.fingerprint.is_none() {
                device.fingerprint = remote.fingerprint.clone();
            }
        }
        out.push(device);
    }
    let local = out
        .iter()
        .filter(|d| matches!(d.spec.as_str(), "live" | "private"))
        .count();
    if local > 1 {
        bail!(
            "more than one device is this machine's desktop (live or private); give at most one, \
             and reach other machines with remote:URL"
        );
    }
    Ok(out)
}

/// The device of `--device NAME=SPEC` (`arg`): the table's entry of that name with `spec`,
/// keeping the entry's credentials only when its spec is the same.
fn named_device(
    arg: &str,
    name: &str,
    spec: &str,
    table: &BTreeMap<String, DeviceSpec>,
) -> Result<DeviceSpec> {
    if !valid_name(name) {
        bail!(
            "--device {arg:?}: {name:?} is not a device name; use 1 to {MAX_NAME} \
             letters, digits, '-' or '_', as in --device lab=remote:https://HOST:PORT"
        );
    }
    check_spec(spec).map_err(|e| anyhow!("--device {arg:?}: {e}"))?;
    let mut d = table.get(name).cloned().unwrap_or(DeviceSpec {
        name: name.to_string(),
        spec: String::new(),
        token_file: None,
        fingerprint: None,
    });
    if d.spec != spec {
        // another spec than the table's: none of the table's credentials
        d.token_file = None;
        d.fingerprint = None;
    }
    d.spec = absolute_sim(spec);
    Ok(d)
}

/// The device of `--device NAME`: the entry `name` of the `[devices]` table.
fn table_device(name: &str, table: &BTreeMap<String, DeviceSpec>) -> Result<DeviceSpec> {
    table.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = table.keys().map(String::as_str).collect();
        anyhow!(
            "--device {name:?} is not in the [devices] table of the configuration \
             ({}); give it as --device {name}=SPEC or add it to [devices] in ufo.toml",
            if known.is_empty() {
                "which has no devices".to_string()
            } else {
                format!("which has {}", known.join(", "))
            }
        )
    })
}

/// The devices a resumed session recorded, with their credentials taken anew: a trajectory
/// folder may have been prepared by someone else, so a recorded token file is never sent to a
/// recorded address. A remote device's token file (and pin) come from the `[devices]` entry
/// of the same name and address, else from `--token-file` / `UFO_REMOTE_TOKEN` and
/// `--fingerprint`, as for `--desktop remote:URL`.
pub(crate) fn reconnect(
    recorded: &[DeviceSpec],
    table: &BTreeMap<String, DeviceSpec>,
    remote: &Remote,
) -> Vec<DeviceSpec> {
    recorded
        .iter()
        .map(|d| match table.get(&d.name) {
            Some(t) if t.spec == d.spec => t.clone(),
            _ => DeviceSpec {
                name: d.name.clone(),
                spec: d.spec.clone(),
                token_file: remote
                    .token_file
                    .clone()
                    .filter(|_| d.spec.starts_with("remote:")),
                fingerprint: remote
                    .fingerprint
                    .clone()
                    .filter(|_| d.spec.starts_with("remote:")),
            },
        })
        .collect()
}

/// `sim:FILE` with the file made absolute (so `ufo resume` finds it from anywhere).
fn absolute_sim(spec: &str) -> String {
    match spec.strip_prefix("sim:") {
        Some(f) => match std::path::absolute(f) {
            Ok(abs) => format!("sim:{}", abs.display()),
            Err(_) => spec.to_string(),
        },
        None => spec.to_string(),
    }
}

/// Connect to every device, in order; the first that cannot be reached stops the start with
/// what to fix.
pub(crate) async fn open(
    devices: &[DeviceSpec],
    launch: &[(String, String)],
    vision: &crate::sight::VisionSettings,
) -> Result<MultiDesktop> {
    let mut opened = Vec::with_capacity(devices.len());
    for d in devices {
        let remote = Remote {
            token_file: d.token_file.clone(),
            fingerprint: d.fingerprint.clone(),
        };
        let inside_private = std::env::var_os(crate::private::INSIDE_VAR).is_some();
        let spec = if d.spec == "private" && inside_private {
            // ufo runs inside the private desktop it started for this device
            "live"
        } else if d.spec == "private" {
            bail!(
                "device {}: a private desktop is started by ufo itself; give it on the command \
                 line as --device {}=private",
                d.name,
                d.name
            );
        } else {
            d.spec.as_str()
        };
        let desktop = crate::desktop::open_desktop(spec, launch, &remote, vision)
            .await
            .map_err(|e| anyhow!("device {}: {e:#}", d.name))?;
        opened.push(Device {
            name: d.name.clone(),
            desktop,
        });
    }
    Ok(MultiDesktop::new(opened))
}

/// One named desktop of a [`MultiDesktop`].
pub(crate) struct Device {
    /// Its name.
    pub name: String,
    /// Its desktop.
    pub desktop: Box<dyn Desktop>,
}

/// Several named desktops seen as one (see the module documentation).
pub(crate) struct MultiDesktop {
    devices: Vec<Device>,
    /// The device of the last action, whose settle and change the engine asks for next.
    last: Mutex<Option<usize>>,
}

/// `name: text`, the label the HostAgent reads.
pub(crate) fn label(name: &str, text: &str) -> String {
    format!("{name}: {text}")
}

/// The device named at the start of `text` (`lab: …`) among `names`, and the rest.
pub(crate) fn split_label<'t>(text: &'t str, names: &[String]) -> Option<(usize, &'t str)> {
    let (head, rest) = text.trim_start().split_once(':')?;
    let i = names.iter().position(|n| n == head.trim())?;
    Some((i, rest.trim_start()))
}

impl MultiDesktop {
    /// The devices, in the order windows are listed.
    pub(crate) fn new(devices: Vec<Device>) -> Self {
        Self {
            devices,
            last: Mutex::new(None),
        }
    }

    fn names(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.name.clone()).collect()
    }

    /// The device of a namespaced window id and the device's own id.
    fn route(&self, window_id: &WindowId) -> Result<(usize, WindowId), DesktopError> {
        window_id
            .as_str()
            .split_once(ID_SEP)
            .and_then(|(name, id)| {
                self.devices
                    .iter()
                    .position(|d| d.name == name)
                    .map(|i| (i, WindowId::from(id)))
            })
            .ok_or_else(|| DesktopError::NoWindow(window_id.to_string()))
    }

    fn label_window(&self, i: usize, mut w: WindowInfo) -> WindowInfo {
        let name = &self.devices[i].name;
        w.id = format!("{name}{ID_SEP}{}", w.id).into();
        w.title = label(name, &w.title);
        w.app_name = label(name, &w.app_name);
        w
    }

    fn touched(&self, i: usize) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(i);
        }
    }

    fn last(&self) -> Option<usize> {
        self.last.lock().ok().and_then(|l| *l)
    }

    /// The device whose launch list holds `what` (an application name or a launch command),
    /// when exactly one does.
    async fn only_device_launching(
        &self,
        what: &str,
        by_command: bool,
    ) -> Result<Option<usize>, DesktopError> {
        let mut found = Vec::new();
        for (i, d) in self.devices.iter().enumerate() {
            let apps = d
                .desktop
                .launchable()
                .await
                .map_err(|e| on_device(&d.name, e))?;
            let hit = apps.iter().any(|a| {
                if by_command {
                    a.command.trim() == what.trim()
                } else {
                    a.name.eq_ignore_ascii_case(what.trim())
                }
            });
            if hit {
                found.push(i);
            }
        }
        Ok(if found.len() == 1 {
            Some(found[0])
        } else {
            None
        })
    }

    fn which_device_message(&self, what: &str) -> String {
        let names = self.names();
        format!(
            "{what:?} does not say which device it is for; write the device first, as the \
             launchable applications are listed (e.g. \"{}: {}\"); devices: {}",
            names[0],
            what.trim(),
            names.join(", ")
        )
    }
}

/// A device's error with the device named in its text (the variant kept, so `Lost` still
/// ends the session `device_lost`).
fn on_device(name: &str, e: DesktopError) -> DesktopError {
    let say = |m: String| format!("device {name}: {m}");
    match e {
        DesktopError::NoWindow(w) => DesktopError::NoWindow(format!("{name}{ID_SEP}{w}")),
        DesktopError::NoControl { window, control } => DesktopError::NoControl {
            window: format!("{name}{ID_SEP}{window}"),
            control,
        },
        DesktopError::UnknownApp(a) => DesktopError::UnknownApp(label(name, &a)),
        DesktopError::ActionFailed(m) => DesktopError::ActionFailed(m),
        DesktopError::Unsupported(m) => DesktopError::Unsupported(say(m)),
        DesktopError::Observe(m) => DesktopError::Observe(say(m)),
        DesktopError::Timeout { ms, source } => DesktopError::Timeout { ms, source },
        DesktopError::Backend(source) => {
            DesktopError::backend_with(say(source.to_string()), source)
        }
        DesktopError::Lost(m) => DesktopError::Lost(say(m)),
    }
}

#[async_trait]
impl Desktop for MultiDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        let mut all = Vec::new();
        for (i, d) in self.devices.iter().enumerate() {
            let ws = d
                .desktop
                .windows()
                .await
                .map_err(|e| on_device(&d.name, e))?;
            all.extend(ws.into_iter().map(|w| self.label_window(i, w)));
        }
        Ok(all)
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        let mut all = Vec::new();
        for d in &self.devices {
            let apps = d
                .desktop
                .launchable()
                .await
                .map_err(|e| on_device(&d.name, e))?;
            all.extend(apps.into_iter().map(|a| LaunchableApp {
                name: label(&d.name, &a.name),
                command: label(&d.name, &a.command),
            }));
        }
        Ok(all)
    }

    /// One screenshot cannot show several machines: the HostAgent reads the labelled window
    /// list instead.
    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        Ok(None)
    }

    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError> {
        let (i, id) = self.route(window_id)?;
        let d = &self.devices[i];
        let mut obs = d
            .desktop
            .observe(&id)
            .await
            .map_err(|e| on_device(&d.name, e))?;
        obs.window = self.label_window(i, obs.window);
        Ok(obs)
    }

    async fn act(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        let (i, id) = self.route(window_id)?;
        self.touched(i);
        let d = &self.devices[i];
        d.desktop
            .act(&id, control_id, action)
            .await
            .map_err(|e| on_device(&d.name, e))
    }

    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        let (i, name) = match split_label(app, &self.names()) {
            Some((i, rest)) => (i, rest.to_string()),
            None => match self.only_device_launching(app, false).await? {
                Some(i) => (i, app.trim().to_string()),
                None => {
                    return Err(DesktopError::UnknownApp(self.which_device_message(app)));
                }
            },
        };
        self.touched(i);
        let d = &self.devices[i];
        let w = d
            .desktop
            .launch(&name)
            .await
            .map_err(|e| on_device(&d.name, e))?;
        Ok(self.label_window(i, w))
    }

    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        let (i, cmd) = match split_label(command, &self.names()) {
            Some((i, rest)) => (i, rest.to_string()),
            None => match self.only_device_launching(command, true).await? {
                Some(i) => (i, command.trim().to_string()),
                None => {
                    return Err(DesktopError::Unsupported(
                        self.which_device_message(command),
                    ))
                }
            },
        };
        self.touched(i);
        let d = &self.devices[i];
        // A launch command starts its application through the device's own launch: a served
        // device runs no shell commands, and every device then answers the same way.
        let apps = d
            .desktop
            .launchable()
            .await
            .map_err(|e| on_device(&d.name, e))?;
        if let Some(app) = apps.iter().find(|a| a.command.trim() == cmd.trim()) {
            let w = d
                .desktop
                .launch(&app.name)
                .await
                .map_err(|e| on_device(&d.name, e))?;
            return Ok(ShellOutput {
                code: Some(0),
                launched: Some(label(&d.name, &w.app_name)),
                ..ShellOutput::default()
            });
        }
        let mut out = d
            .desktop
            .shell(&cmd)
            .await
            .map_err(|e| on_device(&d.name, e))?;
        out.launched = out.launched.map(|a| label(&d.name, &a));
        Ok(out)
    }

    /// A labelled command's program word is the device's label, which no device knows: such
    /// a command runs unconfirmed only when it is a listed launch command.
    fn find_program(&self, _name: &str) -> Option<String> {
        None
    }

    async fn settle(&self) {
        match self.last() {
            Some(i) => self.devices[i].desktop.settle().await,
            None => {
                for d in &self.devices {
                    d.desktop.settle().await;
                }
            }
        }
    }

    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        let (i, id) = self.route(window_id)?;
        self.touched(i);
        let d = &self.devices[i];
        d.desktop
            .activate(&id)
            .await
            .map_err(|e| on_device(&d.name, e))
    }

    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        let (i, id) = self.route(window_id)?;
        self.touched(i);
        let d = &self.devices[i];
        d.desktop
            .close(&id)
            .await
            .map_err(|e| on_device(&d.name, e))
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.last()
            .and_then(|i| self.devices[i].desktop.last_action_changed())
    }

    /// Every device's state under `devices`, and their apps and actions together (each
    /// marked with its `device`), in the single-desktop form.
    fn final_state(&self) -> Option<Value> {
        let mut devices = serde_json::Map::new();
        let mut apps = Vec::new();
        let mut actions = Vec::new();
        for d in &self.devices {
            let Some(state) = d.desktop.final_state() else {
                continue;
            };
            for (key, into) in [("apps", &mut apps), ("actions", &mut actions)] {
                for item in state[key].as_array().into_iter().flatten() {
                    let mut item = item.clone();
                    if let Value::Object(m) = &mut item {
                        m.insert("device".into(), d.name.clone().into());
                    }
                    into.push(item);
                }
            }
            devices.insert(d.name.clone(), state);
        }
        if devices.is_empty() {
            return None;
        }
        Some(json!({"apps": apps, "actions": actions, "devices": devices}))
    }

    fn person_input(&self) -> Option<String> {
        self.devices
            .iter()
            .find_map(|d| d.desktop.person_input().map(|input| label(&d.name, &input)))
    }

    // (the devices wait alike: the first one's wait serves)
    async fn pause(&self, within: Duration) {
        if let Some(d) = self.devices.first() {
            d.desktop.pause(within).await;
        }
    }

    async fn wait_handback(&self, within: Duration) -> bool {
        for d in &self.devices {
            if d.desktop.person_input().is_some() && !d.desktop.wait_handback(within).await {
                return false;
            }
        }
        true
    }

    fn hand_back(&self) {
        for d in &self.devices {
            d.desktop.hand_back();
        }
    }
}

/// The device a trajectory `step` record is about, read from its labels: an AppAgent's
/// application (`AppAgent/lab: Calculator`), else the window the HostAgent chose, the
/// command it ran, or the application it launched. `None` for a HostAgent step that
/// touched no device (it looked at all of them).
pub(crate) fn device_of_step(step: &Value, names: &[String]) -> Option<String> {
    let pick = |text: &str| split_label(text, names).map(|(i, _)| names[i].clone());
    if let Some(app) = step["agent"]
        .as_str()
        .and_then(|a| a.strip_prefix("AppAgent/"))
    {
        return pick(app);
    }
    let action = &step["action"];
    [
        &action["window"],
        &action["bash"],
        &action["held"]["bash"],
        &action["control_text"],
    ]
    .into_iter()
    .filter_map(Value::as_str)
    .find_map(pick)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_are_plain() {
        assert!(valid_name("lab"));
        assert!(valid_name("lab-2_b"));
        for bad in ["", "a:b", "a/b", "a b", &"x".repeat(33)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_label_names_a_known_device_only() {
        let names = vec!["a".to_string(), "lab".to_string()];
        assert_eq!(
            split_label("lab: gnome-calculator", &names),
            Some((1, "gnome-calculator"))
        );
        assert_eq!(split_label("a:Calc", &names), Some((0, "Calc")));
        assert_eq!(split_label("b: Calc", &names), None);
        assert_eq!(split_label("gnome-calculator", &names), None);
    }

    #[test]
    fn the_device_of_a_step_comes_from_its_labels() {
        let names = vec!["a".to_string(), "b".to_string()];
        let app = json!({"agent": "AppAgent/b: Calculator"});
        assert_eq!(device_of_step(&app, &names).as_deref(), Some("b"));
        let host = json!({"agent": "HostAgent", "action": {"window": "a: notes - Mousepad"}});
        assert_eq!(device_of_step(&host, &names).as_deref(), Some("a"));
        let launch = json!({"agent": "HostAgent", "action": {"bash": "b: gnome-calculator"}});
        assert_eq!(device_of_step(&launch, &names).as_deref(), Some("b"));
        let look = json!({"agent": "HostAgent", "action": null});
        assert_eq!(device_of_step(&look, &names), None);
    }

    #[test]
    fn device_options_resolve_against_the_table() {
        let mut t = BTreeMap::new();
        t.insert(
            "lab".to_string(),
            DeviceSpec {
                name: "lab".into(),
                spec: "remote:https://lab.example:8377".into(),
                token_file: Some("/t/lab.token".into()),
                fingerprint: Some("AB".into()),
            },
        );
        let remote = Remote {
            token_file: Some("/t/other".into()),
            ..Remote::default()
        };
        let got = resolve(&["lab".into(), "b=sim:/x.json".into()], &t, &remote).expect("ok");
        assert_eq!(
            got[0].token_file.as_deref(),
            Some(Path::new("/t/lab.token"))
        );
        assert_eq!(got[1].spec, "sim:/x.json");
        let e = resolve(&["nope".into()], &t, &remote)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[devices]") && e.contains("lab"), "{e}");
        let e = resolve(&["a=sim:/x".into(), "a=sim:/y".into()], &t, &remote)
            .unwrap_err()
            .to_string();
        assert!(e.contains("twice"), "{e}");
        let e = resolve(&["a=live".into(), "b=private".into()], &t, &remote)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than one"), "{e}");
        let e = resolve(&["a:b=live".into()], &t, &remote)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a device name"), "{e}");
        let e = resolve(&["a=ftp:x".into()], &t, &remote)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a desktop"), "{e}");
    }

    #[test]
    fn a_resume_never_sends_a_recorded_token_file_to_a_recorded_address() {
        let recorded = vec![DeviceSpec {
            name: "lab".into(),
            spec: "remote:https://evil.example:1".into(),
            token_file: Some("/home/me/.config/ufo/lab.token".into()),
            fingerprint: Some("AB".into()),
        }];
        let mut t = BTreeMap::new();
        t.insert(
            "lab".to_string(),
            DeviceSpec {
                name: "lab".into(),
                spec: "remote:https://lab.example:8377".into(),
                token_file: Some("/home/me/.config/ufo/lab.token".into()),
                fingerprint: None,
            },
        );
        let got = reconnect(&recorded, &t, &Remote::default());
        assert_eq!(got[0].token_file, None, "{got:?}");
        assert_eq!(got[0].fingerprint, None, "{got:?}");
        // the same name and address as the table's: the table's credentials
        let same = vec![t["lab"].clone()];
        assert_eq!(reconnect(&same, &t, &Remote::default()), same);
    }

    #[test]
    fn the_table_reads_paths_from_the_config_folder_and_refuses_misplaced_keys() {
        let base = Path::new("/etc/ufo");
        let e: BTreeMap<String, toml::Value> = toml::from_str(
            "a = \"sim:desk.json\"\n[lab]\nspec = \"remote:https://lab:1\"\ntoken_file = \"lab.token\"\n",
        )
        .expect("toml");
        let t = table(e, base, "ufo.toml").expect("valid");
        assert_eq!(t["a"].spec, "sim:/etc/ufo/desk.json");
        assert_eq!(
            t["lab"].token_file.as_deref(),
            Some(Path::new("/etc/ufo/lab.token"))
        );
        let bad: BTreeMap<String, toml::Value> =
            toml::from_str("[a]\nspec = \"sim:x\"\ntoken_file = \"t\"\n").expect("toml");
        let err = table(bad, base, "ufo.toml").unwrap_err().to_string();
        assert!(err.contains("not remote"), "{err}");
        let typo: BTreeMap<String, toml::Value> =
            toml::from_str("[a]\nspec = \"sim:x\"\ntoken = \"t\"\n").expect("toml");
        let err = table(typo, base, "ufo.toml").unwrap_err().to_string();
        assert!(err.contains("token") && err.contains("token_file"), "{err}");
        let number: BTreeMap<String, toml::Value> = toml::from_str("a = 3\n").expect("toml");
        let err = table(number, base, "ufo.toml").unwrap_err().to_string();
        assert!(err.contains("integer") && err.contains("NAME = "), "{err}");
    }
}
