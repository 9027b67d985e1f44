//! Fuzzing the shell gate against the real shell: random commands mixing ASCII, quotes,
//! backslashes, `$`, operators and Unicode spaces and format characters (U+00A0, U+0085,
//! U+2028, U+3000, U+200B, U+FEFF, tabs, newlines, …) are read by the gate's tokenizer
//! ([`shell_words::words`]) and by `/bin/sh` (and bash, when installed). No command may be read
//! differently: every word the gate takes as written is the word the shell gives the program,
//! and a command the gate lets run unconfirmed parses (`sh -n`) and runs a program of the
//! allow-list, named by the word the gate judged.
//!
//! The shell is asked for its words without running a program: `set -- <command>` then
//! `printf '%s\0' "$@"` (only for commands that are one simple command, which hold no
//! operator or substitution). `UFO_FUZZ_CASES=N` sets the cases per property (see
//! `tests/support/fuzz.rs`).

#[path = "support/fuzz.rs"]
mod fuzz;

use std::process::Command;

use fuzz::config;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use ufo_core::sensitive::SensitivePolicy;
use ufo_core::shell_words::{self, ShellWord};

/// Pieces of commands, glued at random.
const PIECES: &[&str] = &[
    "ls",
    "cat",
    "echo",
    "date",
    "mkdir",
    "find",
    "rm",
    "x",
    "a b",
    "-la",
    "-s",
    "-rf",
    " ",
    " ",
    "  ",
    "\t",
    "'",
    "'",
    "\"",
    "\"",
    "\\",
    "\\",
    "$",
    "$x",
    "$HOME",
    "$1",
    "$@",
    "*",
    "?",
    "[",
    "]",
    "~",
    "{",
    "}",
    "#",
    "=",
    "X=1",
    "/",
    "/bin/",
    "/usr/bin/",
    "x/../",
    "../../bin/rm",
    "\u{a0}",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{3000}",
    "\u{200b}",
    "\u{feff}",
    "\u{202e}",
    "\u{1680}",
    "\u{2007}",
    "\u{b}",
    "\u{c}",
    "\r",
    "é",
    "日本",
    "🦀",
    "\n",
    ";",
    "|",
    "&",
    "(",
    ")",
    "<",
    ">",
    "`",
    "$(",
    "${",
    "$[",
    "%",
    "+",
    ",",
    ":",
    "@",
    "!",
    "^",
    ".",
];

/// How a command starts: an allow-listed program (so the gate's decision is exercised),
/// an attack, or anything.
const STARTS: &[&str] = &[
    "",
    "ls ",
    "cat ",
    "echo ",
    "date ",
    "/bin/ls ",
    "/usr/bin/cat ",
    "cat\u{a0}x/../../../../bin/rm ",
    "ls\u{3000}",
    "echo\u{85}",
    "cat\u{2028}",
];

fn command() -> impl Strategy<Value = String> {
    (
        select(STARTS),
        vec(
            prop_oneof![
                6 => select(PIECES).prop_map(str::to_string),
                1 => any::<char>().prop_filter("no NUL", |c| *c != '\0').prop_map(String::from),
            ],
            0..14,
        ),
    )
        .prop_map(|(start, rest)| format!("{start}{}", rest.concat()))
}

/// The shells to compare with: `/bin/sh` (what ufo runs), and bash when installed (the
/// `/bin/sh` of some systems).
fn shells() -> Vec<&'static str> {
    ["/bin/sh", "/bin/bash"]
        .into_iter()
        .filter(|s| std::path::Path::new(s).exists())
        .collect()
}

