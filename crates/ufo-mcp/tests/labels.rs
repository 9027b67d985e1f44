//! `ufo mcp serve` resolves a label against the last observation it returned for the window,
//! not a fresh one, and a shared name by the rules of docs/resolution.md, "Control resolution".

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

fn calculator() -> Arc<SimDesktop> {
    Arc::new(
        SimDesktop::from_json_str(
            r#"{"apps": [{"name": "KCalc", "controls": [
                {"id": "file", "role": "menu", "name": "File"},
                {"id": "settings", "role": "menu", "name": "Settings"},
                {"id": "one", "role": "push button", "name": "1"},
                {"id": "three", "role": "push button", "name": "3"},
                {"id": "undo", "role": "push button", "name": "Undo", "enabled": false}]}]}"#,
        )
        .expect("scenario loads"),
    )
}

fn acted(sim: &SimDesktop) -> Vec<String> {
    sim.actions()
        .into_iter()
        .filter_map(|a| match a {
            ActionRecord::Ui { control, .. } => control,
            _ => None,
        })
        .collect()
}

/// `name` is always a name (a button called "1" is clicked, not label 1), `label` always a
/// label number; `control` keeps its old meaning (digits are a label).
#[tokio::test]
async fn name_and_label_are_separate_arguments_and_control_keeps_its_meaning() {
    let sim = calculator();
    let server = DesktopServer::new(sim.clone(), true);
    for call in [
        json!({"window": "KCalc", "name": "1", "function": "click"}),
        json!({"window": "KCalc", "name": "3", "function": "click"}),
        json!({"window": "KCalc", "label": 2, "function": "click"}),
        json!({"window": "KCalc", "label": 4, "name": "3", "function": "click"}),
        json!({"window": "KCalc", "control": "1", "function": "click"}),
        json!({"window": "KCalc", "name": "push button \"1\"", "function": "click"}),
    ] {
        server
            .run_tool("act", &args(call.clone()))
            .await
            .unwrap_or_else(|e| panic!("{call}: {e}"));
    }
    assert_eq!(
        acted(&sim),
        ["one", "three", "settings", "three", "file", "one"]
    );
    // a label that is not a number is refused, not taken for a name
    let err = server
        .run_tool(
            "act",
            &args(json!({"window": "KCalc", "label": "one", "function": "click"})),
        )
        .await
        .expect_err("label must be a number")
        .to_string();
    assert!(err.contains("label"), "{err}");
    // the tool schema offers both
    let act = server
        .tools()
        .into_iter()
        .find(|t| t.name == "act")
        .expect("act tool");
    let props = &act.input_schema["properties"];
    assert_eq!(props["label"]["type"], "integer", "{props}");
    assert_eq!(props["name"]["type"], "string", "{props}");
    assert!(
        props["control"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("label")),
        "{props}"
    );
}

/// A click on a control observed as disabled fails with "is disabled" and never reaches the
/// desktop.
#[tokio::test]
async fn a_disabled_control_is_refused_before_the_desktop_is_asked() {
    let sim = calculator();
    let server = DesktopServer::new(sim.clone(), true);
    let err = server
        .run_tool(
            "act",
            &args(json!({"window": "KCalc", "name": "Undo", "function": "click"})),
        )
        .await
        .expect_err("Undo is disabled")
        .to_string();
    assert!(err.contains("is disabled"), "{err}");
    assert!(acted(&sim).is_empty(), "{:?}", sim.actions());
    let sim_actions = sim.actions();
    assert!(sim_actions.is_empty(), "{sim_actions:?}");
}
