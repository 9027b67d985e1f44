//! The host prompt and the checkpoint stay bounded however many subtasks a session runs:
//! 100 subtasks with 8 KB results each (issue 10, defect 9: an 817 KB prompt and an 822 KB
//! checkpoint before the bound); a host ERROR ends the round with its error as message; a
//! recorder that fails ends the session ERROR, reason `io`.

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::{json, Value};
use ufo_core::agent::{AppAgentFactory, Services};
use ufo_core::ports::*;
use ufo_core::prompt::Prompts;
use ufo_core::session::{Checkpoint, CHECKPOINT_FILE};
use ufo_core::testing::{ListedPerson, MemoryRecorder};
use ufo_core::{Config, Session, SessionStatus, UiAction};

/// The bound: 16,000 tokens at about 4 characters a token.
const PROMPT_BOUND: usize = 64_000;

fn window() -> WindowInfo {
    WindowInfo {
        id: "w".into(),
        title: "Doc - Writer".into(),
        app_name: "Writer".into(),
        process: "writer".into(),
        pid: None,
        rect: None,
    }
}

struct Desk;

#[async_trait]
impl Desktop for Desk {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        Ok(vec![window()])
    }
    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        Ok(vec![])
    }
    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        Ok(None)
    }
    async fn observe(&self, _w: &WindowId) -> Result<WindowObservation, DesktopError> {
        Ok(WindowObservation {
            window: window(),
            controls: vec![],
            screenshot: None,
            annotated: None,
            warnings: vec![],
            pixels_readable: false,
            pixel_changes: None,
        })
    }
    async fn act(
        &self,
        _w: &WindowId,
        _c: Option<&str>,
        _a: &UiAction,
    ) -> Result<String, DesktopError> {
        Ok(String::new())
    }
    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        Err(DesktopError::UnknownApp(app.into()))
    }
    async fn shell(&self, _c: &str) -> Result<ShellOutput, DesktopError> {
        Ok(ShellOutput::default())
    }
    async fn settle(&self) {}
}

/// The host assigns `subtasks` subtasks, each finished by the app with an 8 KB result, then
/// finishes; every host prompt's size is kept.
struct Model {
    subtasks: usize,
    host_calls: Mutex<usize>,
    host_prompts: Mutex<Vec<usize>>,
}

#[async_trait]
impl LlmClient for Model {
    async fn complete(&self, r: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer = if r.agent == "host" {
            self.host_prompts
                .lock()
                .map_err(|_| LlmError::Fatal("lock".into()))?
                .push(r.prompt_text().len());
            let mut n = self
                .host_calls
                .lock()
                .map_err(|_| LlmError::Fatal("lock".into()))?;
            *n += 1;
            if *n > self.subtasks {
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH"})
            } else {
                json!({"Observation": "o", "Thought": "t",
                       "Current Sub-Task": format!("subtask number {n}: copy the table"),
                       "ControlLabel": "1", "ControlText": "Doc - Writer", "Status": "ASSIGN"})
            }
        } else {
            json!({"Observation": "o", "Thought": "t", "Status": "FINISH",
                   "Result": "r".repeat(8 * 1024)})
        };
        Ok(ChatResponse {
            text: answer.to_string(),
            usage: Usage::default(),
        })
    }
    fn describe(&self) -> String {
        "test".into()
    }
}

/// The person rejects every held action and answers nothing.
fn person() -> ListedPerson {
    ListedPerson::new(Decision::Reject, [])
}

/// The largest checkpoint the session wrote, and the last one.
fn checkpoints(rec: &MemoryRecorder) -> (usize, Vec<u8>) {
    let all: Vec<&Vec<u8>> = rec
        .artifacts
        .iter()
        .filter(|(n, _)| n == CHECKPOINT_FILE)
        .map(|(_, b)| b)
        .collect();
    let largest = all.iter().map(|b| b.len()).max().unwrap_or(0);
    (largest, all.last().map(|b| b.to_vec()).unwrap_or_default())
}

