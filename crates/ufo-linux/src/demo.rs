//! Resolving a demonstration's presses to controls (issue 26): the control under a screen
//! point (the top window there, observed as the agent observes it, and its smallest control
//! holding the point) and the control with the focus (in the active window). The presses
//! themselves are read by `x11::demo`; what they become is decided by `ufo_core::demo`.

use ufo_core::demo::Target;
use ufo_core::{Control, Rect, WindowObservation};

use crate::desktop::LinuxDesktop;
use crate::display::WinId;
use crate::LinuxError;

/// Whether `r` holds the point.
fn holds(r: &Rect, x: i32, y: i32) -> bool {
    r.w > 0
        && r.h > 0
        && x >= r.x
        && y >= r.y
        && i64::from(x) < i64::from(r.x) + i64::from(r.w)
        && i64::from(y) < i64::from(r.y) + i64::from(r.h)
}

/// The smallest control whose rectangle holds the point.
pub(crate) fn control_at(controls: &[Control], x: i32, y: i32) -> Option<&Control> {
    controls
        .iter()
        .filter(|c| holds(&c.rect, x, y))
        .min_by_key(|c| u64::from(c.rect.w) * u64::from(c.rect.h))
}

fn target(obs: &WindowObservation, control: Option<&Control>) -> Target {
    match control {
        Some(c) => Target {
            window: obs.window.title.clone(),
            name: c.name.clone(),
            role: c.role.clone(),
        },
        None => Target {
            window: obs.window.title.clone(),
            name: String::new(),
            role: "window".into(),
        },
    }
}

impl LinuxDesktop {
    /// The client window whose frame is on top at a screen point.
    async fn window_at(&self, x: i32, y: i32) -> Result<Option<String>, LinuxError> {
        let windows = self.list_windows().await?;
        let ids: Vec<WinId> = windows
            .iter()
            .filter_map(|w| WinId::parse(w.id.as_str()).ok())
            .collect();
        let found = self
            .run(move |d| {
                let Some(top) = d.top_at(x, y)? else {
                    return Ok(None);
                };
                for id in ids {
                    if id == top || d.top_of(id)? == top {
                        return Ok(Some(id));
                    }
                }
                Ok(None)
            })
            .await?;
        Ok(found.map(|id| id.to_string()))
    }

    /// The control under a screen point: window, name and role (role `window` when the point
    /// is on no control of it); `None` when no application window is there.
    pub async fn control_at_point(&self, x: i32, y: i32) -> Result<Option<Target>, LinuxError> {
        let Some(id) = self.window_at(x, y).await? else {
            return Ok(None);
        };
        let obs = self.observe_window(&id).await?;
        Ok(Some(target(&obs, control_at(&obs.controls, x, y))))
    }

    /// The control with the keyboard focus in the active window (role `window` when none of
    /// its controls says it has the focus); `None` without an active window.
    pub async fn focused_control(&self) -> Result<Option<Target>, LinuxError> {
        let Some(active) = self.run(|d| d.active_window()).await? else {
            return Ok(None);
        };
        let obs = self.observe_window(&active.to_string()).await?;
        let focused = obs.controls.iter().find(|c| c.states.focused);
        Ok(Some(target(&obs, focused)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, rect: Rect) -> Control {
        Control {
            source: Default::default(),
            id: name.into(),
            role: "button".into(),
            name: name.into(),
            value: None,
            rect,
            enabled: true,
            states: Default::default(),
        }
    }

    #[test]
    fn the_smallest_control_holding_the_point_is_hit() {
        let controls = [
            c("panel", Rect::new(0, 0, 100, 100)),
            c("7", Rect::new(10, 10, 20, 20)),
            c("empty", Rect::new(10, 10, 0, 0)),
        ];
        assert_eq!(
            control_at(&controls, 15, 15).map(|c| c.name.as_str()),
            Some("7")
        );
        assert_eq!(
            control_at(&controls, 50, 50).map(|c| c.name.as_str()),
            Some("panel")
        );
        // the right and bottom edges are outside
        assert_eq!(
            control_at(&controls, 30, 15).map(|c| c.name.as_str()),
            Some("panel")
        );
        assert!(control_at(&controls, 100, 5).is_none());
    }
}
