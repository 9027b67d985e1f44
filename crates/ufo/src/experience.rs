//! Experience: after a session, its finished subtasks (request, subtask, application, plan,
//! the actions as named steps, the result) saved in the knowledge store (kind `experience`,
//! the id as location), under the `save_experience` policy, so that later sessions find them
//! for similar subtasks and requests.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;

use serde_json::Value;
use ufo_core::KnowledgeKind;
use ufo_knowledge::experience::{Example, NamedStep, MAX_STEPS};
use ufo_knowledge::store::Store;

use ufo_core::events::LlmStats;
use ufo_core::experience::{
    kept_summary, summary_event, summary_request, MAX_SUMMARIES, SUMMARY_TIMEOUT,
};
use ufo_core::Recorder;

use crate::config::knowledge::{KnowledgeSettings, SavePolicy};
use crate::models::{Answers, PriceEntry};

/// Most bytes of `events.jsonl` read to find the subtasks.
const MAX_EVENTS_BYTES: u64 = 64 << 20;
/// Most bytes of one event line considered.
const MAX_LINE_BYTES: usize = 1 << 20;
/// Most subtasks saved from one session.
const MAX_SUBTASKS: usize = 50;

/// How a session ended, as far as saving goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    /// The session ended FINISH.
    pub finished: bool,
    /// In `ufo batch`: whether the task's evaluator passed (`None` outside a batch).
    pub evaluator_passed: Option<bool>,
}

/// What the policy says for a session that ended so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Save.
    Save,
    /// Do not save.
    Skip,
    /// Ask the person.
    Ask,
}

/// The policy's decision for `ending`.
pub fn decide(policy: SavePolicy, ending: Ending) -> Decision {
    match policy {
        SavePolicy::Always => Decision::Save,
        SavePolicy::Never => Decision::Skip,
        SavePolicy::Ask => Decision::Ask,
        SavePolicy::Auto if ending.finished && ending.evaluator_passed != Some(false) => {
            Decision::Save
        }
        SavePolicy::Auto => Decision::Skip,
    }
}

/// After a session recorded in `out` (its trajectory still written through `recorder`): save
/// its finished subtasks as `settings` say, then, when a summary model is configured, ask it
/// for each saved subtask's summary (one call each, at most
/// [`ufo_core::experience::MAX_SUMMARIES`], each recorded) and save the summaries with them.
/// Returns lines for the person (or the batch log): what was saved, and why something could
/// not be; none when the policy said no.
pub async fn after_session(
    settings: Option<&KnowledgeSettings>,
    prices: &HashMap<String, PriceEntry>,
    answers: &Answers,
    out: &Path,
    ending: Ending,
    recorder: &mut dyn Recorder,
) -> Vec<String> {
    let Some(settings) = settings else {
        return Vec::new();
    };
    let decision = decide(settings.save_experience, ending);
    if decision == Decision::Skip {
        return Vec::new();
    }
    let mut examples = match examples_of(out) {
        Ok(e) => e,
        Err(e) => return vec![format!("experience not saved: {e}")],
    };
    if examples.is_empty() {
        return Vec::new();
    }
    if decision == Decision::Ask {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return vec![
                "experience not saved: save_experience = ask needs a terminal to ask on; \
                 set it to always or auto to save without asking"
                    .into(),
            ];
        }
        if !ask_person(examples.len()) {
            return Vec::new();
        }
    }
    // saved first: a summary call that hangs or a process that is killed loses no experience
    let n = match save(&settings.store, &examples) {
        Ok(n) => n,
        Err(e) => return vec![format!("experience not saved: {e}")],
    };
    let mut lines = vec![format!(
        "saved {n} finished subtask(s) as experience in {}",
        settings.store.display()
    )];
    if let Some(spec) = &settings.summary_model {
        let summarised =
            summarise(spec, prices, answers, &mut examples, recorder, &mut lines).await;
        if summarised > 0 {
            if let Err(e) = save(&settings.store, &examples) {
                lines.push(format!(
                    "warning: the experience summaries were not saved: {e}; the experience is saved without them"
                ));
            }
        }
    }
    lines
}

/// Save `examples` (each at its id; saving again replaces); how many.
fn save(store: &Path, examples: &[(String, Example)]) -> Result<usize, String> {
    let docs: Vec<_> = examples
        .iter()
        .map(|(id, e)| e.to_document(KnowledgeKind::Experience, id, "session"))
        .collect();
    Store::open(store)
        .and_then(|mut s| s.save(&docs))
        .map_err(|e| e.to_string())
}

