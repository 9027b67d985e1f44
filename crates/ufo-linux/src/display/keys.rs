//! Key strings as X key events. The `type_keys` syntax itself is parsed by
//! [`ufo_core::keys`], the one parser every desktop shares; this module turns its presses into
//! keysyms and groups them into the batches `type_keys` sends.

use ufo_core::keys::{Key, Modifier, NamedKey};

use crate::LinuxError;

/// X keysym values.
pub(crate) mod sym {
    pub const RETURN: u32 = 0xff0d;
    pub const ESCAPE: u32 = 0xff1b;
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

/// The keysym of a named key.
fn named_keysym(k: NamedKey) -> u32 {
    match k {
        NamedKey::Enter => sym::RETURN,
        NamedKey::Tab => sym::TAB,
        NamedKey::Esc => 0xff1b,
        NamedKey::Backspace => 0xff08,
        NamedKey::Delete => 0xffff,
        NamedKey::Insert => 0xff63,
        NamedKey::Home => 0xff50,
        NamedKey::End => 0xff57,
        NamedKey::Left => 0xff51,
        NamedKey::Up => 0xff52,
        NamedKey::Right => 0xff53,
        NamedKey::Down => 0xff54,
        NamedKey::PageUp => 0xff55,
        NamedKey::PageDown => 0xff56,
        NamedKey::Space => 0x20,
        NamedKey::Menu => 0xff67,
        NamedKey::PrintScreen => 0xff61,
        NamedKey::F(n) => 0xffbe + u32::from(n.clamp(1, 24)) - 1,
    }
}

fn modifier_keysym(m: Modifier) -> u32 {
    match m {
        Modifier::Ctrl => sym::CONTROL_L,
        Modifier::Shift => sym::SHIFT_L,
        Modifier::Alt => sym::ALT_L,
        Modifier::Super => sym::SUPER_L,
    }
}

/// Parse a `type_keys` string (the one parser, [`ufo_core::keys`]) into X key steps.
pub(crate) fn parse_keys(input: &str) -> Result<Vec<KeyStep>, LinuxError> {
    let presses =
        ufo_core::keys::parse_keys(input).map_err(|e| LinuxError::KeySyntax(e.to_string()))?;
    Ok(presses
        .into_iter()
        .map(|p| KeyStep::Chord {
            mods: p.mods.into_iter().map(modifier_keysym).collect(),
            key: match p.key {
                Key::Char(c) => char_keysym(c),
                Key::Named(k) => named_keysym(k),
            },
        })
        .collect())
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
