//! Sessions started from the console: `ufo run` children, each in a process group of its own
//! with stdin closed and `UFO_CONSOLE=1` (so `--confirm ask` and questions wait for the page),
//! at most `max_running` at once and `max_per_token` per token, ended with the server
//! (SIGTERM, then SIGKILL; a server killed outright is noticed by the sessions themselves,
//! `control/server.rs`). A start is checked field by field against what the server's flags
//! allow ([`run_args`]); the token that started a session owns it (`.console-sessions/<id>.json`
//! in the runs folder, and `UFO_CONSOLE_OWNER` in its environment). And the list of a runs
//! folder's sessions, read by `ufo runs`' reader, as far as the caller may see them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ufo_core::access::{self, Caller, Owner, ServerFlags, ServerOp, SessionOp, Verdict};

use crate::trajectory::runs;

/// Longest wait for the sessions to end after SIGTERM when the server stops.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Most rows `GET /api/sessions` lists (the newest).
pub const MAX_LISTED: usize = 200;
/// Most sessions whose control socket a listing asks for its state.
const MAX_ASKED: usize = 16;
/// Longest request text.
const MAX_REQUEST: usize = 8 * 1024;
/// Largest `max_steps` and `max_rounds` a start may ask for.
const MAX_STEPS: u32 = 1000;
const MAX_ROUNDS: u32 = 100;
/// The folder of the runs folder where the console keeps who started each session.
pub const OWNERS: &str = ".console-sessions";
/// Largest owner record read.
const MAX_OWNER_FILE: u64 = 4096;

/// The body of `POST /api/sessions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    /// The request, in plain words.
    pub request: String,
    /// The desktop (default: the server's own).
    #[serde(default)]
    pub desktop: Option<String>,
    /// Device names, among those the server was given (`ufo serve --device`), instead of a
    /// desktop.
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
    pub confirm: Option<crate::config::ConfirmPolicy>,
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
    /// Most sessions one token runs at once.
    pub max_per_token: usize,
    /// The devices a session may name (`ufo serve --device`): each device's name and the
    /// `--device` value the session is given (`NAME` or `NAME=SPEC`).
    pub devices: Vec<(String, String)>,
    /// What the server's flags allow.
    pub flags: ServerFlags,
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

/// A refusal from the access rule (403).
fn check(verdict: Verdict) -> Result<(), Refused> {
    match verdict {
        Verdict::Allow => Ok(()),
        Verdict::Hidden => Err(refused(404, "not found")),
        Verdict::Forbidden(why) => Err(refused(403, why)),
    }
}

/// The `ufo run` arguments of `caller`'s start request, or why it is refused: every field is
/// checked against what the server allows (docs/security.md, "Who may do what"), none is
/// passed through.
pub fn run_args(
    allowed: &Allowed,
    caller: &Caller,
    req: &StartRequest,
    out: &Path,
) -> Result<Vec<String>, Refused> {
    check(access::on_server(
        caller,
        allowed.flags,
        ServerOp::StartSession,
    ))?;
    let request = req.request.trim();
    if request.is_empty() || request.len() > MAX_REQUEST {
        return Err(refused(
            400,
            format!("the request must be 1 to {MAX_REQUEST} bytes of text"),
        ));
    }
    let llm = chosen_model(allowed, req.llm.as_deref())?;
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(chosen_desktop(allowed, req)?);
    args.extend(["--llm".into(), llm]);
    if let Some(n) = req.max_steps {
        args.extend(["--max-steps".into(), bounded("max_steps", n, MAX_STEPS)?]);
    }
    if let Some(n) = req.max_rounds {
        args.extend(["--max-rounds".into(), bounded("max_rounds", n, MAX_ROUNDS)?]);
    }
    let confirm = req.confirm.unwrap_or(crate::config::ConfirmPolicy::Ask);
    if confirm == crate::config::ConfirmPolicy::Yes {
        check(access::on_server(
            caller,
            allowed.flags,
            ServerOp::ApproveUnasked,
        ))?;
    }
    args.extend(["--confirm".into(), confirm.as_str().into()]);
    if !access::on_server(caller, allowed.flags, ServerOp::Shell).allowed() {
        args.push("--no-shell".into());
    }
    if let Some(c) = &allowed.config {
        args.extend(["--config".into(), c.display().to_string()]);
    }
    args.extend(["--out".into(), out.display().to_string()]);
    args.push("--".into());
    args.push(request.to_string());
    Ok(args)
}

