//! Recording real calls, replaying them, and the divergence message; the backup model.
#![allow(clippy::unwrap_used)]

mod common;

use async_trait::async_trait;
use common::*;
use serde_json::json;
use ufo_core::ports::{
    ChatMessage, ChatRequest, ChatResponse, ContentPart, LlmClient, LlmError, MessageRole, Usage,
};
use ufo_llm::record::RecordedCall;
use ufo_llm::{
    ApiKey, BackupModel, OpenAiClient, OpenAiConfig, RecordError, Recording, ReplayModel,
    ScriptedModel,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const SECRET: &str = "sk-live-SECRET-0123456789";

async fn openai_server() -> MockServer {
    let server = MockServer::start().await;
    for (i, text) in ["{\"Status\":\"ASSIGN\"}", "{\"Status\":\"FINISH\"}"]
        .iter()
        .enumerate()
    {
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100 + i, "completion_tokens": 10 + i}
            })))
            .up_to_n_times(1)
            .with_priority(i as u8 + 1)
            .mount(&server)
            .await;
    }
    server
}

fn openai(server: &MockServer) -> Box<dyn LlmClient> {
    let mut settings = quick_settings();
    settings
        .extra_headers
        .push(("X-Org-Token".into(), format!("{SECRET}-header")));
    Box::new(
        OpenAiClient::new(OpenAiConfig {
            model: "gpt-test".into(),
            base_url: format!("{}/v1", server.uri()),
            api_key: Some(ApiKey::new(SECRET)),
            key_hint: "OPENAI_API_KEY".into(),
            settings,
        })
        .unwrap(),
    )
}

fn all_files_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

#[tokio::test]
async fn record_then_replay_gives_the_same_answers_and_no_key_is_written() {
    let server = openai_server().await;
    let dir = tempfile::tempdir().unwrap();
    let rec_dir = dir.path().join("llm");
    let recording = Recording::new(openai(&server), &rec_dir).unwrap();
    assert_eq!(recording.describe(), "openai:gpt-test");
    let requests = [text_request("pick the app"), image_request()];
    let mut live = Vec::new();
    for r in &requests {
        live.push(recording.complete(r).await.unwrap());
    }
    assert_eq!(recording.calls(), 2);
    assert!(rec_dir.join("0001.json").is_file());
    assert!(rec_dir.join("0002.json").is_file());

    let written = all_files_text(&rec_dir);
    assert!(
        !written.contains("SECRET"),
        "a key leaked into the recording"
    );
    let second: RecordedCall =
        serde_json::from_str(&std::fs::read_to_string(rec_dir.join("0002.json")).unwrap()).unwrap();
    assert_eq!(second.agent, "app");
    assert_eq!(second.model, "openai:gpt-test");
    let image = &second.messages[1].content[1];
    let image = serde_json::to_value(image).unwrap();
    assert_eq!(image["type"], "image");
    assert_eq!(
        image["sha256"],
        ufo_llm::record::sha256_hex(png().as_slice())
    );
    assert!(
        !written.contains(&png_b64()),
        "images are stored by hash only"
    );

    // Replay with the server gone.
    drop(server);
    let replay = ReplayModel::load(&rec_dir).unwrap();
    assert_eq!(replay.len(), 2);
    assert_eq!(replay.describe(), format!("replay:{}", rec_dir.display()));
    for (r, want) in requests.iter().zip(&live) {
        let got = replay.complete(r).await.unwrap();
        assert_eq!(&got, want);
    }
    assert!(replay.is_exhausted());
    let e = replay.complete(&text_request("more")).await.unwrap_err();
    let msg = err_text(&e).1;
    assert!(
        msg.contains("has 2 calls; call 3 from the host agent was not recorded"),
        "{msg}"
    );
}

#[tokio::test]
async fn replay_says_where_the_request_diverged() {
    let server = openai_server().await;
    let dir = tempfile::tempdir().unwrap();
    let recording = Recording::new(openai(&server), dir.path()).unwrap();
    recording
        .complete(&text_request("pick the app"))
        .await
        .unwrap();
    recording.complete(&image_request()).await.unwrap();

    let replay = ReplayModel::load(dir.path()).unwrap();
    replay
        .complete(&text_request("pick the app"))
        .await
        .unwrap();

    // Changed text in the second call's user message.
    let mut changed = image_request();
    changed.messages[1].content[0] = ContentPart::Text("Controls: [1] Cancel".into());
    let msg = err_text(&replay.complete(&changed).await.unwrap_err()).1;
    assert!(msg.contains("call 2 (0002.json)"), "{msg}");
    assert!(msg.contains("message 2 (user), part 1"), "{msg}");
    assert!(msg.contains("character 15"), "{msg}");
    assert!(msg.contains("OK"), "{msg}");
    assert!(msg.contains("Cancel"), "{msg}");

    // A different screenshot.
    let mut other_image = image_request();
    other_image.messages[1].content[1] = ContentPart::Image {
        png: std::sync::Arc::new(vec![1, 2, 3]),
        caption: "annotated screenshot".into(),
    };
    let msg = err_text(&replay.complete(&other_image).await.unwrap_err()).1;
    assert!(msg.contains("part 2: a different image"), "{msg}");

    // Another agent.
    let mut host = image_request();
    host.agent = "host".into();
    let msg = err_text(&replay.complete(&host).await.unwrap_err()).1;
    assert!(
        msg.contains("from the app agent, this one from the host agent"),
        "{msg}"
    );

    // A message more.
    let mut longer = image_request();
    longer
        .messages
        .push(ChatMessage::text(MessageRole::Assistant, "extra"));
    let msg = err_text(&replay.complete(&longer).await.unwrap_err()).1;
    assert!(msg.contains("recorded 2 messages, now 3"), "{msg}");

    // Divergences consumed nothing: the right request still gets its answer.
    assert_eq!(replay.served(), 1);
    let r = replay.complete(&image_request()).await.unwrap();
    assert_eq!(r.text, "{\"Status\":\"FINISH\"}");
    assert_eq!(r.usage.prompt_tokens, 101);
}