/// Ask the summary model `spec` for the summary of each example (the first
/// [`MAX_SUMMARIES`]), one bounded call each, recorded as an `experience_summary` event; a
/// failure leaves that example without a summary and a warning in `lines`. How many got one.
async fn summarise(
    spec: &str,
    prices: &HashMap<String, PriceEntry>,
    answers: &Answers,
    examples: &mut [(String, Example)],
    recorder: &mut dyn Recorder,
    lines: &mut Vec<String>,
) -> usize {
    let model = match crate::models::summary_model(spec, prices, answers) {
        Ok(m) => m,
        Err(e) => {
            lines.push(format!(
                "warning: no experience summaries: {e:#}; the experience is saved without them"
            ));
            return 0;
        }
    };
    let mut done = 0;
    for (_, example) in examples.iter_mut().take(MAX_SUMMARIES) {
        let subtask = example.subtask.clone().unwrap_or_default();
        let request = summary_request(&example.text());
        let mut usage = LlmStats::default();
        let answer = match tokio::time::timeout(SUMMARY_TIMEOUT, model.complete(&request)).await {
            Ok(Ok(r)) => {
                usage = LlmStats {
                    calls: 1,
                    prompt_tokens: r.usage.prompt_tokens,
                    completion_tokens: r.usage.completion_tokens,
                    cost: model.cost(&r.usage),
                };
                kept_summary(&r.text).map_err(|e| e.to_string())
            }
            Ok(Err(e)) => {
                usage.calls = 1;
                Err(e.to_string())
            }
            Err(_) => {
                usage.calls = 1;
                Err(format!(
                    "the summary model did not answer within {} s",
                    SUMMARY_TIMEOUT.as_secs()
                ))
            }
        };
        let event = summary_event(&subtask, &model.describe(), usage, &answer);
        if let Err(e) = recorder.event(&event) {
            lines.push(format!("warning: the summary call was not recorded: {e}"));
        }
        match answer {
            Ok(summary) => {
                example.summary = Some(summary);
                done += 1;
            }
            Err(why) => lines.push(format!(
                "warning: no summary for the experience {subtask:?}: {why}; it is saved without one"
            )),
        }
    }
    if examples.len() > MAX_SUMMARIES {
        lines.push(format!(
            "{} finished subtask(s) saved without a summary (at most {MAX_SUMMARIES} are summarised per session)",
            examples.len() - MAX_SUMMARIES
        ));
    }
    done
}

/// Ask on the terminal whether to save `n` subtasks; anything but yes is no.
fn ask_person(n: usize) -> bool {
    eprint!(
        "Save the {n} finished subtask(s) of this session as experience for later sessions? [y/N] "
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().take(256).read_line(&mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The finished subtasks of the trajectory in `out`, each with its id (the folder and the
/// archiving step's number).
pub fn examples_of(out: &Path) -> Result<Vec<(String, Example)>, String> {
    let events = out.join("events.jsonl");
    let file = std::fs::File::open(&events)
        .map_err(|e| format!("cannot read {}: {e}", events.display()))?;
    let mut lines = Vec::new();
    let mut reader = BufReader::new(file.take(MAX_EVENTS_BYTES));
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) if buf.len() <= MAX_LINE_BYTES => {
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    lines.push(v);
                }
            }
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read {}: {e}", events.display())),
        }
    }
    let plan = std::fs::read(out.join(ufo_core::session::CHECKPOINT_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|c| serde_json::from_value::<Vec<String>>(c["plan"].clone()).ok())
        .unwrap_or_default();
    let base = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    Ok(from_events(&lines, &plan)
        .into_iter()
        .map(|(seq, e)| (format!("{}#{seq}", base.display()), e))
        .collect())
}

/// The finished subtasks of a session's events, each with the number of the step that
/// archived it: the steps of its AppAgent since that agent's previous subtask, named by
/// their controls; the application is the process the host assigned the agent to.
pub fn from_events(events: &[Value], plan: &[String]) -> Vec<(u64, Example)> {
    let mut request = String::new();
    let mut process_of: Vec<(String, String)> = Vec::new();
    let mut steps_of: Vec<(String, Vec<NamedStep>)> = Vec::new();
    let mut out = Vec::new();
    for e in events {
        match e["type"].as_str() {
            Some("session_start") if request.is_empty() => {
                request = text(e, "request").to_string();
            }
            Some("step") => {}
            _ => continue,
        }
        let agent = text(e, "agent").to_string();
        let action = &e["action"];
        if let (Some(assign), Some(key)) = (action["assign"].as_str(), action["cache_key"].as_str())
        {
            let process = key.rsplit('/').next().unwrap_or(key).to_string();
            process_of.retain(|(a, _)| a != assign);
            process_of.push((assign.to_string(), process));
            continue;
        }
        if text(e, "role") != "app" {
            continue;
        }
        if let Some(archive) = action.get("archive") {
            let steps = steps_of
                .iter_mut()
                .find(|(a, _)| *a == agent)
                .map(|(_, s)| std::mem::take(s))
                .unwrap_or_default();
            if text(archive, "status") != "FINISH" || out.len() >= MAX_SUBTASKS {
                continue;
            }
            let application = application_of(&process_of, &agent);
            let example = finished_subtask(archive, &request, application, plan, steps);
            out.push((e["seq"].as_u64().unwrap_or(0), example));
            continue;
        }
        add_executed_steps(&mut steps_of, &agent, action);
    }
    out
}

/// The application `agent` was assigned to: the process of its assignment, or else its name
/// without the `AppAgent/` prefix.
fn application_of(process_of: &[(String, String)], agent: &str) -> String {
    process_of
        .iter()
        .find(|(a, _)| *a == agent)
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| agent.trim_start_matches("AppAgent/").to_string())
}

