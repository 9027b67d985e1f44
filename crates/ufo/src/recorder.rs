//! The trajectory writer: `<out>/events.jsonl` (one flushed line per event), artifacts, and
//! progress lines on stderr (through the [`Console`]; one line per step, the same text on a
//! terminal and off it, coloured only on a terminal), with each step also logged to `ufo.log`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use ufo_core::inert::inert;
use ufo_core::{Recorder, RecorderError};

use crate::console::{Console, Style, Verbosity};
use crate::logging::STEP_TARGET;

/// Writes the trajectory into a folder.
pub struct FileRecorder {
    dir: PathBuf,
    events: File,
    console: Arc<Console>,
}

impl FileRecorder {
    /// Create the folder and `events.jsonl` in it; progress lines on stderr unless `progress`
    /// is false.
    #[allow(dead_code)]
    pub fn create(dir: &Path, progress: bool, append: bool) -> std::io::Result<Self> {
        let v = if progress {
            Verbosity::Normal
        } else {
            Verbosity::Quiet
        };
        Self::create_with(dir, Console::new(v), append)
    }

    /// Create the folder and `events.jsonl` in it, printing progress through `console`
    /// (`append`: keep the events already there, for `ufo resume`).
    pub fn create_with(dir: &Path, console: Arc<Console>, append: bool) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("events.jsonl");
        let events = if append {
            terminate_last_line(&path)?;
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)?
        } else {
            File::create(&path)?
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            events,
            console,
        })
    }

    fn log_step(&self, e: &Value) {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "step" => tracing::info!(
                target: STEP_TARGET,
                round = %e["round"],
                seq = %e["seq"],
                agent = s("agent"),
                state = s("state"),
                status = s("status"),
                subtask = s("subtask"),
                thought = s("thought"),
                action = %e.get("action").filter(|a| !a.is_null()).map(action_text).unwrap_or_default(),
                result = s("result"),
                error = s("error"),
                llm = %e["llm"],
                timings_ms = %e["timings_ms"],
                "step"
            ),
            other => tracing::info!(target: STEP_TARGET, record = %e, "{other}"),
        }
    }

    fn print_progress(&self, e: &Value) {
        // Every field shown is made inert (an agent's name holds an application's name).
        let s = |k: &str| inert(e.get(k).and_then(Value::as_str).unwrap_or(""));
        let c = &self.console;
        match s("type").as_ref() {
            "step" => {
                let mut line = format!(
                    "{} {} {} -> {}",
                    c.paint(
                        Style::Dim,
                        &format!("[round {} step {}]", e["round"], e["seq"])
                    ),
                    c.paint(Style::Cyan, &s("agent")),
                    s("state"),
                    c.paint(Style::for_status(&s("status")), &s("status"))
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
                    line.push_str(
                        &c.paint(Style::Red, &format!(" | error: {}", one_line(err, 300))),
                    );
                }
                c.line(&line);
                if c.verbosity() >= Verbosity::Verbose {
                    self.print_details(e);
                }
            }
            "round_end" => c.line(&format!(
                "round {} ended {} ({}){}",
                e["round"],
                c.paint(Style::for_status(&s("status")), &s("status")),
                s("reason"),
                e.get("message")
                    .and_then(Value::as_str)
                    .map(|m| format!(": {}", one_line(m, 300)))
                    .unwrap_or_default()
            )),
            _ => {}
        }
    }

    /// `-v`: the thought, model use and phase timings of a step, indented under its line.
    fn print_details(&self, e: &Value) {
        let c = &self.console;
        if let Some(t) = e.get("thought").and_then(Value::as_str) {
            c.line(&c.paint(Style::Dim, &format!("    thought: {}", one_line(t, 200))));
        }
        let calls = e["llm"]["calls"].as_u64().unwrap_or(0);
        if calls > 0 {
            let mut l = format!(
                "    model: {calls} call(s), {} prompt + {} completion tokens",
                e["llm"]["prompt_tokens"].as_u64().unwrap_or(0),
                e["llm"]["completion_tokens"].as_u64().unwrap_or(0)
            );
            if let Some(cost) = e["llm"]["cost"].as_f64().filter(|c| *c > 0.0) {
                l.push_str(&format!(", cost {cost:.4}"));
            }
            if let Some(m) = e.get("timings_ms").and_then(Value::as_object) {
                const ORDER: [&str; 5] = [
                    "data_collection",
                    "llm_interaction",
                    "action_execution",
                    "memory_update",
                    "total",
                ];
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by_key(|k| ORDER.iter().position(|p| p == k).unwrap_or(ORDER.len()));
                let parts: Vec<String> = keys
                    .into_iter()
                    .filter_map(|k| m[k].as_f64().map(|ms| format!("{k} {ms:.1} ms")))
                    .collect();
                if !parts.is_empty() {
                    l.push_str(&format!("; {}", parts.join(", ")));
                }
            }
            c.line(&c.paint(Style::Dim, &l));
        }
    }
}

/// A process killed mid-write can leave a partial last line; drop it so appended events start
/// on a line of their own and the file stays valid JSON Lines.
fn terminate_last_line(path: &Path) -> std::io::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if text.is_empty() || text.ends_with('\n') {
        return Ok(());
    }
    let keep = text.rfind('\n').map_or(0, |i| i + 1);
    std::fs::write(path, &text[..keep])
}

/// A one-line description of a step's action record.
pub fn action_text(a: &Value) -> String {
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

/// Untrusted text for a progress line: newlines as spaces, clipped to `max` characters, and
/// made inert (control characters and escape sequences shown escaped, never obeyed).
fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        inert(&flat).into_owned()
    } else {
        format!("{}…", inert(&flat.chars().take(max).collect::<String>()))
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
        self.log_step(&e);
        if self.console.progress() {
            self.print_progress(&e);
        }
        self.console.on_event(&e);
        Ok(())
    }

    fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<String, RecorderError> {
        // Names come from the engine; keep them inside the folder all the same.
        let safe: String = name
            .chars()
            .map(|c| if c == '/' || c == '\\' { '_' } else { c })
            .collect();
        // Write then rename, so a killed process never leaves half a checkpoint behind.
        let path = self.dir.join(&safe);
        let tmp = self.dir.join(format!(".{safe}.tmp"));
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|x| RecorderError(format!("{}: {x}", path.display())))?;
        Ok(safe)
    }
}
