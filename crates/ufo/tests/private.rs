//! `--desktop private` (issue 15): the agent works on a desktop of its own. The session's own
//! display stands for the person's desktop: its windows and pointer are recorded before and
//! must be the same after; no process of the private desktop may remain, also after
//! `kill -9` of ufo in the middle of a session.
//!
//! With `--watch` the private desktop shows in a Xephyr window on that display, and the test
//! stands in for the person: it clicks into that window with xdotool (Xephyr forwards the click
//! through its own input device), so the agent pauses, and presses Pause to hand it back.
//!
//! Live tests: they need the programs of a desktop session (Xvfb, Xephyr, dbus, at-spi2-core,
//! openbox, gnome-calculator, xdotool) and run when `DISPLAY` is set or `UFO_LIVE_TESTS=1`.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::procs;
use common::{repo_root, ufo};
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use ufo_desktop::testing::require_live;

/// The tests take turns: each checks that no private desktop is left, which another test's
/// running desktop would spoil.
static SERIAL: Mutex<()> = Mutex::new(());

/// Processes that carry a private desktop's mark.
fn marked() -> Vec<String> {
    procs::carrying("UFO_SESSION_MARK=ufo-private-")
}

/// Wait (up to `within`) until no private desktop process is left; the ones left otherwise.
fn none_left(within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = marked();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The person's desktop as seen from outside: its client windows and the pointer.
fn outer_state() -> (String, String) {
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    (
        run(&["xprop", "-root", "_NET_CLIENT_LIST"]),
        run(&["xdotool", "getmouselocation"]),
    )
}

fn calculator_script(dir: &Path, then_wait: bool) -> std::path::PathBuf {
    let app = |name: &str, status: &str| {
        json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
               "ControlText": name, "Function": "click", "Args": {}, "Status": status}})
        .to_string()
    };
    let mut lines = vec![json!({"agent": "host",
        "response": {"Observation": "No calculator is open.", "Thought": "Launch it.",
                     "Current Sub-Task": "Compute 12+30", "ControlText": "calculator",
                     "Status": "ASSIGN"}})
    .to_string()];
    for b in ["1", "2", "+", "3", "0", "="] {
        lines.push(app(b, "CONTINUE"));
    }
    if then_wait {
        // many more steps: the test kills ufo during them
        for _ in 0..40 {
            lines.push(app("0", "CONTINUE"));
        }
    }
    // the display of the private desktop's calculator shows the sum
    lines.push(
        json!({"agent": "app", "response": {"Observation": "42", "Thought": "done",
               "Status": "FINISH"}, "expect": ["\"42\""]})
        .to_string(),
    );
    lines.push(
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.",
               "Status": "FINISH"}})
        .to_string(),
    );
    let path = dir.join("script.jsonl");
    std::fs::write(&path, lines.join("\n")).expect("script");
    path
}

#[test]
fn a_private_desktop_computes_and_leaves_the_persons_desktop_alone() {
    if !require_live("a_private_desktop_computes_and_leaves_the_persons_desktop_alone") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        none_left(Duration::from_secs(5)).is_empty(),
        "{:?}",
        marked()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), false);
    let out = tmp.path().join("out");
    let before = outer_state();
    let started = Instant::now();
    let run = ufo()
        .args(["run", "--desktop", "private", "--scratch-home", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 + 30")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // the private desktop's daemons log to its folder, not to the person's terminal
    assert!(!stderr.contains("dbus-daemon"), "{stderr}");
    println!(
        "whole private session: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // the person's windows and pointer did not change
    assert_eq!(outer_state(), before);
    // nothing of the private desktop remains
    let left = none_left(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    // a resume of it would start a private desktop again
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json"))
            .expect("json");
    assert_eq!(record["desktop"], "private");
}

#[test]
fn nothing_of_a_private_desktop_survives_a_killed_ufo() {
    if !require_live("nothing_of_a_private_desktop_survives_a_killed_ufo") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        none_left(Duration::from_secs(5)).is_empty(),
        "{:?}",
        marked()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), true);
    let out = tmp.path().join("out");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", "private", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 + 30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ufo starts");
    // wait until the AppAgent works in the private desktop's calculator
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
        if events.matches("\"role\":\"app\"").count() >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session did not get going:\n{events}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!marked().is_empty(), "the private desktop runs");
    procs::signal(child.id(), Signal::SIGKILL);
    let _ = child.wait();
    let left = none_left(Duration::from_secs(10));
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
}

