//! The trajectory writer: `<out>/events.jsonl` (one flushed line per event), artifacts, and
//! progress lines on stderr (through the [`Console`]; one line per step, the same text on a
//! terminal and off it, coloured only on a terminal), with each step also logged to `ufo.log`.
//!
//! A trajectory is never left half-written: each event is one whole line (a failed write is
//! cut back to the last whole line), artifacts are written to a temporary file and renamed
//! (the temporary file is removed on failure), and a lock file keeps two runs out of one
//! folder (see [`OutLock`]). Every file is opened through [`crate::folder`]: a link planted
//! in the folder is refused, never followed.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use ufo_core::inert::inert;
use ufo_core::{Recorder, RecorderError};

use crate::console::{Console, Style, Verbosity};
use crate::logging::STEP_TARGET;

/// Where event lines go: `events.jsonl`, or in tests a writer that fails on demand.
pub trait EventSink: Write + Send {
    /// Cut the file back to `len` bytes, dropping a partly written line.
    fn truncate(&mut self, len: u64) -> std::io::Result<()>;
}

impl EventSink for File {
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        // The file is opened in append mode, so the next write goes to the new end.
        self.set_len(len)
    }
}

/// Writes the trajectory into a folder.
pub struct FileRecorder {
    dir: PathBuf,
    events: Box<dyn EventSink>,
    /// Bytes of whole lines in `events.jsonl`: where a failed write is cut back to.
    written: u64,
    console: Arc<Console>,
    /// The devices of a session across several desktops: each `step` record names the device
    /// it is about (`device`), and `session_start` lists them. Empty for one desktop, whose
    /// records stay as they are.
    devices: Vec<String>,
}

impl FileRecorder {
    /// Name the device of every step among `devices` (a session across several desktops).
    pub fn with_devices(mut self, devices: Vec<String>) -> Self {
        self.devices = devices;
        self
    }

