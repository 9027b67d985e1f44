//! Observation benchmark: the whole observation (tree + screenshot + annotation) of each test
//! window, p50 and p95, side by side with a pyatspi walk of the same window run in the same
//! run with `/usr/bin/python3`, and the ratio.
//!
//! Run inside a desktop session: `cargo bench -p ufo-linux --bench observe`
//! (`UFO_BENCH_ITERS` sets the number of observations, default 100; the Python walk runs a
//! fifth as many, at least 10). It launches gnome-calculator and mousepad under a fresh HOME
//! and stops them at the end.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ufo_core::Desktop;
use ufo_linux::{LinuxConfig, LinuxDesktop, ObservationStats};

#[path = "support/mod.rs"]
mod support;
use support::{median, ms, pct, pyatspi};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "observe bench: no DISPLAY; run scripts/desktop-session.sh up and source its env file"
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
        .unwrap_or(100);
    let home = tempfile::tempdir().expect("temporary HOME");
    let config = LinuxConfig {
        launch_env: LinuxConfig::home_env(home.path()),
        ..LinuxConfig::default()
    };
    let desktop = match LinuxDesktop::connect(config).await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("observe bench: {e}");
            std::process::exit(1);
        }
    };
    let before: Vec<Option<u32>> = desktop
        .windows()
        .await
        .unwrap_or_default()
        .iter()
        .map(|w| w.pid)
        .collect();
    let mut started = Vec::new();
    let mut windows = Vec::new();
    for app in ["calculator", "text editor"] {
        match desktop.launch_app(app).await {
            Ok(w) => {
                if !before.contains(&w.pid) {
                    started.extend(w.pid);
                }
                windows.push(w);
            }
            Err(e) => eprintln!("observe bench: cannot launch {app}: {e}"),
        }
    }
    println!(
        "{:<26} {:>5} {:>8} | {:>8} {:>8} | {:>7} {:>7} {:>7} {:>7} | {:>9} {:>9} | {:>7}",
        "window (ms)",
        "nodes",
        "controls",
        "p50",
        "p95",
        "tree",
        "details",
        "capture",
        "encode",
        "py p50",
        "py p95",
        "ratio"
    );
    for w in &windows {
        // warm up: the first observation of a GTK4 window walks its tree once
        for _ in 0..3 {
            let _ = desktop.observe_with(w.id.as_str(), false).await;
        }
        let mut totals = Vec::with_capacity(iters);
        let mut stats: Vec<ObservationStats> = Vec::with_capacity(iters);
        let mut controls = 0;
        for _ in 0..iters {
            let t = Instant::now();
            match desktop.observe_with(w.id.as_str(), false).await {
                Ok(o) => {
                    totals.push(ms(t.elapsed()));
                    controls = o.observation.controls.len();
                    stats.push(o.stats);
                }
                Err(e) => {
                    eprintln!("observe bench: observation of {} failed: {e}", w.title);
                    break;
                }
            }
        }
        totals.sort_by(|a, b| a.total_cmp(b));
        let nodes = stats.last().map(|s| s.nodes).unwrap_or(0);
        let part =
            |f: fn(&ObservationStats) -> Duration| median(stats.iter().map(|s| ms(f(s))).collect());
        let (p50, p95) = (pct(&totals, 0.5), pct(&totals, 0.95));
        let py = pyatspi(&w.app_name, &w.title, (iters / 5).max(10));
        let (py50, py95, ratio, py_nodes) = match &py {
            Ok((t, n)) => {
                let (a, b) = (pct(t, 0.5), pct(t, 0.95));
                (a, b, a / p50, *n)
            }
            Err(e) => {
                eprintln!("observe bench: pyatspi baseline unavailable: {e}");
                (f64::NAN, f64::NAN, f64::NAN, 0)
            }
        };
        println!(
            "{:<26} {:>5} {:>8} | {:>8.2} {:>8.2} | {:>7.2} {:>7.2} {:>7.2} {:>7.2} | {:>9.1} {:>9.1} | {:>6.1}x",
            format!("{} ({})", w.app_name, if py_nodes > 0 { py_nodes } else { nodes }),
            nodes,
            controls,
            p50,
            p95,
            part(|s| s.tree),
            part(|s| s.details),
            part(|s| s.capture),
            part(|s| s.encode),
            py50,
            py95,
            ratio
        );
    }
    println!(
        "(p50/p95 of {iters} whole observations: tree + per-control details + screenshot + annotation + 2 PNGs; \
         tree/details/capture/encode are medians of the parts, capture runs alongside the tree; \
         py = pyatspi walk of the same window with its client cache cleared, ratio = py p50 / p50)"
    );
    // after an action (what an AppAgent step observes): a click on the calculator's "1"
    // (C clears it every 10), a letter typed into mousepad; the application's CPU over the run
    println!(
        "{:<26} {:>8} {:>8} | {:>12}",
        "after an action (ms)", "p50", "p95", "app CPU"
    );
    for w in &windows {
        let Ok(o) = desktop.observe(&w.id).await else {
            continue;
        };
        let find = |role: &str, name: &str| {
            o.controls
                .iter()
                .find(|c| c.role == role && (name.is_empty() || c.name == name))
                .map(|c| c.id.clone())
        };
        let click = ufo_core::UiAction::Click {
            button: ufo_core::Button::Left,
            double: false,
        };
        let steps: Vec<(Option<String>, ufo_core::UiAction)> = if w.app_name.contains("calc") {
            let (one, clear) = (find("button", "1"), find("button", "C"));
            (0..iters.min(40))
                .map(|i| {
                    if i % 10 == 9 {
                        (clear.clone(), click.clone())
                    } else {
                        (one.clone(), click.clone())
                    }
                })
                .collect()
        } else {
            let text = find("text", "");
            (0..iters.min(40))
                .map(|_| {
                    (
                        text.clone(),
                        ufo_core::UiAction::TypeKeys { keys: "a".into() },
                    )
                })
                .collect()
        };
        let ticks0 = w.pid.and_then(cpu_ticks);
        let t_run = Instant::now();
        let mut after = Vec::new();
        for (id, action) in steps {
            let Some(id) = id else { break };
            if desktop.act(&w.id, Some(&id), &action).await.is_err() {
                break;
            }
            let t = Instant::now();
            if desktop.observe_with(w.id.as_str(), false).await.is_ok() {
                after.push(ms(t.elapsed()));
            }
        }
        let cpu = match (ticks0, w.pid.and_then(cpu_ticks)) {
            (Some(a), Some(b)) => format!(
                "{:.0}% of a core",
                (b - a) as f64 / 100.0 / t_run.elapsed().as_secs_f64() * 100.0
            ),
            _ => "?".into(),
        };
        after.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{:<26} {:>8.2} {:>8.2} | {:>12}",
            w.app_name,
            pct(&after, 0.5),
            pct(&after, 0.95),
            cpu
        );
    }
    for pid in started {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
}

/// User and system CPU ticks of a process so far.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?)
}
