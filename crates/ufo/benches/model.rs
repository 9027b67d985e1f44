//! A real model on the simulated desktop, per `structured_output` mode (issue 45): 20 steps of
//! `ufo run` against llama.cpp's server (llama-cpp-python) serving SmolLM2-135M-Instruct, the
//! tests' desktop and request (crates/ufo/tests/common/llama.rs), sessions run one after the
//! other (each with `--max-steps` what is left of the 20) on a fresh server per mode with a
//! fixed seed. Per mode: what `response_format` went on the wire (read by a proxy in front of
//! the server, not from ufo), sessions and how they ended, model calls, re-asks for format
//! (requests that send the model's answer back), prompt and completion tokens (the step
//! records), seconds per step (wall), and the server's own prompt and generation speeds
//! (llama.cpp's timings in its log) and memory. Modes (`UFO_BENCH_MODES`, comma-separated):
//! `off`, `json`, `schema`. Without the server installed (`scripts/test-deps.sh
//! install_llama`) it says so and does nothing.
//!
//! Before `structured_output` (every mode sent `json_object`; 2 cores busy with other builds,
//! the `off` row also with this crate's tests): each session ended ERROR on the HostAgent's
//! first step (fields missing after 3 re-asks), 20 step records in 10 sessions per mode;
//! `off` 40 calls, 29 re-asks, 28,313 + 4,234 tokens, 25.4 s/step; `json` and `schema` (the
//! same requests, so the same answers) 37 calls, 27 re-asks, 24,889 + 4,935 tokens, 12.0 and
//! 8.8 s/step; the server 48-136 prompt and 23-59 generated tokens/s on one thread, 890-920
//! MB at its peak.
//!
//! The schema mode's re-asks, read from the answers sent back: 2 of 7 were one answer that
//! ran 1,200-1,700 tokens until the context (2,048) was full, then cut; the other 5 empty
//! answers to the re-asks that followed, whose prompt (the long answer sent back) left no room
//! to answer. The long answers were lists of anything: the schema's nullable lists were type
//! lists (`"type": ["array", "null"]` with `items`), of which llama-cpp-python's grammar
//! converter keeps the type names only. Since, nullable fields are `anyOf` (the items and
//! enums kept), every list has `maxItems` 10 and, in llama-cpp-python's form, every string
//! `maxLength` 1000: every answer the grammar allows ends.
//!
//! Last run, before (main's build with `structured_output`) and after that change, mode by
//! mode in one run (`UFO_BENCH_BEFORE`), the same 2 cores shared with other builds:
//!
//! | build | mode | sessions (ends) | calls (+ forms refused) | re-asks (for form) | prompt + completion tokens | s/step |
//! |---|---|---|---|---|---|---|
//! | before | off | 10 (10 ERROR) | 42 | 32 (32) | 34,832 + 4,733 | 6.0 |
//! | after | off | 10 (10 ERROR) | 41 | 31 (31) | 34,832 + 4,733 | 6.1 |
//! | before | json | 10 (10 ERROR) | 43 | 33 (33) | 30,137 + 3,571 | 7.7 |
//! | after | json | 10 (10 ERROR) | 43 | 33 (33) | 30,137 + 3,571 | 12.7 |
//! | before | schema | 9 (4 FINISH, 3 FAIL, 2 ERROR) | 16 (+9) | 7 (7) | 16,878 + 4,005 | 7.8 |
//! | after | schema | 8 (1 FINISH, 7 FAIL) | 8 (+8) | 0 (0) | 4,008 + 1,836 | 4.3 |
//!
//! (21 step records before, 20 after; `off` and `json` send no schema, so their answers are
//! the same; the `json` after row ran beside a clippy build of this workspace, its tokens equal.)
//! The server: 105-159 prompt and 47-72 generated tokens/s, 716-898 MB at its peak. The
//! schema's 7 FAILs after are the model's choices, not its form: a `Bash` command off the
//! allow-list, held for approval and refused (no terminal to ask on).
//!
//!     cargo build -p ufo && UFO_BENCH_BEFORE=<older ufo> cargo bench -p ufo --bench model
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/llama.rs"]
mod llama;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use llama::{LlamaServer, Proxy, CONFIG, DESKTOP, MODEL_NAME, REQUEST};
use serde_json::Value;

/// Steps per mode.
const STEPS: u64 = 20;
/// Sessions per mode at most (a session that ends at once takes one step).
const MAX_SESSIONS: usize = 20;

