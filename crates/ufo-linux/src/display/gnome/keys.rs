//! Keys on Mutter, pure (docs/desktop.md, "GNOME"): `NotifyKeyboardKeysym` takes keysyms, but
//! Mutter 43 types only those its current layout has a key for and drops the others without a
//! word. So a character outside the layout (every non-ASCII one on the private desktop's US
//! layout) is typed the way a person types it in a GTK application: Ctrl+Shift+U, its code
//! point in hex, then space (GTK's own input method; no AT-SPI text call, so the application
//! sees typing, as it does for the other keys).

use crate::display::keys::{sym, KeyStep};
use crate::display::kwin::layout::keysym_char;
use crate::LinuxError;

/// One key event: a keysym pressed (`true`) or released.
pub(crate) type Event = (u32, bool);

/// The keysym of `u`, the key GTK's Ctrl+Shift+U entry starts with.
const U: u32 = 0x75;
/// Space ends the hex entry.
const SPACE: u32 = 0x20;

/// Whether Mutter's US layout has a key for `keysym`: keys without a character (Return,
/// arrows, modifiers, function keys) and printable ASCII.
pub(crate) fn on_layout(keysym: u32) -> bool {
    match keysym_char(keysym) {
        Some(c) => c.is_ascii(),
        None => true,
    }
}

/// The key events of `steps`, in order. A chord of modifiers with a key the layout lacks is
/// refused (no toolkit entry takes a modifier with it): the error says what to do.
pub(crate) fn plan(steps: &[KeyStep]) -> Result<Vec<Event>, LinuxError> {
    let mut out = Vec::new();
    for KeyStep::Chord { mods, key } in steps {
        if on_layout(*key) {
            out.extend(mods.iter().map(|m| (*m, true)));
            out.extend([(*key, true), (*key, false)]);
            out.extend(mods.iter().rev().map(|m| (*m, false)));
            continue;
        }
        let Some(c) = keysym_char(*key).filter(|_| mods.is_empty()) else {
            return Err(LinuxError::Unsupported(format!(
                "the key {key:#x} with modifiers cannot be typed on GNOME: its keyboard layout \
                 has no key for it; type the character alone, or use the control's own action"
            )));
        };
        hex_entry(c, &mut out);
    }
    Ok(out)
}

/// GTK's entry of a character by its code point: Ctrl+Shift+U, the hex digits, space.
fn hex_entry(c: char, out: &mut Vec<Event>) {
    out.extend([
        (sym::CONTROL_L, true),
        (sym::SHIFT_L, true),
        (U, true),
        (U, false),
        (sym::SHIFT_L, false),
        (sym::CONTROL_L, false),
    ]);
    for d in format!("{:x}", c as u32).bytes() {
        out.extend([(u32::from(d), true), (u32::from(d), false)]);
    }
    out.extend([(SPACE, true), (SPACE, false)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::keys::char_keysym;

    fn typed(text: &str) -> Vec<KeyStep> {
        text.chars()
            .map(|c| KeyStep::Chord {
                mods: vec![],
                key: char_keysym(c),
            })
            .collect()
    }

    #[test]
    fn ascii_and_named_keys_are_keysyms_with_their_modifiers_around() {
        let steps = vec![KeyStep::Chord {
            mods: vec![sym::CONTROL_L],
            key: 0x61,
        }];
        assert_eq!(
            plan(&steps).expect("plan"),
            vec![
                (sym::CONTROL_L, true),
                (0x61, true),
                (0x61, false),
                (sym::CONTROL_L, false)
            ]
        );
        assert_eq!(
            plan(&typed("A\n")).expect("plan"),
            vec![
                (0x41, true),
                (0x41, false),
                (sym::RETURN, true),
                (sym::RETURN, false)
            ]
        );
    }

    #[test]
    fn characters_off_the_layout_go_through_gtks_hex_entry() {
        let events = plan(&typed("é")).expect("plan");
        let keys: Vec<u32> = events.iter().filter(|e| e.1).map(|e| e.0).collect();
        assert_eq!(
            keys,
            vec![sym::CONTROL_L, sym::SHIFT_L, U, 0x65, 0x39, SPACE],
            "Ctrl+Shift+U e 9 space"
        );
        // a character beyond the BMP and a Latin-1 one alike
        let keys: Vec<u32> = plan(&typed("😀"))
            .expect("plan")
            .iter()
            .filter(|e| e.1)
            .map(|e| e.0)
            .collect();
        assert_eq!(&keys[3..8], b"1f600".map(u32::from).as_slice());
        assert!(!on_layout(char_keysym('ß')) && on_layout(char_keysym('~')));
    }

    #[test]
    fn a_modifier_with_a_key_off_the_layout_is_refused() {
        let steps = vec![KeyStep::Chord {
            mods: vec![sym::CONTROL_L],
            key: char_keysym('é'),
        }];
        let e = plan(&steps).expect_err("refused").to_string();
        assert!(e.contains("layout"), "{e}");
    }

    proptest::proptest! {
        /// Every press has its release after it, and nothing is left held.
        #[test]
        fn every_key_pressed_is_released(text in "\\PC{0,20}") {
            let events = plan(&typed(&text)).expect("text plans");
            let mut held: Vec<u32> = Vec::new();
            for (k, down) in events {
                if down {
                    held.push(k);
                } else {
                    let at = held.iter().rposition(|h| *h == k);
                    proptest::prop_assert!(at.is_some(), "release of {k:#x} not held");
                    held.remove(at.unwrap_or(0));
                }
            }
            proptest::prop_assert!(held.is_empty());
            // and nothing Mutter would drop is sent
            let events = plan(&typed(&text)).expect("text plans");
            proptest::prop_assert!(events.iter().all(|(k, _)| on_layout(*k)));
        }
    }
}
