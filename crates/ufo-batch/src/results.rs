//! Per-task results (one JSON line each) and the summary table.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How a task ended in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// The evaluator scored the final state 1.
    Passed,
    /// The evaluator scored it below 1.
    Failed,
    /// Not run: an unsupported config step, getter or metric, or no model for it.
    Skipped,
    /// The task could not be carried through (setup failed, the getter failed, a crash).
    Error,
}

impl TaskStatus {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Passed => "passed",
            TaskStatus::Failed => "failed",
            TaskStatus::Skipped => "skipped",
            TaskStatus::Error => "error",
        }
    }
}

/// One task's result: a line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Task id.
    pub id: String,
    /// The application the task counts under.
    pub app: String,
    /// passed / failed / skipped / error.
    pub status: TaskStatus,
    /// Evaluator score (none when not evaluated).
    #[serde(default)]
    pub score: Option<f64>,
    /// Why (the skip or error reason, or the evaluator's details).
    #[serde(default)]
    pub reason: String,
    /// How the session ended (FINISH / FAIL / ERROR), empty when it did not run.
    #[serde(default)]
    pub session_status: String,
    /// The session's reason code.
    #[serde(default)]
    pub session_reason: String,
    /// Processor steps.
    #[serde(default)]
    pub steps: u32,
    /// Model calls.
    #[serde(default)]
    pub model_calls: u64,
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Model cost.
    #[serde(default)]
    pub cost: f64,
    /// Wall time of the whole task (setup, session, evaluation, clean-up), seconds.
    #[serde(default)]
    pub time_s: f64,
    /// Of that, time waiting for the model, seconds.
    #[serde(default)]
    pub model_time_s: f64,
    /// Setup (config steps) time, seconds.
    #[serde(default)]
    pub setup_s: f64,
    /// Evaluation time (postconfig, getters, metrics), seconds.
    #[serde(default)]
    pub eval_s: f64,
    /// The task's trajectory folder.
    #[serde(default)]
    pub out: String,
    /// Lines of the setup and the evaluation.
    #[serde(default)]
    pub log: Vec<String>,
    /// The LLM evaluation agent's verdict (`--eval-llm`): `{"complete", "reason",
    /// "sub_scores", "calls"}` or `{"error"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_eval: Option<serde_json::Value>,
}

impl TaskResult {
    /// A result for a task that did not get far: skipped or error, with the reason.
    pub fn early(id: &str, app: &str, status: TaskStatus, reason: impl Into<String>) -> Self {
        TaskResult {
            id: id.to_string(),
            app: app.to_string(),
            status,
            score: None,
            reason: reason.into(),
            session_status: String::new(),
            session_reason: String::new(),
            steps: 0,
            model_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost: 0.0,
            time_s: 0.0,
            model_time_s: 0.0,
            setup_s: 0.0,
            eval_s: 0.0,
            out: String::new(),
            log: Vec::new(),
            llm_eval: None,
        }
    }

    /// Time not spent waiting for the model, seconds.
    pub fn non_model_s(&self) -> f64 {
        (self.time_s - self.model_time_s).max(0.0)
    }
}

/// Longest line of `results.jsonl` (or `result.json`) read: a result with its setup and
/// evaluation log and the LLM verdict is a few KiB; a longer one is damage.
pub const MAX_RESULT_LINE: usize = 4 << 20;

/// Why a line of `results.jsonl` was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineProblem {
    /// Longer than [`MAX_RESULT_LINE`] bytes (its length).
    TooLong(usize),
    /// The last line, without its newline and not a result: cut when the file was written.
    Cut,
    /// Not a task result (the parser's message).
    NotAResult(String),
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::TooLong(n) => write!(
                f,
                "{n} bytes, longer than the {MAX_RESULT_LINE} bytes a task result takes"
            ),
            LineProblem::Cut => f.write_str("cut short (the file ends inside this line)"),
            LineProblem::NotAResult(e) => write!(f, "not a task result: {e}"),
        }
    }
}

/// The task results of a `results.jsonl` text, and its lines that are not one (1-based line
/// numbers). Blank lines are no results and no problems. Any bytes give an answer: a line cut
/// by a killed writer or damaged on disk costs that line, never the others.
pub fn parse_results(bytes: &[u8]) -> (Vec<TaskResult>, Vec<(usize, LineProblem)>) {
    let mut results = Vec::new();
    let mut problems = Vec::new();
    let ends_open = !bytes.is_empty() && !bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let count = lines.len();
    for (i, line) in lines.into_iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > MAX_RESULT_LINE {
            problems.push((i + 1, LineProblem::TooLong(line.len())));
            continue;
        }
        match serde_json::from_slice::<TaskResult>(line) {
            Ok(r) => results.push(r),
            Err(_) if ends_open && i + 1 == count => problems.push((i + 1, LineProblem::Cut)),
            Err(e) => problems.push((i + 1, LineProblem::NotAResult(e.to_string()))),
        }
    }
    (results, problems)
}

