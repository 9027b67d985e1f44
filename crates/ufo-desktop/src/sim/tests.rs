//! Tests of the simulated desktop.

use super::*;
use crate::annotate::decode_png;
use ufo_core::{Button, Rect, ScrollDirection};

const SCENARIO: &str = r#"{"apps": [{
   "name": "Writer", "process": "writer", "title": "report - Writer",
   "running": true, "launch": "writer",
   "controls": [
     {"id": "table", "role": "table", "name": "Sales", "value": "Q1,10\nQ2,20"},
     {"id": "export", "role": "button", "name": "Export", "reveals": ["dlg_ok"]},
     {"id": "dlg_ok", "role": "button", "name": "OK", "hidden": true, "hides": ["dlg_ok"]},
     {"id": "name", "role": "edit", "name": "File name", "value": ""},
     {"id": "save", "role": "button", "name": "Save", "enabled": false},
     {"id": "close", "role": "button", "name": "Close", "hides": ["table"], "reveals": ["table"]}
   ]},
  {"name": "Calc", "process": "calc-bin", "title": "Untitled - Calc", "running": false,
   "launch": "calc --new", "extra": {"ignored": true},
   "controls": [{"id": "cell", "role": "edit", "name": "A1"}]}],
 "faults": [{"app": "Writer", "control": "export", "action": "click_input", "error": "access denied", "times": 1}],
 "comment": "unknown fields are fine"}"#;

fn sim() -> SimDesktop {
    SimDesktop::from_json_str(SCENARIO).expect("scenario parses")
}

fn click() -> UiAction {
    UiAction::Click {
        button: Button::Left,
        double: false,
    }
}

fn ids(obs: &WindowObservation) -> Vec<&str> {
    obs.controls.iter().map(|c| c.id.as_str()).collect()
}

fn err_text(text: &str) -> String {
    match SimDesktop::from_json_str(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn windows_list_running_apps_and_launchable_the_others() {
    let d = sim();
    let w = d.windows().await.expect("windows");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].id, "Writer");
    assert_eq!(w[0].title, "report - Writer");
    assert_eq!(w[0].app_name, "Writer");
    assert_eq!(w[0].process, "writer");
    assert_eq!(w[0].pid, Some(1000));
    assert!(w[0].rect.is_some_and(|r| r.w == 480 && r.h > 0));
    let l = d.launchable().await.expect("launchable");
    assert_eq!(
        l,
        vec![LaunchableApp {
            name: "Calc".into(),
            command: "calc --new".into()
        }]
    );
}

#[tokio::test]
async fn observe_lists_visible_controls_in_a_column_with_screenshots() {
    let d = sim();
    let obs = d.observe(&WindowId::from("Writer")).await.expect("observe");
    assert_eq!(ids(&obs), ["table", "export", "name", "save", "close"]);
    assert_eq!(obs.window.id, "Writer");
    assert!(obs.warnings.is_empty());
    let win = obs.window.rect.expect("window rect");
    let mut last_y = i32::MIN;
    for c in &obs.controls {
        assert!(c.rect.x > win.x && c.rect.y > win.y, "{c:?} inside {win:?}");
        assert!(c.rect.x + c.rect.w as i32 <= win.x + win.w as i32);
        assert!(c.rect.y + c.rect.h as i32 <= win.y + win.h as i32);
        assert!(c.rect.y > last_y, "a column, top to bottom");
        last_y = c.rect.y;
        assert_eq!(c.rect.x, obs.controls[0].rect.x);
    }
    assert!(!obs.controls[3].enabled);
    assert_eq!(obs.controls[0].value.as_deref(), Some("Q1,10\nQ2,20"));

    let plain = obs.screenshot.expect("screenshot");
    let annotated = obs.annotated.expect("annotated");
    assert_eq!((plain.width, plain.height), (win.w, win.h));
    assert_eq!((annotated.width, annotated.height), (win.w, win.h));
    let p = decode_png(&plain.png).expect("plain decodes");
    let a = decode_png(&annotated.png).expect("annotated decodes");
    assert_eq!((p.width(), p.height()), (win.w, win.h));
    assert_ne!(p, a, "annotation changes the picture");
    // The annotation draws inside the first control's box, not elsewhere.
    let r0 = annotate::to_image_rect(obs.controls[0].rect, win);
    let inside = |x: u32, y: u32| p.pixel(x, y) != a.pixel(x, y);
    assert!(inside(r0.x as u32 + 3, r0.y as u32 + 3));
    assert!(!inside(2, 2), "title bar untouched");
}

