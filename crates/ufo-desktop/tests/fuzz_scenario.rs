//! Fuzzing the simulated desktop's scenario parser and its `type_keys` key parser: no input
//! may panic (at load, or when a loaded scenario is observed and acted on), and a valid
//! scenario shows exactly its visible controls.
//!
//! `UFO_FUZZ_CASES=N` sets the cases per property (see ufo-core's `tests/support/fuzz.rs`).

#[path = "../../ufo-core/tests/support/fuzz.rs"]
mod fuzz;

use fuzz::{adversarial, config, json_value, key};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use ufo_core::{Desktop, UiAction};
use ufo_desktop::SimDesktop;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn object<K: ToString>(m: std::collections::BTreeMap<K, Value>) -> Value {
    Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Scenario-shaped JSON: the right keys with values of every type, sometimes right.
fn scenario_like() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        select(&["a", "b", "c", "A", ""][..]).prop_map(|s| json!(s)),
        json_value()
    ];
    let control = btree_map(
        select(
            &[
                "id", "role", "name", "value", "hidden", "enabled", "reveals", "hides",
            ][..],
        ),
        prop_oneof![
            3 => id.clone(),
            1 => vec(id.clone(), 0..3).prop_map(Value::Array),
            1 => any::<bool>().prop_map(Value::Bool),
        ],
        0..8,
    )
    .prop_map(object);
    let app = (
        prop_oneof![
            select(&["W", "w", "Calc", ""][..]).prop_map(|s| json!(s)),
            json_value()
        ],
        vec(prop_oneof![4 => control, 1 => json_value()], 0..6),
        btree_map(
            select(&["process", "title", "running", "launch"][..]),
            prop_oneof![json_value(), Just(json!(0)), Just(json!(false))],
            0..3,
        ),
    )
        .prop_map(|(name, controls, extra)| {
            let mut m = object(extra);
            m["name"] = name;
            m["controls"] = Value::Array(controls);
            m
        });
    let fault = btree_map(
        select(&["app", "control", "action", "error", "times"][..]),
        prop_oneof![
            select(&["W", "a", "click", "observe", "launch", "set_text"][..])
                .prop_map(|s| json!(s)),
            json_value(),
        ],
        0..5,
    )
    .prop_map(object);
    (vec(app, 0..3), vec(fault, 0..3), any::<bool>()).prop_map(|(apps, faults, with_faults)| {
        if with_faults {
            json!({"apps": apps, "faults": faults})
        } else {
            json!({"apps": apps})
        }
    })
}

/// Observe and act on every window and control of a loaded scenario: errors are fine, panics
/// are not.
fn exercise(d: &SimDesktop, keys: &str) {
    block_on(async {
        let _ = d.launchable().await;
        let windows = d.windows().await.unwrap_or_default();
        for w in windows {
            let Ok(obs) = d.observe(&w.id).await else {
                continue;
            };
            for c in &obs.controls {
                for (function, args) in [
                    ("click", json!({})),
                    ("type_keys", json!({"keys": keys})),
                    ("set_text", json!({"text": keys})),
                    ("read_text", json!({})),
                ] {
                    if let Ok(action) = UiAction::parse(function, &args) {
                        let _ = d.act(&w.id, Some(&c.id), &action).await;
                    }
                }
            }
        }
        let _ = d.shell(keys).await;
    });
    let _ = d.final_state();
}

proptest! {
    #![proptest_config(config(100))]

    #[test]
    fn scenario_text_never_panics(text in adversarial()) {
        if let Ok(d) = SimDesktop::from_json_str(&text) {
            exercise(&d, "x");
        }
    }

    #[test]
    fn scenario_shaped_json_never_panics(v in scenario_like(), keys in adversarial()) {
        if let Ok(d) = SimDesktop::from_value(&v) {
            exercise(&d, &keys);
        }
    }

    #[test]
    fn any_object_with_apps_never_panics(
        fields in btree_map(key(), json_value(), 0..4),
        apps in json_value(),
    ) {
        let mut m: serde_json::Map<String, Value> = fields.into_iter().collect();
        m.insert("apps".into(), apps);
        let _ = SimDesktop::from_value(&Value::Object(m));
    }

    #[test]
    fn valid_scenarios_show_exactly_their_visible_controls(
        controls in vec((any::<String>(), any::<bool>(), any::<bool>()), 0..40),
    ) {
        let controls: Vec<Value> = controls
            .iter()
            .enumerate()
            .map(|(i, (name, hidden, enabled))| {
                json!({"id": format!("c{i}"), "name": name, "hidden": hidden, "enabled": enabled})
            })
            .collect();
        let d = SimDesktop::from_value(&json!({"apps": [{"name": "W", "controls": controls}]}))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let obs = block_on(d.observe(&ufo_core::WindowId::from("W"))).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want: Vec<String> = controls
            .iter()
            .filter(|c| c["hidden"] == false)
            .map(|c| c["id"].as_str().unwrap_or_default().to_string())
            .collect();
        let got: Vec<String> = obs.controls.iter().map(|c| c.id.clone()).collect();
        prop_assert_eq!(got, want);
        let state = d.final_state().unwrap_or_default();
        prop_assert_eq!(
            state["apps"][0]["controls"].as_array().map(Vec::len),
            Some(controls.len())
        );
    }

    #[test]
    fn typed_plain_text_is_appended_as_is(text in "[^{}+]{0,64}", keys in adversarial()) {
        let d = SimDesktop::from_json_str(
            r#"{"apps": [{"name": "W", "controls": [{"id": "e", "role": "edit", "value": ""}]}]}"#,
        )
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let typed =
            |k: &str| block_on(d.act(&ufo_core::WindowId::from("W"), Some("e"), &UiAction::TypeKeys { keys: k.into() }));
        typed(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // a carriage return is the Enter key, as on the live desktop
        prop_assert_eq!(d.control_value("W", "e"), Some(text.replace('\r', "\n")));
        // Any key string afterwards: no panic.
        let _ = typed(&keys);
    }
}
