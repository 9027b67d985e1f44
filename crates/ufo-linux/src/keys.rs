//! The `type_keys` syntax.
//!
//! * Plain text is typed as is (`hello world`); a newline types Return, a tab types Tab.
//! * `{NAME}` presses a special key: `{ENTER}`, `{TAB}`, `{ESC}`, `{BACKSPACE}`, `{DELETE}`,
//!   `{INSERT}`, `{HOME}`, `{END}`, `{UP}`, `{DOWN}`, `{LEFT}`, `{RIGHT}`, `{PGUP}`,
//!   `{PGDN}`, `{SPACE}`, `{F1}`…`{F12}`, `{MENU}` (names are case-insensitive).
//! * `{NAME N}` presses it N times (`{BACKSPACE 3}`).
//! * `{mod+…+key}` is a chord: modifiers `ctrl`, `shift`, `alt`, `super`, then one key, either a
//!   character (`{ctrl+s}`, `{ctrl+shift+z}`) or a special key name (`{alt+F4}`, `{ctrl+ENTER}`).
//! * A whole string that is just a chord (`ctrl+s`, `alt+F4`) is the chord too.
//! * `{{}` and `{}}` type literal braces; a `{` with no matching `}` is typed literally.

use crate::LinuxError;

/// X keysym values.
pub(crate) mod sym {
    pub const RETURN: u32 = 0xff0d;
    pub const TAB: u32 = 0xff09;
    pub const SHIFT_L: u32 = 0xffe1;
    pub const CONTROL_L: u32 = 0xffe3;
    pub const ALT_L: u32 = 0xffe9;
    pub const SUPER_L: u32 = 0xffeb;
}

/// One step of a key sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyStep {
    /// Press and release these keysyms: modifiers (held) then the key.
    Chord {
        /// Modifier keysyms, pressed in order and released in reverse.
        mods: Vec<u32>,
        /// The key keysym.
        key: u32,
    },
}

/// The keysym of a character.
pub(crate) fn char_keysym(c: char) -> u32 {
    match c {
        '\n' | '\r' => sym::RETURN,
        '\t' => sym::TAB,
        c if (' '..='~').contains(&c) || ('\u{a0}'..='\u{ff}').contains(&c) => c as u32,
        c => 0x0100_0000 + c as u32,
    }
}

fn named_key(name: &str) -> Option<u32> {
    let n = name.to_ascii_uppercase();
    Some(match n.as_str() {
        "ENTER" | "RETURN" => sym::RETURN,
        "TAB" => sym::TAB,
        "ESC" | "ESCAPE" => 0xff1b,
        "BACKSPACE" | "BKSP" | "BS" => 0xff08,
        "DELETE" | "DEL" => 0xffff,
        "INSERT" | "INS" => 0xff63,
        "HOME" => 0xff50,
        "END" => 0xff57,
        "LEFT" => 0xff51,
        "UP" => 0xff52,
        "RIGHT" => 0xff53,
        "DOWN" => 0xff54,
        "PGUP" | "PAGEUP" => 0xff55,
        "PGDN" | "PAGEDOWN" => 0xff56,
        "SPACE" => 0x20,
        "PLUS" => '+' as u32,
        "MENU" | "APPS" => 0xff67,
        "PRTSC" | "PRINT" => 0xff61,
        _ => {
            let num = n.strip_prefix('F')?.parse::<u32>().ok()?;
            if (1..=24).contains(&num) {
                0xffbe + num - 1
            } else {
                return None;
            }
        }
    })
}

fn modifier(name: &str) -> Option<u32> {
    Some(match name.to_ascii_lowercase().as_str() {
        "ctrl" | "control" | "ctl" => sym::CONTROL_L,
        "shift" => sym::SHIFT_L,
        "alt" | "meta" => sym::ALT_L,
        "super" | "win" | "cmd" => sym::SUPER_L,
        _ => return None,
    })
}