#[tokio::test]
async fn annotated_labels_follow_the_visible_controls() {
    let d = sim();
    let before = d.observe(&WindowId::from("Writer")).await.expect("observe");
    d.act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect_err("first click hits the fault");
    d.act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect("second click works");
    let after = d.observe(&WindowId::from("Writer")).await.expect("observe");
    assert_eq!(
        ids(&after),
        ["table", "export", "dlg_ok", "name", "save", "close"]
    );
    // Fixed slots: a control keeps its rectangle when another appears.
    assert_eq!(before.controls[2].rect, after.controls[3].rect);
    let b = before.annotated.expect("annotated");
    let a = after.annotated.expect("annotated");
    assert_ne!(b.png, a.png);
}

#[tokio::test]
async fn click_reveals_and_hides_controls() {
    let d = sim();
    assert!(matches!(
        d.act(&WindowId::from("Writer"), Some("dlg_ok"), &click())
            .await,
        Err(DesktopError::NoControl { .. })
    ));
    let _ = d
        .act(&WindowId::from("Writer"), Some("export"), &click())
        .await; // the one-shot fault
    let out = d
        .act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect("click");
    assert!(
        out.contains("clicked Export") && out.contains("OK"),
        "{out}"
    );
    assert_eq!(d.is_hidden("Writer", "dlg_ok"), Some(false));
    let out = d
        .act(&WindowId::from("Writer"), Some("dlg_ok"), &click())
        .await
        .expect("click OK");
    assert!(out.contains("now hidden: OK"), "{out}");
    assert_eq!(d.is_hidden("Writer", "dlg_ok"), Some(true));
    // hides wins over reveals for the same id
    d.act(&WindowId::from("Writer"), Some("close"), &click())
        .await
        .expect("close");
    assert_eq!(d.is_hidden("Writer", "table"), Some(true));
    let obs = d.observe(&WindowId::from("Writer")).await.expect("observe");
    assert_eq!(ids(&obs), ["export", "name", "save", "close"]);
}

#[tokio::test]
async fn text_actions_change_values() {
    let d = sim();
    let set = UiAction::SetText {
        text: "report".into(),
    };
    d.act(&WindowId::from("Writer"), Some("name"), &set)
        .await
        .expect("set_text");
    assert_eq!(d.control_value("Writer", "name").as_deref(), Some("report"));
    let keys = UiAction::TypeKeys {
        keys: ".csvx{BACKSPACE}{ctrl+s}{ESC}{ENTER}".into(),
    };
    let out = d
        .act(&WindowId::from("Writer"), Some("name"), &keys)
        .await
        .expect("type");
    assert!(out.contains("report.csv\\n"), "{out}");
    assert_eq!(
        d.control_value("Writer", "name").as_deref(),
        Some("report.csv\n")
    );
    let set = UiAction::SetText { text: "x".into() };
    d.act(&WindowId::from("Writer"), Some("name"), &set)
        .await
        .expect("set_text");
    assert_eq!(d.control_value("Writer", "name").as_deref(), Some("x"));
    let sel = UiAction::Select { item: "Q2".into() };
    d.act(&WindowId::from("Writer"), Some("table"), &sel)
        .await
        .expect("select");
    assert_eq!(d.control_value("Writer", "table").as_deref(), Some("Q2"));
    let read = d
        .act(
            &WindowId::from("Writer"),
            Some("table"),
            &UiAction::ReadText,
        )
        .await
        .expect("read");
    assert_eq!(read, "Q2");
    let read = d
        .act(
            &WindowId::from("Writer"),
            Some("export"),
            &UiAction::ReadText,
        )
        .await
        .expect("read");
    assert_eq!(read, "Export", "no value: the name");
    // type_keys on a control without a value starts from empty
    let keys = UiAction::TypeKeys { keys: "a".into() };
    d.act(&WindowId::from("Writer"), Some("export"), &keys)
        .await
        .expect("type");
    assert_eq!(d.control_value("Writer", "export").as_deref(), Some("a"));
}

#[test]
fn key_sequences_edit_the_value() {
    let run = |start: &str, keys: &str| {
        let mut v = start.to_string();
        ufo_core::keys::apply_to_text(&mut v, &ufo_core::keys::parse_keys(keys).expect("keys"));
        v
    };
    assert_eq!(run("", "ab{BACKSPACE}c{ENTER}{TAB}d"), "ac\n\td");
    assert_eq!(run("abc", "{BACKSPACE 2}{bs}{backspace}"), "");
    assert_eq!(run("", "{ctrl+s}{ESC}{F5}{alt+f4}"), "");
    assert_eq!(run("", "{{}x{}}"), "{x}");
    assert_eq!(run("", "a{SPACE}b{ENTER 2}"), "a b\n\n");
    assert_eq!(run("", "50% {unclosed"), "50% {unclosed");
    assert_eq!(run("é", "{BACKSPACE}ü"), "ü");
    // issue 14: a bare chord is a chord here as on the live desktop, not text
    assert_eq!(run("x", "ctrl+s"), "x");
}

