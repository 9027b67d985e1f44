//! Actions on a control read in the pixels (docs/sight.md, "Acting"): it has no tree node,
//! so everything happens at its rectangle: clicks at its centre, keys to the focus after a
//! click there, its text read again from the pixels.

use ufo_core::vision::merge::parse_detected_id;
use ufo_core::vision::DetectRequest;
use ufo_core::{Button, UiAction};

use super::input::centre;
use super::settle::Input;
use super::Actor;
use crate::controls::{CtlInfo, Seen};
use crate::display::keys::{char_keysym, parse_keys, KeyStep};
use crate::display::{self, position_unknown, WinId};
use crate::observe::crop;
use crate::LinuxError;

impl Actor<'_> {
    /// `action` on the detected control `c` of window `xid`.
    pub(super) async fn act_on_detected(
        &self,
        xid: WinId,
        c: &CtlInfo,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        let (x, y) = centre(c);
        match action {
            UiAction::Click { button, double } => {
                let b = match button {
                    Button::Left => 1,
                    Button::Middle => 2,
                    Button::Right => 3,
                };
                self.click_detected(xid, x, y, b, if *double { 2 } else { 1 })
                    .await?;
                Ok(format!(
                    "clicked {:?} at {x},{y} (read in the pixels)",
                    c.name
                ))
            }
            UiAction::Focus => {
                self.click_detected(xid, x, y, 1, 1).await?;
                Ok(format!("clicked {:?} at {x},{y} to focus it", c.name))
            }
            // typing goes to the focus: the click puts it in the field under the text
            UiAction::SetText { text } => {
                self.click_detected(xid, x, y, 1, 1).await?;
                let steps = text
                    .chars()
                    .map(|ch| KeyStep::Chord {
                        mods: Vec::new(),
                        key: char_keysym(ch),
                    })
                    .collect();
                self.type_to_focus(xid, steps).await?;
                Ok(format!(
                    "clicked {:?} at {x},{y} and typed {} characters",
                    c.name,
                    text.chars().count()
                ))
            }
            UiAction::TypeKeys { keys } => {
                let n = self.type_to_focus(xid, parse_keys(keys)?).await?;
                Ok(format!("typed {n} keys to the focus"))
            }
            UiAction::ReadText => self.read_detected(c).await,
            UiAction::ReadPixels => self.observer.ask_for_pixels(xid),
            UiAction::Hover => {
                self.xhover(xid, x, y).await?;
                Ok(format!(
                    "the pointer rests on {:?} at {x},{y} (read in the pixels)",
                    c.name
                ))
            }
            UiAction::Scroll { .. } | UiAction::Select { .. } | UiAction::ClickAt { .. } => {
                Err(LinuxError::Unsupported(format!(
                    "{} on {:?}: it was read in the pixels and has no accessible object; \
                     click it, or use click_at or type_keys",
                    action.name(),
                    c.name
                )))
            }
        }
    }

    /// A region of `window` named by an `ocr:x,y,w,h` id no observation listed (a display,
    /// a chart): acted on like a detected control. `None` for any other id; an error when the
    /// region is not inside the window.
    pub(super) async fn region_control(
        &self,
        window: &str,
        id: &str,
    ) -> Result<Option<CtlInfo>, LinuxError> {
        let Some(rect) = parse_detected_id(id) else {
            return Ok(None);
        };
        let w = self.window(window).await?;
        let area = w.area.ok_or_else(|| position_unknown(&w))?;
        let inside = rect.x >= area.x
            && rect.y >= area.y
            && i64::from(rect.x) + i64::from(rect.w) <= i64::from(area.x) + i64::from(area.w)
            && i64::from(rect.y) + i64::from(rect.h) <= i64::from(area.y) + i64::from(area.h);
        if !inside {
            return Err(LinuxError::ActionFailed(format!(
                "the region {id} is not inside the window ({},{} {}x{}): name a rectangle of \
                 the window in screen pixels",
                area.x, area.y, area.w, area.h
            )));
        }
        Ok(Some(CtlInfo {
            place: Default::default(),
            bus: String::new(),
            path: id.to_string(),
            name: id.to_string(),
            rect,
            actions: Vec::new(),
            ifaces: 0,
            states: 0,
            window: w.id,
            seen: Seen::default(),
            part: None,
            shown_on_hover: false,
        }))
    }

    async fn click_detected(
        &self,
        xid: WinId,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        self.settling.lock().last_input = Input::Xtest;
        self.xclick(xid, x, y, button, count).await
    }

    /// `steps` to the window's focus; how many were sent.
    async fn type_to_focus(&self, xid: WinId, steps: Vec<KeyStep>) -> Result<usize, LinuxError> {
        let n = steps.len();
        self.activate(xid).await?;
        self.send_keys_in_order(xid, None, steps).await?;
        Ok(n)
    }

    /// The text in the control's rectangle now, read from a fresh capture; its name as
    /// observed when no detector is configured.
    async fn read_detected(&self, c: &CtlInfo) -> Result<String, LinuxError> {
        let Some(sight) = &self.config.sight else {
            return Ok(c.name.clone());
        };
        let rect = c.rect;
        let img = display::run(self.display, move |d| d.capture(rect)).await?;
        let region = crop(&img, rect, rect).ok_or_else(|| {
            LinuxError::ActionFailed(format!(
                "{:?} is no longer on the screen: observe the window again",
                c.name
            ))
        })?;
        let boxes = sight
            .detector
            .detect(&region, DetectRequest::ReadText)
            .await
            .map_err(|e| LinuxError::ActionFailed(e.to_string()))?;
        Ok(boxes
            .into_iter()
            .map(|b| b.text)
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