/// The example of a subtask finished by an `archive` action, with the `steps` that did it.
fn finished_subtask(
    archive: &Value,
    request: &str,
    application: String,
    plan: &[String],
    steps: Vec<NamedStep>,
) -> Example {
    let result = text(archive, "result");
    Example {
        request: request.to_string(),
        subtask: Some(text(archive, "subtask").to_string()),
        application,
        plan: plan.to_vec(),
        steps,
        result: (!result.is_empty()).then(|| result.to_string()),
        summary: None,
    }
}

/// Adds the executed actions of one step of `agent` (a single action or a list) to its steps
/// so far, at most [`MAX_STEPS`].
fn add_executed_steps(steps_of: &mut Vec<(String, Vec<NamedStep>)>, agent: &str, action: &Value) {
    let actions: Vec<&Value> = match action.get("actions").and_then(Value::as_array) {
        Some(list) => list.iter().collect(),
        None => vec![action],
    };
    for a in actions {
        let Some(function) = a["function"].as_str().filter(|f| !f.is_empty()) else {
            continue;
        };
        if a["executed"] == Value::Bool(false) {
            continue;
        }
        let steps = match steps_of.iter_mut().find(|(x, _)| *x == agent) {
            Some((_, s)) => s,
            None => {
                steps_of.push((agent.to_string(), Vec::new()));
                &mut steps_of.last_mut().expect("just pushed").1
            }
        };
        if steps.len() < MAX_STEPS {
            steps.push(NamedStep {
                function: function.to_string(),
                control_name: text(a, "control_text").to_string(),
                control_role: text(a, "control_role").to_string(),
                args: a["args"].clone(),
            });
        }
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(archive_status: &str) -> Vec<Value> {
        vec![
            json!({"type": "session_start", "request": "Multiply 12 by 7"}),
            json!({"type": "step", "role": "host", "agent": "HostAgent", "seq": 1,
                   "action": {"assign": "AppAgent/Calculator", "cache_key": "Calculator/gnome-calculator"}}),
            json!({"type": "step", "role": "app", "agent": "AppAgent/Calculator", "seq": 2,
                   "action": {"function": "type_keys", "args": {"keys": "12×7="}, "control_text": "Display",
                              "control_role": "edit", "executed": true}}),
            json!({"type": "step", "role": "app", "agent": "AppAgent/Calculator", "seq": 3,
                   "action": {"function": "click", "args": {}, "control_text": "Delete", "executed": false, "held": true}}),
            json!({"type": "step", "role": "app", "agent": "AppAgent/Calculator", "seq": 4,
                   "action": {"archive": {"status": archive_status, "subtask": "Multiply", "result": "84"}}}),
        ]
    }

    #[test]
    fn a_finished_subtask_becomes_an_example_of_its_executed_steps() {
        let found = from_events(&events("FINISH"), &["multiply".into()]);
        assert_eq!(found.len(), 1);
        let (seq, e) = &found[0];
        assert_eq!(*seq, 4);
        assert_eq!(e.request, "Multiply 12 by 7");
        assert_eq!(e.subtask.as_deref(), Some("Multiply"));
        assert_eq!(e.application, "gnome-calculator");
        assert_eq!(e.plan, vec!["multiply".to_string()]);
        assert_eq!(e.steps.len(), 1, "the held click was not executed");
        assert_eq!(e.steps[0].control_role, "edit");
        assert_eq!(e.result.as_deref(), Some("84"));
    }

    #[test]
    fn a_failed_subtask_is_not_an_example() {
        assert!(from_events(&events("FAIL"), &[]).is_empty());
    }

    #[test]
    fn the_policies() {
        let ok = Ending {
            finished: true,
            evaluator_passed: None,
        };
        let failed_eval = Ending {
            finished: true,
            evaluator_passed: Some(false),
        };
        let failed = Ending {
            finished: false,
            evaluator_passed: None,
        };
        assert_eq!(decide(SavePolicy::Auto, ok), Decision::Save);
        assert_eq!(decide(SavePolicy::Auto, failed_eval), Decision::Skip);
        assert_eq!(decide(SavePolicy::Auto, failed), Decision::Skip);
        assert_eq!(decide(SavePolicy::Always, failed), Decision::Save);
        assert_eq!(decide(SavePolicy::Never, ok), Decision::Skip);
        assert_eq!(decide(SavePolicy::Ask, ok), Decision::Ask);
        for (s, p) in [
            ("always", SavePolicy::Always),
            ("NEVER", SavePolicy::Never),
            (" ask", SavePolicy::Ask),
            ("auto", SavePolicy::Auto),
        ] {
            assert_eq!(SavePolicy::parse(s), Some(p));
        }
        assert_eq!(SavePolicy::parse("sometimes"), None);
    }
}
