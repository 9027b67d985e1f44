//! Taking over a watched private desktop (issue 15): telling the person's input from the
//! agent's, and the hand-back key.
//!
//! On a private desktop shown with `--watch`, the person can click and type in its window
//! (Xephyr forwards that input through its own input devices), while everything the agent does
//! comes through XTEST (the "Virtual core XTEST pointer/keyboard" devices) or AT-SPI actions,
//! which are no X input at all. A thread with its own X connection selects the XInput2 raw
//! key and button presses on the root window; each names its `sourceid`, and the device list
//! names the devices. A press from any device other than XTEST is the person's: the desktop is
//! taken over until the person presses [`HANDBACK_KEY`] (Pause), which apps do not use.
//!
//! It runs only when the outer ufo says the desktop is watched ([`WATCHED_VAR`]); elsewhere it
//! costs nothing. The thread blocks on the X connection (no polling) and lives as long as the
//! process.

use std::collections::HashMap;
use std::sync::Arc;

use x11rb::connection::Connection;
use x11rb::protocol::xinput::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{self, ConnectionExt as _};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use super::error::xerr;
use crate::display::watch::PersonInput;
use crate::error::cause;
use crate::LinuxError;

/// Set (to `1`) by the outer ufo in the environment of a watched private desktop.
pub const WATCHED_VAR: &str = "UFO_WATCHED_DESKTOP";
/// The key that hands the desktop back to the agent.
pub const HANDBACK_KEY: &str = "Pause";
/// The X keysym of [`HANDBACK_KEY`].
const PAUSE_KEYSYM: u32 = 0xff13;
/// XInput2 "all master devices": each press once, with the slave that made it as `sourceid`.
const ALL_MASTER_DEVICES: u16 = 1;

/// Start watching when this is a watched private desktop ([`WATCHED_VAR`] set); `None`
/// otherwise, or when the X server lacks XInput 2.2 (a warning says the person's input cannot
/// be told apart then).
pub(crate) fn start_if_watched() -> Option<Arc<PersonInput>> {
    std::env::var_os(WATCHED_VAR)?;
    match start() {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(
                "the watched desktop cannot tell the person's input from the agent's ({e}); \
                 the agent will not pause when you use its window"
            );
            None
        }
    }
}

fn start() -> Result<Arc<PersonInput>, LinuxError> {
    let (conn, root) = raw_input_connection()?;
    let pause = pause_keycodes(&conn)?;
    conn.xinput_xi_select_events(
        root,
        &[xinput::EventMask {
            deviceid: ALL_MASTER_DEVICES,
            mask: vec![xinput::XIEventMask::RAW_KEY_PRESS | xinput::XIEventMask::RAW_BUTTON_PRESS],
        }],
    )
    .map_err(xerr("XISelectEvents"))?
    .check()
    .map_err(xerr("XISelectEvents (raw input events)"))?;
    let person = Arc::new(PersonInput::default());
    let p = Arc::clone(&person);
    std::thread::Builder::new()
        .name("ufo-person-input".into())
        .spawn(move || listen(&conn, &pause, &p))
        .map_err(|source| LinuxError::Spawn {
            command: "the person-input listening thread".into(),
            source,
        })?;
    Ok(person)
}

/// The keycodes that carry the Pause keysym in the server's keyboard map.
fn pause_keycodes(conn: &RustConnection) -> Result<Vec<u32>, LinuxError> {
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max.saturating_sub(min).saturating_add(1))
        .map_err(xerr("GetKeyboardMapping"))?
        .reply()
        .map_err(xerr("GetKeyboardMapping"))?;
    let per = usize::from(map.keysyms_per_keycode.max(1));
    Ok(map
        .keysyms
        .chunks(per)
        .enumerate()
        .filter(|(_, syms)| syms.contains(&PAUSE_KEYSYM))
        .map(|(i, _)| u32::from(min) + i as u32)
        .collect())
}

/// What a press from device `source` means.
#[derive(Debug, PartialEq, Eq)]
enum Press {
    /// The agent's own input (XTEST).
    Agent,
    /// The person pressed the hand-back key.
    Handback,
    /// The person's input: what it was.
    Person(String),
}

