//! Helpers shared by the live tests of this crate (`mod support;` in each test file).

#![allow(dead_code)]

use std::time::{Duration, Instant};

use ufo_core::{Desktop, WindowObservation};
use ufo_linux::LinuxDesktop;

/// Observe window `id` until `ok` holds, `within` at most (each observation bounded by it
/// too); `what` names the awaited state in the failure, which lists the last observation.
pub async fn observe_until<F>(
    d: &LinuxDesktop,
    id: &str,
    what: &str,
    within: Duration,
    ok: F,
) -> WindowObservation
where
    F: Fn(&WindowObservation) -> bool,
{
    let deadline = Instant::now() + within;
    loop {
        let obs = tokio::time::timeout(within, d.observe(id))
            .await
            .unwrap_or_else(|_| panic!("an observation did not answer within {within:?}"))
            .expect("observe");
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