#[derive(Default)]
struct Row {
    tasks: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
    error: usize,
    steps: u64,
    calls: u64,
    tokens: u64,
    cost: f64,
    time: f64,
    non_model: f64,
}

impl Row {
    fn add(&mut self, r: &TaskResult) {
        self.tasks += 1;
        match r.status {
            TaskStatus::Passed => self.passed += 1,
            TaskStatus::Failed => self.failed += 1,
            TaskStatus::Skipped => self.skipped += 1,
            TaskStatus::Error => self.error += 1,
        }
        self.steps += u64::from(r.steps);
        self.calls += r.model_calls;
        self.tokens += r.prompt_tokens + r.completion_tokens;
        self.cost += r.cost;
        self.time += r.time_s;
        self.non_model += r.non_model_s();
    }

    fn line(&self, name: &str) -> String {
        let ran = self.tasks - self.skipped;
        let rate = if ran == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * self.passed as f64 / ran as f64)
        };
        let per = |x: f64| {
            if ran == 0 {
                0.0
            } else {
                x / ran as f64
            }
        };
        format!(
            "{name:<18} {:>5} {:>6} {:>6} {:>7} {:>5} {:>7} {:>5} {:>6} {:>8} {:>8.4} {:>8.2} {:>9.2}",
            self.tasks,
            self.passed,
            self.failed,
            self.skipped,
            self.error,
            rate,
            self.steps,
            self.calls,
            self.tokens,
            self.cost,
            per(self.time),
            per(self.non_model),
        )
    }
}

/// The summary table: one row per application and a total row. Success rate is passed over
/// tasks that ran (skipped tasks do not count); times are averages per task that ran.
pub fn summary_table(results: &[TaskResult]) -> String {
    let mut by_app: BTreeMap<&str, Row> = BTreeMap::new();
    let mut total = Row::default();
    for r in results {
        by_app.entry(r.app.as_str()).or_default().add(r);
        total.add(r);
    }
    let mut out = format!(
        "{:<18} {:>5} {:>6} {:>6} {:>7} {:>5} {:>7} {:>5} {:>6} {:>8} {:>8} {:>8} {:>9}\n",
        "app",
        "tasks",
        "passed",
        "failed",
        "skipped",
        "error",
        "success",
        "steps",
        "calls",
        "tokens",
        "cost",
        "time/s",
        "non-model"
    );
    for (app, row) in &by_app {
        // the app comes from the task file: shown inert like every untrusted text
        out.push_str(&row.line(&ufo_core::inert(app)));
        out.push('\n');
    }
    out.push_str(&total.line("TOTAL"));
    out.push('\n');
    out
}

/// How the LLM evaluation agent's verdicts compare with the evaluators, when there are any:
/// `LLM evaluation agent: yes 5, no 1, unsure 0, error 0; agrees with the evaluators on 6 of 6`.
pub fn llm_eval_line(results: &[TaskResult]) -> Option<String> {
    let judged: Vec<&TaskResult> = results.iter().filter(|r| r.llm_eval.is_some()).collect();
    if judged.is_empty() {
        return None;
    }
    let verdict = |r: &TaskResult| {
        r.llm_eval
            .as_ref()
            .and_then(|v| v.get("complete"))
            .and_then(|c| c.as_str())
            .map(str::to_string)
    };
    let count = |want: &str| {
        judged
            .iter()
            .filter(|r| verdict(r).as_deref() == Some(want))
            .count()
    };
    let errors = judged.iter().filter(|r| verdict(r).is_none()).count();
    let decided: Vec<&&TaskResult> = judged
        .iter()
        .filter(|r| matches!(r.status, TaskStatus::Passed | TaskStatus::Failed))
        .collect();
    let agree = decided
        .iter()
        .filter(|r| (verdict(r).as_deref() == Some("yes")) == (r.status == TaskStatus::Passed))
        .count();
    Some(format!(
        "LLM evaluation agent: yes {}, no {}, unsure {}, error {errors}; agrees with the evaluators on {agree} of {}",
        count("yes"),
        count("no"),
        count("unsure"),
        decided.len()
    ))
}

