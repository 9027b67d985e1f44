//! The web console of `ufo serve` (docs/console.md) through the real binary on a simulated
//! desktop with a scripted model: its refusals over HTTP (no cookie, no CSRF header, a foreign
//! Origin, a bad token, a CORS preflight, a cross-site form post, file-route paths that reach
//! outside the runs folder, links and FIFOs), and the page itself in headless Chromium (tests/console/page.py,
//! Playwright on the system's Chromium): log in, start a session, watch its lines arrive,
//! answer its PENDING question and approve its CONFIRM, then check the trajectory on disk; a
//! window title holding `<script>`, and markup in a request and in a batch's rows, are shown
//! as text. The browser tests run with
//! UFO_BROWSER_TESTS=1 (scripts/test.sh installs Playwright into target/test-deps/py).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::calculator::{
    button_centre, display_texts, private_calculator_env, twelve_plus_thirty_model, wait_value,
    Killed,
};
use common::console::{client, login, wait_records};
use common::served::{new_token_with_role, ufo_at as ufo, Served};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/console")
        .join(name)
}

/// A token for the browser: an admin's, since its sessions may approve held actions unasked
/// (`confirm: yes`).
fn new_token_for(home: &Path) -> String {
    new_token_with_role(home, "browser", "admin")
}

/// `ufo serve` on the console fixture's desktop, its sessions in `<home>/runs` with `script`;
/// sessions act on the desktop, so the server allows actions.
fn serve(home: &Path, script: &str) -> Served {
    let llm = format!("script:{}", fixture(script).display());
    let config = fixture("ufo.toml").display().to_string();
    let runs = home.join("runs").display().to_string();
    Served::start(
        ufo(home),
        &format!("sim:{}", fixture("desktop.json").display()),
        &[
            "--llm",
            &llm,
            "--config",
            &config,
            "--runs",
            &runs,
            "--allow-actions",
        ],
    )
}

