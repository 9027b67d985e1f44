//! Building the models of a session from specs: per-agent models, a backup, prices and
//! recording, all behind `ufo_core::LlmClient`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use serde::Deserialize;
use ufo_core::{ChatRequest, ChatResponse, LlmClient, LlmError, Usage};
use ufo_llm::{from_spec, BackupModel, LlmOptions, Price, Recording};

/// A price table entry (`[prices."openai:gpt-4o"]` in ufo.toml), per 1000 tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Price of 1000 prompt tokens.
    pub input_per_1k: f64,
    /// Price of 1000 completion tokens.
    pub output_per_1k: f64,
}

/// What the session's models are made of.
pub struct ModelPlan<'a> {
    /// The host's spec.
    pub host: &'a str,
    /// The AppAgents' spec.
    pub app: &'a str,
    /// A backup used when a primary stays unavailable.
    pub backup: Option<&'a str>,
    /// Prices by spec.
    pub prices: &'a HashMap<String, PriceEntry>,
    /// Record every call into this folder.
    pub record: Option<&'a Path>,
    /// How answers are asked for (`structured_output`, `[streaming]`).
    pub answers: Answers,
}

/// How every model of a session is asked for its answers, the host's and the AppAgents' as
/// well as the side models' (the experience summary, the LLM evaluation agent): the
/// configured `structured_output` and `[streaming]` (docs/configuration.md).
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// How the answers are constrained (`structured_output`).
    pub structured_output: ufo_core::StructuredOutput,
    /// Streamed answers (`[streaming]`).
    pub streaming: ufo_llm::StreamSettings,
}

impl Answers {
    /// The model options that ask so.
    fn options(&self) -> LlmOptions {
        let mut opts = LlmOptions::default();
        opts.settings.structured_output = self.structured_output;
        opts.settings.stream = self.streaming.clone();
        opts
    }
}

/// The models of a session: host and app share one client when their specs are equal (a
/// script is one conversation served to both).
pub struct Models {
    clients: Vec<Box<dyn LlmClient>>,
    app_index: usize,
}

impl Models {
    /// Build the clients.
    pub fn build(plan: &ModelPlan<'_>) -> Result<Self> {
        let mut clients = vec![build_one(plan.host, plan, "host")?];
        let app_index = if plan.app == plan.host {
            0
        } else {
            clients.push(build_one(plan.app, plan, "app")?);
            1
        };
        Ok(Self { clients, app_index })
    }

    /// The host's model.
    pub fn host(&self) -> &dyn LlmClient {
        self.clients[0].as_ref()
    }

    /// The AppAgents' model.
    pub fn app(&self) -> &dyn LlmClient {
        self.clients[self.app_index].as_ref()
    }
}

/// The model that summarises saved experience (`[knowledge] summary_model`): asked as
/// `answers` say and for at most [`ufo_core::experience::SUMMARY_MAX_TOKENS`], priced by
/// `prices`, its prompts redacted like the session's.
pub fn summary_model(
    spec: &str,
    prices: &HashMap<String, PriceEntry>,
    answers: &Answers,
) -> Result<Box<dyn LlmClient>> {
    side_model(spec, prices, summary_options(answers), "summary_model")
}

fn summary_options(answers: &Answers) -> LlmOptions {
    let mut opts = answers.options();
    opts.settings.max_tokens = Some(ufo_core::experience::SUMMARY_MAX_TOKENS);
    opts
}

/// A model asked outside a session (`ufo knowledge search --rerank model --llm SPEC`):
/// unpriced, its prompts redacted like a session's; `what` names its option in an error.
pub fn plain_model(spec: &str, what: &str) -> Result<Box<dyn LlmClient>> {
    side_model(spec, &HashMap::new(), Answers::default().options(), what)
}

/// The LLM evaluation agent's model (`ufo batch --eval-llm`): asked as `answers` say, priced
/// by `prices`, its prompts redacted like the session's.
pub fn eval_model(
    spec: &str,
    prices: &HashMap<String, PriceEntry>,
    answers: &Answers,
) -> Result<Box<dyn LlmClient>> {
    side_model(spec, prices, answers.options(), "--eval-llm")
}

