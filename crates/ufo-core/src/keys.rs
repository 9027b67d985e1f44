//! The `type_keys` syntax, parsed once for every desktop (the simulated one applies it to a
//! value, the live one turns it into key events), so a key string means the same everywhere.
//!
//! * Plain text is typed as is (`hello world`); a newline is Enter, a tab is Tab.
//! * `{NAME}` presses a named key: `{ENTER}`, `{TAB}`, `{ESC}`, `{BACKSPACE}`, `{DELETE}`,
//!   `{INSERT}`, `{HOME}`, `{END}`, `{UP}`, `{DOWN}`, `{LEFT}`, `{RIGHT}`, `{PGUP}`, `{PGDN}`,
//!   `{SPACE}`, `{F1}`…`{F24}`, `{MENU}`, `{PRTSC}`, `{PLUS}` (names are case-insensitive).
//! * `{NAME N}` presses it N times (`{BACKSPACE 3}`), at most 1,000.
//! * One string makes at most 100,000 presses in all ([`MAX_PRESSES`]); a longer one is an
//!   error (split the keys), on every desktop.
//! * `{mod+…+key}` is a chord: modifiers `ctrl`, `shift`, `alt`, `super`, then one key, either a
//!   character (`{ctrl+s}`, `{ctrl+shift+z}`, `{ctrl++}`) or a key name (`{alt+F4}`).
//! * A whole string that is only a chord (`ctrl+s`, `alt+F4`) is that chord, not text.
//! * `{{}` and `{}}` type literal braces; a `{` without a matching `}` is typed literally.
//! * An unknown name in braces (`{NOPE}`) is an error, on every desktop.

use std::fmt;

/// A held modifier of a chord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    /// Control.
    Ctrl,
    /// Shift.
    Shift,
    /// Alt (Meta).
    Alt,
    /// Super (the Windows or Command key).
    Super,
}

/// A key with a name rather than a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedKey {
    /// Enter / Return.
    Enter,
    /// Tab.
    Tab,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Delete.
    Delete,
    /// Insert.
    Insert,
    /// Home.
    Home,
    /// End.
    End,
    /// Arrow left.
    Left,
    /// Arrow up.
    Up,
    /// Arrow right.
    Right,
    /// Arrow down.
    Down,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// The space bar.
    Space,
    /// The context-menu key.
    Menu,
    /// Print screen.
    PrintScreen,
    /// A function key, F1 to F24.
    F(u8),
}

/// The key of one press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A character, typed as itself (in a chord: lower case, `{ctrl+S}` is Ctrl+s).
    Char(char),
    /// A named key.
    Named(NamedKey),
}

/// One press: modifiers held (in order) around one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPress {
    /// Modifiers, pressed in order and released in reverse.
    pub mods: Vec<Modifier>,
    /// The key.
    pub key: Key,
}

impl KeyPress {
    fn plain(key: Key) -> Self {
        Self {
            mods: Vec::new(),
            key,
        }
    }

    /// Whether this is a command chord (Ctrl, Alt or Super held): it asks the application to
    /// do something rather than type (Shift alone only changes the character).
    pub fn is_command(&self) -> bool {
        self.mods
            .iter()
            .any(|m| matches!(m, Modifier::Ctrl | Modifier::Alt | Modifier::Super))
    }
}

/// A key string that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

/// Most presses a `{NAME N}` may repeat.
pub const MAX_REPEAT: u32 = 1000;

/// Most presses one key string may make, repeats and plain text together (100,000: a long
/// text typed at once, while a hostile answer cannot expand into millions of presses).
pub const MAX_PRESSES: usize = 100_000;

fn named_key(name: &str) -> Option<Key> {
    let n = name.to_ascii_uppercase();
    Some(Key::Named(match n.as_str() {
        "ENTER" | "RETURN" => NamedKey::Enter,
        "TAB" => NamedKey::Tab,
        "ESC" | "ESCAPE" => NamedKey::Esc,
        "BACKSPACE" | "BKSP" | "BS" => NamedKey::Backspace,
        "DELETE" | "DEL" => NamedKey::Delete,
        "INSERT" | "INS" => NamedKey::Insert,
        "HOME" => NamedKey::Home,
        "END" => NamedKey::End,
        "LEFT" => NamedKey::Left,
        "UP" => NamedKey::Up,
        "RIGHT" => NamedKey::Right,
        "DOWN" => NamedKey::Down,
        "PGUP" | "PAGEUP" => NamedKey::PageUp,
        "PGDN" | "PAGEDOWN" => NamedKey::PageDown,
        "SPACE" => NamedKey::Space,
        "PLUS" => return Some(Key::Char('+')),
        "MENU" | "APPS" => NamedKey::Menu,
        "PRTSC" | "PRINT" => NamedKey::PrintScreen,
        _ => {
            let num = n.strip_prefix('F')?.parse::<u8>().ok()?;
            if (1..=24).contains(&num) {
                NamedKey::F(num)
            } else {
                return None;
            }
        }
    }))
}

