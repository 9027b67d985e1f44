//! How an action's input reaches the application: an XTEST click where nothing covers the
//! control (else its AT-SPI action), keys in order (each batch applied before the next), the
//! focus for typing, typed text waited for in its field, and the window a dialog belongs to.

use std::time::{Duration, Instant};

use super::Actor;
use crate::controls::CtlInfo;
use crate::display::keys::KeyStep;
use crate::display::{Display, WinId};
use crate::vocab::{iface, state};
use crate::LinuxError;

pub(super) fn centre(c: &CtlInfo) -> (i32, i32) {
    (
        c.rect.x + c.rect.w as i32 / 2,
        c.rect.y + c.rect.h as i32 / 2,
    )
}

/// The viewable window `xid` is transient for (the window a dialog belongs to), if any.
fn owner_of(d: &dyn Display, xid: WinId) -> Result<Option<WinId>, LinuxError> {
    Ok(match d.window(xid)?.and_then(|w| w.transient_for) {
        Some(o) if o != xid => d.window(o)?.map(|w| w.id),
        _ => None,
    })
}

/// The longest [`Actor::wait_text_typed`] waits for typed text to arrive in its field.
const TYPED_WAIT: Duration = Duration::from_secs(5);

/// How far a field is from showing the text typed into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typing {
    /// It shows the whole text.
    Done,
    /// It shows a beginning of it: keys are still arriving.
    Arriving,
    /// It shows something else (masked, formatted, completed): nothing to wait for.
    Elsewhere,
}

/// Where typing `want` into a field that now shows `now` stands.
fn typing(now: &str, want: &str) -> Typing {
    if now == want {
        Typing::Done
    } else if want.starts_with(now) {
        Typing::Arriving
    } else {
        Typing::Elsewhere
    }
}