/// Issue 14: a scenario control's states reach the observation.
#[tokio::test]
async fn control_states_are_observed() {
    let d = SimDesktop::from_value(&json!({"apps": [{"name": "A", "controls": [
        {"id": "c", "role": "check box", "name": "Bold", "checked": true, "focused": true},
        {"id": "e", "role": "edit", "name": "Name", "editable": true}]}]}))
    .expect("scenario");
    let obs = d.observe(&WindowId::from("A")).await.expect("observe");
    let s = obs.controls[0].states;
    assert!(s.checked && s.focused && !s.selected && !s.expanded && !s.editable);
    assert!(obs.controls[1].states.editable);
    // written flat, and only when true
    let v = serde_json::to_value(&obs.controls[1]).expect("json");
    assert_eq!(v["editable"], true);
    assert!(v.get("checked").is_none());
}

/// Issue 14: the port can activate and close windows; a closed app leaves the window
/// list and can be launched again.
#[tokio::test]
async fn windows_are_activated_and_closed_through_the_port() {
    let d = sim();
    d.activate(&WindowId::from("Writer"))
        .await
        .expect("activate");
    assert!(matches!(
        d.activate(&WindowId::from("Nope")).await,
        Err(DesktopError::NoWindow(_))
    ));
    d.close(&WindowId::from("Writer")).await.expect("close");
    assert!(d
        .windows()
        .await
        .expect("windows")
        .iter()
        .all(|w| w.id != "Writer"));
    assert!(matches!(
        d.close(&WindowId::from("Writer")).await,
        Err(DesktopError::NoWindow(_))
    ));
    let state = d.final_state().expect("state");
    assert_eq!(
        state["actions"].as_array().and_then(|a| a.last()).cloned(),
        Some(json!({"app": "Writer", "action": "close"}))
    );
}

#[tokio::test]
async fn focus_scroll_and_click_at_are_only_recorded() {
    let d = sim();
    d.act(&WindowId::from("Writer"), Some("table"), &UiAction::Focus)
        .await
        .expect("focus");
    let scroll = UiAction::Scroll {
        direction: ScrollDirection::Down,
        amount: 3,
    };
    d.act(&WindowId::from("Writer"), Some("table"), &scroll)
        .await
        .expect("scroll");
    let at = UiAction::ClickAt { x: 5, y: 6 };
    let out = d
        .act(&WindowId::from("Writer"), None, &at)
        .await
        .expect("click_at");
    assert_eq!(out, "clicked at (5, 6)");
    assert!(matches!(
        d.act(&WindowId::from("Writer"), None, &click()).await,
        Err(DesktopError::Unsupported(_))
    ));
    let state = d.final_state().expect("state");
    let actions = state["actions"].as_array().expect("actions");
    let names: Vec<&str> = actions
        .iter()
        .filter_map(|a| a["action"].as_str())
        .collect();
    assert_eq!(names, ["focus", "scroll", "click_at"]);
    assert_eq!(actions[2]["control"], Value::Null);
    assert_eq!(actions[2]["args"], json!({"x": 5, "y": 6}));
    assert_eq!(
        actions[1]["args"],
        json!({"direction": "down", "amount": 3})
    );
    assert_eq!(
        d.control_value("Writer", "table").as_deref(),
        Some("Q1,10\nQ2,20")
    );
}

