//! The scripted model (`--llm script:FILE`): answers read from a JSON Lines file, served in
//! order, with checks that each call comes from the expected agent and carries the expected
//! prompt text.
//!
//! # Format
//!
//! One JSON object per line; blank lines are ignored (but still counted for line numbers):
//!
//! ```text
//! {"agent": "host", "response": {"Observation": "...", "Thought": "...", "Status": "ASSIGN"}, "expect": ["Writer"]}
//! {"agent": "app", "response": "not json at all", "expect": []}
//! ```
//!
//! - `agent` (required): the agent kind that must make this call, compared with
//!   [`ChatRequest::agent`]. `"host"` and `"app"` are the built-in kinds; any other non-empty
//!   name is accepted for future kinds. The comparison ignores case and a trailing `Agent`,
//!   so `"HostAgent"` means `"host"`.
//! - `response` (required): an object is sent as its compact JSON text (keys in the order
//!   written); a string is sent as-is, so malformed model output can be scripted.
//! - `expect` (optional): substrings that must all occur in the prompt
//!   ([`ChatRequest::prompt_text`]). A single string is accepted as a one-element list.
//!
//! Other keys are ignored (use e.g. `"comment"` to annotate a line).
//!
//! # Using it in tests
//!
//! ```
//! use ufo_core::ports::{ChatMessage, ChatRequest, LlmClient, MessageRole};
//! use ufo_llm::ScriptedModel;
//!
//! # tokio_test_block(async {
//! let model = ScriptedModel::from_jsonl_str(
//!     "inline",
//!     r#"{"agent": "host", "response": {"Status": "FINISH"}, "expect": ["hello"]}"#,
//! ).unwrap();
//! let request = ChatRequest {
//!     agent: "host".into(),
//!     messages: vec![ChatMessage::text(MessageRole::User, "hello world")],
//!     json_mode: true,
//!     response_schema: None,
//!     max_tokens: None,
//! };
//! let answer = model.complete(&request).await.unwrap();
//! assert_eq!(answer.text, r#"{"Status":"FINISH"}"#);
//! assert!(model.is_exhausted());
//! # });
//! # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;
use ufo_core::parse::compact_json;
use ufo_core::ports::{ChatRequest, ChatResponse, LlmClient, LlmError, Usage};

/// What a script line looks like, quoted in error messages.
const LINE_SHAPE: &str = r#"{"agent": "host", "response": {...}, "expect": ["..."]}"#;

