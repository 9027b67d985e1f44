//! Sessions started from the console: `ufo run` children, each in a process group of its own
//! with stdin closed and `UFO_CONSOLE=1` (so `--confirm ask` and questions wait for the page),
//! at most `max_running` at once, ended with the server (SIGTERM, then SIGKILL; a server killed
//! outright is noticed by the sessions themselves, `control/server.rs`). And the list
//! of a runs folder's sessions, read by `ufo runs`' reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::commands::runs;

/// Longest wait for the sessions to end after SIGTERM when the server stops.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Most rows `GET /api/sessions` lists (the newest).
pub const MAX_LISTED: usize = 200;
/// Most sessions whose control socket a listing asks for its state.
const MAX_ASKED: usize = 16;
/// Longest request text.
const MAX_REQUEST: usize = 8 * 1024;

/// The body of `POST /api/sessions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    /// The request, in plain words.
    pub request: String,
    /// The desktop (default: the server's own).
    #[serde(default)]
    pub desktop: Option<String>,
    /// Devices (`NAME=SPEC` or names of ufo.toml's `[devices]`), instead of a desktop.
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// The model spec (default: the first the server allows).
    #[serde(default)]
    pub llm: Option<String>,
    /// `--max-steps`.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// `--max-rounds`.
    #[serde(default)]
    pub max_rounds: Option<u32>,
    /// `ask` (the page answers), `yes` or `no`.
    #[serde(default)]
    pub confirm: Option<crate::cli::ConfirmPolicy>,
}

/// What the server lets sessions use.
#[derive(Debug, Clone)]
pub struct Allowed {
    /// The `ufo` binary.
    pub exe: PathBuf,
    /// The runs folder.
    pub runs: PathBuf,
    /// The server's desktop: the default, and with `private` the only ones a session may name.
    pub desktop: String,
    /// The model specs sessions may use; the first is the default.
    pub llms: Vec<String>,
    /// ufo.toml passed to the sessions.
    pub config: Option<PathBuf>,
    /// Most sessions running at once.
    pub max_running: usize,
}

/// Why a session did not start (the HTTP status and a message).
#[derive(Debug)]
pub struct Refused {
    /// 400, 403, 429 or 500.
    pub status: u16,
    /// What went wrong and what to do.
    pub message: String,
}

fn refused(status: u16, message: impl Into<String>) -> Refused {
    Refused {
        status,
        message: message.into(),
    }
}

/// The `ufo run` arguments of a start request, or why it is refused.
pub fn run_args(allowed: &Allowed, req: &StartRequest, out: &Path) -> Result<Vec<String>, Refused> {
    let request = req.request.trim();
    if request.is_empty() || request.len() > MAX_REQUEST {
        return Err(refused(
            400,
            format!("the request must be 1 to {MAX_REQUEST} bytes of text"),
        ));
    }
    let llm = match &req.llm {
        None => allowed.llms.first().cloned().ok_or_else(|| {
            refused(
                403,
                "this server allows no model for sessions: start `ufo serve` with --llm SPEC",
            )
        })?,
        Some(l) if allowed.llms.iter().any(|a| a == l) => l.clone(),
        Some(l) => {
            return Err(refused(
                403,
                format!(
                    "the model {l:?} is not one this server allows ({}); choose one of them",
                    allowed.llms.join(", ")
                ),
            ))
        }
    };
    let mut args: Vec<String> = vec!["run".into()];
    match (&req.desktop, &req.devices) {
        (Some(_), Some(_)) => {
            return Err(refused(400, "give either a desktop or devices, not both"));
        }
        (_, Some(devices)) => {
            if devices.is_empty() || devices.len() > 16 {
                return Err(refused(400, "give 1 to 16 devices"));
            }
            for d in devices {
                args.push("--device".into());
                args.push(d.clone());
            }
        }
        (desktop, None) => {
            let desktop = desktop.as_deref().unwrap_or(&allowed.desktop);
            if desktop != allowed.desktop && desktop != "private" {
                return Err(refused(
                    403,
                    format!(
                        "sessions of this server use its desktop ({}) or `private`, not {desktop:?}",
                        allowed.desktop
                    ),
                ));
            }
            args.push("--desktop".into());
            args.push(desktop.to_string());
        }
    }
    args.extend(["--llm".into(), llm]);
    if let Some(n) = req.max_steps {
        args.extend(["--max-steps".into(), n.to_string()]);
    }
    if let Some(n) = req.max_rounds {
        args.extend(["--max-rounds".into(), n.to_string()]);
    }
    let confirm = req.confirm.unwrap_or(crate::cli::ConfirmPolicy::Ask);
    args.extend(["--confirm".into(), confirm.as_str().into()]);
    if let Some(c) = &allowed.config {
        args.extend(["--config".into(), c.display().to_string()]);
    }
    args.extend(["--out".into(), out.display().to_string()]);
    args.push("--".into());
    args.push(request.to_string());
    Ok(args)
}