/// The simulation draws its windows from their controls: `read_pixels` is refused, with or
/// without a control named, recorded as refused, and its observations never offer it.
#[tokio::test]
async fn read_pixels_is_refused_and_never_offered() {
    let d = sim();
    let obs = d.observe(&WindowId::from("Writer")).await.expect("observe");
    assert!(!obs.pixels_readable);
    for control in [None, Some("table")] {
        let e = d
            .act(&WindowId::from("Writer"), control, &UiAction::ReadPixels)
            .await
            .expect_err("refused");
        assert!(
            matches!(&e, DesktopError::Unsupported(m) if m.contains("read_text")),
            "{e}"
        );
    }
    let state = d.final_state().expect("state");
    let actions = state["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 2, "{actions:?}");
    for a in actions {
        assert_eq!(a["action"], "read_pixels");
        assert_eq!(a["ok"], false);
        assert_eq!(a["control"], Value::Null);
    }
}

#[tokio::test]
async fn faults_fail_the_action_and_are_recorded() {
    let d = sim();
    let e = d
        .act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect_err("fault");
    assert!(
        matches!(&e, DesktopError::ActionFailed(m) if m == "access denied"),
        "{e}"
    );
    assert_eq!(d.is_hidden("Writer", "dlg_ok"), Some(true), "no effect");
    assert_eq!(
        d.actions(),
        vec![ActionRecord::Ui {
            app: "Writer".into(),
            control: Some("export".into()),
            action: "click".into(),
            args: json!({"button": "left", "double": false}),
            ok: false,
        }]
    );
    // times: 1 — the second click goes through
    d.act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect("second click");
    let e = d
        .act(&WindowId::from("Writer"), Some("save"), &click())
        .await
        .expect_err("disabled");
    assert_eq!(e.to_string(), "control is disabled");
    let oks: Vec<bool> = d
        .actions()
        .iter()
        .map(|a| matches!(a, ActionRecord::Ui { ok: true, .. }))
        .collect();
    assert_eq!(oks, [false, true, false]);
}

#[tokio::test]
async fn permanent_and_wildcard_faults() {
    let d = SimDesktop::from_json_str(
        r#"{"apps":[{"name":"A","controls":[{"id":"b"},{"id":"e","role":"edit"}]}],
            "faults":[{"app":"a","control":"e","action":"set_edit_text","error":"read-only"},
                      {"app":"A","action":"focus"}]}"#,
    )
    .expect("parses");
    for _ in 0..3 {
        let e = d
            .act(
                &WindowId::from("A"),
                Some("e"),
                &UiAction::SetText { text: "x".into() },
            )
            .await
            .expect_err("permanent fault");
        assert_eq!(e.to_string(), "read-only");
    }
    for c in ["b", "e"] {
        let e = d
            .act(&WindowId::from("A"), Some(c), &UiAction::Focus)
            .await
            .expect_err("wildcard fault");
        assert_eq!(e.to_string(), "injected fault");
    }
    d.act(&WindowId::from("A"), Some("b"), &click())
        .await
        .expect("other actions fine");
    assert_eq!(d.control_value("A", "e"), None);
}

#[tokio::test]
async fn observe_fault_is_a_system_error() {
    let d = SimDesktop::from_json_str(
        r#"{"apps":[{"name":"A","controls":[{"id":"b"}]},{"name":"B"}],
            "faults":[{"app":"A","control":"b","action":"observe","error":"accessibility bus gone"},
                      {"app":"B","action":"screenshot","times":1}]}"#,
    )
    .expect("parses");
    let e = d
        .observe(&WindowId::from("A"))
        .await
        .expect_err("observe fault");
    assert!(matches!(&e, DesktopError::Observe(m) if m == "accessibility bus gone"));
    assert!(e.to_string().contains("accessibility bus gone"));
    d.observe(&WindowId::from("B")).await.expect_err("one-shot");
    let obs = d
        .observe(&WindowId::from("B"))
        .await
        .expect("second observe works");
    assert!(obs.controls.is_empty());
    assert!(obs.screenshot.is_some());
    assert_eq!(d.actions(), vec![], "observing is not an action");
}

#[tokio::test]
async fn unknown_windows_and_controls() {
    let d = sim();
    assert!(matches!(
        d.observe(&WindowId::from("Nope")).await,
        Err(DesktopError::NoWindow(w)) if w == "Nope"
    ));
    assert!(matches!(
        d.observe(&WindowId::from("Calc")).await,
        Err(DesktopError::NoWindow(_))
    ));
    assert!(matches!(
        d.act(&WindowId::from("Calc"), Some("cell"), &click()).await,
        Err(DesktopError::NoWindow(_))
    ));
    match d
        .act(&WindowId::from("Writer"), Some("ghost"), &click())
        .await
    {
        Err(DesktopError::NoControl { window, control }) => {
            assert_eq!((window.as_str(), control.as_str()), ("Writer", "ghost"));
        }
        other => panic!("expected NoControl, got {other:?}"),
    }
    assert!(d.actions().is_empty(), "nothing reached a control");
    // window ids match case-insensitively as a fallback
    d.observe(&WindowId::from("writer")).await.expect("observe");
}

#[tokio::test]
async fn launch_by_name_and_shell() {
    let d = sim();
    let w = d.launch("calc").await.expect("launch");
    assert_eq!((w.id.as_str(), w.pid), ("Calc", Some(1001)));
    assert!(d.is_running("Calc"));
    d.launch("CALC").await.expect("already running");
    assert_eq!(
        d.actions(),
        vec![ActionRecord::Launch {
            app: "Calc".into(),
            ok: true
        }]
    );
    assert!(matches!(
        d.launch("Paint").await,
        Err(DesktopError::UnknownApp(a)) if a == "Paint"
    ));
    let titles: Vec<String> = d
        .windows()
        .await
        .expect("windows")
        .into_iter()
        .map(|w| w.title)
        .collect();
    assert_eq!(titles, ["report - Writer", "Untitled - Calc"]);
    assert!(d.launchable().await.expect("launchable").is_empty());
    d.observe(&WindowId::from("Calc"))
        .await
        .expect("observe launched app");
}

