//! `--no-shell`: a desktop that runs no shell command (docs/security.md, "Who may do what").
//! Sessions the web console starts on a server without `--allow-shell` run so, whatever the
//! request or the model asks: the HostAgent's `Bash` may only be the launch command of an
//! application the desktop lists (which starts it as `launch` would), anything else answers
//! that shell commands are off. Everything else passes through unchanged.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowId, WindowInfo,
    WindowObservation,
};

/// A desktop whose [`Desktop::shell`] runs only launch commands.
pub struct ShellOff {
    inner: Arc<dyn Desktop>,
}

impl ShellOff {
    /// `inner` without shell commands.
    pub fn new(inner: Arc<dyn Desktop>) -> Self {
        Self { inner }
    }
}

/// Whether `command` is, trimmed and without a trailing `&`, exactly the launch command of one
/// of `apps`.
pub fn is_launch_command(command: &str, apps: &[LaunchableApp]) -> bool {
    let bare = |c: &str| c.trim().trim_end_matches('&').trim().to_string();
    let wanted = bare(command);
    !wanted.is_empty() && apps.iter().any(|a| bare(&a.command) == wanted)
}

#[async_trait]
impl Desktop for ShellOff {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        self.inner.windows().await
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        self.inner.launchable().await
    }

    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        self.inner.desktop_screenshot().await
    }

    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError> {
        self.inner.observe(window_id).await
    }

    async fn act(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        self.inner.act(window_id, control_id, action).await
    }

    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        self.inner.launch(app).await
    }

    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        let apps = self.inner.launchable().await?;
        if is_launch_command(command, &apps) {
            return self.inner.shell(command).await;
        }
        Err(DesktopError::Unsupported(
            "shell commands are off in this session (--no-shell; a web console session on a \
             server without --allow-shell): only an application's launch command runs; use \
             the applications' own controls instead"
                .into(),
        ))
    }

    fn find_program(&self, name: &str) -> Option<String> {
        self.inner.find_program(name)
    }

    async fn settle(&self) {
        self.inner.settle().await;
    }

    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        self.inner.activate(window_id).await
    }

    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        self.inner.close(window_id).await
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.inner.last_action_changed()
    }

    fn final_state(&self) -> Option<serde_json::Value> {
        self.inner.final_state()
    }

    fn person_input(&self) -> Option<String> {
        self.inner.person_input()
    }

    async fn wait_handback(&self, within: Duration) -> bool {
        self.inner.wait_handback(within).await
    }

    async fn pause(&self, within: Duration) {
        self.inner.pause(within).await;
    }

    fn hand_back(&self) {
        self.inner.hand_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str, launch: &str) -> LaunchableApp {
        LaunchableApp {
            name: name.into(),
            command: launch.into(),
        }
    }

    #[test]
    fn only_a_listed_launch_command_passes() {
        let apps = [app("Writer", "writer"), app("Calc", "libreoffice --calc")];
        for ok in [
            "writer",
            " writer &",
            "libreoffice --calc",
            "libreoffice --calc&",
        ] {
            assert!(is_launch_command(ok, &apps), "{ok}");
        }
        for refused in [
            "",
            "&",
            "writer; rm -rf ~",
            "touch /tmp/x",
            "libreoffice",
            "libreoffice --calc --headless --convert-to pdf x",
            "writer\ntouch x",
        ] {
            assert!(!is_launch_command(refused, &apps), "{refused:?}");
        }
        assert!(!is_launch_command("writer", &[]));
    }
}
