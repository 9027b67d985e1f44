//! Scale benchmark of the simulated desktop: load a scenario of N controls, then a full
//! observe + act cycle (observe, a click that reveals a tenth of the controls, one that hides
//! them, set_text on the last control, observe again, desktop screenshot, final state), for
//! N = 10k, 55k and 220k. Prints the time of each part.
//!
//! `cargo bench -p ufo-desktop --bench scale` (`UFO_BENCH_SIZES=1000,2000` picks the sizes).
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use serde_json::json;
use ufo_core::{Button, Desktop, UiAction};
use ufo_desktop::SimDesktop;

/// A scenario of `n` controls: every tenth hidden, `show` reveals them all, `hide` hides them
/// all, and each other control reveals its successor.
fn scenario(n: usize) -> String {
    let hidden: Vec<String> = (0..n)
        .filter(|i| i % 10 == 5)
        .map(|i| format!("c{i}"))
        .collect();
    let mut controls = vec![
        json!({"id": "show", "role": "button", "name": "Show all", "reveals": hidden}),
        json!({"id": "hide", "role": "button", "name": "Hide all", "hides": hidden}),
    ];
    for i in 0..n {
        let mut c = json!({"id": format!("c{i}"), "role": "edit", "name": format!("Field {i}"),
                           "value": ""});
        if i % 10 == 5 {
            c["hidden"] = json!(true);
        } else if i + 1 < n {
            c["reveals"] = json!([format!("c{}", i + 1)]);
        }
        controls.push(c);
    }
    json!({"apps": [{"name": "Big", "controls": controls}],
           "faults": [{"app": "Big", "control": format!("c{}", n / 2), "action": "click"}]})
    .to_string()
}

fn main() {
    let sizes: Vec<usize> = std::env::var("UFO_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 55_000, 220_000]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let click = UiAction::Click {
        button: Button::Left,
        double: false,
    };
    for n in sizes {
        let text = scenario(n);
        let total = Instant::now();
        let t = Instant::now();
        let desktop = SimDesktop::from_json_str(&text).unwrap();
        let load = t.elapsed();
        let t = Instant::now();
        let (visible, revealed) = rt.block_on(async {
            let before = desktop
                .observe(&ufo_core::WindowId::from("Big"))
                .await
                .unwrap()
                .controls
                .len();
            desktop
                .act(&ufo_core::WindowId::from("Big"), Some("show"), &click)
                .await
                .unwrap();
            let revealed = desktop
                .observe(&ufo_core::WindowId::from("Big"))
                .await
                .unwrap()
                .controls
                .len()
                - before;
            desktop
                .act(&ufo_core::WindowId::from("Big"), Some("hide"), &click)
                .await
                .unwrap();
            let last = format!("c{}", n - 1);
            let set = UiAction::SetText {
                text: "done".into(),
            };
            desktop
                .act(&ufo_core::WindowId::from("Big"), Some(&last), &set)
                .await
                .unwrap();
            let obs = desktop
                .observe(&ufo_core::WindowId::from("Big"))
                .await
                .unwrap();
            desktop.desktop_screenshot().await.unwrap();
            (obs.controls.len(), revealed)
        });
        let cycle = t.elapsed();
        let t = Instant::now();
        let state = desktop.final_state().unwrap();
        let fin = t.elapsed();
        assert_eq!(state["actions"].as_array().map(Vec::len), Some(3));
        println!(
            "{n:>7} controls: load {:>8.1} ms, observe+act cycle {:>8.1} ms, final state {:>7.1} ms, \
             total {:>8.1} ms ({visible} visible, {revealed} revealed)",
            load.as_secs_f64() * 1e3,
            cycle.as_secs_f64() * 1e3,
            fin.as_secs_f64() * 1e3,
            total.elapsed().as_secs_f64() * 1e3,
        );
    }
}
