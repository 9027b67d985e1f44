//! The session's desktop with the console's take-over folded into the engine's take-over
//! port ([`Desktop::person_input`], [`Desktop::wait_handback`], [`Desktop::hand_back`]): while
//! the console has the desktop the engine pauses exactly as when the person used a watched
//! private desktop's window. Everything else goes to the desktop unchanged.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowInfo,
    WindowObservation,
};

use super::Control;

/// What the take-over record says the console did.
pub const CONSOLE_INPUT: &str = "taken over from the console";

/// A desktop the console can take over.
pub struct ConsoleDesktop {
    inner: Arc<dyn Desktop>,
    control: Arc<Control>,
}

impl ConsoleDesktop {
    /// `inner`, paused while `control` says the console has it.
    pub fn new(inner: Arc<dyn Desktop>, control: Arc<Control>) -> Self {
        Self { inner, control }
    }
}

#[async_trait]
impl Desktop for ConsoleDesktop {
    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        self.inner.windows().await
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        self.inner.launchable().await
    }

    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        self.inner.desktop_screenshot().await
    }

    async fn observe(&self, window_id: &str) -> Result<WindowObservation, DesktopError> {
        self.inner.observe(window_id).await
    }

    async fn act(
        &self,
        window_id: &str,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        self.inner.act(window_id, control_id, action).await
    }

    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        self.inner.launch(app).await
    }

    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        self.inner.shell(command).await
    }

    fn find_program(&self, name: &str) -> Option<String> {
        self.inner.find_program(name)
    }

    async fn settle(&self) {
        self.inner.settle().await;
    }

    async fn activate(&self, window_id: &str) -> Result<(), DesktopError> {
        self.inner.activate(window_id).await
    }

    async fn close(&self, window_id: &str) -> Result<(), DesktopError> {
        self.inner.close(window_id).await
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.inner.last_action_changed()
    }

    fn final_state(&self) -> Option<serde_json::Value> {
        self.inner.final_state()
    }

    fn person_input(&self) -> Option<String> {
        if self.control.console_has_desktop() {
            return Some(CONSOLE_INPUT.to_string());
        }
        let person = self.inner.person_input();
        self.control.set_person(person.is_some());
        person
    }

    async fn wait_handback(&self, within: Duration) -> bool {
        self.control.set_paused(true);
        let handed_back = if self.control.console_has_desktop() {
            if self.control.wait_console_handback(within).await {
                // what the console typed came through XTEST, but a click the person made in
                // the watched window meanwhile is forgotten too: the console handed back
                self.inner.hand_back();
                true
            } else {
                false
            }
        } else {
            self.inner.wait_handback(within).await
        };
        if handed_back {
            self.control.clear_taken();
        }
        handed_back
    }

    fn hand_back(&self) {
        self.inner.hand_back();
        self.control.clear_taken();
    }
}
