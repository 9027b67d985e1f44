//! Getters: how the evaluator reads the result and the expected value.
//!
//! OSWorld runs tasks in a VM; here the "VM" is this machine under the task's fresh `HOME`:
//! a path starting with `/home/user/` or `~/` is read under that `HOME`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::BatchError;

/// The getter types this crate implements (`local_file` is a ufo-rs extension).
pub const SUPPORTED_GETTERS: &[&str] = &[
    "vm_file",
    "vm_command_line",
    "vm_command_error",
    "rule",
    "local_file",
];

/// Where getters run: the task's `HOME`, its folder, extra environment and a time bound.
#[derive(Debug, Clone)]
pub struct GetterEnv {
    /// The task's fresh home folder (stands for `/home/user`).
    pub home: PathBuf,
    /// The task file's folder (for `local_file`).
    pub task_dir: PathBuf,
    /// Environment for commands (`HOME` is set to `home` in any case).
    pub env: Vec<(String, String)>,
    /// Longest time a getter command may run.
    pub timeout: Duration,
}

impl GetterEnv {
    /// Map an OSWorld path (`/home/user/...`, `~/...`) onto the task's home.
    pub fn map_path(&self, path: &str) -> PathBuf {
        for prefix in ["/home/user/", "~/"] {
            if let Some(rest) = path.strip_prefix(prefix) {
                return self.home.join(rest);
            }
        }
        if path == "/home/user" || path == "~" {
            return self.home.clone();
        }
        PathBuf::from(path)
    }
}

/// What a command printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit code (None when killed by a signal).
    pub code: Option<i32>,
}

/// Quote one word for `/bin/sh`.
pub fn sh_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The shell text of an OSWorld `command` parameter: a string as-is, a list quoted word by word.
pub fn command_line(command: &Value) -> Option<String> {
    match command {
        Value::String(s) => Some(s.clone()),
        Value::Array(words) => {
            let words: Option<Vec<String>> =
                words.iter().map(|w| w.as_str().map(sh_quote)).collect();
            words.map(|w| w.join(" "))
        }
        _ => None,
    }
}

/// Most bytes of a getter command's stdout (and of its stderr): a longer output is an error,
/// not a silently shortened value for the metric.
pub const MAX_GETTER_OUTPUT: usize = ufo_proc::DEFAULT_MAX_OUTPUT;

/// Run a shell command under `env`, bounded by its timeout. It gets none of ufo's secrets,
/// runs in its own process group (killed whole after the timeout), and may print at most
/// [`MAX_GETTER_OUTPUT`] bytes per stream.
pub async fn run_command(env: &GetterEnv, command: &str) -> Result<CommandOutput, BatchError> {
    let mut cmd = ufo_proc::shell_command(command);
    cmd.envs(env.env.iter().map(|(k, v)| (k, v)))
        .env("HOME", &env.home);
    let limits = ufo_proc::Limits {
        timeout: env.timeout,
        max_output: MAX_GETTER_OUTPUT,
    };
    let fail = |message: String| BatchError::Command {
        command: command.to_string(),
        message,
    };
    let out = ufo_proc::run(cmd, limits)
        .await
        .map_err(|e| fail(e.to_string()))?;
    if out.timed_out {
        return Err(fail(format!(
            "timed out after {} s and was killed with every process it started",
            env.timeout.as_secs()
        )));
    }
    for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if stream.truncated() {
            return Err(fail(format!(
                "printed more than {MAX_GETTER_OUTPUT} bytes on {name}; a getter's output is kept whole or not at all, so make the command print less"
            )));
        }
    }
    Ok(CommandOutput {
        stdout: String::from_utf8_lossy(&out.stdout.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr.bytes).into_owned(),
        code: out.code,
    })
}

fn path_value(p: &Path) -> Value {
    if p.exists() {
        Value::String(p.display().to_string())
    } else {
        // OSWorld's getters return None for a missing file; metrics score it 0.
        Value::Null
    }
}

