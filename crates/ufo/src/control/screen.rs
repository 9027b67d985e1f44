//! The private desktop's screen as the console sees it while it has the desktop: a fresh
//! screenshot of the whole screen, and input sent to it through XTEST.

use async_trait::async_trait;
use ufo_core::Screenshot;

use super::protocol::Input;

/// The screen the console views and sends input to.
#[async_trait]
pub trait Screen: Send + Sync {
    /// A PNG of the whole screen.
    async fn view(&self) -> Result<Screenshot, String>;
    /// Send a click, keys or a text.
    async fn input(&self, input: &Input) -> Result<(), String>;
}

#[async_trait]
impl Screen for ufo_linux::LinuxDesktop {
    async fn view(&self) -> Result<Screenshot, String> {
        self.screen_png().await.map_err(|e| e.to_string())
    }

    async fn input(&self, input: &Input) -> Result<(), String> {
        match input {
            Input::Click(c) => self.screen_click(c.x, c.y, c.button).await,
            Input::Keys(k) => self.screen_keys(k).await,
            Input::Text(t) => self.screen_text(t).await,
        }
        .map_err(|e| e.to_string())
    }
}
