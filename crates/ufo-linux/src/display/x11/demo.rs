//! Reading a person's input for a demonstration (issue 26): the XInput2 raw key and button
//! presses on the root window, as the take-over watch reads them (`takeover.rs`), each named by
//! its source device so the agent's XTEST input can be told apart; key codes turned into
//! characters or key names (the pure [`key_of`]), clicks given the pointer's position.
//!
//! A thread with its own X connection blocks on it and hands presses over a bounded channel;
//! it ends when the recorder is dropped (the channel closes) at its next event, or with the
//! process.

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::Duration;

use x11rb::connection::Connection;
use x11rb::protocol::xinput::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ConnectionExt as _, Window};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use ufo_core::demo::Key;

use super::error::xerr;
use crate::LinuxError;

/// XInput2 "all master devices": each press once, with the slave that made it as `sourceid`.
const ALL_MASTER_DEVICES: u16 = 1;
/// Presses waiting to be resolved; beyond it the newest are dropped (a recorder that cannot
/// keep up loses presses rather than memory).
const QUEUE: usize = 4_096;

/// One press of the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The source device's name.
    pub device: String,
    /// Whether it came through XTEST (synthetic input: an agent's, or a tool's such as
    /// xdotool).
    pub xtest: bool,
    /// What was pressed.
    pub what: Pressed,
}

/// What a press was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pressed {
    /// A mouse button at a screen point.
    Button {
        /// The button (1 left, 2 middle, 3 right, 4–7 the wheel).
        button: u8,
        /// Screen x.
        x: i32,
        /// Screen y.
        y: i32,
    },
    /// A key (modifier keys alone are no press).
    Key(Key),
}

/// The modifiers held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mods {
    /// Shift.
    pub shift: bool,
    /// Control.
    pub ctrl: bool,
    /// Alt.
    pub alt: bool,
    /// Super.
    pub super_: bool,
}

/// Which modifier a keysym is, if any.
fn modifier(keysym: u32) -> Option<fn(&mut Mods) -> &mut bool> {
    match keysym {
        0xffe1 | 0xffe2 => Some(|m| &mut m.shift),
        0xffe3 | 0xffe4 => Some(|m| &mut m.ctrl),
        0xffe7..=0xffea => Some(|m| &mut m.alt),
        0xffeb | 0xffec => Some(|m| &mut m.super_),
        _ => None,
    }
}

/// Keys that only change state (Caps Lock, Num Lock, AltGr, ...): no press of their own.
fn is_lock_or_level(keysym: u32) -> bool {
    matches!(keysym, 0xffe5 | 0xffe6 | 0xff7f | 0xfe03 | 0xff7e | 0xff14)
}

/// The `type_keys` name of a non-character keysym.
fn key_name(keysym: u32) -> Option<String> {
    let n = match keysym {
        0xff0d | 0xff8d => "ENTER",
        0xff09 | 0xfe20 => "TAB",
        0xff1b => "ESC",
        0xff08 => "BACKSPACE",
        0xffff | 0xff9f => "DELETE",
        0xff63 | 0xff9e => "INSERT",
        0xff50 | 0xff95 => "HOME",
        0xff57 | 0xff9c => "END",
        0xff52 | 0xff97 => "UP",
        0xff54 | 0xff99 => "DOWN",
        0xff51 | 0xff96 => "LEFT",
        0xff53 | 0xff98 => "RIGHT",
        0xff55 | 0xff9a => "PGUP",
        0xff56 | 0xff9b => "PGDN",
        0xff67 => "MENU",
        0xff61 => "PRTSC",
        0xffbe..=0xffd5 => return Some(format!("F{}", keysym - 0xffbe + 1)),
        _ => return None,
    };
    Some(n.to_string())
}

/// The character a keysym types, if it types one.
fn keysym_char(keysym: u32) -> Option<char> {
    match keysym {
        0x20..=0x7e | 0xa0..=0xff => char::from_u32(keysym),
        0x0100_0000..=0x0110_ffff => char::from_u32(keysym - 0x0100_0000),
        // the keypad's characters
        0xffb0..=0xffb9 => char::from_u32(u32::from(b'0') + keysym - 0xffb0),
        0xffaa => Some('*'),
        0xffab => Some('+'),
        0xffad => Some('-'),
        0xffae => Some('.'),
        0xffaf => Some('/'),
        0xff80 => Some(' '),
        _ => None,
    }
}

