//! The words of a simple shell command, read as POSIX `sh` reads them.
//!
//! The shell gate ([`crate::sensitive::SensitivePolicy::shell_reason`]) must judge exactly the
//! program the shell will run. `sh` separates words only at a space or a tab (its "blanks");
//! a no-break space, U+0085, U+2028, U+3000, a vertical tab or a form feed are ordinary
//! characters *inside* a word. So `cat<U+00A0>x/../../bin/rm -rf v` is one program word,
//! `cat<U+00A0>x/../../bin/rm`, not the program `cat`: a reader splitting on Unicode
//! whitespace (Rust's `split_whitespace`) would judge the wrong program.
//!
//! [`words`] reads a command the way the shell's token recognition does (blanks, `'…'`,
//! `"…"`, backslash, comments) and gives up, with a reason, on anything that is not one
//! simple command: an operator (`;`, `|`, `&`, `<`, `>`, `(`, `)`, a newline), a command
//! substitution, `${…}`, an unterminated quote. For each word it says whether the shell
//! leaves it as written after quote removal ([`ShellWord::literal`]) or expands it
//! (parameters, globs, tildes, braces), in which case only the shell knows what it becomes.

use std::fmt;

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellWord {
    /// The word as written, quotes and backslashes included.
    pub raw: String,
    /// The word the program receives, when the shell only removes quotes from it; `None`
    /// when the shell expands it (an unquoted or double-quoted `$`, an unquoted `*`, `?`,
    /// `[`, `~`, `{` or `}`), so its final text (or number of words) is not known here.
    pub literal: Option<String>,
    /// The word holds quotes or backslashes (the shell rewrites it).
    pub quoted: bool,
}

impl ShellWord {
    /// The word exactly as the program receives it, if the shell neither quotes nor expands
    /// anything in it.
    pub fn plain(&self) -> Option<&str> {
        (!self.quoted && self.literal.is_some()).then_some(self.raw.as_str())
    }
}

/// Why a command is not one simple command the gate can read word by word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSimple {
    /// An operator outside quotes: the command is several commands, a pipeline, a subshell
    /// or has a redirection.
    Operator(char),
    /// `$(…)` or a backquote: a command inside the command.
    Substitution,
    /// `${…}` or `$[…]`: an expansion whose extent depends on the shell's parser.
    BracedExpansion,
    /// A quote that is never closed.
    Unterminated(char),
    /// A backslash at the very end.
    TrailingBackslash,
    /// A NUL character, which no command line can hold.
    Nul,
}

impl fmt::Display for NotSimple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotSimple::Operator(c) => write!(f, "the operator {c:?} outside quotes"),
            NotSimple::Substitution => write!(f, "a command substitution ($(…) or `…`)"),
            NotSimple::BracedExpansion => write!(f, "a braced expansion (${{…}} or $[…])"),
            NotSimple::Unterminated(q) => write!(f, "the quote {q} is never closed"),
            NotSimple::TrailingBackslash => write!(f, "a backslash at the end"),
            NotSimple::Nul => write!(f, "a NUL character"),
        }
    }
}

/// The shell's blanks: the only characters that separate words.
pub fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Characters that end a word and start an operator (outside quotes).
fn is_operator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\n')
}

/// Characters an unquoted word is expanded at: globs, tilde, brace expansion (bash).
fn expands_unquoted(c: char) -> bool {
    matches!(c, '*' | '?' | '[' | '~' | '{' | '}')
}

/// The word being read.
#[derive(Default)]
struct Word {
    started: bool,
    start: usize,
    text: String,
    expands: bool,
    quoted: bool,
}

/// After a `$` (outside single quotes): a substitution or braced expansion is refused; any
/// other `$` makes the word expand.
fn dollar(next: Option<char>, word: &mut Word) -> Result<(), NotSimple> {
    match next {
        Some('(') => Err(NotSimple::Substitution),
        Some('{') | Some('[') => Err(NotSimple::BracedExpansion),
        _ => {
            word.expands = true;
            Ok(())
        }
    }
}