#[tokio::test]
async fn shell_launches_apps_and_records_other_commands() {
    let d = sim();
    let out = d.shell("  calc --new  ").await.expect("shell");
    assert_eq!(out.launched.as_deref(), Some("Calc"));
    assert_eq!(out.code, Some(0));
    assert!(d.is_running("Calc"));
    let out = d.shell("calc --new &").await.expect("shell again");
    assert_eq!(out.launched.as_deref(), Some("Calc"), "already running");
    let out = d.shell("rm -rf /tmp/x").await.expect("shell");
    assert_eq!(
        out,
        ShellOutput {
            code: Some(0),
            stdout: String::new(),
            stderr: String::new(),
            launched: None
        }
    );
    let out = d.shell("calc").await.expect("not the launch command");
    assert_eq!(out.launched, None);
    let state = d.final_state().expect("state");
    assert_eq!(
        state["actions"],
        json!([
            {"app": "Calc", "action": "launch"},
            {"action": "shell", "args": {"command": "rm -rf /tmp/x"}},
            {"action": "shell", "args": {"command": "calc"}}
        ])
    );
}

#[tokio::test]
async fn launch_faults() {
    let d = SimDesktop::from_json_str(
        r#"{"apps":[{"name":"Calc","running":false,"launch":"calc"}],
            "faults":[{"app":"Calc","action":"launch","error":"no display","times":1}]}"#,
    )
    .expect("parses");
    let out = d.shell("calc").await.expect("shell");
    assert_eq!((out.code, out.launched.clone()), (Some(1), None));
    assert!(out.stderr.contains("no display"), "{out:?}");
    assert!(!d.is_running("Calc"));
    d.launch("Calc").await.expect("second launch works");
    assert_eq!(
        d.final_state().expect("state")["actions"],
        json!([{"app":"Calc","action":"launch","ok":false},{"app":"Calc","action":"launch"}])
    );
}

#[tokio::test]
async fn final_state_has_the_contract_shape() {
    let d = sim();
    let _ = d
        .act(&WindowId::from("Writer"), Some("export"), &click())
        .await;
    d.act(&WindowId::from("Writer"), Some("export"), &click())
        .await
        .expect("click");
    d.act(
        &WindowId::from("Writer"),
        Some("name"),
        &UiAction::SetText {
            text: "out.csv".into(),
        },
    )
    .await
    .expect("set_text");
    d.shell("calc --new").await.expect("launch");
    let state = d.final_state().expect("sim has a final state");
    let expected = json!({
        "apps": [
            {"name": "Writer", "running": true, "controls": [
                {"id": "table", "value": "Q1,10\nQ2,20", "hidden": false},
                {"id": "export", "value": null, "hidden": false},
                {"id": "dlg_ok", "value": null, "hidden": false},
                {"id": "name", "value": "out.csv", "hidden": false},
                {"id": "save", "value": null, "hidden": false},
                {"id": "close", "value": null, "hidden": false}
            ]},
            {"name": "Calc", "running": true, "controls": [
                {"id": "cell", "value": null, "hidden": false}
            ]}
        ],
        "actions": [
            {"app": "Writer", "control": "export", "action": "click",
             "args": {"button": "left", "double": false}, "ok": false},
            {"app": "Writer", "control": "export", "action": "click",
             "args": {"button": "left", "double": false}, "ok": true},
            {"app": "Writer", "control": "name", "action": "set_text",
             "args": {"text": "out.csv"}, "ok": true},
            {"app": "Calc", "action": "launch"}
        ]
    });
    assert_eq!(state, expected);
}

#[tokio::test]
async fn desktop_screenshot_shows_running_windows() {
    let d = sim();
    let s = d
        .desktop_screenshot()
        .await
        .expect("ok")
        .expect("a screenshot");
    let img = decode_png(&s.png).expect("decodes");
    assert_eq!((img.width(), img.height()), (s.width, s.height));
    assert!(s.width >= 640 && s.height >= 480);
    d.settle().await;
}

#[tokio::test]
async fn works_behind_the_port_trait_object() {
    let d: std::sync::Arc<dyn Desktop> = std::sync::Arc::new(sim());
    assert_eq!(d.windows().await.expect("windows").len(), 1);
    assert!(d.final_state().is_some());
}

#[test]
fn a_poisoned_lock_is_recovered() {
    let d = std::sync::Arc::new(sim());
    let d2 = std::sync::Arc::clone(&d);
    let _ = std::thread::spawn(move || {
        let _guard = d2.lock();
        panic!("poison the lock");
    })
    .join();
    assert!(d.state.is_poisoned());
    assert!(d.is_running("Writer"));
    assert!(d.final_state().is_some());
}

#[test]
fn defaults_apply() {
    let d = SimDesktop::from_json_str(
        r#"{"apps":[{"name":"Notes","controls":[{"id":"x","future_field":1}]}]}"#,
    )
    .expect("parses");
    let st = d.lock();
    let a = &st.apps[0];
    assert_eq!((a.process.as_str(), a.title.as_str()), ("notes", "Notes"));
    assert!(a.running);
    assert_eq!(a.launch, "notes");
    let c = &a.controls[0];
    assert_eq!((c.role.as_str(), c.name.as_str()), ("control", ""));
    assert!(!c.hidden && c.enabled && c.value.is_none());
}

