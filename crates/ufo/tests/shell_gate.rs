//! The shell gate through the real binary, against a real shell and files on disk: a Unicode
//! space cannot smuggle a program past the allow-list (the shell agent runs `/bin/sh`; the
//! host's `Bash` on the simulated desktop is recorded, not run), `--confirm no` is not
//! overruled by a `safe_guard = false` the person did not type, and `ufo resume` does not take
//! gate-weakening settings from a prepared trajectory folder.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use common::*;

/// A temporary folder with a `work` folder (the shell agent's) holding a file `VICTIM`.
struct Bench {
    tmp: tempfile::TempDir,
    work: PathBuf,
    victim: PathBuf,
}

impl Bench {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        // the canonical path: the attack climbs it with `..`
        let root = tmp.path().canonicalize().expect("canonical");
        let work = root.join("work");
        std::fs::create_dir(&work).expect("mkdir");
        let victim = work.join("VICTIM");
        std::fs::write(&victim, "precious").expect("victim");
        Bench { tmp, work, victim }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The attack: step 1 made the folder `cat<NBSP>x` (an allow-listed `mkdir`); the command
    /// climbs from it to `/bin/rm`. A reader splitting on Unicode whitespace sees `cat`.
    fn attack(&self) -> String {
        std::fs::create_dir_all(self.work.join("cat\u{a0}x")).expect("mkdir cat<NBSP>x");
        let up = "../".repeat(self.work.components().count());
        format!("cat\u{a0}x/../{up}bin/rm -rf VICTIM")
    }

    /// A configuration file offering the shell agent in `work`, plus `extra` lines.
    fn config(&self, name: &str, extra: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(
            &path,
            format!(
                "{extra}\n[agents]\nshell = true\nshell_workdir = {}\n",
                Value::String(self.work.display().to_string())
            ),
        )
        .expect("write config");
        path
    }

    fn script(&self, name: &str, lines: &[Value]) -> PathBuf {
        let path = self.path().join(name);
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n") + "\n").expect("write script");
        path
    }

    fn victim_survived(&self) -> bool {
        std::fs::read_to_string(&self.victim).is_ok_and(|t| t == "precious")
    }
}

fn host(status: &str, subtask: &str, bash: &str) -> Value {
    json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
        "Current Sub-Task": subtask, "ControlText": if subtask.is_empty() { "" } else { "shell" },
        "Status": status, "Bash": bash}})
}

fn shell(command: &str, status: &str) -> Value {
    json!({"agent": "shell", "response": {"Observation": "o", "Thought": "t",
        "Command": command, "Status": status}})
}

fn events(out: &Path) -> Vec<Value> {
    common::records_so_far(out)
}

/// Defect 1: `cat<U+00A0>x/../../…/bin/rm -rf VICTIM` was judged "cat" (allow-listed) and ran
/// /bin/rm with `--confirm no`, through the shell agent and the host's `Bash`, and the
/// progress line showed a harmless `cat x/…`. Now both are held (and rejected), the file is
/// still on disk, nothing reached the desktop, and every line shows the no-break space
/// escaped.
#[test]
fn a_unicode_space_cannot_smuggle_rm_past_the_allow_list() {
    let b = Bench::new();
    let attack = b.attack();
    let config = b.config("ufo.toml", "");
    let script = b.script(
        "script.jsonl",
        &[
            host("ASSIGN", "Show the file", ""),
            shell(&attack, "CONTINUE"),
            host("CONTINUE", "", &attack),
            host("FINISH", "", ""),
        ],
    );
    let out = b.path().join("out");
    let output = ufo()
        .current_dir(b.path())
        .args(gate_run_args(
            &script.display().to_string(),
            &config,
            "no",
            &out,
            "show the file",
        ))
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(b.victim_survived(), "/bin/rm ran unconfirmed:\n{stderr}");
    let events = events(&out);
    let by = |agent: &str| {
        events
            .iter()
            .find(|e| {
                e["type"] == "step"
                    && e["agent"] == agent
                    && (e["action"]["args"]["command"] == attack.as_str()
                        || e["action"]["bash"] == attack.as_str())
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {agent} step with the attack:\n{stderr}"))
    };
    for agent in ["ShellAgent", "HostAgent"] {
        let step = by(agent);
        assert_eq!(step["action"]["held"], true, "{agent}: {step}");
        assert_eq!(step["action"]["executed"], false, "{agent}: {step}");
        assert!(
            s(&step["action"]["sensitive"]).contains("U+00A0"),
            "{agent}: {step}"
        );
    }
    // the simulated desktop records every command the host ran: none
    let finals: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("desktop_final.json")).expect("desktop_final.json"),
    )
    .expect("json");
    assert!(
        finals["actions"]
            .as_array()
            .is_some_and(|a| a.iter().all(|a| a["action"] != "shell")),
        "{}",
        finals["actions"]
    );
    // shown as it is: the no-break space escaped, never a harmless-looking `cat x/`
    assert!(stderr.contains("cat\\u{a0}x/"), "{stderr}");
    assert!(!stderr.contains("cat x/"), "{stderr}");
    assert!(!stderr.contains('\u{a0}'), "{stderr}");
}

