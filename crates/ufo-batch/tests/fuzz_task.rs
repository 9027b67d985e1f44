//! Fuzzing the task parser ([`Task::parse`], the OSWorld JSON format): no input may panic, a
//! parsed task's accessors never panic, a valid task survives a JSON round trip, and an id that
//! cannot name a task (a control character, `.`, `..`, blank, too long) is refused naming the
//! file.
//!
//! `UFO_FUZZ_CASES=N` sets the cases per property (see ufo-core's `tests/support/fuzz.rs`).

#[path = "../../ufo-core/tests/support/fuzz.rs"]
mod fuzz;

use std::path::Path;

use fuzz::{adversarial, config, json_value, key};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use ufo_batch::task::Task;

fn touch(task: &Task) {
    let _ = task.app();
    let _ = task.unsupported();
    let _ = task.script_path();
    let _ = task.dir();
    let _ = task.evaluator.func.to_vec();
}

/// Task-shaped JSON: the task's keys with values of every type, sometimes right.
fn task_like() -> impl Strategy<Value = Value> {
    let step = btree_map(
        select(&["type", "parameters"][..]),
        prop_oneof![
            select(&["launch", "open", "execute", "sleep", "command"][..]).prop_map(|s| json!(s)),
            json_value(),
        ],
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    let evaluator = btree_map(
        select(&["func", "result", "expected", "options", "conj"][..]),
        json_value(),
        0..5,
    )
    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    (
        prop_oneof![any::<String>().prop_map(Value::String), json_value()],
        prop_oneof![any::<String>().prop_map(Value::String), json_value()],
        vec(prop_oneof![4 => step, 1 => json_value()], 0..4),
        prop_oneof![4 => evaluator, 1 => json_value()],
        btree_map(key(), json_value(), 0..3),
    )
        .prop_map(|(id, instruction, config, evaluator, extra)| {
            let mut m: serde_json::Map<String, Value> = extra.into_iter().collect();
            m.insert("id".into(), id);
            m.insert("instruction".into(), instruction);
            m.insert("config".into(), Value::Array(config));
            m.insert("evaluator".into(), evaluator);
            Value::Object(m)
        })
}

/// JSON that round-trips through `Value` exactly (no floats, no nulls at the top).
fn plain_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        btree_map("[a-z_]{1,8}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect()))
    })
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn task_text_never_panics(text in adversarial()) {
        if let Ok(task) = Task::parse(&text, Path::new("fuzz/task.json")) {
            touch(&task);
        }
    }

    #[test]
    fn task_shaped_json_never_panics(v in task_like()) {
        if let Ok(task) = Task::parse(&v.to_string(), Path::new("task.json")) {
            prop_assert!(!task.id.trim().is_empty());
            touch(&task);
        }
    }

    #[test]
    fn ids_that_cannot_name_a_task_are_refused_naming_the_file(
        id in prop_oneof![
            "[^\\p{Cc}]{0,8}\\p{Cc}[^\\p{Cc}]{0,8}",
            Just(".".to_string()),
            Just("..".to_string()),
            "[ \t]{0,4}",
            "[a-z]{513,600}",
        ],
    ) {
        let text = json!({"id": id, "instruction": "i", "evaluator": {"func": "infeasible"}})
            .to_string();
        let e = Task::parse(&text, Path::new("suite/bad-id.json"))
            .map(|t| t.id)
            .expect_err("refused");
        prop_assert!(e.to_string().contains("suite/bad-id.json"), "{}", e);
    }

    #[test]
    fn valid_tasks_round_trip(
        id in "[^\\s\\p{Cc}.][^\\p{Cc}]{0,30}",
        instruction in any::<String>(),
        funcs in vec(any::<String>(), 1..3),
        expected in plain_value(),
        steps in vec(("[a-z]{1,8}", plain_value()), 0..3),
        apps in vec(any::<String>(), 0..3),
        script in proptest::option::of(any::<String>()),
    ) {
        let config: Vec<Value> = steps
            .iter()
            .map(|(kind, parameters)| json!({"type": kind, "parameters": parameters}))
            .collect();
        let func = if funcs.len() == 1 { json!(funcs[0]) } else { json!(funcs) };
        let text = json!({"id": id, "instruction": instruction, "config": config,
            "evaluator": {"func": func, "expected": expected}, "related_apps": apps,
            "ufo_script": script}).to_string();
        let task = Task::parse(&text, Path::new("suite/t.json"))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&task.id, &id);
        prop_assert_eq!(&task.instruction, &instruction);
        prop_assert_eq!(task.evaluator.func.to_vec(), funcs);
        prop_assert_eq!(task.config.len(), steps.len());
        let again = Task::parse(
            &serde_json::to_string(&task).map_err(|e| TestCaseError::fail(e.to_string()))?,
            Path::new("suite/t.json"),
        )
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again, task);
    }
}