#[test]
fn bad_scenarios_say_what_and_where() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"apps":[{"name":"A","controls":[{"id":"a"},{"id":"b"},{"role":"button"}]}]}"#,
            "apps[0].controls[2]: missing id",
        ),
        (
            r#"{"apps":[{"name":"A","controls":[{"id":"a"},{"id":"a"}]}]}"#,
            "apps[0].controls[1].id: duplicate control id \"a\" (first at apps[0].controls[0])",
        ),
        (
            r#"{"apps":[{"name":"A"},{"name":"a"}]}"#,
            "apps[1].name: duplicate app name \"a\" (first at apps[0])",
        ),
        (
            r#"{"apps":[{"name":"A","controls":[{"id":"a","reveals":["zz"]}]}]}"#,
            "apps[0].controls[0].reveals[0]: no control with id \"zz\" in app \"A\"",
        ),
        (
            r#"{"apps":[{"name":"A","controls":[{"id":"a","hides":[3]}]}]}"#,
            "apps[0].controls[0].hides[0]: expected a control id (string), got a number",
        ),
        (r#"{"apps":[{"title":"x"}]}"#, "apps[0]: missing name"),
        (
            r#"{"apps":[{"name":""}]}"#,
            "apps[0].name: must not be empty",
        ),
        (
            r#"{"apps":[{"name":"A","running":"yes"}]}"#,
            "apps[0].running: expected true or false, got a string",
        ),
        (
            r#"{"apps":[{"name":"A","controls":{}}]}"#,
            "apps[0].controls: expected a list, got an object",
        ),
        (
            r#"{"apps":[7]}"#,
            "apps[0]: expected an object, got a number",
        ),
        (r#"{"apps":{}}"#, "apps: expected a list, got an object"),
        (r#"{"app":[]}"#, "scenario: missing apps"),
        (r#"[]"#, "scenario: expected a JSON object"),
        (
            r#"{"apps":[{"name":"A"}],"faults":[{"app":"B","action":"click"}]}"#,
            "faults[0].app: no app named \"B\"",
        ),
        (
            r#"{"apps":[{"name":"A"}],"faults":[{"app":"A","action":"drag"}]}"#,
            "faults[0].action: unknown action \"drag\"",
        ),
        (
            r#"{"apps":[{"name":"A"}],"faults":[{"app":"A","control":"x","action":"click"}]}"#,
            "faults[0].control: no control with id \"x\" in app \"A\"",
        ),
        (
            r#"{"apps":[{"name":"A"}],"faults":[{"app":"A"}]}"#,
            "faults[0]: missing action",
        ),
        (
            r#"{"apps":[{"name":"A"}],"faults":[{"app":"A","action":"click","times":0}]}"#,
            "faults[0].times: expected a positive integer",
        ),
        (r#"{"apps":[],"faults":{}}"#, "faults: expected a list"),
        (r#"{"apps": [,]}"#, "scenario is not valid JSON"),
    ];
    for (text, want) in cases {
        let got = err_text(text);
        assert!(
            got.contains(want),
            "for {text}\n  got:  {got}\n  want: {want}"
        );
    }
}

#[test]
fn load_names_the_file() {
    let dir = std::env::temp_dir().join(format!("ufo-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let good = dir.join("good.json");
    std::fs::write(&good, SCENARIO).expect("write");
    let d = SimDesktop::load(&good).expect("loads");
    assert!(d.is_running("Writer"));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"apps":[{"controls":[]}]}"#).expect("write");
    let e = SimDesktop::load(&bad).expect_err("bad").to_string();
    assert!(
        e.contains("bad.json") && e.contains("apps[0]: missing name"),
        "{e}"
    );
    let e = SimDesktop::load(dir.join("missing.json"))
        .expect_err("missing")
        .to_string();
    assert!(
        e.contains("cannot read scenario") && e.contains("missing.json"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario of `n` edit controls `c0..`, every tenth hidden, plus `show` (reveals the
/// hidden ones) and `hide` (hides them).
fn big_scenario(n: usize) -> String {
    let hidden: Vec<String> = (0..n)
        .filter(|i| i % 10 == 5)
        .map(|i| format!("c{i}"))
        .collect();
    let mut controls = vec![
        json!({"id": "show", "role": "button", "name": "Show", "reveals": hidden}),
        json!({"id": "hide", "role": "button", "name": "Hide", "hides": hidden}),
    ];
    for i in 0..n {
        let mut c = json!({"id": format!("c{i}"), "role": "edit", "name": format!("F{i}")});
        if i % 10 == 5 {
            c["hidden"] = json!(true);
        } else if i + 1 < n {
            c["reveals"] = json!([format!("c{}", i + 1)]);
        }
        controls.push(c);
    }
    json!({"apps": [{"name": "Big", "controls": controls}],
           "faults": [{"app": "Big", "control": format!("c{}", n - 1), "action": "focus"}]})
    .to_string()
}

/// Defect 16: loading checked ids pairwise and clicks scanned every control for every
/// revealed id (quadratic: 183 s for 220k controls). Now lookups go through an index. The
/// bound is for liveness only (a quadratic load of this size takes over ten minutes even
/// optimised; the linear one takes seconds unoptimised).
#[test]
fn a_scenario_of_220k_controls_completes_a_full_observe_and_act_cycle() {
    const N: usize = 220_000;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let d = SimDesktop::from_json_str(&big_scenario(N)).expect("loads");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let result = rt.block_on(async {
            let before = d
                .observe(&WindowId::from("Big"))
                .await
                .expect("observe")
                .controls
                .len();
            let shown = d
                .act(&WindowId::from("Big"), Some("show"), &click())
                .await
                .expect("show");
            let after = d
                .observe(&WindowId::from("Big"))
                .await
                .expect("observe")
                .controls
                .len();
            let hidden = d
                .act(&WindowId::from("Big"), Some("hide"), &click())
                .await
                .expect("hide");
            let last = format!("c{}", N - 1);
            let set = UiAction::SetText { text: "end".into() };
            d.act(&WindowId::from("Big"), Some(&last), &set)
                .await
                .expect("set_text");
            let obs = d.observe(&WindowId::from("Big")).await.expect("observe");
            (before, shown, after, hidden, obs)
        });
        let state = d.final_state().expect("final state");
        let _ = tx.send((result, state));
    });
    let ((before, shown, after, hidden, obs), state) = rx
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("a 220k-control cycle finishes (liveness bound, not a timing)");
    assert_eq!(before, N + 2 - N / 10);
    assert_eq!(after, N + 2);
    assert_eq!(obs.controls.len(), before);
    assert!(
        shown.starts_with("clicked Show; now visible: F5, F15, F25")
            && shown.ends_with(" and 21950 more"),
        "{shown}"
    );
    assert!(hidden.ends_with(" and 21950 more"), "{hidden}");
    assert_eq!(
        obs.controls.last().map(|c| c.value.as_deref()),
        Some(Some("end"))
    );
    assert!(obs.annotated.is_some(), "{:?}", obs.warnings);
    assert_eq!(
        state["apps"][0]["controls"].as_array().map(Vec::len),
        Some(N + 2)
    );
    assert_eq!(state["actions"].as_array().map(Vec::len), Some(3));
}

/// Controls past the last slot are drawn on top of each other; drawing only the top one
/// (and labelling only it) must give the very picture drawing all of them gives.
#[tokio::test]
async fn skipping_covered_controls_changes_no_pixel() {
    let d = SimDesktop::from_json_str(&big_scenario(260)).expect("loads");
    let obs = d.observe(&WindowId::from("Big")).await.expect("observe");
    let all: Vec<(String, Rect)> = {
        let st = d.lock();
        let app = &st.apps[0];
        app.controls
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.hidden)
            .enumerate()
            .map(|(label, (slot, _))| ((label + 1).to_string(), slot_rect(slot)))
            .collect()
    };
    assert!(all.len() > MAX_SLOT + 20);
    let image = render_window(&d.lock().apps[0], 0);
    let want = annotate::annotated_screenshot(&image, &all).expect("annotate");
    let got = obs.annotated.expect("annotated");
    assert_eq!(
        decode_png(&got.png).expect("png").as_raw(),
        decode_png(&want.png).expect("png").as_raw()
    );
}

#[tokio::test]
async fn a_control_both_revealed_and_hidden_by_a_click_ends_hidden() {
    let d = SimDesktop::from_json_str(
        r#"{"apps": [{"name": "W", "controls": [
            {"id": "b", "name": "B", "reveals": ["x", "y", "x"], "hides": ["y", "z"]},
            {"id": "x", "name": "X", "hidden": true},
            {"id": "y", "name": "Y", "hidden": true},
            {"id": "z", "name": "Z"}]}]}"#,
    )
    .expect("loads");
    let r = d
        .act(&WindowId::from("W"), Some("b"), &click())
        .await
        .expect("click");
    assert_eq!(r, "clicked B; now visible: X; now hidden: Z");
    assert_eq!(d.is_hidden("W", "x"), Some(false));
    assert_eq!(d.is_hidden("W", "y"), Some(true));
    assert_eq!(d.is_hidden("W", "z"), Some(true));
}

/// Issue 44, item 4: `hover_reveals` shows a tooltip while the pointer rests on its control;
/// the next action hides it; a scenario without the field loads as before, and an id it names
/// must exist.
#[tokio::test]
async fn a_hover_shows_the_tooltip_until_the_next_action() {
    let d = SimDesktop::from_json_str(
        r#"{"apps": [{"name": "W", "controls": [
            {"id": "add", "role": "button", "name": "Add", "hover_reveals": ["tip"]},
            {"id": "tip", "role": "tooltip", "name": "Adds one", "hidden": true},
            {"id": "other", "role": "button", "name": "Other"}]}]}"#,
    )
    .expect("loads");
    let w = WindowId::from("W");
    let r = d
        .act(&w, Some("add"), &UiAction::Hover)
        .await
        .expect("hover");
    assert_eq!(r, "the pointer rests on Add; now visible: Adds one");
    assert!(ids(&d.observe(&w).await.expect("observe")).contains(&"tip"));
    // hovering again keeps it, anything else takes it away
    d.act(&w, Some("add"), &UiAction::Hover)
        .await
        .expect("again");
    assert_eq!(d.is_hidden("W", "tip"), Some(false));
    let r = d
        .act(&w, Some("other"), &UiAction::Hover)
        .await
        .expect("other");
    assert_eq!(r, "the pointer rests on Other");
    assert_eq!(d.is_hidden("W", "tip"), Some(true));
    d.act(&w, Some("add"), &UiAction::Hover)
        .await
        .expect("hover");
    d.act(&w, Some("other"), &click()).await.expect("click");
    assert_eq!(d.is_hidden("W", "tip"), Some(true));
    let fs = d.final_state().expect("state");
    assert_eq!(fs["actions"][0]["action"], "hover");
    let e = err_text(
        r#"{"apps": [{"name": "W", "controls": [{"id": "a", "hover_reveals": ["nope"]}]}]}"#,
    );
    assert!(
        e.contains("controls[0].hover_reveals[0]") && e.contains("nope"),
        "{e}"
    );
}

