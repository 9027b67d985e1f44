//! How an action's input reaches the application: an XTEST click where nothing covers the
//! control (else its AT-SPI action), keys in order (each batch applied before the next), the
//! focus for typing, typed text waited for in its field, and the window a dialog belongs to.

use std::time::{Duration, Instant};

use super::Actor;
use crate::controls::CtlInfo;
use crate::display::keys::KeyStep;
use crate::display::{Display, WinId};
use crate::vocab::{iface, role, state};
use crate::LinuxError;
use ufo_core::Rect;

/// Most children of a text document asked whether they hold the focus before typing into it
/// (LibreOffice exports the paragraphs on screen: a few dozen).
const FOCUS_KIDS: i32 = 64;

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

/// Whether `role` is a menu entry that runs a command when pressed (a submenu's `menu` opens
/// rather than runs, so its popup is meant to stay).
pub(super) fn is_menu_command(role: u32) -> bool {
    use crate::vocab::role;
    matches!(
        role,
        role::MENU_ITEM | role::CHECK_MENU_ITEM | role::RADIO_MENU_ITEM
    )
}

/// Whether an entry's actions say it opens a submenu rather than runs a command: Qt gives a
/// submenu's entry ("Create New" in Dolphin's menus) the role of a menu item and the one
/// action `ShowMenu`. Its submenu is meant to stay open (it was closed with Escape).
pub(super) fn opens_submenu(actions: &[String]) -> bool {
    actions.iter().any(|a| a.eq_ignore_ascii_case("showmenu"))
        && !actions.iter().any(|a| crate::vocab::action::is_click(a))
}

/// Whether a menu entry of role `role` at `item` (screen pixels), in a window of process
/// `app_pid`, lies on `hit`, an open popup menu of the same application: a window of that
/// process (its `_NET_WM_PID` or X-Resource client pid) that is no managed window (`clients`:
/// the window manager's client list; a menu popup is override-redirect), holding the whole
/// entry. Then an XTEST click reaches the entry as a person's would, and the toolkit closes
/// its menu (Qt leaves it open after the entry's AT-SPI action).
pub(super) fn on_own_popup(
    role: u32,
    item: Rect,
    app_pid: Option<u32>,
    hit: &crate::display::DisplayWindow,
    clients: &[WinId],
) -> bool {
    use crate::vocab::role;
    let menu_entry = is_menu_command(role) || role == role::MENU;
    let holds = hit.area.is_some_and(|a| {
        item.x >= a.x
            && item.y >= a.y
            && item.x + item.w as i32 <= a.x + a.w as i32
            && item.y + item.h as i32 <= a.y + a.h as i32
    });
    menu_entry && app_pid.is_some() && hit.pid == app_pid && !clients.contains(&hit.id) && holds
}

/// The longest wait for a menu to close after its entry was pressed.
const MENU_CLOSE_WAIT: Duration = Duration::from_millis(600);

