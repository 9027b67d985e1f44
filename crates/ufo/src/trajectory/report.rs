//! `ufo report <OUT>`: one self-contained HTML file (`<OUT>/report.html`) replaying a
//! trajectory: the request, every step with its screenshot and the chosen control highlighted,
//! the subtasks, the blackboard and how the session ended.
//!
//! The page needs no network: CSS and the little script are inline, screenshots are `data:`
//! URIs, and a Content-Security-Policy forbids loading anything else. Every text from the
//! trajectory is HTML-escaped by the template engine (auto-escaping is on for `.html`
//! templates), so model output cannot inject markup.
//!
//! The trajectory is read as a stream and one report embeds a bounded part of it: the first
//! [`Keep::REPORT`] records, screenshots up to [`MAX_IMAGES_TOTAL`] bytes in all and prompts
//! up to [`MAX_PROMPTS_TOTAL`]; what is left out is named in the page ("Not shown in this
//! page"). Files are read and the page written through [`crate::folder`] (no link followed;
//! the page whole or not at all, no temporary file left on a failure).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use base64::Engine as _;
use minijinja::{context, Environment, Value as TplValue};
use serde::Serialize;
use serde_json::Value;

use crate::highlight;
use crate::recorder::action_text;
use ufo_core::events::{End, Record, Step};
use ufo_core::step_action::StepAction;

use crate::trajectory::{text, Keep, Trajectory};

const TEMPLATE: &str = include_str!("report.html");

/// The `'sha256-…'` sources of the scripts the report ships (the template's `<script>`
/// blocks, which hold no template tags): a Content-Security-Policy that allows exactly these
/// runs no script a trajectory's text might have slipped into the page.
pub fn script_sources() -> Vec<String> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let mut out = Vec::new();
    let mut rest = TEMPLATE;
    while let Some(start) = rest.find("<script>") {
        let body = &rest[start + "<script>".len()..];
        let Some(end) = body.find("</script>") else {
            break;
        };
        let digest = sha2::Sha256::digest(&body.as_bytes()[..end]);
        out.push(format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        ));
        rest = &body[end..];
    }
    out
}

/// Longest prompt text embedded per step (characters); the rest is cut with a note.
const MAX_PROMPT_CHARS: usize = 200_000;

/// Largest screenshot embedded (bytes); a larger one is named, not embedded.
const MAX_IMAGE: u64 = 16 << 20;

/// Screenshot bytes one report embeds in all; later steps name their screenshot instead.
pub const MAX_IMAGES_TOTAL: u64 = 24 << 20;

/// Prompt bytes one report embeds in all; later steps name their prompt file instead.
pub const MAX_PROMPTS_TOTAL: u64 = 16 << 20;

/// What the report may still embed, and what it left out.
struct Budget {
    images: u64,
    prompts: u64,
    images_left_out: usize,
    prompts_left_out: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            images: MAX_IMAGES_TOTAL,
            prompts: MAX_PROMPTS_TOTAL,
            images_left_out: 0,
            prompts_left_out: 0,
        }
    }
}

/// The phases of a processor step, in order, as `timings_ms` names them.
const PHASES: &[&str] = &[
    "data_collection",
    "llm_interaction",
    "action_execution",
    "memory_update",
    "total",
];

#[derive(Serialize)]
struct StepView {
    seq: String,
    round: u64,
    agent: String,
    /// The device of a session across several desktops (empty for one desktop).
    device: String,
    role: String,
    state: String,
    status: String,
    status_class: &'static str,
    terminal: bool,
    subtask: String,
    thought: String,
    action_summary: String,
    action_json: String,
    result: String,
    error: String,
    timings: Vec<(String, String)>,
    llm_calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    cost: String,
    control_label: String,
    control_text: String,
    /// The chosen control was read in the pixels (its id is `ocr:x,y,w,h`, docs/sight.md).
    control_read: bool,
    image: Option<TplValue>,
    image_kind: String,
    highlight: Option<Highlight>,
    prompt: String,
    notes: Vec<String>,
    /// The knowledge the step's prompt showed: kind, id, score.
    knowledge: Vec<(String, String, String)>,
    /// Whether its order is the session's model's (`[knowledge] rerank = "model"`).
    knowledge_reranked: bool,
}