/// The words `shell` gives the command `set -- <command>`, or its error output.
fn shell_words_of(shell: &str, command: &str) -> Result<Vec<String>, String> {
    let out = Command::new(shell)
        .arg("-c")
        // the count first: printf with no words still prints one (empty) word
        .arg(format!("set -- {command}\nprintf '%s\\0' \"$#\" \"$@\""))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .map_err(|e| format!("cannot start {shell}: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
    words.pop(); // after the last NUL
    let count: usize = words
        .first()
        .and_then(|n| n.parse().ok())
        .ok_or("no count")?;
    words.remove(0);
    words.truncate(count);
    Ok(words)
}

/// Whether `shell -n` parses the command.
fn parses(shell: &str, command: &str) -> bool {
    Command::new(shell)
        .args(["-n", "-c", "--"])
        .arg(command)
        .env_clear()
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The words the gate reads as written, up to the first the shell expands (after which the
/// shell alone knows how many words there are).
fn known_prefix(words: &[ShellWord]) -> Vec<String> {
    words.iter().map_while(|w| w.literal.clone()).collect()
}

/// Words the shell's grammar reads itself when they come first.
fn is_keyword(word: &ShellWord) -> bool {
    matches!(
        word.literal.as_deref(),
        Some(
            "!" | "{"
                | "}"
                | "case"
                | "do"
                | "done"
                | "elif"
                | "else"
                | "esac"
                | "fi"
                | "for"
                | "if"
                | "in"
                | "then"
                | "until"
                | "while"
                | "[["
                | "]]"
                | "function"
                | "select"
                | "coproc"
                | "time"
        )
    )
}

proptest! {
    #![proptest_config(config(300))]

    /// Every word the tokenizer reads as written is the word the shell gives the program.
    #[test]
    fn the_tokenizer_reads_words_as_the_shell_does(cmd in command()) {
        let Ok(words) = shell_words::words(&cmd) else {
            return Ok(());
        };
        let known = known_prefix(&words);
        for shell in shells() {
            // A first word the shell reads as grammar (a keyword, or bash's `NAME[` of an
            // array assignment) need not parse; the gate holds every such program word.
            let grammar = words.first().is_some_and(|w| is_keyword(w) || w.plain().is_none());
            prop_assert!(
                grammar || parses(shell, &cmd),
                "{shell} -n refuses {cmd:?}, read as {words:?}"
            );
            let theirs = shell_words_of(shell, &cmd);
            let theirs = match theirs {
                Ok(t) => t,
                Err(e) => return Err(TestCaseError::fail(format!("{shell} on {cmd:?}: {e}"))),
            };
            if known.len() == words.len() {
                prop_assert_eq!(&theirs, &known, "{} read {:?} differently", shell, cmd);
            } else {
                prop_assert!(
                    theirs.len() >= known.len() && theirs[..known.len()] == known[..],
                    "{shell} read {cmd:?} as {theirs:?}; the tokenizer as {words:?}"
                );
            }
        }
    }

    /// A command the gate lets run unconfirmed parses, and the program the shell runs is the
    /// word the gate judged, on the allow-list, with the arguments the gate judged.
    #[test]
    fn the_gate_judges_the_words_the_shell_runs(cmd in command()) {
        let policy = SensitivePolicy::default();
        let find = |name: &str| Some(format!("/usr/bin/{name}"));
        if policy.shell_reason(&cmd, &[], &find).is_some() {
            return Ok(());
        }
        let words = shell_words::words(&cmd).expect("an allowed command is one simple command");
        let program = words[0].plain().expect("an allowed program word is plain").to_string();
        prop_assert!(
            cmd.chars().all(|c| c == ' ' || c == '\t' || c == '\n' || !(c.is_whitespace() || ufo_core::inert::is_unsafe(c))),
            "{cmd:?} holds a character outside the plain set"
        );
        for shell in shells() {
            prop_assert!(parses(shell, &cmd), "{shell} -n refuses the allowed {cmd:?}");
            let theirs = match shell_words_of(shell, &cmd) {
                Ok(t) => t,
                Err(e) => return Err(TestCaseError::fail(format!("{shell} on {cmd:?}: {e}"))),
            };
            prop_assert_eq!(theirs.first(), Some(&program), "{} runs another program for {:?}", shell, cmd);
            let name = program.rsplit('/').next().unwrap_or(&program);
            prop_assert!(policy.shell_allow.iter().any(|a| a == name), "{shell} runs {program:?} for {cmd:?}");
            let known = known_prefix(&words);
            prop_assert!(
                theirs.len() >= known.len() && theirs[..known.len()] == known[..],
                "{shell} read the allowed {cmd:?} as {theirs:?}; the gate judged {words:?}"
            );
        }
    }
}

/// The attack of the defect, on the real shell: `sh` reads one word where a Unicode-space
/// reader saw `cat`; the gate holds it.
#[test]
fn the_unicode_space_attack_is_one_word_to_sh_and_held() {
    let cmd = "cat\u{a0}x/../../../../bin/rm -rf VICTIM";
    for shell in shells() {
        let theirs = shell_words_of(shell, cmd).expect("words");
        assert_eq!(
            theirs,
            ["cat\u{a0}x/../../../../bin/rm", "-rf", "VICTIM"],
            "{shell}"
        );
    }
    let find = |name: &str| Some(format!("/usr/bin/{name}"));
    assert!(SensitivePolicy::default()
        .shell_reason(cmd, &[], &find)
        .is_some());
}
