//! `from_spec`: parsing, environment, errors that say what to fix, and end to end through
//! a fake server.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::json;
use ufo_llm::{from_spec, Env, LlmOptions, SpecError};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn opts(pairs: &[(&str, &str)]) -> LlmOptions {
    LlmOptions {
        env: Env::from_pairs(pairs.iter().copied()),
        settings: quick_settings(),
        ..LlmOptions::default()
    }
}

fn err(spec: &str, o: &LlmOptions) -> String {
    match from_spec(spec, o) {
        Ok(c) => panic!("{spec} gave {}", c.describe()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_specs_say_what_to_fix() {
    let o = opts(&[]);
    for spec in ["", "  "] {
        let e = err(spec, &o);
        assert!(e.contains("openai:<model>"), "{e}");
    }
    let e = err("gpt-4o", &o);
    assert!(
        e.contains("has no provider") && e.contains("anthropic:<model>"),
        "{e}"
    );
    let e = err("gemini:pro", &o);
    assert!(e.contains("unknown model provider \"gemini\""), "{e}");
    let e = err("openai:", &o);
    assert!(
        e.contains("names no model") && e.contains("openai:gpt-4o"),
        "{e}"
    );
    let e = err("azure:", &o);
    assert!(e.contains("names no deployment"), "{e}");
    let e = err("script:", &o);
    assert!(e.contains("names no file"), "{e}");
    let e = err("replay:", &o);
    assert!(e.contains("names no folder"), "{e}");
}

#[test]
fn missing_keys_and_settings_name_the_variables() {
    let o = opts(&[]);
    let e = err("openai:gpt-4o", &o);
    assert!(e.contains("OPENAI_API_KEY"), "{e}");
    assert!(e.contains("UFO_LLM_BASE_URL"), "{e}");
    let e = err("anthropic:claude-x", &o);
    assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
    let e = err("azure:dep", &o);
    assert!(e.contains("AZURE_OPENAI_ENDPOINT"), "{e}");
    let e = err(
        "azure:dep",
        &opts(&[("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")]),
    );
    assert!(e.contains("AZURE_OPENAI_API_KEY"), "{e}");
    assert!(matches!(
        from_spec("openai:gpt-4o", &o),
        Err(SpecError::MissingKey { .. })
    ));
}

#[test]
fn bad_variables_are_reported() {
    let base = ("UFO_LLM_BASE_URL", "http://127.0.0.1:9/v1");
    let e = err(
        "openai:m",
        &opts(&[base, ("UFO_LLM_IMAGE_DETAIL", "ultra")]),
    );
    assert!(
        e.contains("UFO_LLM_IMAGE_DETAIL") && e.contains("auto, low or high"),
        "{e}"
    );
    let e = err("openai:m", &opts(&[base, ("UFO_LLM_HEADERS", "novalue")]));
    assert!(e.contains("UFO_LLM_HEADERS"), "{e}");
    let e = err("openai:m", &opts(&[base, ("UFO_LLM_MAX_ATTEMPTS", "0")]));
    assert!(e.contains("UFO_LLM_MAX_ATTEMPTS"), "{e}");
    let e = err("openai:m", &opts(&[base, ("UFO_LLM_TIMEOUT_SECS", "-1")]));
    assert!(e.contains("UFO_LLM_TIMEOUT_SECS"), "{e}");
}

#[test]
fn names_with_colons_and_describe() {
    let o = opts(&[("UFO_LLM_BASE_URL", "http://127.0.0.1:11434/v1")]);
    let c = from_spec("openai:llama3.1:8b", &o).unwrap();
    assert_eq!(c.describe(), "openai:llama3.1:8b");
    let c = from_spec(" OpenAI:gpt-4o ", &opts(&[("OPENAI_API_KEY", "k")])).unwrap();
    assert_eq!(c.describe(), "openai:gpt-4o");
    let c = from_spec("anthropic:claude-x", &opts(&[("ANTHROPIC_API_KEY", "k")])).unwrap();
    assert_eq!(c.describe(), "anthropic:claude-x");
}

#[test]
fn script_and_replay_specs_load_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.jsonl");
    std::fs::write(
        &file,
        "{\"agent\":\"host\",\"response\":{\"Status\":\"FINISH\"}}\n",
    )
    .unwrap();
    let spec = format!("script:{}", file.display());
    assert_eq!(from_spec(&spec, &opts(&[])).unwrap().describe(), spec);

    let e = err(
        &format!("script:{}/nope.jsonl", dir.path().display()),
        &opts(&[]),
    );
    assert!(e.contains("nope.jsonl"), "{e}");
    std::fs::write(&file, "{\"agent\":\"host\"}\n").unwrap();
    let e = err(&spec, &opts(&[]));
    assert!(
        e.contains("line 1") && e.contains("missing \"response\""),
        "{e}"
    );

    let e = err(&format!("replay:{}", dir.path().display()), &opts(&[]));
    assert!(e.contains("no recorded calls"), "{e}");
}

#[tokio::test]
async fn openai_spec_end_to_end_through_the_environment() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer local-key"))
        .and(header("x-extra", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": "{\"Status\":\"FINISH\"}"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 6}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let o = opts(&[
        ("UFO_LLM_BASE_URL", base.as_str()),
        ("UFO_LLM_API_KEY", "local-key"),
        ("UFO_LLM_HEADERS", "X-Extra: 1"),
        ("UFO_LLM_IMAGE_DETAIL", "low"),
    ]);
    let c = from_spec("openai:some-model", &o).unwrap();
    let r = c.complete(&image_request()).await.unwrap();
    assert_eq!(r.text, "{\"Status\":\"FINISH\"}");
    assert_eq!(r.usage.completion_tokens, 6);
    let body = &bodies(&server).await[0];
    assert_eq!(body["model"], "some-model");
    assert_eq!(
        body["messages"][1]["content"][2]["image_url"]["detail"],
        "low"
    );
}

#[tokio::test]
async fn azure_and_anthropic_specs_end_to_end() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/dep1/chat/completions"))
        .and(query_param("api-version", "2025-01-01-preview"))
        .and(header("api-key", "az"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": "azure ok"}}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "an"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "anthropic ok"}],
            "usage": {"input_tokens": 1, "output_tokens": 2}
        })))
        .mount(&server)
        .await;
    let uri = server.uri();
    let o = opts(&[
        ("AZURE_OPENAI_ENDPOINT", uri.as_str()),
        ("AZURE_OPENAI_API_KEY", "az"),
        ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
        ("ANTHROPIC_BASE_URL", uri.as_str()),
        ("ANTHROPIC_API_KEY", "an"),
    ]);
    let azure = from_spec("azure:dep1", &o).unwrap();
    assert_eq!(
        azure.complete(&text_request("x")).await.unwrap().text,
        "azure ok"
    );
    let anthropic = from_spec("anthropic:claude-x", &o).unwrap();
    assert_eq!(
        anthropic.complete(&text_request("x")).await.unwrap().text,
        "anthropic ok"
    );

    // An explicit base URL (per-agent configuration) wins over the environment.
    let mut o = opts(&[
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ("ANTHROPIC_API_KEY", "an"),
    ]);
    o.base_url = Some(uri.clone());
    let anthropic = from_spec("anthropic:claude-x", &o).unwrap();
    assert_eq!(
        anthropic.complete(&text_request("x")).await.unwrap().text,
        "anthropic ok"
    );
}

#[tokio::test]
async fn unreachable_server_with_one_attempt_from_the_environment() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    let o = opts(&[
        ("UFO_LLM_BASE_URL", base.as_str()),
        ("UFO_LLM_MAX_ATTEMPTS", "1"),
    ]);
    let c = from_spec("openai:m", &o).unwrap();
    let e = c.complete(&text_request("x")).await.unwrap_err();
    let (kind, msg) = err_text(&e);
    assert_eq!(kind, "unavailable");
    assert!(msg.contains("1 time(s)"), "{msg}");
}