    /// Add the device fields of a session across several desktops to `e`.
    fn mark_device(&self, e: &mut Value) {
        if self.devices.is_empty() {
            return;
        }
        let device = match e.get("type").and_then(Value::as_str) {
            Some("step") => crate::devices::device_of_step(e, &self.devices).map(Value::from),
            Some("session_start") => Some(self.devices.clone().into()),
            _ => None,
        };
        let key = if e["type"] == "session_start" {
            "devices"
        } else {
            "device"
        };
        if let (Value::Object(m), Some(d)) = (e, device) {
            m.insert(key.into(), d);
        }
    }

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
        // Append mode: after a failed write is cut back, the next line starts at the new end.
        let events = crate::folder::open_append(&path)?;
        if append {
            terminate_last_line(&events)?;
        } else {
            events.set_len(0)?;
        }
        let written = events.metadata()?.len();
        Ok(Self::with_sink(dir, Box::new(events), written, console))
    }

    /// A recorder writing its events to `events` (which holds `written` bytes of whole lines
    /// already) and its artifacts into `dir`.
    pub fn with_sink(
        dir: &Path,
        events: Box<dyn EventSink>,
        written: u64,
        console: Arc<Console>,
    ) -> Self {
        Self {
            dir: dir.to_path_buf(),
            events,
            written,
            console,
            devices: Vec::new(),
        }
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
        let c = &self.console;
        if let Some(line) = progress_line(e, &|style, text| c.paint(style, text)) {
            c.line(&line);
        }
        if e["type"] == "step" && c.verbosity() >= Verbosity::Verbose {
            self.print_details(e);
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
/// on a line of their own and the file stays valid JSON Lines. The file is searched backwards
/// for its last newline, a block at a time, so its size does not matter.
fn terminate_last_line(file: &File) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    const BLOCK: u64 = 64 * 1024;
    let len = file.metadata()?.len();
    let mut end = len;
    let mut block = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let part = &mut block[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        if let Some(i) = part.iter().rposition(|b| *b == b'\n') {
            let keep = start + i as u64 + 1;
            return if keep == len {
                Ok(())
            } else {
                file.set_len(keep)
            };
        }
        end = start;
    }
    file.set_len(0)
}

/// The progress line of a record as `ufo run` prints it (`None` for records without one),
/// with `paint` colouring its parts; the web console shows the same lines uncoloured.
pub fn progress_line(e: &Value, paint: &dyn Fn(Style, &str) -> String) -> Option<String> {
    // Every field shown is made inert (an agent's name holds an application's name).
    let s = |k: &str| inert(e.get(k).and_then(Value::as_str).unwrap_or(""));
    match s("type").as_ref() {
            "step" => {
                let mut line = format!(
                    "{} {} {} -> {}",
                    paint(
                        Style::Dim,
                        // the counted steps (as in the summary and the report), then the
                        // record's number
                        &format!("[round {} step {} #{}]", e["round"], e["steps"], e["seq"])
                    ),
                    paint(Style::Cyan, &s("agent")),
                    s("state"),
                    paint(Style::for_status(&s("status")), &s("status"))
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
                        &paint(Style::Red, &format!(" | error: {}", one_line(err, 300))),
                    );
                }
                Some(line)
            }
            "takeover" => Some(paint(
                Style::Yellow,
                &format!(
                    "[round {} step {} #{}] the person took the desktop over ({}); the agent pauses until it is handed back (Pause key in its window)",
                    e["round"],
                    e["steps"],
                    e["seq"],
                    one_line(&s("input"), 100)
                ),
            )),
            "handback" => Some(paint(
                Style::Yellow,
                &format!(
                    "[round {} step {} #{}] {} (paused {:.1} s)",
                    e["round"],
                    e["steps"],
                    e["seq"],
                    match s("how").as_ref() {
                        "handed_back" =>
                            "the person handed the desktop back; the agent observes again",
                        "timeout" => "the desktop was not handed back in time; the round ends",
                        "cancelled" => "the session was cancelled during the take-over",
                        _ => "the take-over ended",
                    },
                    e["paused_ms"].as_f64().unwrap_or(0.0) / 1000.0
                ),
            )),
            "round_end" => Some(format!(
                "round {} ended {} ({}){}",
                e["round"],
                paint(Style::for_status(&s("status")), &s("status")),
                s("reason"),
                e.get("message")
                    .and_then(Value::as_str)
                    .map(|m| format!(": {}", one_line(m, 300)))
                    .unwrap_or_default()
            )),
            _ => None,
        }
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
    if let Some(agent) = a.get("assign").and_then(Value::as_str) {
        let window = a.get("window").and_then(Value::as_str).unwrap_or("");
        return format!("hand the subtask to {agent} ({window})");
    }
    if let Some(archive) = a.get("archive") {
        let status = archive.get("status").and_then(Value::as_str).unwrap_or("");
        return format!("archive the subtask as {status}");
    }
    // a host action: the command it ran and the window it chose
    if a.get("bash").is_some() || a.get("control_label").is_some() {
        let bash = a.get("bash").and_then(Value::as_str).unwrap_or("").trim();
        let label = a.get("control_label").and_then(Value::as_str).unwrap_or("");
        let text = a.get("control_text").and_then(Value::as_str).unwrap_or("");
        let mut parts = Vec::new();
        if !bash.is_empty() {
            parts.push(format!("run `{bash}`"));
        }
        if !label.is_empty() || !text.is_empty() {
            parts.push(format!("window [{label}] {text}"));
        }
        let mut s = parts.join(", ");
        if let Some(why) = a.get("sensitive").and_then(Value::as_str) {
            s.push_str(&format!(" (held: {why})"));
        }
        return s;
    }
    a.to_string()
}

/// Untrusted text for a progress line: on one line, clipped to `max` characters, and made
/// inert (escape sequences and other controls shown escaped, never obeyed).
fn one_line(s: &str, max: usize) -> String {
    inert(&ufo_core::text::one_line(s, max)).into_owned()
}

