//! Fuzzing the `type_keys` parser ([`parse_keys`]): `{ENTER}`, `{ctrl+s}`, `{TAB 3}`, literal
//! braces, bare chords. No input may panic, repeats stay bounded, and text without braces or
//! `+` is typed character by character.
//!
//! `UFO_FUZZ_CASES=N` sets the cases per property (see ufo-core's `tests/support/fuzz.rs`);
//! a long campaign: `UFO_FUZZ_CASES=1000000 cargo test --release -p ufo-linux --lib keys::fuzz`.

#[path = "../../../ufo-core/tests/support/fuzz.rs"]
mod support;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use support::{adversarial, config};

use super::{parse_keys, KeyStep};

/// Key-string pieces: names, modifiers, braces, repeat counts, separators.
fn key_text() -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            select(
                &[
                    "{",
                    "}",
                    "+",
                    " ",
                    "ctrl",
                    "Ctrl",
                    "alt",
                    "shift",
                    "super",
                    "win",
                    "ENTER",
                    "enter",
                    "TAB",
                    "F5",
                    "F99",
                    "BACKSPACE",
                    "Delete",
                    "a",
                    "Z",
                    "é",
                    "🦀",
                    "{{}",
                    "{}}",
                    "{ENTER}",
                    "{ctrl+s}",
                    "{ctrl++}",
                    "{TAB 3}",
                    "{a 1000}",
                    "{a 1001}",
                    "{b 4294967296}",
                    "{ 7}",
                    "{}",
                    "ctrl+",
                    "+a",
                    "{ctrl+shift+alt+super+Delete}",
                    "\u{0}",
                    "\u{1b}",
                    "\n",
                    "\t",
                    "0",
                    "-1",
                    "999999999999999999999",
                ][..]
            )
            .prop_map(str::to_string),
            any::<char>().prop_map(String::from),
        ],
        0..24,
    )
    .prop_map(|v| v.concat())
}

fn steps_of(r: &[KeyStep]) -> usize {
    r.len()
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn key_parser_never_panics(text in prop_oneof![key_text(), adversarial()]) {
        if let Ok(steps) = parse_keys(&text) {
            // Each brace group repeats at most 1000 times: the output stays proportional.
            prop_assert!(steps_of(&steps) <= 1000 * (text.chars().count() + 1));
        }
    }

    #[test]
    fn plain_text_is_typed_char_by_char(text in "[^{}+ ]{0,64}") {
        let steps = parse_keys(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(steps.len(), text.chars().count());
    }
}
