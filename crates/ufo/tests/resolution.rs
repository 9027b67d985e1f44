//! Control resolution through the real binary on the simulated desktop (README "Control
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
