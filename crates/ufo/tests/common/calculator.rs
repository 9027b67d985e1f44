//! A private desktop's calculator seen from outside ufo (its environment read from /proc,
//! its display through pyatspi, its buttons through `ufo inspect` run inside it), and a fake
//! model server whose answers come late on purpose: for the live take-over tests.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

/// Through pyatspi (not ufo), inside the private desktop: the texts of the calculator's
/// display, as JSON.
pub const CALCULATOR_TEXTS: &str = r#"
import sys, json, pyatspi
def walk(node, depth=0):
    if node is None or depth > 40:
        return
    yield node
    for i in range(node.childCount):
        try:
            child = node.getChildAtIndex(i)
        except Exception:
            continue
        yield from walk(child, depth + 1)
for app in pyatspi.Registry.getDesktop(0):
    if app is None or 'calculator' not in (app.name or '').lower():
        continue
    texts = []
    for n in walk(app):
        if n.getRoleName() in ('text', 'editbar', 'entry'):
            try:
                t = n.queryText()
                texts.append(t.getText(0, t.characterCount))
            except Exception:
                pass
    print(json.dumps(texts))
    sys.exit(0)
sys.exit(1)
"#;

/// The environment of the private desktop's calculator (its display and buses), read from
/// the process that carries the private desktop's mark.
pub fn private_calculator_env() -> Option<Vec<(String, String)>> {
    for e in std::fs::read_dir("/proc").ok()?.filter_map(|e| e.ok()) {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("gnome-calc") {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let vars: Vec<(String, String)> = env
            .split(|b| *b == 0)
            .filter_map(|kv| {
                let kv = String::from_utf8_lossy(kv);
                let (k, v) = kv.split_once('=')?;
                Some((k.to_string(), v.to_string()))
            })
            .collect();
        if vars
            .iter()
            .any(|(k, v)| k == "UFO_SESSION_MARK" && v.starts_with("ufo-private-"))
        {
            return Some(vars);
        }
    }
    None
}

/// A command run inside the private desktop (its display and buses).
pub fn inside(program: impl AsRef<std::ffi::OsStr>) -> Option<Command> {
    let env = private_calculator_env()?;
    let mut cmd = Command::new(program);
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in env.iter().filter(|(k, _)| {
        matches!(
            k.as_str(),
            "DISPLAY"
                | "DBUS_SESSION_BUS_ADDRESS"
                | "AT_SPI_BUS_ADDRESS"
                | "XDG_RUNTIME_DIR"
                | "HOME"
        )
    }) {
        cmd.env(k, v);
    }
    Some(cmd)
}

/// The texts of the calculator's display, through pyatspi.
pub fn display_texts() -> Option<Vec<String>> {
    let o = inside("/usr/bin/python3")?
        .arg("-c")
        .arg(CALCULATOR_TEXTS)
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    serde_json::from_slice(&o.stdout).ok()
}

/// The screen centre of the calculator's button `name`, as `ufo inspect` lists it.
pub fn button_centre(name: &str) -> Option<(i64, i64)> {
    let o = inside(assert_cmd::cargo::cargo_bin("ufo"))?
        .args(["inspect", "calculator"])
        .output()
        .ok()?;
    let listing = String::from_utf8_lossy(&o.stdout);
    let wanted = format!("button \"{name}\" @");
    let line = listing.lines().find(|l| l.contains(&wanted))?;
    let rest = line.split_once(&wanted)?.1;
    let mut parts = rest.split(' ');
    let (at, size) = (parts.next()?, parts.next()?);
    let (x, y) = at.split_once(',')?;
    let (w, h) = size.split_once('x')?;
    let num = |t: &str| t.parse::<i64>().ok();
    Some((num(x)? + num(w)? / 2, num(y)? + num(h)? / 2))
}

/// A child process ended when the test ends, also when it fails.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Wait (bounded) until `ready` gives a value.
pub fn wait_value<T>(what: &str, within: Duration, ready: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A fake model server's answers, in OpenAI's wire format, some after a delay.
pub struct Answers {
    /// The answers in order, each with its delay.
    pub answers: Vec<(String, Duration)>,
    /// The next answer's index.
    pub next: std::sync::atomic::AtomicUsize,
    /// Requests seen so far.
    pub seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl wiremock::Respond for Answers {
    fn respond(&self, _req: &wiremock::Request) -> wiremock::ResponseTemplate {
        use std::sync::atomic::Ordering;
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        self.seen.fetch_add(1, Ordering::SeqCst);
        match self.answers.get(i) {
            Some((content, delay)) => wiremock::ResponseTemplate::new(200)
                .set_delay(*delay)
                .set_body_json(json!({
                    "id": format!("chatcmpl-{i}"),
                    "object": "chat.completion",
                    "model": "fake-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}
                })),
            None => wiremock::ResponseTemplate::new(400).set_body_string("no more answers"),
        }
    }
}

/// A model (OpenAI's chat API, mocked) for 12 + 30 on the calculator: the HostAgent assigns,
/// the AppAgent clicks 1 2 + 3 0 =, then FINISH. The answer for "3" comes `slow` late (a
/// take-over lands while the agent waits for it) and the FINISH `finish` late (the display is
/// read before the private desktop ends). Returns the server, the requests seen so far, and
/// the indexes of the slow answer and of the FINISH.
pub async fn twelve_plus_thirty_model(
    slow: Duration,
    finish: Duration,
) -> (
    wiremock::MockServer,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    usize,
    usize,
) {
    let server = wiremock::MockServer::start().await;
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let host = |status: &str| {
        serde_json::json!({"Observation": "o", "Thought": "t",
               "Current Sub-Task": "Compute 12+30", "ControlText": "calculator", "Status": status})
        .to_string()
    };
    let app = |name: &str| {
        serde_json::json!({"Observation": "o", "Thought": "t", "ControlText": name,
               "Function": "click", "Args": {}, "Status": "CONTINUE"})
        .to_string()
    };
    let now = Duration::ZERO;
    let (slow_at, last) = (4, 7);
    let mut answers = vec![(host("ASSIGN"), now)];
    for b in ["1", "2", "+", "3", "0", "="] {
        answers.push((app(b), now));
    }
    answers[slow_at].1 = slow;
    answers.push((
        serde_json::json!({"Observation": "42", "Thought": "done", "Status": "FINISH"}).to_string(),
        finish,
    ));
    answers.push((host("FINISH"), now));
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(Answers {
            answers,
            next: std::sync::atomic::AtomicUsize::new(0),
            seen: seen.clone(),
        })
        .mount(&server)
        .await;
    (server, seen, slow_at, last)
}