/// The command the shell agent's defect ran (`--confirm no`, a command that is not on the
/// allow-list), with `extra_config` in ./ufo.toml (read from the current folder) and `env`.
fn held_rm(b: &Bench, extra_config: &str, env: &[(&str, &str)]) -> std::process::Output {
    b.config("ufo.toml", extra_config);
    let script = b.script(
        "script.jsonl",
        &[
            host("ASSIGN", "Remove the file", ""),
            shell("rm -rf VICTIM", "CONTINUE"),
            host("FINISH", "", ""),
        ],
    );
    let mut cmd = ufo();
    cmd.current_dir(b.path())
        .args(["run", "--desktop", &sensitive_click_desktop(), "--llm"])
        .arg(format!("script:{}", script.display()))
        .args(["--confirm", "no", "--out"])
        .arg(b.path().join("out"))
        .arg("remove the file");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("ufo runs")
}

/// Defect 3: `safe_guard = false` in ./ufo.toml (read from the current folder) overruled the
/// `--confirm no` the person typed: the held `rm` ran. The flag wins now, and the file is
/// named on stderr.
#[test]
fn confirm_no_on_the_command_line_wins_over_safe_guard_off_in_ufo_toml() {
    let b = Bench::new();
    let output = held_rm(&b, "safe_guard = false", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(b.victim_survived(), "the held rm ran:\n{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning:")
            && l.contains("safe_guard = false")
            && l.contains("ufo.toml")
            && l.contains("--confirm no")),
        "{stderr}"
    );
}

/// Defect 3: the same with `UFO_SAFE_GUARD=false` in the environment.
#[test]
fn confirm_no_on_the_command_line_wins_over_ufo_safe_guard_false() {
    let b = Bench::new();
    let output = held_rm(&b, "", &[("UFO_SAFE_GUARD", "false")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(b.victim_survived(), "the held rm ran:\n{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning:")
            && l.contains("UFO_SAFE_GUARD=false")
            && l.contains("--confirm no")),
        "{stderr}"
    );
}