/// The words of `command` as `sh` reads them, or why it is not one simple command. A `#`
/// at the start of a word begins a comment (to the end of the line; a next line is refused
/// like any newline); an empty command has no words.
pub fn words(command: &str) -> Result<Vec<ShellWord>, NotSimple> {
    let mut out = Vec::new();
    let mut w = Word::default();
    let mut it = command.char_indices().peekable();
    let finish = |w: &mut Word, end: usize, out: &mut Vec<ShellWord>| {
        if w.started {
            let done = std::mem::take(w);
            out.push(ShellWord {
                raw: command[done.start..end].to_string(),
                literal: (!done.expands).then_some(done.text),
                quoted: done.quoted,
            });
        }
    };
    while let Some((i, c)) = it.next() {
        if c == '\0' {
            return Err(NotSimple::Nul);
        }
        if is_blank(c) {
            finish(&mut w, i, &mut out);
            continue;
        }
        if is_operator(c) {
            return Err(NotSimple::Operator(c));
        }
        if !w.started {
            if c == '#' {
                // a comment runs to the end of the line; a next line is another command
                return match command[i..].contains('\n') {
                    true => Err(NotSimple::Operator('\n')),
                    false => Ok(out),
                };
            }
            w.started = true;
            w.start = i;
        }
        match c {
            '`' => return Err(NotSimple::Substitution),
            '\\' => escaped(&mut it, &mut w)?,
            '\'' => single_quoted(&mut it, &mut w)?,
            '"' => double_quoted(&mut it, &mut w)?,
            '$' => {
                dollar(it.peek().map(|&(_, n)| n), &mut w)?;
                w.text.push('$');
            }
            c => {
                if expands_unquoted(c) {
                    w.expands = true;
                }
                w.text.push(c);
            }
        }
    }
    finish(&mut w, command.len(), &mut out);
    Ok(out)
}

/// The characters of a command still to read.
type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// After an unquoted backslash: the next character, literally.
fn escaped(it: &mut Chars<'_>, w: &mut Word) -> Result<(), NotSimple> {
    w.quoted = true;
    match it.next() {
        None => Err(NotSimple::TrailingBackslash),
        Some((_, '\0')) => Err(NotSimple::Nul),
        Some((_, '\n')) => Err(NotSimple::Operator('\n')),
        Some((_, n)) => {
            w.text.push(n);
            Ok(())
        }
    }
}

/// After `'`: everything to the next `'`, literally.
fn single_quoted(it: &mut Chars<'_>, w: &mut Word) -> Result<(), NotSimple> {
    w.quoted = true;
    loop {
        match it.next() {
            None => return Err(NotSimple::Unterminated('\'')),
            Some((_, '\'')) => return Ok(()),
            Some((_, '\0')) => return Err(NotSimple::Nul),
            Some((_, n)) => w.text.push(n),
        }
    }
}

