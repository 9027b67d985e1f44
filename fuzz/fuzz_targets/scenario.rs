//! The simulated desktop's scenario parser, then every window observed and every control
//! clicked, typed into and read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use ufo_core::{Desktop, UiAction};
use ufo_desktop::SimDesktop;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(d) = SimDesktop::from_json_str(&text) else {
        return;
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(async {
        for w in d.windows().await.unwrap_or_default() {
            let Ok(obs) = d.observe(&w.id).await else {
                continue;
            };
            for c in &obs.controls {
                for (function, args) in [
                    ("click", json!({})),
                    ("type_keys", json!({"keys": "ab{ENTER}{BACKSPACE 2}"})),
                    ("read_text", json!({})),
                ] {
                    if let Ok(action) = UiAction::parse(function, &args) {
                        let _ = d.act(&w.id, Some(&c.id), &action).await;
                    }
                }
            }
        }
    });
    let _ = d.final_state();
});
