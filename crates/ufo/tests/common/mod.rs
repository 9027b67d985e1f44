//! Helpers for the integration tests: run the real `ufo` binary on a scenario and read back
//! the trajectory (`events.jsonl`) and the simulated desktop's final state
//! (`desktop_final.json`), as docs/formats.md specifies them.

#![allow(dead_code)]

pub mod calculator;
pub mod console;
pub mod llama;
pub mod mcp_stdio;
pub mod procs;
pub mod served;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// The workspace root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .canonicalize()
        .expect("workspace root exists")
}

/// `tests/scenarios/<name>` in the workspace.
pub fn scenario_dir(name: &str) -> PathBuf {
    repo_root().join("tests").join("scenarios").join(name)
}

/// The `ufo` binary with a time limit, so a hung run fails the test instead of hanging it.
pub fn ufo() -> Command {
    let mut cmd = Command::cargo_bin("ufo").expect("the ufo binary is built");
    cmd.timeout(Duration::from_secs(60));
    // No terminal: stdin is empty, so `--confirm ask` means no and questions go unanswered.
    cmd.write_stdin("");
    // Keep the environment from changing the configuration under test.
    for (key, _) in std::env::vars() {
        if key.starts_with("UFO_") {
            cmd.env_remove(key);
        }
    }
    // Nor the person's knowledge store: a folder that does not exist holds none, so the
    // prompts are the ones the test wrote its `expect`s for (tests of knowledge set their own).
    cmd.env(
        "XDG_DATA_HOME",
        std::env::temp_dir().join(format!("ufo-tests-no-data-{}", std::process::id())),
    );
    cmd
}

/// One finished run of `ufo run`.
pub struct Run {
    /// What the test ran (for failure messages).
    pub label: String,
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The `--out` folder (inside a temporary directory that lives as long as the run).
    pub out: PathBuf,
    _tmp: TempDir,
}

/// Run `ufo run` on `tests/scenarios/<name>` (desktop.json, script.jsonl, request.txt, and
/// ufo.toml / answers.txt when they exist), with `extra` options appended.
pub fn run_scenario(name: &str, extra: &[&str]) -> Run {
    run_dir(&scenario_dir(name), extra)
}

