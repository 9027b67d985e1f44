//! Evaluator metrics (the OSWorld functions that need no network) and the evaluation of a
//! task's final state.

use serde::Serialize;
use serde_json::Value;

use crate::getters::{self, GetterEnv};
use crate::kinds::MetricKind;
use crate::task::EvaluatorSpec;
use crate::BatchError;

/// What the evaluator knows about the session besides the desktop's state.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// How the session ended: `FINISH`, `FAIL`, `ERROR`, `CANCELLED`.
    pub status: String,
    /// The session's reason code (`finish`, `host_fail`, `max_steps`, ...).
    pub reason: String,
}

/// The verdict of a task's evaluator.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evaluation {
    /// Combined score in 0..=1 (1 is success).
    pub score: f64,
    /// One line per metric: `func: score (what was compared)`.
    pub details: Vec<String>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn rule<'a>(rules: Option<&'a Value>, key: &str, func: &str) -> Result<&'a Value, BatchError> {
    rules
        .and_then(|r| r.get(key))
        .ok_or_else(|| BatchError::Metric {
            func: func.to_string(),
            message: format!("the expected rules need \"{key}\""),
        })
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

fn read(path: &Value, func: &str) -> Result<Option<String>, BatchError> {
    let Some(p) = path.as_str() else {
        return Ok(None);
    };
    std::fs::read_to_string(p)
        .map(Some)
        .map_err(|e| BatchError::Metric {
            func: func.to_string(),
            message: format!("cannot read {p}: {e}"),
        })
}

fn normalise(text: &str, ignore_blanks: bool, ignore_case: bool) -> String {
    let mut t = text.to_string();
    if ignore_blanks {
        t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    if ignore_case {
        t = t.to_lowercase();
    }
    t
}

/// Run one metric on the got `result`, the `expected` value (rules or a file) and `options`.
/// Returns a score in 0..=1.
pub fn metric(
    func: &str,
    result: &Value,
    expected: Option<&Value>,
    options: &Value,
    facts: &RunFacts,
) -> Result<f64, BatchError> {
    let Some(kind) = MetricKind::named(func) else {
        return Err(BatchError::Unsupported(format!(
            "unsupported evaluator function `{func}`"
        )));
    };
    match kind {
        MetricKind::ExactMatch => exact_match(result, expected),
        MetricKind::CheckIncludeExclude => Ok(check_include_exclude(result, expected)),
        MetricKind::MatchInList => match_in_list(result, expected),
        MetricKind::IsInList => is_in_list(result, expected),
        MetricKind::CompareTextFile => compare_text_file(result, expected, options),
        MetricKind::CheckList => check_list(result, expected),
        MetricKind::Infeasible => Ok(infeasible(facts)),
    }
}

fn score(passed: bool) -> f64 {
    if passed {
        1.0
    } else {
        0.0
    }
}

/// `exact_match`: the result is the rules' `expected` text, byte for byte.
fn exact_match(result: &Value, expected: Option<&Value>) -> Result<f64, BatchError> {
    let func = MetricKind::ExactMatch.name();
    let want = text(rule(expected, "expected", func)?);
    Ok(score(text(result).is_some() && text(result) == want))
}

/// `check_include_exclude`: the result holds every `include` text and no `exclude` one.
fn check_include_exclude(result: &Value, expected: Option<&Value>) -> f64 {
    let Some(got) = text(result) else {
        return 0.0;
    };
    let include = expected.and_then(|r| r.get("include")).map(strings);
    let exclude = expected.and_then(|r| r.get("exclude")).map(strings);
    let inc = include.unwrap_or_default().iter().all(|s| got.contains(s));
    let exc = exclude.unwrap_or_default().iter().all(|s| !got.contains(s));
    score(inc && exc)
}

/// `match_in_list`: the result is one of the rules' `expected` texts.
fn match_in_list(result: &Value, expected: Option<&Value>) -> Result<f64, BatchError> {
    let func = MetricKind::MatchInList.name();
    let list = strings(rule(expected, "expected", func)?);
    Ok(score(text(result).is_some_and(|r| list.contains(&r))))
}

/// `is_in_list`: the rules' `expected` text is an item of the result (a list) or a part of it
/// (a text).
fn is_in_list(result: &Value, expected: Option<&Value>) -> Result<f64, BatchError> {
    let func = MetricKind::IsInList.name();
    let want = text(rule(expected, "expected", func)?).unwrap_or_default();
    Ok(score(match result {
        Value::Array(items) => items.iter().any(|i| text(i).as_deref() == Some(&want)),
        Value::String(s) => s.contains(&want),
        _ => false,
    }))
}

/// `compare_text_file`: the result file and the expected file hold the same text, blanks and
/// case ignored when the options say so; a missing file scores 0.
fn compare_text_file(
    result: &Value,
    expected: Option<&Value>,
    options: &Value,
) -> Result<f64, BatchError> {
    let func = MetricKind::CompareTextFile.name();
    let (Some(a), Some(b)) = (
        read(result, func)?,
        match expected {
            Some(e) => read(e, func)?,
            None => None,
        },
    ) else {
        return Ok(0.0);
    };
    let flag = |key: &str| options.get(key).and_then(Value::as_bool).unwrap_or(false);
    let (blanks, case) = (flag("ignore_blanks"), flag("ignore_case"));
    Ok(score(
        normalise(&a, blanks, case) == normalise(&b, blanks, case),
    ))
}

/// The regexes of the rules' `key` (a text or a list of them).
fn patterns(expected: Option<&Value>, key: &str) -> Result<Vec<regex::Regex>, BatchError> {
    expected
        .and_then(|r| r.get(key))
        .map(strings)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| BatchError::Metric {
                func: MetricKind::CheckList.name().to_string(),
                message: format!("bad pattern {p:?}: {e}"),
            })
        })
        .collect()
}

