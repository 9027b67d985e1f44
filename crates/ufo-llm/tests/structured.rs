//! `structured_output`: the exact request body each provider gets in each mode, and what a
//! server's refusals make `auto` (and any mode, for images) fall back to. Every server here is
//! a real HTTP listener on a loopback port ([`common::LocalServer`]).
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    completion, error_body, image_request, quick_settings, text_request, LocalServer, Reply,
};
use serde_json::{json, Value};
use ufo_core::ports::{ChatRequest, LlmClient, LlmError};
use ufo_core::response::host_schema;
use ufo_core::StructuredOutput;
use ufo_llm::{AnthropicClient, AnthropicConfig, OpenAiClient, OpenAiConfig};

fn openai(url: &str, mode: StructuredOutput) -> OpenAiClient {
    let mut settings = quick_settings();
    settings.structured_output = mode;
    OpenAiClient::new(OpenAiConfig {
        model: "local-model".into(),
        base_url: format!("{url}/v1"),
        api_key: None,
        key_hint: "UFO_LLM_API_KEY".into(),
        settings,
    })
    .unwrap()
}

fn anthropic(url: &str, mode: StructuredOutput) -> AnthropicClient {
    let mut settings = quick_settings();
    settings.structured_output = mode;
    AnthropicClient::new(AnthropicConfig {
        model: "claude-test".into(),
        base_url: url.into(),
        api_key: None,
        key_hint: "ANTHROPIC_API_KEY".into(),
        settings,
    })
    .unwrap()
}

/// A host request carrying the host's response schema.
fn host_request() -> ChatRequest {
    let mut r = text_request("Request: open the calculator");
    r.response_schema = Some(host_schema());
    r
}

const ANSWER: &str = r#"{"Observation":"o","Thought":"t","Status":"FINISH"}"#;

fn ok_server() -> impl Fn(&str) -> Reply + Send + Sync + 'static {
    |_| Reply::json(200, completion(ANSWER))
}

#[tokio::test]
async fn openai_compatible_bodies_in_each_mode() {
    let schema = host_schema();
    let strict = json!({"type": "json_schema", "json_schema": {
        "name": "host_response", "strict": true, "schema": schema.schema}});
    let cases = [
        (StructuredOutput::Auto, Some(strict.clone())),
        (StructuredOutput::Schema, Some(strict)),
        (StructuredOutput::Json, Some(json!({"type": "json_object"}))),
        (StructuredOutput::Off, None),
    ];
    for (mode, expected) in cases {
        let server = LocalServer::start(ok_server()).await;
        let client = openai(&server.url, mode);
        let answer = client.complete(&host_request()).await.unwrap();
        assert_eq!(answer.text, ANSWER);
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 1, "{mode:?}");
        assert_eq!(
            bodies[0].get("response_format"),
            expected.as_ref(),
            "{mode:?}"
        );
        assert_eq!(bodies[0]["model"], "local-model");
        // a request without a schema asks for JSON mode at most, as before
        let plain = client.complete(&text_request("x")).await.unwrap();
        assert_eq!(plain.text, ANSWER);
        let format = server.bodies()[1].get("response_format").cloned();
        let expected = (mode != StructuredOutput::Off).then(|| json!({"type": "json_object"}));
        assert_eq!(format, expected, "{mode:?} without a schema");
    }
}

/// The fields of the schema go on the wire in the prompt's order: Observation and Thought
/// before the action and the Status (a constrained model writes them in that order).
#[tokio::test]
async fn the_schema_is_sent_with_the_answer_fields_in_the_prompts_order() {
    let server = LocalServer::start(ok_server()).await;
    openai(&server.url, StructuredOutput::Schema)
        .complete(&host_request())
        .await
        .unwrap();
    let raw = &server.raw_bodies()[0];
    let at = |field: &str| raw.find(&format!("\"{field}\":{{")).unwrap_or(usize::MAX);
    assert!(at("Observation") < at("Thought"), "{raw}");
    assert!(at("Thought") < at("ControlLabel"), "{raw}");
    assert!(at("ControlLabel") < at("Status"), "{raw}");
    let required = raw.find("\"required\":[\"Observation\",\"Thought\",\"Current Sub-Task\"");
    assert!(required.is_some(), "{raw}");
}

