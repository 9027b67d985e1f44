//! The LLM evaluation agent (UFO's EvaluationAgent): a model reads the task and the
//! trajectory and answers with a reason, sub-scores and `complete`: yes / no / unsure.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ufo_core::ports::{ChatMessage, ChatRequest, LlmClient, MessageRole};

use crate::BatchError;

/// The agent kind of the evaluation agent's model calls (a scripted model names it in its
/// lines: `{"agent": "evaluation", ...}`).
pub const EVAL_AGENT: &str = "evaluation";

/// How many times a bad answer is re-asked before giving up.
const RETRIES: usize = 2;

/// Most characters of trajectory put into the prompt.
const MAX_TRAJECTORY: usize = 12_000;

/// The system prompt of the evaluation agent.
pub const EVAL_SYSTEM: &str = r#"You are the EvaluationAgent of ufo-rs. A desktop agent was given a task and acted on a Linux desktop; you read the task and what the agent did, step by step, with the results of its actions, and judge whether the task was completed.

Split the task into its sub-goals and judge each. Answer with ONE JSON object and nothing else:
{"reason": "why you judge so, citing steps", "sub_scores": {"<sub-goal>": "yes" | "no" | "unsure"}, "complete": "yes" | "no" | "unsure"}
Say "unsure" when the trajectory does not show enough to decide."#;

/// The evaluation agent's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmVerdict {
    /// yes / no / unsure.
    pub complete: String,
    /// The model's reasoning.
    pub reason: String,
    /// Sub-goal → yes / no / unsure.
    pub sub_scores: Map<String, Value>,
    /// Model calls made (re-asks included).
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// A compact text of a trajectory (`events.jsonl`): one line per step with agent, state,
/// subtask, action and result, cut to a bounded size (the end is kept).
pub fn trajectory_text(events_jsonl: &str) -> String {
    let mut lines = Vec::new();
    for e in events_jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let s = |k: &str| match &e[k] {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match e["type"].as_str() {
            Some("step") => {
                let mut line = format!(
                    "step {}: {} {} -> {}",
                    s("seq"),
                    s("agent"),
                    s("state"),
                    s("status")
                );
                for k in ["subtask", "action", "result", "error"] {
                    let v = s(k);
                    if !v.is_empty() {
                        let short: String = v.chars().take(400).collect();
                        line.push_str(&format!(" | {k}: {short}"));
                    }
                }
                lines.push(line);
            }
            Some("session_end") => {
                lines.push(format!("session ended {} ({})", s("status"), s("reason")))
            }
            _ => {}
        }
    }
    let text = lines.join("\n");
    let n = text.chars().count();
    if n > MAX_TRAJECTORY {
        let tail: String = text.chars().skip(n - MAX_TRAJECTORY).collect();
        format!("(earlier steps cut)\n{tail}")
    } else {
        text
    }
}

fn verdict_from(obj: &Map<String, Value>) -> Result<(String, String, Map<String, Value>), String> {
    let complete = obj
        .get("complete")
        .and_then(Value::as_str)
        .map(|c| c.trim().to_lowercase())
        .ok_or("the answer needs \"complete\": \"yes\", \"no\" or \"unsure\"")?;
    if !matches!(complete.as_str(), "yes" | "no" | "unsure") {
        return Err(format!(
            "\"complete\" is {complete:?}; it must be \"yes\", \"no\" or \"unsure\""
        ));
    }
    let reason = obj
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let sub = sub_scores(obj.get("sub_scores"));
    Ok((complete, reason, sub))
}

/// The sub-goals' judgements: an object keyed by sub-goal (as the prompt shows it), or the
/// list of `{"sub_goal", "score"}` the schema asks for (`evaluation_schema`).
fn sub_scores(value: Option<&Value>) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| {
                let goal = item.get("sub_goal")?.as_str()?;
                Some((goal.to_string(), item.get("score")?.clone()))
            })
            .collect(),
        _ => Map::new(),
    }
}

