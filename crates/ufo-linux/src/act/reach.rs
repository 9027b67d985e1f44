//! Reaching a control listed out of view (issue 46): a web page's control outside its visible
//! part is listed with its place (observe/fields.rs); before an action on it, it is scrolled
//! into view through AT-SPI's `Component.ScrollTo` (Chromium and Gecko offer it), and the
//! action waits, bounded, until the page shows it (the SHOWING state back), its rectangle read
//! again. A page that does not bring it into view is an error that says what to do.

use std::time::{Duration, Instant};

use ufo_core::{Place, Rect, UiAction};

use super::Actor;
use crate::controls::CtlInfo;
use crate::vocab::state;
use crate::LinuxError;

/// `ScrollTo`'s type "anywhere": the least scroll that brings the node into view.
const SCROLL_ANYWHERE: u32 = 6;
/// Longest wait for the page to show the control after `ScrollTo`.
const REACH_BOUND: Duration = Duration::from_secs(2);
/// Interval between two looks at it.
const REACH_POLL: Duration = Duration::from_millis(50);

impl Actor<'_> {
    /// The control an action goes to: a control listed out of view scrolled into view first
    /// (reading its text needs no scroll), then the part of a composite that takes text (a
    /// combo box's entry: observe/composite.rs).
    pub(super) async fn reached(
        &self,
        ctl: Option<CtlInfo>,
        action: &UiAction,
    ) -> Result<Option<CtlInfo>, LinuxError> {
        let mut ctl = ctl;
        if let Some(c) = ctl
            .as_mut()
            .filter(|_| !matches!(action, UiAction::ReadText))
        {
            self.bring_into_view(c).await?;
        }
        Ok(ctl.map(|c| c.for_action(action).clone()))
    }

    /// Scroll `c` into view when the observation listed it out of view, and read its
    /// rectangle again; an error when the page does not show it.
    pub(super) async fn bring_into_view(&self, c: &mut CtlInfo) -> Result<(), LinuxError> {
        if c.place.is_in_view() {
            return Ok(());
        }
        let start = Instant::now();
        let scrolled: Result<bool, LinuxError> = self
            .bus
            .call(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Component",
                "ScrollTo",
                &(SCROLL_ANYWHERE,),
            )
            .await;
        let answered = match scrolled {
            Ok(ok) => ok,
            Err(e) => return Err(not_reached(c, &format!("ScrollTo failed: {e}"))),
        };
        while start.elapsed() < REACH_BOUND {
            let shown = self
                .bus
                .live_states(&c.bus, &c.path)
                .await
                .is_some_and(|s| s & state::SHOWING != 0);
            if shown {
                if let Ok((x, y, w, h)) = self.bus.extents(&c.bus, &c.path).await {
                    if w > 1 && h > 1 {
                        c.rect = Rect::new(x, y, w as u32, h as u32);
                        c.place = Place::InView;
                        tracing::debug!(
                            path = %c.path,
                            ms = start.elapsed().as_millis() as u64,
                            "scrolled into view"
                        );
                        return Ok(());
                    }
                }
            }
            tokio::time::sleep(REACH_POLL).await;
        }
        Err(not_reached(
            c,
            &format!(
                "ScrollTo answered {answered}, and the page did not show it within {} s",
                REACH_BOUND.as_secs()
            ),
        ))
    }
}

/// The error for a control that could not be scrolled into view.
fn not_reached(c: &CtlInfo, why: &str) -> LinuxError {
    let place = c.place.words().unwrap_or("out of view");
    LinuxError::ActionFailed(format!(
        "{:?} is listed {place}, and could not be scrolled into view ({why}); scroll the page \
         toward it and observe again",
        c.name
    ))
}