#[tokio::test]
async fn a_hundred_subtasks_with_8_kb_results_keep_the_host_prompt_and_checkpoint_bounded() {
    let config = Config {
        max_steps: 1_000,
        ..Config::default()
    };
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let model = Model {
        subtasks: 100,
        host_calls: Mutex::new(0),
        host_prompts: Mutex::new(Vec::new()),
    };
    let services = Services {
        desktop: &Desk,
        host_llm: &model,
        app_llm: &model,
        user: &person(),
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = MemoryRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("copy a hundred tables", &mut rec)
        .await;
    assert_eq!(outcome.status, SessionStatus::Finish, "{outcome:?}");
    let prompts = model.host_prompts.lock().expect("lock").clone();
    assert_eq!(prompts.len(), 101);
    let largest = prompts.iter().copied().max().unwrap_or(0);
    let (largest_checkpoint, last_checkpoint) = checkpoints(&rec);
    let total: usize = prompts.iter().sum();
    println!(
        "host prompt: largest {largest} bytes, last {} bytes, all {} host prompts {total} bytes \
         (~{} tokens); checkpoint: largest {} bytes",
        prompts[100],
        prompts.len(),
        total / 4,
        largest_checkpoint
    );
    assert!(largest <= PROMPT_BOUND, "host prompt of {largest} bytes");
    assert!(
        largest_checkpoint <= 64 * 1024,
        "checkpoint of {} bytes",
        largest_checkpoint
    );
    // The whole results are still in the trajectory.
    let archived = rec
        .events
        .iter()
        .filter(|e| e["action"]["archive"]["result"].as_str().map(str::len) == Some(8 * 1024))
        .count();
    assert_eq!(archived, 100);
    // The checkpoint reads back: the newest subtasks in full, the older summarised or counted.
    let cp: Checkpoint = serde_json::from_slice(&last_checkpoint).expect("checkpoint");
    assert_eq!(cp.previous_subtasks.len(), 100);
    assert_eq!(cp.previous_subtasks.recent.len(), 10);
    let last = &cp.previous_subtasks.recent[9].result;
    assert!(
        last.ends_with("… (7192 chars more)"),
        "{}",
        &last[last.len() - 60..]
    );
    let summary = cp
        .previous_subtasks
        .summary()
        .expect("a summary of the oldest");
    assert!(summary.contains("70 earlier subtasks") && summary.contains("70 finished"));
}

/// A checkpoint written before the bound (a bare list of subtasks) still loads, bounded.
#[test]
fn an_old_checkpoint_list_loads_bounded() {
    let list: Vec<Value> = (0..40)
        .map(|i| json!({"agent": "a", "subtask": format!("s{i}"), "status": "FAIL", "result": "x"}))
        .collect();
    let h: ufo_core::agent::SubtaskHistory =
        serde_json::from_value(Value::Array(list)).expect("old form loads");
    assert_eq!(h.len(), 40);
    assert_eq!(h.recent.len(), 10);
    assert_eq!(h.recent[9].subtask, "s39");
    assert_eq!(h.counted.failed, 10);
}

/// A host ERROR (here: a model that cannot be reached) ends the round with the error as
/// its message, not null (defect 15).
#[tokio::test]
async fn host_error_carries_its_message() {
    struct Down;
    #[async_trait]
    impl LlmClient for Down {
        async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Err(LlmError::Unavailable("connection refused".into()))
        }
        fn describe(&self) -> String {
            "down".into()
        }
    }
    let config = Config::default();
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let services = Services {
        desktop: &Desk,
        host_llm: &Down,
        app_llm: &Down,
        user: &person(),
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = MemoryRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("anything", &mut rec)
        .await;
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(outcome.reason, "host_error");
    let message = outcome.message.expect("a message");
    assert!(message.contains("connection refused"), "{message}");
    for kind in ["round_end", "session_end"] {
        let e = rec
            .events
            .iter()
            .find(|e| e["type"] == kind)
            .expect("record");
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("connection refused")),
            "{e}"
        );
    }
}

/// A recorder that fails (a full disk) ends the session ERROR, reason `io`, after the step in
/// which it failed, with the failure in the message (defect 14).
#[tokio::test]
async fn a_recorder_failure_ends_the_session_error_io() {
    struct Full(Vec<Value>);
    impl Recorder for Full {
        fn event(&mut self, e: &Value) -> Result<(), RecorderError> {
            self.0.push(e.clone());
            Ok(())
        }
        fn artifact(&mut self, name: &str, _b: &[u8]) -> Result<String, RecorderError> {
            Err(RecorderError(format!("cannot write {name}: no space left")))
        }
    }
    let config = Config::default();
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let model = Model {
        subtasks: 3,
        host_calls: Mutex::new(0),
        host_prompts: Mutex::new(Vec::new()),
    };
    let services = Services {
        desktop: &Desk,
        host_llm: &model,
        app_llm: &model,
        user: &person(),
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = Full(Vec::new());
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("anything", &mut rec)
        .await;
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(outcome.reason, "io");
    assert!(outcome
        .message
        .as_deref()
        .is_some_and(|m| m.contains("no space left")));
    // One step ran (its prompt could not be saved), and it is marked as the last.
    let steps: Vec<&Value> = rec.0.iter().filter(|e| e["type"] == "step").collect();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["terminal"], true);
    assert_eq!(model.host_prompts.lock().expect("lock").len(), 1);
}