/// Errors while loading a script.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {source}; check the path given to --llm script:FILE")]
    Read {
        /// The path given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not JSON.
    #[error("script {script} line {line}: not valid JSON ({source}); check quotes, commas and braces; each line must be one JSON object like {LINE_SHAPE}")]
    Json {
        /// The script's name (its path).
        script: String,
        /// 1-based line number in the file.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A line is not a valid script entry.
    #[error("script {script} line {line}: {problem}; each line must be one JSON object like {LINE_SHAPE}")]
    Line {
        /// The script's name (its path).
        script: String,
        /// 1-based line number in the file.
        line: usize,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// 1-based line number in the file.
    line: usize,
    /// The agent kind as written in the script.
    agent: String,
    /// The text sent back.
    text: String,
    /// Substrings the prompt must contain.
    expect: Vec<String>,
}

/// A model that answers from a script; see the [module documentation](self).
///
/// Calls are served in order. A call from the wrong agent kind, a prompt missing an `expect`
/// substring, or a call after the last line fails with [`LlmError::Fatal`] naming the script
/// line. A failed call does not advance the script: every later call fails the same way (the
/// run stops at the first failure anyway).
///
/// Token usage is an **estimate**: `ceil(chars / 4)` of the prompt text and of the response
/// text.
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    entries: Vec<Entry>,
    next: Mutex<usize>,
}

impl ScriptedModel {
    /// Load a script from a JSON Lines file. The path is used as the script's name in
    /// messages and in [`LlmClient::describe`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_jsonl_str(path.display().to_string(), &text)
    }

    /// Parse a script from JSON Lines text; `name` stands for the file in messages.
    pub fn from_jsonl_str(name: impl Into<String>, text: &str) -> Result<Self, ScriptError> {
        let name = name.into();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if raw.trim().is_empty() {
                continue;
            }
            let value: Value =
                serde_json::from_str(raw.trim()).map_err(|source| ScriptError::Json {
                    script: name.clone(),
                    line,
                    source,
                })?;
            let entry = parse_line(value, raw, line).map_err(|problem| ScriptError::Line {
                script: name.clone(),
                line,
                problem,
            })?;
            entries.push(entry);
        }
        Ok(Self {
            name,
            entries,
            next: Mutex::new(0),
        })
    }

    /// The script's name (the path it was loaded from).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of answers in the script (blank lines not counted).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the script has no answers at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of answers served so far.
    pub fn served(&self) -> usize {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether every answer has been served (useful at the end of a test).
    pub fn is_exhausted(&self) -> bool {
        self.served() >= self.entries.len()
    }

    /// Check `request` against entry `index` and produce its answer.
    fn answer(&self, index: usize, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let prompt = request.prompt_text();
        let Some(entry) = self.entries.get(index) else {
            return Err(LlmError::Fatal(format!(
                "script {} has {} lines; call {} from the {} agent has no answer \
                 (add a line for it to the script; prompt begins: {})",
                self.name,
                self.entries.len(),
                index + 1,
                request.agent,
                excerpt(&prompt),
            )));
        };
        if normalize_kind(&entry.agent) != normalize_kind(&request.agent) {
            return Err(LlmError::Fatal(format!(
                "script {} line {}: expected a call from the {} agent, but call {} came from \
                 the {} agent (prompt begins: {})",
                self.name,
                entry.line,
                entry.agent,
                index + 1,
                request.agent,
                excerpt(&prompt),
            )));
        }
        if let Some(missing) = entry.expect.iter().find(|s| !prompt.contains(s.as_str())) {
            return Err(LlmError::Fatal(format!(
                "script {} line {}: the {} agent's prompt (call {}) does not contain the \
                 expected text {:?} (prompt: {})",
                self.name,
                entry.line,
                request.agent,
                index + 1,
                missing,
                excerpt(&prompt),
            )));
        }
        Ok(ChatResponse {
            text: entry.text.clone(),
            usage: Usage {
                prompt_tokens: estimate_tokens(&prompt),
                completion_tokens: estimate_tokens(&entry.text),
            },
        })
    }
}

#[async_trait]
impl LlmClient for ScriptedModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let response = self.answer(*next, request)?;
        *next += 1;
        Ok(response)
    }

    fn describe(&self) -> String {
        format!("script:{}", self.name)
    }
}

/// Estimated token count of `text`: `ceil(chars / 4)`. An estimate, not a tokenizer.
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = text.chars().count() as u64;
    chars.div_ceil(4)
}

/// Agent kinds compare case-insensitively, with a trailing "agent" ignored
/// (`HostAgent` == `host`).
fn normalize_kind(kind: &str) -> String {
    let lower = kind.trim().to_lowercase();
    match lower.strip_suffix("agent") {
        Some(stem) if !stem.is_empty() => stem.trim_end_matches(['_', '-', ' ']).to_string(),
        _ => lower,
    }
}

/// A short one-line excerpt of a prompt: its start and its end when it is long.
fn excerpt(prompt: &str) -> String {
    const HEAD: usize = 160;
    const TAIL: usize = 120;
    let flat: String = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = flat.chars().count();
    if count <= HEAD + TAIL + 5 {
        return format!("{flat:?}");
    }
    let head: String = flat.chars().take(HEAD).collect();
    let tail: String = flat.chars().skip(count - TAIL).collect();
    format!("{head:?} ... {tail:?}")
}

