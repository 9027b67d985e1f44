//! A recorded demonstration's `DIR/demo.json`: written by `ufo demo record`, read by
//! `ufo knowledge add-demo`.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use ufo_core::demo::Step;

/// `DIR/demo.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DemoFile {
    /// The task shown.
    pub task: String,
    /// The steps, with the controls they reached.
    pub steps: Vec<Step>,
    /// Presses read.
    pub presses: usize,
    /// Seconds recorded.
    pub seconds: f64,
}

/// The largest `demo.json` read (a recording's steps are far smaller).
const MAX_DEMO_BYTES: u64 = 16 * 1024 * 1024;

/// Read a demonstration's `demo.json` (for `ufo knowledge add-demo`).
pub fn read(dir: &Path) -> Result<DemoFile> {
    let path = dir.join("demo.json");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_DEMO_BYTES {
        return Err(anyhow!(
            "{} is {size} bytes, more than a demonstration holds ({MAX_DEMO_BYTES}); record it again",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}; record a demonstration with `ufo demo record --out DIR`",
            path.display()
        )
    })?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a demonstration", path.display()))
}