struct Failing(LlmError);

#[async_trait]
impl LlmClient for Failing {
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(match &self.0 {
            LlmError::Fatal(m) => LlmError::Fatal(m.clone()),
            LlmError::Unavailable(m) => LlmError::Unavailable(m.clone()),
        })
    }
    fn describe(&self) -> String {
        "failing".into()
    }
}

#[tokio::test]
async fn errors_are_recorded_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::new(
        Box::new(Failing(LlmError::Unavailable("down".into()))),
        dir.path(),
    )
    .unwrap();
    assert!(matches!(
        rec.complete(&text_request("x")).await,
        Err(LlmError::Unavailable(_))
    ));
    let replay = ReplayModel::load(dir.path()).unwrap();
    match replay.complete(&text_request("x")).await {
        Err(LlmError::Unavailable(m)) => assert_eq!(m, "down"),
        other => panic!("{other:?}"),
    }
    assert!(replay.is_exhausted());
}

#[tokio::test]
async fn recording_refuses_a_used_folder_and_replay_checks_files() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::new(
        Box::new(ScriptedModel::from_jsonl_str("s", r#"{"agent":"host","response":"a"}"#).unwrap()),
        dir.path(),
    )
    .unwrap();
    rec.complete(&text_request("x")).await.unwrap();
    let again = Recording::new(
        Box::new(ScriptedModel::from_jsonl_str("s", "").unwrap()),
        dir.path(),
    );
    assert!(matches!(again, Err(RecordError::NotEmpty(_))));

    let empty = tempfile::tempdir().unwrap();
    let e = ReplayModel::load(empty.path()).unwrap_err();
    assert!(e.to_string().contains("no recorded calls"), "{e}");

    let e = ReplayModel::load(empty.path().join("missing")).unwrap_err();
    assert!(e.to_string().contains("cannot use recording folder"), "{e}");

    std::fs::copy(dir.path().join("0001.json"), empty.path().join("0002.json")).unwrap();
    let e = ReplayModel::load(empty.path()).unwrap_err();
    assert!(e.to_string().contains("has no 0001.json"), "{e}");

    std::fs::write(empty.path().join("0001.json"), "{").unwrap();
    let e = ReplayModel::load(empty.path()).unwrap_err();
    assert!(e.to_string().contains("0001.json"), "{e}");
    assert!(e.to_string().contains("re-record"), "{e}");
}

#[tokio::test]
async fn backup_answers_when_the_primary_is_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let backup =
        ScriptedModel::from_jsonl_str("b.jsonl", r#"{"agent":"host","response":"from backup"}"#)
            .unwrap();
    let model = BackupModel::new(openai(&server), Box::new(backup));
    assert_eq!(model.describe(), "openai:gpt-test (backup: script:b.jsonl)");
    let r = model.complete(&text_request("x")).await.unwrap();
    assert_eq!(r.text, "from backup");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    // Both unavailable: one error naming both.
    let model = BackupModel::new(
        Box::new(Failing(LlmError::Unavailable("primary down".into()))),
        Box::new(Failing(LlmError::Unavailable("backup down".into()))),
    );
    match model.complete(&text_request("x")).await {
        Err(LlmError::Unavailable(m)) => {
            assert!(
                m.contains("primary down") && m.contains("backup down"),
                "{m}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn backup_is_not_asked_on_a_fatal_error() {
    let backup = ScriptedModel::from_jsonl_str("b", r#"{"agent":"host","response":"x"}"#).unwrap();
    let model = BackupModel::new(
        Box::new(Failing(LlmError::Fatal("bad key".into()))),
        Box::new(backup),
    );
    match model.complete(&text_request("x")).await {
        Err(LlmError::Fatal(m)) => assert_eq!(m, "bad key"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn usage_roundtrips_through_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    struct Fixed;
    #[async_trait]
    impl LlmClient for Fixed {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: "t".into(),
                usage: Usage {
                    prompt_tokens: 7,
                    completion_tokens: 9,
                },
            })
        }
        fn describe(&self) -> String {
            "fixed".into()
        }
    }
    let rec = Recording::new(Box::new(Fixed), dir.path()).unwrap();
    rec.complete(&text_request("x")).await.unwrap();
    let r = ReplayModel::load(dir.path())
        .unwrap()
        .complete(&text_request("x"))
        .await
        .unwrap();
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: 7,
            completion_tokens: 9
        }
    );
}