impl Recorder for FileRecorder {
    fn event(&mut self, event: &Value) -> Result<(), RecorderError> {
        let mut e = event.clone();
        // known secret values never reach the file, the log or the progress lines
        ufo_core::secrets::redactor().redact_json(&mut e);
        self.mark_device(&mut e);
        if let Value::Object(m) = &mut e {
            m.insert("ts".into(), chrono::Utc::now().to_rfc3339().into());
        }
        let mut line = serde_json::to_string(&e).map_err(|x| RecorderError(x.to_string()))?;
        line.push('\n');
        // One write per line, flushed: a killed process leaves whole lines behind; a failed
        // write (disk full) is cut back to the last whole line.
        if let Err(x) = self
            .events
            .write_all(line.as_bytes())
            .and_then(|_| self.events.flush())
        {
            let _ = self.events.truncate(self.written);
            return Err(RecorderError(io_message(
                &self.dir.join("events.jsonl"),
                &x,
            )));
        }
        self.written += line.len() as u64;
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
        let path = self.dir.join(&safe);
        let redacted = ufo_core::secrets::redactor().redact_bytes(bytes);
        let bytes = redacted.as_deref().unwrap_or(bytes);
        write_atomic(&path, bytes).map_err(|x| RecorderError(io_message(&path, &x)))?;
        Ok(safe)
    }
}

/// Write a file whole or not at all (see [`crate::folder::write_atomic`]): a killed process
/// never leaves half a checkpoint behind, and on failure no temporary file is left and any
/// earlier version of the file stays.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::folder::write_bytes(path, bytes)
}

/// What failed writing `path`, and what to do about it.
pub fn io_message(path: &Path, e: &std::io::Error) -> String {
    let hint = match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => {
            "the disk is full: free space, then continue with `ufo resume` on the folder"
        }
        ErrorKind::FileTooLarge => {
            "the file is larger than this process may write (`ulimit -f`): raise the limit, \
             then continue with `ufo resume` on the folder"
        }
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            "the folder cannot be written: pass --out with a writable folder"
        }
        _ => "check the disk and the folder",
    };
    format!("cannot write {}: {e}; {hint}", path.display())
}

/// The files of a trajectory in its folder: what `--force` clears.
fn is_trajectory_file(name: &str) -> bool {
    const FIXED: [&str; 7] = [
        "events.jsonl",
        "ufo.log",
        "run.json",
        "checkpoint.json",
        "blackboard.json",
        "desktop_final.json",
        "report.html",
    ];
    FIXED.contains(&name)
        || name.starts_with("step_")
        || (name.starts_with('.') && name.ends_with(".tmp"))
}

/// Why a trajectory folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    /// Another process holds the folder's lock.
    #[error(
        "another ufo (pid {pid}) is writing a trajectory into {dir}; wait for it to end or \
         choose another folder for --out (if no ufo is running, delete {dir}/.lock)"
    )]
    Busy {
        /// The folder.
        dir: String,
        /// The holder's process id.
        pid: u32,
    },
    /// The folder holds a trajectory already and `--force` was not given.
    #[error(
        "{dir} already holds a trajectory (events.jsonl); choose another folder for --out, \
         or pass --force to replace it"
    )]
    Occupied {
        /// The folder.
        dir: String,
    },
    /// A trajectory file in the folder is a symbolic link (planted: ufo never makes one).
    #[error(
        "{name} in {dir} is a symbolic link; ufo neither reads nor writes through links in a \
         trajectory folder: remove it or use another folder (`ufo run --force` replaces the \
         trajectory, removing the link without following it)"
    )]
    Link {
        /// The folder.
        dir: String,
        /// The link's name (the first one, when there are several).
        name: String,
    },
    /// The folder or its lock cannot be created, or the old trajectory cannot be cleared.
    #[error("cannot use the trajectory folder {dir}: {source}; pass --out with a writable folder")]
    Io {
        /// The folder.
        dir: String,
        /// The error.
        source: std::io::Error,
    },
}

/// How a run uses its trajectory folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutMode {
    /// A new trajectory: refuse a folder that holds one.
    New,
    /// A new trajectory replacing the one in the folder (`--force`).
    Replace,
    /// `ufo resume`: append to the trajectory in the folder.
    Append,
}

/// The lock on a trajectory folder (`<out>/.lock`, holding the owner's pid), removed when
/// dropped. A lock whose process is gone is taken over.
#[derive(Debug)]
pub struct OutLock {
    path: PathBuf,
}

const LOCK_FILE: &str = ".lock";