/// Check one line's JSON (`raw` is its text); the error says what to fix. It is a message,
/// not an error type: it names a field the author wrote wrongly, with no cause below it.
fn parse_line(value: Value, raw: &str, line: usize) -> Result<Entry, String> {
    let Value::Object(map) = value else {
        return Err(format!("expected a JSON object, found {}", kind_of(&value)));
    };
    let agent = match map.get("agent") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) => {
            return Err(r#""agent" is empty; write "host", "app" or another agent kind"#.into())
        }
        Some(other) => {
            return Err(format!(
                r#""agent" must be a string such as "host" or "app", found {}"#,
                kind_of(other)
            ))
        }
        None => return Err(r#"missing "agent"; add "agent": "host" or "agent": "app""#.into()),
    };
    let text = match map.get("response") {
        Some(Value::String(s)) => s.clone(),
        Some(obj @ Value::Object(_)) => raw_response(raw).unwrap_or_else(|| obj.to_string()),
        Some(other) => {
            return Err(format!(
                r#""response" must be a JSON object (sent as its JSON text) or a string (sent as-is), found {}"#,
                kind_of(other)
            ))
        }
        None => {
            return Err(
                r#"missing "response"; add the model's answer as an object or a string"#.into(),
            )
        }
    };
    let expect = match map.get("expect") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    r#""expect" item {} must be a string, found {}"#,
                    i + 1,
                    kind_of(other)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                r#""expect" must be a list of strings such as ["Writer"], found {}"#,
                kind_of(other)
            ))
        }
    };
    Ok(Entry {
        line,
        agent,
        text,
        expect,
    })
}

/// The `response` object of a line as written (keys in the author's order), compacted.
fn raw_response(raw: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        response: &'a serde_json::value::RawValue,
    }
    let line: Line<'_> = serde_json::from_str(raw.trim()).ok()?;
    Some(compact_json(line.response.get()))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ufo_core::ports::{ChatMessage, ContentPart, MessageRole};

    fn request(agent: &str, prompt: &str) -> ChatRequest {
        ChatRequest {
            agent: agent.into(),
            messages: vec![
                ChatMessage::text(MessageRole::System, "You are an agent."),
                ChatMessage::text(MessageRole::User, prompt),
            ],
            json_mode: true,
            response_schema: None,
            max_tokens: None,
        }
    }

    fn fatal(result: Result<ChatResponse, LlmError>) -> String {
        match result {
            Err(LlmError::Fatal(msg)) => msg,
            other => panic!("expected a fatal error, got {other:?}"),
        }
    }

    const TWO: &str = r#"{"agent": "host", "response": {"Status": "ASSIGN", "Thought": "go"}, "expect": ["Writer", "report"]}

