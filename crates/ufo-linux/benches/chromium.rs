//! Chromium observation benchmark (issue 12): the whole observation (tree + screenshot +
//! annotation) of a page with a form and 200 links, p50 and p95, beside a pyatspi walk of the
//! same window in the same run (`scripts/pyatspi_walk.py` with `/usr/bin/python3`).
//!
//! Run inside a desktop session: `cargo bench -p ufo-linux --bench chromium`
//! (`UFO_BENCH_ITERS` sets the number of observations, default 100; the Python walk runs a
//! fifth as many, at least 10). It starts Chromium with renderer accessibility in a fresh
//! profile and stops every process of that profile at the end.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ufo_core::Desktop;
use ufo_linux::{LinuxConfig, LinuxDesktop, ObservationStats};

#[path = "support/mod.rs"]
mod support;
use support::{median, ms, pct, pyatspi};

fn page(links: usize) -> String {
    let list: String = (0..links)
        .map(|i| format!("<li><a href=\"#l{i}\">Link number {i}</a></li>\n"))
        .collect();
    format!(
        "<!doctype html><html><head><title>Bench form</title></head><body><h1>Bench form</h1>\
         <form method=\"get\" action=\"#\">\
         <p><label for=\"n\">Full name</label> <input id=\"n\" name=\"n\"></p>\
         <p><label for=\"c\">Colour</label> <select id=\"c\" name=\"c\"><option>Red</option>\
         <option>Green</option></select></p>\
         <p><input id=\"g\" name=\"g\" type=\"checkbox\"> <label for=\"g\">Gift wrap</label></p>\
         <p><input type=\"submit\" value=\"Go\"></p></form><ul>{list}</ul></body></html>"
    )
}

/// Stops every process of the profile, however the bench ends.
struct Browser(String, std::process::Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.1.kill();
        let _ = self.1.wait();
        for signal in ["-TERM", "-KILL"] {
            for _ in 0..30 {
                let pids = ufo_proc::live_processes_with_arg(&self.0);
                if pids.is_empty() {
                    return;
                }
                for pid in pids {
                    let _ = std::process::Command::new("kill")
                        .args([signal, &pid.to_string()])
                        .status();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "chromium bench: no DISPLAY; run scripts/desktop-session.sh up and source its env file"
        );
        return;
    }
    let iters: usize = std::env::var("UFO_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("bench.html");
    std::fs::write(&file, page(200)).expect("page written");
    let profile_dir = dir.path().join("profile");
    let profile = ufo_desktop::testing::chromium_profile_arg(&profile_dir);
    let spawned = ufo_desktop::testing::chromium_command(&profile_dir)
        .arg(format!("file://{}", file.display()))
        .spawn();
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            eprintln!("chromium bench: cannot start chromium: {e}");
            std::process::exit(1);
        }
    };
    let _browser = Browser(profile, child);
    let desktop = match LinuxDesktop::connect(LinuxConfig::default()).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("chromium bench: {e}");
            std::process::exit(1);
        }
    };
    // wait for the page's links
    let deadline = Instant::now() + Duration::from_secs(40);
    let window = loop {
        let found = desktop
            .windows()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|w| w.title.starts_with("Bench form"));
        if let Some(w) = found {
            if let Ok(o) = desktop.observe_with(w.id.as_str(), false).await {
                if o.observation.controls.iter().any(|c| c.role == "link") {
                    break w;
                }
            }
        }
        if Instant::now() > deadline {
            eprintln!("chromium bench: the page did not show within 40 s");
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    for _ in 0..3 {
        let _ = desktop.observe_with(window.id.as_str(), false).await;
    }
    let mut totals = Vec::with_capacity(iters);
    let mut stats: Vec<ObservationStats> = Vec::with_capacity(iters);
    let mut controls = 0;
    let mut links = 0;
    for _ in 0..iters {
        let t = Instant::now();
        match desktop.observe_with(window.id.as_str(), false).await {
            Ok(o) => {
                totals.push(ms(t.elapsed()));
                controls = o.observation.controls.len();
                links = o
                    .observation
                    .controls
                    .iter()
                    .filter(|c| c.role == "link")
                    .count();
                stats.push(o.stats);
            }
            Err(e) => {
                eprintln!("chromium bench: observation failed: {e}");
                break;
            }
        }
    }
    totals.sort_by(|a, b| a.total_cmp(b));
    let nodes = stats.last().map(|s| s.nodes).unwrap_or(0);
    let part =
        |f: fn(&ObservationStats) -> Duration| median(stats.iter().map(|s| ms(f(s))).collect());
    let (p50, p95) = (pct(&totals, 0.5), pct(&totals, 0.95));
    let py = pyatspi(&window.app_name, &window.title, (iters / 5).max(10));
    let (py50, py95, py_nodes) = match &py {
        Ok((t, n)) => (pct(t, 0.5), pct(t, 0.95), *n),
        Err(e) => {
            eprintln!("chromium bench: pyatspi baseline unavailable: {e}");
            (f64::NAN, f64::NAN, 0)
        }
    };
    println!(
        "Chromium page, form + 200 links: {nodes} nodes in the window's tree ({py_nodes} walked by pyatspi), \
         {controls} controls listed ({links} links on screen)"
    );
    println!(
        "ufo observation p50 {p50:.1} ms, p95 {p95:.1} ms (tree {:.1}, details {:.1}, capture {:.1}, encode {:.1}) \
         | pyatspi walk p50 {py50:.1} ms, p95 {py95:.1} ms | ratio {:.1}x",
        part(|s| s.tree),
        part(|s| s.details),
        part(|s| s.capture),
        part(|s| s.encode),
        py50 / p50
    );
}
