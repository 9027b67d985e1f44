//! End-to-end tests of the real `ufo` binary against the contracts of docs/: the reference
//! Word→Excel example, and one scenario + script pair (under `tests/scenarios/`) for every row
//! of both state tables, the bad-model-output rules, the scripted model and the command line.
//!
//! Each test runs `ufo run --desktop sim:... --llm script:... --out <tempdir>`, checks the exit
//! code, the structure of `events.jsonl`, the exact `(role,state)` sequence of its step
//! records, and `desktop_final.json` where the desktop's state proves the behaviour.

mod common;

use common::*;

// ---------------------------------------------------------------------------------------------
// The seed's example
// ---------------------------------------------------------------------------------------------

/// docs/formats.md: "The reference example ... visits exactly these (role, state)
/// pairs". Run exactly as the issue's "Done when" command (no --config).
#[test]
fn word_excel_example_produces_the_seed_sequence() {
    let dir = repo_root().join("examples").join("word_excel");
    let run = run_dir(&dir, &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_round_end("FINISH", None)
        .assert_processor_statuses("host", &["ASSIGN", "ASSIGN", "FINISH"])
        .assert_processor_statuses("app", &["FINISH", "FINISH"]);
    let steps = run.steps();
    let app_agents: Vec<String> = steps
        .iter()
        .filter(|e| e["role"] == "app")
        .map(|e| s(&e["agent"]))
        .collect();
    assert_eq!(
        app_agents,
        [
            "AppAgent/Word",
            "AppAgent/Word",
            "AppAgent/Excel",
            "AppAgent/Excel"
        ],
        "{}",
        run.ctx()
    );
    // Readable progress on stderr names the agents (issue 2, item 12).
    for agent in ["HostAgent", "AppAgent/Word", "AppAgent/Excel"] {
        assert!(
            run.stderr.contains(agent),
            "stderr progress lacks {agent}\n{}",
            run.ctx()
        );
    }
    // The action that came with FINISH ran in that step (docs/responses.md "An action and its status").
    run.assert_actions(&[
        ("Word", "sales_table", "read_text", true),
        ("Excel", "cells", "type_keys", true),
    ]);
}

/// The issue's "Done when" command, verbatim, from the workspace root (relative paths).
#[test]
fn word_excel_done_when_command_verbatim() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("r");
    let output = ufo()
        .current_dir(repo_root())
        .args([
            "run",
            "--desktop",
            "sim:examples/word_excel/desktop.json",
            "--llm",
            "script:examples/word_excel/script.jsonl",
            "Extract the sales table from Word and create a bar chart in Excel",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("ufo runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(out.join("events.jsonl")).expect("events.jsonl");
    let seq: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
        .filter(|e| e["type"] == "step")
        .map(|e| (s(&e["role"]), s(&e["state"])))
        .collect();
    let want = [HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HFIN]
        .map(|(r, st)| (r.to_string(), st.to_string()));
    assert_eq!(seq, want);
}

// ---------------------------------------------------------------------------------------------
// AppAgent rows
// ---------------------------------------------------------------------------------------------

/// SCREENSHOT: after a click that reveals a dialog, the next prompt lists the revealed
/// control (the script `expect`s "Save As PDF"), and it can be acted on.
#[test]
fn app_screenshot_reannotates_a_revealed_dialog() {
    let run = run_scenario("screenshot_reveal", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ASHOT, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("app", &["SCREENSHOT", "CONTINUE", "FINISH"])
        .assert_actions(&[
            ("Writer", "export", "click", true),
            ("Writer", "dlg_save", "click", true),
        ]);
    // The dialog's button hides itself when clicked.
    assert_eq!(
        run.final_control("Writer", "dlg_save")["hidden"],
        true,
        "{}",
        run.ctx()
    );
}

/// App PENDING with an answer: the answer reaches the next prompt (`expect`) and is used.
#[test]
fn app_pending_answer_reaches_the_next_prompt() {
    let run = run_scenario("app_pending_answer", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, APEND, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("app", &["PENDING", "FINISH"])
        // The PENDING answer carried set_text "wrong-name.pdf": not run.
        .assert_actions(&[("Writer", "file_name", "set_text", true)]);
    assert_eq!(
        run.final_control("Writer", "file_name")["value"],
        "quarterly-summary-2026.pdf",
        "{}",
        run.ctx()
    );
}

/// App PENDING without an answer: "CONTINUE (an unanswered question is noted on the
/// blackboard)" — not FAIL; the next prompt carries the question (`expect`).
#[test]
fn app_pending_unanswered_goes_on() {
    let run = run_scenario("app_pending_unanswered", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, APEND, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[("Writer", "file_name", "set_text", true)]);
}

/// App CONFIRM approved (`--confirm yes`): the held action runs once, after approval, then
/// CONTINUE.
#[test]
fn app_confirm_approved_runs_the_held_action_once() {
    let run = run_scenario("app_confirm_approved", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("app", &["CONFIRM", "FINISH"])
        .assert_actions(&[("Writer", "delete_all", "click", true)]);
}

/// App CONFIRM rejected (`--confirm no`): the held action never reaches the desktop — this
/// proves the gate holds — and the subtask ends (FINISH, archived as rejected: the host's next
/// prompt says "rejected", `expect`).
#[test]
fn app_confirm_rejected_never_reaches_the_desktop() {
    let run = run_scenario("app_confirm_rejected", &["--confirm", "no"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AFIN, HC, HFIN])
        .assert_last_terminal();
    let actions = run.actions();
    assert!(
        actions.iter().all(|(_, c, _, _)| c != "delete_all"),
        "the held click on Delete All reached the desktop: {actions:?}\n{}",
        run.ctx()
    );
    run.assert_actions(&[]);
}

/// `--confirm ask` without a terminal means no (docs/formats.md "Command line").
#[test]
fn app_confirm_ask_without_terminal_rejects() {
    let run = run_scenario("app_confirm_rejected", &["--confirm", "ask"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AFIN, HC, HFIN])
        .assert_actions(&[]);
}

/// `safe_guard = false`: CONFIRM approves without asking, even with `--confirm no`.
#[test]
fn app_confirm_with_safe_guard_off_approves() {
    let run = run_scenario("app_confirm_safeguard_off", &["--confirm", "no"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, ACONF, AC, AFIN, HC, HFIN])
        .assert_actions(&[("Writer", "delete_all", "click", true)]);
}

/// App FAIL with `on_subtask_fail = "replan"`: Host.CONTINUE sees the failure (`expect`s the
/// failure text) and retries with the same app.
#[test]
fn app_fail_replan_lets_the_host_retry() {
    let run = run_scenario("app_fail_replan", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFAIL, HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_round_end("FINISH", None)
        .assert_processor_statuses("app", &["FAIL", "FINISH"])
        // FAIL carries no action; only the retry's click reached the desktop.
        .assert_actions(&[("Writer", "export", "click", true)]);
}

/// App FAIL with `on_subtask_fail = "finish"`: Host.FINISH, round ends FAIL, reason
/// `subtask_failed`, exit 1.
#[test]
fn app_fail_finish_ends_the_round_with_subtask_failed() {
    let run = run_scenario("app_fail_finish", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFAIL, HFIN])
        .assert_last_terminal()
        .assert_round_end("FAIL", Some("subtask_failed"))
        // The FAIL answer carried a click on Delete All: not run.
        .assert_actions(&[]);
    assert_eq!(run.record("session_end")["status"], "FAIL", "{}", run.ctx());
}

/// `max_subtask_failures = 2`: the second failed subtask goes straight to Host.FAIL.
#[test]
fn app_fail_twice_reaches_host_fail() {
    let run = run_scenario("app_fail_max_failures", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFAIL, HC, HA, AC, AFAIL, HFAIL])
        .assert_last_terminal()
        .assert_round_end("FAIL", None)
        .assert_actions(&[]);
}

/// Without a config file: `on_subtask_fail = "replan"` and `max_subtask_failures = 2` are the
/// defaults, so the first failure is replanned and the second is Host FAIL.
#[test]
fn app_fail_defaults_replan_then_host_fail() {
    let run = run_scenario("app_fail_defaults", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFAIL, HC, HA, AC, AFAIL, HFAIL])
        .assert_last_terminal()
        .assert_round_end("FAIL", None);
}

/// App ERROR from an injected fault (observing the window fails): the phase error is ERROR,
/// the round ends on the app's ERROR, exit 3, and the model was not called.
#[test]
fn app_error_from_an_observe_fault() {
    let run = run_scenario("app_error_observe_fault", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AERR])
        .assert_last_terminal()
        .assert_round_end("ERROR", None)
        .assert_processor_statuses("app", &["ERROR"])
        .assert_actions(&[]);
    assert_eq!(
        run.llm_calls("app"),
        [0],
        "no model call without an observation\n{}",
        run.ctx()
    );
}

/// App ERROR chosen by the model: the round ends on the app's ERROR (exit 3) and the action
/// that came with ERROR is not run.
#[test]
fn app_error_status_ends_the_round_without_acting() {
    let run = run_scenario("app_error_status", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AERR])
        .assert_last_terminal()
        .assert_round_end("ERROR", None)
        .assert_actions(&[]);
}

/// Every function of docs/responses.md's table, called by its UFO alias, reaches the desktop under
/// its canonical name; `read_text` puts the text into the step's result, which the next
/// prompt shows (`expect` "Hello world").
#[test]
fn every_function_alias_reaches_the_desktop_canonically() {
    let run = run_scenario("functions_aliases", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AC, AC, AC, AC, AC, AFIN, HC, HFIN])
        .assert_last_terminal();
    let got: Vec<(String, String, bool)> = run
        .actions()
        .into_iter()
        .map(|(_, c, f, ok)| (c, f, ok))
        .collect();
    let want: Vec<(String, String, bool)> = [
        ("bold", "click"),
        ("body", "set_text"),
        ("body", "type_keys"),
        ("body", "scroll"),
        ("font", "select"),
        ("body", "read_text"),
        ("body", "focus"),
        ("", "click_at"),
    ]
    .iter()
    .map(|(c, f)| (c.to_string(), f.to_string(), true))
    .collect();
    assert_eq!(got, want, "{}", run.ctx());
    let d = run.final_desktop();
    let click_at = &d["actions"][7];
    assert_eq!(click_at["args"]["x"], 10, "{d}");
    assert_eq!(click_at["args"]["y"], 20, "{d}");
    assert_eq!(d["actions"][3]["args"]["amount"], 2, "{d}");
    assert_eq!(d["actions"][3]["args"]["direction"], "down", "{d}");
    assert_eq!(
        run.final_control("Writer", "body")["value"],
        "Hello world",
        "set_text replaces, type_keys types at the end\n{}",
        run.ctx()
    );
}

/// A failed action (a click fault) is not an ERROR: its error text ("access denied") reaches
/// the next prompt (`expect`), and the desktop records the action with `ok: false`.
#[test]
fn failed_action_is_reported_to_the_model_not_an_error() {
    let run = run_scenario("action_fault", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AFAIL, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("app", &["CONTINUE", "FAIL"])
        .assert_actions(&[("Writer", "export", "click", false)]);
    // The faulted click revealed nothing.
    assert_eq!(
        run.final_control("Writer", "dlg_save")["hidden"],
        true,
        "{}",
        run.ctx()
    );
}

/// Control resolution: an unknown label, a label whose control does not match ControlText
/// (case-insensitive match), and an empty label all resolve by ControlText; a ControlText
/// that matches nothing fails the step (not ERROR) and nothing reaches the desktop for it.
#[test]
fn control_text_resolves_unknown_and_mismatched_labels() {
    let run = run_scenario("control_text_fallback", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC, AC, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("app", &["CONTINUE", "CONTINUE", "CONTINUE", "FINISH"]);
    let ok_actions: Vec<(String, String, String, bool)> =
        run.actions().into_iter().filter(|a| a.3).collect();
    assert_eq!(
        ok_actions,
        [
            ("Writer".into(), "export".into(), "click".into(), true),
            ("Writer".into(), "save".into(), "click".into(), true),
            ("Writer".into(), "print".into(), "click".into(), true),
        ],
        "{}",
        run.ctx()
    );
}

/// The AppAgent cache: a second ASSIGN to the same app reuses the agent, whose prompt still
/// carries the first subtask (`expect`).
#[test]
fn app_agent_is_reused_on_a_second_assign() {
    let run = run_scenario("app_cache_reuse", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[
            ("Writer", "title", "set_text", true),
            ("Writer", "file_name", "set_text", true),
        ]);
    let agents: Vec<String> = run
        .steps()
        .iter()
        .filter(|e| e["role"] == "app")
        .map(|e| s(&e["agent"]))
        .collect();
    assert_eq!(agents, ["AppAgent/Writer"; 4], "{}", run.ctx());
    assert_eq!(
        run.final_control("Writer", "title")["value"],
        "Quarterly Report"
    );
    assert_eq!(
        run.final_control("Writer", "file_name")["value"],
        "report-final"
    );
}

// ---------------------------------------------------------------------------------------------
// HostAgent rows
// ---------------------------------------------------------------------------------------------

/// Host FAIL from the model: exit 1, the round ends on host FAIL.
#[test]
fn host_fail_ends_the_session_with_exit_1() {
    let run = run_scenario("host_fail", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HFAIL])
        .assert_last_terminal()
        .assert_processor_statuses("host", &["FAIL"])
        .assert_round_end("FAIL", None)
        .assert_actions(&[]);
}

/// Host PENDING with an answer (`--answers`): the answer reaches the next prompt.
#[test]
fn host_pending_answer_reaches_the_next_prompt() {
    let run = run_scenario("host_pending_answer", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("host", &["PENDING", "FINISH"])
        // "with PENDING, FAIL or ERROR it is not run": the Bash of the PENDING answer.
        .assert_actions(&[]);
}

/// Host PENDING with no answer (no terminal, no --answers): FAIL, exit 1.
#[test]
fn host_pending_unanswered_fails() {
    let run = run_scenario("host_pending_unanswered", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HFAIL])
        .assert_last_terminal()
        .assert_round_end("FAIL", None);
}

/// Host PENDING with `ask_question = false`: no question, goes on (best effort).
#[test]
fn host_pending_without_asking_goes_on() {
    let run = run_scenario("host_pending_no_ask", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HC, HFIN])
        .assert_last_terminal();
}

/// `--answers` lines are used in order across agents; a PENDING with two questions takes two
/// lines, and each answer reaches the next prompt of the agent that asked (`expect`).
#[test]
fn answers_are_consumed_in_order_across_agents() {
    let run = run_scenario("pending_answers_in_order", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HC, HA, AC, APEND, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[("Writer", "title", "set_text", true)]);
    assert_eq!(
        run.final_control("Writer", "title")["value"],
        "Notes on the Engine"
    );
}

/// Host CONFIRM of a Bash launch, approved: the app is launched only then, the next host
/// prompt shows its window (`expect`), and the AppAgent acts on it.
#[test]
fn host_confirm_bash_approved_launches_then_assigns() {
    let run = run_scenario("host_confirm_bash_approved", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("host", &["CONFIRM", "ASSIGN", "FINISH"])
        .assert_actions(&[
            ("Calc", "", "launch", true),
            ("Calc", "cell_a1", "set_text", true),
        ]);
    assert_eq!(run.final_app("Calc")["running"], true, "{}", run.ctx());
    assert_eq!(run.final_control("Calc", "cell_a1")["value"], "42");
}

/// Host CONFIRM of a Bash launch, rejected: FAIL, exit 1, and nothing was launched.
#[test]
fn host_confirm_bash_rejected_launches_nothing() {
    let run = run_scenario("host_confirm_bash_rejected", &["--confirm", "no"]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HFAIL])
        .assert_last_terminal()
        .assert_round_end("FAIL", None)
        .assert_actions(&[]);
    assert_eq!(run.final_app("Calc")["running"], false, "{}", run.ctx());
}

/// An ASSIGN whose launch command the policy holds keeps its window once approved: the
/// window is chosen after the command ran and the subtask goes to Calc without the host
/// being asked again (2 host model calls: the answer and the closing FINISH; the script has
/// no line for a third, so a re-ask would end the run in ERROR).
#[test]
fn an_approved_held_launch_keeps_the_assign_of_its_answer() {
    let run = run_scenario("host_held_launch_assign", &["--confirm", "yes"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[
            ("", "", "shell", true),
            ("Calc", "", "launch", true),
            ("Calc", "cell_a1", "set_text", true),
        ]);
    assert_eq!(run.llm_calls("host"), [1, 1], "{}", run.ctx());
    let confirm = &run.steps()[1];
    assert_eq!(confirm["state"], "CONFIRM", "{}", run.ctx());
    assert_eq!(confirm["status"], "ASSIGN", "{}", run.ctx());
    assert!(
        s(&confirm["action"]["held"]["sensitive"]).contains("allow-list"),
        "{}",
        run.ctx()
    );
    assert_eq!(
        confirm["action"]["held"]["window"],
        "Untitled 1 - LibreOffice Calc",
        "{}",
        run.ctx()
    );
    assert_eq!(run.final_control("Calc", "cell_a1")["value"], "42");
}

/// The same answer, rejected: nothing runs, nothing is launched or assigned.
#[test]
fn a_rejected_held_launch_assigns_nothing() {
    let run = run_scenario("host_held_launch_assign", &["--confirm", "no"]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HFAIL])
        .assert_round_end("FAIL", Some("rejected"))
        .assert_actions(&[]);
    assert_eq!(run.final_app("Calc")["running"], false, "{}", run.ctx());
}

/// Host CONFIRM with `safe_guard = false`: approved without asking, even with `--confirm no`.
#[test]
fn host_confirm_with_safe_guard_off_approves() {
    let run = run_scenario("host_confirm_safeguard_off", &["--confirm", "no"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HCONF, HC, HA, AC, AFIN, HC, HFIN])
        .assert_actions(&[
            ("Calc", "", "launch", true),
            ("Calc", "cell_a1", "set_text", true),
        ]);
}

/// The host resolves its window by ControlText when the label is unknown or empty: by title
/// (exact), by application name (case-insensitive); each subtask goes to the right app. Writer
/// and Calc share one process (`soffice.bin`): the cache key `app_root/process_name` still
/// gives them two AppAgents.
#[test]
fn host_resolves_windows_by_title_and_app_name() {
    let run = run_scenario("host_window_resolution", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[
            HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HFIN,
        ])
        .assert_last_terminal()
        .assert_actions(&[
            ("Writer", "title", "set_text", true),
            ("Writer", "file_name", "set_text", true),
            ("Calc", "cell_a1", "set_text", true),
        ]);
    let agents: Vec<String> = run
        .steps()
        .iter()
        .filter(|e| e["role"] == "app" && e["state"] == "CONTINUE")
        .map(|e| s(&e["agent"]))
        .collect();
    assert_eq!(
        agents,
        ["AppAgent/Writer", "AppAgent/Writer", "AppAgent/Calc"],
        "{}",
        run.ctx()
    );
}

/// Issue 2, item 11: the screenshots of the steps are saved in `<out>/` as PNG files.
#[test]
fn screenshots_are_saved_as_png_in_the_output_folder() {
    let dir = repo_root().join("examples").join("word_excel");
    let run = run_dir(&dir, &[]);
    run.assert_code(0);
    let pngs: Vec<std::path::PathBuf> = std::fs::read_dir(&run.out)
        .expect("out folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    assert!(
        !pngs.is_empty(),
        "no PNG in {}\n{}",
        run.out.display(),
        run.ctx()
    );
    for p in pngs {
        let bytes = std::fs::read(&p).expect("read png");
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is not a PNG",
            p.display()
        );
    }
}