fn binary() -> PathBuf {
    if let Some(b) = std::env::var_os("UFO_BENCH_BIN") {
        return PathBuf::from(b);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("debug/ufo")
}

#[derive(Default)]
struct Row {
    /// `before` (`UFO_BENCH_BEFORE`) or `after` (this build)
    build: String,
    mode: String,
    sent: Vec<String>,
    sessions: usize,
    ends: Vec<String>,
    steps: u64,
    calls: usize,
    /// requests refused for their form of the schema (llama-cpp-python's server takes only
    /// its own: ufo learns it once per process), not model calls
    refused: usize,
    reasks: usize,
    /// re-asks for the answer's form (no JSON, a field missing...), not for a refused move
    format_reasks: usize,
    prompt_tokens: u64,
    completion_tokens: u64,
    seconds: f64,
    prompt_tps: f64,
    gen_tps: f64,
    rss_mb: f64,
}

/// What `response_format` a request body asked for.
fn sent(body: &Value) -> String {
    match &body["response_format"] {
        Value::Null => "none".into(),
        rf => {
            let kind = rf["type"].as_str().unwrap_or("?").to_string();
            if rf["json_schema"].is_object() || rf["schema"].is_object() {
                format!("{kind}+schema")
            } else {
                kind
            }
        }
    }
}

/// Sum of tokens and milliseconds over llama.cpp's timing lines of the log, as tokens per
/// second: `prompt eval time = X ms / N tokens` and `eval time = X ms / N runs`.
fn speeds(log: &str) -> (f64, f64) {
    let mut prompt = (0.0, 0.0);
    let mut gen = (0.0, 0.0);
    for line in log.lines() {
        let Some((_, rest)) = line.split_once("eval time =") else {
            continue;
        };
        let mut nums = rest
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|t| !t.is_empty())
            .filter_map(|t| t.parse::<f64>().ok());
        let (Some(ms), Some(n)) = (nums.next(), nums.next()) else {
            continue;
        };
        let slot = if line.contains("prompt eval time") {
            &mut prompt
        } else {
            &mut gen
        };
        slot.0 += ms;
        slot.1 += n;
    }
    let tps = |(ms, n): (f64, f64)| if ms > 0.0 { n * 1000.0 / ms } else { 0.0 };
    (tps(prompt), tps(gen))
}

