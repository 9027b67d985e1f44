//! The host's `Bash` on the live desktop: a shell command run without ufo's secrets, in its
//! own process group killed whole on timeout, its output bounded.

use std::time::Duration;

use ufo_core::ShellOutput;

use crate::LinuxError;

/// Most characters of stdout (and of stderr) a shell command hands back to the model.
const SHELL_SHOWN: usize = 16_000;

/// A captured stream as text: at most [`SHELL_SHOWN`] bytes, then how much was left out.
fn shown(c: &ufo_proc::Captured) -> String {
    c.shown(SHELL_SHOWN)
}

/// Run `/bin/sh -c command` for the host's `Bash`: without ufo's secrets (then `env` added),
/// in its own process group killed whole after `timeout` or when the call is dropped, its
/// output read up to [`ufo_proc::DEFAULT_MAX_OUTPUT`] per stream.
pub(crate) async fn run_command(
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<ShellOutput, LinuxError> {
    let mut cmd = ufo_proc::shell_command(command);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = ufo_proc::run(cmd, ufo_proc::Limits::new(timeout)).await?;
    if out.timed_out {
        return Err(LinuxError::Timeout {
            what: format!("shell command `{command}` (killed with every process it started)"),
            ms: timeout.as_millis() as u64,
        });
    }
    Ok(ShellOutput {
        code: out.code,
        stdout: shown(&out.stdout),
        stderr: shown(&out.stderr),
        launched: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect 1 for the host's `Bash` on the live desktop: the command sees no key, but the
    /// configured environment.
    #[tokio::test]
    async fn host_shell_commands_get_no_secrets() {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-live-desktop-test");
        std::env::set_var("UFO_LLM_API_KEY", "sk-ufo-live-desktop-test");
        let env = vec![("HOME".to_string(), "/tmp/task-home".to_string())];
        let out = run_command("env", &env, Duration::from_secs(30))
            .await
            .expect("runs");
        assert_eq!(out.code, Some(0));
        assert!(
            !out.stdout.contains("sk-ant-live-desktop-test"),
            "{}",
            out.stdout
        );
        assert!(
            !out.stdout.contains("sk-ufo-live-desktop-test"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("HOME=/tmp/task-home"), "{}", out.stdout);
    }

    /// Defects 4 and 10 for the host's `Bash`: endless output is cut, a timeout kills the
    /// whole group.
    #[tokio::test]
    async fn host_shell_output_is_capped_and_a_timeout_kills_the_group() {
        let out = run_command("yes", &[], Duration::from_secs(60))
            .await
            .expect("runs");
        assert!(out.stdout.len() < 20_000, "{} bytes", out.stdout.len());
        assert!(out.stdout.contains("truncated"), "{}", &out.stdout[..100]);
        // an argument no other process on the machine has (other tests sleep too)
        let arg = format!("4747.{}", std::process::id());
        let r = run_command(
            &format!("sleep {arg}; echo done"),
            &[],
            Duration::from_millis(300),
        )
        .await;
        assert!(matches!(r, Err(LinuxError::Timeout { .. })), "{r:?}");
        let alive = || !ufo_proc::live_processes_with_arg(&arg).is_empty();
        let mut left = true;
        for _ in 0..100 {
            left = alive();
            if !left {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!left, "sleep {arg} outlived the timeout");
    }
}