/// docs/responses.md "Finding the control": "if nothing matches, the step fails with a message the
/// model sees next step" — for the host, an ASSIGN to a window that does not exist is not
/// followed (no AppAgent), and the next host prompt names it (`expect` "Impress").
#[test]
fn host_assign_to_an_unknown_window_fails_the_step() {
    let run = run_scenario("host_unknown_window", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[]);
}

/// `--max-rounds 2` without a terminal: no follow-up request comes, so the session ends after
/// the first round, as it would with one round.
#[test]
fn max_rounds_without_a_follow_up_ends_after_one_round() {
    let dir = repo_root().join("examples").join("word_excel");
    let run = run_dir(&dir, &["--max-rounds", "2"]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HA, AC, AFIN, HC, HFIN]);
    run.record("round_end");
}

/// An app that is not running is launched by a host Bash equal to its `launch`, in the same
/// response that assigns it; the launch precedes the app's actions.
#[test]
fn app_not_running_is_launched_by_bash_then_assigned() {
    let run = run_scenario("launch_not_running", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[
            ("Calc", "", "launch", true),
            ("Calc", "cell_a1", "set_text", true),
        ]);
    assert_eq!(run.final_app("Calc")["running"], true, "{}", run.ctx());
    assert_eq!(run.final_control("Calc", "cell_a1")["value"], "42");
    let app_agents: Vec<String> = run
        .steps()
        .iter()
        .filter(|e| e["role"] == "app")
        .map(|e| s(&e["agent"]))
        .collect();
    assert_eq!(app_agents, ["AppAgent/Calc"; 2], "{}", run.ctx());
}