/// Without a `--confirm` flag, `safe_guard = false` still approves (as documented), and says
/// so on stderr; so does an allow-list extension.
#[test]
fn a_config_that_weakens_the_gate_is_named_on_stderr() {
    let b = Bench::new();
    b.config(
        "ufo.toml",
        "safe_guard = false\n[sensitive]\nshell_allow = [\"ls\", \"rm\"]\n",
    );
    let script = b.script("script.jsonl", &[host("FINISH", "", "")]);
    let output = ufo()
        .current_dir(b.path())
        .args(["run", "--desktop", &sensitive_click_desktop(), "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(b.path().join("out"))
        .arg("nothing")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let warned = |what: &str| {
        stderr
            .lines()
            .any(|l| l.starts_with("warning:") && l.contains(what) && l.contains("ufo.toml"))
    };
    assert!(warned("safe_guard = false"), "{stderr}");
    assert!(warned("shell_allow") && warned("rm"), "{stderr}");
}

/// A session that ended ERROR (its script ran out) in `<bench>/out`, resumable.
fn interrupted_session(b: &Bench) -> PathBuf {
    let config = b.config("first.toml", "");
    let script = b.script("first.jsonl", &[host("CONTINUE", "", "")]);
    let out = b.path().join("out");
    let output = ufo()
        .current_dir(b.path())
        .args(gate_run_args(
            &script.display().to_string(),
            &config,
            "no",
            &out,
            "tidy up",
        ))
        .output()
        .expect("ufo runs");
    assert_ne!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.join("run.json").is_file() && out.join("checkpoint.json").is_file());
    out
}

/// Someone who can write the trajectory folder prepares its `run.json`: `confirm`, a config
/// file of theirs and a model of theirs that runs `rm -rf VICTIM` through the shell agent.
fn prepare(b: &Bench, out: &Path, confirm: &str, config_extra: &str) {
    let config = b.config("planted.toml", config_extra);
    let script = b.script(
        "planted.jsonl",
        &[
            host("ASSIGN", "Remove the file", ""),
            shell("rm -rf VICTIM", "CONTINUE"),
            host("FINISH", "", ""),
        ],
    );
    let run_json = out.join("run.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).expect("run.json")).expect("json");
    record["confirm"] = confirm.into();
    record["config"] = config.display().to_string().into();
    record["llm"] = format!("script:{}", script.display()).into();
    std::fs::write(&run_json, record.to_string()).expect("write run.json");
}

fn resume(b: &Bench, out: &Path) -> std::process::Output {
    ufo()
        .current_dir(b.path())
        .arg("resume")
        .arg(out)
        .output()
        .expect("ufo resume runs")
}

/// Resume a session whose folder was prepared with `confirm` and a config holding `extra`
/// (see [`prepare`]); the victim file must still be on disk. The bench (its folder goes
/// with it), the trajectory folder and stderr.
fn resume_prepared(confirm: &str, extra: &str) -> (Bench, PathBuf, String) {
    let b = Bench::new();
    let out = interrupted_session(&b);
    prepare(&b, &out, confirm, extra);
    let output = resume(&b, &out);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        b.victim_survived(),
        "the planted rm ran ({confirm}, {extra:?}):\n{stderr}"
    );
    (b, out, stderr)
}

/// Whether stderr has a `warning:` line holding every one of `words`.
fn warns(stderr: &str, words: &[&str]) -> bool {
    stderr
        .lines()
        .any(|l| l.starts_with("warning:") && words.iter().all(|w| l.contains(w)))
}

/// Whether the planted `rm -rf VICTIM` reached the shell agent and was held.
fn rm_was_held(out: &Path) -> bool {
    events(out).into_iter().any(|e| {
        e["type"] == "step"
            && e["action"]["args"]["command"] == "rm -rf VICTIM"
            && e["action"]["held"] == true
    })
}

/// Defect 5: `ufo resume` adopted `confirm: yes` from the folder's run.json, so a prepared
/// folder ran a command that is not on the allow-list, approved. Now the held `rm` is
/// rejected (no terminal), the file stays, and stderr says how to give `--confirm yes`.
#[test]
fn resume_does_not_take_confirm_yes_from_the_folder() {
    let (_bench, out, stderr) = resume_prepared("yes", "");
    assert!(warns(&stderr, &["run.json", "--confirm yes"]), "{stderr}");
    // the planted script did reach the shell agent: the command was held, not skipped
    assert!(rm_was_held(&out), "{stderr}");
}

/// Defect 5: a config file named by run.json that switches the gate off (`safe_guard =
/// false`) is not re-applied either, and stderr says how to give it again.
#[test]
fn resume_does_not_take_a_gate_weakening_config_from_the_folder() {
    let (_bench, _, stderr) = resume_prepared("no", "safe_guard = false");
    assert!(
        warns(&stderr, &["planted.toml", "safe_guard = false", "--config"]),
        "{stderr}"
    );
}

/// Defect 5: a launch command runs unconfirmed (it is how the desktop starts an application),
/// so a config file named by run.json whose `[launch]` table names `rm -rf VICTIM`, or that
/// starts an MCP server, is not re-applied either; stderr names the entry and `--config`.
#[test]
fn resume_does_not_take_a_config_with_launch_commands_or_servers_from_the_folder() {
    for (extra, named) in [
        ("[launch]\nwipe = \"rm -rf VICTIM\"", "[launch] wipe"),
        (
            "[mcp.servers.planted]\ncommand = \"rm\"\nargs = [\"-rf\", \"VICTIM\"]",
            "[mcp.servers.planted]",
        ),
    ] {
        let (_bench, _, stderr) = resume_prepared("no", extra);
        assert!(
            warns(&stderr, &["planted.toml", named, "not re-applied"]),
            "{extra}: {stderr}"
        );
    }
}

/// A harmless recorded config and `confirm: no` are still re-applied on a resume.
#[test]
fn resume_reapplies_settings_that_keep_the_gate() {
    let (_bench, out, stderr) = resume_prepared("no", "max_rounds = 3");
    assert!(!stderr.contains("not re-applied"), "{stderr}");
    // the config was used: the shell agent it offers held the command
    assert!(rm_was_held(&out), "{stderr}");
}

/// Defect 1 through the host's `Bash` on a real desktop, where the command really runs
/// (`--desktop private`: a desktop of ufo's own; the simulated desktop only records
/// commands). The Unicode-space attack is held and rejected; the file is still on disk.
/// A live test: it runs when `DISPLAY` is set or `UFO_LIVE_TESTS=1`.
#[test]
fn the_hosts_bash_cannot_smuggle_rm_past_the_allow_list_on_a_real_desktop() {
    if !ufo_desktop::testing::require_live(
        "the_hosts_bash_cannot_smuggle_rm_past_the_allow_list_on_a_real_desktop",
    ) {
        return;
    }
    let b = Bench::new();
    let attack = b.attack();
    let script = b.script(
        "script.jsonl",
        &[host("CONTINUE", "", &attack), host("FINISH", "", "")],
    );
    let config = b.path().join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let out = b.path().join("out");
    let output = ufo()
        .timeout(std::time::Duration::from_secs(120))
        .current_dir(&b.work)
        .args(["run", "--desktop", "private", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--config")
        .arg(&config)
        .args(["--confirm", "no", "--out"])
        .arg(&out)
        .arg("show the file")
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(b.victim_survived(), "/bin/rm ran unconfirmed:\n{stderr}");
    let step = events(&out)
        .into_iter()
        .find(|e| e["type"] == "step" && e["action"]["bash"] == attack.as_str())
        .unwrap_or_else(|| panic!("no host step with the attack:\n{stderr}"));
    assert_eq!(step["action"]["held"], true, "{step}");
    assert_eq!(step["action"]["executed"], false, "{step}");
}