fn modifier(name: &str) -> Option<Modifier> {
    Some(match name.to_ascii_lowercase().as_str() {
        "ctrl" | "control" | "ctl" => Modifier::Ctrl,
        "shift" => Modifier::Shift,
        "alt" | "meta" => Modifier::Alt,
        "super" | "win" | "cmd" => Modifier::Super,
        _ => return None,
    })
}

/// Parse `mod+mod+key` (no braces). `None` when it is not a chord.
fn parse_chord(s: &str) -> Option<KeyPress> {
    let parts: Vec<&str> = s.split('+').collect();
    if parts.len() < 2 {
        return None;
    }
    let (key_part, mod_parts) = match parts.split_last() {
        // "ctrl++" means Ctrl and the plus key
        Some((last, rest)) if last.is_empty() && rest.last() == Some(&"") => {
            ("+", &rest[..rest.len() - 1])
        }
        Some((last, rest)) => (*last, rest),
        None => return None,
    };
    let mods = mod_parts
        .iter()
        .map(|m| modifier(m.trim()))
        .collect::<Option<Vec<Modifier>>>()?;
    let key = key_part.trim();
    let mut chars = key.chars();
    let key = match (chars.next(), chars.next()) {
        (Some(c), None) => Key::Char(c.to_ascii_lowercase()),
        _ => named_key(key)?,
    };
    Some(KeyPress { mods, key })
}

/// The key of a typed character: a newline is Enter and a tab is Tab.
fn char_key(c: char) -> Key {
    match c {
        '\n' | '\r' => Key::Named(NamedKey::Enter),
        '\t' => Key::Named(NamedKey::Tab),
        c => Key::Char(c),
    }
}

/// Parse a `type_keys` string into presses, in order.
pub fn parse_keys(input: &str) -> Result<Vec<KeyPress>, KeyError> {
    let trimmed = input.trim();
    if !trimmed.is_empty() && !trimmed.contains(['{', '}', ' ']) {
        if let Some(chord) = parse_chord(trimmed) {
            return Ok(vec![chord]);
        }
    }
    let mut presses = Vec::new();
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c == '{' {
            // literal braces: {{} and {}}
            if rest.starts_with("{{}") {
                push_presses(&mut presses, KeyPress::plain(Key::Char('{')), 1)?;
                rest = &rest[3..];
                continue;
            }
            if rest.starts_with("{}}") {
                push_presses(&mut presses, KeyPress::plain(Key::Char('}')), 1)?;
                rest = &rest[3..];
                continue;
            }
            if let Some(end) = rest[1..].find('}') {
                let inner = &rest[1..1 + end];
                let (body, count) = match inner.rsplit_once(' ') {
                    Some((b, n)) => match n.trim().parse::<u64>() {
                        Ok(n) => (b.trim(), n),
                        Err(_) => (inner.trim(), 1),
                    },
                    None => (inner.trim(), 1),
                };
                if count > u64::from(MAX_REPEAT) {
                    return Err(KeyError(format!(
                        "repeat count {count} in {{{inner}}} is above {MAX_REPEAT}; split the keys"
                    )));
                }
                let press = if let Some(k) = named_key(body) {
                    KeyPress::plain(k)
                } else if let Some(ch) = parse_chord(body) {
                    ch
                } else {
                    let mut chars = body.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => KeyPress::plain(char_key(c)),
                        _ => {
                            return Err(KeyError(format!(
                                "unknown key {{{inner}}}; use a key name like {{ENTER}} or a chord like {{ctrl+s}}"
                            )))
                        }
                    }
                };
                // `count` is at most MAX_REPEAT here
                push_presses(&mut presses, press, count as usize)?;
                rest = &rest[2 + end..];
                continue;
            }
        }
        push_presses(&mut presses, KeyPress::plain(char_key(c)), 1)?;
        rest = &rest[c.len_utf8()..];
    }
    Ok(presses)
}

/// Append `count` copies of `press`, refusing to go beyond [`MAX_PRESSES`] in all: checked
/// before anything grows, so a hostile string costs no more memory than the cap.
fn push_presses(
    presses: &mut Vec<KeyPress>,
    press: KeyPress,
    count: usize,
) -> Result<(), KeyError> {
    if presses.len().saturating_add(count) > MAX_PRESSES {
        return Err(KeyError(format!(
            "the keys make more than {MAX_PRESSES} key presses; split them into several \
             type_keys actions"
        )));
    }
    presses.resize(presses.len() + count, press);
    Ok(())
}