/// A Bash command that is no app's `launch` is recorded as a `shell` action with its command.
#[test]
fn host_shell_command_is_recorded_not_run() {
    let run = run_scenario("host_shell_command", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HC, HFIN])
        .assert_last_terminal();
    let d = run.final_desktop();
    let actions = d["actions"].as_array().expect("actions array");
    assert_eq!(actions.len(), 1, "{d}\n{}", run.ctx());
    assert_eq!(actions[0]["action"], "shell", "{d}");
    assert_eq!(actions[0]["args"]["command"], "echo report-ready", "{d}");
}

// ---------------------------------------------------------------------------------------------
// Steps and limits
// ---------------------------------------------------------------------------------------------

/// `--max-steps 3` (overriding max_steps = 50 in the config): three processor steps, then the
/// round ends FAIL with reason `max_steps`, exit 1; ASSIGN does not count.
#[test]
fn max_steps_flag_stops_the_round() {
    let run = run_scenario("max_steps_flag", &["--max-steps", "3"]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AC])
        .assert_round_end("FAIL", Some("max_steps"));
    assert_eq!(run.record("session_end")["status"], "FAIL");
    let typed = run.actions().iter().filter(|a| a.2 == "type_keys").count();
    assert_eq!(typed, 2, "two app steps acted\n{}", run.ctx());
}