/// `check_list`: every `expect` pattern matches some line of the result file and no
/// `unexpect` pattern matches any; a missing file scores 0.
fn check_list(result: &Value, expected: Option<&Value>) -> Result<f64, BatchError> {
    let Some(content) = read(result, MetricKind::CheckList.name())? else {
        return Ok(0.0);
    };
    let expect = patterns(expected, "expect")?;
    let unexpect = patterns(expected, "unexpect")?;
    let mut seen = vec![false; expect.len()];
    let mut clean = true;
    for line in content.lines() {
        for (i, r) in expect.iter().enumerate() {
            seen[i] = seen[i] || r.is_match(line);
        }
        clean = clean && unexpect.iter().all(|r| !r.is_match(line));
    }
    Ok(score(seen.iter().all(|s| *s) && clean))
}

/// `infeasible`: the session ended FAIL by the agent's own decision (not a step or budget
/// limit).
fn infeasible(facts: &RunFacts) -> f64 {
    score(facts.status == "FAIL" && !matches!(facts.reason.as_str(), "max_steps" | "budget"))
}

/// Evaluate a task: run its getters and metrics and combine them (`conj`: `and` takes the
/// lowest score, `or` the highest).
pub async fn evaluate(
    spec: &EvaluatorSpec,
    env: &GetterEnv,
    facts: &RunFacts,
) -> Result<Evaluation, BatchError> {
    let funcs = spec.func.to_vec();
    let results = spec.result.as_ref().map(|r| r.to_vec()).unwrap_or_default();
    let expected = spec
        .expected
        .as_ref()
        .map(|r| r.to_vec())
        .unwrap_or_default();
    let options = spec
        .options
        .as_ref()
        .map(|r| r.to_vec())
        .unwrap_or_default();
    let or = spec.conj.as_deref() == Some("or");
    let mut scores = Vec::new();
    let mut details = Vec::new();
    for (i, func) in funcs.iter().enumerate() {
        let result = match results.get(i) {
            Some(g) => getters::get(env, g).await?,
            None => Value::Null,
        };
        let want = match expected.get(i) {
            Some(g) => Some(getters::get(env, g).await?),
            None => None,
        };
        let opts = options.get(i).cloned().unwrap_or(Value::Null);
        let s = metric(func, &result, want.as_ref(), &opts, facts)?;
        let shown: String = text(&result).unwrap_or_else(|| "null".into());
        let shown: String = shown.chars().take(200).collect();
        details.push(format!("{func}: {s} (result {shown:?})"));
        scores.push(s);
    }
    let score = if scores.is_empty() {
        0.0
    } else if or {
        scores.iter().cloned().fold(0.0, f64::max)
    } else {
        scores.iter().cloned().fold(1.0, f64::min)
    };
    Ok(Evaluation { score, details })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(func: &str, result: Value, expected: Value) -> f64 {
        metric(
            func,
            &result,
            Some(&expected),
            &Value::Null,
            &RunFacts::default(),
        )
        .unwrap()
    }

    #[test]
    fn exact_match_is_exact() {
        assert_eq!(
            m("exact_match", json!("42"), json!({"expected": "42"})),
            1.0
        );
        assert_eq!(
            m("exact_match", json!("42\n"), json!({"expected": "42"})),
            0.0
        );
        assert_eq!(
            m("exact_match", Value::Null, json!({"expected": "42"})),
            0.0
        );
        assert!(metric(
            "exact_match",
            &json!("a"),
            Some(&json!({})),
            &Value::Null,
            &RunFacts::default()
        )
        .is_err());
    }

    #[test]
    fn include_exclude() {
        let rules = json!({"include": ["a", "b"], "exclude": ["z"]});
        assert_eq!(
            m("check_include_exclude", json!("a b c"), rules.clone()),
            1.0
        );
        assert_eq!(m("check_include_exclude", json!("a c"), rules.clone()), 0.0);
        assert_eq!(m("check_include_exclude", json!("a b z"), rules), 0.0);
    }

    #[test]
    fn lists() {
        assert_eq!(
            m("match_in_list", json!("b"), json!({"expected": ["a", "b"]})),
            1.0
        );
        assert_eq!(
            m("match_in_list", json!("c"), json!({"expected": ["a", "b"]})),
            0.0
        );
        assert_eq!(
            m("is_in_list", json!(["x", "y"]), json!({"expected": "y"})),
            1.0
        );
        assert_eq!(m("is_in_list", json!("x,y"), json!({"expected": "y"})), 1.0);
        assert_eq!(m("is_in_list", json!(["x"]), json!({"expected": "y"})), 0.0);
    }

    #[test]
    fn text_files_compare_with_options() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a.txt");
        let b = tmp.path().join("b.txt");
        std::fs::write(&a, "Hello  World\n").unwrap();
        std::fs::write(&b, "hello world").unwrap();
        let pa = json!(a.display().to_string());
        let pb = json!(b.display().to_string());
        let f = RunFacts::default();
        assert_eq!(
            metric("compare_text_file", &pa, Some(&pb), &Value::Null, &f).unwrap(),
            0.0
        );
        let opts = json!({"ignore_blanks": true, "ignore_case": true});
        assert_eq!(
            metric("compare_text_file", &pa, Some(&pb), &opts, &f).unwrap(),
            1.0
        );
        // A missing result file (null from vm_file) scores 0.
        assert_eq!(
            metric("compare_text_file", &Value::Null, Some(&pb), &opts, &f).unwrap(),
            0.0
        );
    }

    #[test]
    fn check_list_uses_regexes_per_line() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("l.txt");
        std::fs::write(&a, "apple 1\nbanana 2\n").unwrap();
        let p = json!(a.display().to_string());
        assert_eq!(
            m(
                "check_list",
                p.clone(),
                json!({"expect": ["^apple \\d$", "ban"], "unexpect": ["cherry"]})
            ),
            1.0
        );
        assert_eq!(
            m("check_list", p.clone(), json!({"expect": ["cherry"]})),
            0.0
        );
        assert_eq!(
            m("check_list", p.clone(), json!({"unexpect": ["an+a"]})),
            0.0
        );
        assert!(metric(
            "check_list",
            &p,
            Some(&json!({"expect": ["("]})),
            &Value::Null,
            &RunFacts::default()
        )
        .is_err());
    }

    #[test]
    fn infeasible_wants_the_agent_to_give_up() {
        let f = |s: &str, r: &str| RunFacts {
            status: s.into(),
            reason: r.into(),
        };
        let run = |facts: RunFacts| {
            metric("infeasible", &Value::Null, None, &Value::Null, &facts).unwrap()
        };
        assert_eq!(run(f("FAIL", "host_fail")), 1.0);
        assert_eq!(run(f("FINISH", "finish")), 0.0);
        assert_eq!(run(f("FAIL", "max_steps")), 0.0);
    }

    #[tokio::test]
    async fn several_metrics_combine_with_conj() {
        let tmp = tempfile::tempdir().unwrap();
        let env = GetterEnv {
            home: tmp.path().to_path_buf(),
            task_dir: tmp.path().to_path_buf(),
            env: vec![],
            timeout: std::time::Duration::from_secs(5),
            device: None,
        };
        let mut spec: EvaluatorSpec = serde_json::from_value(json!({
            "func": ["exact_match", "check_include_exclude"],
            "result": [{"type": "vm_command_line", "command": "printf 42"},
                       {"type": "vm_command_line", "command": "echo hello"}],
            "expected": [{"type": "rule", "rules": {"expected": "42"}},
                         {"type": "rule", "rules": {"include": ["bye"]}}]
        }))
        .unwrap();
        let e = evaluate(&spec, &env, &RunFacts::default()).await.unwrap();
        assert_eq!(e.score, 0.0, "{e:?}");
        spec.conj = Some("or".into());
        let e = evaluate(&spec, &env, &RunFacts::default()).await.unwrap();
        assert_eq!(e.score, 1.0, "{e:?}");
        assert_eq!(e.details.len(), 2);
    }
}