/// What a key press means: `syms` are the keysyms of its keycode (level 0, level 1 with
/// Shift), `mods` the modifiers held. `None` for a modifier or lock key itself, or a keysym
/// that is neither a character nor a known key.
pub fn key_of(syms: &[u32], mods: Mods) -> Option<Key> {
    let base = syms.first().copied().filter(|s| *s != 0)?;
    if modifier(base).is_some() || is_lock_or_level(base) {
        return None;
    }
    let shifted = syms.get(1).copied().filter(|s| *s != 0);
    let chord = mods.ctrl || mods.alt || mods.super_;
    if chord {
        let key = match (key_name(base), keysym_char(base)) {
            (Some(n), _) => n,
            (None, Some(c)) => c.to_lowercase().to_string(),
            (None, None) => return None,
        };
        let mut parts = Vec::new();
        if mods.ctrl {
            parts.push("ctrl");
        }
        if mods.shift {
            parts.push("shift");
        }
        if mods.alt {
            parts.push("alt");
        }
        if mods.super_ {
            parts.push("super");
        }
        parts.push(&key);
        return Some(Key::Named(parts.join("+")));
    }
    let sym = if mods.shift {
        shifted.unwrap_or(base)
    } else {
        base
    };
    if let Some(n) = key_name(sym) {
        return Some(Key::Named(if mods.shift {
            format!("shift+{n}")
        } else {
            n
        }));
    }
    keysym_char(sym).map(Key::Char)
}

/// The person's presses, read by a thread of its own.
pub struct InputRecorder {
    rx: Receiver<Press>,
}

impl InputRecorder {
    /// Connect to `DISPLAY` and start listening (XInput 2.1 or later needed).
    pub fn start() -> Result<InputRecorder, LinuxError> {
        let (conn, root) = super::takeover::raw_input_connection()?;
        let keymap = keymap(&conn)?;
        conn.xinput_xi_select_events(
            root,
            &[xinput::EventMask {
                deviceid: ALL_MASTER_DEVICES,
                mask: vec![
                    xinput::XIEventMask::RAW_KEY_PRESS
                        | xinput::XIEventMask::RAW_KEY_RELEASE
                        | xinput::XIEventMask::RAW_BUTTON_PRESS,
                ],
            }],
        )
        .map_err(xerr("XISelectEvents"))?
        .check()
        .map_err(xerr("XISelectEvents (raw input events)"))?;
        let (tx, rx) = sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("ufo-demo-input".into())
            .spawn(move || listen(&conn, root, &keymap, &tx))
            .map_err(|source| LinuxError::Spawn {
                command: "the demonstration input thread".into(),
                source,
            })?;
        Ok(InputRecorder { rx })
    }

    /// The next press, waiting at most `within`; `Err(())` once the listening thread ended
    /// (the X connection closed).
    #[allow(clippy::result_unit_err)]
    pub fn next(&self, within: Duration) -> Result<Option<Press>, ()> {
        match self.rx.recv_timeout(within) {
            Ok(p) => Ok(Some(p)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(()),
        }
    }
}

/// The keyboard map: keycode → its keysyms.
struct KeyMap {
    min: u32,
    per: usize,
    syms: Vec<u32>,
}

impl KeyMap {
    fn syms(&self, keycode: u32) -> &[u32] {
        let Some(i) = keycode.checked_sub(self.min) else {
            return &[];
        };
        let start = (i as usize).saturating_mul(self.per);
        self.syms
            .get(start..start.saturating_add(self.per))
            .unwrap_or(&[])
    }
}

fn keymap(conn: &RustConnection) -> Result<KeyMap, LinuxError> {
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max.saturating_sub(min).saturating_add(1))
        .map_err(xerr("GetKeyboardMapping"))?
        .reply()
        .map_err(xerr("GetKeyboardMapping"))?;
    Ok(KeyMap {
        min: u32::from(min),
        per: usize::from(map.keysyms_per_keycode.max(1)),
        syms: map.keysyms,
    })
}

