//! Fuzzing the model-response parsers: the tolerant JSON finder ([`parse_object`]), the typed
//! host and app responses, statuses, and GUI function calls ([`UiAction::parse`]). Nothing may
//! panic, and valid answers survive any wrapping.
//!
//! `UFO_FUZZ_CASES=N` sets the cases per property (see `tests/support/fuzz.rs`).

#[path = "support/fuzz.rs"]
mod fuzz;

use fuzz::{adversarial, config, json_value};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use ufo_core::action::FUNCTIONS;
use ufo_core::parse::parse_object;
use ufo_core::response::{AppResponse, HostResponse};
use ufo_core::{AppStatus, HostStatus, UiAction};

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn response_parsers_never_panic(raw in adversarial()) {
        let object = parse_object(&raw);
        let host = HostResponse::parse(&raw);
        let app = AppResponse::parse(&raw);
        // Both typed parsers go through parse_object: they fail when it does.
        if object.is_err() {
            prop_assert!(host.is_err() && app.is_err());
        }
        let _ = HostStatus::parse(&raw);
        let _ = AppStatus::parse(&raw);
    }

    #[test]
    fn typed_responses_never_panic_on_any_json_object(
        fields in proptest::collection::btree_map(fuzz::key(), json_value(), 0..12),
    ) {
        let raw = Value::Object(fields.into_iter().collect()).to_string();
        let _ = HostResponse::parse(&raw);
        let _ = AppResponse::parse(&raw);
    }

    #[test]
    fn valid_host_answers_round_trip_through_any_wrapping(
        observation in any::<String>(),
        thought in any::<String>(),
        subtask in any::<String>(),
        status in select(&HostStatus::ALL[..]),
        plan in proptest::collection::vec("[^\\s].*", 0..4),
        pre in "[^{]{0,40}",
        post in ".{0,40}",
        fence in any::<bool>(),
        trailing_comma in any::<bool>(),
    ) {
        let obj = json!({"Observation": observation, "Thought": thought,
            "Current Sub-Task": subtask, "Plan": plan, "Status": status.as_str()});
        let mut text = obj.to_string();
        if trailing_comma {
            text.insert(text.len() - 1, ',');
        }
        let raw = if fence {
            format!("{pre}\n```json\n{text}\n```\n{post}")
        } else {
            format!("{pre} {text} {post}")
        };
        let r = HostResponse::parse(&raw).map_err(TestCaseError::fail)?;
        prop_assert_eq!(r.observation, observation);
        prop_assert_eq!(r.thought, thought);
        prop_assert_eq!(r.current_subtask, subtask);
        prop_assert_eq!(r.status, status);
        prop_assert_eq!(r.plan, plan);
    }

    #[test]
    fn valid_app_answers_round_trip(
        observation in any::<String>(),
        thought in any::<String>(),
        function in select(FUNCTIONS),
        args in proptest::collection::btree_map("[a-z]{1,8}", any::<String>(), 0..4),
        status in select(&AppStatus::ALL[..]),
    ) {
        let args: serde_json::Map<String, Value> =
            args.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let raw = json!({"Observation": observation, "Thought": thought, "Function": function,
            "Args": args, "Status": status.as_str()}).to_string();
        let r = AppResponse::parse(&raw).map_err(TestCaseError::fail)?;
        prop_assert_eq!(r.observation, observation);
        prop_assert_eq!(r.thought, thought);
        prop_assert_eq!(r.function, function);
        prop_assert_eq!(r.args, Value::Object(args));
        prop_assert_eq!(r.status, status);
    }

    #[test]
    fn ui_actions_never_panic_and_round_trip(
        function in prop_oneof![select(FUNCTIONS).prop_map(str::to_string), adversarial()],
        args in prop_oneof![
            json_value(),
            proptest::collection::btree_map(fuzz::key(), json_value(), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ],
    ) {
        if let Ok(action) = UiAction::parse(&function, &args) {
            let again = UiAction::parse(action.name(), &action.args());
            prop_assert_eq!(again, Ok(action));
        }
    }
}