/// Whether `id` may name a folder of the runs folder: letters, digits, `-_.`, not starting
/// with a dot, at most 128 bytes.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A fresh session id: the time and a random suffix.
fn new_id() -> Result<String, Refused> {
    let suffix = super::login::random_value().map_err(|e| refused(500, e))?;
    Ok(format!(
        "{}-{}",
        chrono::Local::now().format("%Y%m%d-%H%M%S"),
        suffix
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(6)
            .collect::<String>()
    ))
}

struct Child {
    pgid: i32,
    started: Instant,
}

/// The sessions this server started and that still run.
#[derive(Default)]
pub struct Children {
    running: Mutex<HashMap<String, Child>>,
}

impl Children {
    /// Whether the session `id` was started here and still runs.
    pub fn is_running(&self, id: &str) -> bool {
        self.running
            .lock()
            .map(|m| m.contains_key(id))
            .unwrap_or(false)
    }

    /// Start a session; its id.
    pub fn start(
        self: &std::sync::Arc<Self>,
        allowed: &Allowed,
        req: &StartRequest,
    ) -> Result<String, Refused> {
        let count = self.running.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        if count >= allowed.max_running {
            return Err(refused(
                429,
                format!(
                    "{count} sessions are running, the most this server runs at once; wait for \
                     one to end or cancel one"
                ),
            ));
        }
        let id = new_id()?;
        let out = allowed.runs.join(&id);
        let args = run_args(allowed, req, &out)?;
        let logs = allowed.runs.join(".console-logs");
        std::fs::create_dir_all(&logs).map_err(|e| {
            refused(
                500,
                format!(
                    "cannot create {}: {e}; check the runs folder",
                    logs.display()
                ),
            )
        })?;
        let log = std::fs::File::create(logs.join(format!("{id}.log")))
            .and_then(|f| Ok((f.try_clone()?, f)))
            .map_err(|e| refused(500, format!("cannot write the session's log: {e}")))?;
        let mut cmd = tokio::process::Command::new(&allowed.exe);
        cmd.args(&args)
            .env("UFO_CONSOLE", "1")
            // the session ends with this server however it ends (control/server.rs)
            .env(crate::control::SERVER_VAR, std::process::id().to_string())
            .stdout(log.0)
            .stderr(log.1)
            .process_group(0)
            .kill_on_drop(false);
        // the model keys go on its stdin, which is then closed (never in its environment)
        crate::secret_env::pass_on_stdin(cmd.as_std_mut());
        let mut child = cmd
            .spawn()
            .map_err(|e| refused(500, format!("cannot start {}: {e}", allowed.exe.display())))?;
        if let Some(mut stdin) = child.stdin.take() {
            let keys = crate::secret_env::held_on_stdin();
            let session = id.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                if let Err(e) = stdin.write_all(&keys).await {
                    tracing::warn!(%session, "cannot hand the model keys to the session: {e}");
                }
                // dropped: closed, the session reads to the end
            });
        }
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        if let Ok(mut m) = self.running.lock() {
            m.insert(
                id.clone(),
                Child {
                    pgid,
                    started: Instant::now(),
                },
            );
        }
        tracing::info!(session = %id, pid = pgid, "session started from the console");
        let me = self.clone();
        let done = id.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            if let Ok(mut m) = me.running.lock() {
                if let Some(c) = m.remove(&done) {
                    tracing::info!(session = %done, status = ?status.ok(), after_s = c.started.elapsed().as_secs(), "session ended");
                }
            }
        });
        Ok(id)
    }

    /// End every running session: SIGTERM to each process group, then SIGKILL to those still
    /// there after [`STOP_GRACE`].
    pub async fn stop_all(&self) {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        let groups: Vec<i32> = self
            .running
            .lock()
            .map(|m| m.values().map(|c| c.pgid).filter(|p| *p > 0).collect())
            .unwrap_or_default();
        if groups.is_empty() {
            return;
        }
        for g in &groups {
            let _ = killpg(Pid::from_raw(*g), Signal::SIGTERM);
        }
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline
            && self.running.lock().map(|m| !m.is_empty()).unwrap_or(false)
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for g in &groups {
            let _ = killpg(Pid::from_raw(*g), Signal::SIGKILL);
        }
    }
}

/// One row of `GET /api/sessions`.
#[derive(Debug, Serialize)]
pub struct SessionRow {
    /// The folder name under the runs folder.
    pub id: String,
    /// The request.
    pub request: String,
    /// RUNNING, or what `ufo runs` shows (FINISH, FAIL, ERROR, CANCELLED, INCOMPLETE, BROKEN).
    pub status: String,
    /// Steps counted.
    pub steps: u64,
    /// Model cost.
    pub cost: f64,
    /// When it started (local time).
    pub started: String,
    /// The open question (from the control socket), if any.
    pub asking: Value,
    /// Who holds the desktop (`console`), if anyone.
    pub taken: Value,
}