/// Only processor steps count: with `max_steps = 4`, host PENDING, ASSIGN and app CONFIRM
/// are free, so the round stops after the fourth processor step (app CONTINUE).
#[test]
fn max_steps_counts_only_processor_steps() {
    let run = run_scenario("max_steps_not_counting", &["--confirm", "yes"]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HC, HA, AC, ACONF, AC])
        .assert_round_end("FAIL", Some("max_steps"))
        .assert_actions(&[
            ("Writer", "delete_all", "click", true),
            ("Writer", "title", "type_keys", true),
        ]);
}

/// When `max_steps` ends the round on an answer that says CONFIRM, the held action is never
/// approved nor run.
#[test]
fn max_steps_on_a_confirm_answer_leaves_the_action_held() {
    let run = run_scenario(
        "max_steps_not_counting",
        &["--confirm", "yes", "--max-steps", "3"],
    );
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HPEND, HC, HA, AC])
        .assert_round_end("FAIL", Some("max_steps"))
        .assert_actions(&[]);
}

/// `max_steps` from the config file.
#[test]
fn max_steps_from_config_stops_the_round() {
    let run = run_scenario("max_steps_config", &[]);
    run.assert_code(1)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC])
        .assert_round_end("FAIL", Some("max_steps"));
}

/// docs/formats.md "Command line": "`--config <FILE>` ufo.toml; env UFO_* and flags override it".
/// `UFO_MAX_STEPS=2` overrides `max_steps = 50` from the config.
#[test]
fn max_steps_from_env_overrides_the_config() {
    let dir = scenario_dir("max_steps_flag");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
    let output = ufo()
        .env("UFO_MAX_STEPS", "2")
        .arg("run")
        .args(sim_args("max_steps_flag"))
        .arg("--config")
        .arg(dir.join("ufo.toml"))
        .arg("--out")
        .arg(&out)
        .arg(request.trim())
        .output()
        .expect("ufo runs");
    let code = output.status.code().unwrap_or(-1);
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let seq: Vec<(String, String)> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "step")
        .map(|e| (s(&e["role"]), s(&e["state"])))
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(code, 1, "exit code\n{stderr}");
    assert_eq!(
        seq,
        [HC, HA, AC].map(|(r, st)| (r.to_string(), st.to_string())),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad model output
// ---------------------------------------------------------------------------------------------

/// Code fences, prose around the JSON, trailing commas and snake_case names are repaired
/// without re-asking (one model call per step).
#[test]
fn malformed_json_is_repaired_without_reasking() {
    let run = run_scenario("malformed_repaired", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[("Writer", "title", "set_text", true)]);
    assert_eq!(run.llm_calls("host"), [1, 1], "{}", run.ctx());
    assert_eq!(run.llm_calls("app"), [1], "{}", run.ctx());
    assert_eq!(
        run.final_control("Writer", "title")["value"],
        "Quarterly Report"
    );
}

/// Not JSON, an unknown function, a missing required field and an unknown Status are each
/// sent back to the model (the re-ask prompt carries the error) and the run then succeeds.
#[test]
fn invalid_json_is_reasked_then_succeeds() {
    let run = run_scenario("invalid_json_reask", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AFIN, HC, HFIN])
        .assert_last_terminal()
        .assert_actions(&[("Writer", "title", "set_text", true)]);
    assert_eq!(run.llm_calls("host"), [2, 2], "{}", run.ctx());
    assert_eq!(run.llm_calls("app"), [3], "{}", run.ctx());
}