/// A model besides the host's and the AppAgents': priced, redacted; `what` names its setting
/// in an error.
fn side_model(
    spec: &str,
    prices: &HashMap<String, PriceEntry>,
    opts: LlmOptions,
    what: &str,
) -> Result<Box<dyn LlmClient>> {
    let mut client = from_spec(spec, &opts).map_err(|e| anyhow!("{what} {spec}: {e}"))?;
    if let Some(p) = prices.get(spec) {
        client = Box::new(Priced {
            inner: client,
            price: Price::new(p.input_per_1k, p.output_per_1k),
        });
    }
    Ok(Box::new(Redacting { inner: client }))
}

fn build_one(spec: &str, plan: &ModelPlan<'_>, agent: &str) -> Result<Box<dyn LlmClient>> {
    let opts = plan.answers.options();
    let mut client = from_spec(spec, &opts).map_err(|e| anyhow!("--llm {spec}: {e}"))?;
    if let Some(backup) = plan.backup {
        let b = from_spec(backup, &opts).map_err(|e| anyhow!("backup_llm {backup}: {e}"))?;
        client = Box::new(BackupModel::new(client, b));
    }
    if let Some(p) = plan.prices.get(spec) {
        client = Box::new(Priced {
            inner: client,
            price: Price::new(p.input_per_1k, p.output_per_1k),
        });
    }
    if let Some(dir) = plan.record {
        // One folder per distinct model, so host and app recordings never interleave.
        let dir = if plan.app == plan.host {
            dir.to_path_buf()
        } else {
            dir.join(agent)
        };
        client = Box::new(
            Recording::new(client, &dir).map_err(|e| anyhow!("--record {}: {e}", dir.display()))?,
        );
    }
    // last, so the recording and every backend see the prompt without secrets
    Ok(Box::new(Redacting { inner: client }))
}

/// A model whose prompts never carry a known secret value: every text part is passed through
/// the process's redactor ([`ufo_core::secrets::redactor`]) before the call, whatever brought
/// the value into the agent's memory (a file a command printed, a tool's answer, screen text).
struct Redacting {
    inner: Box<dyn LlmClient>,
}

#[async_trait]
impl LlmClient for Redacting {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let redactor = ufo_core::secrets::redactor();
        if redactor.is_empty() {
            return self.inner.complete(request).await;
        }
        let mut clean = request.clone();
        for part in clean.messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
            if let ufo_core::ports::ContentPart::Text(t) = part {
                if let std::borrow::Cow::Owned(r) = redactor.redact(t) {
                    *t = r;
                }
            }
        }
        self.inner.complete(&clean).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.inner.cost(usage)
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }
}

/// A model with a price: reports the cost of each call to the engine.
struct Priced {
    inner: Box<dyn LlmClient>,
    price: Price,
}

#[async_trait]
impl LlmClient for Priced {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner.complete(request).await
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.price.cost(usage)
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::{json, Value};
    use ufo_core::StructuredOutput;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

    use super::*;

    /// Answers `text` as a chat completion, streamed when the request asks for a stream;
    /// keeps every request body.
    struct Server {
        text: String,
        bodies: Arc<Mutex<Vec<Value>>>,
    }