/// Ask the model to judge a task from its instruction and trajectory text (see
/// [`trajectory_text`]). A bad answer is sent back with the error, up to two times.
pub async fn judge(
    llm: &dyn LlmClient,
    instruction: &str,
    trajectory: &str,
) -> Result<LlmVerdict, BatchError> {
    let user = format!(
        "Task: {instruction}\n\nWhat the agent did:\n{trajectory}\n\nAnswer with one JSON object."
    );
    let mut messages = vec![
        ChatMessage::text(MessageRole::System, EVAL_SYSTEM),
        ChatMessage::text(MessageRole::User, user),
    ];
    let (mut calls, mut pt, mut ct) = (0u64, 0u64, 0u64);
    let mut last_error = String::new();
    for _ in 0..=RETRIES {
        let request = ChatRequest {
            agent: EVAL_AGENT.into(),
            messages: messages.clone(),
            json_mode: true,
            response_schema: Some(ufo_core::response::evaluation_schema()),
            max_tokens: None,
        };
        let response = llm
            .complete(&request)
            .await
            .map_err(|e| BatchError::Metric {
                func: "llm".into(),
                message: format!("model call failed: {e}"),
            })?;
        calls += 1;
        pt += response.usage.prompt_tokens;
        ct += response.usage.completion_tokens;
        match ufo_core::parse::parse_object(&response.text).and_then(|o| verdict_from(&o)) {
            Ok((complete, reason, sub_scores)) => {
                return Ok(LlmVerdict {
                    complete,
                    reason,
                    sub_scores,
                    calls,
                    prompt_tokens: pt,
                    completion_tokens: ct,
                })
            }
            Err(e) => {
                last_error = e.clone();
                messages.push(ChatMessage::text(MessageRole::Assistant, response.text));
                messages.push(ChatMessage::text(
                    MessageRole::User,
                    format!("Your answer is invalid: {e}. Answer again with one JSON object."),
                ));
            }
        }
    }
    Err(BatchError::Metric {
        func: "llm".into(),
        message: format!(
            "no valid verdict after {} answers: {last_error}",
            RETRIES + 1
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use async_trait::async_trait;
    use ufo_core::ports::{ChatResponse, LlmError, Usage};

    use super::*;

    struct Fake(Mutex<VecDeque<String>>, Mutex<Vec<String>>);

    #[async_trait]
    impl LlmClient for Fake {
        async fn complete(&self, r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.1.lock().unwrap().push(r.prompt_text());
            match self.0.lock().unwrap().pop_front() {
                Some(text) => Ok(ChatResponse {
                    text,
                    usage: Usage {
                        prompt_tokens: 10,
                        completion_tokens: 5,
                    },
                }),
                None => Err(LlmError::Fatal("no more answers".into())),
            }
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    fn fake(answers: &[&str]) -> Fake {
        Fake(
            Mutex::new(answers.iter().map(|s| s.to_string()).collect()),
            Mutex::default(),
        )
    }

    #[test]
    fn the_trajectory_text_has_one_line_per_step() {
        let events = r#"{"type":"session_start","request":"r"}
{"type":"step","seq":0,"agent":"HostAgent","state":"CONTINUE","status":"ASSIGN","subtask":"add","action":{"bash":""}}
{"type":"step","seq":1,"agent":"AppAgent/Calc","state":"CONTINUE","status":"FINISH","result":"42"}
not json
{"type":"session_end","status":"FINISH","reason":"finish"}"#;
        let t = trajectory_text(events);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(
            t.contains("AppAgent/Calc CONTINUE -> FINISH | result: 42"),
            "{t}"
        );
        assert!(t.ends_with("session ended FINISH (finish)"), "{t}");
    }

    /// A schema-constrained answer (sub-scores as a list) validates against the schema and
    /// reads as the object form does; what the schema cannot leave out is what is required.
    #[test]
    fn a_schema_constrained_verdict_validates_and_parses() {
        let schema = ufo_core::response::evaluation_schema();
        let answer = serde_json::json!({"reason": "42 shown",
            "sub_scores": [{"sub_goal": "sum", "score": "yes"}], "complete": "yes"});
        let validator = jsonschema::validator_for(&schema.schema).unwrap();
        assert!(validator.is_valid(&answer));
        let (complete, _, sub) = verdict_from(answer.as_object().unwrap()).unwrap();
        assert_eq!(
            (complete.as_str(), &sub["sum"]),
            ("yes", &Value::from("yes"))
        );
        assert_eq!(
            ufo_core::response::non_nullable_fields(&schema.schema),
            ["complete"]
        );
        let mut without = answer.clone();
        without.as_object_mut().unwrap().remove("complete");
        assert!(!validator.is_valid(&without));
        assert!(verdict_from(without.as_object().unwrap()).is_err());
    }

    #[tokio::test]
    async fn a_verdict_is_parsed_and_a_bad_answer_is_re_asked() {
        let m = fake(&[
            "not json",
            r#"{"reason": "the display shows 42", "sub_scores": {"sum": "yes"}, "complete": "Yes"}"#,
        ]);
        let v = judge(&m, "Compute 12 + 30", "step 0: ...").await.unwrap();
        assert_eq!(v.complete, "yes");
        assert_eq!(v.sub_scores["sum"], "yes");
        assert_eq!((v.calls, v.prompt_tokens, v.completion_tokens), (2, 20, 10));
        let prompts = m.1.lock().unwrap();
        assert!(prompts[0].contains("Task: Compute 12 + 30"));
        assert!(prompts[1].contains("Your answer is invalid"));
    }

    #[tokio::test]
    async fn no_valid_verdict_is_an_error() {
        let m = fake(&[r#"{"complete": "maybe"}"#, "{}", "x"]);
        assert!(judge(&m, "t", "").await.is_err());
        let m = fake(&[]);
        assert!(judge(&m, "t", "").await.is_err());
    }
}
