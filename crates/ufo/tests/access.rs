//! Who may do what through `ufo serve` (docs/security.md, "Who may do what"), through the real
//! binary on a simulated desktop with scripted models: a session started in a terminal is
//! reached from the web console only by the tokens its owner shares it with; the console
//! starts only what the server's flags allow (actions, shell, devices); tokens are kept apart;
//! a revoked token's logins and streams end at once; closed streams let go of what they held;
//! each token's sessions and streams are bounded.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::console::{client, login, wait_records, Page};
use common::served::{new_token_with_role, ufo_at as ufo, Served};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/console")
        .join(name)
}

fn desktop() -> String {
    format!("sim:{}", fixture("desktop.json").display())
}

/// `ufo serve` on the console fixture's desktop with its runs folder in `<home>/runs` and
/// `extra` options.
fn serve(home: &Path, extra: &[&str]) -> Served {
    let runs = home.join("runs").display().to_string();
    let mut args = vec!["--runs", runs.as_str()];
    args.extend_from_slice(extra);
    Served::start(ufo(home), &desktop(), &args)
}

/// The `--llm` of the console fixture's script `name`.
fn script(name: &str) -> String {
    format!("script:{}", fixture(name).display())
}

/// A session started in a terminal (no server started it) in `<home>/runs/<name>`, whose
/// AppAgent holds a click on "Delete All" for CONFIRM and waits for an answer through its
/// control socket; `extra` options (e.g. `--share NAME`).
fn terminal_session(home: &Path, name: &str, extra: &[&str]) -> (Child, PathBuf) {
    let out = home.join("runs").join(name);
    let child = ufo(home)
        .arg("run")
        .args(["--desktop", &desktop()])
        .args(["--llm", &script("plain.jsonl")])
        .args(["--confirm", "ask", "--out"])
        .arg(&out)
        .args(extra)
        .arg("Delete all content of report.odt")
        // its questions wait for an answer through the socket, as a terminal would wait
        .env("UFO_CONSOLE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ufo run starts");
    (child, out)
}

/// The open question of the session in `dir`, once it asks (at most 60 s).
fn question(dir: &Path) -> Value {
    let ev = wait_records(dir, Duration::from_secs(60), |ev| {
        ev.iter().any(|e| e["type"] == "ask")
    });
    ev.into_iter()
        .find(|e| e["type"] == "ask")
        .unwrap_or_else(|| panic!("the session in {} never asked", dir.display()))
}

/// One request line to the session's control socket, as the console or the owner sends it.
fn socket_request(dir: &Path, request: &Value) -> Value {
    let mut s = UnixStream::connect(dir.join("control.sock")).expect("the control socket");
    s.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    writeln!(s, "{request}").expect("write");
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).expect("an answer");
    serde_json::from_str(&line).expect("json")
}

/// The session's end record, once it ended (at most 60 s).
fn ended(dir: &Path) -> Value {
    let ev = wait_records(dir, Duration::from_secs(60), |ev| {
        ev.iter().any(|e| e["type"] == "session_end")
    });
    ev.into_iter()
        .find(|e| e["type"] == "session_end")
        .unwrap_or_else(|| panic!("the session in {} did not end", dir.display()))
}