fn run_mode(bin: &Path, build: &str, inst: &llama::Installed, mode: &str, dir: &Path) -> Row {
    let dir = &dir.join(build);
    std::fs::create_dir_all(dir).unwrap();
    let server = LlamaServer::start(inst, &dir.join(mode));
    let proxy = Proxy::start(server.port);
    let desktop = dir.join("desktop.json");
    std::fs::write(&desktop, DESKTOP).unwrap();
    let config = dir.join("ufo.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let mut row = Row {
        build: build.into(),
        mode: mode.into(),
        ..Row::default()
    };
    let began = Instant::now();
    while row.steps < STEPS && row.sessions < MAX_SESSIONS {
        let out = dir.join(format!("{mode}-{}", row.sessions));
        let left = (STEPS - row.steps).to_string();
        let mut cmd = Command::new(bin);
        for (key, _) in std::env::vars() {
            if key.starts_with("UFO_") || key.starts_with("OPENAI_") {
                cmd.env_remove(key);
            }
        }
        let output = cmd
            .env("XDG_DATA_HOME", dir.join("no-data"))
            .env("UFO_LLM_BASE_URL", proxy.base_url())
            .env("UFO_STRUCTURED_OUTPUT", mode)
            // a call that timed out is tried once more, not three times
            .env("UFO_LLM_MAX_ATTEMPTS", "2")
            .args(["run", "--config"])
            .arg(&config)
            .arg("--desktop")
            .arg(format!("sim:{}", desktop.display()))
            .args([
                "--llm",
                &format!("openai:{MODEL_NAME}"),
                "--max-steps",
                &left,
            ])
            .arg("--out")
            .arg(&out)
            .arg(REQUEST)
            .output()
            .unwrap();
        row.sessions += 1;
        let text = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mut steps = 0;
        for e in events.iter().filter(|e| e["type"] == "step") {
            steps += 1;
            row.prompt_tokens += e["llm"]["prompt_tokens"].as_u64().unwrap_or(0);
            row.completion_tokens += e["llm"]["completion_tokens"].as_u64().unwrap_or(0);
        }
        let end = events
            .iter()
            .rev()
            .find(|e| e["type"] == "session_end")
            .map(|e| e["status"].as_str().unwrap_or("?").to_string())
            .unwrap_or_else(|| format!("exit {:?}", output.status.code()));
        row.ends.push(end);
        if steps == 0 {
            eprintln!(
                "{mode}: a session took no step; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            break;
        }
        row.steps += steps;
    }
    row.seconds = began.elapsed().as_secs_f64();
    let bodies = proxy.bodies();
    row.refused = bodies
        .iter()
        .filter(|b| b["response_format"]["type"] == "json_schema")
        .count();
    row.calls = bodies.len() - row.refused;
    let reasks: Vec<&Value> = bodies
        .iter()
        .filter(|b| {
            b["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "assistant"))
        })
        .collect();
    row.reasks = reasks.len();
    // what each re-ask told the model (a format error, or a transition or control the
    // state machine refused): the start of its last message, and how long the answer was
    for b in reasks {
        let messages = b["messages"].as_array();
        let told = messages
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("?");
        let told = told
            .strip_prefix("Your answer could not be used: ")
            .unwrap_or(told);
        if llama::is_format_reask(told) {
            row.format_reasks += 1;
        }
        let answer = messages
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let start: String = told.chars().take(110).collect();
        let shown: String = answer.chars().take(80).collect();
        eprintln!(
            "{build} {mode}: re-ask: {} (answer of {} chars: {shown:?})",
            start.replace('\n', " "),
            answer.chars().count()
        );
    }
    let mut kinds: Vec<String> = bodies.iter().map(sent).collect();
    kinds.sort();
    kinds.dedup();
    row.sent = kinds;
    let (p, g) = speeds(&std::fs::read_to_string(&server.log).unwrap_or_default());
    row.prompt_tps = p;
    row.gen_tps = g;
    // the server's peak resident memory
    let peak = server
        .pid()
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| {
                    v.split_whitespace()
                        .next()
                        .and_then(|n| n.parse::<f64>().ok())
                })
                .unwrap_or(0.0)
        })
        .unwrap_or(0.0);
    row.rss_mb = peak / 1024.0;
    row
}

fn main() {
    let Some(inst) = llama::installed() else {
        return;
    };
    let bin = binary();
    if !bin.exists() {
        eprintln!(
            "{} is not built; run `cargo build -p ufo` first (or set UFO_BENCH_BIN)",
            bin.display()
        );
        return;
    }
    let mut builds = Vec::new();
    if let Some(before) = std::env::var_os("UFO_BENCH_BEFORE").map(PathBuf::from) {
        builds.push(("before", before));
    }
    builds.push(("after", bin));
    let modes = std::env::var("UFO_BENCH_MODES").unwrap_or_else(|_| "off,json,schema".into());
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for mode in modes.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        for (build, bin) in &builds {
            let row = run_mode(bin, build, &inst, mode, dir.path());
            eprintln!("{build} {mode}: done in {:.0} s", row.seconds);
            rows.push(row);
        }
    }
    println!(
        "SmolLM2-135M-Instruct Q4_1 on llama-cpp-python {}, {STEPS} steps per mode",
        llama::LLAMA_CPP_PYTHON_VERSION
    );
    println!(
        "| build | mode | sent | sessions (ends) | steps | calls (+ refused forms) | re-asks (for form) | prompt tok | completion tok | s/step | server prompt tok/s | server gen tok/s | server peak MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let mut ends = r.ends.clone();
        ends.sort();
        let mut counted: Vec<String> = Vec::new();
        for e in &ends {
            let n = ends.iter().filter(|x| *x == e).count();
            let item = format!("{n} {e}");
            if !counted.contains(&item) {
                counted.push(item);
            }
        }
        println!(
            "| {} | {} | {} | {} ({}) | {} | {} (+{}) | {} ({}) | {} | {} | {:.1} | {:.0} | {:.0} | {:.0} |",
            r.build,
            r.mode,
            r.sent.join(", "),
            r.sessions,
            counted.join(", "),
            r.steps,
            r.calls,
            r.refused,
            r.reasks,
            r.format_reasks,
            r.prompt_tokens,
            r.completion_tokens,
            r.seconds / r.steps.max(1) as f64,
            r.prompt_tps,
            r.gen_tps,
            r.rss_mb
        );
    }
}
