//! Speculative multi-action through the real binary (`multi_action = true`).

mod common;

use common::*;

/// A list of actions that runs whole in one step.
#[test]
fn a_list_of_actions_runs_whole() {
    let run = run_scenario("multi_action_whole", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[
            ("Forms", "first", "set_text", true),
            ("Forms", "last", "set_text", true),
        ]);
    let app_step = &run.steps()[2];
    assert_eq!(app_step["action"]["completed"], 2, "{}", run.ctx());
    assert_eq!(
        app_step["llm"]["calls"], 1,
        "one model call for two actions"
    );
}

/// The first action hides the second's control: the list stops there, the rest does not run,
/// and the model is told how far it got (its FINISH becomes CONTINUE so it can hear it).
#[test]
fn a_list_is_cut_short_when_a_control_disappears() {
    let run = run_scenario("multi_action_cut", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Forms", "collapse", "click", true)]);
    assert_eq!(s(&run.final_control("Forms", "first")["value"]), "");
    assert_eq!(run.steps()[2]["action"]["completed"], 1, "{}", run.ctx());
}

/// With multi-action off (the default), a list is an invalid answer: re-asked with the reason.
#[test]
fn a_list_is_refused_when_multi_action_is_off() {
    let run = run_scenario("multi_action_off", &[]);
    run.assert_code(0)
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Forms", "first", "set_text", true)]);
    assert_eq!(run.steps()[2]["llm"]["calls"], 2, "{}", run.ctx());
}

/// Verified speculation: an action that changed nothing (the first name already read "Ada")
/// stops the list there with the reason; the model hears it and carries on.
#[test]
fn a_list_stops_at_an_action_that_changed_nothing() {
    let run = run_scenario("multi_action_no_effect", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AFIN, HC, HFIN]);
    assert_eq!(run.steps()[2]["action"]["completed"], 1, "{}", run.ctx());
    assert_eq!(s(&run.final_control("Forms", "last")["value"]), "Lovelace");
}

/// Verified speculation on a loaded machine: the desktop's wait saw no change in its time
/// (the application redrew later, `redraws_late`), but the first action did change the
/// window's controls: the list goes on (it stopped after the first action before).
#[test]
fn a_list_goes_on_when_the_controls_changed_though_the_screen_seemed_still() {
    let run = run_scenario("multi_action_late_redraw", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[
            ("Forms", "first", "set_text", true),
            ("Forms", "last", "set_text", true),
        ]);
    assert_eq!(run.steps()[2]["action"]["completed"], 2, "{}", run.ctx());
}
