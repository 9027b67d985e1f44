//! The sensitive-action gate, through the real binary: actions the model did not ask to
//! confirm still stop at CONFIRM when the policy says so.

mod common;

use common::*;

/// Text on the screen tells the model to run `rm -rf ~`; the model obeys with Status CONTINUE.
/// The shell allow-list holds it at CONFIRM; rejected, nothing reaches the desktop.
#[test]
fn an_injected_shell_command_cannot_run_without_confirmation() {
    let run = run_scenario("injection_shell", &["--confirm", "no"]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HFAIL])
        .assert_round_end("FAIL", Some("rejected"))
        .assert_actions(&[]);
    let step = &run.steps()[0];
    assert_eq!(step["action"]["held"], true, "{}", run.ctx());
    assert!(
        s(&step["action"]["sensitive"]).contains("allow-list"),
        "{}",
        run.ctx()
    );
}

/// The same command, approved by the person, runs (and the model sees that it ran).
#[test]
fn an_approved_sensitive_shell_command_runs_once() {
    let run = run_scenario("injection_shell", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_sequence(&[HC, HCONF, HC, HFIN])
        .assert_actions(&[("", "", "shell", true)]);
}

/// A click on "Delete All" that the model sends with Status FINISH is held by the policy.
#[test]
fn a_sensitive_click_is_held_even_when_the_model_does_not_ask() {
    let run = run_scenario("sensitive_click", &["--confirm", "no"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AFIN, HC, HFIN])
        .assert_actions(&[]);
    assert_eq!(
        s(&run.final_control("Writer", "title")["value"]),
        "Q3 report"
    );
}

/// With `[sensitive] enabled = false`, only the model's own CONFIRM holds actions.
#[test]
fn the_policy_can_be_turned_off() {
    let dir = scenario_dir("sensitive_click");
    let cfg = dir.join("policy_off.toml").display().to_string();
    let run = run_scenario("sensitive_click", &["--confirm", "no", "--config", &cfg]);
    run.assert_code(0)
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Writer", "delete_all", "click", true)]);
}