/// What a key string does to a text field's value, as far as text goes: characters are
/// inserted at the end (Shift makes a letter upper case), Enter adds a newline, Tab a tab, Space
/// a space, Backspace removes the last character; command chords and other named keys leave
/// the value alone. The simulated desktop's `type_keys`.
pub fn apply_to_text(value: &mut String, presses: &[KeyPress]) {
    for p in presses {
        if p.is_command() {
            continue;
        }
        let shift = p.mods.contains(&Modifier::Shift);
        match p.key {
            Key::Char(c) if shift => value.extend(c.to_uppercase()),
            Key::Char(c) => value.push(c),
            Key::Named(NamedKey::Enter) => value.push('\n'),
            Key::Named(NamedKey::Tab) => value.push('\t'),
            Key::Named(NamedKey::Space) => value.push(' '),
            Key::Named(NamedKey::Backspace) => {
                value.pop();
            }
            Key::Named(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(ch: char) -> KeyPress {
        KeyPress::plain(Key::Char(ch))
    }
    fn n(k: NamedKey) -> KeyPress {
        KeyPress::plain(Key::Named(k))
    }

    #[test]
    fn text_named_keys_and_repeats() {
        assert_eq!(
            parse_keys("ab{ENTER}").unwrap(),
            vec![c('a'), c('b'), n(NamedKey::Enter)]
        );
        assert_eq!(
            parse_keys("{backspace 3}").unwrap(),
            vec![n(NamedKey::Backspace); 3]
        );
        assert_eq!(parse_keys("{F5}").unwrap(), vec![n(NamedKey::F(5))]);
        assert_eq!(parse_keys("a\nb").unwrap()[1], n(NamedKey::Enter));
    }

    #[test]
    fn chords_braced_and_bare() {
        let ctrl_s = KeyPress {
            mods: vec![Modifier::Ctrl],
            key: Key::Char('s'),
        };
        assert_eq!(parse_keys("{ctrl+s}").unwrap(), vec![ctrl_s.clone()]);
        // a bare chord is the chord, on every desktop (the simulated one typed it as text)
        assert_eq!(parse_keys("ctrl+s").unwrap(), vec![ctrl_s]);
        assert_eq!(
            parse_keys("ctrl+shift+S").unwrap(),
            vec![KeyPress {
                mods: vec![Modifier::Ctrl, Modifier::Shift],
                key: Key::Char('s')
            }]
        );
        assert_eq!(
            parse_keys("{ctrl++}").unwrap(),
            vec![KeyPress {
                mods: vec![Modifier::Ctrl],
                key: Key::Char('+')
            }]
        );
        // "2+3" is text, not a chord
        assert_eq!(parse_keys("2+3").unwrap().len(), 3);
    }

    #[test]
    fn braces_and_errors() {
        assert_eq!(parse_keys("{{}x{}}").unwrap(), vec![c('{'), c('x'), c('}')]);
        assert_eq!(parse_keys("a{b").unwrap().len(), 3);
        assert!(parse_keys("{NOPE}").is_err());
        assert!(parse_keys("{a 1001}").is_err());
        assert!(parse_keys("{b 4294967296}").is_err());
    }

    /// Issue 21, item 7: `{x 1000}` repeated 125,000 times (a 1 MB answer) expanded to 125 M
    /// presses (4 GiB) before anything looked at it. The presses of one string are capped.
    #[test]
    fn the_presses_of_one_string_are_capped() {
        let huge = "{x 1000}".repeat(125_000);
        let e = parse_keys(&huge).unwrap_err().to_string();
        assert!(
            e.contains(&format!("more than {MAX_PRESSES} key presses")),
            "{e}"
        );
        assert!(e.contains("split"), "{e}");
        // plain text counts too
        assert!(parse_keys(&"a".repeat(MAX_PRESSES + 1)).is_err());
        assert_eq!(
            parse_keys(&"a".repeat(MAX_PRESSES)).unwrap().len(),
            MAX_PRESSES
        );
        let exact = "{x 1000}".repeat(MAX_PRESSES / 1000);
        assert_eq!(parse_keys(&exact).unwrap().len(), MAX_PRESSES);
        assert!(parse_keys(&format!("{exact}{{ENTER}}")).is_err());
    }

    proptest! {
        /// Whatever the string (repeats, text, braces), a parse never returns more presses
        /// than the cap.
        #[test]
        fn no_string_parses_beyond_the_cap(
            parts in proptest::collection::vec(
                prop_oneof![
                    (1u32..=1000).prop_map(|n| format!("{{x {n}}}")),
                    "[a-z{}]{0,8}",
                    Just("{ENTER 999}".to_string()),
                ],
                0..400,
            )
        ) {
            let text = parts.concat();
            if let Ok(presses) = parse_keys(&text) {
                prop_assert!(presses.len() <= MAX_PRESSES);
            }
        }
    }

    #[test]
    fn text_effect() {
        let run = |start: &str, keys: &str| {
            let mut v = start.to_string();
            apply_to_text(&mut v, &parse_keys(keys).unwrap());
            v
        };
        assert_eq!(run("", "ab{BACKSPACE}c{ENTER}{TAB}d"), "ac\n\td");
        assert_eq!(run("x", "ctrl+s"), "x");
        assert_eq!(run("x", "{ctrl+a}{ESC}{shift+y}"), "xY");
        assert_eq!(run("é", "{BACKSPACE}ü"), "ü");
    }
}
