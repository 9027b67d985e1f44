//! Control resolution through the real binary on the simulated desktop (docs/resolution.md, "Control
//! resolution"): a name that several controls share is resolved by exact name, then by a role
//! that fits the function, then by focus; still ambiguous, the action fails and the model is
//! told the candidates with their labels. Never a silent first match.

mod common;

use common::*;

/// A menu and a terminal both named "Terminal": `type_keys` goes to the terminal; of two
/// "Name" fields the focused one gets `set_text`; `scroll` on "Page" scrolls the document, not
/// the tab strip; two "Save" buttons are ambiguous and nothing is clicked.
#[test]
fn a_shared_name_resolves_by_role_then_focus_and_otherwise_fails_listing_candidates() {
    let run = run_scenario("resolve_rules", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AC, AC, AFIN, HC, HFIN])
        .assert_actions(&[
            ("Terminal", "term", "type_keys", true),
            ("Terminal", "name2", "set_text", true),
            ("Terminal", "page", "scroll", true),
        ]);
    assert_eq!(s(&run.final_control("Terminal", "term")["value"]), "ls\n");
    assert_eq!(s(&run.final_control("Terminal", "name1")["value"]), "");
    assert_eq!(s(&run.final_control("Terminal", "name2")["value"]), "Ada");
    let steps = run.steps();
    let refused = steps
        .iter()
        .find(|st| s(&st["action"]["control_text"]).is_empty() && s(&st["result"]).contains("Save"))
        .unwrap_or_else(|| panic!("no refused Save step\n{}", run.ctx()));
    let result = s(&refused["result"]);
    assert!(result.contains("matches 2 controls"), "{result}");
    assert!(result.contains("[7] button \"Save\""), "{result}");
    assert!(result.contains("[8] button \"Save\""), "{result}");
}

/// The label picks the control when its name matches the text (any case), even where the
/// function would prefer another role; a label whose name does not match falls back to the
/// text, narrowed by role.
#[test]
fn the_label_wins_when_its_name_matches() {
    let run = run_scenario("resolve_label_wins", &[]);
    run.assert_code(0).assert_well_formed().assert_actions(&[
        ("Terminal", "term_menu", "click", true),
        ("Terminal", "term", "read_text", true),
        ("Terminal", "term", "type_keys", true),
    ]);
}

/// A ControlText copied from the control list (`menu "Slide"`, `[2] toggle button "Slide"`,
/// any case, curly quotes, the value after it) resolves to exactly that control; a click on a
/// name shared by a list item and a spin button means the item; a plain name that merely looks
/// like a copied line, and a name made of digits, are names.
#[test]
fn a_copied_line_of_the_control_list_resolves_to_exactly_that_control() {
    let run = run_scenario("resolve_copied_lines", &[]);
    run.assert_code(0).assert_well_formed().assert_actions(&[
        ("Impress", "slide_menu", "click", true),
        ("Impress", "slide_toggle", "click", true),
        ("Impress", "green_item", "click", true),
        ("Impress", "green_item", "click", true),
        ("Impress", "green_spin", "set_text", true),
        ("Impress", "quoted", "click", true),
        ("Impress", "one", "click", true),
    ]);
}

/// A click on a control listed as disabled fails with "is disabled" before anything reaches
/// the desktop, and a CONFIRM is not asked for it; an enabled control still works after.
#[test]
fn a_disabled_control_is_not_acted_on_and_not_confirmed() {
    let run = run_scenario("resolve_disabled", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Writer", "bold", "click", true)]);
    let steps = run.steps();
    let disabled: Vec<String> = steps
        .iter()
        .map(|st| s(&st["result"]))
        .filter(|r| r.contains("is disabled"))
        .collect();
    assert_eq!(disabled.len(), 2, "{disabled:?}\n{}", run.ctx());
    assert!(disabled[0].contains("\"Paste\""), "{disabled:?}");
    assert!(disabled[1].contains("\"Undo\""), "{disabled:?}");
}