fn device_names(conn: &RustConnection) -> std::collections::HashMap<u16, String> {
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

fn pointer(conn: &RustConnection, root: Window) -> (i32, i32) {
    conn.query_pointer(root)
        .ok()
        .and_then(|c| c.reply().ok())
        .map(|r| (i32::from(r.root_x), i32::from(r.root_y)))
        .unwrap_or((-1, -1))
}

fn listen(conn: &RustConnection, root: Window, keymap: &KeyMap, tx: &SyncSender<Press>) {
    let mut names = device_names(conn);
    let mut mods = Mods::default();
    while let Ok(ev) = conn.wait_for_event() {
        let pressed = matches!(ev, Event::XinputRawKeyPress(_));
        let (source, what) = match ev {
            Event::XinputRawKeyPress(e) | Event::XinputRawKeyRelease(e) => {
                let syms = keymap.syms(e.detail);
                if let Some(flag) = syms.first().copied().and_then(modifier) {
                    *flag(&mut mods) = pressed;
                    continue;
                }
                if !pressed {
                    continue;
                }
                match key_of(syms, mods) {
                    Some(k) => (e.sourceid, Pressed::Key(k)),
                    None => continue,
                }
            }
            Event::XinputRawButtonPress(e) => {
                let (x, y) = pointer(conn, root);
                let button = u8::try_from(e.detail).unwrap_or(u8::MAX);
                (e.sourceid, Pressed::Button { button, x, y })
            }
            _ => continue,
        };
        if !names.contains_key(&source) {
            names = device_names(conn);
        }
        let device = names
            .get(&source)
            .cloned()
            .unwrap_or_else(|| format!("input device {source}"));
        let press = Press {
            xtest: device.contains("XTEST"),
            device,
            what,
        };
        match tx.try_send(press) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIFT: Mods = Mods {
        shift: true,
        ctrl: false,
        alt: false,
        super_: false,
    };
    const CTRL: Mods = Mods {
        shift: false,
        ctrl: true,
        alt: false,
        super_: false,
    };

    #[test]
    fn characters_take_the_shift_level() {
        assert_eq!(key_of(&[0x61, 0x41], Mods::default()), Some(Key::Char('a')));
        assert_eq!(key_of(&[0x61, 0x41], SHIFT), Some(Key::Char('A')));
        assert_eq!(key_of(&[0x31, 0x21], SHIFT), Some(Key::Char('!')));
        assert_eq!(key_of(&[0x20], Mods::default()), Some(Key::Char(' ')));
        // the keypad and a Unicode keysym
        assert_eq!(key_of(&[0xffb7], Mods::default()), Some(Key::Char('7')));
        assert_eq!(
            key_of(&[0x0100_20ac], Mods::default()),
            Some(Key::Char('€'))
        );
    }

    #[test]
    fn named_keys_and_chords_use_the_type_keys_syntax() {
        assert_eq!(
            key_of(&[0xff0d], Mods::default()),
            Some(Key::Named("ENTER".into()))
        );
        assert_eq!(
            key_of(&[0xffc1], Mods::default()),
            Some(Key::Named("F4".into()))
        );
        assert_eq!(
            key_of(&[0x73, 0x53], CTRL),
            Some(Key::Named("ctrl+s".into()))
        );
        let ctrl_shift = Mods {
            shift: true,
            ..CTRL
        };
        assert_eq!(
            key_of(&[0x7a, 0x5a], ctrl_shift),
            Some(Key::Named("ctrl+shift+z".into()))
        );
        assert_eq!(
            key_of(&[0xff09, 0xfe20], SHIFT),
            Some(Key::Named("shift+TAB".into()))
        );
    }

    #[test]
    fn modifiers_locks_and_unknown_keysyms_are_no_press() {
        for sym in [0xffe1, 0xffe3, 0xffe9, 0xffe5, 0xff7f, 0xfe03, 0] {
            assert_eq!(key_of(&[sym], Mods::default()), None, "{sym:#x}");
        }
        assert_eq!(key_of(&[], Mods::default()), None);
        assert_eq!(key_of(&[0x1008ff11], Mods::default()), None);
    }
}