/// Whether the simulated desktop saw a click on "Delete All".
fn deleted_all(dir: &Path) -> bool {
    let text = std::fs::read_to_string(dir.join("desktop_final.json")).expect("final state");
    let state: Value = serde_json::from_str(&text).expect("json");
    state["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .any(|a| a["control"] == "delete_all" && a["action"] == "click" && a["ok"] == true)
}

fn wait_exit(mut child: Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("the session did not end");
}

/// Issue 40 (a): a plain `ufo serve` in the folder where the owner runs `ufo run` listed those
/// terminal sessions in its console, and a guest token approved the owner's held "Delete
/// All". Now a terminal session is unknown to every token (even an admin's) unless its owner
/// shares it, through the console and through the session's own socket; shared, a user token
/// answers it and a viewer token only watches.
#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_session_is_reached_from_the_console_only_by_the_tokens_it_is_shared_with() {
    let home = tempfile::tempdir().expect("tempdir");
    let guest = new_token_with_role(home.path(), "guest", "admin");
    let alice = new_token_with_role(home.path(), "alice", "user");
    let eve = new_token_with_role(home.path(), "eve", "viewer");
    let server = serve(home.path(), &[]);

    let (owner_run, private) = terminal_session(home.path(), "term-private", &[]);
    let ask = question(&private);
    let guest_page = login(&server, &guest).await;
    assert!(
        !guest_page
            .listed()
            .await
            .contains(&"term-private".to_string()),
        "a terminal session is not listed"
    );
    let approve = json!({"id": ask["id"], "approve": true});
    for (status, _) in [
        guest_page
            .post("/api/sessions/term-private/answer", &approve)
            .await,
        guest_page
            .post("/api/sessions/term-private/cancel", &json!({}))
            .await,
        guest_page.get("/api/sessions/term-private/events").await,
        guest_page.get("/api/sessions/term-private/report").await,
        guest_page
            .get("/api/sessions/term-private/screenshot")
            .await,
    ] {
        assert_eq!(status, 404);
    }
    // the session itself refuses a request the console would send for that token
    let refused = socket_request(
        &private,
        &json!({"op": "answer", "id": ask["id"], "approve": true,
                "as": {"name": "guest", "role": "admin"}}),
    );
    assert_eq!(refused["ok"], false, "{refused}");
    // its owner's own process answers: rejected, the held click never runs
    let own = socket_request(
        &private,
        &json!({"op": "answer", "id": ask["id"], "approve": false}),
    );
    assert_eq!(own["ok"], true, "{own}");
    wait_exit(owner_run);
    ended(&private);
    assert!(!deleted_all(&private), "nobody approved the held click");

    let (shared_run, shared) = terminal_session(
        home.path(),
        "term-shared",
        &["--share", "alice", "--share", "eve"],
    );
    let ask = question(&shared);
    let eve_page = login(&server, &eve).await;
    assert!(eve_page.listed().await.contains(&"term-shared".to_string()));
    let (status, body) = eve_page
        .post(
            "/api/sessions/term-shared/answer",
            &json!({"id": ask["id"], "approve": true}),
        )
        .await;
    assert_eq!(status, 403, "a viewer watches only: {body}");
    assert!(
        !guest_page
            .listed()
            .await
            .contains(&"term-shared".to_string()),
        "shared with alice and eve only"
    );
    let alice_page = login(&server, &alice).await;
    assert!(alice_page
        .listed()
        .await
        .contains(&"term-shared".to_string()));
    let (status, body) = alice_page
        .post(
            "/api/sessions/term-shared/answer",
            &json!({"id": ask["id"], "approve": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    wait_exit(shared_run);
    assert_eq!(ended(&shared)["status"], "FINISH");
    assert!(deleted_all(&shared), "alice approved the held click");
}

/// Issue 40 (b): with `--llm` but neither `--allow-actions` nor `--allow-shell`, a token
/// started a session whose model ran what the request asked: a file was made on the server.
/// Now the console starts no session without `--allow-actions`, and a session of a server
/// without `--allow-shell` runs no shell command (its shell agent is not offered), whatever
/// `confirm` says; with `--allow-shell` the same session does run it.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_starts_only_what_the_server_flags_allow() {
    let home = tempfile::tempdir().expect("tempdir");
    let root = new_token_with_role(home.path(), "root", "admin");
    let user = new_token_with_role(home.path(), "user", "user");
    let work = home.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let config = home.path().join("ufo.toml");
    std::fs::write(
        &config,
        format!(
            "[agents]\nshell = true\nshell_workdir = {}\n",
            Value::String(work.display().to_string())
        ),
    )
    .expect("config");
    let shell_script = common::write_script(
        home.path(),
        &[
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Current Sub-Task": "Make the file", "ControlText": "shell", "Status": "ASSIGN"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": "touch pwned", "Status": "CONTINUE"}}),
            json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
                "Command": "", "Status": "FINISH", "Result": "made"}}),
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
                "Status": "FINISH"}}),
        ],
    );
    let llm = format!("script:{shell_script}");
    let cfg = config.display().to_string();
    let start = json!({"request": "make a file named pwned", "confirm": "yes"});

    // --llm alone: no session starts
    let server = serve(home.path(), &["--llm", &llm, "--config", &cfg]);
    let page = login(&server, &root).await;
    let (status, body) = page.try_start(&start).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("--allow-actions"), "{body}");
    drop(server);

    // --allow-actions without --allow-shell: the session runs, its shell does not
    let server = serve(
        home.path(),
        &["--llm", &llm, "--config", &cfg, "--allow-actions"],
    );
    let page = login(&server, &root).await;
    let user_page = login(&server, &user).await;
    let (status, body) = user_page.try_start(&start).await;
    assert_eq!(status, 403, "confirm: yes is an admin's: {body}");
    let id = page.start(&start).await;
    ended(&home.path().join("runs").join(&id));
    assert!(
        !work.join("pwned").exists(),
        "a session of a server without --allow-shell ran a command"
    );
    drop(server);

    // the same with --allow-shell: the command runs (the test can tell)
    let server = serve(
        home.path(),
        &[
            "--llm",
            &llm,
            "--config",
            &cfg,
            "--allow-actions",
            "--allow-shell",
        ],
    );
    let page = login(&server, &root).await;
    let id = page.start(&start).await;
    ended(&home.path().join("runs").join(&id));
    assert!(work.join("pwned").exists(), "with --allow-shell it runs");
}