/// End the server as a person would (SIGTERM, what dropping it does), so it ends its sessions.
fn stop(server: Served) {
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_refuses_requests_without_login_csrf_or_own_origin() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let server = serve(home.path(), "plain.jsonl");
    let base = server.origin();
    let http = client();

    // the page and its assets, under the strict policy
    let page = http.get(format!("{base}/")).send().await.expect("page");
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(
        !page.text().await.expect("html").contains("http"),
        "no external assets"
    );

    // no cookie: 401
    let r = http
        .get(format!("{base}/api/sessions"))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 401);
    // a bad token: 401
    let r = http
        .post(format!("{base}/login"))
        .json(&json!({"token": "ufo_wrong"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 401);

    // a browser asks for /favicon.ico and the like: a path nobody serves is 404, and does not
    // count as a failed token (else a few page loads would lock the address out)
    for _ in 0..12 {
        let r = http
            .get(format!("{base}/favicon.ico"))
            .send()
            .await
            .expect("answer");
        assert_eq!(r.status().as_u16(), 404);
    }

    let page = login(&server, &token).await;
    let (cookie, csrf, set) = (
        page.cookie.clone(),
        page.csrf.clone(),
        page.set_cookie.clone(),
    );
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain HTTP: no Secure flag: {set}");
    let r = http
        .get(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await.expect("json"), json!([]));

    let start = json!({"request": "Delete all content of report.odt", "confirm": "no"});
    // a POST without the CSRF header: 403, and no session starts
    let r = http
        .post(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .json(&start)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 403);
    // a wrong CSRF value: 403
    let r = http
        .post(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .header("X-CSRF-Token", "not-it")
        .json(&start)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 403);
    // a foreign Origin, even with cookie and CSRF: 403
    let r = http
        .post(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .header("X-CSRF-Token", &csrf)
        .header("Origin", "http://evil.example")
        .json(&start)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 403);
    // a model the server does not allow: 403
    let r = http
        .post(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .header("X-CSRF-Token", &csrf)
        .json(&json!({"request": "x", "llm": "openai:gpt-4o"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 403);
    assert!(
        !home.path().join("runs").read_dir().expect("runs").any(|e| e
            .ok()
            .is_some_and(|e| !e.file_name().to_string_lossy().starts_with('.'))),
        "no refused request started a session"
    );

    // with all of it: 201, and the session runs to its end on the simulated desktop
    let id = page.start(&start).await;
    // its events as Server-Sent Events, from the start to `end`
    let sse = http
        .get(format!("{base}/api/sessions/{id}/events"))
        .header("Cookie", &cookie)
        .timeout(Duration::from_secs(90))
        .send()
        .await
        .expect("events");
    assert_eq!(
        sse.headers()["content-type"].to_str().expect("type"),
        "text/event-stream"
    );
    let text = sse.text().await.expect("the stream ends");
    assert!(text.contains("event: record"), "{text}");
    assert!(text.contains("event: progress"), "{text}");
    assert!(text.contains("\"session_end\""), "{text}");
    assert!(text.trim_end().contains("event: end"), "{text}");

    let rows: Value = http
        .get(format!("{base}/api/sessions"))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("json");
    assert_eq!(rows[0]["id"], id.as_str(), "{rows}");
    assert!(rows[0]["steps"].as_u64().unwrap_or(0) > 0, "{rows}");
    // the report, under its own policy; a path outside the runs folder is not found
    let report = http
        .get(format!("{base}/api/sessions/{id}/report"))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("report");
    assert_eq!(report.status().as_u16(), 200);
    let r = http
        .get(format!("{base}/api/sessions/..%2F..%2Fetc/report"))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 404);
    // an ended session has no control socket: 409 with why
    let r = http
        .post(format!("{base}/api/sessions/{id}/cancel"))
        .header("Cookie", &cookie)
        .header("X-CSRF-Token", &csrf)
        .json(&json!({}))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 409);
    stop(server);
}

/// A server killed outright (SIGKILL) cannot end its sessions. A session waiting for the page
/// to answer its question sees that its server is gone and ends itself CANCELLED, its
/// trajectory whole, instead of waiting on with nobody to answer or cancel it
/// (control/server.rs).
#[tokio::test(flavor = "multi_thread")]
async fn a_session_ends_cancelled_when_its_server_is_killed() {
    session_ends_with_its_killed_server(None).await;
}

/// The same for a session on a private desktop, which runs in a second `ufo` started inside
/// that desktop: the server is its grandparent.
#[tokio::test(flavor = "multi_thread")]
async fn a_private_desktop_session_ends_cancelled_when_its_server_is_killed() {
    if !ufo_desktop::testing::require_live(
        "a_private_desktop_session_ends_cancelled_when_its_server_is_killed",
    ) {
        return;
    }
    session_ends_with_its_killed_server(Some("private")).await;
}

/// Start a session (on `desktop`, else the server's) whose HostAgent asks a question, SIGKILL
/// the server while it waits for the answer, and check that it ends CANCELLED within 15 s.
async fn session_ends_with_its_killed_server(desktop: Option<&str>) {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let mut server = serve(home.path(), "script.jsonl");
    let page = login(&server, &token).await;
    let mut start = json!({"request": "Clear the document the user names", "confirm": "no"});
    if let Some(d) = desktop {
        start["desktop"] = json!(d);
    }
    let id = page.start(&start).await;
    let dir = home.path().join("runs").join(&id);
    // the HostAgent's PENDING question waits for the page
    let ev = wait_records(&dir, Duration::from_secs(90), |ev| {
        ev.iter().any(|e| e["type"] == "ask")
    });
    assert!(
        ev.iter().any(|e| e["type"] == "ask"),
        "{ev:?}\n{}",
        session_logs(&home.path().join("runs"))
    );
    assert!(!ev.iter().any(|e| e["type"] == "session_end"), "{ev:?}");

    server.child.kill().expect("SIGKILL the server");
    let _ = server.child.wait();
    let killed = Instant::now();
    let ev = wait_records(&dir, Duration::from_secs(30), |ev| {
        ev.iter().any(|e| e["type"] == "session_end")
    });
    let end = ev
        .iter()
        .find(|e| e["type"] == "session_end")
        .unwrap_or_else(|| panic!("the session ran on after its server was killed: {ev:?}"));
    assert_eq!(end["status"], "CANCELLED", "{end}");
    assert!(
        killed.elapsed() < Duration::from_secs(15),
        "it took {:?}",
        killed.elapsed()
    );
    // every line of the trajectory is whole
    events(&dir);
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).expect("run.json"))
            .expect("json");
    if let Some(d) = desktop {
        assert_eq!(record["desktop"], d, "{record}");
    }
}

fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("UFO_PY_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/py"));
    let py = venv.join("bin/python");
    py.exists().then_some(py)
}

/// Run tests/console/page.py against the server; its JSON.
fn page(server: &Served, token: &str, mode: &str, screenshot: Option<&Path>) -> Value {
    page_with(server, token, mode, screenshot.map(Path::as_os_str))
}

/// Run tests/console/page.py with its fourth argument (a screenshot path, a batch name, ...).
fn page_with(server: &Served, token: &str, mode: &str, arg: Option<&std::ffi::OsStr>) -> Value {
    let py = python()
        .expect("the Python venv with Playwright (scripts/test-deps.sh install_python_playwright)");
    let mut cmd = Command::new(py);
    cmd.arg(fixture("page.py"))
        .args([&server.origin(), token, mode]);
    if let Some(a) = arg {
        cmd.arg(a);
    }
    let out = cmd.output().expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "page.py {mode} failed: {}\n{stdout}\nserver: {}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("page.py prints JSON")
}

