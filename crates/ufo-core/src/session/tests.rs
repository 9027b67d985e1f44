//! The round loop over in-test fakes of every port, logging each port call in order.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::*;
use crate::agent::AppAgentFactory;
use crate::config::Config;
use crate::ports::*;
use crate::prompt::Prompts;
use crate::UiAction;

type Log = Arc<Mutex<Vec<String>>>;

struct FakeDesktop {
    log: Log,
    controls: Mutex<Vec<Control>>,
}

fn button(id: &str, name: &str) -> Control {
    Control {
        source: Default::default(),
        id: id.into(),
        role: "button".into(),
        name: name.into(),
        value: None,
        rect: Rect::default(),
        enabled: true,
        states: Default::default(),
    }
}

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

#[async_trait]
impl Desktop for FakeDesktop {
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
        let controls = self.controls.lock().map(|c| c.clone()).unwrap_or_default();
        Ok(WindowObservation {
            window: window(),
            controls,
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
        control: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        self.log
            .lock()
            .map(|mut l| l.push(format!("act {} {:?}", action.name(), control)))
            .ok();
        if control == Some("open") {
            if let Ok(mut c) = self.controls.lock() {
                c.push(button("ok", "OK"));
            }
        }
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

/// Answers in order, the prompts it got, and the notes of answers with a `_note` (what a
/// real backend learns about its server while answering).
struct FakeLlm(
    Mutex<VecDeque<Value>>,
    Mutex<Vec<String>>,
    Mutex<Vec<crate::ports::ModelNote>>,
);

#[async_trait]
impl LlmClient for FakeLlm {
    async fn complete(&self, r: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Ok(mut p) = self.1.lock() {
            p.push(r.prompt_text());
        }
        let next = self.0.lock().ok().and_then(|mut q| q.pop_front());
        if let (Some(note), Ok(mut notes)) = (next.as_ref().map(|v| &v["_note"]), self.2.lock()) {
            if let Some(now) = note.as_str() {
                notes.push(crate::ports::ModelNote {
                    about: "structured_output".into(),
                    now: now.into(),
                    message: format!("settled on {now}"),
                });
            }
        }
        match next {
            Some(v) => Ok(ChatResponse {
                text: v.to_string(),
                usage: Usage::default(),
            }),
            None => Err(LlmError::Fatal("fake model: no more answers".into())),
        }
    }
    fn describe(&self) -> String {
        "fake".into()
    }
    fn take_notes(&self) -> Vec<crate::ports::ModelNote> {
        self.2
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }
    fn throughput(&self) -> Option<f64> {
        Some(12.34)
    }
}

struct FakeUser {
    log: Log,
    decision: Decision,
}

#[async_trait]
impl UserIo for FakeUser {
    async fn confirm(&self, r: &ConfirmRequest) -> Decision {
        self.log
            .lock()
            .map(|mut l| l.push(format!("confirm {}", r.description)))
            .ok();
        self.decision
    }
    async fn ask(&self, _a: &str, _q: &str) -> Option<String> {
        None
    }
    async fn follow_up(&self) -> Option<String> {
        None
    }
}

use crate::testing::MemoryRecorder as MemRecorder;

fn host(status: &str) -> Value {
    json!({"Observation": "o", "Thought": "t", "Current Sub-Task": "delete it",
           "ControlLabel": "1", "ControlText": "Doc - Writer", "Status": status})
}

fn app(label: &str, name: &str, status: &str) -> Value {
    json!({"Observation": "o", "Thought": "t", "ControlLabel": label, "ControlText": name,
           "Function": "click", "Args": {}, "Status": status})
}

struct FakeTools(Log);

#[async_trait]
impl ToolProvider for FakeTools {
    async fn tools_for(&self, app: &str) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![ToolSpec {
            name: "write_file".into(),
            description: format!("Write a file for {app}."),
            input_schema: json!({"type": "object", "required": ["path"]}),
            source: "fake".into(),
        }])
    }
    fn validate(&self, tool: &ToolSpec, args: &Value) -> Result<(), ToolError> {
        match args.get("path") {
            Some(Value::String(_)) => Ok(()),
            _ => Err(ToolError::BadArgs {
                tool: tool.name.clone(),
                message: "\"path\" is a required property".into(),
            }),
        }
    }
    async fn call(&self, _app: &str, tool: &str, args: &Value) -> Result<String, ToolError> {
        self.0
            .lock()
            .map(|mut l| l.push(format!("tool {tool} {args}")))
            .ok();
        // a tool's own words may look like a failure's: they are its result all the same
        if args.get("path") == Some(&json!("log.txt")) {
            return Ok("action failed: 3 times (the last line of log.txt)".into());
        }
        Ok("wrote 5 bytes".into())
    }
}

struct Run {
    log: Vec<String>,
    prompts: Vec<String>,
    seq: Vec<(String, String)>,
    events: Vec<Value>,
    outcome: SessionOutcome,
}

async fn run(answers: Vec<Value>, decision: Decision, config: Config) -> Run {
    run_with(answers, decision, config, false).await
}

async fn run_with(answers: Vec<Value>, decision: Decision, config: Config, tools: bool) -> Run {
    let log: Log = Arc::default();
    let desktop = FakeDesktop {
        log: log.clone(),
        controls: Mutex::new(vec![button("del", "Delete"), button("open", "Open")]),
    };
    let llm = FakeLlm(
        Mutex::new(answers.into()),
        Mutex::default(),
        Mutex::default(),
    );
    let user = FakeUser {
        log: log.clone(),
        decision,
    };
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let fake_tools = FakeTools(log.clone());
    let services = Services {
        desktop: &desktop,
        host_llm: &llm,
        app_llm: &llm,
        user: &user,
        config: &config,
        prompts: &prompts,
        tools: if tools { Some(&fake_tools) } else { None },
        knowledge: None,
    };
    let mut rec = MemRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("request", &mut rec)
        .await;
    let seq = rec
        .events
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| {
            (
                e["role"].as_str().unwrap_or("").to_string(),
                e["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let log = log.lock().map(|l| l.clone()).unwrap_or_default();
    let prompts = llm.1.lock().map(|p| p.clone()).unwrap_or_default();
    Run {
        log,
        prompts,
        seq,
        events: rec.events,
        outcome,
    }
}

fn seq(s: &[(&str, &str)]) -> Vec<(String, String)> {
    s.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The person takes the desktop over while the host's model decides (right after its
/// first window list), and hands it back at the first wait.
struct PersonDesktop {
    inner: FakeDesktop,
    lists: Mutex<u32>,
    taken: Mutex<bool>,
}

#[async_trait]
impl Desktop for PersonDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        if let Ok(mut n) = self.lists.lock() {
            *n += 1;
            if *n == 1 {
                *self.taken.lock().expect("lock") = true;
            }
        }
        self.inner.windows().await
    }
    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        self.inner.launchable().await
    }
    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        self.inner.desktop_screenshot().await
    }
    async fn observe(&self, w: &WindowId) -> Result<WindowObservation, DesktopError> {
        self.inner.observe(w).await
    }
    async fn act(
        &self,
        w: &WindowId,
        control: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        self.inner.act(w, control, action).await
    }
    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        self.inner.launch(app).await
    }
    async fn shell(&self, c: &str) -> Result<ShellOutput, DesktopError> {
        self.inner
            .log
            .lock()
            .map(|mut l| l.push(format!("shell {c}")))
            .ok();
        self.inner.shell(c).await
    }
    async fn settle(&self) {}
    fn person_input(&self) -> Option<String> {
        self.taken
            .lock()
            .ok()
            .filter(|t| **t)
            .map(|_| "key press".to_string())
    }
    async fn wait_handback(&self, _within: std::time::Duration) -> bool {
        self.inner
            .log
            .lock()
            .map(|mut l| l.push("handback".into()))
            .ok();
        *self.taken.lock().expect("lock") = false;
        true
    }
}

