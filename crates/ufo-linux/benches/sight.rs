//! Sight's cost on windows with a full accessibility tree (docs/sight.md, "Measured"): the
//! same windows observed by two desktops in one run, alternately, one without a detector
//! ("before") and one with sight on in `auto` mode ("after"). A full tree must not be read in
//! its pixels (the detector is never called), must cost no more, and must list nothing twice.
//!
//! The detector here is a stand-in that counts its calls (this crate never depends on the
//! engine); the engine's own cost is measured by
//! `cargo bench -p ufo-vision --features tesseract --bench sight`.
//!
//! Run inside a desktop session: `cargo bench -p ufo-linux --bench sight`
//! (`UFO_BENCH_ITERS` observations per window and desktop, default 60). It launches
//! gnome-calculator and mousepad under a fresh HOME and stops them at the end.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use ufo_core::vision::{
    DetectError, DetectPolicy, DetectRequest, DetectedBox, Detector, RegionImage, VisionMode,
};
use ufo_linux::{LinuxConfig, LinuxDesktop, Sight};

#[path = "support/mod.rs"]
mod support;
use support::{ms, pct};

/// Counts the regions it is asked to read; reads nothing.
#[derive(Default)]
struct Counting(AtomicUsize);

#[async_trait]
impl Detector for Counting {
    async fn detect(
        &self,
        _region: &RegionImage,
        _request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(Vec::new())
    }
}

async fn connect(home: &std::path::Path, sight: Option<Sight>) -> LinuxDesktop {
    let config = LinuxConfig {
        launch_env: LinuxConfig::home_env(home),
        sight,
        ..LinuxConfig::default()
    };
    LinuxDesktop::connect(config).await.unwrap_or_else(|e| {
        eprintln!("sight bench: {e}");
        std::process::exit(1);
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "sight bench: no DISPLAY; run scripts/desktop-session.sh up and source its env file"
        );
        return;
    }
    let iters: usize = std::env::var("UFO_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let home = tempfile::tempdir().expect("temporary HOME");
    let counting = Arc::new(Counting::default());
    let before = connect(home.path(), None).await;
    let after = connect(
        home.path(),
        Some(Sight {
            detector: counting.clone(),
            mode: VisionMode::Auto,
            policy: DetectPolicy::default(),
        }),
    )
    .await;
    let mut started = Vec::new();
    let mut windows = Vec::new();
    for app in ["calculator", "text editor"] {
        match before.launch_app(app).await {
            Ok(w) => {
                started.extend(w.pid);
                windows.push(w);
            }
            Err(e) => eprintln!("sight bench: cannot launch {app}: {e}"),
        }
    }
    println!(
        "{:<22} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>6} {:>5}",
        "window (ms)", "controls", "before50", "before95", "after50", "after95", "reads", "twice"
    );
    for w in &windows {
        for d in [&before, &after] {
            for _ in 0..3 {
                let _ = d.observe_with(w.id.as_str(), false).await;
            }
        }
        let (mut b, mut a) = (Vec::new(), Vec::new());
        let (mut controls, mut twice) = (0, 0);
        for _ in 0..iters {
            for (d, out) in [(&before, &mut b), (&after, &mut a)] {
                let t = Instant::now();
                if let Ok(o) = d.observe_with(w.id.as_str(), false).await {
                    out.push(ms(t.elapsed()));
                    let ids: HashSet<&str> = o
                        .observation
                        .controls
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect();
                    twice = twice.max(o.observation.controls.len() - ids.len());
                    controls = o.observation.controls.len();
                }
            }
        }
        b.sort_by(|x, y| x.total_cmp(y));
        a.sort_by(|x, y| x.total_cmp(y));
        println!(
            "{:<22} {:>8} | {:>8.2} {:>8.2} | {:>8.2} {:>8.2} | {:>6} {:>5}",
            w.app_name,
            controls,
            pct(&b, 0.5),
            pct(&b, 0.95),
            pct(&a, 0.5),
            pct(&a, 0.95),
            counting.0.load(Ordering::Relaxed),
            twice
        );
    }
    println!(
        "({iters} observations per window and desktop, alternately; reads = regions the \
         detector was asked to read so far, twice = most controls listed twice in one observation)"
    );
    for pid in started {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
}