{"agent": "app", "response": "```json\n{oops", "expect": []}
"#;

    #[tokio::test]
    async fn serves_lines_in_order_object_compact_string_as_is() {
        let m = ScriptedModel::from_jsonl_str("two.jsonl", TWO).unwrap();
        assert_eq!(m.len(), 2);
        assert!(!m.is_empty());
        let a = m
            .complete(&request("host", "windows: report - Writer"))
            .await
            .unwrap();
        assert_eq!(a.text, r#"{"Status":"ASSIGN","Thought":"go"}"#);
        assert_eq!(m.served(), 1);
        let b = m.complete(&request("app", "anything")).await.unwrap();
        assert_eq!(b.text, "```json\n{oops");
        assert!(m.is_exhausted());
    }

    #[test]
    fn object_response_keeps_the_authors_key_order() {
        let m = ScriptedModel::from_jsonl_str(
            "s",
            r#"{"agent":"host","response":{"Thought": "a \"q\" b", "Status": "FINISH", "Args": {"z": 1, "a": "x y"}}}"#,
        )
        .unwrap();
        assert_eq!(
            m.entries[0].text,
            r#"{"Thought":"a \"q\" b","Status":"FINISH","Args":{"z":1,"a":"x y"}}"#
        );
    }

    #[tokio::test]
    async fn object_response_is_compact_json() {
        let m = ScriptedModel::from_jsonl_str(
            "s",
            r#"{"agent":"host","response":{ "Status" : "FINISH", "Args": {"a": [1, 2]} }}"#,
        )
        .unwrap();
        let a = m.complete(&request("host", "x")).await.unwrap();
        assert!(!a.text.contains(' '), "{}", a.text);
        let back: Value = serde_json::from_str(&a.text).unwrap();
        assert_eq!(back["Args"]["a"][1], 2);
    }

    #[tokio::test]
    async fn wrong_agent_is_fatal_and_names_line_and_agents() {
        let m = ScriptedModel::from_jsonl_str("two.jsonl", TWO).unwrap();
        let msg = fatal(m.complete(&request("app", "report - Writer")).await);
        assert!(msg.contains("two.jsonl"), "{msg}");
        assert!(msg.contains("line 1"), "{msg}");
        assert!(msg.contains("host"), "{msg}");
        assert!(msg.contains("app agent"), "{msg}");
        assert!(msg.contains("report - Writer"), "{msg}");
        // Nothing consumed: the same call fails the same way, and the right call still works.
        assert_eq!(m.served(), 0);
        let again = fatal(m.complete(&request("app", "report - Writer")).await);
        assert_eq!(msg, again);
        assert!(m.complete(&request("host", "Writer report")).await.is_ok());
    }

    #[tokio::test]
    async fn missing_expect_is_fatal_and_names_substring_and_excerpt() {
        let m = ScriptedModel::from_jsonl_str("two.jsonl", TWO).unwrap();
        let msg = fatal(m.complete(&request("host", "only Writer here")).await);
        assert!(msg.contains("line 1"), "{msg}");
        assert!(msg.contains("\"report\""), "{msg}");
        assert!(msg.contains("only Writer here"), "{msg}");
        assert_eq!(m.served(), 0);
    }

    #[tokio::test]
    async fn line_numbers_count_blank_lines() {
        let m = ScriptedModel::from_jsonl_str("two.jsonl", TWO).unwrap();
        m.complete(&request("host", "Writer report")).await.unwrap();
        let msg = fatal(m.complete(&request("host", "x")).await);
        assert!(msg.contains("line 3"), "{msg}");
    }

    #[tokio::test]
    async fn running_out_is_fatal() {
        let m = ScriptedModel::from_jsonl_str(
            "one.jsonl",
            r#"{"agent": "host", "response": {"Status": "CONTINUE"}}"#,
        )
        .unwrap();
        m.complete(&request("host", "a")).await.unwrap();
        let msg = fatal(m.complete(&request("host", "b")).await);
        assert!(
            msg.contains("script one.jsonl has 1 lines; call 2 from the host agent has no answer"),
            "{msg}"
        );
        let empty = ScriptedModel::from_jsonl_str("empty.jsonl", "\n\n").unwrap();
        assert!(empty.is_empty());
        let msg = fatal(empty.complete(&request("app", "b")).await);
        assert!(
            msg.contains("has 0 lines; call 1 from the app agent has no answer"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn other_agent_kinds_and_aliases() {
        let m = ScriptedModel::from_jsonl_str(
            "k",
            "{\"agent\": \"operator\", \"response\": \"a\"}\n\
             {\"agent\": \"HostAgent\", \"response\": \"b\"}\n\
             {\"agent\": \"App\", \"response\": \"c\"}\n",
        )
        .unwrap();
        assert_eq!(
            m.complete(&request("operator", "")).await.unwrap().text,
            "a"
        );
        assert_eq!(m.complete(&request("host", "")).await.unwrap().text, "b");
        assert_eq!(m.complete(&request("app", "")).await.unwrap().text, "c");
        let m = ScriptedModel::from_jsonl_str("k", r#"{"agent": "operator", "response": "a"}"#)
            .unwrap();
        let msg = fatal(m.complete(&request("app", "")).await);
        assert!(msg.contains("operator"), "{msg}");
    }

    #[tokio::test]
    async fn expect_searches_all_text_of_all_messages_not_images() {
        let m = ScriptedModel::from_jsonl_str(
            "s",
            r#"{"agent": "app", "response": "ok", "expect": ["You are an agent", "second part"]}"#,
        )
        .unwrap();
        let mut req = request("app", "first part");
        req.messages[1].content.push(ContentPart::Image {
            png: std::sync::Arc::new(vec![1, 2, 3]),
            caption: "shot".into(),
        });
        req.messages[1]
            .content
            .push(ContentPart::Text("second part".into()));
        assert_eq!(m.complete(&req).await.unwrap().text, "ok");
    }

    #[tokio::test]
    async fn usage_is_estimated_from_chars() {
        let m = ScriptedModel::from_jsonl_str("s", r#"{"agent": "host", "response": "12345"}"#)
            .unwrap();
        let req = ChatRequest {
            agent: "host".into(),
            messages: vec![ChatMessage::text(MessageRole::User, "abcdefgh")],
            json_mode: false,
            response_schema: None,
            max_tokens: None,
        };
        let a = m.complete(&req).await.unwrap();
        assert_eq!(a.usage.prompt_tokens, 2); // 8 chars
        assert_eq!(a.usage.completion_tokens, 2); // 5 chars, rounded up
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("é"), 1);
    }

    #[test]
    fn describe_names_the_path() {
        let m = ScriptedModel::from_jsonl_str("runs/a.jsonl", "").unwrap();
        assert_eq!(m.describe(), "script:runs/a.jsonl");
        assert_eq!(m.name(), "runs/a.jsonl");
    }

    #[test]
    fn load_reads_a_file_and_reports_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            "\u{feff}{\"agent\":\"host\",\"response\":\"x\"}\r\n\r\n",
        )
        .unwrap();
        let m = ScriptedModel::load(&path).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m.describe(), format!("script:{}", path.display()));

        let err = ScriptedModel::load(dir.path().join("nope.jsonl")).unwrap_err();
        assert!(matches!(err, ScriptError::Read { .. }));
        let msg = err.to_string();
        assert!(msg.contains("nope.jsonl"), "{msg}");
        assert!(msg.contains("--llm script:FILE"), "{msg}");
    }

    #[test]
    fn bad_lines_name_file_line_and_fix() {
        let cases: &[(&str, &str)] = &[
            ("{not json", "not valid JSON"),
            ("[1, 2]", "expected a JSON object, found an array"),
            (r#"{"response": "x"}"#, r#"missing "agent""#),
            (r#"{"agent": "", "response": "x"}"#, r#""agent" is empty"#),
            (
                r#"{"agent": 3, "response": "x"}"#,
                r#""agent" must be a string"#,
            ),
            (r#"{"agent": "host"}"#, r#"missing "response""#),
            (
                r#"{"agent": "host", "response": 42}"#,
                r#""response" must be a JSON object"#,
            ),
            (
                r#"{"agent": "host", "response": "x", "expect": 1}"#,
                r#""expect" must be a list of strings"#,
            ),
            (
                r#"{"agent": "host", "response": "x", "expect": ["a", 2]}"#,
                r#""expect" item 2 must be a string"#,
            ),
        ];
        for (line, want) in cases {
            let text = format!("{{\"agent\": \"host\", \"response\": \"ok\"}}\n\n{line}\n");
            let err = ScriptedModel::from_jsonl_str("bad.jsonl", &text).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(
                    err,
                    ScriptError::Line { line: 3, .. } | ScriptError::Json { line: 3, .. }
                ),
                "{line}: {msg}"
            );
            assert!(msg.contains("bad.jsonl line 3"), "{line}: {msg}");
            assert!(msg.contains(want), "{line}: {msg}");
            assert!(msg.contains("each line must be one JSON object"), "{msg}");
        }
    }

    #[test]
    fn expect_accepts_single_string_and_null() {
        let m = ScriptedModel::from_jsonl_str(
            "s",
            "{\"agent\": \"host\", \"response\": \"x\", \"expect\": \"Writer\"}\n\
             {\"agent\": \"host\", \"response\": \"x\", \"expect\": null, \"comment\": \"hi\"}",
        )
        .unwrap();
        assert_eq!(m.entries[0].expect, vec!["Writer".to_string()]);
        assert!(m.entries[1].expect.is_empty());
    }

    #[test]
    fn excerpt_is_short_and_one_line() {
        let long = format!("{}\n\nmiddle\n{}", "a".repeat(1000), "z".repeat(1000));
        let e = excerpt(&long);
        assert!(e.len() < 400, "{}", e.len());
        assert!(!e.contains('\n'));
        assert!(e.contains(" ... "));
        assert_eq!(excerpt("a\n b"), "\"a b\"");
    }

    #[tokio::test]
    async fn concurrent_calls_each_get_one_line() {
        let lines: String = (0..20)
            .map(|i| format!("{{\"agent\": \"host\", \"response\": \"{i}\"}}\n"))
            .collect();
        let m = std::sync::Arc::new(ScriptedModel::from_jsonl_str("c", &lines).unwrap());
        let mut seen = Vec::new();
        let mut handles = Vec::new();
        for _ in 0..20 {
            let m = m.clone();
            handles.push(tokio::spawn(async move {
                m.complete(&request("host", "")).await.unwrap().text
            }));
        }
        for h in handles {
            seen.push(h.await.unwrap().parse::<u32>().unwrap());
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        assert!(m.is_exhausted());
    }
}