/// Run `ufo run` on a scenario folder.
pub fn run_dir(dir: &Path, extra: &[&str]) -> Run {
    let request = std::fs::read_to_string(dir.join("request.txt"))
        .unwrap_or_else(|e| panic!("{}/request.txt: {e}", dir.display()));
    let mut args: Vec<String> = vec![
        "--desktop".into(),
        format!("sim:{}", dir.join("desktop.json").display()),
        "--llm".into(),
        format!("script:{}", dir.join("script.jsonl").display()),
    ];
    if dir.join("ufo.toml").exists() {
        args.push("--config".into());
        args.push(dir.join("ufo.toml").display().to_string());
    }
    if dir.join("answers.txt").exists() {
        args.push("--answers".into());
        args.push(dir.join("answers.txt").display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    run_args(&name, request.trim(), &args)
}

/// Run `ufo run <args...> --out <tmp>/out <request>`.
pub fn run_args(label: &str, request: &str, args: &[String]) -> Run {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    // Run in an empty folder: the binary also reads `./ufo.toml`, and the defaults tests must
    // not pick one up.
    let output = ufo()
        .current_dir(tmp.path())
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg(request)
        .output()
        .expect("ufo runs");
    Run {
        label: label.to_string(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        out,
        _tmp: tmp,
    }
}

impl Run {
    /// A summary for assertion messages.
    pub fn ctx(&self) -> String {
        let stderr: String = {
            let lines: Vec<&str> = self.stderr.lines().collect();
            let from = lines.len().saturating_sub(40);
            lines[from..].join("\n")
        };
        format!(
            "[{}] exit {}\n--- stderr (tail) ---\n{}\n--- (role,state) ---\n{:?}",
            self.label,
            self.code,
            stderr,
            self.try_sequence()
        )
    }

    /// Assert the exit code.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code\n{}", self.ctx());
        self
    }

    /// Every record of `events.jsonl`; panics (with context) if a line is not JSON.
    pub fn events(&self) -> Vec<Value> {
        let path = self.out.join("events.jsonl");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}\n{}", path.display(), self.ctx()));
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str::<Value>(l).unwrap_or_else(|e| {
                    panic!(
                        "events.jsonl line {} is not JSON ({e}): {l}\n{}",
                        i + 1,
                        self.ctx()
                    )
                })
            })
            .collect()
    }

    fn try_sequence(&self) -> Option<Vec<(String, String)>> {
        let text = std::fs::read_to_string(self.out.join("events.jsonl")).ok()?;
        Some(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| e["type"] == "step")
                .map(|e| (s(&e["role"]), s(&e["state"])))
                .collect(),
        )
    }

    /// The `step` records, in order.
    pub fn steps(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == "step")
            .collect()
    }

    /// The `(role, state)` sequence of the step records.
    pub fn sequence(&self) -> Vec<(String, String)> {
        self.steps()
            .iter()
            .map(|e| (s(&e["role"]), s(&e["state"])))
            .collect()
    }

    /// Assert the exact `(role, state)` sequence.
    pub fn assert_sequence(&self, expected: &[(&str, &str)]) -> &Self {
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(r, st)| (r.to_string(), st.to_string()))
            .collect();
        assert_eq!(
            self.sequence(),
            expected,
            "wrong (role,state) sequence\n{}",
            self.ctx()
        );
        self
    }

    /// Assert that the last step record is marked `terminal: true`.
    pub fn assert_last_terminal(&self) -> &Self {
        let steps = self.steps();
        let last = steps.last().expect("at least one step");
        assert_eq!(
            last["terminal"],
            Value::Bool(true),
            "the last step must be terminal: {last}\n{}",
            self.ctx()
        );
        self
    }

    /// The `status` fields of the processor steps (state CONTINUE or SCREENSHOT) of `role`.
    pub fn processor_statuses(&self, role: &str) -> Vec<String> {
        self.steps()
            .iter()
            .filter(|e| {
                e["role"] == role && (e["state"] == "CONTINUE" || e["state"] == "SCREENSHOT")
            })
            .map(|e| s(&e["status"]))
            .collect()
    }

    /// Assert the `status` after handle of the processor steps of `role`, in order.
    pub fn assert_processor_statuses(&self, role: &str, expected: &[&str]) -> &Self {
        assert_eq!(
            self.processor_statuses(role),
            expected.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            "wrong status after the {role} processor steps\n{}",
            self.ctx()
        );
        self
    }

    /// `llm.calls` of the processor steps of `role` (0 when absent).
    pub fn llm_calls(&self, role: &str) -> Vec<u64> {
        self.steps()
            .iter()
            .filter(|e| {
                e["role"] == role && (e["state"] == "CONTINUE" || e["state"] == "SCREENSHOT")
            })
            .map(|e| e["llm"]["calls"].as_u64().unwrap_or(0))
            .collect()
    }

    /// The single record of a type (`round_end`, `session_end`, ...).
    pub fn record(&self, kind: &str) -> Value {
        let all: Vec<Value> = self
            .events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect();
        assert_eq!(
            all.len(),
            1,
            "expected exactly one {kind} record\n{}",
            self.ctx()
        );
        all.into_iter().next().unwrap_or(Value::Null)
    }

    /// Assert `round_end`'s status (and reason, when given).
    pub fn assert_round_end(&self, status: &str, reason: Option<&str>) -> &Self {
        let r = self.record("round_end");
        assert_eq!(r["status"], status, "round_end: {r}\n{}", self.ctx());
        if let Some(reason) = reason {
            assert_eq!(r["reason"], reason, "round_end: {r}\n{}", self.ctx());
        }
        self
    }

    /// The structural checks every trajectory must pass (docs/formats.md "Trajectory"):
    /// every line is JSON with a `type`; `session_start` first; `session_end` last with a
    /// status and a reason matching the exit code; a `round_end` with status and reason;
    /// step records with the documented fields, strictly increasing `seq`, `agent`
    /// consistent with `role`; only the last step may be terminal.
    pub fn assert_well_formed(&self) -> &Self {
        let events = self.events();
        assert!(!events.is_empty(), "events.jsonl is empty\n{}", self.ctx());
        for e in &events {
            assert!(
                e.is_object() && e["type"].is_string(),
                "every record is an object with a type: {e}\n{}",
                self.ctx()
            );
        }
        assert_eq!(
            events[0]["type"],
            "session_start",
            "first record\n{}",
            self.ctx()
        );
        let last = events.last().expect("non-empty");
        assert_eq!(last["type"], "session_end", "last record\n{}", self.ctx());
        assert!(
            last["reason"].is_string(),
            "session_end has a reason: {last}\n{}",
            self.ctx()
        );
        let expected_status = match self.code {
            0 => "FINISH",
            1 => "FAIL",
            3 => "ERROR",
            other => panic!(
                "a run with a trajectory exits 0, 1 or 3, not {other}\n{}",
                self.ctx()
            ),
        };
        assert_eq!(
            last["status"],
            expected_status,
            "session_end status must match the exit code: {last}\n{}",
            self.ctx()
        );

        let round_ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "round_end").collect();
        assert!(!round_ends.is_empty(), "a round_end record\n{}", self.ctx());
        for r in &round_ends {
            assert!(
                matches!(r["status"].as_str(), Some("FINISH" | "FAIL" | "ERROR")),
                "round_end status: {r}\n{}",
                self.ctx()
            );
            assert!(
                r["reason"].is_string(),
                "round_end reason: {r}\n{}",
                self.ctx()
            );
        }
        let last_round = round_ends.last().expect("non-empty");
        assert_eq!(
            last_round["status"],
            expected_status,
            "the last round's status is the session's\n{}",
            self.ctx()
        );

        let steps: Vec<&Value> = events.iter().filter(|e| e["type"] == "step").collect();
        assert!(!steps.is_empty(), "at least one step\n{}", self.ctx());
        let mut prev_seq: Option<u64> = None;
        for (i, st) in steps.iter().enumerate() {
            for key in [
                "round",
                "seq",
                "agent",
                "role",
                "state",
                "status",
                "llm",
                "timings_ms",
                "terminal",
            ] {
                assert!(
                    st.get(key).is_some(),
                    "step record lacks {key:?}: {st}\n{}",
                    self.ctx()
                );
            }
            assert_eq!(st["round"], 0, "single-round runs: {st}\n{}", self.ctx());
            let seq = st["seq"].as_u64().expect("seq is a number");
            if let Some(p) = prev_seq {
                assert!(seq > p, "seq strictly increases: {st}\n{}", self.ctx());
            }
            prev_seq = Some(seq);
            let agent = s(&st["agent"]);
            match st["role"].as_str() {
                Some("host") => {
                    assert_eq!(agent, "HostAgent", "host step agent: {st}\n{}", self.ctx())
                }
                Some("app") => assert!(
                    agent.starts_with("AppAgent/"),
                    "app step agent: {st}\n{}",
                    self.ctx()
                ),
                _ => panic!("role is host or app: {st}\n{}", self.ctx()),
            }
            assert!(
                st["terminal"].is_boolean(),
                "terminal: {st}\n{}",
                self.ctx()
            );
            assert!(
                st["timings_ms"].is_object(),
                "timings_ms is an object: {st}\n{}",
                self.ctx()
            );
            for key in ["calls", "prompt_tokens", "completion_tokens"] {
                assert!(
                    st["llm"][key].is_u64(),
                    "llm.{key} is a count: {st}\n{}",
                    self.ctx()
                );
            }
            if i + 1 < steps.len() {
                assert_eq!(
                    st["terminal"],
                    Value::Bool(false),
                    "only the last step may be terminal: {st}\n{}",
                    self.ctx()
                );
            }
        }
        // Ordering: steps before round_end before session_end.
        let pos = |kind: &str| events.iter().rposition(|e| e["type"] == kind);
        assert!(
            pos("step") < pos("round_end") && pos("round_end") < pos("session_end"),
            "steps, then round_end, then session_end\n{}",
            self.ctx()
        );
        self
    }

    /// `desktop_final.json`.
    pub fn final_desktop(&self) -> Value {
        let path = self.out.join("desktop_final.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}\n{}", path.display(), self.ctx()));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("desktop_final.json is not JSON: {e}\n{}", self.ctx()))
    }

    /// The `actions` of `desktop_final.json`, as `(app, control, action, ok)`; `control` is
    /// empty when absent (launches, shell commands).
    pub fn actions(&self) -> Vec<(String, String, String, bool)> {
        let d = self.final_desktop();
        let list = d["actions"]
            .as_array()
            .unwrap_or_else(|| panic!("desktop_final.json has an actions array: {d}"));
        list.iter()
            .map(|a| {
                (
                    s(&a["app"]),
                    s(&a["control"]),
                    s(&a["action"]),
                    a["ok"].as_bool().unwrap_or(true),
                )
            })
            .collect()
    }

    /// Assert the actions that reached the desktop, as `(app, control, action, ok)`.
    pub fn assert_actions(&self, expected: &[(&str, &str, &str, bool)]) -> &Self {
        let expected: Vec<(String, String, String, bool)> = expected
            .iter()
            .map(|(a, c, f, ok)| (a.to_string(), c.to_string(), f.to_string(), *ok))
            .collect();
        assert_eq!(
            self.actions(),
            expected,
            "wrong actions in desktop_final.json: {}\n{}",
            self.final_desktop()["actions"],
            self.ctx()
        );
        self
    }

    /// The final state of one app in `desktop_final.json`.
    pub fn final_app(&self, app: &str) -> Value {
        let d = self.final_desktop();
        d["apps"]
            .as_array()
            .and_then(|apps| apps.iter().find(|a| a["name"] == app).cloned())
            .unwrap_or_else(|| panic!("no app {app:?} in desktop_final.json: {d}"))
    }

    /// The final state of one control in `desktop_final.json`.
    pub fn final_control(&self, app: &str, control: &str) -> Value {
        let a = self.final_app(app);
        a["controls"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["id"] == control).cloned())
            .unwrap_or_else(|| panic!("no control {control:?} in app {app:?}: {a}"))
    }
}