    impl Respond for Server {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let streamed = body["stream"] == true;
            if let Ok(mut b) = self.bodies.lock() {
                b.push(body);
            }
            let usage = json!({"prompt_tokens": 10, "completion_tokens": 5});
            if streamed {
                let chunk = json!({"choices": [{"delta": {"content": self.text}}]});
                let last = json!({"choices": [], "usage": usage});
                let sse = format!("data: {chunk}\n\ndata: {last}\n\ndata: [DONE]\n\n");
                ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream")
            } else {
                ResponseTemplate::new(200).set_body_json(json!({
                    "choices": [{"message": {"role": "assistant", "content": self.text}}],
                    "usage": usage,
                }))
            }
        }
    }

    /// The first request body a side model sent, built by `build` with `answers`, asked by
    /// `ask`, against a server answering `text`.
    async fn first_body<F, Fut>(answers: &Answers, summary: bool, text: &str, ask: F) -> Value
    where
        F: FnOnce(Box<dyn LlmClient>) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let server = MockServer::start().await;
        let bodies = Arc::new(Mutex::new(Vec::new()));
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(Server {
                text: text.into(),
                bodies: bodies.clone(),
            })
            .mount(&server)
            .await;
        let mut opts = if summary {
            summary_options(answers)
        } else {
            answers.options()
        };
        opts.env = ufo_llm::Env::from_pairs(Vec::<(&str, &str)>::new());
        opts.base_url = Some(format!("{}/v1", server.uri()));
        let model = side_model("openai:m", &HashMap::new(), opts, "test").expect("a model");
        ask(model).await;
        let seen = bodies.lock().map(|b| b.clone()).unwrap_or_default();
        seen.first().cloned().expect("a request")
    }

    fn answers(mode: StructuredOutput, stream: bool) -> Answers {
        Answers {
            structured_output: mode,
            streaming: ufo_llm::StreamSettings {
                enabled: stream,
                ..ufo_llm::StreamSettings::default()
            },
        }
    }

    /// The experience summary and the evaluation agent are asked as the session's models are:
    /// the configured `structured_output` decides their `response_format`, `[streaming]`
    /// whether they stream (they used to get the library's defaults whatever was configured).
    #[tokio::test]
    async fn side_models_are_asked_as_configured() {
        use StructuredOutput::{Auto, Json, Off, Schema};
        for (mode, stream) in [
            (Schema, true),
            (Schema, false),
            (Auto, true),
            (Json, true),
            (Off, false),
        ] {
            let a = answers(mode, stream);
            let summary = first_body(&a, true, r#"{"Summary": "Typed it."}"#, |m| async move {
                let r = m
                    .complete(&ufo_core::experience::summary_request("Request: type"))
                    .await
                    .expect("an answer");
                assert_eq!(
                    ufo_core::experience::kept_summary(&r.text).as_deref(),
                    Ok("Typed it.")
                );
            })
            .await;
            let verdict = r#"{"reason": "r", "sub_scores": [], "complete": "yes"}"#;
            let eval = first_body(&a, false, verdict, |m| async move {
                let v = ufo_batch::llm_eval::judge(m.as_ref(), "type x", "1. typed x")
                    .await
                    .expect("a verdict");
                assert_eq!((v.complete.as_str(), v.calls), ("yes", 1));
            })
            .await;
            let case = format!("{mode:?}, stream {stream}");
            for body in [&summary, &eval] {
                assert_eq!(body["stream"] == true, stream, "{case}: {body}");
            }
            assert_eq!(summary["max_tokens"], 200, "{case}");
            assert!(eval.get("max_tokens").is_none(), "{case}");
            let rf = |b: &Value| {
                let f = &b["response_format"];
                (
                    f["type"].as_str().map(str::to_string),
                    f["json_schema"]["name"].as_str().map(str::to_string),
                )
            };
            let name = |s: &str| (Some("json_schema".into()), Some(s.to_string()));
            match mode {
                Schema | Auto => {
                    assert_eq!(rf(&summary), name("experience_summary"), "{case}");
                    assert_eq!(rf(&eval), name("evaluation_response"), "{case}");
                }
                Json => {
                    // the summary is text unless held to its schema: no JSON mode for it
                    assert_eq!(rf(&summary), (None, None), "{case}");
                    assert_eq!(rf(&eval), (Some("json_object".into()), None), "{case}");
                }
                Off => {
                    assert_eq!(rf(&summary), (None, None), "{case}");
                    assert_eq!(rf(&eval), (None, None), "{case}");
                }
            }
        }
    }
}