/// Parse `mod+mod+key` (no braces). `None` when it is not a chord.
fn parse_chord(s: &str) -> Option<KeyStep> {
    let parts: Vec<&str> = s.split('+').collect();
    if parts.len() < 2 {
        return None;
    }
    let (key_part, mod_parts) = match parts.split_last() {
        // "ctrl++" means ctrl and the plus key
        Some((last, rest)) if last.is_empty() && rest.last() == Some(&"") => {
            (("+"), &rest[..rest.len() - 1])
        }
        Some((last, rest)) => (*last, rest),
        None => return None,
    };
    let mods = mod_parts
        .iter()
        .map(|m| modifier(m.trim()))
        .collect::<Option<Vec<u32>>>()?;
    let key = key_part.trim();
    let mut chars = key.chars();
    let keysym = match (chars.next(), chars.next()) {
        (Some(c), None) => char_keysym(c.to_ascii_lowercase()),
        _ => named_key(key)?,
    };
    Some(KeyStep::Chord { mods, key: keysym })
}

/// Parse a `type_keys` string into steps.
pub(crate) fn parse_keys(input: &str) -> Result<Vec<KeyStep>, LinuxError> {
    let trimmed = input.trim();
    if !trimmed.is_empty() && !trimmed.contains(['{', '}', ' ']) {
        if let Some(chord) = parse_chord(trimmed) {
            return Ok(vec![chord]);
        }
    }
    let mut steps = Vec::new();
    let plain = |c: char| KeyStep::Chord {
        mods: vec![],
        key: char_keysym(c),
    };
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c == '{' {
            // literal braces: {{} and {}}
            if rest.starts_with("{{}") {
                steps.push(plain('{'));
                rest = &rest[3..];
                continue;
            }
            if rest.starts_with("{}}") {
                steps.push(plain('}'));
                rest = &rest[3..];
                continue;
            }
            if let Some(end) = rest[1..].find('}') {
                let inner = &rest[1..1 + end];
                let (body, count) = match inner.rsplit_once(' ') {
                    Some((b, n)) if n.trim().parse::<u32>().is_ok() => {
                        (b.trim(), n.trim().parse::<u32>().unwrap_or(1))
                    }
                    _ => (inner.trim(), 1),
                };
                if count > 1000 {
                    return Err(LinuxError::KeySyntax(format!(
                        "repeat count {count} in {{{inner}}} is above 1000"
                    )));
                }
                let step = if let Some(k) = named_key(body) {
                    KeyStep::Chord {
                        mods: vec![],
                        key: k,
                    }
                } else if let Some(ch) = parse_chord(body) {
                    ch
                } else if body.chars().count() == 1 {
                    plain(body.chars().next().unwrap_or(' '))
                } else {
                    return Err(LinuxError::KeySyntax(format!(
                        "unknown key {{{inner}}}; use a key name like {{ENTER}} or a chord like {{ctrl+s}}"
                    )));
                };
                for _ in 0..count {
                    steps.push(step.clone());
                }
                rest = &rest[2 + end..];
                continue;
            }
        }
        steps.push(plain(c));
        rest = &rest[c.len_utf8()..];
    }
    Ok(steps)
}

/// Whether a step is a command chord (held Ctrl, Alt or Super): applications may act on those
/// later than on plain typing (LibreOffice dispatches them as posted commands), so text after
/// one could land before its effect.
pub(crate) fn is_command(step: &KeyStep) -> bool {
    let KeyStep::Chord { mods, .. } = step;
    mods.iter()
        .any(|m| matches!(*m, sym::CONTROL_L | sym::ALT_L | sym::SUPER_L))
}