/// After `"`: everything to the next `"`, where `$` still expands and a backslash escapes
/// only `$`, `` ` ``, `"` and itself.
fn double_quoted(it: &mut Chars<'_>, w: &mut Word) -> Result<(), NotSimple> {
    w.quoted = true;
    loop {
        match it.next() {
            None => return Err(NotSimple::Unterminated('"')),
            Some((_, '"')) => return Ok(()),
            Some((_, '\0')) => return Err(NotSimple::Nul),
            Some((_, '`')) => return Err(NotSimple::Substitution),
            Some((_, '$')) => {
                dollar(it.peek().map(|&(_, n)| n), w)?;
                w.text.push('$');
            }
            Some((_, '\\')) => match it.next() {
                None => return Err(NotSimple::Unterminated('"')),
                Some((_, '\0')) => return Err(NotSimple::Nul),
                Some((_, '\n')) => return Err(NotSimple::Operator('\n')),
                // only these lose their backslash inside double quotes
                Some((_, n @ ('$' | '`' | '"' | '\\'))) => w.text.push(n),
                Some((_, n)) => {
                    w.text.push('\\');
                    w.text.push(n);
                }
            },
            Some((_, n)) => w.text.push(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(cmd: &str) -> Vec<String> {
        words(cmd)
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
            .into_iter()
            .map(|w| w.literal.unwrap_or_else(|| panic!("{cmd:?} expands")))
            .collect()
    }

    #[test]
    fn only_space_and_tab_separate_words() {
        assert_eq!(literal("ls  -la\t/tmp "), ["ls", "-la", "/tmp"]);
        for odd in [
            '\u{a0}', '\u{85}', '\u{2028}', '\u{2029}', '\u{3000}', '\u{200b}', '\u{feff}',
            '\u{b}', '\u{c}', '\r', '\u{1680}', '\u{2007}',
        ] {
            let cmd = format!("cat{odd}x/../../bin/rm -rf v");
            assert_eq!(
                literal(&cmd),
                [format!("cat{odd}x/../../bin/rm"), "-rf".into(), "v".into()],
                "{odd:?}"
            );
        }
    }

    #[test]
    fn quotes_and_backslashes_are_removed() {
        assert_eq!(
            literal("echo 'a b' \"c d\" e\\ f"),
            ["echo", "a b", "c d", "e f"]
        );
        assert_eq!(literal("echo 'a\"b' \"a'b\""), ["echo", "a\"b", "a'b"]);
        assert_eq!(
            literal(r#"echo "a\$b\"c\\d\ne""#),
            ["echo", "a$b\"c\\d\\ne"]
        );
        assert_eq!(literal("echo ''"), ["echo", ""]);
        assert_eq!(literal("l's'"), ["ls"]);
        let w = words("l's' x").expect("words");
        assert!(w[0].quoted && w[0].plain().is_none());
        assert_eq!(w[1].plain(), Some("x"));
    }

    #[test]
    fn comments_end_the_command() {
        assert_eq!(literal("ls # rm -rf ~"), ["ls"]);
        assert_eq!(literal("echo a#b"), ["echo", "a#b"]);
        assert_eq!(literal("echo ''#b"), ["echo", "#b"]);
        assert!(literal("# nothing").is_empty());
        assert_eq!(words("ls # x\nrm -rf ~"), Err(NotSimple::Operator('\n')));
        assert!(literal("").is_empty());
    }

    #[test]
    fn expansions_are_marked() {
        for cmd in [
            "ls *.txt",
            "cat $HOME/x",
            "cat \"$x\"",
            "ls ~",
            "ls {a,b}",
            "ls a?",
        ] {
            let w = words(cmd).expect("simple");
            assert!(w[1].literal.is_none(), "{cmd}");
            assert!(w[0].literal.is_some(), "{cmd}");
        }
        assert_eq!(literal("ls '*' \"~\" \\?"), ["ls", "*", "~", "?"]);
    }

    #[test]
    fn anything_but_one_simple_command_is_refused() {
        for (cmd, why) in [
            ("ls; rm x", NotSimple::Operator(';')),
            ("ls | sh", NotSimple::Operator('|')),
            ("ls && rm", NotSimple::Operator('&')),
            ("ls > x", NotSimple::Operator('>')),
            ("ls<x", NotSimple::Operator('<')),
            ("(rm x)", NotSimple::Operator('(')),
            ("ls\nrm x", NotSimple::Operator('\n')),
            ("ls \\\nrm", NotSimple::Operator('\n')),
            ("echo $(rm x)", NotSimple::Substitution),
            ("echo \"$(rm x)\"", NotSimple::Substitution),
            ("echo `rm x`", NotSimple::Substitution),
            ("echo \"`rm x`\"", NotSimple::Substitution),
            ("echo ${x:-a b}", NotSimple::BracedExpansion),
            ("echo $[1+2]", NotSimple::BracedExpansion),
            ("echo 'a", NotSimple::Unterminated('\'')),
            ("echo \"a", NotSimple::Unterminated('"')),
            ("echo a\\", NotSimple::TrailingBackslash),
            ("echo a\0b", NotSimple::Nul),
        ] {
            assert_eq!(words(cmd), Err(why), "{cmd:?}");
        }
        // quoted operators are characters of a word
        assert_eq!(
            literal("echo 'a;b' \"c|d\" e\\&f"),
            ["echo", "a;b", "c|d", "e&f"]
        );
    }

    #[test]
    fn raw_words_are_slices_of_the_command() {
        let w = words(" cat\u{a0}x  'a b'\tc\\ d").expect("words");
        let raw: Vec<&str> = w.iter().map(|w| w.raw.as_str()).collect();
        assert_eq!(raw, ["cat\u{a0}x", "'a b'", "c\\ d"]);
    }
}
