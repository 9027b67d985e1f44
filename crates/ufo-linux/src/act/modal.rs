//! Actions that open a modal dialog (which dialog blocks the window under it is the
//! observation's rule, `observe::modal`): Qt (VLC's Media > Open File…) and the GTK2 file chooser
//! run the dialog inside the action's D-Bus call, which returns only when the dialog closes.
//! The action is done once a new window appeared; waiting longer would report a hung
//! application.

use std::time::Duration;

use super::Actor;
use crate::display::WinId;
use crate::LinuxError;

/// How often the window list is looked at while an action's call is pending.
const POLL: Duration = Duration::from_millis(100);

/// How a pending action's call ended.
#[derive(Debug)]
pub(crate) enum Done {
    /// The call answered (`true` when the application says the action ran).
    Answered(bool),
    /// The call is still blocked, and this new window (a modal dialog) appeared meanwhile.
    OpenedDialog(String),
}

/// The first window in `now` that is not in `before`, by id: its title.
pub(crate) fn new_window(before: &[WinId], now: &[(WinId, String)]) -> Option<String> {
    now.iter()
        .find(|(id, _)| !before.contains(id))
        .map(|(_, t)| t.clone())
}

impl Actor<'_> {
    async fn window_ids(&self) -> Vec<(WinId, String)> {
        self.run(|d| d.windows())
            .await
            .map(|ws| ws.into_iter().map(|w| (w.id, w.title)).collect())
            .unwrap_or_default()
    }

    /// Run action `index` of the node `path` of application `bus`; while its call is pending,
    /// watch for a new top-level window.
    /// A call that is still blocked when one appeared has opened a modal dialog: it is
    /// reported as [`Done::OpenedDialog`] rather than waited for until the call timeout.
    pub(crate) async fn do_action_watching(
        &self,
        bus: &str,
        path: &str,
        index: usize,
    ) -> Result<Done, LinuxError> {
        let before: Vec<WinId> = self.window_ids().await.into_iter().map(|w| w.0).collect();
        let arg = (index as i32,);
        let call = self
            .bus
            .call::<_, bool>(bus, path, "org.a11y.atspi.Action", "DoAction", &arg);
        tokio::pin!(call);
        let mut seen: Option<String> = None;
        loop {
            tokio::select! {
                r = &mut call => {
                    return match r {
                        Ok(ok) => Ok(Done::Answered(ok)),
                        // blocked until the timeout: a dialog that opened meanwhile explains it
                        Err(LinuxError::Timeout { .. }) if seen.is_some() => {
                            Ok(Done::OpenedDialog(seen.unwrap_or_default()))
                        }
                        Err(e @ LinuxError::Timeout { .. }) => {
                            match new_window(&before, &self.window_ids().await) {
                                Some(t) => Ok(Done::OpenedDialog(t)),
                                None => Err(e),
                            }
                        }
                        Err(e) => Err(e),
                    };
                }
                _ = tokio::time::sleep(POLL) => {
                    if let Some(t) = seen.take() {
                        // a new window and the call still blocked a poll later: a modal dialog
                        return Ok(Done::OpenedDialog(t));
                    }
                    seen = new_window(&before, &self.window_ids().await);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_window_is_found_by_id() {
        let before = [WinId(1), WinId(2)];
        let now = [
            (WinId(1), "Main".to_string()),
            (WinId(3), "Open File".to_string()),
        ];
        assert_eq!(new_window(&before, &now).as_deref(), Some("Open File"));
        assert_eq!(new_window(&[WinId(1), WinId(3)], &now), None);
    }
}
