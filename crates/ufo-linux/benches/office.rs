//! Office observation benchmark (issue 11): the whole observation of LibreOffice Calc with
//! 1,000 filled cells and of Writer with 3 pages, p50 and p95, beside a pyatspi walk of the
//! same window in the same run (`/usr/bin/python3`, the sheet's cells not enumerated, as in
//! ufo). Also prints the controls listed, the size of the controls part of an AppAgent prompt
//! (characters / 4 ≈ tokens), and LibreOffice's CPU and memory after the observations.
//!
//! Run inside a desktop session with LibreOffice and its GTK3 plugin installed:
//! `cargo bench -p ufo-linux --bench office` (`UFO_BENCH_ITERS`, default 30). It starts its own
//! LibreOffice with a fresh profile and stops it at the end.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ufo_core::Desktop;
use ufo_linux::LinuxDesktop;

#[path = "support/mod.rs"]
mod support;
use support::{pct, pyatspi};

/// A flat ODF spreadsheet with `rows` x `cols` numbers.
fn fods(rows: usize, cols: usize) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet><table:table table:name="Sheet1">"#,
    );
    for r in 0..rows {
        s.push_str("<table:table-row>");
        for c in 0..cols {
            let v = r * cols + c;
            s.push_str(&format!(
                r#"<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}</text:p></table:table-cell>"#
            ));
        }
        s.push_str("</table:table-row>");
    }
    s.push_str("</table:table></office:spreadsheet></office:body></office:document>");
    s
}

/// A flat ODF text document of about three pages.
fn fodt(paragraphs: usize) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text"><office:body><office:text>"#,
    );
    for i in 0..paragraphs {
        s.push_str(&format!(
            "<text:p>Paragraph {i}: the quick brown fox jumps over the lazy dog, again and again, until the line wraps.</text:p>"
        ));
    }
    s.push_str("</office:text></office:body></office:document>");
    s
}

