//! Key strings (`{ENTER}`, `{ctrl+s}`, `{TAB 3}`, `{{}`): the `type_keys` arguments and the
//! simulated desktop's key parser. (The Linux backend's parser is crate-private; its fuzz test
//! is `cargo test -p ufo-linux --lib keys::fuzz`.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use ufo_core::{Desktop, UiAction, WindowId};
use ufo_desktop::SimDesktop;

const SCENARIO: &str =
    r#"{"apps": [{"name": "W", "controls": [{"id": "e", "role": "edit", "value": ""}]}]}"#;

fuzz_target!(|data: &[u8]| {
    let keys = String::from_utf8_lossy(data).into_owned();
    let Ok(action) = UiAction::parse("type_keys", &json!({ "keys": keys })) else {
        return;
    };
    let (Ok(d), Ok(rt)) = (
        SimDesktop::from_json_str(SCENARIO),
        tokio::runtime::Builder::new_current_thread().build(),
    ) else {
        return;
    };
    let _ = rt.block_on(d.act(&WindowId::from("W"), Some("e"), &action));
});
