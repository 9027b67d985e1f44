//! Untrusted text made inert for a terminal or a log line.
//!
//! Text from a model, the screen, a file or a command may hold control characters and escape
//! sequences that a terminal obeys: `\r` or `ESC [1A ESC [2K` rewrite what was shown, and
//! bidirectional overrides (U+202E) reorder it. A CONFIRM prompt that printed such text raw
//! could show `ls /tmp/victim` for a held `rm -rf /tmp/victim`. Every adapter that shows or
//! logs untrusted text passes it through [`inert`] (or [`inert_exact`] for the text a person
//! approves), which writes each such character as a visible escape instead.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal raw: C0 and C1 control characters, DEL, the Unicode
/// format, bidirectional and line/paragraph separator characters, and every Unicode space but
/// the ASCII one (a no-break space or U+3000 looks like a space, yet the shell reads it as part
/// of a word: shown raw, `cat<U+00A0>x/../bin/rm` would read as a harmless `cat`).
pub fn is_unsafe(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(
            u,
            0x00a0
                | 0x00ad
                | 0x0600..=0x0605
                | 0x061c
                | 0x06dd
                | 0x070f
                | 0x0890..=0x0891
                | 0x08e2
                | 0x1680
                | 0x180e
                | 0x2000..=0x200f
                | 0x2028..=0x202f
                | 0x205f..=0x206f
                | 0x3000
                | 0xfeff
                | 0xfff9..=0xfffb
                | 0x110bd
                | 0x110cd
                | 0x13430..=0x1343f
                | 0x1bca0..=0x1bca3
                | 0x1d173..=0x1d17a
                | 0xe0001
                | 0xe0020..=0xe007f
        )
}

/// Append the visible escape of one unsafe character.
fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn escape(s: &str, exact: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) || (exact && c == '\\')) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if exact && c == '\\' {
            out.push_str("\\\\");
        } else if is_unsafe(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every control character, escape sequence introducer (ESC, CSI), DEL and Unicode
/// format/bidi character written as a visible escape (`\x1b`, `\r`, `\n`, `\u{202e}`), so the
/// result is one line that a terminal prints as it reads. Other text, backslashes included,
/// is kept as it is (for progress lines and logs, where readability matters).
pub fn inert(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// As [`inert`], and a backslash is written `\\`, so the result is unambiguous: a shown `\n`
/// is a newline in the text, never a backslash followed by `n`. For what a person approves
/// (a held shell command, text to type).
pub fn inert_exact(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// Whether `s` has anything [`inert_exact`] changes (to tell the person how to read it).
pub fn needs_escaping(s: &str) -> bool {
    s.chars().any(|c| is_unsafe(c) || c == '\\')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn control_characters_and_sequences_are_shown_escaped() {
        let spoof = "rm -rf /tmp/victim\r\x1b[2Kls /tmp/victim";
        assert_eq!(inert(spoof), "rm -rf /tmp/victim\\r\\x1b[2Kls /tmp/victim");
        assert_eq!(
            inert("a\x1b[1Ab\x08\x08c\x7f"),
            "a\\x1b[1Ab\\x08\\x08c\\x7f"
        );
        assert_eq!(inert("x\u{9b}2Ky"), "x\\u{9b}2Ky", "C1 CSI");
        assert_eq!(inert("ls\nrm -rf ~"), "ls\\nrm -rf ~");
        assert_eq!(inert("a\tb\0"), "a\\tb\\x00");
    }

    #[test]
    fn bidi_and_format_characters_are_shown_escaped() {
        assert_eq!(
            inert("echo \u{202e}fdp.exe"),
            "echo \\u{202e}fdp.exe",
            "right-to-left override"
        );
        assert_eq!(inert("a\u{2066}b\u{2069}"), "a\\u{2066}b\\u{2069}");
        assert_eq!(inert("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(inert("\u{feff}bom"), "\\u{feff}bom");
        assert_eq!(inert("line\u{2028}sep"), "line\\u{2028}sep");
        assert_eq!(inert("tag\u{e0041}"), "tag\\u{e0041}");
    }

    /// Defect: progress lines showed U+0085, U+2028 and a no-break space as plain spaces,
    /// which hid `cat<U+00A0>x/../../bin/rm` behind a harmless-looking `cat x/…`.
    #[test]
    fn unicode_spaces_are_shown_escaped() {
        assert_eq!(
            inert("cat\u{a0}x/../bin/rm"),
            "cat\\u{a0}x/../bin/rm",
            "no-break space"
        );
        for c in [
            '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2007}', '\u{200a}', '\u{2028}',
            '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
        ] {
            assert!(c.is_whitespace(), "{c:?}");
            assert!(is_unsafe(c), "{c:?}");
            assert_eq!(inert(&format!("a{c}b")), format!("a\\u{{{:x}}}b", c as u32));
        }
        // every Unicode space but the ASCII ones (tab and newline are escaped as controls)
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            if c.is_whitespace() && c != ' ' {
                assert!(is_unsafe(c), "{c:?}");
            }
        }
    }

    #[test]
    fn ordinary_text_is_unchanged_and_not_copied() {
        for s in [
            "ls -la /tmp",
            "Grüße, 世界 — ok",
            "C:\\path\\n",
            "emoji 🎉",
            "",
        ] {
            assert!(matches!(inert(s), Cow::Borrowed(_)), "{s}");
            assert_eq!(inert(s), s);
        }
    }

    #[test]
    fn exact_mode_doubles_backslashes_so_escapes_are_unambiguous() {
        // A real newline and a backslash + n look different.
        assert_eq!(inert_exact("printf 'a\\n'"), "printf 'a\\\\n'");
        assert_eq!(inert_exact("printf 'a\n'"), "printf 'a\\n'");
        assert_eq!(inert_exact("ls"), "ls");
        assert!(needs_escaping("a\\b") && needs_escaping("a\rb") && !needs_escaping("ab"));
    }

    /// Undo `inert_exact` (for the round-trip property).
    fn unescape(s: &str) -> Option<String> {
        let mut out = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match it.next()? {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'x' => {
                    let h: String = [it.next()?, it.next()?].iter().collect();
                    out.push(char::from_u32(u32::from_str_radix(&h, 16).ok()?)?);
                }
                'u' => {
                    if it.next()? != '{' {
                        return None;
                    }
                    let mut h = String::new();
                    loop {
                        match it.next()? {
                            '}' => break,
                            d => h.push(d),
                        }
                    }
                    out.push(char::from_u32(u32::from_str_radix(&h, 16).ok()?)?);
                }
                _ => return None,
            }
        }
        Some(out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn output_never_holds_a_control_or_format_character(s in any::<String>()) {
            for shown in [inert(&s), inert_exact(&s)] {
                prop_assert!(!shown.chars().any(is_unsafe), "{:?} -> {:?}", s, shown);
            }
        }

        #[test]
        fn output_of_terminal_like_input_is_inert(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("\x1b[2K".to_string()), Just("\r".to_string()), Just("\x08".to_string()),
                    Just("\u{202e}".to_string()), Just("\x1b]0;t\x07".to_string()),
                    Just("\u{9b}".to_string()), "[ -~]{0,8}",
                ],
                0..12,
            )
        ) {
            let s = parts.concat();
            let shown = inert(&s);
            prop_assert!(!shown.contains('\x1b') && !shown.contains('\r'));
            prop_assert!(!shown.chars().any(is_unsafe));
        }

        #[test]
        fn exact_mode_is_lossless(s in any::<String>()) {
            prop_assert_eq!(unescape(&inert_exact(&s)), Some(s));
        }
    }
}