/// Run one getter: `{"type": ..., ...}` → the value the metric receives. A file getter gives
/// the file's path (null when the file does not exist); a command getter gives its output.
pub async fn get(env: &GetterEnv, spec: &Value) -> Result<Value, BatchError> {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let bad = |what: &str| BatchError::Getter {
        getter: kind.to_string(),
        message: what.to_string(),
    };
    match kind {
        "rule" => Ok(spec.get("rules").cloned().unwrap_or(Value::Null)),
        "vm_file" => match spec.get("path") {
            Some(Value::String(p)) => Ok(path_value(&env.map_path(p))),
            Some(Value::Array(ps)) => Ok(Value::Array(
                ps.iter()
                    .map(|p| match p.as_str() {
                        Some(p) => path_value(&env.map_path(p)),
                        None => Value::Null,
                    })
                    .collect(),
            )),
            _ => Err(bad("needs \"path\": a string or a list of strings")),
        },
        "local_file" => match spec.get("path").and_then(Value::as_str) {
            Some(p) => Ok(path_value(&env.task_dir.join(p))),
            None => Err(bad("needs \"path\": a file relative to the task file")),
        },
        "vm_command_line" | "vm_command_error" => {
            let cmd = spec
                .get("command")
                .and_then(command_line)
                .ok_or_else(|| bad("needs \"command\": a string or a list of strings"))?;
            let out = run_command(env, &cmd).await?;
            Ok(Value::String(if kind == "vm_command_line" {
                out.stdout
            } else {
                out.stderr
            }))
        }
        other => Err(BatchError::Unsupported(format!(
            "unsupported getter `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(home: &Path) -> GetterEnv {
        GetterEnv {
            home: home.to_path_buf(),
            task_dir: home.to_path_buf(),
            env: vec![],
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(sh_quote("abc"), "abc");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(
            command_line(&json!(["echo", "a b", "c"])).as_deref(),
            Some("echo 'a b' c")
        );
        assert_eq!(command_line(&json!(3)), None);
    }

    #[tokio::test]
    async fn command_getters_give_stdout_and_stderr_under_the_task_home() {
        let tmp = tempfile::tempdir().unwrap();
        let e = env(tmp.path());
        let out = get(
            &e,
            &json!({"type": "vm_command_line", "command": ["sh", "-c", "echo $HOME; echo err >&2"]}),
        )
        .await
        .unwrap();
        assert_eq!(out, json!(format!("{}\n", tmp.path().display())));
        let err = get(
            &e,
            &json!({"type": "vm_command_error", "command": "echo oops >&2"}),
        )
        .await
        .unwrap();
        assert_eq!(err, json!("oops\n"));
    }

    #[tokio::test]
    async fn a_command_that_hangs_is_cut_off() {
        let tmp = tempfile::tempdir().unwrap();
        let mut e = env(tmp.path());
        e.timeout = Duration::from_millis(200);
        let r = get(
            &e,
            &json!({"type": "vm_command_line", "command": "sleep 5"}),
        )
        .await;
        assert!(matches!(r, Err(BatchError::Command { .. })), "{r:?}");
    }

    /// Defects 1 and 4 for getters: no key in a getter's output, an endless output is an
    /// error after a bounded read.
    #[tokio::test]
    async fn getters_see_no_keys_and_endless_output_is_an_error() {
        std::env::set_var("OPENAI_API_KEY", "sk-getter-test-key");
        let tmp = tempfile::tempdir().unwrap();
        let mut e = env(tmp.path());
        e.timeout = Duration::from_secs(60);
        let out = get(
            &e,
            &json!({"type": "vm_command_line", "command": "echo \"[$OPENAI_API_KEY]\""}),
        )
        .await
        .unwrap();
        assert_eq!(out, json!("[]\n"));
        let r = get(
            &e,
            &json!({"type": "vm_command_line", "command": "cat /dev/zero"}),
        )
        .await;
        match r {
            Err(BatchError::Command { message, .. }) => {
                assert!(message.contains("more than"), "{message}")
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn file_getters_map_home_user_and_give_null_for_missing_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "x").unwrap();
        let e = env(tmp.path());
        let got = get(&e, &json!({"type": "vm_file", "path": "/home/user/a.txt"}))
            .await
            .unwrap();
        assert_eq!(got, json!(tmp.path().join("a.txt").display().to_string()));
        let missing = get(&e, &json!({"type": "vm_file", "path": "~/nope.txt"}))
            .await
            .unwrap();
        assert_eq!(missing, Value::Null);
        let rule = get(&e, &json!({"type": "rule", "rules": {"expected": "1"}}))
            .await
            .unwrap();
        assert_eq!(rule, json!({"expected": "1"}));
        assert!(get(&e, &json!({"type": "vm_file"})).await.is_err());
        assert!(matches!(
            get(&e, &json!({"type": "cloud_file"})).await,
            Err(BatchError::Unsupported(_))
        ));
    }
}
