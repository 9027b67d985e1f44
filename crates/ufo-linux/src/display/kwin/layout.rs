//! Keys on KWin, pure (docs/desktop.md, "Wayland"): `org_kde_kwin_fake_input` sends evdev key
//! codes that KWin reads through its own keyboard layout (US on a fresh session), and no
//! keymap can be uploaded. So a keysym becomes the evdev code (and Shift) of the US layout
//! key that gives it; a run of characters that holds one the layout has no key for is
//! pasted (clipboard, then Ctrl+V) whole ([`plan`]).

use crate::display::keys::{sym, KeyStep};
use crate::LinuxError;

/// evdev codes of the keys ufo presses itself.
pub(crate) mod code {
    pub const SHIFT: u32 = 42;
    pub const CTRL: u32 = 29;
    pub const V: u32 = 47;
}

/// The printable characters of the US layout: (unshifted, shifted, evdev code).
const US_ROWS: &[(char, char, u32)] = &[
    ('1', '!', 2),
    ('2', '@', 3),
    ('3', '#', 4),
    ('4', '$', 5),
    ('5', '%', 6),
    ('6', '^', 7),
    ('7', '&', 8),
    ('8', '*', 9),
    ('9', '(', 10),
    ('0', ')', 11),
    ('-', '_', 12),
    ('=', '+', 13),
    ('q', 'Q', 16),
    ('w', 'W', 17),
    ('e', 'E', 18),
    ('r', 'R', 19),
    ('t', 'T', 20),
    ('y', 'Y', 21),
    ('u', 'U', 22),
    ('i', 'I', 23),
    ('o', 'O', 24),
    ('p', 'P', 25),
    ('[', '{', 26),
    (']', '}', 27),
    ('a', 'A', 30),
    ('s', 'S', 31),
    ('d', 'D', 32),
    ('f', 'F', 33),
    ('g', 'G', 34),
    ('h', 'H', 35),
    ('j', 'J', 36),
    ('k', 'K', 37),
    ('l', 'L', 38),
    (';', ':', 39),
    ('\'', '"', 40),
    ('`', '~', 41),
    ('\\', '|', 43),
    ('z', 'Z', 44),
    ('x', 'X', 45),
    ('c', 'C', 46),
    ('v', 'V', 47),
    ('b', 'B', 48),
    ('n', 'N', 49),
    ('m', 'M', 50),
    (',', '<', 51),
    ('.', '>', 52),
    ('/', '?', 53),
    (' ', ' ', 57),
];

/// The evdev code of a keysym that is no character: named keys and modifiers.
fn named_code(keysym: u32) -> Option<u32> {
    Some(match keysym {
        sym::RETURN => 28,
        sym::TAB => 15,
        sym::SHIFT_L => code::SHIFT,
        sym::CONTROL_L => code::CTRL,
        sym::ALT_L => 56,
        sym::SUPER_L => 125,
        0xff1b => 1,                               // Escape
        0xff08 => 14,                              // BackSpace
        0xffff => 111,                             // Delete
        0xff63 => 110,                             // Insert
        0xff50 => 102,                             // Home
        0xff57 => 107,                             // End
        0xff51 => 105,                             // Left
        0xff52 => 103,                             // Up
        0xff53 => 106,                             // Right
        0xff54 => 108,                             // Down
        0xff55 => 104,                             // Page_Up
        0xff56 => 109,                             // Page_Down
        0xff67 => 127,                             // Menu (KEY_COMPOSE)
        0xff61 => 99,                              // Print
        f @ 0xffbe..=0xffc7 => 59 + (f - 0xffbe),  // F1..F10
        0xffc8 => 87,                              // F11
        0xffc9 => 88,                              // F12
        f @ 0xffca..=0xffd5 => 183 + (f - 0xffca), // F13..F24
        _ => return None,
    })
}

/// A key of the US layout: its evdev code and whether Shift gives the keysym.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsKey {
    pub code: u32,
    pub shift: bool,
}

/// The US layout key that gives `keysym`, if any.
pub(crate) fn us_key(keysym: u32) -> Option<UsKey> {
    if let Some(code) = named_code(keysym) {
        return Some(UsKey { code, shift: false });
    }
    let c = char::from_u32(keysym).filter(|c| c.is_ascii())?;
    US_ROWS.iter().find_map(|&(lo, hi, code)| {
        if c == lo {
            Some(UsKey { code, shift: false })
        } else if c == hi {
            Some(UsKey { code, shift: true })
        } else {
            None
        }
    })
}

/// The character a keysym types (`None` for keysyms of no character).
pub(crate) fn keysym_char(keysym: u32) -> Option<char> {
    match keysym {
        0x20..=0x7e | 0xa0..=0xff => char::from_u32(keysym),
        k if k > 0x0100_0000 => char::from_u32(k - 0x0100_0000),
        _ => None,
    }
}

/// Most bytes pasted at once (the pipe the paste goes through takes them without waiting).
pub(crate) const PASTE_MOST: usize = 16 * 1024;

/// One piece of a key run on KWin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// A key of the layout, with modifiers held (their evdev codes) and Shift when the
    /// keysym needs it.
    Key { mods: Vec<u32>, key: UsKey },
    /// Characters the layout has no key for: pasted.
    Paste(String),
}