/// Still invalid after `json_parsing_retry = 2` re-asks (3 calls): ERROR, exit 3, and no
/// fourth call.
#[test]
fn invalid_json_until_the_retry_limit_is_an_error() {
    let run = run_scenario("invalid_json_retry_limit", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HERR])
        .assert_last_terminal()
        .assert_processor_statuses("host", &["ERROR"])
        .assert_round_end("ERROR", None);
    assert_eq!(run.llm_calls("host"), [3], "{}", run.ctx());
}

/// Without a config file the default `json_parsing_retry` is 3: four calls, then ERROR.
#[test]
fn invalid_json_default_retry_limit_is_three_reasks() {
    let run = run_scenario("invalid_json_default_limit", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HERR])
        .assert_last_terminal();
    assert_eq!(run.llm_calls("host"), [4], "{}", run.ctx());
}

/// Host `Status: "SCREENSHOT"` and `Status: "ERROR"` are transitions the matrix forbids:
/// re-asked, not followed.
#[test]
fn forbidden_host_transitions_are_reasked() {
    let run = run_scenario("forbidden_transition", &[]);
    run.assert_code(0)
        .assert_well_formed()
        .assert_sequence(&[HC, HFIN])
        .assert_last_terminal()
        .assert_processor_statuses("host", &["FINISH"]);
    assert_eq!(run.llm_calls("host"), [3], "{}", run.ctx());
}