#[test]
fn a_batch_runs_its_jobs_on_private_desktops() {
    if !require_live("a_batch_runs_its_jobs_on_private_desktops") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let started = Instant::now();
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(repo_root().join("tests").join("batch"))
        .args(["--confirm", "yes", "--task-timeout", "120"])
        .args(["--jobs", "2", "--desktop", "private", "--out"])
        .arg(&out)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // calc_wrong fails by design: exit 1
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let status = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    for (id, want) in [
        ("calc_sum", "passed"),
        ("calc_wrong", "failed"),
        ("infeasible_fax", "passed"),
        ("mousepad_append", "passed"),
        ("shell_delete", "passed"),
        ("shell_list", "passed"),
        ("shell_write", "passed"),
        ("skip_download", "skipped"),
    ] {
        assert_eq!(status(id), want, "{id}\n{stdout}\n{stderr}");
    }
    println!(
        "batch --jobs 2 --desktop private: {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    let left = none_left(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn watch_without_a_private_desktop_is_a_usage_error() {
    let output = ufo()
        .args(["run", "--watch", "--desktop", "sim:x.json", "a request"])
        .output()
        .expect("ufo runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--desktop private"));
}

/// `ufo run --desktop private` with `path` as its `PATH` and its trajectory under `dir/out`.
fn run_private_with_path(path: &str, dir: &Path) -> std::process::Output {
    ufo()
        .env("PATH", path)
        .args(["run", "--desktop", "private", "--llm", "script:none.jsonl"])
        .arg("--out")
        .arg(dir.join("out"))
        .arg("a request")
        .output()
        .expect("ufo runs")
}

/// Issue 15: a private desktop that cannot start (its programs missing) stops ufo before
/// anything runs, with exit 2 and the packages to install.
#[test]
fn missing_programs_are_named_with_their_packages() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = run_private_with_path(&tmp.path().display().to_string(), tmp.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("apt-get install") && stderr.contains("xvfb"),
        "{stderr}"
    );
    assert!(!tmp.path().join("out").join("events.jsonl").exists());
}

/// A private desktop whose X server cannot start stops ufo with exit 2 and quotes the end of
/// the server's log (the desktop's folder, the log in it, is removed with the failed start):
/// here an `Xvfb` that says why and exits, ahead of the real one on `PATH`.
#[test]
fn an_x_server_that_cannot_start_is_quoted_from_its_log() {
    if !require_live("an_x_server_that_cannot_start_is_quoted_from_its_log") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = tmp.path().join("Xvfb");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'fake Xvfb: no screens found' >&2\nexit 1\n",
    )
    .expect("write the fake server");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("make it runnable");
    let path = format!(
        "{}:{}",
        tmp.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = run_private_with_path(&path, tmp.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("xserver.log (removed with the desktop that did not start)")
            && stderr.contains("fake Xvfb: no screens found"),
        "the error quotes the server's log: {stderr}"
    );
    assert!(!tmp.path().join("out").join("events.jsonl").exists());
    assert_eq!(none_left(Duration::from_secs(10)), Vec::<String>::new());
}

/// The Xephyr window of a watched private desktop on the person's display, if one is shown.
fn xephyr_window() -> Option<String> {
    let out = Command::new("xdotool")
        .args(["search", "--name", "^Xephyr on "])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_string)
}