/// After a host command launched an application, its window shows a first title and
/// takes the document's a few lists later ([`LaunchingDesktop::retitled_after`]).
struct LaunchingDesktop {
    inner: FakeDesktop,
    launched: Mutex<bool>,
    lists: Mutex<u32>,
    retitled_after: u32,
    pauses: Mutex<u32>,
}

#[async_trait]
impl Desktop for LaunchingDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        if !*self.launched.lock().expect("lock") {
            return Ok(vec![]);
        }
        let mut n = self.lists.lock().expect("lock");
        *n += 1;
        let title = if *n > self.retitled_after {
            "Doc - Writer"
        } else {
            "LibreOffice"
        };
        Ok(vec![WindowInfo {
            title: title.into(),
            ..window()
        }])
    }
    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        Ok(vec![])
    }
    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        Ok(None)
    }
    async fn observe(&self, w: &WindowId) -> Result<WindowObservation, DesktopError> {
        self.inner.observe(w).await
    }
    async fn act(
        &self,
        w: &WindowId,
        control: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        self.inner.act(w, control, action).await
    }
    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        self.inner.launch(app).await
    }
    async fn shell(&self, _c: &str) -> Result<ShellOutput, DesktopError> {
        *self.launched.lock().expect("lock") = true;
        Ok(ShellOutput {
            launched: Some("Writer".into()),
            ..ShellOutput::default()
        })
    }
    async fn settle(&self) {}
    async fn pause(&self, _within: std::time::Duration) {
        *self.pauses.lock().expect("lock") += 1;
    }
}

