//! The real HTTP path end to end: `ufo run --llm openai:...` against a fake OpenAI-compatible
//! server on loopback, recorded with `--record`, then replayed with `--llm replay:DIR` with no
//! server and no key.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-ufo-test-DO-NOT-LEAK-4711";

/// Serves the Word→Excel example's answers in order, in OpenAI's wire format, and keeps the
/// request bodies.
struct Answers {
    answers: Vec<String>,
    next: AtomicUsize,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Respond for Answers {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        if let Ok(body) = serde_json::from_slice::<Value>(&req.body) {
            if let Ok(mut seen) = self.seen.lock() {
                seen.push(body);
            }
        }
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        match self.answers.get(i) {
            Some(content) => ResponseTemplate::new(200).set_body_json(json!({
                "id": format!("chatcmpl-{i}"),
                "object": "chat.completion",
                "model": "fake-model",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1000 + i, "completion_tokens": 50}
            })),
            None => ResponseTemplate::new(400).set_body_string("no more answers"),
        }
    }
}

fn example_answers() -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("examples/word_excel/script.jsonl"))
        .expect("script");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            v["response"].to_string()
        })
        .collect()
}

fn run_ufo(args: &[String], envs: &[(&str, String)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"));
    cmd.args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("UFO_LLM_API_KEY")
        .env_remove("UFO_LLM_BASE_URL")
        .env_remove("UFO_LLM");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("ufo runs")
}

fn steps(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|e| e["type"] == "step")
        .collect()
}

/// What must be equal between a run and its replay.
fn behaviour(out: &Path) -> Vec<String> {
    steps(out)
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {} {} {}",
                s(&e["role"]),
                s(&e["state"]),
                s(&e["status"]),
                e["action"],
                e["result"],
                e["llm"]
            )
        })
        .collect()
}

fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                if String::from_utf8_lossy(&bytes).contains(needle) {
                    hits.push(p.display().to_string());
                }
            }
        }
    }
    hits
}

#[tokio::test]
async fn openai_compatible_run_is_recorded_and_replayed() {
    let server = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Answers {
            answers: example_answers(),
            next: AtomicUsize::new(0),
            seen: seen.clone(),
        })
        .mount(&server)
        .await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let rec = tmp.path().join("rec");
    let ex = repo_root().join("examples/word_excel");
    let request = std::fs::read_to_string(ex.join("request.txt")).expect("request");
    let args = |llm: &str, out: &Path, record: bool| {
        let mut a = vec![
            "run".to_string(),
            "--desktop".into(),
            format!("sim:{}", ex.join("desktop.json").display()),
            "--llm".into(),
            llm.to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        if record {
            a.push("--record".into());
            a.push(rec.display().to_string());
        }
        a.push(request.trim().to_string());
        a
    };
    let base = format!("{}/v1", server.uri());
    let a = args("openai:fake-model", &out, true);
    let output = tokio::task::spawn_blocking(move || {
        run_ufo(
            &a,
            &[
                ("UFO_LLM_BASE_URL", base),
                ("OPENAI_API_KEY", KEY.to_string()),
            ],
        )
    })
    .await
    .expect("join");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");

    // The seed's sequence, through real HTTP.
    let seq: Vec<String> = steps(&out)
        .iter()
        .map(|e| format!("{} {}", s(&e["role"]), s(&e["state"])))
        .collect();
    assert_eq!(
        seq,
        [
            "host CONTINUE",
            "host ASSIGN",
            "app CONTINUE",
            "app FINISH",
            "host CONTINUE",
            "host ASSIGN",
            "app CONTINUE",
            "app FINISH",
            "host CONTINUE",
            "host FINISH"
        ]
    );
    // Usage came from the server's usage fields.
    let first = &steps(&out)[0];
    assert_eq!(first["llm"]["prompt_tokens"], 1000);
    assert_eq!(first["llm"]["completion_tokens"], 50);
    // The requests carried the model, the prompt and the screenshots as data URLs.
    let bodies = seen.lock().expect("lock").clone();
    assert_eq!(bodies.len(), 5);
    assert_eq!(bodies[0]["model"], "fake-model");
    let b1 = bodies[1].to_string();
    assert!(
        b1.contains("data:image/png;base64,"),
        "no image in {b1:.300}"
    );
    assert!(b1.contains("Sales"), "the app prompt lists the controls");
    // The key reached the server only: nowhere in the trajectory or the recording.
    assert!(
        files_containing(&out, KEY).is_empty(),
        "key leaked into {out:?}"
    );
    assert!(
        files_containing(&rec, KEY).is_empty(),
        "key leaked into {rec:?}"
    );
    assert!(!stderr.contains(KEY));

    // Replay: no server, no key, same behaviour.
    drop(server);
    let out2 = tmp.path().join("out2");
    let a = args(&format!("replay:{}", rec.display()), &out2, false);
    let output = tokio::task::spawn_blocking(move || run_ufo(&a, &[]))
        .await
        .expect("join");
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(behaviour(&out), behaviour(&out2));
    assert_eq!(
        std::fs::read_to_string(out.join("desktop_final.json")).expect("final"),
        std::fs::read_to_string(out2.join("desktop_final.json")).expect("final")
    );
}