impl OutLock {
    /// Create the folder, take its lock and check it per `mode` (for [`OutMode::Replace`],
    /// call [`OutLock::clear`] once the run is sure to start).
    pub fn open(dir: &Path, mode: OutMode) -> Result<Self, OutError> {
        let shown = dir.display().to_string();
        let io = |source| OutError::Io {
            dir: shown.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock = Self::acquire(dir)?;
        // --force removes the links with the rest of the old trajectory.
        if mode != OutMode::Replace {
            let links = crate::folder::links_among(dir, is_trajectory_file).map_err(io)?;
            if let Some(name) = links.into_iter().next() {
                return Err(OutError::Link { dir: shown, name });
            }
        }
        if mode == OutMode::New && crate::folder::exists(&dir.join("events.jsonl")) {
            return Err(OutError::Occupied { dir: shown });
        }
        Ok(lock)
    }

    /// Remove the trajectory in the locked folder (its events, log, checkpoint, step files
    /// and the like; other files stay).
    pub fn clear(&self) -> Result<(), OutError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        clear_trajectory(dir).map_err(|source| OutError::Io {
            dir: dir.display().to_string(),
            source,
        })
    }

    fn acquire(dir: &Path) -> Result<Self, OutError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| OutError::Io {
            dir: dir.display().to_string(),
            source,
        };
        // Two tries: the second after removing a stale lock.
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let lock = Self { path: path.clone() };
                    f.write_all(std::process::id().to_string().as_bytes())
                        .map_err(io)?;
                    return Ok(lock);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let text = crate::folder::read_capped(&path, 64)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default();
                    match text.trim().parse::<u32>() {
                        Ok(pid) if process_alive(pid) => {
                            return Err(OutError::Busy {
                                dir: dir.display().to_string(),
                                pid,
                            })
                        }
                        // Dead holder, or a lock left half-written by a killed process.
                        _ => {
                            if text.is_empty() && lock_is_fresh(&path) {
                                // Its holder may be writing the pid right now.
                                return Err(OutError::Busy {
                                    dir: dir.display().to_string(),
                                    pid: 0,
                                });
                            }
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(io(e)),
            }
        }
        Err(OutError::Busy {
            dir: dir.display().to_string(),
            pid: 0,
        })
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a process with this id is running (not this one: a lock naming this process
/// was left by an earlier one that had the same id).
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() || pid == 0 {
        return false;
    }
    if !Path::new("/proc/self").exists() {
        // No way to tell: assume the holder is alive rather than break its lock.
        return true;
    }
    Path::new("/proc").join(pid.to_string()).exists()
}

/// An empty lock file younger than a few seconds: its creator may not have written its pid
/// yet.
fn lock_is_fresh(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < std::time::Duration::from_secs(5))
}