fn cpu_ticks_and_rss(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((ticks, rss))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "office bench: no DISPLAY; run scripts/desktop-session.sh up and source its env file"
        );
        return;
    }
    // `RUST_LOG=ufo_linux=debug` shows where an observation's time goes
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let iters: usize = std::env::var("UFO_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("temporary folder");
    let sheet = dir.path().join("bench.fods");
    let text = dir.path().join("bench.fodt");
    std::fs::write(&sheet, fods(50, 20)).unwrap();
    std::fs::write(&text, fodt(150)).unwrap();
    let profile = format!(
        "-env:UserInstallation=file://{}",
        dir.path().join("profile").display()
    );
    let d = LinuxDesktop::connect(Default::default())
        .await
        .unwrap_or_else(|e| panic!("office bench: {e}"));
    let mut child = std::process::Command::new("libreoffice")
        .args(["--norestore", "--nologo", &profile])
        .arg(&sheet)
        .arg(&text)
        .env("SAL_USE_VCLPLUGIN", "gtk3")
        .env("HOME", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("office bench: cannot start libreoffice");
    let mut windows = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    for want in ["bench.fods", "bench.fodt"] {
        loop {
            let ws = d.windows().await.unwrap_or_default();
            if let Some(w) = ws.into_iter().find(|w| w.title.contains(want)) {
                windows.push(w);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "office bench: {want} did not open"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "{:<34} {:>8} {:>9} | {:>8} {:>8} | {:>9} {:>9} {:>6}",
        "window (ms)", "controls", "prompt tk", "p50", "p95", "py p50", "py p95", "py nodes"
    );
    let pid = windows[0].pid.unwrap_or(0);
    for w in &windows {
        let rss0 = cpu_ticks_and_rss(pid).map(|x| x.1).unwrap_or(0);
        for _ in 0..3 {
            let _ = d.observe_with(w.id.as_str(), false).await;
        }
        let rss_warm = cpu_ticks_and_rss(pid).map(|x| x.1).unwrap_or(0);
        let mut t = Vec::new();
        let mut last = None;
        let mut phases: [Vec<f64>; 4] = Default::default();
        for _ in 0..iters {
            let s = Instant::now();
            let o = d.observe_with(w.id.as_str(), false).await.expect("observe");
            t.push(s.elapsed().as_secs_f64() * 1000.0);
            let st = &o.stats;
            for (v, d) in phases
                .iter_mut()
                .zip([st.tree, st.details, st.capture, st.encode])
            {
                v.push(d.as_secs_f64() * 1000.0);
            }
            last = Some(o);
        }
        t.sort_by(|a, b| a.total_cmp(b));
        for v in phases.iter_mut() {
            v.sort_by(|a, b| a.total_cmp(b));
        }
        eprintln!(
            "{}: p50 of its parts (ms): tree {:.1}, details {:.1}, capture {:.1} (beside them), encode {:.1}",
            w.title,
            pct(&phases[0], 0.5),
            pct(&phases[1], 0.5),
            pct(&phases[2], 0.5),
            pct(&phases[3], 0.5)
        );
        let rss1 = cpu_ticks_and_rss(pid).map(|x| x.1).unwrap_or(0);
        eprintln!(
            "{}: LibreOffice memory {} MiB before, {} MiB after 3 warm-up observations, {} MiB after {iters} more",
            w.title,
            rss0 / 1024,
            rss_warm / 1024,
            rss1 / 1024
        );
        let o = last.unwrap().observation;
        // the controls part of the AppAgent prompt, as prompt.rs writes it
        let chars: usize = o
            .controls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "  [{}] {} \"{}\"{}\n",
                    i + 1,
                    c.role,
                    c.name,
                    c.value
                        .as_ref()
                        .map(|v| format!(" value: {}", serde_json::to_string(v).unwrap()))
                        .unwrap_or_default()
                )
                .len()
            })
            .sum();
        let (py50, py95, pyn) = match pyatspi(&w.app_name, &w.title, (iters / 3).max(5)) {
            Ok((p, n)) => (pct(&p, 0.5), pct(&p, 0.95), n),
            Err(e) => {
                eprintln!("office bench: {e}");
                (f64::NAN, f64::NAN, 0)
            }
        };
        println!(
            "{:<34} {:>8} {:>9} | {:>8.1} {:>8.1} | {:>9.1} {:>9.1} {:>6}",
            w.title.chars().take(34).collect::<String>(),
            o.controls.len(),
            chars / 4,
            pct(&t, 0.5),
            pct(&t, 0.95),
            py50,
            py95,
            pyn
        );
    }
    // the windows in turn: raising one makes LibreOffice send events, so every observation
    // follows events (what an observation after an action costs): the kept tree is refreshed
    // from them (changes.rs), or read whole with UFO_INCREMENTAL=0
    let mut turns: Vec<Vec<f64>> = vec![Vec::new(); windows.len()];
    for _ in 0..iters {
        for (w, t) in windows.iter().zip(turns.iter_mut()) {
            let s = Instant::now();
            let _ = d.observe_with(w.id.as_str(), false).await.expect("observe");
            t.push(s.elapsed().as_secs_f64() * 1000.0);
        }
    }
    for (w, t) in windows.iter().zip(turns.iter_mut()) {
        t.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{:<34} {:>8} {:>9} | {:>8.1} {:>8.1} | (windows in turn: after events)",
            w.title.chars().take(34).collect::<String>(),
            "",
            "",
            pct(t, 0.5),
            pct(t, 0.95)
        );
    }
    if let Some((t0, r0)) = cpu_ticks_and_rss(pid) {
        std::thread::sleep(Duration::from_secs(3));
        if let Some((t1, r1)) = cpu_ticks_and_rss(pid) {
            println!(
                "LibreOffice over the 3 s after the observations: {:.0}% of a core, memory {} -> {} MiB",
                (t1 - t0) as f64 / 100.0 / 3.0 * 100.0,
                r0 / 1024,
                r1 / 1024
            );
        }
    }
    for pid in ufo_proc::live_processes_with_arg(&profile) {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}