/// One line per task: id, status, time and the non-model part of it.
pub fn task_lines(results: &[TaskResult]) -> String {
    let mut out = format!(
        "{:<28} {:<8} {:>6} {:>8} {:>9} {:>8} {:>7}  reason\n",
        "task", "status", "steps", "time/s", "non-model", "setup/s", "eval/s"
    );
    for r in results {
        // ids and reasons come from task files and sessions: escape sequences, controls and
        // bidi characters are shown escaped, never obeyed (on stdout and in summary.txt)
        let reason: String = r.reason.chars().take(80).collect();
        let reason = ufo_core::inert(&reason);
        out.push_str(&format!(
            "{:<28} {:<8} {:>6} {:>8.2} {:>9.2} {:>8.2} {:>7.2}  {}\n",
            ufo_core::inert(&r.id),
            r.status.as_str(),
            r.steps,
            r.time_s,
            r.non_model_s(),
            r.setup_s,
            r.eval_s,
            reason
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_counts_per_app_and_excludes_skipped_from_the_rate() {
        let mut a = TaskResult::early("a", "calc", TaskStatus::Passed, "");
        a.time_s = 4.0;
        a.model_time_s = 1.0;
        a.steps = 3;
        let b = TaskResult::early("b", "calc", TaskStatus::Failed, "wrong");
        let c = TaskResult::early("c", "shell", TaskStatus::Skipped, "unsupported");
        let t = summary_table(&[a.clone(), b, c]);
        let calc = t.lines().find(|l| l.starts_with("calc")).unwrap();
        assert!(calc.contains("50.0%"), "{t}");
        let total = t.lines().find(|l| l.starts_with("TOTAL")).unwrap();
        assert!(total.contains("50.0%"), "{t}");
        let shell = t.lines().find(|l| l.starts_with("shell")).unwrap();
        assert!(shell.contains(" - "), "{t}");
        assert_eq!(a.non_model_s(), 3.0);
        let line = serde_json::to_string(&a).unwrap();
        let back: TaskResult = serde_json::from_str(&line).unwrap();
        assert_eq!(back, a);
        assert!(task_lines(&[a]).contains("passed"));
    }

    #[test]
    fn a_cut_or_broken_line_costs_only_itself() {
        let a = TaskResult::early("a", "calc", TaskStatus::Passed, "");
        let b = TaskResult::early("b", "calc", TaskStatus::Failed, "wrong");
        let line = |r: &TaskResult| serde_json::to_string(r).unwrap();
        let whole = format!("{}\n\n{}\n", line(&a), line(&b));
        assert_eq!(
            parse_results(whole.as_bytes()),
            (vec![a.clone(), b.clone()], vec![])
        );
        // killed while writing the third line
        let b_line = line(&b);
        let cut = format!("{}\nnot json\n{}\n{}", line(&a), b_line, &b_line[..20]);
        let (got, problems) = parse_results(cut.as_bytes());
        assert_eq!(got, vec![a.clone(), b.clone()]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            matches!(problems[0], (2, LineProblem::NotAResult(_))),
            "{problems:?}"
        );
        assert_eq!(problems[1], (4, LineProblem::Cut));
        // a last line without its newline that is whole counts
        let open_end = format!("{}\n{}", line(&a), line(&b));
        assert_eq!(parse_results(open_end.as_bytes()).0, vec![a.clone(), b]);
        let huge = format!("{}\n{}\n", "x".repeat(MAX_RESULT_LINE + 1), line(&a));
        let (got, problems) = parse_results(huge.as_bytes());
        assert_eq!(got, vec![a]);
        assert_eq!(
            problems,
            vec![(1, LineProblem::TooLong(MAX_RESULT_LINE + 1))]
        );
        assert!(problems[0].1.to_string().contains("longer than"));
    }

    #[test]
    fn ids_reasons_and_apps_are_shown_inert() {
        let hostile = "t\x1b[2J\x1b]0;owned\x07\u{202e}gpj.exe\r";
        let r = TaskResult::early(hostile, "calc\x1b[31m", TaskStatus::Error, "bad\x1b[1A");
        let text = format!(
            "{}{}",
            summary_table(std::slice::from_ref(&r)),
            task_lines(&[r])
        );
        for bad in ['\x1b', '\x07', '\u{202e}', '\r'] {
            assert!(!text.contains(bad), "{bad:?} shown raw in {text:?}");
        }
        assert!(text.contains("\\x1b"), "{text}");
    }
}
