//! The keymap a virtual keyboard sends with the keys (docs/desktop.md, "Wayland"): a
//! Wayland client types through a keyboard whose keymap it writes itself, so every keysym
//! about to be pressed gets a keycode of its own, whatever the person's layout. Pure: the XKB
//! text and the keysym → keycode table; `session.rs` uploads it.

use std::collections::BTreeMap;

use crate::display::keys::{sym, KeyStep};
use crate::LinuxError;

/// The four modifiers every keymap holds, at fixed evdev codes: keysym, XKB name, evdev code,
/// and the bit of the real modifier it sets (Shift, Control, Mod1, Mod4 in XKB's order).
const MODIFIERS: [(u32, &str, u32, u32); 4] = [
    (sym::SHIFT_L, "Shift_L", 1, 1 << 0),
    (sym::CONTROL_L, "Control_L", 2, 1 << 2),
    (sym::ALT_L, "Alt_L", 3, 1 << 3),
    (sym::SUPER_L, "Super_L", 4, 1 << 6),
];
/// The first evdev code given to the other keysyms.
const FIRST_CODE: u32 = 5;
/// XKB keycodes are evdev codes + 8, at most 255.
const LAST_CODE: u32 = 255 - 8;
/// Most keysyms one keymap holds besides the modifiers.
pub(crate) const CAPACITY: usize = (LAST_CODE - FIRST_CODE + 1) as usize;

/// A keymap for a set of keysyms: the XKB text to upload and each keysym's evdev code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keymap {
    codes: BTreeMap<u32, u32>,
    text: String,
}

/// The real-modifier bit a modifier keysym sets (`None` for any other keysym).
pub(crate) fn modifier_bit(keysym: u32) -> Option<u32> {
    MODIFIERS
        .iter()
        .find(|m| m.0 == keysym)
        .map(|&(_, _, _, bit)| bit)
}

fn is_modifier(keysym: u32) -> bool {
    modifier_bit(keysym).is_some()
}

/// The keysyms a run of steps presses (modifiers included).
fn keysyms_of(steps: &[KeyStep]) -> impl Iterator<Item = u32> + '_ {
    steps
        .iter()
        .flat_map(|KeyStep::Chord { mods, key }| mods.iter().copied().chain(std::iter::once(*key)))
}

impl Keymap {
    /// The keymap holding the four modifiers and every keysym of `steps`; an error when they
    /// are more than [`CAPACITY`] (split them with [`chunks`] first).
    pub(crate) fn for_steps(steps: &[KeyStep]) -> Result<Keymap, LinuxError> {
        let mut codes: BTreeMap<u32, u32> = MODIFIERS.iter().map(|m| (m.0, m.2)).collect();
        let mut next = FIRST_CODE;
        for k in keysyms_of(steps) {
            if codes.contains_key(&k) {
                continue;
            }
            if next > LAST_CODE {
                return Err(LinuxError::ActionFailed(format!(
                    "the keys hold more than {CAPACITY} different characters, more than one \
                     keymap holds; type the text in parts"
                )));
            }
            codes.insert(k, next);
            next += 1;
        }
        let text = xkb_text(&codes);
        Ok(Keymap { codes, text })
    }

    /// The evdev code of a keysym, when the keymap holds it.
    pub(crate) fn code(&self, keysym: u32) -> Option<u32> {
        self.codes.get(&keysym).copied()
    }

    /// Whether the keymap holds every keysym of `steps` (no new keymap is needed for them).
    pub(crate) fn holds(&self, steps: &[KeyStep]) -> bool {
        keysyms_of(steps).all(|k| self.codes.contains_key(&k))
    }

    /// The keymap as the protocol takes it: XKB text ending in a NUL byte, which its size
    /// counts.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut b = self.text.clone().into_bytes();
        b.push(0);
        b
    }
}

/// The XKB text of a keysym → evdev code table: keycodes named by their XKB number, one
/// level per key, and the modifier map of the four modifiers.
fn xkb_text(codes: &BTreeMap<u32, u32>) -> String {
    let mut keycodes = String::new();
    let mut symbols = String::new();
    for (&keysym, &code) in codes {
        let xkb = code + 8;
        keycodes.push_str(&format!("  <I{xkb}> = {xkb};\n"));
        match MODIFIERS.iter().find(|m| m.0 == keysym) {
            Some((_, name, _, _)) => {
                symbols.push_str(&format!("  key <I{xkb}> {{ [ {name} ] }};\n"))
            }
            None => symbols.push_str(&format!("  key <I{xkb}> {{ [ 0x{keysym:08x} ] }};\n")),
        }
    }
    for (name, (_, _, code, _)) in ["Shift", "Control", "Mod1", "Mod4"].iter().zip(MODIFIERS) {
        symbols.push_str(&format!("  modifier_map {name} {{ <I{}> }};\n", code + 8));
    }
    format!(
        "xkb_keymap {{\n\
         xkb_keycodes \"ufo\" {{\n  minimum = 8;\n  maximum = 255;\n{keycodes}}};\n\
         xkb_types \"ufo\" {{ include \"complete\" }};\n\
         xkb_compatibility \"ufo\" {{ include \"complete\" }};\n\
         xkb_symbols \"ufo\" {{\n{symbols}}};\n\
         }};\n"
    )
}