fn browser_tests() -> bool {
    if std::env::var("UFO_BROWSER_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set UFO_BROWSER_TESTS=1 (needs Chromium and Playwright)");
        return false;
    }
    true
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .expect("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn the_page_starts_a_session_and_shows_its_lines_with_a_script_title_as_text() {
    if !browser_tests() {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let server = serve(home.path(), "plain.jsonl");
    let shot = std::env::var_os("UFO_CONSOLE_SCREENSHOT").map(PathBuf::from);
    let out = page(&server, &token, "plain", shot.as_deref());
    assert_eq!(out["status"], "FINISH", "{out}");
    assert!(
        out["bad_login"]
            .as_str()
            .unwrap_or("")
            .contains("not a valid token"),
        "{out}"
    );
    let lines: Vec<&str> = out["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(lines.len() >= 4, "{out}");
    assert!(
        lines[0].starts_with("[round 0 step 1 #0] HostAgent"),
        "the progress format: {out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("<script>window.injected=1</script>")),
        "the title is shown as text: {out}"
    );
    // a control name and a model's result holding markup are shown as text too
    assert!(
        lines
            .iter()
            .any(|l| l.contains("<b id=\"injected-control\">Delete All</b>")),
        "the control name is shown as text: {out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("All content deleted <img src=x id=\"injected-result\">")),
        "the model's result is shown as text: {out}"
    );
    assert_eq!(out["injected_element"], false, "{out}");
    assert_eq!(out["injected_script"], false, "{out}");
    assert_eq!(
        out["script_elements"], 1,
        "only the page's own script: {out}"
    );
    let id = out["id"].as_str().expect("id");
    let ev = events(&home.path().join("runs").join(id));
    let end = ev
        .iter()
        .find(|e| e["type"] == "session_end")
        .expect("session_end");
    assert_eq!(end["status"], "FINISH");
    assert!(
        out["listed"][0].as_str().unwrap_or("").contains(id),
        "{out}"
    );
    stop(server);
}

#[test]
fn the_page_answers_a_pending_question_and_approves_a_confirm() {
    if !browser_tests() {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let server = serve(home.path(), "script.jsonl");
    let out = page(&server, &token, "questions", None);
    assert_eq!(out["status"], "FINISH", "{out}");
    assert!(
        out["pending"]
            .as_str()
            .unwrap_or("")
            .contains("Which document"),
        "{out}"
    );
    // the held action's control name, markup and all, is text in the CONFIRM box
    assert!(
        out["confirm"]
            .as_str()
            .unwrap_or("")
            .contains("<b id=\"injected-control\">Delete All</b>"),
        "{out}"
    );
    assert_eq!(out["confirm_injected"], false, "{out}");
    assert_eq!(out["injected_element"], false, "{out}");
    // the current plan: the HostAgent's, from its step record
    assert_eq!(
        out["plan"],
        json!(["Delete all content", "Report back"]),
        "{out}"
    );
    let dir = home
        .path()
        .join("runs")
        .join(out["id"].as_str().expect("id"));
    let ev = events(&dir);
    let answered: Vec<&Value> = ev.iter().filter(|e| e["type"] == "answered").collect();
    assert_eq!(answered.len(), 2, "{ev:?}");
    assert!(
        answered.iter().all(|a| a["by"] == "console"),
        "{answered:?}"
    );
    assert_eq!(answered[0]["value"], "the-quarterly-one");
    assert_eq!(answered[1]["value"], true);
    let end = ev
        .iter()
        .find(|e| e["type"] == "session_end")
        .expect("session_end");
    assert_eq!(end["status"], "FINISH");
    let desktop: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("desktop_final.json")).expect("desktop_final.json"),
    )
    .expect("json");
    assert!(
        desktop.to_string().contains("delete_all"),
        "the approved click ran: {desktop}"
    );
    stop(server);
}

/// A small batch suite on disk: a task that passes (the fax is found infeasible), one that
/// fails (the model claims it faxed), one skipped (a setup step ufo does not support). Each
/// run task first sleeps `setup_s`, so the batch fills while the page watches.
fn small_suite(dir: &Path, setup_s: u32) {
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).expect("mkdir");
    let host = |status: &str| {
        json!({"agent": "host", "response": {"Observation": "No fax here.", "Thought": "t",
               "Status": status}})
        .to_string()
    };
    std::fs::write(scripts.join("fail.jsonl"), host("FAIL")).expect("write");
    std::fs::write(scripts.join("finish.jsonl"), host("FINISH")).expect("write");
    let task = |id: &str, script: &str| {
        json!({"id": id, "instruction": "Send the open document by fax",
               "related_apps": ["shell"],
               "config": [{"type": "sleep", "parameters": {"seconds": setup_s}}],
               "evaluator": {"func": "infeasible"}, "ufo_script": script})
    };
    let skipped = json!({"id": "c_download", "instruction": "x",
        "config": [{"type": "download", "parameters": {}}],
        "evaluator": {"func": "exact_match"}});
    for (name, t) in [
        ("a_fax", task("a_fax", "scripts/fail.jsonl")),
        ("b_claims", task("b_claims", "scripts/finish.jsonl")),
        ("c_download", skipped),
    ] {
        std::fs::write(dir.join(format!("{name}.json")), t.to_string()).expect("write");
    }
}