#[derive(Serialize)]
struct Highlight {
    left: String,
    top: String,
    width: String,
    height: String,
}

#[derive(Serialize)]
struct RoundView {
    index: u64,
    resumed: bool,
    steps: Vec<StepView>,
    end: Option<EndView>,
}

#[derive(Serialize)]
struct EndView {
    status: String,
    status_class: &'static str,
    reason: String,
    message: String,
    steps: u64,
}

#[derive(Serialize)]
struct SubtaskView {
    seq: String,
    agent: String,
    subtask: String,
    status: String,
    status_class: &'static str,
    result: String,
}

fn status_class(s: &str) -> &'static str {
    match s {
        "FINISH" => "ok",
        "FAIL" | "REJECTED" => "fail",
        "ERROR" => "error",
        "CONFIRM" | "PENDING" | "CANCELLED" => "wait",
        _ => "neutral",
    }
}

fn pct(part: i64, whole: u32) -> String {
    if whole == 0 {
        return "0".into();
    }
    format!("{:.3}", (part as f64) * 100.0 / f64::from(whole))
}

fn data_uri(png: &[u8]) -> TplValue {
    // Base64 text is [A-Za-z0-9+/=] only: safe inside an attribute as it is.
    TplValue::from_safe_string(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    ))
}

fn step_view(t: &Trajectory, e: &Step, budget: &mut Budget) -> StepView {
    // (read as the file has it: a record an older or newer version wrote is shown too)
    let action = e.action.as_ref().map(StepAction::to_value);
    let action = action.as_ref().filter(|a| !a.is_null());
    let control_label = action_field(action, "control_label");
    let control_text = action_field(action, "control_text");
    let control_read =
        ufo_core::vision::merge::parse_detected_id(&action_field(action, "control_id")).is_some();
    let mut notes = Vec::new();
    let shot = embed_screenshot(t, e, &control_label, budget, &mut notes);
    let prompt = embed_prompt(t, e, budget, &mut notes);
    let status = e.status.clone();
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    StepView {
        seq: e.seq.to_string(),
        round: u64::from(e.round),
        agent: e.agent.clone(),
        device: e.device.clone().unwrap_or_default(),
        role: e.role.clone(),
        state: e.state.clone(),
        status_class: status_class(&status),
        status,
        terminal: e.terminal,
        subtask: opt(&e.subtask),
        thought: opt(&e.thought),
        action_summary: action.map(action_text).unwrap_or_default(),
        action_json: action
            .and_then(|a| serde_json::to_string_pretty(a).ok())
            .unwrap_or_default(),
        result: opt(&e.result),
        error: opt(&e.error),
        timings: timing_rows(e),
        llm_calls: e.llm.calls,
        prompt_tokens: e.llm.prompt_tokens,
        completion_tokens: e.llm.completion_tokens,
        cost: cost_text(e.llm.cost),
        control_label,
        control_text,
        control_read,
        image: shot.image,
        image_kind: shot.kind,
        highlight: shot.highlight,
        prompt,
        notes,
        knowledge: e
            .knowledge
            .iter()
            .map(|k| {
                (
                    k.kind.as_str().to_string(),
                    k.id.clone(),
                    format!("{:.2}", k.score),
                )
            })
            .collect(),
        knowledge_reranked: e.knowledge_reranked,
    }
}

