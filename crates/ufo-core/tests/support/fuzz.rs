//! Generators shared by the parser fuzz tests (`tests/fuzz_*.rs` of ufo-core, ufo-desktop,
//! ufo-linux and ufo-batch include this file): adversarial text (arbitrary Unicode, raw bytes,
//! JSON-ish fragments, deep nesting, huge numbers, control characters) and arbitrary JSON.
//!
//! `UFO_FUZZ_CASES` sets the number of cases of every property (default: a few hundred, so
//! `cargo test` stays fast). A long campaign:
//! `UFO_FUZZ_CASES=1000000 cargo test --release -p ufo-core --test fuzz_parsers`.
#![allow(dead_code)]

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;
use serde_json::Value;

/// The number of cases per property: `UFO_FUZZ_CASES`, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("UFO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// A proptest configuration with [`cases`] cases and no regression files in the source tree
/// (a failure prints its minimal input).
pub fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Pieces of JSON, model answers, scenarios, tasks and key strings, glued at random.
pub const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\\"",
    "\\u",
    "\\ud800",
    "\\udfff",
    "\\u0000",
    "null",
    "true",
    "false",
    "0",
    "-0",
    "1e999999",
    "-1e-999999",
    "18446744073709551616",
    "-9223372036854775809",
    "1.7976931348623157e309",
    "3.14",
    "NaN",
    "Infinity",
    "0x1F",
    "```json\n",
    "```",
    "\n",
    " ",
    "\t",
    "\r\n",
    "é",
    "日本",
    "🦀",
    "\u{0}",
    "\u{7f}",
    "\u{1b}[2J",
    "\u{1b}]0;title\u{7}",
    "\u{202e}",
    "\u{feff}",
    "\u{fffd}",
    "'",
    "//",
    "/*",
    "\"Status\"",
    "\"FINISH\"",
    "\"CONTINUE\"",
    "\"ASSIGN\"",
    "\"Observation\"",
    "\"Thought\"",
    "\"Function\"",
    "\"Args\"",
    "\"ControlLabel\"",
    "\"Actions\"",
    "\"Plan\"",
    "\"id\"",
    "\"apps\"",
    "\"controls\"",
    "\"name\"",
    "\"reveals\"",
    "\"hides\"",
    "\"hidden\"",
    "\"faults\"",
    "\"times\"",
    "\"delay_ms\"",
    "\"instruction\"",
    "\"evaluator\"",
    "\"func\"",
    "\"config\"",
    "\"type\"",
    "\"parameters\"",
    "{ENTER}",
    "{ctrl+s}",
    "{{}",
    "{}}",
    "{",
    "+",
    "++",
    "ctrl",
    "shift+",
    "alt+F4",
    "{TAB 1000}",
    "{a 4294967296}",
    "{BACKSPACE 5}",
    "{ 2}",
    "{}",
    "{enter -1}",
    "{ctrl+}",
    "{super+alt+shift+ctrl+Delete}",
];

/// Fragments glued together.
pub fn jsonish() -> impl Strategy<Value = String> {
    vec(select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

/// Deeply nested openers, closed or not.
pub fn deep() -> impl Strategy<Value = String> {
    (
        1usize..400,
        select(&["[", "{\"a\":", "{", "[{\"k\":", "{\"apps\":["][..]),
        any::<bool>(),
    )
        .prop_map(|(n, open, close)| {
            let mut s = open.repeat(n);
            if close {
                for c in open.chars().rev().filter(|c| matches!(c, '[' | '{')) {
                    let closer = if c == '[' { "]" } else { "}" };
                    s.push_str(&closer.repeat(n));
                }
            }
            s
        })
}

/// Arbitrary JSON values (numbers of every size, strings with fragments and control
/// characters, nested up to four levels).
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        select(FRAGMENTS).prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(key(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Object keys: the fields the parsers look for, and anything.
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        select(
            &[
                "Observation",
                "Thought",
                "Status",
                "Function",
                "Args",
                "ControlLabel",
                "ControlText",
                "Plan",
                "Actions",
                "Comment",
                "Questions",
                "Bash",
                "Message",
                "Current Sub-Task",
                "id",
                "name",
                "apps",
                "controls",
                "role",
                "value",
                "hidden",
                "enabled",
                "reveals",
                "hides",
                "faults",
                "app",
                "control",
                "action",
                "error",
                "times",
                "delay_ms",
                "running",
                "launch",
                "process",
                "title",
                "instruction",
                "config",
                "evaluator",
                "func",
                "result",
                "expected",
                "options",
                "conj",
                "type",
                "parameters",
                "related_apps",
                "ufo_script",
                "text",
                "keys",
                "x",
                "y",
                "button",
            ][..]
        )
        .prop_map(str::to_string),
        any::<String>(),
    ]
}

/// Adversarial text: any of the above, or raw bytes read leniently.
pub fn adversarial() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => vec(any::<u8>(), 0..256).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        5 => jsonish(),
        1 => deep(),
        3 => json_value().prop_map(|v| v.to_string()),
    ]
}