/// Issue 23, item 3: an app's further windows share its application, process and process id;
/// `opens` opens one, `closes` closes the window the control is in; the main windows keep
/// their places; a wrong `opens` is an error that says where.
#[test]
fn further_windows_open_and_close_by_clicks() {
    let d = SimDesktop::from_json_str(
        r#"{"apps": [{"name": "GIMP", "process": "gimp", "title": "Image",
            "controls": [{"id": "prefs_item", "role": "menu item", "name": "Preferences", "opens": "prefs"}],
            "windows": [{"id": "prefs", "title": "Preferences", "controls": [
                {"id": "ok", "role": "button", "name": "OK", "closes": true}]}]},
           {"name": "Writer", "controls": []}]}"#,
    )
    .expect("scenario");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let before = d.windows().await.expect("windows");
        assert_eq!(before.len(), 2);
        assert_eq!(
            before[1].pid,
            Some(render::FIRST_PID + 1),
            "Writer keeps its pid"
        );
        let out = d
            .act(&WindowId::from("GIMP"), Some("prefs_item"), &click())
            .await
            .expect("click");
        assert!(out.contains("opened window \"Preferences\""), "{out}");
        assert_eq!(d.last_action_changed(), Some(true));
        let after = d.windows().await.expect("windows");
        let prefs = after.iter().find(|w| w.id == "GIMP/prefs").expect("open");
        assert_eq!(
            (prefs.app_name.as_str(), prefs.process.as_str(), prefs.pid),
            ("GIMP", "gimp", before[0].pid)
        );
        assert_eq!(
            ids(&d
                .observe(&WindowId::from("GIMP/prefs"))
                .await
                .expect("observe")),
            ["ok"]
        );
        assert!(d.launchable().await.expect("launchable").is_empty());
        let out = d
            .act(&WindowId::from("GIMP/prefs"), Some("ok"), &click())
            .await
            .expect("ok");
        assert!(out.contains("closed window \"Preferences\""), "{out}");
        assert_eq!(d.windows().await.expect("windows").len(), 2);
    });
    assert!(!d.is_running("GIMP/prefs"));
    let state = d.final_state().expect("state");
    assert_eq!(state["apps"][2]["name"], "GIMP/prefs");
    assert_eq!(state["actions"][1]["app"], "GIMP/prefs");
    let e = err_text(
        r#"{"apps": [{"name": "A", "controls": [{"id": "x", "opens": "nope"}],
            "windows": [{"id": "w"}]}]}"#,
    );
    assert!(
        e.contains("apps[0].controls[0].opens: no window with id \"nope\""),
        "{e}"
    );
    let e = err_text(r#"{"apps": [{"name": "A", "windows": [{"id": "w"}, {"id": "w"}]}]}"#);
    assert!(
        e.contains("apps[0].windows[1].id: duplicate window id"),
        "{e}"
    );
}
