//! Non-model time per AppAgent step through `--desktop remote:` (a desktop served by
//! `ufo serve` on loopback) against the same simulated desktop driven directly, in one run:
//! p50 and p95 of each, the overhead at p50, and an observation's size on the wire (the
//! `observe_window` answer's HTTP body, as the remote adapter asks for it, and the share of
//! its two screenshots). The desktop is a simulated editor with 40 controls (the simulated
//! desktop draws its own window images); `UFO_BENCH_BIN` names the `ufo` measured (default
//! the debug build).
//!
//!     cargo build -p ufo && cargo bench -p ufo --bench remote
//!
//! (`cargo test -p ufo --bench remote` runs it too, without building the bench optimised.)
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};
use ufo_desktop::testing::script::{app_line, host_assign, host_finish};

/// Sessions per desktop.
const RUNS: usize = 5;
/// AppAgent actions per session.
const ACTIONS: usize = 30;

fn binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match std::env::var_os("UFO_BENCH_BIN") {
        Some(b) => PathBuf::from(b),
        None => root.join("target/debug/ufo"),
    }
}

/// `ufo` with its data and configuration under `home`.
fn ufo(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("UFO_LLM")
        .env_remove("UFO_REMOTE_TOKEN");
    cmd
}

/// A simulated editor: a body to type into and 39 buttons.
fn scenario(dir: &Path) -> PathBuf {
    let mut controls = vec![json!({"id": "body", "role": "edit", "name": "Body", "value": ""})];
    for i in 1..40 {
        controls
            .push(json!({"id": format!("b{i}"), "role": "button", "name": format!("Button {i}")}));
    }
    let desktop = json!({"apps": [{"name": "Editor", "process": "editor", "title": "notes - Editor",
        "running": true, "launch": "editor", "controls": controls}]});
    let p = dir.join("desktop.json");
    std::fs::write(&p, desktop.to_string()).unwrap();
    p
}

fn script(dir: &Path) -> PathBuf {
    let mut lines = vec![host_assign("Type the notes", "Editor")];
    for _ in 0..ACTIONS {
        lines.push(app_line(
            "Body",
            "1",
            "type_keys",
            json!({"keys": "x"}),
            "CONTINUE",
        ));
    }
    lines.push(app_line(
        "Body",
        "1",
        "type_keys",
        json!({"keys": "."}),
        "FINISH",
    ));
    lines.push(host_finish());
    let p = dir.join("script.jsonl");
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

/// The non-model milliseconds of each AppAgent step of one session.
fn session(bin: &Path, home: &Path, script: &Path, desktop_args: &[String]) -> Vec<f64> {
    let out = home.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let o = ufo(bin, home)
        .arg("run")
        .args(desktop_args)
        .arg("--llm")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Type the notes")
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!(
            "run failed ({:?}): {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .filter_map(|e| {
            let t = &e["timings_ms"];
            let total = t["total"].as_f64()?;
            Some(total - t["llm_interaction"].as_f64().unwrap_or(0.0))
        })
        .collect()
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(bin: &Path, home: &Path, desktop: &Path) -> Served {
    let mut child = ufo(bin, home)
        .arg("serve")
        .arg("--desktop")
        .arg(format!("sim:{}", desktop.display()))
        .args(["--listen", "127.0.0.1:0", "--allow-actions"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut url = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(u) = line.strip_prefix("listening ") {
            url = u.to_string();
            break;
        }
    }
    assert!(!url.is_empty(), "ufo serve printed no `listening` line");
    Served { child, url }
}

/// The size in bytes of an `observe_window` answer's HTTP body (with the clean screenshot,
/// as the remote adapter asks), through a plain MCP exchange, and the part of it that is
/// the images (base64).
async fn observation_bytes(url: &str, token: &str) -> (usize, usize) {
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<&str>| {
        let mut r = client
            .post(url)
            .bearer_auth(token)
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = init.bytes().await;
    let _ = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&session),
    )
    .await
    .unwrap()
    .bytes()
    .await;
    let observed = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "observe_window",
            "arguments": {"window": "notes - Editor", "clean_screenshot": true}}}),
        Some(&session),
    )
    .await
    .unwrap();
    let body = observed.bytes().await.unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("Button 39"),
        "the observation lists the controls"
    );
    // the images' share: the base64 `data` of each image content
    let images: usize = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .flat_map(|v| {
            v["result"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|c| c["type"] == "image")
        .map(|c| c["data"].as_str().map_or(0, str::len))
        .sum();
    (body.len(), images)
}

fn main() {
    let bin = binary();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let desktop = scenario(home);
    let script = script(home);
    let token = {
        let o = ufo(&bin, home)
            .args(["serve", "token", "add", "bench"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .unwrap()
            .trim()
            .to_string()
    };
    let token_file = home.join("token");
    std::fs::write(&token_file, &token).unwrap();
    let served = serve(&bin, home, &desktop);
    let base = served.url.trim_end_matches("/mcp").to_string();
    let direct = vec![
        "--desktop".to_string(),
        format!("sim:{}", desktop.display()),
    ];
    let remote = vec![
        "--desktop".to_string(),
        format!("remote:{base}"),
        "--token-file".to_string(),
        token_file.display().to_string(),
    ];
    let (mut d, mut r) = (Vec::new(), Vec::new());
    let t = Instant::now();
    // alternated, so that the machine's load falls on both alike
    for _ in 0..RUNS {
        d.extend(session(&bin, home, &script, &direct));
        r.extend(session(&bin, home, &script, &remote));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (bytes, images) = rt.block_on(observation_bytes(&served.url, &token));
    let (d50, d95) = (percentile(&mut d, 0.5), percentile(&mut d, 0.95));
    let (r50, r95) = (percentile(&mut r, 0.5), percentile(&mut r, 0.95));
    println!(
        "remote bench: {} direct and {} remote AppAgent steps ({RUNS} sessions of {} actions each) in {:.1} s",
        d.len(),
        r.len(),
        ACTIONS + 1,
        t.elapsed().as_secs_f64()
    );
    println!("  sim directly:          p50 {d50:.2} ms, p95 {d95:.2} ms non-model per step");
    println!("  remote: on loopback:   p50 {r50:.2} ms, p95 {r95:.2} ms non-model per step");
    println!("  overhead at p50:       {:.2} ms", r50 - d50);
    println!(
        "  observation on the wire: {bytes} bytes ({images} of them the annotated and clean \
         screenshots in base64; 40 controls)"
    );
}