/// The host runs `launch` (when given) in a first answer, then assigns "Doc - Writer"; the
/// app agent finishes. What the session ended with, the desktop's pauses, the results.
async fn assign_after(launch: bool, retitled_after: u32) -> (SessionOutcome, u32, Vec<Value>) {
    let desktop = LaunchingDesktop {
        inner: FakeDesktop {
            log: Arc::default(),
            controls: Mutex::new(vec![button("del", "Delete")]),
        },
        launched: Mutex::new(!launch),
        lists: Mutex::new(0),
        retitled_after,
        pauses: Mutex::new(0),
    };
    let mut start = host("CONTINUE");
    start["Bash"] = "libreoffice --writer doc.odt &".into();
    start["ControlLabel"] = "".into();
    start["ControlText"] = "".into();
    let mut answers = vec![];
    if launch {
        answers.push(start);
    }
    let mut assign = host("ASSIGN");
    assign["ControlLabel"] = "".into();
    answers.extend([
        assign,
        json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
        host("FINISH"),
    ]);
    let llm = FakeLlm(
        Mutex::new(answers.into()),
        Mutex::default(),
        Mutex::default(),
    );
    let user = FakeUser {
        log: Arc::default(),
        decision: Decision::Approve,
    };
    let config = Config::default();
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let services = Services {
        desktop: &desktop,
        host_llm: &llm,
        app_llm: &llm,
        user: &user,
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = MemRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("request", &mut rec)
        .await;
    let pauses = *desktop.pauses.lock().expect("lock");
    (outcome, pauses, rec.events)
}

/// A window the model names right after a launch, still under its application's first
/// title, is waited for (the desktop listed again after each pause) and assigned; with
/// no launch, or a name that never comes, the model hears the windows there are.
#[tokio::test]
async fn a_window_named_right_after_a_launch_is_waited_for() {
    let (outcome, pauses, events) = assign_after(true, 3).await;
    assert_eq!(outcome.status, SessionStatus::Finish, "{events:?}");
    assert!((1..=4).contains(&pauses), "{pauses} pauses");
    let assigned = events.iter().any(|e| {
        e["action"]["assign"] == "AppAgent/Writer" && e["action"]["window"] == "Doc - Writer"
    });
    assert!(assigned, "the window was assigned: {events:?}");

    // never retitled: the wait is bounded, and the model hears no window matches
    let (_, pauses, events) = assign_after(true, u32::MAX).await;
    assert_eq!(pauses, 32, "{events:?}");
    let told = events
        .iter()
        .filter_map(|e| e["result"].as_str())
        .any(|r| r.contains("no window matches"));
    assert!(told, "{events:?}");

    // no launch: nothing to wait for
    let (_, pauses, _) = assign_after(false, u32::MAX).await;
    assert_eq!(pauses, 0);
}

/// A host answer decided before the person took over is dropped (its command never runs);
/// the loop pauses, records the hand-over, and the host decides anew.
#[tokio::test]
async fn a_host_answer_from_before_a_take_over_is_dropped() {
    let log: Log = Arc::default();
    let desktop = PersonDesktop {
        inner: FakeDesktop {
            log: log.clone(),
            controls: Mutex::new(vec![button("del", "Delete")]),
        },
        lists: Mutex::new(0),
        taken: Mutex::new(false),
    };
    let mut stale = host("ASSIGN");
    stale["Bash"] = "touch stale".into();
    let llm = FakeLlm(
        Mutex::new(
            vec![
                stale,
                host("ASSIGN"),
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
                host("FINISH"),
            ]
            .into(),
        ),
        Mutex::default(),
        Mutex::default(),
    );
    let user = FakeUser {
        log: log.clone(),
        decision: Decision::Reject,
    };
    let config = Config::default();
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let services = Services {
        desktop: &desktop,
        host_llm: &llm,
        app_llm: &llm,
        user: &user,
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = MemRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .run("request", &mut rec)
        .await;
    assert_eq!(
        outcome.status,
        SessionStatus::Finish,
        "{:?}",
        outcome.message
    );
    assert_eq!(
        log.lock().map(|l| l.clone()).unwrap_or_default(),
        vec!["handback".to_string()]
    );
    let kinds: Vec<String> = rec
        .events
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["type"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds[..5],
        [
            "session_start ",
            "step CONTINUE",
            "takeover ",
            "handback ",
            "step CONTINUE"
        ]
    );
    let dropped = &rec.events[1];
    assert_eq!(dropped["status"], "CONTINUE", "{dropped}");
    assert_eq!(dropped["action"]["discarded"], "takeover", "{dropped}");
    assert_eq!(dropped["action"]["executed"], false, "{dropped}");
}

#[tokio::test]
async fn a_rejected_confirm_never_reaches_the_desktop() {
    let r = run(
        vec![
            host("ASSIGN"),
            app("1", "Delete", "CONFIRM"),
            host("FINISH"),
        ],
        Decision::Reject,
        Config::default(),
    )
    .await;
    assert_eq!(
        r.log,
        vec![
            "confirm click {\"button\":\"left\",\"double\":false} on [1] button \"Delete\""
                .to_string()
        ]
    );
    assert_eq!(
        r.seq,
        seq(&[
            ("host", "CONTINUE"),
            ("host", "ASSIGN"),
            ("app", "CONTINUE"),
            ("app", "CONFIRM"),
            ("app", "FINISH"),
            ("host", "CONTINUE"),
            ("host", "FINISH"),
        ])
    );
    assert_eq!(r.outcome.status, SessionStatus::Finish);
}

/// What the model learnt about its server during a step is in that step's record, once;
/// the configured mode is in `session_start`.
#[tokio::test]
async fn model_notes_are_recorded_in_the_step_they_happened_in() {
    let mut first = host("ASSIGN");
    first["_note"] = "json".into();
    let r = run(
        vec![
            first,
            json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
            host("FINISH"),
        ],
        Decision::Approve,
        Config {
            structured_output: crate::StructuredOutput::Json,
            ..Config::default()
        },
    )
    .await;
    assert_eq!(r.events[0]["type"], "session_start");
    assert_eq!(r.events[0]["structured_output"], "json");
    let steps: Vec<&Value> = r.events.iter().filter(|e| e["type"] == "step").collect();
    assert_eq!(
        steps[0]["model_notes"],
        json!([{"about": "structured_output", "now": "json", "message": "settled on json"}])
    );
    for later in &steps[1..] {
        assert!(later.get("model_notes").is_none(), "said once: {later}");
    }
    // the status line's tokens per second, rounded, on steps that asked the model
    assert_eq!(steps[0]["tokens_per_s"], 12.3);
}

#[tokio::test]
async fn an_approved_confirm_runs_the_action_once_after_approval() {
    let r = run(
        vec![
            host("ASSIGN"),
            app("1", "Delete", "CONFIRM"),
            json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
            host("FINISH"),
        ],
        Decision::Approve,
        Config::default(),
    )
    .await;
    assert_eq!(
        r.log,
        vec![
            "confirm click {\"button\":\"left\",\"double\":false} on [1] button \"Delete\""
                .to_string(),
            "act click Some(\"del\")".to_string()
        ]
    );
}

#[tokio::test]
async fn only_processing_states_count_as_steps() {
    let config = Config {
        max_steps: 2,
        ..Config::default()
    };
    // host CONTINUE (1) → ASSIGN (not counted) → app CONTINUE (2) → limit.
    let r = run(
        vec![host("ASSIGN"), app("1", "Delete", "CONTINUE")],
        Decision::Approve,
        config,
    )
    .await;
    assert_eq!(r.outcome.status, SessionStatus::Fail);
    assert_eq!(r.outcome.reason, "max_steps");
    assert_eq!(r.outcome.steps, 2);
    assert_eq!(r.seq.len(), 3);
}

#[tokio::test]
async fn host_steps_carry_the_plan_and_app_steps_do_not() {
    let mut planned = host("ASSIGN");
    planned["Plan"] = json!(["delete it", "report back"]);
    let r = run(
        vec![planned, app("1", "Delete", "FINISH"), host("FINISH")],
        Decision::Approve,
        Config::default(),
    )
    .await;
    let plans: Vec<(String, Value)> = r
        .events
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| {
            (
                e["role"].as_str().unwrap_or("").to_string(),
                e["plan"].clone(),
            )
        })
        .collect();
    let first = plans
        .iter()
        .find(|(role, _)| role == "host")
        .expect("a host step");
    assert_eq!(first.1, json!(["delete it", "report back"]), "{plans:?}");
    assert!(
        plans
            .iter()
            .filter(|(role, _)| role == "app")
            .all(|(_, p)| p.is_null()),
        "{plans:?}"
    );
}

#[tokio::test]
async fn screenshot_goes_to_continue_when_nothing_new_appeared() {
    // Click "Open" (reveals OK) with SCREENSHOT; in SCREENSHOT, OK is new, so a further
    // SCREENSHOT is honoured; the next capture shows nothing new, so SCREENSHOT → CONTINUE.
    let r = run(
        vec![
            host("ASSIGN"),
            app("2", "Open", "SCREENSHOT"),
            json!({"Observation": "o", "Thought": "t", "Status": "SCREENSHOT"}),
            json!({"Observation": "o", "Thought": "t", "Status": "SCREENSHOT"}),
            json!({"Observation": "o", "Thought": "t", "Status": "FINISH"}),
            host("FINISH"),
        ],
        Decision::Approve,
        Config::default(),
    )
    .await;
    assert_eq!(
        r.seq,
        seq(&[
            ("host", "CONTINUE"),
            ("host", "ASSIGN"),
            ("app", "CONTINUE"),
            ("app", "SCREENSHOT"),
            ("app", "SCREENSHOT"),
            ("app", "CONTINUE"),
            ("app", "FINISH"),
            ("host", "CONTINUE"),
            ("host", "FINISH"),
        ])
    );
}

#[tokio::test]
async fn tools_are_listed_validated_and_called() {
    let tool = |args: Value, status: &str| {
        json!({"Observation": "o", "Thought": "t", "Function": "write_file", "Args": args,
               "Status": status})
    };
    let r = run_with(
        vec![
            host("ASSIGN"),
            tool(json!({}), "CONTINUE"),
            tool(json!({"path": "a.txt"}), "FINISH"),
            host("FINISH"),
        ],
        Decision::Approve,
        Config::default(),
        true,
    )
    .await;
    assert_eq!(r.outcome.status, SessionStatus::Finish);
    assert_eq!(
        r.log,
        vec!["tool write_file {\"path\":\"a.txt\"}".to_string()]
    );
    // The app prompt listed the tool; the bad Args were sent back with the schema error.
    assert!(r.prompts[1].contains("write_file: Write a file for Writer."));
    assert!(r.prompts[2].contains("\"path\" is a required property"));
    // The host saw the tool's result as the subtask's result.
    assert!(r.prompts[3].contains("wrote 5 bytes"), "{}", r.prompts[3]);
}

/// A list's action failed only when it failed, not when its result reads like a failure:
/// a tool whose text starts "action failed" succeeded, and the list goes on.
#[tokio::test]
async fn a_list_stops_at_a_failure_not_at_its_words() {
    let list = json!({"Observation": "o", "Thought": "t", "Status": "FINISH", "Actions": [
        {"Function": "write_file", "Args": {"path": "log.txt"}},
        {"Function": "click", "Args": {}, "ControlLabel": "2", "ControlText": "Open"}]});
    let config = Config {
        multi_action: true,
        ..Config::default()
    };
    let r = run_with(
        vec![host("ASSIGN"), list, host("FINISH")],
        Decision::Approve,
        config,
        true,
    )
    .await;
    assert_eq!(r.outcome.status, SessionStatus::Finish, "{:#?}", r.events);
    assert_eq!(
        r.log,
        [
            "tool write_file {\"path\":\"log.txt\"}",
            "act click Some(\"open\")"
        ]
    );
    let step = r
        .events
        .iter()
        .find(|e| e["action"]["function"] == "batch")
        .expect("the list's step");
    assert_eq!(step["action"]["completed"], 2, "{step}");
    let result = step["result"].as_str().unwrap_or("");
    assert!(result.starts_with("ran 2 of 2 actions"), "{result}");
}

/// A model that sets the Ctrl-C flag during its `at`-th call (from 0), as a Ctrl-C pressed
/// while that call runs; that call then answers, or with `cut` fails as a cut call does.
struct CtrlCDuring {
    answers: Mutex<VecDeque<Value>>,
    calls: Mutex<usize>,
    at: usize,
    flag: Arc<AtomicBool>,
    cut: bool,
}

#[async_trait]
impl LlmClient for CtrlCDuring {
    async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let n = {
            let mut c = self.calls.lock().expect("lock");
            *c += 1;
            *c - 1
        };
        let next = self.answers.lock().ok().and_then(|mut q| q.pop_front());
        if n == self.at {
            self.flag.store(true, Ordering::SeqCst);
            if self.cut {
                return Err(LlmError::Fatal("the model call was cancelled".into()));
            }
        }
        match next {
            Some(v) => Ok(ChatResponse {
                text: v.to_string(),
                usage: Usage::default(),
            }),
            None => Err(LlmError::Fatal("fake model: no more answers".into())),
        }
    }
    fn describe(&self) -> String {
        "fake".into()
    }
}