/// Issue 40 (c) and the medium case beside it: the start form's `devices` went to `ufo run`
/// unchecked, so `x=remote:http://127.0.0.1:PORT` sent the server's `UFO_REMOTE_TOKEN` to that
/// listener, and `a=sim:OTHER` passed where `desktop: "sim:OTHER"` is refused. Now a start
/// names only devices the server was given (`ufo serve --device`), by name.
#[tokio::test(flavor = "multi_thread")]
async fn the_start_form_names_only_the_servers_devices() {
    let home = tempfile::tempdir().expect("tempdir");
    let root = new_token_with_role(home.path(), "root", "admin");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let lab = format!("lab={}", desktop());
    let llm = script("plain.jsonl");
    let mut cmd = ufo(home.path());
    cmd.env("UFO_REMOTE_TOKEN", "ufo_remote_token_that_must_stay_home");
    let runs = home.path().join("runs").display().to_string();
    let server = Served::start(
        cmd,
        &desktop(),
        &[
            "--runs",
            &runs,
            "--llm",
            &llm,
            "--allow-actions",
            "--device",
            &lab,
        ],
    );
    let page = login(&server, &root).await;
    for devices in [
        json!([format!("x=remote:http://127.0.0.1:{port}")]),
        json!([format!("a=sim:{}", fixture("desktop.json").display())]),
        json!([format!("lab=sim:{}", fixture("desktop.json").display())]),
        json!(["other"]),
    ] {
        let (status, body) = page
            .try_start(&json!({"request": "r", "confirm": "no", "devices": devices}))
            .await;
        assert_eq!(status, 403, "{devices}: {body}");
    }
    let (status, _) = page
        .try_start(
            &json!({"request": "r", "desktop": format!("sim:{}", fixture("other.json").display())}),
        )
        .await;
    assert_eq!(status, 403);
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        listener.accept().is_err(),
        "nothing connected to the address the form named"
    );
    // a device the server was given, by its name
    let id = page
        .start(
            &json!({"request": "Delete all content of report.odt", "confirm": "no",
                       "devices": ["lab"]}),
        )
        .await;
    let end = ended(&home.path().join("runs").join(&id));
    assert!(end["status"].is_string(), "{end}");
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join("runs").join(&id).join("run.json"))
            .expect("run.json"),
    )
    .expect("json");
    assert_eq!(run["devices"][0]["name"], "lab", "{run}");
}

/// An SSE stream of `page` for session `id`, read until `until` is in the text or it ends, at
/// most `within`: the text read.
async fn read_events(page: &Page, id: &str, until: &str, within: Duration) -> String {
    let mut r = client()
        .get(format!("{}/api/sessions/{id}/events", page.base))
        .header("Cookie", &page.cookie)
        .timeout(within)
        .send()
        .await
        .expect("events");
    let mut text = String::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if text.contains(until) {
            break;
        }
    }
    text
}