/// Classify one press: `device` is the source device's name, `key` the keycode of a key press
/// (`None` for a button).
fn classify(device: &str, key: Option<u32>, pause: &[u32]) -> Press {
    if device.contains("XTEST") {
        return Press::Agent;
    }
    match key {
        Some(k) if pause.contains(&k) => Press::Handback,
        Some(_) => Press::Person(format!("key press on \"{device}\"")),
        None => Press::Person(format!("button press on \"{device}\"")),
    }
}

/// The name of every input device, by id.
fn device_names(conn: &RustConnection) -> HashMap<u16, String> {
    conn.xinput_xi_query_device(0u16)
        .ok()
        .and_then(|c| c.reply().ok())
        .map(|r| {
            r.infos
                .into_iter()
                .map(|d| (d.deviceid, String::from_utf8_lossy(&d.name).into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn listen(conn: &RustConnection, pause: &[u32], person: &PersonInput) {
    let mut names = device_names(conn);
    while let Ok(ev) = conn.wait_for_event() {
        let (source, key) = match ev {
            Event::XinputRawKeyPress(e) => (e.sourceid, Some(e.detail)),
            Event::XinputRawButtonPress(e) => (e.sourceid, None),
            _ => continue,
        };
        if !names.contains_key(&source) {
            // a device plugged in since
            names = device_names(conn);
        }
        let device = names
            .get(&source)
            .cloned()
            .unwrap_or_else(|| format!("input device {source}"));
        match classify(&device, key, pause) {
            Press::Agent => {}
            Press::Handback => {
                if person.hand_back() {
                    tracing::info!("the person handed the desktop back ({HANDBACK_KEY})");
                }
            }
            Press::Person(what) => {
                let note = format!("the person took the desktop over: {what}");
                if person.take_over(what) {
                    tracing::info!("{note}");
                }
            }
        }
    }
}

/// A connection of its own to `DISPLAY` for the person's raw input (XInput 2.1 or later), and
/// the root window to select its events on: the take-over watch and the demonstration
/// recorder each listen on one.
pub(crate) fn raw_input_connection() -> Result<(RustConnection, xproto::Window), LinuxError> {
    let display = std::env::var("DISPLAY").map_err(|_| LinuxError::NoDisplay)?;
    let (conn, screen) =
        x11rb::connect(Some(&display)).map_err(|source| LinuxError::X11Connect {
            display: display.clone(),
            source: Box::new(source),
        })?;
    let version = conn
        .xinput_xi_query_version(2, 2)
        .map_err(xerr("XIQueryVersion"))?
        .reply()
        .map_err(xerr("XIQueryVersion (is XInput 2 missing?)"))?;
    if (version.major_version, version.minor_version) < (2, 1) {
        return Err(LinuxError::X11Request {
            what: "XIQueryVersion".into(),
            source: cause(format!(
                "XInput {}.{} has no raw events (2.1 needed)",
                version.major_version, version.minor_version
            )),
        });
    }
    let root = conn
        .setup()
        .roots
        .get(screen)
        .ok_or_else(|| LinuxError::X11Request {
            what: "the screen".into(),
            source: cause(format!("the server has no screen {screen}")),
        })?
        .root;
    Ok((conn, root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xtest_is_the_agent_and_everything_else_the_person() {
        let pause = [127];
        assert_eq!(
            classify("Virtual core XTEST keyboard", Some(38), &pause),
            Press::Agent
        );
        // the agent pressing Pause hands nothing back
        assert_eq!(
            classify("Virtual core XTEST keyboard", Some(127), &pause),
            Press::Agent
        );
        assert_eq!(
            classify("Virtual core XTEST pointer", None, &pause),
            Press::Agent
        );
        assert_eq!(
            classify("Xephyr virtual keyboard", Some(127), &pause),
            Press::Handback
        );
        assert!(matches!(
            classify("Xephyr virtual mouse", None, &pause),
            Press::Person(w) if w.contains("button press") && w.contains("Xephyr virtual mouse")
        ));
        assert!(matches!(
            classify("Xephyr virtual keyboard", Some(38), &pause),
            Press::Person(w) if w.contains("key press")
        ));
    }
}