async fn run_cancelled(answers: Vec<Value>, at: usize, cut: bool) -> (Vec<Value>, SessionOutcome) {
    let log: Log = Arc::default();
    let desktop = FakeDesktop {
        log: log.clone(),
        controls: Mutex::new(vec![button("ok", "OK")]),
    };
    let flag = Arc::new(AtomicBool::new(false));
    let llm = CtrlCDuring {
        answers: Mutex::new(answers.into()),
        calls: Mutex::default(),
        at,
        flag: flag.clone(),
        cut,
    };
    let user = FakeUser {
        log,
        decision: Decision::Approve,
    };
    let config = Config::default();
    let prompts = Prompts::new(&config.prompts).expect("templates");
    let services = Services {
        desktop: &desktop,
        host_llm: &llm,
        app_llm: &llm,
        user: &user,
        config: &config,
        prompts: &prompts,
        tools: None,
        knowledge: None,
    };
    let mut rec = MemRecorder::default();
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .with_cancel(flag)
        .run("request", &mut rec)
        .await;
    (rec.events, outcome)
}

fn states(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "step")
        .map(|e| {
            format!(
                "{}:{}:{}",
                e["role"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or(""),
                e["status"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test]
async fn ctrl_c_during_a_step_that_finishes_the_subtask_keeps_its_result() {
    let mut finish = app("1", "OK", "FINISH");
    finish["Result"] = "deleted".into();
    let (events, outcome) = run_cancelled(vec![host("ASSIGN"), finish], 1, false).await;
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert_eq!(
        states(&events),
        [
            "host:CONTINUE:ASSIGN",
            "host:ASSIGN:ASSIGN",
            "app:CONTINUE:FINISH",
            "app:FINISH:FINISH"
        ]
    );
    let finished = events
        .iter()
        .find(|e| e["type"] == "step" && e["state"] == "FINISH")
        .expect("FINISH step");
    assert!(
        finished["result"]
            .as_str()
            .unwrap_or("")
            .contains("deleted"),
        "{finished}"
    );
}

#[tokio::test]
async fn a_model_call_cut_by_ctrl_c_ends_cancelled_not_error() {
    // The AppAgent's call is cut: the subtask is archived CANCELLED, no ERROR state runs.
    let (events, outcome) =
        run_cancelled(vec![host("ASSIGN"), app("1", "OK", "FINISH")], 1, true).await;
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert_eq!(outcome.reason, "cancelled");
    assert_eq!(
        states(&events),
        [
            "host:CONTINUE:ASSIGN",
            "host:ASSIGN:ASSIGN",
            "app:CONTINUE:ERROR"
        ]
    );
    // The host's call is cut: likewise.
    let (events, outcome) = run_cancelled(vec![host("ASSIGN")], 0, true).await;
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert_eq!(states(&events), ["host:CONTINUE:ERROR"]);
}