#[tokio::test]
async fn anthropic_bodies_in_each_mode_and_the_answer_from_the_tool_call() {
    let schema = host_schema();
    for mode in StructuredOutput::ALL {
        let server = LocalServer::start(|_| {
            Reply::json(
                200,
                json!({"type": "message", "content": [{"type": "tool_use", "id": "t1",
                    "name": "host_response", "input": {"Status": "FINISH", "Thought": "t",
                    "Observation": "o"}}], "usage": {"input_tokens": 9, "output_tokens": 4}}),
            )
        })
        .await;
        let answer = anthropic(&server.url, mode)
            .complete(&host_request())
            .await
            .unwrap();
        // the tool's input is the answer, fields in the prompt's order
        assert_eq!(answer.text, ANSWER, "{mode:?}");
        let body = &server.bodies()[0];
        let forced = matches!(mode, StructuredOutput::Auto | StructuredOutput::Schema);
        if forced {
            assert_eq!(
                body["tools"],
                json!([{"name": "host_response",
                    "description": body["tools"][0]["description"],
                    "input_schema": schema.schema}]),
                "{mode:?}"
            );
            assert!(body["tools"][0]["description"].as_str().unwrap().len() > 10);
            assert_eq!(
                body["tool_choice"],
                json!({"type": "tool", "name": "host_response"})
            );
        } else {
            assert!(body.get("tools").is_none(), "{mode:?}: {body}");
            assert!(body.get("tool_choice").is_none(), "{mode:?}");
        }
        assert!(
            body.get("response_format").is_none(),
            "no such field on Anthropic"
        );
    }
}

/// `auto` on a server that takes neither a schema nor JSON mode: schema refused, JSON mode
/// refused, then the prompt alone; each said once, and later calls go straight to it.
#[tokio::test]
async fn auto_falls_back_to_json_then_to_plain_text_and_remembers() {
    let server = LocalServer::start(|body: &str| {
        if body.contains("json_schema") {
            Reply::json(
                400,
                error_body("response_format type json_schema is not supported"),
            )
        } else if body.contains("json_object") {
            Reply::json(
                400,
                error_body("'response_format' json_object: unknown value"),
            )
        } else {
            Reply::json(200, completion(ANSWER))
        }
    })
    .await;
    let client = openai(&server.url, StructuredOutput::Auto);
    let answer = client.complete(&host_request()).await.unwrap();
    assert_eq!(answer.text, ANSWER);
    let formats: Vec<Option<Value>> = server
        .bodies()
        .iter()
        .map(|b| b.pointer("/response_format/type").cloned())
        .collect();
    assert_eq!(
        formats,
        [
            Some(json!("json_schema")),
            Some(json!("json_object")),
            Some(json!("json_object")),
            None
        ]
    );
    let bodies = server.bodies();
    assert!(
        bodies[1]["response_format"]["schema"].is_object(),
        "the other form"
    );
    assert!(
        bodies[2]["response_format"].get("schema").is_none(),
        "JSON mode"
    );
    let notes = client.take_notes();
    assert_eq!(
        notes
            .iter()
            .map(|n| (n.about.as_str(), n.now.as_str()))
            .collect::<Vec<_>>(),
        [
            ("structured_output", "schema"),
            ("structured_output", "json"),
            ("structured_output", "off")
        ]
    );
    assert!(
        notes[0].message.contains("json_schema is not supported"),
        "{notes:?}"
    );
    assert!(client.take_notes().is_empty(), "said once");
    client.complete(&host_request()).await.unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 5, "one request once the server is known");
    assert!(bodies[4].get("response_format").is_none());
    assert!(client.take_notes().is_empty());
}