/// Split a key sequence into the batches `type_keys` sends one after another, waiting for the
/// window to apply each batch before the next: every command chord is a batch of its own, and
/// each run of plain keys (text, Shift, named keys like Enter or Backspace) between them is one
/// batch. The batches concatenated are the sequence, in its order.
pub(crate) fn batches(steps: &[KeyStep]) -> Vec<&[KeyStep]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, step) in steps.iter().enumerate() {
        if is_command(step) {
            if start < i {
                out.push(&steps[start..i]);
            }
            out.push(&steps[i..=i]);
            start = i + 1;
        }
    }
    if start < steps.len() {
        out.push(&steps[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(key: u32) -> KeyStep {
        KeyStep::Chord { mods: vec![], key }
    }

    #[test]
    fn plain_text_and_specials() {
        let s = parse_keys("ab{ENTER}").unwrap();
        assert_eq!(s, vec![k('a' as u32), k('b' as u32), k(sym::RETURN)]);
        let s = parse_keys("{backspace 3}").unwrap();
        assert_eq!(s, vec![k(0xff08); 3]);
        assert_eq!(parse_keys("{F5}").unwrap(), vec![k(0xffc2)]);
    }

    #[test]
    fn chords() {
        let s = parse_keys("{ctrl+s}").unwrap();
        assert_eq!(
            s,
            vec![KeyStep::Chord {
                mods: vec![sym::CONTROL_L],
                key: 's' as u32
            }]
        );
        let s = parse_keys("ctrl+shift+S").unwrap();
        assert_eq!(
            s,
            vec![KeyStep::Chord {
                mods: vec![sym::CONTROL_L, sym::SHIFT_L],
                key: 's' as u32
            }]
        );
        let s = parse_keys("alt+F4").unwrap();
        assert_eq!(
            s,
            vec![KeyStep::Chord {
                mods: vec![sym::ALT_L],
                key: 0xffc1
            }]
        );
        // "2+3" is text, not a chord
        assert_eq!(parse_keys("2+3").unwrap().len(), 3);
    }

    #[test]
    fn braces_and_errors() {
        assert_eq!(
            parse_keys("{{}x{}}").unwrap(),
            vec![k('{' as u32), k('x' as u32), k('}' as u32)]
        );
        assert_eq!(parse_keys("a{b").unwrap().len(), 3);
        assert!(parse_keys("{NOPE}").is_err());
        assert_eq!(parse_keys("é€").unwrap(), vec![k(0xe9), k(0x0100_20ac)]);
    }

    /// Defect 7 (issue 11): `{ctrl+a}Note` is two batches, the chord then the text, so the text
    /// waits for the chord's effect; plain keys stay in one batch.
    #[test]
    fn command_chords_are_batches_of_their_own() {
        let steps = parse_keys("{ctrl+a}Note").unwrap();
        let b = batches(&steps);
        assert_eq!(b.len(), 2);
        assert!(is_command(&b[0][0]) && b[0].len() == 1);
        assert_eq!(b[1], &steps[1..]);
        let steps = parse_keys("ab{BACKSPACE}c{ENTER}d{shift+x}").unwrap();
        assert_eq!(batches(&steps), vec![&steps[..]]);
        let steps = parse_keys("x{ctrl+c}{alt+F4}y{super+d}").unwrap();
        let lens: Vec<usize> = batches(&steps).iter().map(|b| b.len()).collect();
        assert_eq!(lens, vec![1, 1, 1, 1, 1]);
        assert!(batches(&[]).is_empty());
    }

    /// Defect 7 (issue 11), the failure itself on a model of an application that applies a
    /// command chord only once it is idle (as LibreOffice does) while it inserts typed text at
    /// once: sent as one burst, `{ctrl+a}Note` in "Slide 2 title" garbles it; sent in batches
    /// with a wait for the application between them, it replaces the text.
    #[test]
    fn batches_keep_order_on_an_application_with_deferred_commands() {
        #[derive(Default)]
        struct App {
            text: String,
            caret: usize,
            selection: Option<(usize, usize)>,
            pending: Vec<u32>,
        }
        impl App {
            fn key(&mut self, step: &KeyStep) {
                let KeyStep::Chord { mods, key } = step;
                if is_command(step) {
                    self.pending.push(*key);
                    return;
                }
                debug_assert!(mods.iter().all(|m| *m == sym::SHIFT_L));
                let c = char::from_u32(*key).unwrap_or('?');
                if let Some((a, b)) = self.selection.take() {
                    self.text.replace_range(a..b, "");
                    self.caret = a;
                }
                self.text.insert(self.caret, c);
                self.caret += c.len_utf8();
            }
            fn idle(&mut self) {
                for key in std::mem::take(&mut self.pending) {
                    if key == 'a' as u32 {
                        self.selection = Some((0, self.text.len()));
                        self.caret = self.text.len();
                    }
                }
            }
        }
        let steps = parse_keys("{ctrl+a}Note").unwrap();
        let fresh = || App {
            text: "Slide 2 title".into(),
            caret: 6,
            ..App::default()
        };
        let mut burst = fresh();
        steps.iter().for_each(|s| burst.key(s));
        burst.idle();
        assert_ne!(burst.text, "Note");
        let mut ordered = fresh();
        for batch in batches(&steps) {
            batch.iter().for_each(|s| ordered.key(s));
            ordered.idle();
        }
        assert_eq!(ordered.text, "Note");
    }
}

#[cfg(test)]
#[path = "keys_fuzz.rs"]
mod fuzz;