/// Issue 40, medium and low cases: tokens were not kept apart (bob saw alice's requests,
/// approved her CONFIRM, and 64 logins by bob logged alice out), a revoked token's cookie still
/// started sessions and its streams ran on, and every closed `/events` stream kept its watch on
/// the session's socket, so after 17 reloads approve and cancel answered 409.
#[tokio::test(flavor = "multi_thread")]
async fn tokens_are_kept_apart_streams_let_go_and_a_revoked_token_ends_at_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let alice = new_token_with_role(home.path(), "alice", "user");
    let bob = new_token_with_role(home.path(), "bob", "user");
    let root = new_token_with_role(home.path(), "root", "admin");
    let llm = script("plain.jsonl");
    let server = serve(
        home.path(),
        &[
            "--llm",
            &llm,
            "--allow-actions",
            "--max-sessions-per-token",
            "1",
        ],
    );
    let alice_page = login(&server, &alice).await;
    let start = json!({"request": "Delete all content of report.odt", "confirm": "ask"});
    let id = alice_page.start(&start).await;
    let dir = home.path().join("runs").join(&id);
    let ask = question(&dir);

    // one token, one session here
    let (status, _) = alice_page.try_start(&start).await;
    assert_eq!(status, 429);

    // bob knows nothing of it; the admin sees it
    let bob_page = login(&server, &bob).await;
    assert!(!bob_page.listed().await.contains(&id));
    let (status, _) = bob_page
        .post(
            &format!("/api/sessions/{id}/answer"),
            &json!({"id": ask["id"], "approve": true}),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = bob_page.get(&format!("/api/sessions/{id}/events")).await;
    assert_eq!(status, 404);
    let root_page = login(&server, &root).await;
    assert!(root_page.listed().await.contains(&id));

    // bob logging in again and again never logs alice out
    for _ in 0..70 {
        login(&server, &bob).await;
    }
    assert!(
        alice_page.listed().await.contains(&id),
        "alice is logged in"
    );

    // reloads of the page: each stream opened and dropped lets go of the socket
    for _ in 0..20 {
        read_events(&alice_page, &id, "event: state", Duration::from_secs(10)).await;
    }
    let (status, body) = alice_page
        .post(
            &format!("/api/sessions/{id}/answer"),
            &json!({"id": ask["id"], "approve": false}),
        )
        .await;
    assert_eq!(
        status, 200,
        "the socket still answers after 20 reloads: {body}"
    );
    ended(&dir);

    // a revoked token: its open stream ends and its login answers 401 at once
    let id2 = alice_page.start(&start).await;
    question(&home.path().join("runs").join(&id2));
    let streaming = {
        let page = alice_page.clone();
        let id2 = id2.clone();
        tokio::spawn(async move {
            read_events(&page, &id2, "token revoked", Duration::from_secs(30)).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let revoked = ufo(home.path())
        .args(["serve", "token", "revoke", "alice"])
        .output()
        .expect("ufo runs");
    assert!(revoked.status.success());
    let since = Instant::now();
    let text = streaming.await.expect("the stream task");
    assert!(text.contains("token revoked"), "{text}");
    assert!(
        since.elapsed() < Duration::from_secs(5),
        "{:?}",
        since.elapsed()
    );
    let (status, _) = alice_page.get("/api/sessions").await;
    assert_eq!(status, 401);
    let (status, _) = alice_page.try_start(&start).await;
    assert_eq!(status, 401);
    // the admin ends the session alice left
    let (status, body) = root_page
        .post(&format!("/api/sessions/{id2}/cancel"), &json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    ended(&home.path().join("runs").join(&id2));
}

/// One token keeps at most 8 event streams open; the ninth is refused until one closes.
#[tokio::test(flavor = "multi_thread")]
async fn a_token_keeps_a_bounded_number_of_event_streams() {
    let home = tempfile::tempdir().expect("tempdir");
    let alice = new_token_with_role(home.path(), "alice", "user");
    let llm = script("plain.jsonl");
    let server = serve(home.path(), &["--llm", &llm, "--allow-actions"]);
    let page = login(&server, &alice).await;
    let id = page
        .start(&json!({"request": "Delete all content of report.odt", "confirm": "ask"}))
        .await;
    let dir = home.path().join("runs").join(&id);
    question(&dir);
    let mut open = Vec::new();
    for _ in 0..8 {
        let r = client()
            .get(format!("{}/api/sessions/{id}/events", page.base))
            .header("Cookie", &page.cookie)
            .send()
            .await
            .expect("events");
        assert_eq!(r.status().as_u16(), 200);
        open.push(r);
    }
    let (status, body) = page.get(&format!("/api/sessions/{id}/events")).await;
    assert_eq!(status, 429, "{body}");
    drop(open);
    // the slots come back once the server sees the streams closed
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = client()
            .get(format!("{}/api/sessions/{id}/events", page.base))
            .header("Cookie", &page.cookie)
            .send()
            .await
            .expect("events");
        if r.status().as_u16() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed streams were never released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, _) = page
        .post(&format!("/api/sessions/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(status, 200);
    ended(&dir);
}