impl Actor<'_> {
    /// The centre of a control when an XTEST click there reaches it: the control is showing
    /// and visible with a sensible size, its centre is on the screen and inside its window,
    /// and the X hit test at that point finds its window on top (no other window, dialog or
    /// menu covers it). `None` sends the click through the control's AT-SPI action, as for
    /// every control of a dialog (`in_dialog`, see `perform`).
    pub(crate) async fn uncovered_centre(
        &self,
        c: &crate::controls::CtlInfo,
        in_dialog: bool,
    ) -> Option<(i32, i32)> {
        use crate::vocab::{iface, state};
        if !self.config.xtest_clicks
            || in_dialog
            || c.ifaces & iface::COMPONENT == 0
            // (the application's cache leaves SHOWING out; the hit test below stands for it)
            || c.states & state::VISIBLE == 0
            || c.rect.w < 2
            || c.rect.h < 2
        {
            return None;
        }
        let (x, y) = (
            c.rect.x + c.rect.w as i32 / 2,
            c.rect.y + c.rect.h as i32 / 2,
        );
        let target = c.window;
        self.run(move |d| {
            let screen = d.screen();
            let on_screen = x >= 0 && y >= 0 && (x as u32) < screen.w && (y as u32) < screen.h;
            let inside = d.window(target)?.and_then(|w| w.area).is_some_and(|w| {
                x >= w.x && y >= w.y && x < w.x + w.w as i32 && y < w.y + w.h as i32
            });
            let (hit, top) = (d.top_at(x, y)?, d.top_of(target)?);
            tracing::debug!(on_screen, inside, ?hit, %top, "hit test");
            Ok(on_screen && inside && hit == Some(top))
        })
        .await
        .ok()
        .filter(|ok| *ok)
        .map(|_| (x, y))
    }

    /// The window `xid` is a dialog of: the viewable window it is transient for, if any.
    pub(super) async fn dialog_owner(&self, xid: WinId) -> Option<WinId> {
        self.run(move |d| owner_of(d, xid)).await.ok().flatten()
    }

    pub(super) async fn do_action(&self, c: &CtlInfo, index: usize) -> Result<bool, LinuxError> {
        self.bus
            .call(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Action",
                "DoAction",
                &(index as i32,),
            )
            .await
    }

    pub(super) async fn grab_focus(&self, c: &CtlInfo) -> bool {
        if c.ifaces & iface::COMPONENT == 0 {
            return false;
        }
        self.bus
            .call::<_, bool>(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Component",
                "GrabFocus",
                &(),
            )
            .await
            .unwrap_or(false)
    }

    pub(super) async fn xclick(
        &self,
        xid: WinId,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        self.observer.pixel_trail.lock().pointed(x, y);
        self.run(move |d| d.click(x, y, button, count)).await
    }

    /// Rest the pointer at screen point (`x`, `y`) of window `xid` (raised first), pressing
    /// nothing: `hover`.
    pub(super) async fn xhover(&self, xid: WinId, x: i32, y: i32) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        self.settling.lock().last_input = super::settle::Input::Xtest;
        self.observer.pixel_trail.lock().pointed(x, y);
        self.run(move |d| d.hover(x, y)).await
    }

    pub(super) async fn send_keys(&self, steps: Vec<KeyStep>) -> Result<(), LinuxError> {
        self.run(move |d| d.keys(&steps)).await
    }

    /// Type a key sequence strictly in the order written: the batches of
    /// [`crate::display::keys::batches`] one after another (every command chord alone), each sent
    /// through XTEST and synced with the X server, then waited on until the application has
    /// applied it before the next batch goes out.
    pub(crate) async fn send_keys_in_order(
        &self,
        xid: WinId,
        ctl: Option<&CtlInfo>,
        steps: Vec<KeyStep>,
    ) -> Result<(), LinuxError> {
        let batches: Vec<Vec<KeyStep>> = crate::display::keys::batches(&steps)
            .into_iter()
            .map(<[KeyStep]>::to_vec)
            .collect();
        let last = batches.len().saturating_sub(1);
        for (i, batch) in batches.into_iter().enumerate() {
            let before = if i < last {
                self.fingerprint(xid).await
            } else {
                None
            };
            self.send_keys(batch).await?;
            if i < last {
                self.wait_keys_applied(xid, ctl, before).await;
            }
        }
        Ok(())
    }

    /// Wait, bounded, until a field shows the whole `text` just typed into it: typed keys go
    /// through the display's input queue, while the next action may reach the application
    /// over AT-SPI (a button's press) and overtake the keys it has not read yet (a busy
    /// browser then sent a form with the name half typed). Waits while the field shows a
    /// growing prefix of `text`, at most [`TYPED_WAIT`], and gives up once it stalls for the
    /// settle time; a field that shows something else (masked, formatted) is left at once.
    /// `Some(shown)`: the field still shows only the prefix `shown`.
    pub(super) async fn wait_text_typed(&self, c: &CtlInfo, text: &str) -> Option<String> {
        let deadline = Instant::now() + TYPED_WAIT;
        let mut last = String::new();
        let mut since = Instant::now();
        loop {
            let now = self.read(c).await.ok()?;
            match typing(&now, text) {
                Typing::Done | Typing::Elsewhere => return None,
                Typing::Arriving => {}
            }
            if now != last {
                (last, since) = (now, Instant::now());
            }
            if Instant::now() >= deadline || since.elapsed() >= self.config.settle_time {
                return Some(last);
            }
            tokio::time::sleep(self.config.settle_poll * 2).await;
        }
    }

    /// Wait, bounded, until the application has applied the keys just sent: a round trip to
    /// the application over AT-SPI (answered from its main loop, so after the events it had
    /// already read), then until the window changed and stopped changing (two unchanged
    /// looks), or half the settle time when nothing visible happens.
    pub(super) async fn wait_keys_applied(
        &self,
        xid: WinId,
        ctl: Option<&CtlInfo>,
        before: Option<u64>,
    ) {
        if let Some(c) = ctl {
            let _ = self
                .bus
                .call::<_, Vec<u32>>(
                    &c.bus,
                    &c.path,
                    "org.a11y.atspi.Accessible",
                    "GetState",
                    &(),
                )
                .await;
        }
        let Some(mut last) = before else {
            tokio::time::sleep(self.config.settle_poll * 2).await;
            return;
        };
        let deadline = std::time::Instant::now() + self.config.settle_time / 2;
        let mut changed = false;
        let mut stable = 0;
        while std::time::Instant::now() < deadline {
            tokio::time::sleep(self.config.settle_poll).await;
            let Some(now) = self.fingerprint(xid).await else {
                return;
            };
            if now != last {
                changed = true;
                stable = 0;
                last = now;
            } else if changed {
                stable += 1;
                if stable >= 2 {
                    return;
                }
            }
        }
    }

    /// Focus a control for typing: AT-SPI focus, else a click on it; when the focus moved,
    /// wait until the application has taken it, so the first key goes to the control.
    pub(super) async fn focus_for_typing(&self, c: &CtlInfo) -> Result<(), LinuxError> {
        // a control of a dialog attached to the window: the keys go to the dialog (raising
        // the main window would take the focus from a non-modal dialog)
        self.activate(c.window).await?;
        if c.states & state::FOCUSED != 0 {
            return Ok(());
        }
        if !self.grab_focus(c).await {
            let (x, y) = centre(c);
            self.run(move |d| d.click(x, y, 1, 1)).await?;
        }
        let _ = self
            .bus
            .call::<_, Vec<u32>>(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Accessible",
                "GetState",
                &(),
            )
            .await;
        Ok(())
    }
}

#[cfg(test)]
mod typing_tests {
    use super::*;

    #[test]
    fn typed_text_is_waited_for_only_while_a_beginning_of_it_shows() {
        assert_eq!(typing("Barbara Liskov", "Barbara Liskov"), Typing::Done);
        assert_eq!(typing("Bar", "Barbara Liskov"), Typing::Arriving);
        assert_eq!(typing("", "Barbara Liskov"), Typing::Arriving);
        assert_eq!(typing("••••", "pass"), Typing::Elsewhere);
        assert_eq!(
            typing("Barbara Liskov!", "Barbara Liskov"),
            Typing::Elsewhere
        );
        assert_eq!(typing("", ""), Typing::Done);
    }
}