/// The most Escape presses sent to close menus left open (a submenu three levels down).
const MENU_ESCAPES: usize = 4;

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
    /// every control of a dialog (`in_dialog`, see `perform`) and a control shown only under
    /// the pointer.
    pub(crate) async fn uncovered_centre(
        &self,
        c: &crate::controls::CtlInfo,
        in_dialog: bool,
    ) -> Option<(i32, i32)> {
        use crate::vocab::{iface, state};
        if !self.config.xtest_clicks
            || in_dialog
            // (shown only under the pointer: its AT-SPI action, controls.rs)
            || c.shown_on_hover
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
        let (role, rect) = (c.seen.role, c.rect);
        self.run(move |d| {
            let screen = d.screen();
            let on_screen = x >= 0 && y >= 0 && (x as u32) < screen.w && (y as u32) < screen.h;
            let own = d.window(target)?;
            let inside = own.as_ref().and_then(|w| w.area).is_some_and(|w| {
                x >= w.x && y >= w.y && x < w.x + w.w as i32 && y < w.y + w.h as i32
            });
            let (hit, top) = (d.top_at(x, y)?, d.top_of(target)?);
            tracing::debug!(on_screen, inside, ?hit, %top, "hit test");
            if on_screen && inside && hit == Some(top) {
                return Ok(true);
            }
            // an entry of the application's open popup menu (outside its window, or over it)
            Ok(on_screen && Self::popup_under(d, role, rect, own.and_then(|w| w.pid), hit)?)
        })
        .await
        .ok()
        .filter(|ok| *ok)
        .map(|_| (x, y))
    }

    /// Whether the window `hit` on top at a menu entry's centre is an open popup menu of the
    /// entry's application (see [`on_own_popup`]).
    fn popup_under(
        d: &dyn Display,
        role: u32,
        item: Rect,
        app_pid: Option<u32>,
        hit: Option<WinId>,
    ) -> Result<bool, LinuxError> {
        let menu_entry = is_menu_command(role) || role == crate::vocab::role::MENU;
        let Some(hit) = hit.filter(|_| menu_entry && app_pid.is_some()) else {
            return Ok(false);
        };
        let Some(popup) = d.window(hit)? else {
            return Ok(false);
        };
        let clients: Vec<WinId> = d.windows()?.iter().map(|w| w.id).collect();
        Ok(on_own_popup(role, item, app_pid, &popup, &clients))
    }

    /// After a menu entry was pressed: its application's popup menu, when one is still open
    /// at the entry, is closed with Escape (Qt leaves it open after an entry's AT-SPI action,
    /// and the next keys would go into it). Returns what was done, for the step's result;
    /// `None` when the menu closed by itself.
    pub(super) async fn close_menu_left_open(&self, c: &CtlInfo) -> Option<String> {
        if !is_menu_command(c.seen.role) || opens_submenu(&c.actions) {
            return None;
        }
        let (x, y) = centre(c);
        let (role, rect, target) = (c.seen.role, c.rect, c.window);
        let open = || {
            self.run(move |d| {
                let pid = d.window(target)?.and_then(|w| w.pid);
                Self::popup_under(d, role, rect, pid, d.top_at(x, y)?)
            })
        };
        let deadline = Instant::now() + MENU_CLOSE_WAIT;
        while open().await.unwrap_or(false) {
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !open().await.unwrap_or(false) {
            return None;
        }
        for pressed in 1..=MENU_ESCAPES {
            let escape = vec![KeyStep::Chord {
                mods: Vec::new(),
                key: crate::display::keys::sym::ESCAPE,
            }];
            if self.run(move |d| d.keys(&escape)).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(80)).await;
            if !open().await.unwrap_or(true) {
                return Some(format!(
                    "its menu stayed open and was closed with Escape ({pressed} press{})",
                    if pressed == 1 { "" } else { "es" }
                ));
            }
        }
        Some(format!(
            "its menu is still open after {MENU_ESCAPES} Escape presses: the next keys may go into it"
        ))
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
            let _ = self.bus.live_states(&c.bus, &c.path).await;
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

    /// Whether the focus is on one of the first [`FOCUS_KIDS`] children of `c`, a text
    /// document: LibreOffice's keeps it on the paragraph that holds the caret, the document
    /// itself unfocused, and focusing the document again put the caret at its start (a later
    /// step's line went before the earlier ones). Keys typed there go on where the caret is,
    /// as a person's do. Children are asked one by one (a sheet's `GetChildren` would list
    /// every cell), and only a text document's.
    async fn focus_within(&self, c: &CtlInfo) -> bool {
        if c.seen.role != role::DOCUMENT_TEXT {
            return false;
        }
        let count = self.bus.child_count(&c.bus, &c.path).await.unwrap_or(0);
        for i in 0..count.clamp(0, FOCUS_KIDS) {
            let Ok((bus, kid)) = self
                .bus
                .call::<_, (String, zbus::zvariant::OwnedObjectPath)>(
                    &c.bus,
                    &c.path,
                    "org.a11y.atspi.Accessible",
                    "GetChildAtIndex",
                    &(i,),
                )
                .await
            else {
                return false;
            };
            let states = self.bus.live_states(&bus, kid.as_str()).await;
            if states.is_some_and(|s| s & state::FOCUSED != 0) {
                return true;
            }
        }
        false
    }

    /// Whether `c` has the focus now, asked of the application: the observation's states
    /// may be old (a model thinks for seconds, meanwhile a restored tab, a dialog or a
    /// person can take the focus, and keys sent then go there). The observation's when the
    /// application does not answer.
    async fn focused_now(&self, c: &CtlInfo) -> bool {
        let states = self.bus.live_states(&c.bus, &c.path).await;
        states.unwrap_or(c.states) & state::FOCUSED != 0
    }

    /// Focus a control for typing: AT-SPI focus, else a click on it; when the focus moved,
    /// wait until the application has taken it, so the first key goes to the control.
    pub(super) async fn focus_for_typing(&self, c: &CtlInfo) -> Result<(), LinuxError> {
        // a control of a dialog attached to the window: the keys go to the dialog (raising
        // the main window would take the focus from a non-modal dialog)
        self.activate(c.window).await?;
        if self.focused_now(c).await || self.focus_within(c).await {
            return Ok(());
        }
        if !self.grab_focus(c).await {
            let (x, y) = centre(c);
            self.run(move |d| d.click(x, y, 1, 1)).await?;
        }
        let _ = self.bus.live_states(&c.bus, &c.path).await;
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

#[cfg(test)]
mod popup_tests {
    use super::*;
    use crate::display::DisplayWindow;
    use crate::vocab::role;

    fn window(id: u32, pid: Option<u32>, area: Rect) -> DisplayWindow {
        DisplayWindow {
            id: WinId(id),
            title: String::new(),
            pid,
            app_id: String::new(),
            area: Some(area),
            transient_for: None,
            dialog: false,
            wm_modal: false,
        }
    }

    /// Issue 46: an entry of the application's own open popup menu (Qt's File menu over and
    /// beside FeatherPad's window) is clicked with XTEST; anything else on top is not.
    #[test]
    fn an_entry_on_its_own_popup_is_clicked_and_nothing_else() {
        let popup = window(7, Some(42), Rect::new(300, 300, 200, 400));
        let item = Rect::new(310, 320, 180, 24);
        let clients = [WinId(1), WinId(2)];
        assert!(on_own_popup(
            role::MENU_ITEM,
            item,
            Some(42),
            &popup,
            &clients
        ));
        assert!(on_own_popup(
            role::CHECK_MENU_ITEM,
            item,
            Some(42),
            &popup,
            &clients
        ));
        assert!(on_own_popup(role::MENU, item, Some(42), &popup, &clients));
        // another program's popup, or one whose process is unknown
        assert!(!on_own_popup(
            role::MENU_ITEM,
            item,
            Some(43),
            &popup,
            &clients
        ));
        assert!(!on_own_popup(role::MENU_ITEM, item, None, &popup, &clients));
        // a managed window of the same application (a second editor window) covering it
        let managed = [WinId(1), WinId(7)];
        assert!(!on_own_popup(
            role::MENU_ITEM,
            item,
            Some(42),
            &popup,
            &managed
        ));
        // not a menu entry (a button under the popup)
        assert!(!on_own_popup(
            role::PUSH_BUTTON,
            item,
            Some(42),
            &popup,
            &clients
        ));
        // the entry reaches past the popup: something else covers part of it
        let past = Rect::new(310, 690, 180, 24);
        assert!(!on_own_popup(
            role::MENU_ITEM,
            past,
            Some(42),
            &popup,
            &clients
        ));
    }

    #[test]
    fn only_entries_that_run_a_command_close_their_menu() {
        assert!(is_menu_command(role::MENU_ITEM));
        assert!(is_menu_command(role::RADIO_MENU_ITEM));
        assert!(!is_menu_command(role::MENU));
        assert!(!is_menu_command(role::PUSH_BUTTON));
        let names = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(opens_submenu(&names(&["ShowMenu"])));
        assert!(!opens_submenu(&names(&["Press"])));
        assert!(!opens_submenu(&names(&["Press", "ShowMenu"])));
        assert!(!opens_submenu(&[]));
    }
}