/// Issue 15 (watching): `--watch` shows the private desktop in a window on the person's
/// display while the session runs; afterwards the window is gone, the person's windows and
/// pointer are as they were, and no process of the private desktop is left.
#[test]
fn a_watched_private_desktop_shows_in_a_window_and_leaves_nothing() {
    if !require_live("a_watched_private_desktop_shows_in_a_window_and_leaves_nothing") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        none_left(Duration::from_secs(5)).is_empty(),
        "{:?}",
        marked()
    );
    assert_eq!(xephyr_window(), None, "a Xephyr window is open already");
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), false);
    let out = tmp.path().join("out");
    let before = outer_state();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args([
            "run",
            "--desktop",
            "private",
            "--watch",
            "--scratch-home",
            "--llm",
        ])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 + 30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let mut shown = false;
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        shown |= xephyr_window().is_some();
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the watched session did not end within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(shown, "no Xephyr window appeared on the person's display");
    // nobody touched the window: no take-over
    let events = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    assert!(!events.contains("\"takeover\""), "{events}");
    assert_eq!(xephyr_window(), None, "the Xephyr window is still there");
    assert_eq!(outer_state(), before);
    let left = none_left(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// One answer of the fake model server: in OpenAI's wire format, after `delay`.
struct SlowAnswers {
    answers: Vec<(String, Duration)>,
    next: std::sync::atomic::AtomicUsize,
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl wiremock::Respond for SlowAnswers {
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

/// Issue 15 (taking over): the person clicks into the watched desktop's window while the
/// model is deciding the click on "3" (its answer comes late, so the click lands between the
/// observation and the action, deterministically). The agent drops that answer (it was made
/// on a screen the person may have changed), pauses, records the take-over, executes nothing
/// until the person presses Pause, then observes again and asks the model anew; the sum is
/// 42, not 12 + 33 or 12 + 330.
#[tokio::test]
async fn the_person_takes_over_the_watched_desktop_and_hands_it_back() {
    if !require_live("the_person_takes_over_the_watched_desktop_and_hands_it_back") {
        return;
    }
    let server = wiremock::MockServer::start().await;
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let host = |status: &str| {
        json!({"Observation": "o", "Thought": "t", "Current Sub-Task": "Compute 12+30",
               "ControlText": "calculator", "Status": status})
        .to_string()
    };
    let app = |name: &str, status: &str| {
        json!({"Observation": "o", "Thought": "t", "ControlText": name, "Function": "click",
               "Args": {}, "Status": status})
        .to_string()
    };
    let now = Duration::ZERO;
    // request 4 (the first "3") is answered late: the person takes over meanwhile
    let slow = 4;
    let mut answers = vec![(host("ASSIGN"), now)];
    for b in ["1", "2", "+", "3", "3", "0", "="] {
        answers.push((app(b, "CONTINUE"), now));
    }
    answers[slow].1 = Duration::from_secs(6);
    answers.push((
        json!({"Observation": "42", "Thought": "done", "Status": "FINISH"}).to_string(),
        now,
    ));
    answers.push((host("FINISH"), now));
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(SlowAnswers {
            answers,
            next: std::sync::atomic::AtomicUsize::new(0),
            seen: seen.clone(),
        })
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let o = out.clone();
    let (code, stderr, xephyr_left, left) = tokio::task::spawn_blocking(move || {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        assert!(
            none_left(Duration::from_secs(5)).is_empty(),
            "{:?}",
            marked()
        );
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .args(["run", "--desktop", "private", "--watch", "--scratch-home"])
            .args(["--llm", "openai:fake-model", "--out"])
            .arg(&o)
            .arg("Compute 12 + 30")
            .env("UFO_LLM_BASE_URL", base)
            .env("OPENAI_API_KEY", "sk-ufo-test-not-a-key")
            .env_remove("UFO_LLM_API_KEY")
            .env_remove("UFO_LLM")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ufo starts");
        let wait_for = |what: &str, secs: u64, ready: &dyn Fn() -> bool| {
            let deadline = Instant::now() + Duration::from_secs(secs);
            while !ready() {
                assert!(Instant::now() < deadline, "{what} did not happen");
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        let events = || std::fs::read_to_string(o.join("events.jsonl")).unwrap_or_default();
        // the slow answer is being awaited: the observation is made, the action not yet
        wait_for("the slow model call", 90, &|| {
            seen.load(std::sync::atomic::Ordering::SeqCst) > slow
        });
        let window = xephyr_window().expect("the Xephyr window on the person's display");
        // the person clicks an empty corner of the private desktop (not the calculator)
        let clicked = Command::new("xdotool")
            .args([
                "mousemove",
                "--window",
                &window,
                "1150",
                "900",
                "click",
                "1",
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(clicked, "xdotool could not click into the Xephyr window");
        wait_for("the takeover record", 30, &|| {
            events().contains("\"takeover\"")
        });
        // while taken over, nothing runs: no new step for a while
        let steps = events().matches("\"type\":\"step\"").count();
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(events().matches("\"type\":\"step\"").count(), steps);
        assert!(!events().contains("\"handback\""));
        // the person hands it back with the Pause key (the pointer is in the window)
        let pressed = Command::new("xdotool")
            .args(["key", "Pause"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(pressed, "xdotool could not press Pause");
        let deadline = Instant::now() + Duration::from_secs(90);
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the session did not end after the hand-back:\n{}", events());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        // while this test still holds its turn: the next test's desktop would count as left
        (
            status.code(),
            stderr,
            xephyr_window(),
            none_left(Duration::from_secs(10)),
        )
    })
    .await
    .expect("join");
    assert_eq!(code, Some(0), "{stderr}");
    let events: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |kind: &str| {
        events
            .iter()
            .position(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} record: {events:?}"))
    };
    let (t, h) = (at("takeover"), at("handback"));
    assert_eq!(h, t + 1, "a step ran while taken over: {events:?}");
    assert!(
        events[t]["input"]
            .as_str()
            .is_some_and(|i| i.contains("button press") && !i.contains("XTEST")),
        "{}",
        events[t]
    );
    assert_eq!(events[h]["how"], "handed_back", "{}", events[h]);
    // the step decided before the take-over was not executed
    let dropped = &events[t - 1];
    assert_eq!(dropped["action"]["discarded"], "takeover", "{dropped}");
    assert_eq!(dropped["action"]["executed"], false, "{dropped}");
    // the progress shows both
    assert!(
        stderr.contains("the person took the desktop over")
            && stderr.contains("handed the desktop back"),
        "{stderr}"
    );
    // the calculator showed 42 to the model when it finished (the last app prompt)
    let finish = events
        .iter()
        .rev()
        .find(|e| {
            e["type"] == "step"
                && e["role"] == "app"
                && e["state"] == "CONTINUE"
                && e["status"] == "FINISH"
        })
        .expect("the app's FINISH step");
    let prompt = finish["artifacts"]["prompt"].as_str().unwrap_or_default();
    let text = std::fs::read_to_string(out.join(prompt)).unwrap_or_default();
    assert!(
        text.contains("\"42\""),
        "the display does not show 42:\n{text}"
    );
    assert!(xephyr_left.is_none(), "the Xephyr window is still there");
    assert!(left.is_empty(), "left behind: {left:?}");
}