// ---------------------------------------------------------------------------------------------
// Scripted model
// ---------------------------------------------------------------------------------------------

/// A script that runs out of lines is an ERROR (exit 3) of the agent that asked.
#[test]
fn script_out_of_lines_is_an_error() {
    let run = run_scenario("script_exhausted", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AERR])
        .assert_last_terminal()
        .assert_round_end("ERROR", None);
}

fn names_line(stderr: &str, n: usize) -> bool {
    let low = stderr.to_lowercase();
    low.contains(&format!("line {n}")) || low.contains(&format!("script.jsonl:{n}"))
}

/// A script line whose `agent` does not match the caller: ERROR, exit 3, line named on stderr.
#[test]
fn script_agent_mismatch_is_an_error_naming_the_line() {
    let run = run_scenario("script_agent_mismatch", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HA, AC, AERR])
        .assert_last_terminal();
    assert!(
        names_line(&run.stderr, 2),
        "stderr must name script line 2\n{}",
        run.ctx()
    );
}

/// A script line whose `expect` is not in the prompt: ERROR, exit 3, line named on stderr.
#[test]
fn script_expect_mismatch_is_an_error_naming_the_line() {
    let run = run_scenario("script_expect_mismatch", &[]);
    run.assert_code(3)
        .assert_well_formed()
        .assert_sequence(&[HC, HERR])
        .assert_last_terminal();
    assert!(
        names_line(&run.stderr, 1),
        "stderr must name script line 1\n{}",
        run.ctx()
    );
}

