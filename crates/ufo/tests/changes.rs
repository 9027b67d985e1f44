//! The "what changed" line of the AppAgent's prompt (docs/configuration.md, "Configuration", template variable
//! `changes`), through the real binary on the simulated desktop: after each action the next
//! prompt says which controls changed, appeared or disappeared, or that nothing changed; the
//! scripted model's `expect` fails the run when the line is not in the prompt.

mod common;

use common::*;

/// A typed sign shows as a changed value, a click that opens a dialog as an appeared control,
/// a read as nothing changed; the first observation of the window has no line, and the step
/// records carry the line as the `observation_changes` artifact.
#[test]
fn the_prompt_says_what_changed_since_the_last_action() {
    let run = run_scenario("app_changes_line", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AC, AFIN, HC, HFIN]);
    let lines: Vec<String> = run
        .steps()
        .iter()
        .filter(|st| s(&st["role"]) == "app" && s(&st["state"]) == "CONTINUE")
        .map(|st| s(&st["artifacts"]["observation_changes"]))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}\n{}", run.ctx());
    assert_eq!(
        lines[0],
        "",
        "no line on the first observation\n{}",
        run.ctx()
    );
    assert!(lines[1].contains("1 changed"), "{lines:?}");
    assert!(lines[2].contains("1 appeared"), "{lines:?}");
    assert!(lines[3].contains("nothing changed"), "{lines:?}");
}