/// Issue 28: a real `ufo batch` writes into the server's runs folder; the page's batch view
/// shows its tasks done/passed/failed and the task rows as they fill, and at the end the
/// same rows as the batch's results.jsonl. Live (the batch runs on this desktop) and in the
/// browser.
#[test]
fn the_page_follows_a_batch_as_it_fills_and_ends_with_its_results() {
    if !browser_tests()
        || !ufo_desktop::testing::require_live(
            "the_page_follows_a_batch_as_it_fills_and_ends_with_its_results",
        )
    {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let server = serve(home.path(), "plain.jsonl");
    let suite = home.path().join("suite");
    small_suite(&suite, 3);
    let out = home.path().join("runs").join("batch-console");
    let mut batch = ufo(home.path())
        .arg("batch")
        .arg(&suite)
        // the page's token may follow it
        .args(["--share", "browser"])
        .args(["--confirm", "yes", "--task-timeout", "120", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ufo batch starts");
    let seen = page_with(
        &server,
        &token,
        "batch",
        Some(std::ffi::OsStr::new("batch-console")),
    );
    let status = batch.wait().expect("the batch ends");
    let mut stderr = String::new();
    if let Some(mut e) = batch.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    // one task failed: exit 1
    assert_eq!(status.code(), Some(1), "{stderr}");
    let states = seen["states"].as_array().expect("states");
    let last = states.last().expect("a state");
    // while it filled: a state before the end, with fewer rows than at the end
    assert!(
        states.len() >= 2
            && !states[0]["counts"]
                .as_str()
                .unwrap_or("")
                .contains("(finished)"),
        "the page saw no state before the end: {seen}"
    );
    let rows_at = |s: &Value| s["rows"].as_array().map_or(0, Vec::len);
    assert!(rows_at(&states[0]) < rows_at(last), "{seen}");
    // rows only grow, each shown row stays as it was
    for w in states.windows(2) {
        assert!(rows_at(&w[0]) <= rows_at(&w[1]), "{seen}");
    }
    let counts = last["counts"].as_str().unwrap_or("");
    assert!(
        counts.starts_with("3 of 3 tasks done: 1 passed, 1 failed, 1 skipped, 0 error;")
            && counts.ends_with("(finished)"),
        "{seen}"
    );
    // the rows at the end are the batch's results.jsonl: id, app, status, steps, reason
    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a result line"))
        .collect();
    let want: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r["id"].as_str().unwrap_or("").to_string(),
                r["app"].as_str().unwrap_or("").to_string(),
                r["status"].as_str().unwrap_or("").to_string(),
                r["steps"].to_string(),
                r["reason"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect();
    let got: Vec<Vec<String>> = last["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let c = |i: usize| r[i].as_str().unwrap_or("").to_string();
            vec![c(0), c(1), c(2), c(3), c(5)]
        })
        .collect();
    assert_eq!(got, want, "{seen}");
    let statuses: Vec<&str> = results
        .iter()
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(statuses, ["passed", "failed", "skipped"]);
    // and the summary table is ufo batch's
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    let total = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("TOTAL"))
            .map(|l| l.split_whitespace().take(7).collect::<Vec<_>>().join(" "))
    };
    assert_eq!(
        total(seen["summary"].as_str().unwrap_or("")),
        total(&summary),
        "{seen}"
    );
    assert!(total(&summary).is_some(), "{summary}");
    stop(server);
}

/// Issue 28, from the page: a session on a private desktop computes 12 + 30 with the
/// calculator; while its model decides the click on "3" (that answer comes late), the page
/// takes the desktop over, shows its view, and the browser clicks the calculator's "3" in
/// that view (the page sends the click in screen coordinates); the page hands back and the
/// agent goes on with "0" and "=". The display, read through pyatspi (not ufo), shows 42
/// (with the person's 3; 342 had the dropped answer run too); the trajectory has the
/// `takeover` and `handback` records with no step between; nothing of the private desktop is
/// left. Live and in the browser.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_takes_a_private_desktop_over_clicks_in_its_view_and_hands_back() {
    if !browser_tests()
        || !ufo_desktop::testing::require_live(
            "the_page_takes_a_private_desktop_over_clicks_in_its_view_and_hands_back",
        )
    {
        return;
    }
    let (model, seen, slow, last) =
        twelve_plus_thirty_model(Duration::from_secs(10), Duration::from_secs(6)).await;
    let base = format!("{}/v1", model.uri());
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let signals = home.path().join("signals");
    std::fs::create_dir_all(&signals).expect("mkdir");
    let runs = home.path().join("runs");
    let config = fixture("ufo.toml").display().to_string();
    let mut cmd = ufo(home.path());
    cmd.env("UFO_LLM_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-ufo-test-not-a-key");
    let server = Served::start(
        cmd,
        &format!("sim:{}", fixture("desktop.json").display()),
        &[
            "--llm",
            "openai:fake-model",
            "--config",
            &config,
            "--runs",
            &runs.display().to_string(),
            // its sessions act on the desktop
            "--allow-actions",
        ],
    );
    let py = python().expect("the Python venv with Playwright");
    let (out, texts_at_end, dir) = tokio::task::spawn_blocking(move || {
        let mut browser = Killed(
            Command::new(py)
                .arg(fixture("page.py"))
                .args([&server.origin(), &token, "takeover"])
                .arg(&signals)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("python runs"),
        );
        let requests = || seen.load(std::sync::atomic::Ordering::SeqCst);
        // the slow answer is awaited: the observation is made, the action not yet
        let deadline = Instant::now() + Duration::from_secs(180);
        while requests() <= slow {
            assert!(
                Instant::now() < deadline,
                "the slow model call did not come within 180 s ({} requests): {}\nserver: {}",
                requests(),
                session_logs(&runs),
                server.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let dir = std::fs::read_dir(&runs)
            .expect("runs")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("events.jsonl").exists())
            .expect("the session's folder");
        let events = || std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
        let (x, y) = wait_value(
            "the 3 button in ufo inspect",
            Duration::from_secs(30),
            || button_centre("3"),
        );
        std::fs::write(
            signals.join("takeover"),
            json!({"x": x, "y": y}).to_string(),
        )
        .expect("write");
        wait_value("the page's click", Duration::from_secs(90), || {
            signals.join("clicked").exists().then_some(())
        });
        // (the agent records the take-over when it drops the late answer)
        wait_value("the takeover record", Duration::from_secs(60), || {
            events().contains("\"takeover\"").then_some(())
        });
        let steps = events().matches("\"type\":\"step\"").count();
        wait_value("12+3 on the display", Duration::from_secs(30), || {
            display_texts().filter(|t| t.iter().any(|t| t.contains("12+3")))
        });
        // while taken over, nothing runs
        assert_eq!(events().matches("\"type\":\"step\"").count(), steps);
        assert!(!events().contains("\"handback\""));
        std::fs::write(signals.join("handback"), "1").expect("write");
        // the agent goes on with 0 and =; its FINISH is awaited while the display is read
        wait_value("the last model call", Duration::from_secs(180), || {
            (requests() > last).then_some(())
        });
        // (the display settles a moment after the agent's last click)
        let settle = Instant::now() + Duration::from_secs(30);
        let texts = loop {
            let texts = display_texts().unwrap_or_default();
            if texts.iter().any(|t| t.trim() == "42") || Instant::now() > settle {
                break texts;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        let status = loop {
            if let Ok(Some(status)) = browser.0.try_wait() {
                break status;
            }
            assert!(Instant::now() < deadline, "the page did not see the end");
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut o) = browser.0.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut o, &mut stdout);
        }
        if let Some(mut e) = browser.0.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        assert!(
            status.success(),
            "page.py failed: {stderr}\n{stdout}\nserver: {}",
            server.stderr()
        );
        let out: Value =
            serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("page.py JSON");
        stop(server);
        (out, texts, dir)
    })
    .await
    .expect("join");
    assert_eq!(out["status"], "FINISH", "{out}");
    assert_eq!(
        out["view"],
        json!([1280, 1024]),
        "the whole private screen: {out}"
    );
    assert_eq!(out["s_error_after_click"], "", "{out}");
    // the person's change is respected: 12 + 30 with their 3, not 12 + 330
    assert!(
        texts_at_end.iter().any(|t| t.trim() == "42"),
        "the display does not show 42: {texts_at_end:?}"
    );
    let ev = events(&dir);
    let at = |kind: &str| {
        ev.iter()
            .position(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} record: {ev:?}"))
    };
    let (t, h) = (at("takeover"), at("handback"));
    assert_eq!(h, t + 1, "a step ran while taken over: {ev:?}");
    assert_eq!(ev[t]["input"], "taken over from the console");
    assert_eq!(ev[h]["how"], "handed_back", "{}", ev[h]);
    assert_eq!(
        ev[t - 1]["action"]["discarded"],
        "takeover",
        "{}",
        ev[t - 1]
    );
    // the page showed both as lines too
    let lines = out["lines"].to_string();
    assert!(lines.contains("took the desktop over"), "{out}");
    assert!(lines.contains("handed the desktop back"), "{out}");
    // nothing of the private desktop is left
    wait_value("the private desktop's end", Duration::from_secs(30), || {
        private_calculator_env().is_none().then_some(())
    });
    assert!(
        !dir.join("control.sock").exists(),
        "the socket outlived the session"
    );
}

/// The console's session logs and trajectories under `runs`, for a failure's message.
fn session_logs(runs: &Path) -> String {
    let mut text = String::new();
    for dir in [runs.join(".console-logs"), runs.to_path_buf()] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            let file = if p.is_dir() {
                p.join("events.jsonl")
            } else {
                p
            };
            if let Ok(t) = std::fs::read_to_string(&file) {
                text.push_str(&format!("--- {}\n{t}\n", file.display()));
            }
        }
    }
    text
}