// ---------------------------------------------------------------------------------------------
// Trajectory durability
// ---------------------------------------------------------------------------------------------

/// docs/formats.md "Trajectory": "flushed as written; the file stays valid JSONL if the process is
/// killed". Kill -9 the binary in the middle of a slow run (the simulated app takes 300 ms per
/// observation): the records written so far are all there, each a complete JSON line.
#[test]
fn killed_run_leaves_valid_jsonl() {
    use std::time::{Duration, Instant};
    let dir = scenario_dir("slow_app_killed");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .current_dir(tmp.path())
        .arg("run")
        .args(sim_args("slow_app_killed"))
        .arg("--config")
        .arg(dir.join("ufo.toml"))
        .arg("--out")
        .arg(&out)
        .arg(request.trim())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ufo starts");
    let events = out.join("events.jsonl");
    let count_steps = || {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .matches("\"type\":\"step\"")
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while count_steps() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let finished_early = child.try_wait().expect("try_wait").is_some();
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(
        !finished_early,
        "the slow run ended before it could be killed"
    );
    let text = std::fs::read_to_string(&events).expect("events.jsonl exists after kill");
    assert!(
        text.ends_with('\n'),
        "the last record is a complete line: {text:?}"
    );
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(records[0]["type"], "session_start");
    let steps = records.iter().filter(|r| r["type"] == "step").count();
    assert!(
        steps >= 4,
        "the steps written before the kill are kept: {text}"
    );
    assert!(
        records.iter().all(|r| r["type"] != "session_end"),
        "killed, so no session_end: {text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

fn sim_args(scenario: &str) -> Vec<String> {
    let dir = scenario_dir(scenario);
    vec![
        "--desktop".into(),
        format!("sim:{}", dir.join("desktop.json").display()),
        "--llm".into(),
        format!("script:{}", dir.join("script.jsonl").display()),
    ]
}

fn assert_usage_error(run: &Run, mentions: &[&str]) {
    run.assert_code(2);
    assert!(
        !run.stderr.trim().is_empty(),
        "a usage error says what to fix\n{}",
        run.ctx()
    );
    let low = run.stderr.to_lowercase();
    assert!(
        mentions.iter().any(|m| low.contains(&m.to_lowercase())),
        "stderr should mention one of {mentions:?}\n{}",
        run.ctx()
    );
}

#[test]
fn unknown_option_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args.push("--frobnicate".into());
    let run = run_args("unknown_option", "do something", &args);
    assert_usage_error(&run, &["frobnicate"]);
}

#[test]
fn missing_scenario_file_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args[1] = format!(
        "sim:{}",
        scenario_dir("host_fail")
            .join("no-such-desktop.json")
            .display()
    );
    let run = run_args("missing_scenario", "do something", &args);
    assert_usage_error(&run, &["no-such-desktop.json"]);
}

#[test]
fn malformed_scenario_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("broken.json");
    std::fs::write(&bad, "{\"apps\": [ {\"name\": ").expect("write");
    let mut args = sim_args("host_fail");
    args[1] = format!("sim:{}", bad.display());
    let run = run_args("malformed_scenario", "do something", &args);
    assert_usage_error(&run, &["broken.json", "desktop", "scenario"]);
}

