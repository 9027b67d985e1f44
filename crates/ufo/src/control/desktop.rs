//! The session's desktop with the console's take-over folded into the engine's take-over
//! port ([`Desktop::person_input`], [`Desktop::wait_handback`], [`Desktop::hand_back`]): while
//! the console has the desktop the engine pauses exactly as when the person used a watched
//! private desktop's window. Everything else goes to the desktop unchanged.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{
    Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowId, WindowInfo,
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
        self.inner.shell(command).await
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
        if self.control.console_has_desktop() {
            return Some(CONSOLE_INPUT.to_string());
        }
        let person = self.inner.person_input();
        self.control.set_person(person.is_some());
        person
    }

    async fn pause(&self, within: Duration) {
        self.inner.pause(within).await;
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::control::protocol::Input;
    use crate::control::{DesktopKind, Screen};

    /// A screen that is never looked at.
    struct NoScreen;

    #[async_trait]
    impl Screen for NoScreen {
        async fn view(&self) -> Result<Screenshot, String> {
            Err("no screen".into())
        }
        async fn input(&self, _input: &Input) -> Result<(), String> {
            Err("no screen".into())
        }
    }

    fn desktop() -> (ConsoleDesktop, Arc<Control>) {
        let sim = ufo_desktop::SimDesktop::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/scenarios/app_confirm_approved/desktop.json"
        ))
        .expect("scenario");
        let control = Control::new(
            DesktopKind::Private,
            ufo_core::access::Owner::private_terminal(),
            Arc::new(AtomicBool::new(false)),
            Box::new(|_| {}),
            Some(Arc::new(NoScreen)),
        );
        (ConsoleDesktop::new(Arc::new(sim), control.clone()), control)
    }

    #[tokio::test]
    async fn the_consoles_take_over_pauses_through_the_take_over_port() {
        let (desktop, control) = desktop();
        assert_eq!(desktop.person_input(), None);
        control.takeover().expect("private");
        assert_eq!(desktop.person_input().as_deref(), Some(CONSOLE_INPUT));
        assert_eq!(control.state()["taken"], "console");
        // not handed back yet: each slice of the engine's wait ends false
        assert!(!desktop.wait_handback(Duration::from_millis(50)).await);
        assert!(control.wait_paused(Duration::from_millis(10)).await);
        assert!(control.taken_screen("view").is_ok());
        control.handback().expect("taken");
        assert!(desktop.wait_handback(Duration::from_secs(5)).await);
        assert_eq!(desktop.person_input(), None);
        assert!(control.state()["taken"].is_null());
        assert!(control.taken_screen("view").is_err());
        // Enter on the terminal ends the console's take-over too
        control.takeover().expect("private");
        desktop.hand_back();
        assert_eq!(desktop.person_input(), None);
        assert!(control.handback().is_err());
    }
}