/// Run `ufo ARGS` (a live desktop session's, or any) under a fresh `HOME` (applications keep
/// state there), with `env` added and no `UFO_LLM` from the caller.
pub fn ufo_live(home: &Path, args: &[String], env: &[(&str, &str)]) -> std::process::Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(args)
        .env("HOME", home)
        .env_remove("UFO_LLM")
        .envs(env.iter().copied())
        .output()
        .expect("ufo runs")
}

/// The arguments of a scripted `ufo run --desktop live` writing its trajectory to `out`;
/// `rest` follows them (further options, then the request).
pub fn live_run_args(script: &Path, out: &Path, rest: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        "--desktop".into(),
        "live".into(),
        "--llm".into(),
        format!("script:{}", script.display()),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(rest.iter().map(|a| a.to_string()));
    args
}

/// What `ufo inspect WINDOW --png PNG` prints (the window's controls).
pub fn inspect_window(home: &Path, window: &str, png: &Path) -> String {
    let out = ufo_live(
        home,
        &[
            "inspect".into(),
            window.into(),
            "--png".into(),
            png.display().to_string(),
        ],
        &[],
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Wait (`within` at most) until `ufo inspect WINDOW --png PNG` lists a line containing
/// `wanted`; returns that listing.
///
/// # Panics
/// When it does not appear in time, with the last listing.
pub fn wait_for_control(
    home: &Path,
    window: &str,
    wanted: &str,
    within: Duration,
    png: &Path,
) -> String {
    let deadline = std::time::Instant::now() + within;
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        last = inspect_window(home, window, png);
        if last.contains(wanted) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{window:?} never showed {wanted:?}; last inspect:\n{last}");
}

/// A JSON value as a plain string (strings unquoted, null empty).
pub fn s(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

/// Shorthand for the (role,state) pairs of a sequence.
pub const HC: (&str, &str) = ("host", "CONTINUE");
/// Host ASSIGN.
pub const HA: (&str, &str) = ("host", "ASSIGN");
/// Host FINISH.
pub const HFIN: (&str, &str) = ("host", "FINISH");
/// Host FAIL.
pub const HFAIL: (&str, &str) = ("host", "FAIL");
/// Host ERROR.
pub const HERR: (&str, &str) = ("host", "ERROR");
/// Host PENDING.
pub const HPEND: (&str, &str) = ("host", "PENDING");
/// Host CONFIRM.
pub const HCONF: (&str, &str) = ("host", "CONFIRM");
/// App CONTINUE.
pub const AC: (&str, &str) = ("app", "CONTINUE");
/// App SCREENSHOT.
pub const ASHOT: (&str, &str) = ("app", "SCREENSHOT");
/// App FINISH.
pub const AFIN: (&str, &str) = ("app", "FINISH");
/// App FAIL.
pub const AFAIL: (&str, &str) = ("app", "FAIL");
/// App ERROR.
pub const AERR: (&str, &str) = ("app", "ERROR");
/// App PENDING.
pub const APEND: (&str, &str) = ("app", "PENDING");
/// App CONFIRM.
pub const ACONF: (&str, &str) = ("app", "CONFIRM");

/// The records of `<dir>/events.jsonl` so far: none before the file is written, and a line
/// still being written is left out (for a session that is still running).
pub fn records_so_far(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Every file under `dir`, recursively (to look for what must be in no file of a trajectory).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Write the scripted model's `lines` to `dir/script.jsonl`; its path.
pub fn write_script(dir: &Path, lines: &[Value]) -> String {
    let path = dir.join("script.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").expect("write script");
    path.display().to_string()
}

/// The `--desktop` spec of the simulated desktop of the gate tests (a window with a
/// "Delete All" button; the host's `Bash` is recorded, not run).
pub fn sensitive_click_desktop() -> String {
    format!(
        "sim:{}",
        scenario_dir("sensitive_click")
            .join("desktop.json")
            .display()
    )
}

/// The arguments of a scripted `ufo run` on [`sensitive_click_desktop`] with the model's
/// `script`, the configuration file `config`, `--confirm confirm` and `--out out`, for
/// `request`.
pub fn gate_run_args(
    script: &str,
    config: &Path,
    confirm: &str,
    out: &Path,
    request: &str,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = ["run", "--desktop"].map(Into::into).to_vec();
    args.push(sensitive_click_desktop().into());
    args.push("--llm".into());
    args.push(format!("script:{script}").into());
    args.push("--config".into());
    args.push(config.into());
    args.push("--confirm".into());
    args.push(confirm.into());
    args.push("--out".into());
    args.push(out.into());
    args.push(request.into());
    args
}

/// GNOME Clocks' world clocks as `gsettings get org.gnome.clocks world-clocks` reads them
/// (not ufo) from the keyfile a Clocks started with `GSETTINGS_BACKEND=keyfile` and this
/// `home` writes (the test session keeps GSettings in memory, out of reach of another
/// process).
pub fn clocks_world_clocks(home: &Path) -> Result<String, String> {
    let out = std::process::Command::new("gsettings")
        .args(["get", "org.gnome.clocks", "world-clocks"])
        .env("GSETTINGS_BACKEND", "keyfile")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("HOME", home)
        .output()
        .map_err(|e| format!("gsettings does not run: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A PNG of `w`×`h` RGB pixels.
pub fn write_png(path: &Path, w: u32, h: u32, pixel: impl Fn(u32, u32) -> [u8; 3]) {
    let file = std::fs::File::create(path).expect("png file");
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().expect("png header");
    let mut data = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            data.extend_from_slice(&pixel(x, y));
        }
    }
    writer.write_image_data(&data).expect("png data");
}
