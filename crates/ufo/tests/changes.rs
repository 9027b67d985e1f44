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

/// Issue 44, item 4: `hover` (here by its alias `mouse_hover`) rests the pointer on a control;
/// the tooltip it shows is in the next prompt, as a control that appeared and in the control
/// list, and goes when the pointer rests elsewhere. The desktop records both hovers.
#[test]
fn a_hover_shows_its_tooltip_in_the_next_prompt() {
    let run = run_scenario("app_hover_tooltip", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AFIN, HC, HFIN]);
    let lines: Vec<String> = run
        .steps()
        .iter()
        .filter(|st| s(&st["role"]) == "app")
        .map(|st| s(&st["artifacts"]["observation_changes"]))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("1 appeared (tooltip \"Adds one\")")),
        "{lines:?}\n{}",
        run.ctx()
    );
    let fin = run.final_desktop();
    let hovers: Vec<&serde_json::Value> = fin["actions"]
        .as_array()
        .map(|a| a.iter().filter(|a| a["action"] == "hover").collect())
        .unwrap_or_default();
    assert_eq!(hovers.len(), 2, "{fin}");
    assert_eq!(hovers[0]["control"], "add");
}