#[tokio::test]
async fn a_priced_session_over_budget_fails_with_reason_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Answers {
            answers: example_answers(),
            next: AtomicUsize::new(0),
            seen: Arc::default(),
        })
        .mount(&server)
        .await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let cfg = tmp.path().join("ufo.toml");
    // 1000 prompt tokens at 1.0 per 1k: the first call alone costs more than 0.5.
    std::fs::write(
        &cfg,
        "max_cost = 0.5\n[prices.\"openai:fake-model\"]\ninput_per_1k = 1.0\noutput_per_1k = 2.0\n",
    )
    .expect("write");
    let ex = repo_root().join("examples/word_excel");
    let a = vec![
        "run".to_string(),
        "--desktop".into(),
        format!("sim:{}", ex.join("desktop.json").display()),
        "--llm".into(),
        "openai:fake-model".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "chart the sales".into(),
    ];
    let base = format!("{}/v1", server.uri());
    let output = tokio::task::spawn_blocking(move || run_ufo(&a, &[("UFO_LLM_BASE_URL", base)]))
        .await
        .expect("join");
    assert_eq!(
        output.status.code(),
        Some(1),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let end: Value = serde_json::from_str(text.lines().last().expect("line")).expect("json");
    assert_eq!(end["type"], "session_end");
    assert_eq!(end["reason"], "budget");
    assert!(end["llm"]["cost"].as_f64().unwrap_or(0.0) > 0.5);
    assert_eq!(steps(&out).len(), 1, "stopped after the first step");
}

/// `ufo run` with a failing fake server, the given extra environment and `--report`.
fn run_failing(
    base_url: &str,
    out: &Path,
    envs: &[(&str, String)],
) -> (std::process::Output, String) {
    let ex = repo_root().join("examples/word_excel");
    let a = vec![
        "run".to_string(),
        "--desktop".into(),
        format!("sim:{}", ex.join("desktop.json").display()),
        "--llm".into(),
        "openai:fake-model".into(),
        "--out".into(),
        out.display().to_string(),
        "--report".into(),
        "chart the sales".into(),
    ];
    let mut envs = envs.to_vec();
    envs.push(("UFO_LLM_BASE_URL", base_url.to_string()));
    let output = run_ufo(&a, &envs);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

/// Defect 13: a base URL with credentials (`user:secret@`, `?key=SECRET`) used to be printed
/// in errors, events.jsonl, ufo.log and report.html. Defect 15: the failed call (2 HTTP
/// requests) used to count as 0 model calls.
#[tokio::test]
async fn credentials_in_the_base_url_are_redacted_everywhere_and_failed_calls_count() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "down"}})),
        )
        .mount(&server)
        .await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let authority = server.uri().replace("http://", "");
    let base = format!("http://user:secret@{authority}/v1?key=SECRET&sig=SECRET2");
    let o = out.clone();
    let (output, stderr) = tokio::task::spawn_blocking(move || {
        run_failing(&base, &o, &[("UFO_LLM_MAX_ATTEMPTS", "2".to_string())])
    })
    .await
    .expect("join");
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    assert_eq!(server.received_requests().await.expect("requests").len(), 2);
    // The error still says where the request went, without the credentials.
    assert!(stderr.contains(&authority), "stderr:\n{stderr}");
    assert!(stderr.contains("***"), "stderr:\n{stderr}");
    assert!(out.join("report.html").exists());
    assert!(out.join("ufo.log").exists());
    for secret in ["secret", "SECRET"] {
        let hits = files_containing(&out, secret);
        assert!(hits.is_empty(), "{secret:?} leaked into {hits:?}");
        assert!(
            !stderr.contains(secret),
            "{secret:?} leaked into stderr:\n{stderr}"
        );
        assert!(!String::from_utf8_lossy(&output.stdout).contains(secret));
    }
    // The failed call counts as one model call, and its error names its HTTP attempts.
    let steps = steps(&out);
    assert_eq!(steps[0]["status"], "ERROR", "{}", steps[0]);
    assert_eq!(steps[0]["llm"]["calls"], 1, "{}", steps[0]);
    assert!(
        s(&steps[0]["error"]).contains("failed 2 time(s)"),
        "{}",
        steps[0]
    );
    let text = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let end: Value = serde_json::from_str(text.lines().last().expect("line")).expect("json");
    assert_eq!(end["type"], "session_end");
    assert_eq!(end["llm"]["calls"], 1, "{end}");
}

/// Defects 3 and 15: numbers that used to panic (`UFO_LLM_TIMEOUT_SECS=1e30`, exit 101) or
/// switch the budget off (`UFO_MAX_COST=NaN`) are configuration errors: exit 2, a message
/// naming the variable, no trajectory started.
#[test]
fn non_finite_or_out_of_range_numbers_are_configuration_errors() {
    let cases = [
        ("UFO_LLM_TIMEOUT_SECS", "1e30"),
        ("UFO_LLM_TIMEOUT_SECS", "NaN"),
        ("UFO_LLM_TIMEOUT_SECS", "-3"),
        ("UFO_LLM_TIMEOUT_SECS", "inf"),
        ("UFO_LLM_MAX_ATTEMPTS", "1000000"),
        ("UFO_MAX_COST", "NaN"),
        ("UFO_MAX_COST", "inf"),
        ("UFO_MAX_COST", "-1"),
    ];
    for (var, value) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out = tmp.path().join("out");
        let (output, stderr) =
            run_failing("http://127.0.0.1:9/v1", &out, &[(var, value.to_string())]);
        assert_eq!(output.status.code(), Some(2), "{var}={value}: {stderr}");
        assert!(stderr.contains(var), "{var}={value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{var}={value}: {stderr}");
        assert!(!out.join("events.jsonl").exists(), "{var}={value}");
    }
}