/// llama-cpp-python's server takes the schema only as `json_object` with a `schema`, and
/// answers `json_schema` with a 500 quoting its validation error: not retried, and the
/// schema goes in the other form, in `schema` mode as in `auto`.
#[tokio::test]
async fn a_server_that_takes_the_schema_as_json_object_gets_it_so() {
    // the error in words, or as FastAPI's list of errors
    let messages = [
        "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input \
         should be 'text' or 'json_object'",
        "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \
         \"Input should be 'text' or 'json_object'\"}]",
    ];
    for (mode, message) in [
        (StructuredOutput::Schema, messages[0]),
        (StructuredOutput::Auto, messages[1]),
    ] {
        let server = LocalServer::start(move |body: &str| {
            if body.contains("json_schema") {
                Reply::json(
                    500,
                    json!({"error": {"message": message, "type": "internal_server_error"}}),
                )
            } else {
                Reply::json(200, completion(ANSWER))
            }
        })
        .await;
        let client = openai(&server.url, mode);
        client.complete(&host_request()).await.unwrap();
        client.complete(&host_request()).await.unwrap();
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 3, "{mode:?}: the 500 is not retried");
        assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
        for b in &bodies[1..] {
            assert_eq!(
                b["response_format"],
                json!({"type": "json_object",
                    "schema": ufo_core::response::with_length_bounds(&host_schema().schema)})
            );
            // that form takes any JSON Schema: its strings are bounded too
            let thought = &b["response_format"]["schema"]["properties"]["Thought"];
            assert_eq!(
                thought["maxLength"],
                ufo_core::response::MAX_TEXT_CHARS,
                "{thought}"
            );
        }
        let notes = client.take_notes();
        assert_eq!(notes[0].now, "schema", "{notes:?}");
        assert!(
            notes[0].message.contains("json_object with a schema"),
            "{notes:?}"
        );
    }
}

/// `auto` on a server that takes JSON mode but no schema in either form settles on JSON mode.
#[tokio::test]
async fn auto_settles_on_json_mode_when_only_the_schema_is_refused() {
    let server = LocalServer::start(|body: &str| {
        if body.contains("\"schema\"") {
            Reply::json(422, error_body("Unsupported: strict schema"))
        } else {
            Reply::json(200, completion(ANSWER))
        }
    })
    .await;
    let client = openai(&server.url, StructuredOutput::Auto);
    client.complete(&host_request()).await.unwrap();
    client.complete(&host_request()).await.unwrap();
    let formats: Vec<Value> = server
        .bodies()
        .iter()
        .map(|b| b["response_format"]["type"].clone())
        .collect();
    assert_eq!(
        formats,
        ["json_schema", "json_object", "json_object", "json_object"]
    );
    let notes = client.take_notes();
    assert_eq!(
        notes.iter().map(|n| n.now.as_str()).collect::<Vec<_>>(),
        ["schema", "json"]
    );
}

/// `auto` on a server that takes the schema says so once, on its first answer.
#[tokio::test]
async fn auto_records_the_schema_once_the_server_took_it() {
    let server = LocalServer::start(ok_server()).await;
    let client = openai(&server.url, StructuredOutput::Auto);
    client.complete(&host_request()).await.unwrap();
    client.complete(&host_request()).await.unwrap();
    let notes = client.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        (notes[0].about.as_str(), notes[0].now.as_str()),
        ("structured_output", "schema")
    );
}

/// A fixed mode never falls back: the refusal is the call's error, and it says what to set.
#[tokio::test]
async fn schema_mode_reports_a_refusal_with_what_to_set() {
    let server = LocalServer::start(|_| {
        Reply::json(
            400,
            error_body("response_format json_schema is not supported"),
        )
    })
    .await;
    let client = openai(&server.url, StructuredOutput::Schema);
    let e = client.complete(&host_request()).await.unwrap_err();
    let LlmError::Fatal(message) = e else {
        panic!("a refusal is fatal: {e:?}");
    };
    assert!(message.contains("HTTP 400"), "{message}");
    assert!(message.contains("structured_output to auto"), "{message}");
    assert_eq!(
        server.bodies().len(),
        2,
        "the schema in both forms, then no more"
    );
    assert_eq!(client.take_notes().len(), 1, "the second form, tried once");
}

/// A refusal about something else (a model that does not exist) is not taken for a refusal of
/// the format, in `auto` either.
#[tokio::test]
async fn other_refusals_are_errors_as_before() {
    let server = LocalServer::start(|_| {
        Reply::json(400, error_body("model 'nope' not found, try pulling it"))
    })
    .await;
    let client = openai(&server.url, StructuredOutput::Auto);
    let e = client.complete(&host_request()).await.unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    assert_eq!(server.bodies().len(), 1);
}

