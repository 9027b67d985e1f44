//! The trajectory writer: `<out>/events.jsonl` (one flushed line per event), artifacts, and
//! progress lines on stderr.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use ufo_core::{Recorder, RecorderError};

/// Writes the trajectory into a folder.
pub struct FileRecorder {
    dir: PathBuf,
    events: File,
    progress: bool,
}

impl FileRecorder {
    /// Create the folder and `events.jsonl` in it.
    pub fn create(dir: &Path, progress: bool) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let events = File::create(dir.join("events.jsonl"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            events,
            progress,
        })
    }

    fn print_progress(&self, e: &Value) {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "step" => {
                let mut line = format!(
                    "[round {} step {}] {} {} -> {}",
                    e["round"],
                    e["seq"],
                    s("agent"),
                    s("state"),
                    s("status")
                );
                if let Some(t) = e.get("subtask").and_then(Value::as_str) {
                    line.push_str(&format!(" | subtask: {}", one_line(t, 80)));
                }
                if let Some(a) = e.get("action").filter(|a| !a.is_null()) {
                    line.push_str(&format!(" | action: {}", one_line(&action_text(a), 100)));
                }
                if let Some(r) = e.get("result").and_then(Value::as_str) {
                    line.push_str(&format!(" | result: {}", one_line(r, 100)));
                }
                if let Some(err) = e.get("error").and_then(Value::as_str) {
                    line.push_str(&format!(" | error: {}", one_line(err, 300)));
                }
                eprintln!("{line}");
            }
            "round_end" => eprintln!(
                "round {} ended {} ({}){}",
                e["round"],
                s("status"),
                s("reason"),
                e.get("message")
                    .and_then(Value::as_str)
                    .map(|m| format!(": {}", one_line(m, 300)))
                    .unwrap_or_default()
            ),
            _ => {}
        }
    }
}

fn action_text(a: &Value) -> String {
    if let Some(f) = a.get("function").and_then(Value::as_str) {
        let label = a.get("control_label").and_then(Value::as_str).unwrap_or("");
        let text = a.get("control_text").and_then(Value::as_str).unwrap_or("");
        let mut s = format!("{f} {}", a.get("args").cloned().unwrap_or(Value::Null));
        if !label.is_empty() || !text.is_empty() {
            s.push_str(&format!(" on [{label}] {text}"));
        }
        if a.get("held").and_then(Value::as_bool) == Some(true) {
            s.push_str(" (held for confirmation)");
        }
        return s;
    }
    a.to_string()
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

impl Recorder for FileRecorder {
    fn event(&mut self, event: &Value) -> Result<(), RecorderError> {
        let mut e = event.clone();
        if let Value::Object(m) = &mut e {
            m.insert("ts".into(), chrono::Utc::now().to_rfc3339().into());
        }
        let mut line = serde_json::to_string(&e).map_err(|x| RecorderError(x.to_string()))?;
        line.push('\n');
        // One write per line, flushed: a killed process leaves whole lines behind.
        self.events
            .write_all(line.as_bytes())
            .and_then(|_| self.events.flush())
            .map_err(|x| {
                RecorderError(format!("{}: {x}", self.dir.join("events.jsonl").display()))
            })?;
        if self.progress {
            self.print_progress(&e);
        }
        Ok(())
    }

    fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<String, RecorderError> {
        // Names come from the engine; keep them inside the folder all the same.
        let safe: String = name
            .chars()
            .map(|c| if c == '/' || c == '\\' { '_' } else { c })
            .collect();
        std::fs::write(self.dir.join(&safe), bytes)
            .map_err(|x| RecorderError(format!("{}: {x}", self.dir.join(&safe).display())))?;
        Ok(safe)
    }
}