/// How key steps go to KWin: keys and chords of the layout as keys; a run of plain
/// characters that holds one the layout lacks, as one paste of the whole run (at most
/// [`PASTE_MOST`] bytes each), so that its characters land in order (a paste lands when the
/// program has read it, after keys sent later could). A chord whose key or modifier is on no
/// key of the layout cannot be sent: the error says which.
pub(crate) fn plan(steps: &[KeyStep]) -> Result<Vec<Piece>, LinuxError> {
    let mut out: Vec<Piece> = Vec::new();
    let mut run: Vec<(char, Option<UsKey>)> = Vec::new();
    for KeyStep::Chord { mods, key } in steps {
        let plain = keysym_char(*key).filter(|_| mods.is_empty());
        if let Some(c) = plain {
            run.push((c, us_key(*key)));
            continue;
        }
        flush_run(&mut run, &mut out);
        let k = us_key(*key).ok_or_else(|| no_key(*key))?;
        let mods = mods
            .iter()
            .map(|m| us_key(*m).map(|u| u.code).ok_or_else(|| no_key(*m)))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(Piece::Key { mods, key: k });
    }
    flush_run(&mut run, &mut out);
    Ok(out)
}

/// A run of plain characters as keys when the layout has them all, else as pastes.
fn flush_run(run: &mut Vec<(char, Option<UsKey>)>, out: &mut Vec<Piece>) {
    if run.iter().all(|(_, k)| k.is_some()) {
        out.extend(run.iter().filter_map(|(_, k)| {
            k.map(|key| Piece::Key {
                mods: Vec::new(),
                key,
            })
        }));
    } else {
        let mut text = String::new();
        for (c, _) in run.iter() {
            if text.len() + c.len_utf8() > PASTE_MOST {
                out.push(Piece::Paste(std::mem::take(&mut text)));
            }
            text.push(*c);
        }
        out.push(Piece::Paste(text));
    }
    run.clear();
}

fn no_key(keysym: u32) -> LinuxError {
    LinuxError::Unsupported(format!(
        "KWin's keyboard layout has no key for keysym {keysym:#x}, and a chord with it cannot \
         be pasted; type the character alone (it is pasted), or act on the control through \
         its actions"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::keys::parse_keys;

    /// The text a plan types: the inverse of the layout for keys, the pasted runs as they are.
    fn typed(pieces: &[Piece]) -> String {
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Paste(s) => out.push_str(s),
                Piece::Key { mods, key } if mods.is_empty() => {
                    if key.code == 28 {
                        out.push('\n');
                        continue;
                    }
                    if key.code == 15 {
                        out.push('\t');
                        continue;
                    }
                    let (lo, hi, _) = US_ROWS
                        .iter()
                        .find(|r| r.2 == key.code)
                        .expect("a key of the layout");
                    out.push(if key.shift { *hi } else { *lo });
                }
                Piece::Key { .. } => out.push('?'),
            }
        }
        out
    }

    #[test]
    fn layout_keys_are_typed_and_the_rest_pasted_in_runs() {
        let p = plan(&parse_keys("Ab{TAB}").expect("keys")).expect("a plan");
        assert_eq!(
            p[0],
            Piece::Key {
                mods: vec![],
                key: UsKey {
                    code: 30,
                    shift: true
                }
            }
        );
        assert_eq!(p.len(), 3);
        // a run with a character of no key is pasted whole, in order
        let steps = parse_keys("Aé€ b{ENTER}{ctrl+s}").expect("keys");
        let p = plan(&steps).expect("a plan");
        assert_eq!(p[0], Piece::Paste("Aé€ b".into()));
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[2],
            Piece::Key {
                mods: vec![code::CTRL],
                key: UsKey {
                    code: 31,
                    shift: false
                }
            }
        );
        // a chord with a character of no key is refused, and says so
        let bad = parse_keys("{ctrl+é}").expect("keys");
        assert!(matches!(plan(&bad), Err(LinuxError::Unsupported(m)) if m.contains("0xe9")));
        assert_eq!(us_key(0xffbe).map(|k| k.code), Some(59));
        assert_eq!(us_key(0xffc9).map(|k| k.code), Some(88));
    }

    #[test]
    fn a_long_paste_is_cut_into_bounded_pieces() {
        let text: String = std::iter::repeat_n('é', PASTE_MOST / 2 + 1).collect();
        let p = plan(&parse_keys(&text).expect("keys")).expect("a plan");
        assert_eq!(p.len(), 2);
        assert!(p
            .iter()
            .all(|x| matches!(x, Piece::Paste(s) if s.len() <= PASTE_MOST)));
    }

    proptest::proptest! {
        /// Any text is typed whole: the keys and pastes of its plan give it back, in order.
        #[test]
        fn any_text_is_typed_back_whole(text in "[ -~\u{a0}-\u{17f}\u{400}-\u{4ff}\u{3040}-\u{30ff}\n\t]{0,60}") {
            // braces are the key syntax's own: leave them out of the text
            let text: String = text.chars().filter(|c| *c != '{' && *c != '}').collect();
            let steps = parse_keys(&text).expect("plain text parses");
            let p = plan(&steps).expect("plain text has a plan");
            proptest::prop_assert_eq!(typed(&p), text.replace('\r', "\n"));
        }
    }
}