#[tokio::test]
async fn anthropic_auto_drops_the_tool_when_the_server_refuses_it() {
    let server = LocalServer::start(|body: &str| {
        if body.contains("tool_choice") {
            Reply::json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "tool_choice: tools are not supported by this model"}}),
            )
        } else {
            Reply::json(
                200,
                json!({"type": "message", "content": [{"type": "text", "text": ANSWER}],
                    "usage": {"input_tokens": 9, "output_tokens": 4}}),
            )
        }
    })
    .await;
    let client = anthropic(&server.url, StructuredOutput::Auto);
    assert_eq!(client.complete(&host_request()).await.unwrap().text, ANSWER);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].get("tools").is_none());
    let notes = client.take_notes();
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].now, "off",
        "Anthropic has no JSON mode to fall back to"
    );
}

/// A text-only model: the server refuses image parts; the request goes again with each image
/// replaced by its caption, said once, and later requests carry no image.
#[tokio::test]
async fn a_server_that_refuses_images_gets_the_text_alone() {
    for mode in [StructuredOutput::Auto, StructuredOutput::Off] {
        let server = LocalServer::start(|body: &str| {
            if body.contains("image_url") {
                Reply::json(
                    400,
                    error_body(
                        "Invalid content type: image_url is only supported by multimodal models",
                    ),
                )
            } else {
                Reply::json(200, completion(ANSWER))
            }
        })
        .await;
        let client = openai(&server.url, mode);
        assert_eq!(
            client.complete(&image_request()).await.unwrap().text,
            ANSWER
        );
        let bodies = server.raw_bodies();
        assert_eq!(bodies.len(), 2, "{mode:?}");
        assert!(!bodies[1].contains("image_url"));
        assert!(
            bodies[1].contains("annotated screenshot (image not sent"),
            "{}",
            bodies[1]
        );
        assert!(bodies[1].contains("Choose an action."));
        let notes = client.take_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            (notes[0].about.as_str(), notes[0].now.as_str()),
            ("images", "off")
        );
        assert!(notes[0].message.contains("multimodal"), "{notes:?}");
        client.complete(&image_request()).await.unwrap();
        let bodies = server.raw_bodies();
        assert_eq!(bodies.len(), 3, "straight to text once known");
        assert!(!bodies[2].contains("image_url"));
        assert!(client.take_notes().is_empty(), "said once");
    }
}

#[tokio::test]
async fn anthropic_learns_that_images_are_refused_too() {
    let server = LocalServer::start(|body: &str| {
        if body.contains("\"image\"") {
            Reply::json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "This model does not support image input."}}),
            )
        } else {
            Reply::json(
                200,
                json!({"type": "message", "content": [{"type": "text", "text": ANSWER}]}),
            )
        }
    })
    .await;
    let client = anthropic(&server.url, StructuredOutput::Off);
    assert_eq!(
        client.complete(&image_request()).await.unwrap().text,
        ANSWER
    );
    assert_eq!(server.bodies().len(), 2);
    assert_eq!(client.take_notes()[0].about, "images");
}

/// A request's own `max_tokens` (the knowledge rerank's) goes on the wire, and only ever
/// lowers the configured one; without it the configured one is sent as before.
#[tokio::test]
async fn a_requests_max_tokens_lowers_the_configured_one() {
    let server = LocalServer::start(ok_server()).await;
    let mut bounded = text_request("x");
    bounded.max_tokens = Some(100);
    let client = openai(&server.url, StructuredOutput::Off);
    client.complete(&bounded).await.unwrap();
    client.complete(&text_request("x")).await.unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies[0]["max_tokens"], 100);
    assert!(bodies[1].get("max_tokens").is_none(), "{}", bodies[1]);

    let mut settings = quick_settings();
    settings.max_tokens = Some(50);
    settings.structured_output = StructuredOutput::Off;
    let capped = OpenAiClient::new(OpenAiConfig {
        model: "local-model".into(),
        base_url: format!("{}/v1", server.url),
        api_key: None,
        key_hint: "UFO_LLM_API_KEY".into(),
        settings,
    })
    .unwrap();
    capped.complete(&bounded).await.unwrap();
    assert_eq!(server.bodies()[2]["max_tokens"], 50);

    let claude = LocalServer::start(|_| {
        Reply::json(
            200,
            json!({"type": "message", "content": [{"type": "text", "text": ANSWER}],
                   "usage": {"input_tokens": 1, "output_tokens": 1}}),
        )
    })
    .await;
    anthropic(&claude.url, StructuredOutput::Off)
        .complete(&bounded)
        .await
        .unwrap();
    assert_eq!(claude.bodies()[0]["max_tokens"], 100);
}