/// A text field `k` of a step's action, or `""`; a held action's label sits under `held` for
/// the host's CONFIRM.
fn action_field(action: Option<&Value>, k: &str) -> String {
    action
        .and_then(|a| a.get(k).or_else(|| a.get("held").and_then(|h| h.get(k))))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The step's timings, in the order of the phases, as (phase, "N ms").
fn timing_rows(e: &Step) -> Vec<(String, String)> {
    let m = &e.timings_ms;
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort_by_key(|k| PHASES.iter().position(|p| p == k).unwrap_or(PHASES.len()));
    keys.into_iter()
        .filter_map(|k| {
            let ms = m.get(k).and_then(Value::as_f64)?;
            Some((k.replace('_', " "), format!("{ms:.1} ms")))
        })
        .collect()
}

/// The path of the step's artifact `k` in the trajectory folder.
fn artifact_path(e: &Step, k: &str) -> Option<String> {
    e.artifacts
        .get(k)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The screenshot a step view embeds.
#[derive(Default)]
struct Screenshot {
    image: Option<TplValue>,
    kind: String,
    highlight: Option<Highlight>,
}

/// The step's annotated screenshot (else its plain one) as far as the `budget` still takes,
/// with the acted-on control highlighted; what is left out is said in `notes`.
fn embed_screenshot(
    t: &Trajectory,
    e: &Step,
    control_label: &str,
    budget: &mut Budget,
    notes: &mut Vec<String>,
) -> Screenshot {
    for (key, kind) in [
        ("annotated", "annotated screenshot"),
        ("screenshot", "screenshot"),
    ] {
        let Some(rel) = artifact_path(e, key) else {
            continue;
        };
        if budget.images == 0 {
            budget.images_left_out += 1;
            notes.push(format!(
                "{kind} not embedded (see {rel} in the trajectory folder)"
            ));
            break;
        }
        match t.artifact(&rel, MAX_IMAGE.min(budget.images)) {
            Ok((_, false)) => {
                budget.images_left_out += 1;
                notes.push(format!(
                    "{kind} {rel} not embedded: larger than this report still takes"
                ));
                break;
            }
            Ok((bytes, true)) => {
                budget.images = budget.images.saturating_sub(bytes.len() as u64);
                let highlight = (key == "annotated" && !control_label.is_empty())
                    .then(|| highlight::find_label(&bytes, control_label))
                    .flatten()
                    .map(|f| Highlight {
                        left: pct(i64::from(f.rect.x), f.width),
                        top: pct(i64::from(f.rect.y), f.height),
                        width: pct(i64::from(f.rect.w), f.width),
                        height: pct(i64::from(f.rect.h), f.height),
                    });
                return Screenshot {
                    image: Some(data_uri(&bytes)),
                    kind: kind.to_string(),
                    highlight,
                };
            }
            Err(err) => notes.push(err),
        }
    }
    Screenshot::default()
}

/// The step's prompt as far as the `budget` still takes, cut at [`MAX_PROMPT_CHARS`]; what is
/// left out is said in `notes`.
fn embed_prompt(t: &Trajectory, e: &Step, budget: &mut Budget, notes: &mut Vec<String>) -> String {
    match artifact_path(e, "prompt") {
        Some(rel) if budget.prompts == 0 => {
            budget.prompts_left_out += 1;
            notes.push(format!(
                "prompt not embedded (see {rel} in the trajectory folder)"
            ));
            String::new()
        }
        // UTF-8 takes at most 4 bytes a character
        Some(rel) => match t.artifact(&rel, (MAX_PROMPT_CHARS as u64 * 4).min(budget.prompts)) {
            Ok((bytes, whole)) => {
                budget.prompts = budget.prompts.saturating_sub(bytes.len() as u64);
                let s = String::from_utf8_lossy(&bytes);
                if !whole || s.chars().count() > MAX_PROMPT_CHARS {
                    let mut cut: String = s.chars().take(MAX_PROMPT_CHARS).collect();
                    cut.push_str("\n… (cut; the whole text is in the trajectory folder)");
                    cut
                } else {
                    s.into_owned()
                }
            }
            Err(err) => {
                notes.push(err);
                String::new()
            }
        },
        None => String::new(),
    }
}

/// A cost as text, empty when zero (unpriced models).
fn cost_text(cost: f64) -> String {
    if cost > 0.0 {
        format!("{cost:.4}")
    } else {
        String::new()
    }
}

fn end_view(e: &End) -> EndView {
    EndView {
        status_class: status_class(&e.status),
        status: e.status.clone(),
        reason: e.reason.clone(),
        message: e.message.clone().unwrap_or_default(),
        steps: u64::from(e.steps),
    }
}

/// Render the report of a trajectory as HTML into `out`.
pub fn render(t: &Trajectory, out: &mut dyn std::io::Write) -> Result<()> {
    let mut budget = Budget::default();
    let (rounds, subtasks) = round_views(t, &mut budget);
    let start = t.first_start().cloned().unwrap_or_default();
    let end = t.final_end();
    let (_, _, total_cost) = t.llm_totals();
    let mut problems = t.problems.clone();
    let blackboard = match t.blackboard() {
        Ok(b) => b,
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let step_count: usize = rounds.iter().map(|r| r.steps.len()).sum::<usize>() + t.omitted_steps;
    let limits = limits(t, &budget);
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .context("the report template does not compile")?;
    let tpl = env
        .get_template("report.html")
        .context("the report template is missing")?;
    tpl.render_captured_to(
        context! {
            request => t.request().unwrap_or(""),
            started => start.ts.clone().unwrap_or_default(),
            llm => start.llm.clone(),
            dir => t.dir.display().to_string(),
            end => end.map(end_view),
            rounds_run => end.and_then(|e| e.rounds),
            resumes => t.resumes(),
            total_cost => cost_text(total_cost),
            calls => end.map(|e| e.llm.unwrap_or_default().calls),
            prompt_tokens => end.map(|e| e.llm.unwrap_or_default().prompt_tokens),
            completion_tokens => end.map(|e| e.llm.unwrap_or_default().completion_tokens),
            problems,
            limits,
            rounds,
            step_count,
            subtasks,
            has_blackboard => blackboard.is_some(),
            bb_requests => blackboard_strings(blackboard.as_ref(), "requests"),
            bb_questions => blackboard_questions(blackboard.as_ref()),
            bb_trajectories => blackboard_trajectories(blackboard.as_ref()),
            bb_json => blackboard.as_ref().and_then(|b| serde_json::to_string_pretty(b).ok()).unwrap_or_default(),
            generated => chrono::Utc::now().to_rfc3339(),
        },
        out,
    )
    .context("rendering the report failed")?;
    Ok(())
}

/// The steps grouped by round (a new group at each round and at each resume), and the
/// subtasks the steps archived.
fn round_views(t: &Trajectory, budget: &mut Budget) -> (Vec<RoundView>, Vec<SubtaskView>) {
    let mut rounds: Vec<RoundView> = Vec::new();
    let mut subtasks = Vec::new();
    // A new group starts at each round and at each resume (a later `session_start`).
    let mut current: Option<usize> = None;
    let mut starts = 0;
    let mut resumed = false;
    // a hand-over (takeover, handback) is shown on the step that follows it
    let mut hand_over: Vec<String> = Vec::new();
    for e in &t.records {
        if let Some(note) = hand_over_note(e) {
            hand_over.push(note);
            continue;
        }
        let round = match e {
            Record::SessionStart(_) => {
                starts += 1;
                if starts > 1 {
                    resumed = true;
                    current = None;
                }
                continue;
            }
            Record::Step(s) => u64::from(s.round),
            Record::RoundEnd(end) => u64::from(end.round.unwrap_or(0)),
            // (its usage is in the session's totals; the hand-overs are notes, above)
            Record::SessionEnd(_)
            | Record::ExperienceSummary(_)
            | Record::KnowledgeRerank(_)
            | Record::Other
            | Record::Takeover(_)
            | Record::Handback(_)
            | Record::Ask(_)
            | Record::Answered(_) => continue,
        };
        let idx = round_group(&mut rounds, current, round, &mut resumed);
        current = Some(idx);
        match e {
            Record::Step(step) => {
                let mut view = step_view(t, step, budget);
                view.notes.splice(0..0, hand_over.drain(..));
                subtasks.extend(archived_subtask(step, &view));
                rounds[idx].steps.push(view);
            }
            Record::RoundEnd(end) => rounds[idx].end = Some(end_view(end)),
            Record::SessionStart(_)
            | Record::SessionEnd(_)
            | Record::Takeover(_)
            | Record::Handback(_)
            | Record::Ask(_)
            | Record::Answered(_)
            | Record::ExperienceSummary(_)
            | Record::KnowledgeRerank(_)
            | Record::Other => {}
        }
    }
    (rounds, subtasks)
}

/// The index of the group of `round` in `rounds`: the `current` one when it is that round's,
/// else a new one (marked `resumed` if a resume came before it, which it then consumes).
fn round_group(
    rounds: &mut Vec<RoundView>,
    current: Option<usize>,
    round: u64,
    resumed: &mut bool,
) -> usize {
    match current {
        Some(i) if rounds[i].index == round => i,
        _ => {
            rounds.push(RoundView {
                index: round,
                resumed: *resumed,
                steps: Vec::new(),
                end: None,
            });
            *resumed = false;
            rounds.len() - 1
        }
    }
}

/// The note a hand-over record leaves on the step that follows it: a takeover, a handback, a
/// question or its answer (the step that asked follows them); `None` for other records.
fn hand_over_note(e: &Record) -> Option<String> {
    match e {
        Record::Takeover(h) => Some(format!(
            "The person took the desktop over before this step ({}); the agent paused.",
            h.input
        )),
        Record::Handback(h) => Some(format!(
            "The pause ended after {:.1} s ({}); the window was observed again.",
            h.paused_ms as f64 / 1000.0,
            h.how
        )),
        Record::Ask(a) => Some(question_note(a)),
        Record::Answered(a) => Some(answer_note(a)),
        Record::KnowledgeRerank(k) => Some(rerank_note(k)),
        Record::SessionStart(_)
        | Record::Step(_)
        | Record::RoundEnd(_)
        | Record::SessionEnd(_)
        | Record::ExperienceSummary(_)
        | Record::Other => None,
    }
}

/// The note of a `knowledge_rerank` record: the model's order of the pages, or why the fused
/// order was kept, and what the call cost.
fn rerank_note(k: &ufo_core::events::KnowledgeRerank) -> String {
    let what = match &k.error {
        None => format!(
            "The model {} reranked the {} pages found for this step ({}).",
            k.model,
            k.offered.len(),
            k.order.join(", ")
        ),
        Some(e) => format!(
            "The model {} was asked to rerank the {} pages found for this step; the fused order was kept: {e}.",
            k.model,
            k.offered.len()
        ),
    };
    format!(
        "{what} {} call(s), {} tokens, {:.1} s.",
        k.llm.calls,
        k.llm.prompt_tokens + k.llm.completion_tokens,
        k.ms as f64 / 1000.0
    )
}

/// The note of an `ask` record: which question opened, from which agent.
fn question_note(a: &ufo_core::events::Ask) -> String {
    let what = match a.kind.as_str() {
        "confirm" => "asked to approve",
        _ => "asked",
    };
    format!("Question {} — {} {what}: {}", a.id, a.agent, a.text)
}

/// The note of an `answered` record: who answered the question, and what.
fn answer_note(a: &ufo_core::events::Answered) -> String {
    let value = match &a.value {
        serde_json::Value::Bool(true) => "approved".to_string(),
        serde_json::Value::Bool(false) => "rejected".to_string(),
        serde_json::Value::String(s) => format!("\"{s}\""),
        serde_json::Value::Null => "no answer".to_string(),
        other => other.to_string(),
    };
    let by = match a.by.as_str() {
        "terminal" => "from the terminal",
        "console" => "from the console",
        "answers_file" => "from the answers file",
        "policy" => "by the --confirm policy",
        "timeout" => "by the timeout (no answer in time)",
        "cancelled" => "by the cancellation",
        other => other,
    };
    format!("Question {} answered {by}: {value}", a.id)
}

/// The subtask a step archived (its action's `archive` object), if any.
fn archived_subtask(step: &Step, view: &StepView) -> Option<SubtaskView> {
    let action = step.action.as_ref().map(StepAction::to_value)?;
    let archive = action.get("archive").filter(|a| a.is_object())?;
    let status = text(archive, "status").to_string();
    Some(SubtaskView {
        seq: view.seq.clone(),
        agent: view.agent.clone(),
        subtask: text(archive, "subtask").to_string(),
        status_class: status_class(&status),
        status,
        result: text(archive, "result").to_string(),
    })
}

/// The blackboard's list `key` as texts (a non-string entry as its JSON).
fn blackboard_strings(blackboard: Option<&Value>, key: &str) -> Vec<String> {
    blackboard
        .and_then(|b| b.get(key))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The blackboard's questions as (question, answer) pairs.
fn blackboard_questions(blackboard: Option<&Value>) -> Vec<(String, String)> {
    blackboard
        .and_then(|b| b.get("questions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|q| match q {
                    Value::Object(_) => (
                        text(q, "question").to_string(),
                        q.get("answer")
                            .and_then(Value::as_str)
                            .unwrap_or("(no answer)")
                            .to_string(),
                    ),
                    other => (other.to_string(), String::new()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The blackboard's archived trajectories, as the template shows them.
fn blackboard_trajectories(blackboard: Option<&Value>) -> Vec<TplValue> {
    let trajectories: &[Value] = blackboard
        .and_then(|b| b.get("trajectories"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    trajectories
        .iter()
        .map(|tr| {
            let actions: Vec<String> = tr
                .get("actions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|x| x.as_str().map(str::to_string).unwrap_or(x.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            TplValue::from_serialize(serde_json::json!({
                "agent": text(tr, "agent"),
                "subtask": text(tr, "subtask"),
                "status": text(tr, "status"),
                "status_class": status_class(text(tr, "status")),
                "result": text(tr, "result"),
                "actions": actions,
            }))
        })
        .collect()
}

/// What the page leaves out, one sentence each.
fn limits(t: &Trajectory, budget: &Budget) -> Vec<String> {
    let mut v = Vec::new();
    if t.omitted_steps > 0 {
        v.push(format!(
            "{} later step(s) are not shown: a report shows the first {} steps or {} MB of \
             events.jsonl; the whole trajectory is in events.jsonl (`ufo runs` sums all of it)",
            t.omitted_steps,
            Keep::REPORT.steps,
            Keep::REPORT.bytes >> 20
        ));
    }
    if budget.images_left_out > 0 {
        v.push(format!(
            "{} screenshot(s) are not shown: a report embeds {} MB of screenshots; the files \
             are in the trajectory folder",
            budget.images_left_out,
            MAX_IMAGES_TOTAL >> 20
        ));
    }
    if budget.prompts_left_out > 0 {
        v.push(format!(
            "{} prompt(s) are not shown: a report embeds {} MB of prompts; the files are in the \
             trajectory folder",
            budget.prompts_left_out,
            MAX_PROMPTS_TOTAL >> 20
        ));
    }
    v
}

/// Write `<dir>/report.html` for the trajectory in `dir` and return its path. The page is
/// written whole or not at all: on any failure no temporary file is left behind.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let t = Trajectory::load(dir, Keep::REPORT)
        .with_context(|| format!("{} is not a trajectory folder", dir.display()))?;
    let path = dir.join("report.html");
    crate::folder::write_atomic(&path, |w| {
        render(&t, w).map_err(|e| std::io::Error::other(format!("{e:#}")))
    })
    .map_err(|e| anyhow::anyhow!(crate::recorder::io_message(&path, &e)))?;
    Ok(path)
}