/// One HTTP/1.1 request written by hand to `base` (`http://127.0.0.1:PORT`), its path sent
/// exactly as given (a client library would resolve `%2e%2e` before sending it): the status
/// (0 when no status line came within `within`), the head in lower case, the body, and how
/// long the answer took.
fn raw(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    within: Duration,
) -> (u16, String, String, Duration) {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream.set_read_timeout(Some(within)).expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let started = Instant::now();
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_lowercase(), body.to_string(), took)
}

/// The runs folder holds no session: no session folder, no owner record.
fn no_session_started(runs: &Path) -> bool {
    let entries = |d: &Path| {
        std::fs::read_dir(d)
            .map(|r| r.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    entries(runs)
        .iter()
        .all(|n| n.to_string_lossy().starts_with('.'))
        && entries(&runs.join(".console-sessions")).is_empty()
}

/// A CORS preflight gets no `Access-Control-Allow-*` header, on the console's routes and
/// `/mcp` alike (a foreign one is 403), and a form a foreign page posts
/// (`application/x-www-form-urlencoded`, a foreign Origin or none, no CSRF header, with or
/// without the login cookie) is refused and starts nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_preflight_gets_no_cors_headers_and_a_cross_site_form_post_starts_nothing() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let server = serve(home.path(), "plain.jsonl");
    let base = server.origin();
    let page = login(&server, &token).await;
    let runs = home.path().join("runs");
    let wait = Duration::from_secs(30);
    let evil = "http://evil.example";

    for path in ["/api/sessions", "/login", "/api/sessions/x/cancel", "/mcp"] {
        for origin in [evil, base.as_str()] {
            let (status, head, body, _) = raw(
                &base,
                "OPTIONS",
                path,
                &[
                    ("Origin", origin),
                    ("Access-Control-Request-Method", "POST"),
                    (
                        "Access-Control-Request-Headers",
                        "content-type, x-csrf-token, authorization",
                    ),
                    ("Cookie", &page.cookie),
                ],
                "",
                wait,
            );
            assert!(
                status >= 400,
                "OPTIONS {path} from {origin}: {status}\n{head}\n{body}"
            );
            if origin == evil {
                assert_eq!(status, 403, "OPTIONS {path} from {origin}\n{head}\n{body}");
            }
            assert!(
                !head.contains("access-control-"),
                "OPTIONS {path} from {origin} got CORS headers:\n{head}"
            );
        }
    }

    // what a foreign page's <form method=post> sends: no custom header; a browser keeps the
    // SameSite=Strict cookie back, but one that sent it is refused as well
    let form = "request=Delete+all+content+of+report.odt&confirm=yes";
    let form_type = ("Content-Type", "application/x-www-form-urlencoded");
    let cookie = ("Cookie", page.cookie.as_str());
    // (what, its headers, the status it gets)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);
    let cases: [Case; 4] = [
        (
            "a foreign Origin, no cookie",
            vec![form_type, ("Origin", evil)],
            403,
        ),
        ("no Origin, no cookie", vec![form_type], 401),
        (
            "a foreign Origin with the cookie",
            vec![form_type, ("Origin", evil), cookie],
            403,
        ),
        ("no Origin with the cookie", vec![form_type, cookie], 403),
    ];
    for (what, headers, want) in cases {
        let (status, head, body, _) = raw(&base, "POST", "/api/sessions", &headers, form, wait);
        assert_eq!(status, want, "{what}:\n{head}\n{body}");
        assert!(!head.contains("access-control-"), "{what}:\n{head}");
    }
    // even with the cookie and the CSRF header, a form body is no start request
    let (status, head, body, _) = raw(
        &base,
        "POST",
        "/api/sessions",
        &[form_type, cookie, ("X-CSRF-Token", &page.csrf)],
        form,
        wait,
    );
    assert!((400..500).contains(&status), "{status}\n{head}\n{body}");
    // a form cannot cancel or log out either
    for path in ["/logout", "/api/sessions/x/cancel"] {
        let (status, head, _, _) = raw(
            &base,
            "POST",
            path,
            &[form_type, ("Origin", evil), cookie],
            "a=b",
            wait,
        );
        assert_eq!(status, 403, "{path}\n{head}");
    }
    assert!(
        no_session_started(&runs),
        "a refused request started a session"
    );
    assert!(page.listed().await.is_empty(), "and none is listed");
    // the login is still good
    let (status, _) = page.get("/api/sessions").await;
    assert_eq!(status, 200);
    stop(server);
}

/// `ufo run` of the console fixture in a terminal, shared with the console's token, into
/// `out`; its request names `marker`.
fn terminal_session(home: &Path, out: &Path, marker: &str) {
    let status = ufo(home)
        .arg("run")
        .args([
            "--desktop",
            &format!("sim:{}", fixture("desktop.json").display()),
        ])
        .args([
            "--llm",
            &format!("script:{}", fixture("plain.jsonl").display()),
        ])
        .arg("--config")
        .arg(fixture("ufo.toml"))
        .args(["--confirm", "yes", "--share", "browser", "--out"])
        .arg(out)
        .arg(format!("Delete all content of report.odt {marker}"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ufo runs");
    assert_eq!(status.status.code(), Some(0), "{status:?}");
}

/// A finished batch folder shared with the console's token, its one result `result`.
fn planted_batch(dir: &Path, result: &Value) {
    std::fs::create_dir_all(dir.join("tasks/t1")).expect("mkdir");
    std::fs::write(dir.join("results.jsonl"), format!("{result}\n")).expect("write");
    std::fs::write(dir.join("share.json"), r#"{"shared": ["browser"]}"#).expect("write");
}

/// The console's file routes (`/report`, `/screenshot`, `/events`, `/api/batches/{id}`),
/// sent by hand so that the path arrives as written: `%2e%2e`, `..` up to a real session
/// outside the runs folder, that session's absolute path, a NUL, and a session or batch id
/// that is a link to a folder outside: each 404, never a byte of the outside session. A FIFO
/// named like the newest screenshot, or in place of `events.jsonl` or `share.json`, gets an
/// answer within seconds, not a hung request. The same session and batch, really in the runs
/// folder, are served: the refusals are the paths', not the contents'.
#[tokio::test(flavor = "multi_thread")]
async fn the_file_routes_give_nothing_outside_the_runs_folder_and_never_hang() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let runs = home.path().join("runs");
    let outside = home.path().join("outside");
    std::fs::create_dir_all(&runs).expect("mkdir");
    terminal_session(home.path(), &outside.join("secret"), "OUTSIDE-MARKER-7f3a");
    terminal_session(home.path(), &runs.join("inside"), "INSIDE-MARKER");
    let batch = json!({"id": "BATCH-MARKER-c41d", "app": "calc", "status": "passed"});
    planted_batch(&outside.join("batch"), &batch);
    planted_batch(&runs.join("batch-real"), &batch);
    std::os::unix::fs::symlink(outside.join("secret"), runs.join("linked")).expect("link");
    std::os::unix::fs::symlink(outside.join("batch"), runs.join("batch-linked")).expect("link");
    let server = serve(home.path(), "plain.jsonl");
    let base = server.origin();
    let page = login(&server, &token).await;
    let cookie = [("Cookie", page.cookie.as_str())];
    let get = |path: &str| raw(&base, "GET", path, &cookie, "", Duration::from_secs(10));

    // what is really in the runs folder is served
    for path in [
        "/api/sessions/inside/report",
        "/api/sessions/inside/screenshot",
        "/api/batches/batch-real",
    ] {
        let (status, head, _, _) = get(path);
        assert_eq!(status, 200, "{path}\n{head}");
    }
    let secret = outside.join("secret").display().to_string();
    let abs = secret.replace('/', "%2F");
    let mut ids = vec![
        "%2e%2e".to_string(),
        "%2E%2E".to_string(),
        "%2e%2e%2foutside%2fsecret".to_string(),
        "..%2F..%2Foutside%2Fsecret".to_string(),
        abs.clone(),
        format!("%2F%2F{}", &abs[3..]),
        "inside%00".to_string(),
        "%00".to_string(),
        "linked".to_string(),
    ];
    ids.push("inside%00..%2F..%2Foutside%2Fsecret".to_string());
    for id in &ids {
        for route in ["report", "screenshot", "events"] {
            let path = format!("/api/sessions/{id}/{route}");
            let (status, head, body, _) = get(&path);
            assert!(
                status == 404 || status == 400,
                "{path}: {status}\n{head}\n{body}"
            );
            assert!(!body.contains("OUTSIDE-MARKER-7f3a"), "{path}: {body}");
        }
    }
    // `..` as it is, unencoded: never reaches outside either
    for path in [
        "/api/sessions/../../outside/secret/report",
        "/api/sessions/inside/../../../outside/secret/report",
    ] {
        let (status, head, body, _) = get(path);
        assert!(status == 404 || status == 400, "{path}: {status}\n{head}");
        assert!(!body.contains("OUTSIDE-MARKER-7f3a"), "{path}: {body}");
    }
    let batch_ids = [
        "%2e%2e".to_string(),
        "%2e%2e%2foutside%2fbatch".to_string(),
        outside
            .join("batch")
            .display()
            .to_string()
            .replace('/', "%2F"),
        "batch-real%00".to_string(),
        "batch-linked".to_string(),
    ];
    for id in &batch_ids {
        let path = format!("/api/batches/{id}");
        let (status, head, body, _) = get(&path);
        assert!(
            status == 404 || status == 400,
            "{path}: {status}\n{head}\n{body}"
        );
        assert!(!body.contains("BATCH-MARKER"), "{path}: {body}");
    }
    // a batch still filling reads each task's result.json: a task folder that is a link
    // to a result outside is not read through
    let filling = runs.join("batch-filling");
    planted_batch(&filling, &batch);
    std::fs::remove_file(filling.join("results.jsonl")).expect("rm");
    std::fs::write(filling.join("tasks/t1/result.json"), batch.to_string()).expect("write");
    let linked_task = outside.join("task");
    std::fs::create_dir_all(&linked_task).expect("mkdir");
    let outside_result = json!({"id": "LINKED-TASK-MARKER", "app": "calc", "status": "failed"});
    std::fs::write(linked_task.join("result.json"), outside_result.to_string()).expect("write");
    std::os::unix::fs::symlink(&linked_task, filling.join("tasks/t2")).expect("link");
    let (status, progress) = page.get("/api/batches/batch-filling").await;
    assert_eq!(status, 200, "{progress}");
    assert!(
        !progress.to_string().contains("LINKED-TASK-MARKER"),
        "a result was read through a linked task folder: {progress}"
    );
    assert_eq!(
        (&progress["total"], &progress["done"]),
        (&json!(1), &json!(1)),
        "{progress}"
    );
    let (status, listed) = page.get("/api/batches").await;
    assert_eq!(status, 200);
    let listed = listed.to_string();
    assert!(
        listed.contains("batch-real") && !listed.contains("batch-linked"),
        "{listed}"
    );
    assert!(!page.listed().await.contains(&"linked".to_string()));

    // FIFOs: nothing ever writes them, so a read that waited would wait for ever
    let fifo = |path: PathBuf| {
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo")
    };
    fifo(runs.join("inside").join("step_9999_annotated.png"));
    let (status, head, _, took) = get("/api/sessions/inside/screenshot");
    assert_eq!(status, 404, "a FIFO screenshot:\n{head}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    terminal_session(home.path(), &runs.join("fifo-events"), "x");
    let events = runs.join("fifo-events").join("events.jsonl");
    std::fs::remove_file(&events).expect("rm");
    fifo(events);
    let (status, head, _, took) = get("/api/sessions/fifo-events/report");
    assert_eq!(status, 404, "a FIFO events.jsonl:\n{head}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let share = runs.join("inside").join("share.json");
    std::fs::remove_file(&share).expect("rm");
    fifo(share);
    let (status, _, body, took) = get("/api/sessions");
    assert_eq!(status, 200, "{body}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // a FIFO share.json shares nothing
    let (status, _, _, took) = get("/api/sessions/inside/report");
    assert_eq!(status, 404);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    stop(server);
}

/// Issue 40: markup in a start request and in a batch's task rows (id, application, reason)
/// is shown as text by the page, in the session view, the list and the batch view: no
/// element of it is made, no script of it runs. The API hands the page the raw text (the
/// page escapes nothing twice). In the browser.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_markup_in_a_request_and_in_batch_task_rows_as_text() {
    if !browser_tests() {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token_for(home.path());
    let runs = home.path().join("runs");
    let task = json!({
        "id": "<img src=x id=\"injected-task\" onerror=\"window.injected=1\">",
        "app": "<script id=\"injected-app\">window.injected=1</script>",
        "status": "failed",
        "reason": "<b id=\"injected-reason\">bold</b>",
        "steps": 3,
    });
    planted_batch(&runs.join("batch-markup"), &task);
    let server = serve(home.path(), "plain.jsonl");
    let request = "Delete all content of report.odt \
                   <img src=x id=\"injected-request\" onerror=\"window.injected=1\">\
                   <script>window.injected=1</script>";
    let args = json!({"request": request, "batch": "batch-markup"}).to_string();
    let seen = tokio::task::block_in_place(|| {
        page_with(&server, &token, "markup", Some(std::ffi::OsStr::new(&args)))
    });
    assert_eq!(seen["status"], "FINISH", "{seen}");
    assert_eq!(seen["shown_request"], request, "{seen}");
    let id = seen["id"].as_str().expect("id");
    let row = seen["listed"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r[0] == id))
        .unwrap_or_else(|| panic!("the session is not listed: {seen}"));
    assert!(
        row.as_array()
            .is_some_and(|cells| cells.iter().any(|c| c == request)),
        "{seen}"
    );
    let rows = &seen["batch_rows"];
    assert_eq!(rows[0][0], task["id"], "{seen}");
    assert_eq!(rows[0][1], task["app"], "{seen}");
    assert_eq!(rows[0][5], task["reason"], "{seen}");
    assert_eq!(seen["injected_element"], false, "{seen}");
    assert_eq!(seen["injected_script"], false, "{seen}");
    assert_eq!(
        seen["script_elements"], 1,
        "only the page's own script: {seen}"
    );
    // what the page was given: the raw text, not escaped
    let page = login(&server, &token).await;
    let (_, sessions) = page.get("/api/sessions").await;
    assert_eq!(sessions[0]["request"], request, "{sessions}");
    let (_, batch) = page.get("/api/batches/batch-markup").await;
    assert_eq!(batch["results"][0]["id"], task["id"], "{batch}");
    stop(server);
}