/// The sessions of the runs folder, newest first: `ufo runs`' rows, RUNNING for those whose
/// control socket answers or that this server started and that still run.
pub async fn list(runs: &Path, children: &Children) -> Vec<SessionRow> {
    let dir = runs.to_path_buf();
    let scan = tokio::task::spawn_blocking(move || runs::scan(&dir))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let mut rows = Vec::new();
    let mut asked = 0;
    for r in scan.rows.into_iter().take(MAX_LISTED) {
        let mut row = SessionRow {
            status: r.status.clone(),
            id: r.name,
            request: r.request,
            steps: r.steps,
            cost: r.cost,
            started: r.when,
            asking: Value::Null,
            taken: Value::Null,
        };
        let mine = children.is_running(&row.id);
        if (r.status == "INCOMPLETE" || mine) && asked < MAX_ASKED {
            asked += 1;
            if let Some(state) = super::socket::state(&runs.join(&row.id)).await {
                row.status = "RUNNING".into();
                row.asking = state["asking"].clone();
                row.taken = state["taken"].clone();
            }
        }
        if mine {
            row.status = "RUNNING".into();
        }
        rows.push(row);
    }
    // started here but no trajectory yet: shown as running with what is known
    for id in children.ids() {
        if !rows.iter().any(|r| r.id == id) {
            rows.insert(
                0,
                SessionRow {
                    id,
                    request: String::new(),
                    status: "RUNNING".into(),
                    steps: 0,
                    cost: 0.0,
                    started: String::new(),
                    asking: Value::Null,
                    taken: Value::Null,
                },
            );
        }
    }
    rows
}

impl Children {
    fn ids(&self) -> Vec<String> {
        self.running
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// The session folder of `id` under `runs`, when `id` is well formed and names a folder (not a
/// link).
pub fn folder(runs: &Path, id: &str) -> Option<PathBuf> {
    if !valid_id(id) {
        return None;
    }
    let dir = runs.join(id);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    meta.is_dir().then_some(dir)
}

/// `{"id"}`, the answer to a start.
pub fn started(id: &str) -> Value {
    json!({ "id": id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Allowed {
        Allowed {
            exe: PathBuf::from("ufo"),
            runs: PathBuf::from("runs"),
            desktop: "sim:/d.json".into(),
            llms: vec!["script:/s.jsonl".into(), "openai:gpt-4o".into()],
            config: None,
            max_running: 2,
        }
    }

    fn req(json: &str) -> StartRequest {
        serde_json::from_str(json).expect("a start request")
    }

    #[test]
    fn the_defaults_are_the_server_desktop_and_first_model_and_ask() {
        let a = run_args(
            &allowed(),
            &req(r#"{"request":"-rf do it"}"#),
            Path::new("runs/x"),
        )
        .expect("allowed");
        assert_eq!(
            a,
            [
                "run",
                "--desktop",
                "sim:/d.json",
                "--llm",
                "script:/s.jsonl",
                "--confirm",
                "ask",
                "--out",
                "runs/x",
                "--",
                "-rf do it"
            ]
        );
    }

    #[test]
    fn other_desktops_and_models_are_refused() {
        let e = run_args(
            &allowed(),
            &req(r#"{"request":"r","desktop":"live"}"#),
            Path::new("o"),
        )
        .expect_err("refused");
        assert_eq!(e.status, 403);
        let e = run_args(
            &allowed(),
            &req(r#"{"request":"r","llm":"anthropic:x"}"#),
            Path::new("o"),
        )
        .expect_err("refused");
        assert_eq!(e.status, 403);
        assert!(e.message.contains("openai:gpt-4o"), "{}", e.message);
        let ok = run_args(
            &allowed(),
            &req(r#"{"request":"r","desktop":"private","llm":"openai:gpt-4o","max_steps":5,"confirm":"yes"}"#),
            Path::new("o"),
        )
        .expect("allowed");
        assert!(ok.windows(2).any(|w| w == ["--desktop", "private"]));
        assert!(ok.windows(2).any(|w| w == ["--max-steps", "5"]));
        assert!(ok.windows(2).any(|w| w == ["--confirm", "yes"]));
        let e =
            run_args(&allowed(), &req(r#"{"request":"  "}"#), Path::new("o")).expect_err("empty");
        assert_eq!(e.status, 400);
        assert!(serde_json::from_str::<StartRequest>(r#"{"request":"r","shell":"x"}"#).is_err());
    }

    #[test]
    fn ids_stay_inside_the_runs_folder() {
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", "a b", "x\0"] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        for good in ["20250101-120000-abc123", "run_1.2"] {
            assert!(valid_id(good), "{good}");
        }
        let id = new_id().expect("id");
        assert!(valid_id(&id), "{id}");
    }
}
