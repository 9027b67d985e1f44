//! Cutting text down for prompts, progress lines and messages: the one set of clip helpers
//! every crate uses, so a cut always looks the same ("…", and how much was left out where the
//! reader needs to know).

/// Cut text to at most `max` bytes (on a character boundary), marking the cut with "…".
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Cut text to at most `max` characters, saying how much was cut: "… (N chars more)".
pub fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((end, _)) => {
            let more = s[end..].chars().count();
            format!("{}… ({more} chars more)", &s[..end])
        }
    }
}

/// Text on one line: every run of ASCII spaces, tabs and line feeds becomes one space (ends
/// trimmed), then at most `max` characters, marked with "…" when cut. A carriage return, other
/// control characters and the Unicode spaces (U+0085, U+00A0, U+2028, U+3000, …) are kept, for
/// [`crate::inert()`] to show escaped where the text reaches a terminal: a hidden `\r` is how a
/// line is spoofed, and a no-break space shown as a space hides what the shell will run.
pub fn one_line(s: &str, max: usize) -> String {
    let mut flat = String::with_capacity(s.len().min(max.saturating_mul(4).saturating_add(4)));
    let mut gap = false;
    for c in s.chars() {
        if matches!(c, ' ' | '\t' | '\n') {
            gap = !flat.is_empty();
        } else {
            if gap {
                flat.push(' ');
                gap = false;
            }
            flat.push(c);
        }
    }
    match flat.char_indices().nth(max) {
        None => flat,
        Some((end, _)) => {
            flat.truncate(end);
            flat.push('…');
            flat
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcé", 4), "abc…");
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcdé", 2), "ab… (3 chars more)");
        assert_eq!(one_line("  a\n\tb  c  ", 10), "a b c");
        assert_eq!(one_line("a\r\u{1b}[2Kb", 10), "a\r\u{1b}[2Kb");
        assert_eq!(one_line("xxxxxxxxxx", 4), "xxxx…");
        assert_eq!(one_line("", 4), "");
        // Unicode spaces are not spaces to the shell: kept, for inert() to show escaped
        assert_eq!(
            one_line("cat\u{a0}x \u{85}\u{2028}y", 20),
            "cat\u{a0}x \u{85}\u{2028}y"
        );
    }
}
