//! Getters: how the evaluator reads the result and the expected value.
//!
//! OSWorld runs tasks in a VM; here the "VM" is this machine under the task's fresh `HOME`:
//! a path starting with `/home/user/` or `~/` is read under that `HOME`. When the task ran on
//! a served desktop (`--desktop remote:URL`), the "VM" is that machine: commands run through
//! its shell and files are copied from it ([`Device`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use ufo_core::{Desktop, DesktopError};

use crate::kinds::GetterKind;
use crate::BatchError;

/// A machine other than this one where the task ran: the getters' commands run through its
/// desktop's shell, and its files are copied into `copies` to be compared.
#[derive(Clone)]
pub struct Device {
    /// The served desktop.
    pub desktop: Arc<dyn Desktop>,
    /// A local folder for the files copied from it.
    pub copies: PathBuf,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("copies", &self.copies)
            .finish_non_exhaustive()
    }
}

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
    /// The machine the task ran on when it is not this one (`home` is then its `HOME`).
    pub device: Option<Device>,
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
    if let Some(device) = &env.device {
        return run_on_device(device, command).await;
    }
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

/// Run a getter's command through the served desktop's shell (bounded there, in time and
/// output). A desktop without a shell cannot evaluate the task: unsupported, so it is skipped.
async fn run_on_device(device: &Device, command: &str) -> Result<CommandOutput, BatchError> {
    match device.desktop.shell(command).await {
        Ok(out) => Ok(CommandOutput {
            stdout: out.stdout,
            stderr: out.stderr,
            code: out.code,
        }),
        Err(DesktopError::Unsupported(why)) => Err(BatchError::Unsupported(format!(
            "the evaluator runs `{command}` on the task's machine: {why}"
        ))),
        Err(e) => Err(BatchError::Command {
            command: command.to_string(),
            message: e.to_string(),
        }),
    }
}

/// The shell text that prints a file's size on one line and its bytes in base64 on the next,
/// or `missing` when it is not a regular file.
fn copy_command(path: &str) -> String {
    let q = sh_quote(path);
    format!("if [ -f {q} ]; then wc -c < {q}; base64 -w0 < {q}; echo; else echo missing; fi")
}

/// The bytes of [`copy_command`]'s output; `None` for a missing file; an error when the
/// output is cut (the served shell's output bound) or not what the command prints.
fn copied_bytes(stdout: &str) -> Result<Option<Vec<u8>>, String> {
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or("").trim();
    if first == "missing" {
        return Ok(None);
    }
    let size: usize = first
        .parse()
        .map_err(|_| format!("the copy printed {first:?} where the file's size was expected"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(lines.next().unwrap_or("").trim())
        .map_err(|e| format!("the copy is not base64 ({e}); it was probably cut short"))?;
    if bytes.len() != size {
        return Err(format!(
            "only {} of the file's {size} bytes came through the served shell (its output is \
             bounded); compare a smaller file or a command's output",
            bytes.len()
        ));
    }
    Ok(Some(bytes))
}

/// Copy a file of the task's machine into the local `copies` folder: the local path, or null
/// when the file does not exist there.
async fn copy_from_device(device: &Device, path: &Path) -> Result<Value, BatchError> {
    // copies of one evaluation (result and expected may share a file name) never overwrite
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let remote = path.display().to_string();
    let out = run_on_device(device, &copy_command(&remote)).await?;
    let fail = |message: String| BatchError::Getter {
        getter: "vm_file".into(),
        message: format!("{remote}: {message}"),
    };
    let Some(bytes) = copied_bytes(&out.stdout).map_err(fail)? else {
        return Ok(Value::Null);
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let local = device.copies.join(format!("{n}-{name}"));
    std::fs::create_dir_all(&device.copies)
        .and_then(|()| std::fs::write(&local, bytes))
        .map_err(|e| fail(format!("cannot keep the copy at {}: {e}", local.display())))?;
    Ok(Value::String(local.display().to_string()))
}

/// A `vm_file` path's value: on this machine the path itself, on a served one a local copy.
async fn vm_file_value(env: &GetterEnv, path: &str) -> Result<Value, BatchError> {
    let mapped = env.map_path(path);
    match &env.device {
        Some(device) => copy_from_device(device, &mapped).await,
        None => Ok(path_value(&mapped)),
    }
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
    let Some(getter) = GetterKind::named(kind) else {
        return Err(BatchError::Unsupported(format!(
            "unsupported getter `{kind}`"
        )));
    };
    match getter {
        GetterKind::Rule => Ok(spec.get("rules").cloned().unwrap_or(Value::Null)),
        GetterKind::VmFile => match spec.get("path") {
            Some(Value::String(p)) => vm_file_value(env, p).await,
            Some(Value::Array(ps)) => {
                let mut values = Vec::with_capacity(ps.len());
                for p in ps {
                    values.push(match p.as_str() {
                        Some(p) => vm_file_value(env, p).await?,
                        None => Value::Null,
                    });
                }
                Ok(Value::Array(values))
            }
            _ => Err(bad("needs \"path\": a string or a list of strings")),
        },
        GetterKind::LocalFile => match spec.get("path").and_then(Value::as_str) {
            Some(p) => Ok(path_value(&env.task_dir.join(p))),
            None => Err(bad("needs \"path\": a file relative to the task file")),
        },
        GetterKind::VmCommandLine | GetterKind::VmCommandError => {
            let cmd = spec
                .get("command")
                .and_then(command_line)
                .ok_or_else(|| bad("needs \"command\": a string or a list of strings"))?;
            let out = run_command(env, &cmd).await?;
            Ok(Value::String(if getter == GetterKind::VmCommandLine {
                out.stdout
            } else {
                out.stderr
            }))
        }
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
            device: None,
        }
    }

    /// The copy of a file from a served machine, through a real shell: the bytes whole
    /// (binary and odd names too), a missing file null, a cut output an error.
    #[test]
    fn a_file_copied_through_a_shell_comes_whole_or_not_at_all() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("it's a file.bin");
        let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        std::fs::write(&file, &bytes).unwrap();
        let sh = |cmd: String| {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let out = sh(copy_command(&file.display().to_string()));
        assert_eq!(copied_bytes(&out).unwrap(), Some(bytes));
        let missing = sh(copy_command(&tmp.path().join("none").display().to_string()));
        assert_eq!(copied_bytes(&missing).unwrap(), None);
        let folder = sh(copy_command(&tmp.path().display().to_string()));
        assert_eq!(copied_bytes(&folder).unwrap(), None);
        let cut: String = out.chars().take(out.len() / 2).collect();
        let e = copied_bytes(&cut).unwrap_err();
        assert!(
            e.contains("bytes came through") || e.contains("base64"),
            "{e}"
        );
        assert!(copied_bytes("garbage\n").is_err());
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