/// Remove the files of the trajectory in `dir` (other files are left alone).
fn clear_trajectory(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_trajectory_file(&name) {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A disk that fills up: accepts `room` bytes, then fails with "no space left"; shares
    /// what it holds so the test can read it back.
    struct FullDisk {
        data: Arc<Mutex<Vec<u8>>>,
        room: usize,
    }

    impl Write for FullDisk {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut d = self.data.lock().map_err(|_| ErrorKind::Other)?;
            let free = self.room.saturating_sub(d.len());
            if free == 0 {
                return Err(std::io::Error::from(ErrorKind::StorageFull));
            }
            let n = free.min(buf.len());
            d.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl EventSink for FullDisk {
        fn truncate(&mut self, len: u64) -> std::io::Result<()> {
            let mut d = self.data.lock().map_err(|_| ErrorKind::Other)?;
            d.truncate(usize::try_from(len).unwrap_or(usize::MAX));
            // Cutting back frees the room the partial line took.
            Ok(())
        }
    }

    fn event(i: usize) -> Value {
        serde_json::json!({"type": "step", "seq": i, "result": "x".repeat(100)})
    }

    #[test]
    fn a_full_disk_leaves_only_whole_lines_and_says_so() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = Arc::new(Mutex::new(Vec::new()));
        let sink = FullDisk {
            data: data.clone(),
            room: 1000,
        };
        let mut r = FileRecorder::with_sink(
            tmp.path(),
            Box::new(sink),
            0,
            Console::new(Verbosity::Quiet),
        );
        let mut ok = 0;
        let mut error = None;
        for i in 0..20 {
            match r.event(&event(i)) {
                Ok(()) => ok += 1,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            }
        }
        let error = error.expect("the disk filled up");
        assert!(error.contains("events.jsonl"), "{error}");
        assert!(error.contains("free space"), "{error}");
        let text = String::from_utf8(data.lock().expect("lock").clone()).expect("utf-8");
        assert!(
            text.ends_with('\n'),
            "a partial last line was left: {text:?}"
        );
        assert_eq!(text.lines().count(), ok);
        for line in text.lines() {
            serde_json::from_str::<Value>(line).expect("every line is whole JSON");
        }
        // A later, smaller event that fits goes on a line of its own.
        r.event(&serde_json::json!({"type": "x"})).expect("fits");
        let text = String::from_utf8(data.lock().expect("lock").clone()).expect("utf-8");
        assert_eq!(text.lines().count(), ok + 1);
        assert!(text
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()));
    }

    #[test]
    fn a_failed_artifact_leaves_no_temporary_file_and_keeps_the_old_one() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut r = FileRecorder::create_with(tmp.path(), Console::new(Verbosity::Quiet), false)
            .expect("recorder");
        r.artifact("checkpoint.json", b"{\"old\": true}")
            .expect("first write");
        // The rename cannot replace a folder: the write fails after the temporary file was
        // written.
        std::fs::create_dir(tmp.path().join("blackboard.json")).expect("dir");
        std::fs::write(tmp.path().join("blackboard.json").join("x"), "x").expect("file");
        let e = r
            .artifact("blackboard.json", b"{}")
            .expect_err("cannot replace a folder");
        assert!(e.to_string().contains("blackboard.json"), "{e}");
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.ends_with(".tmp")),
            "temporary files left: {names:?}"
        );
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("checkpoint.json")).expect("kept"),
            "{\"old\": true}"
        );
    }

    #[test]
    fn a_folder_with_a_trajectory_is_refused_and_force_clears_only_the_trajectory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        for f in [
            "events.jsonl",
            "step_0003_host_prompt.txt",
            ".checkpoint.json.tmp",
            "notes.txt",
        ] {
            std::fs::write(dir.join(f), "x").expect("write");
        }
        let e = OutLock::open(dir, OutMode::New).expect_err("refused");
        assert!(matches!(e, OutError::Occupied { .. }), "{e}");
        assert!(e.to_string().contains("--force"), "{e}");
        // The refused run released its lock.
        assert!(!dir.join(LOCK_FILE).exists());
        let lock = OutLock::open(dir, OutMode::Replace).expect("replace");
        lock.clear().expect("clear");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".lock", "notes.txt"]);
        drop(lock);
        assert!(
            !dir.join(LOCK_FILE).exists(),
            "the lock is removed at the end"
        );
        // Resume appends: never refused for the trajectory it continues.
        std::fs::write(dir.join("events.jsonl"), "{}\n").expect("write");
        drop(OutLock::open(dir, OutMode::Append).expect("append"));
    }

    #[test]
    fn a_live_lock_is_refused_and_a_stale_one_taken_over() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let held = OutLock::open(dir, OutMode::New).expect("first");
        // The holder here is this very process; a second process sees its pid as alive.
        // Simulate the second process with a lock naming a live pid that is not ours: pid 1.
        drop(held);
        std::fs::write(dir.join(LOCK_FILE), "1").expect("write");
        let e = OutLock::open(dir, OutMode::New).expect_err("busy");
        assert!(matches!(e, OutError::Busy { pid: 1, .. }), "{e}");
        assert!(e.to_string().contains("another ufo"), "{e}");
        // A process that has ended: its lock is taken over.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("true runs");
        let pid = child.id();
        child.wait().expect("true ends");
        std::fs::write(dir.join(LOCK_FILE), pid.to_string()).expect("write");
        let lock = OutLock::open(dir, OutMode::New).expect("stale lock taken over");
        assert_eq!(
            std::fs::read_to_string(dir.join(LOCK_FILE)).expect("lock"),
            std::process::id().to_string()
        );
        drop(lock);
    }
}
