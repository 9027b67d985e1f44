//! What the observation benchmarks share: percentiles, and the pyatspi walk of the same window
//! (`scripts/pyatspi_walk.py` with `/usr/bin/python3`) they are measured beside.
#![allow(dead_code)] // each bench uses its own part

use std::time::Duration;

/// The `p` percentile (0..=1) of sorted values; NaN when there are none.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Milliseconds of a duration.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of unsorted values.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    pct(&v, 0.5)
}

/// Walk the window `title` of `app` with pyatspi `iters` times: the sorted times (ms) and the
/// nodes found.
pub fn pyatspi(app: &str, title: &str, iters: usize) -> Result<(Vec<f64>, usize), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pyatspi_walk.py");
    let out = std::process::Command::new("/usr/bin/python3")
        .args([script, app, title, &iters.to_string()])
        .output()
        .map_err(|e| format!("cannot run /usr/bin/python3: {e}"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "pyatspi walk failed ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(err) = v.get("error") {
        return Err(err.to_string());
    }
    let mut times: Vec<f64> = v["times_ms"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    times.sort_by(|a, b| a.total_cmp(b));
    Ok((times, v["nodes"].as_u64().unwrap_or(0) as usize))
}
