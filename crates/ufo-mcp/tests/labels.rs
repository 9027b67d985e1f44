//! `ufo mcp serve` resolves a label against the last observation it returned for the window,
//! not a fresh one, and a shared name by the rules of README "Control resolution".

use std::sync::Arc;

use serde_json::{json, Map, Value};
use ufo_desktop::sim::ActionRecord;
use ufo_desktop::SimDesktop;
use ufo_mcp::DesktopServer;

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn desktop() -> Arc<SimDesktop> {
    Arc::new(
        SimDesktop::from_json_str(
            r#"{"apps": [{"name": "Term", "controls": [
                {"id": "more", "role": "button", "name": "More", "reveals": ["extra"]},
                {"id": "extra", "role": "button", "name": "Extra", "hidden": true},
                {"id": "menu", "role": "menu", "name": "Terminal"},
                {"id": "term", "role": "terminal", "name": "Terminal", "value": ""},
                {"id": "s1", "role": "button", "name": "Save"},
                {"id": "s2", "role": "button", "name": "Save"}]}]}"#,
        )
        .expect("scenario loads"),
    )
}

#[tokio::test]
async fn a_label_means_the_control_of_the_last_observation_returned() {
    let sim = desktop();
    let server = DesktopServer::new(sim.clone(), true);
    let observe = |s: &DesktopServer| {
        let s = s.clone();
        async move {
            s.run_tool("observe_window", &args(json!({"window": "Term"})))
                .await
                .expect("observes")
        }
    };
    observe(&server).await;
    // label 3 is the terminal in that observation (More, the Terminal menu, the terminal)
    server
        .run_tool(
            "act",
            &args(json!({"window": "Term", "control": "1", "function": "click"})),
        )
        .await
        .expect("clicks More");
    // "Extra" is now visible at label 2 in a fresh observation, which would shift label 3 to
    // the menu; the client still answers the observation it saw
    server
        .run_tool(
            "act",
            &args(json!({"window": "Term", "control": "3", "function": "click"})),
        )
        .await
        .expect("clicks the terminal");
    let acted: Vec<String> = sim
        .actions()
        .into_iter()
        .filter_map(|a| match a {
            ActionRecord::Ui { control, .. } => control,
            _ => None,
        })
        .collect();
    assert_eq!(acted, ["more", "term"]);
}

#[tokio::test]
async fn a_shared_name_resolves_by_role_or_fails_listing_candidates() {
    let sim = desktop();
    let server = DesktopServer::new(sim.clone(), true);
    server
        .run_tool(
            "type_text",
            &args(json!({"window": "Term", "control": "Terminal", "text": "ls"})),
        )
        .await
        .expect("types into the terminal");
    assert_eq!(sim.control_value("Term", "term").as_deref(), Some("ls"));
    let err = server
        .run_tool(
            "act",
            &args(json!({"window": "Term", "control": "Save", "function": "click"})),
        )
        .await
        .expect_err("two Save buttons")
        .to_string();
    assert!(err.contains("matches 2 controls"), "{err}");
    assert!(err.contains("button \"Save\""), "{err}");
}