/// Split a key sequence into runs that each fit one keymap (at most [`CAPACITY`] keysyms
/// besides the modifiers), in order; the runs concatenated are the sequence.
pub(crate) fn chunks(steps: &[KeyStep]) -> Vec<&[KeyStep]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen = std::collections::BTreeSet::new();
    for (i, step) in steps.iter().enumerate() {
        let new: Vec<u32> = keysyms_of(std::slice::from_ref(step))
            .filter(|k| !is_modifier(*k) && !seen.contains(k))
            .collect();
        if seen.len() + new.len() > CAPACITY && start < i {
            out.push(&steps[start..i]);
            start = i;
            seen.clear();
        }
        seen.extend(keysyms_of(std::slice::from_ref(step)).filter(|k| !is_modifier(*k)));
    }
    if start < steps.len() {
        out.push(&steps[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::keys::{char_keysym, parse_keys};

    #[test]
    fn every_keysym_gets_a_key_and_the_modifiers_their_map() {
        let steps = parse_keys("Grüße ✓{ctrl+s}").expect("keys");
        let km = Keymap::for_steps(&steps).expect("a keymap");
        for c in "Grüße ✓s".chars() {
            let code = km.code(char_keysym(c)).expect("a code for every character");
            assert!((FIRST_CODE..=LAST_CODE).contains(&code));
        }
        assert_eq!(km.code(sym::CONTROL_L), Some(2));
        let text = String::from_utf8(km.bytes()).expect("text");
        assert!(text.ends_with("};\n\0"));
        // ü is Latin-1 (its keysym is its code point); ✓ is given as a Unicode keysym
        assert!(text.contains("[ 0x000000fc ]"), "{text}");
        assert!(text.contains("[ 0x01002713 ]"), "{text}");
        assert!(text.contains("modifier_map Control { <I10> };"), "{text}");
        assert!(km.holds(&parse_keys("rüG").expect("keys")));
        assert!(!km.holds(&parse_keys("x").expect("keys")));
        assert_eq!(modifier_bit(sym::SHIFT_L), Some(1));
        assert_eq!(modifier_bit(0x61), None);
    }

    #[test]
    fn too_many_keysyms_for_one_keymap_are_refused() {
        let steps: Vec<KeyStep> = (0..=CAPACITY as u32)
            .map(|i| KeyStep::Chord {
                mods: vec![],
                key: 0x0100_4e00 + i,
            })
            .collect();
        assert!(matches!(
            Keymap::for_steps(&steps),
            Err(LinuxError::ActionFailed(m)) if m.contains("in parts")
        ));
        let parts = chunks(&steps);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| Keymap::for_steps(p).is_ok()));
    }

    proptest::proptest! {
        /// Any sequence splits into runs, in order, that each fit one keymap holding a
        /// distinct key for every keysym pressed.
        #[test]
        fn any_keys_split_into_keymaps_that_hold_them(
            keys in proptest::collection::vec((0u32..400, proptest::bool::ANY), 0..700),
        ) {
            let steps: Vec<KeyStep> = keys
                .iter()
                .map(|&(k, ctrl)| KeyStep::Chord {
                    mods: if ctrl { vec![sym::CONTROL_L] } else { vec![] },
                    key: 0x0100_0400 + k,
                })
                .collect();
            let parts = chunks(&steps);
            proptest::prop_assert_eq!(parts.concat(), steps.clone());
            for part in parts {
                proptest::prop_assert!(!part.is_empty());
                let km = Keymap::for_steps(part).expect("each part fits");
                proptest::prop_assert!(km.holds(part));
                let mut codes: Vec<u32> = keysyms_of(part).map(|k| km.code(k).expect("held")).collect();
                codes.sort_unstable();
                codes.dedup();
                proptest::prop_assert!(codes.iter().all(|c| *c >= 1 && *c <= LAST_CODE));
            }
        }
    }
}
