//! Windows through the real binary on the simulated desktop (docs/desktop.md, "Windows an action
//! opens", "Window resolution"): a window of the same application that the agent's action
//! opens becomes the AppAgent's window, and the window before returns when it closes; a
//! window name that fits several windows equally is an ambiguity the model sees, never a
//! silent first pick.

mod common;

use common::*;

/// Edit > Preferences opens a separate window of the same application: the next prompt
/// observes it, says so, and names its controls; its OK closes it and the image window
/// returns. The script's `expect` lines check each prompt.
#[test]
fn a_window_the_action_opens_is_followed_and_the_previous_returns_when_it_closes() {
    let run = run_scenario("window_follow", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AC, AC, AFIN, HC, HFIN])
        .assert_actions(&[
            ("GIMP", "edit_menu", "click", true),
            ("GIMP", "prefs_item", "click", true),
            ("GIMP/prefs", "undo_levels", "set_text", true),
            ("GIMP/prefs", "ok", "click", true),
        ]);
    assert_eq!(
        s(&run.final_control("GIMP/prefs", "undo_levels")["value"]),
        "10"
    );
    assert_eq!(run.final_app("GIMP/prefs")["running"], false);
    // the trajectory records both switches, on the steps that saw them
    let changes: Vec<serde_json::Value> = run
        .steps()
        .iter()
        .filter_map(|st| st.get("window_change").cloned())
        .collect();
    assert_eq!(changes.len(), 2, "{changes:?}\n{}", run.ctx());
    assert_eq!(changes[0][0]["change"], "opened", "{changes:?}");
    assert_eq!(changes[0][0]["window"]["id"], "GIMP/prefs", "{changes:?}");
    assert_eq!(changes[0][0]["previous"]["id"], "GIMP", "{changes:?}");
    assert_eq!(changes[1][0]["change"], "returned", "{changes:?}");
    assert_eq!(changes[1][0]["window"]["id"], "GIMP", "{changes:?}");
    assert_eq!(
        changes[1][0]["closed"][0]["id"], "GIMP/prefs",
        "{changes:?}"
    );
}

/// Three Firefox windows: an ASSIGN to "Firefox" picks none and the host's next prompt lists
/// the three (title, application, id); part of a title then picks one.
#[test]
fn an_ambiguous_window_name_lists_the_candidates_to_the_host() {
    let run = run_scenario("window_ambiguous", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HC, HA, AC, AFIN, HC, HFIN]);
    assert_eq!(
        s(&run.final_control("Firefox ESR/bookmarks", "search")["value"]),
        "rust"
    );
    let steps = run.steps();
    let first = s(&steps[0]["result"]);
    assert!(first.contains("fits 3 windows"), "{first}");
    assert!(steps[0]["action"].get("window").is_none(), "{}", steps[0]);
}