#[test]
fn bad_llm_spec_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args[3] = "banana:split".into();
    let run = run_args("bad_llm_spec", "do something", &args);
    assert_usage_error(&run, &["banana", "--llm"]);
}

#[test]
fn missing_script_file_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args[3] = format!(
        "script:{}",
        scenario_dir("host_fail")
            .join("no-such-script.jsonl")
            .display()
    );
    let run = run_args("missing_script", "do something", &args);
    assert_usage_error(&run, &["no-such-script.jsonl"]);
}

#[test]
fn bad_confirm_policy_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args.extend(["--confirm".into(), "maybe".into()]);
    let run = run_args("bad_confirm", "do something", &args);
    assert_usage_error(&run, &["maybe", "confirm"]);
}

#[test]
fn bad_config_value_is_a_usage_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = tmp.path().join("ufo.toml");
    std::fs::write(&cfg, "on_subtask_fail = \"explode\"\n").expect("write");
    let mut args = sim_args("host_fail");
    args.extend(["--config".into(), cfg.display().to_string()]);
    let run = run_args("bad_config", "do something", &args);
    assert_usage_error(&run, &["on_subtask_fail", "explode"]);
}

#[test]
fn missing_config_file_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args.extend([
        "--config".into(),
        scenario_dir("host_fail")
            .join("no-such-ufo.toml")
            .display()
            .to_string(),
    ]);
    let run = run_args("missing_config", "do something", &args);
    assert_usage_error(&run, &["no-such-ufo.toml"]);
}

#[test]
fn missing_answers_file_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args.extend([
        "--answers".into(),
        scenario_dir("host_fail")
            .join("no-such-answers.txt")
            .display()
            .to_string(),
    ]);
    let run = run_args("missing_answers", "do something", &args);
    assert_usage_error(&run, &["no-such-answers.txt"]);
}

#[test]
fn non_numeric_max_steps_is_a_usage_error() {
    let mut args = sim_args("host_fail");
    args.extend(["--max-steps".into(), "many".into()]);
    let run = run_args("bad_max_steps", "do something", &args);
    assert_usage_error(&run, &["many", "max-steps"]);
}

#[test]
fn missing_request_is_a_usage_error() {
    let dir = scenario_dir("host_fail");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = ufo()
        .arg("run")
        .args(sim_args("host_fail"))
        .arg("--config")
        .arg(dir.join("ufo.toml"))
        .arg("--out")
        .arg(tmp.path().join("out"))
        .output()
        .expect("ufo runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!out.stderr.is_empty(), "a message says what is missing");
}

/// `ufo run --help` documents the options of docs/formats.md "Command line".
#[test]
fn run_help_lists_the_documented_options() {
    let out = ufo().args(["run", "--help"]).output().expect("ufo runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for opt in [
        "--desktop",
        "--llm",
        "--out",
        "--max-steps",
        "--max-rounds",
        "--confirm",
        "--answers",
        "--config",
    ] {
        assert!(text.contains(opt), "`ufo run --help` lacks {opt}:\n{text}");
    }
}
