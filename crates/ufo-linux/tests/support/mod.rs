//! Helpers shared by the live tests of this crate (`mod support;` in each test file).

#![allow(dead_code)]

pub mod office;

use std::time::{Duration, Instant};

use ufo_core::{Desktop, WindowId, WindowObservation};
use ufo_linux::LinuxDesktop;

/// Observe window `id` until `ok` holds, `within` at most (each observation bounded by it
/// too); `what` names the awaited state in the failure, which lists the last observation.
pub async fn observe_until<F>(
    d: &LinuxDesktop,
    id: &WindowId,
    what: &str,
    within: Duration,
    ok: F,
) -> WindowObservation
where
    F: Fn(&WindowObservation) -> bool,
{
    let deadline = Instant::now() + within;
    loop {
        let obs = match tokio::time::timeout(within, d.observe(id))
            .await
            .unwrap_or_else(|_| panic!("an observation did not answer within {within:?}"))
        {
            Ok(obs) => obs,
            // (a window may be unmapped for a moment, or replaced: say so, and what is on
            // the screen, and look again until the deadline)
            Err(e) => {
                let windows = d.windows().await.map(|ws| {
                    ws.into_iter()
                        .map(|w| format!("{} {:?} pid {:?}", w.id, w.title, w.pid))
                        .collect::<Vec<_>>()
                });
                assert!(
                    Instant::now() < deadline,
                    "{what}: observing window {id} failed: {e}; the windows now: {windows:?}"
                );
                eprintln!("observing window {id} failed ({e}), looking again; the windows now: {windows:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if ok(&obs) {
            return obs;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not appear within {within:?}: {}",
            listing(&obs)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How many controls an observation has, and its warnings.
pub fn describe(obs: &WindowObservation) -> String {
    format!(
        "{} controls, warnings {:?}",
        obs.controls.len(),
        obs.warnings
    )
}

/// [`describe`], then each control's role, name and value.
pub fn listing(obs: &WindowObservation) -> String {
    let mut s = describe(obs);
    for c in &obs.controls {
        s.push_str(&format!("\n  {} {:?} {:?}", c.role, c.name, c.value));
    }
    s
}
