//! How soon a private desktop is ready: the time from `ufo run --desktop private` starting to
//! the host's first observation recorded (the first `step` in events.jsonl), p50 and p95 over
//! runs, beside the same run on the session's own live desktop (the reference: ufo without a
//! desktop to start). Needs a desktop session (`DISPLAY`) and the release binary:
//!
//!     cargo build --release -p ufo && cargo bench -p ufo --bench private
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 10;

fn binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let release = root.join("target/release/ufo");
    if release.exists() {
        release
    } else {
        root.join("target/debug/ufo")
    }
}

/// Seconds until the first step record of one run on `desktop`.
fn first_step(bin: &Path, desktop: &str, dir: &Path) -> f64 {
    let script = dir.join("script.jsonl");
    std::fs::write(
        &script,
        r#"{"agent":"host","response":{"Observation":"o","Thought":"t","Status":"FINISH"}}"#,
    )
    .unwrap();
    let out = dir.join(format!("out-{desktop}"));
    let _ = std::fs::remove_dir_all(&out);
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(["run", "--desktop", desktop, "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Nothing to do")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let events = out.join("events.jsonl");
    let mut at = None;
    while at.is_none() && started.elapsed() < Duration::from_secs(30) {
        if std::fs::read_to_string(&events)
            .map(|t| t.contains("\"type\":\"step\""))
            .unwrap_or(false)
        {
            at = Some(started.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.wait();
    at.unwrap_or(f64::NAN)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("private bench: no DISPLAY; start a session (scripts/desktop-session.sh up)");
        return;
    }
    let bin = binary();
    let dir = tempfile::tempdir().unwrap();
    let mut private: Vec<f64> = (0..RUNS)
        .map(|_| first_step(&bin, "private", dir.path()))
        .collect();
    let mut live: Vec<f64> = (0..RUNS)
        .map(|_| first_step(&bin, "live", dir.path()))
        .collect();
    let (p50, p95) = (pct(&mut private, 0.5), pct(&mut private, 0.95));
    let (l50, l95) = (pct(&mut live, 0.5), pct(&mut live, 0.95));
    println!(
        "first observation recorded, {RUNS} runs each ({}):",
        bin.display()
    );
    println!("  --desktop private  p50 {p50:.3} s  p95 {p95:.3} s");
    println!("  --desktop live     p50 {l50:.3} s  p95 {l95:.3} s  (reference)");
    println!("  private / live     {:.1}x at p50", p50 / l50);
}