/// The model a start asks for, when the server allows it (the first by default).
fn chosen_model(allowed: &Allowed, asked: Option<&str>) -> Result<String, Refused> {
    match asked {
        None => allowed.llms.first().cloned().ok_or_else(|| {
            refused(
                403,
                "this server allows no model for sessions: start `ufo serve` with --llm SPEC",
            )
        }),
        Some(l) if allowed.llms.iter().any(|a| a == l) => Ok(l.to_string()),
        Some(l) => Err(refused(
            403,
            format!(
                "the model {l:?} is not one this server allows ({}); choose one of them",
                allowed.llms.join(", ")
            ),
        )),
    }
}

/// The `--desktop` or `--device` arguments of a start: the server's desktop or `private`, or
/// devices the server was given, named.
fn chosen_desktop(allowed: &Allowed, req: &StartRequest) -> Result<Vec<String>, Refused> {
    match (&req.desktop, &req.devices) {
        (Some(_), Some(_)) => Err(refused(400, "give either a desktop or devices, not both")),
        (_, Some(devices)) => {
            if devices.is_empty() || devices.len() > 16 {
                return Err(refused(400, "give 1 to 16 devices"));
            }
            let mut args = Vec::new();
            for name in devices {
                let Some((_, value)) = allowed.devices.iter().find(|(n, _)| n == name) else {
                    return Err(refused(
                        403,
                        format!(
                            "the device {name:?} is not one this server offers ({}); name one of \
                             the devices `ufo serve --device` was given",
                            if allowed.devices.is_empty() {
                                "it offers none".to_string()
                            } else {
                                allowed
                                    .devices
                                    .iter()
                                    .map(|(n, _)| n.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        ),
                    ));
                };
                args.extend(["--device".into(), value.clone()]);
            }
            Ok(args)
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
            Ok(vec!["--desktop".into(), desktop.to_string()])
        }
    }
}

/// `n` as an argument when it is 1 to `max`.
fn bounded(field: &str, n: u32, max: u32) -> Result<String, Refused> {
    if (1..=max).contains(&n) {
        Ok(n.to_string())
    } else {
        Err(refused(400, format!("{field} must be 1 to {max}")))
    }
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
    /// The token that started it.
    owner: String,
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

    /// How many sessions started with the token named `name` still run.
    fn running_for(&self, name: &str) -> usize {
        self.running
            .lock()
            .map(|m| m.values().filter(|c| c.owner == name).count())
            .unwrap_or(usize::MAX)
    }

    /// Start a session for `caller` (a token holder); its id.
    pub fn start(
        self: &std::sync::Arc<Self>,
        allowed: &Allowed,
        caller: &Caller,
        req: &StartRequest,
    ) -> Result<String, Refused> {
        let Caller::Token(principal) = caller else {
            return Err(refused(403, "sessions are started by token holders"));
        };
        self.check_room(allowed, &principal.name)?;
        let id = new_id()?;
        let out = allowed.runs.join(&id);
        let args = run_args(allowed, caller, req, &out)?;
        record_owner(&allowed.runs, &id, &principal.name)?;
        let log = open_session_log(&allowed.runs, &id)?;
        let child = spawn_session(allowed, &args, &id, &principal.name, log)?;
        self.watch(&id, child, &principal.name);
        Ok(id)
    }

    /// Refused (429) when the server, or the token `owner`, already runs the most sessions
    /// `allowed` at once.
    fn check_room(&self, allowed: &Allowed, owner: &str) -> Result<(), Refused> {
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
        let mine = self.running_for(owner);
        if mine >= allowed.max_per_token {
            return Err(refused(
                429,
                format!(
                    "{mine} sessions of the token {owner:?} are running, the most one token runs \
                     at once; wait for one to end or cancel one"
                ),
            ));
        }
        Ok(())
    }

    /// Keeps the started `child` among the running sessions, and removes it (logging how it
    /// ended) once it exits.
    fn watch(self: &std::sync::Arc<Self>, id: &str, mut child: tokio::process::Child, owner: &str) {
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        if let Ok(mut m) = self.running.lock() {
            m.insert(
                id.to_string(),
                Child {
                    pgid,
                    started: Instant::now(),
                    owner: owner.to_string(),
                },
            );
        }
        tracing::info!(session = %id, pid = pgid, "session started from the console");
        let me = self.clone();
        let done = id.to_string();
        tokio::spawn(async move {
            let status = child.wait().await;
            if let Ok(mut m) = me.running.lock() {
                if let Some(c) = m.remove(&done) {
                    tracing::info!(session = %done, status = ?status.ok(), after_s = c.started.elapsed().as_secs(), "session ended");
                }
            }
        });
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

/// The log file of session `id` under `runs/.console-logs`, opened twice: for its stdout and
/// its stderr.
fn open_session_log(runs: &Path, id: &str) -> Result<(std::fs::File, std::fs::File), Refused> {
    let logs = runs.join(".console-logs");
    std::fs::create_dir_all(&logs).map_err(|e| {
        refused(
            500,
            format!(
                "cannot create {}: {e}; check the runs folder",
                logs.display()
            ),
        )
    })?;
    std::fs::File::create(logs.join(format!("{id}.log")))
        .and_then(|f| Ok((f.try_clone()?, f)))
        .map_err(|e| refused(500, format!("cannot write the session's log: {e}")))
}

/// Starts session `id` (`ufo` with `args`) in a process group of its own, owned by `owner`,
/// its output in `log`.
fn spawn_session(
    allowed: &Allowed,
    args: &[String],
    id: &str,
    owner: &str,
    log: (std::fs::File, std::fs::File),
) -> Result<tokio::process::Child, Refused> {
    let mut cmd = tokio::process::Command::new(&allowed.exe);
    cmd.args(args)
        .env("UFO_CONSOLE", "1")
        // the session belongs to the token that started it (control/server.rs)
        .env(crate::control::OWNER_VAR, owner)
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
        let session = id.to_string();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            if let Err(e) = stdin.write_all(&keys).await {
                tracing::warn!(%session, "cannot hand the model keys to the session: {e}");
            }
            // dropped: closed, the session reads to the end
        });
    }
    Ok(child)
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

/// The sessions of the runs folder that `caller` may watch, newest first: `ufo runs`' rows,
/// RUNNING for those whose control socket answers or that this server started and that still
/// run.
pub async fn list(runs: &Path, children: &Children, caller: &Caller) -> Vec<SessionRow> {
    let dir = runs.to_path_buf();
    let scan = tokio::task::spawn_blocking(move || runs::scan(&dir))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let mut rows = Vec::new();
    let mut asked = 0;
    for r in scan.rows.into_iter() {
        if rows.len() >= MAX_LISTED {
            break;
        }
        if !may(runs, &r.name, caller, SessionOp::Watch).allowed() {
            continue;
        }
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
            if let Some(state) = super::socket::state(&runs.join(&row.id), caller).await {
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
        if !rows.iter().any(|r| r.id == id) && may(runs, &id, caller, SessionOp::Watch).allowed() {
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

/// Whether `caller` may do `op` with the session `id` of `runs` (the one access rule, on the
/// session's owner).
pub fn may(runs: &Path, id: &str, caller: &Caller, op: SessionOp) -> Verdict {
    access::on_session(caller, &owner_of(runs, id), op)
}

/// Who the session `id` of `runs` belongs to: the token the console recorded when it started
/// it, else the terminal that started it, shared with the names of its `share.json`.
pub fn owner_of(runs: &Path, id: &str) -> Owner {
    if !valid_id(id) {
        return Owner::private_terminal();
    }
    let record = runs.join(OWNERS).join(format!("{id}.json"));
    if let Ok(bytes) = crate::folder::read_capped(&record, MAX_OWNER_FILE) {
        if let Ok(owner @ Owner::Token { .. }) = serde_json::from_slice::<Owner>(&bytes) {
            return owner;
        }
    }
    Owner::Terminal {
        shared: crate::sharing::read(&runs.join(id)),
    }
}

/// Keep who started the session `id` (before it starts: a session without its owner recorded
/// is not started).
fn record_owner(runs: &Path, id: &str, name: &str) -> Result<(), Refused> {
    let dir = runs.join(OWNERS);
    let cannot = |e: std::io::Error| {
        refused(
            500,
            format!(
                "cannot record the session's owner in {}: {e}; check the runs folder",
                dir.display()
            ),
        )
    };
    std::fs::create_dir_all(&dir).map_err(cannot)?;
    let owner = Owner::Token {
        name: name.to_string(),
    };
    let bytes = serde_json::to_vec(&owner).map_err(|e| cannot(std::io::Error::other(e)))?;
    crate::folder::write_bytes(&dir.join(format!("{id}.json")), &bytes).map_err(cannot)
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
    use proptest::prelude::*;
    use ufo_core::access::{Principal, Role};

    fn allowed() -> Allowed {
        Allowed {
            exe: PathBuf::from("ufo"),
            runs: PathBuf::from("runs"),
            desktop: "sim:/d.json".into(),
            llms: vec!["script:/s.jsonl".into(), "openai:gpt-4o".into()],
            config: None,
            max_running: 2,
            max_per_token: 1,
            devices: vec![("lab".into(), "lab=sim:/lab.json".into())],
            flags: ServerFlags {
                models: true,
                actions: true,
                shell: false,
            },
        }
    }

    fn token(role: Role) -> Caller {
        Caller::Token(Principal {
            name: "alice".into(),
            role,
        })
    }

    fn user() -> Caller {
        token(Role::User)
    }

    fn req(json: &str) -> StartRequest {
        serde_json::from_str(json).expect("a start request")
    }

    #[test]
    fn the_defaults_are_the_server_desktop_and_first_model_and_ask_without_a_shell() {
        let a = run_args(
            &allowed(),
            &user(),
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
                "--no-shell",
                "--out",
                "runs/x",
                "--",
                "-rf do it"
            ]
        );
        let mut with_shell = allowed();
        with_shell.flags.shell = true;
        let a = run_args(
            &with_shell,
            &user(),
            &req(r#"{"request":"r"}"#),
            Path::new("o"),
        )
        .expect("allowed");
        assert!(!a.iter().any(|x| x == "--no-shell"), "{a:?}");
    }

    #[test]
    fn other_desktops_and_models_are_refused() {
        let e = run_args(
            &allowed(),
            &user(),
            &req(r#"{"request":"r","desktop":"live"}"#),
            Path::new("o"),
        )
        .expect_err("refused");
        assert_eq!(e.status, 403);
        let e = run_args(
            &allowed(),
            &user(),
            &req(r#"{"request":"r","llm":"anthropic:x"}"#),
            Path::new("o"),
        )
        .expect_err("refused");
        assert_eq!(e.status, 403);
        assert!(e.message.contains("openai:gpt-4o"), "{}", e.message);
        let ok = run_args(
            &allowed(),
            &user(),
            &req(r#"{"request":"r","desktop":"private","llm":"openai:gpt-4o","max_steps":5,"confirm":"no"}"#),
            Path::new("o"),
        )
        .expect("allowed");
        assert!(ok.windows(2).any(|w| w == ["--desktop", "private"]));
        assert!(ok.windows(2).any(|w| w == ["--max-steps", "5"]));
        assert!(ok.windows(2).any(|w| w == ["--confirm", "no"]));
        let e = run_args(
            &allowed(),
            &user(),
            &req(r#"{"request":"  "}"#),
            Path::new("o"),
        )
        .expect_err("empty");
        assert_eq!(e.status, 400);
        assert!(serde_json::from_str::<StartRequest>(r#"{"request":"r","shell":"x"}"#).is_err());
        for big in [
            r#"{"request":"r","max_steps":0}"#,
            r#"{"request":"r","max_rounds":1000000}"#,
        ] {
            assert_eq!(
                run_args(&allowed(), &user(), &req(big), Path::new("o"))
                    .expect_err(big)
                    .status,
                400
            );
        }
    }

    #[test]
    fn devices_are_only_those_the_server_was_given_by_name() {
        let ok = run_args(
            &allowed(),
            &user(),
            &req(r#"{"request":"r","devices":["lab"]}"#),
            Path::new("o"),
        )
        .expect("a device of the server");
        assert!(
            ok.windows(2)
                .any(|w| w == ["--device", "lab=sim:/lab.json"]),
            "{ok:?}"
        );
        for form in [
            r#"{"request":"r","devices":["x=remote:http://127.0.0.1:9"]}"#,
            r#"{"request":"r","devices":["a=sim:/other.json"]}"#,
            r#"{"request":"r","devices":["lab=sim:/other.json"]}"#,
            r#"{"request":"r","devices":["other"]}"#,
        ] {
            let e = run_args(&allowed(), &user(), &req(form), Path::new("o")).expect_err(form);
            assert_eq!(e.status, 403, "{form}: {}", e.message);
        }
    }

    #[test]
    fn the_server_flags_and_the_role_bound_a_start() {
        let r = req(r#"{"request":"r"}"#);
        let mut no_actions = allowed();
        no_actions.flags.actions = false;
        let e = run_args(&no_actions, &token(Role::Admin), &r, Path::new("o")).expect_err("no");
        assert_eq!(e.status, 403);
        assert!(e.message.contains("--allow-actions"), "{}", e.message);
        let e = run_args(&allowed(), &token(Role::Viewer), &r, Path::new("o")).expect_err("no");
        assert_eq!(e.status, 403);
        let yes = req(r#"{"request":"r","confirm":"yes"}"#);
        let e = run_args(&allowed(), &user(), &yes, Path::new("o")).expect_err("no");
        assert_eq!(e.status, 403, "a user may not approve held actions unasked");
        assert!(run_args(&allowed(), &token(Role::Admin), &yes, Path::new("o")).is_ok());
    }

    #[test]
    fn a_sessions_owner_is_the_recorded_token_else_its_terminal_and_shares() {
        let runs = tempfile::tempdir().expect("tempdir");
        let id = "20250101-000000-abc";
        std::fs::create_dir_all(runs.path().join(id)).expect("mkdir");
        assert_eq!(owner_of(runs.path(), id), Owner::private_terminal());
        crate::sharing::write(&runs.path().join(id), &["bob".into()]).expect("share");
        assert_eq!(
            owner_of(runs.path(), id),
            Owner::Terminal {
                shared: vec!["bob".into()]
            }
        );
        record_owner(runs.path(), id, "alice").expect("record");
        assert_eq!(
            owner_of(runs.path(), id),
            Owner::Token {
                name: "alice".into()
            }
        );
        assert_eq!(owner_of(runs.path(), "../x"), Owner::private_terminal());
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

    proptest! {
        /// Any start form: refused, or turned into arguments that name only the server's
        /// desktops, models and devices, with `--no-shell` on a server without a shell, the
        /// request after `--`, never an option taken from the form.
        #[test]
        fn a_start_form_never_widens_what_the_server_allows(
            request in ".{0,40}",
            desktop in proptest::option::of("(live|private|sim:/d.json|sim:/x.json|remote:http://h)"),
            devices in proptest::option::of(proptest::collection::vec("(lab|x=remote:http://h|lab=sim:/o.json|--shell)", 0..3)),
            llm in proptest::option::of("(script:/s.jsonl|openai:gpt-4o|openai:other|--no-shell)"),
            steps in proptest::option::of(0u32..2000),
            confirm in proptest::option::of("(ask|yes|no)"),
            role in prop_oneof![Just(Role::Admin), Just(Role::User), Just(Role::Viewer)],
        ) {
            let mut form = serde_json::json!({"request": request});
            if let Some(d) = &desktop { form["desktop"] = d.clone().into(); }
            if let Some(d) = &devices { form["devices"] = d.clone().into(); }
            if let Some(l) = &llm { form["llm"] = l.clone().into(); }
            if let Some(n) = steps { form["max_steps"] = n.into(); }
            if let Some(c) = &confirm { form["confirm"] = c.clone().into(); }
            let Ok(req) = serde_json::from_value::<StartRequest>(form) else { return Ok(()) };
            let a = allowed();
            if let Ok(args) = run_args(&a, &token(role), &req, Path::new("o")) {
                prop_assert!(role != Role::Viewer);
                let sep = args.iter().position(|x| x == "--").expect("a separator");
                let opts = &args[..sep];
                prop_assert_eq!(&args[sep + 1..], [req.request.trim().to_string()]);
                prop_assert!(opts.iter().any(|x| x == "--no-shell"));
                for w in opts.windows(2) {
                    match w[0].as_str() {
                        "--desktop" => prop_assert!(w[1] == a.desktop || w[1] == "private"),
                        "--llm" => prop_assert!(a.llms.contains(&w[1])),
                        "--device" => prop_assert!(a.devices.iter().any(|(_, v)| *v == w[1])),
                        "--confirm" => prop_assert!(w[1] != "yes" || role == Role::Admin),
                        _ => {}
                    }
                }
            }
        }
    }
}
