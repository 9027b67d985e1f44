//! Actions on controls: AT-SPI where the control supports it, XTEST otherwise; each returns
//! once the window has reacted or the settle time has passed.

mod dropdown;
pub(crate) mod modal;
mod screen;
mod search;
pub(crate) mod settle;
pub(crate) mod verify;
mod wait;

use std::time::Instant;

use ufo_core::{Button, ScrollDirection, UiAction};

use crate::a11y::bus::AppTree;
use crate::apps::web;
use crate::controls::CtlInfo;
use crate::desktop::LinuxDesktop;
use crate::display::keys::{parse_keys, KeyStep};
use crate::display::{Display, WinId};
use crate::vocab::role;
use crate::vocab::{action, iface, state, WEB_DOCUMENTS};
use crate::LinuxError;

fn centre(c: &CtlInfo) -> (i32, i32) {
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

impl LinuxDesktop {
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
    async fn dialog_owner(&self, xid: WinId) -> Option<WinId> {
        self.run(move |d| owner_of(d, xid)).await.ok().flatten()
    }

    async fn control(&self, window: &str, control_id: &str) -> Result<CtlInfo, LinuxError> {
        let known = self.controls.lock().by_id.get(control_id).cloned();
        if let Some(mut c) = known {
            // the engine's observation leaves action names to the action that needs them;
            // they are read with the check (one round trip to the application, not two)
            let needs_actions = c.actions.is_empty() && c.ifaces & iface::ACTION != 0;
            let actions = async {
                if needs_actions {
                    self.bus.actions(&c.bus, &c.path).await.unwrap_or_default()
                } else {
                    Vec::new()
                }
            };
            let (unchanged, actions) =
                tokio::join!(verify::check_unchanged(&self.bus, &c), actions);
            unchanged?;
            if needs_actions {
                c.actions = actions;
            }
            return Ok(c);
        }
        // not seen yet (or the window changed): observe once and look again
        self.observe_with(window, true).await?;
        self.controls
            .lock()
            .by_id
            .get(control_id)
            .cloned()
            .ok_or_else(|| LinuxError::NoControl {
                window: window.to_string(),
                control: control_id.to_string(),
            })
    }

    async fn do_action(&self, c: &CtlInfo, index: usize) -> Result<bool, LinuxError> {
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

    async fn grab_focus(&self, c: &CtlInfo) -> bool {
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

    async fn xclick(
        &self,
        xid: WinId,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        self.run(move |d| d.click(x, y, button, count)).await
    }

    async fn send_keys(&self, steps: Vec<KeyStep>) -> Result<(), LinuxError> {
        self.run(move |d| {
            for KeyStep::Chord { mods, key } in &steps {
                d.chord(mods, *key)?;
            }
            Ok(())
        })
        .await
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

    /// Wait, bounded, until the application has applied the keys just sent: a round trip to
    /// the application over AT-SPI (answered from its main loop, so after the events it had
    /// already read), then until the window changed and stopped changing (two unchanged
    /// looks), or half the settle time when nothing visible happens.
    async fn wait_keys_applied(&self, xid: WinId, ctl: Option<&CtlInfo>, before: Option<u64>) {
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
    async fn focus_for_typing(&self, c: &CtlInfo) -> Result<(), LinuxError> {
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

    async fn read(&self, c: &CtlInfo) -> Result<String, LinuxError> {
        if c.ifaces & iface::TEXT != 0 {
            let t = self.bus.text(&c.bus, &c.path).await?;
            // a web page's text is one object replacement character per child
            if t.contains('\u{fffc}') && WEB_DOCUMENTS.contains(c.seen.role) {
                let tree = self.control_tree(c).await?;
                return web::page_text(&self.bus, c, &tree).await;
            }
            return Ok(t);
        }
        if c.ifaces & iface::VALUE != 0 {
            return Ok(format!("{}", self.bus.value(&c.bus, &c.path).await?));
        }
        // a document without text of its own (Writer's): its visible text (office.rs)
        if let Some(t) = self.office().document_text(c).await {
            return Ok(t);
        }
        Ok(c.name.clone())
    }

    /// Perform an action and wait for the window to settle.
    pub(crate) async fn perform(
        &self,
        window: &str,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        let xid = WinId::parse(window)?;
        // spreadsheet cells (by address) and the Name Box
        if let Some(id) = control_id.filter(|id| self.is_sheet_target(id, action)) {
            // text entered into a cell: settled on X events like a click (a dialog never
            // opens from it), so the window is observed while it goes quiet and the next
            // step takes that observation (wait.rs)
            if matches!(action, UiAction::SetText { .. })
                && crate::apps::table::split_cell_id(id).is_some()
            {
                let t0 = Instant::now();
                let start = self.settle_start(xid, None).await;
                self.settling.lock().last_window = Some(xid);
                let t1 = Instant::now();
                let result = self.sheet_action(xid, window, id, action).await;
                let t2 = Instant::now();
                self.settle_after(xid, start, None).await;
                log_phases(t0, t0, t1, t2);
                return result;
            }
            let before = self.fingerprint(xid).await;
            self.settling.lock().last_window = Some(xid);
            let result = self.sheet_action(xid, window, id, action).await;
            if !matches!(action, UiAction::ReadText) {
                self.settle_window(xid, before).await;
            }
            return result;
        }
        // an action other than a cell entry may change any cell (apps/sheets.rs)
        if !matches!(action, UiAction::ReadText) {
            self.sheets.note_other_action();
        }
        let t0 = Instant::now();
        let ctl = match (control_id, action.needs_control()) {
            (Some(id), _) => Some(self.control(window, id).await?),
            (None, true) => {
                return Err(LinuxError::Unsupported(format!(
                    "{} needs a control; give a ControlLabel",
                    action.name()
                )))
            }
            (None, false) => None,
        };
        // settle on X events from the moment of the action (settle.rs); a click's own
        // press and hover animation does not hold the settle up
        let clicked = ctl
            .as_ref()
            .filter(|_| matches!(action, UiAction::Click { .. }))
            .map(|c| c.rect);
        // a control of a dialog: the pixels of the window's region. A click or keys may close
        // the dialog, and applications open the next one a while later (LibreOffice's
        // keep-format question after Save); and a dialog may still be busy after its own
        // redraws went quiet (GTK's file chooser ignores a Save pressed within ~0.1 s of its
        // name being set, while its completion loads), which waiting on the window under it
        // (often unchanged, so up to the settle time) leaves room for
        // A dialog observed on its own (the agent followed it there) is a dialog all the same:
        // it is settled on the window under it, as when observed with that window.
        let owner = self.dialog_owner(xid).await;
        let in_dialog = owner.is_some() || ctl.as_ref().is_some_and(|c| c.window != xid);
        // a scroll: a web page keeps moving after its layout looked still (smooth scrolling),
        // and the old pixel settle waits for the picture itself to stop
        let scroll = matches!(action, UiAction::Scroll { .. });
        let watched = owner.unwrap_or(xid);
        let t_start = Instant::now();
        let start = if in_dialog || scroll {
            crate::act::settle::SettleStart::Pixels(self.fingerprint(watched).await)
        } else {
            self.settle_start(watched, clicked).await
        };
        self.settling.lock().last_window = Some(xid);
        let t_action = Instant::now();
        let result = self
            .run_action(xid, window, ctl.as_ref(), action, in_dialog)
            .await?;
        let t_settle = Instant::now();
        if !matches!(action, UiAction::ReadText) {
            let probe = ctl.as_ref().map(|c| (c.bus.as_str(), c.path.as_str()));
            self.settle_after(watched, start, probe).await;
        }
        log_phases(t0, t_start, t_action, t_settle);
        // a search box's page answers the text a while after the window settled (search.rs)
        if let (Some(c), UiAction::SetText { .. } | UiAction::TypeKeys { .. }) = (&ctl, action) {
            self.wait_for_search_answer(c).await;
        }
        Ok(result)
    }

    async fn run_action(
        &self,
        xid: WinId,
        window: &str,
        ctl: Option<&CtlInfo>,
        action: &UiAction,
        in_dialog: bool,
    ) -> Result<String, LinuxError> {
        let need = || {
            ctl.ok_or_else(|| LinuxError::Unsupported(format!("{} needs a control", action.name())))
        };
        match action {
            UiAction::Click { button, double } => {
                self.click(xid, need()?, *button, *double, in_dialog).await
            }
            UiAction::ClickAt { x, y } => self.click_at(xid, window, *x, *y).await,
            UiAction::SetText { text } => self.set_text(xid, need()?, text).await,
            UiAction::TypeKeys { keys } => {
                let steps = parse_keys(keys)?;
                match ctl {
                    Some(c) => self.focus_for_typing(c).await?,
                    None => self.activate(xid).await?,
                }
                let n = steps.len();
                self.send_keys_in_order(xid, ctl, steps).await?;
                Ok(format!("typed {n} keys"))
            }
            UiAction::Scroll { direction, amount } => {
                self.scroll(xid, need()?, *direction, *amount).await
            }
            UiAction::Select { item } => {
                let c = need()?;
                self.select(xid, c, item).await
            }
            UiAction::ReadText => {
                let c = need()?;
                self.read(c).await
            }
            UiAction::Focus => self.focus(xid, need()?).await,
        }
    }

    /// `click`: a left single click at the centre of a control nothing covers (XTEST), else
    /// through the control's AT-SPI click action; other buttons and double clicks by XTEST.
    async fn click(
        &self,
        xid: WinId,
        c: &CtlInfo,
        button: Button,
        double: bool,
        in_dialog: bool,
    ) -> Result<String, LinuxError> {
        if matches!(button, Button::Left) && !double {
            // an item of a GTK4 drop-down's open list is chosen with the keyboard
            if let Some(done) = self.click_dropdown_item(xid, c).await {
                return done;
            }
            // the fastest correct input: XTEST at the centre of a control nothing
            // covers (its effect shows in milliseconds), else the AT-SPI action
            if let Some((x, y)) = self.uncovered_centre(c, in_dialog).await {
                self.settling.lock().last_input = crate::act::settle::Input::Xtest;
                self.xclick(xid, x, y, 1, 1).await?;
                return Ok(format!("clicked {:?} at {x},{y}", c.name));
            }
            self.settling.lock().last_input = crate::act::settle::Input::Atspi;
            let idx = action::click_index(&c.actions);
            if let Some(i) = idx {
                match self.do_action_watching(&c.bus, &c.path, i).await? {
                    crate::act::modal::Done::Answered(true) => {
                        return Ok(format!("clicked {:?} ({})", c.name, c.actions[i]));
                    }
                    crate::act::modal::Done::OpenedDialog(title) => {
                        return Ok(format!(
                            "clicked {:?} ({}); opened the dialog {title:?}",
                            c.name, c.actions[i]
                        ));
                    }
                    crate::act::modal::Done::Answered(false) => {}
                }
            }
        }
        let b = match button {
            Button::Left => 1,
            Button::Middle => 2,
            Button::Right => 3,
        };
        let (x, y) = centre(c);
        self.xclick(xid, x, y, b, if double { 2 } else { 1 })
            .await?;
        Ok(format!("clicked {:?} at {x},{y}", c.name))
    }

    /// `click_at`: XTEST at a point of the window (window pixels).
    async fn click_at(
        &self,
        xid: WinId,
        window: &str,
        x: i32,
        y: i32,
    ) -> Result<String, LinuxError> {
        let dw = self.xwindow(window).await?;
        let w = dw
            .area
            .ok_or_else(|| crate::display::position_unknown(&dw))?;
        if x < 0 || y < 0 || x >= w.w as i32 || y >= w.h as i32 {
            return Err(LinuxError::ActionFailed(format!(
                "click_at {x},{y} is outside the window ({}x{})",
                w.w, w.h
            )));
        }
        self.xclick(xid, w.x + x, w.y + y, 1, 1).await?;
        Ok(format!("clicked at {x},{y}"))
    }

    /// `set_text`: a number into a control with a value (a spin button) sets that value;
    /// else `EditableText.SetTextContents`, checked by reading back; else focus, select all,
    /// delete and type.
    async fn set_text(&self, xid: WinId, c: &CtlInfo, text: &str) -> Result<String, LinuxError> {
        if let Some(done) = self.set_number(c, text).await {
            return Ok(done);
        }
        if c.ifaces & iface::EDITABLE_TEXT != 0 {
            let ok: bool = self
                .bus
                .call(
                    &c.bus,
                    &c.path,
                    "org.a11y.atspi.EditableText",
                    "SetTextContents",
                    &(text,),
                )
                .await
                .unwrap_or(false);
            if ok && self.read(c).await.ok().as_deref() == Some(text) {
                return Ok(format!("set the text of {:?}", c.name));
            }
        }
        self.focus_for_typing(c).await?;
        let mut steps = vec![KeyStep::Chord {
            mods: vec![crate::display::keys::sym::CONTROL_L],
            key: 'a' as u32,
        }];
        steps.push(KeyStep::Chord {
            mods: vec![],
            key: 0xffff, // Delete
        });
        steps.extend(text.chars().map(|ch| KeyStep::Chord {
            mods: vec![],
            key: crate::display::keys::char_keysym(ch),
        }));
        self.send_keys_in_order(xid, Some(c), steps).await?;
        Ok(format!("typed the new text into {:?}", c.name))
    }

    /// A number set as the value of a control that has one, checked by reading it back.
    /// A GTK 2 spin button takes new text without changing its value (GIMP then keeps the
    /// old setting), so its value is set instead. `None`: not a number, no value, or the
    /// control did not take it (the text paths follow).
    /// Web pages keep their own path: a page is told of a new value by the events typing
    /// sends.
    async fn set_number(&self, c: &CtlInfo, text: &str) -> Option<String> {
        if c.ifaces & iface::VALUE == 0 || c.seen.role != crate::vocab::role::SPIN_BUTTON {
            return None;
        }
        let want: f64 = text.trim().parse().ok().filter(|v: &f64| v.is_finite())?;
        let (toolkit, _) = self.bus.toolkit(&c.bus).await;
        if matches!(toolkit.to_ascii_lowercase().as_str(), "chromium" | "gecko") {
            return None;
        }
        self.bus.set_value(&c.bus, &c.path, want).await.ok()?;
        let now = self.bus.value(&c.bus, &c.path).await.ok()?;
        ((now - want).abs() < 1e-9).then(|| format!("set the value of {:?} to {text}", c.name))
    }

    /// `scroll`: wheel notches at the control's centre; on a web page one at a time, until
    /// the page has moved.
    async fn scroll(
        &self,
        xid: WinId,
        c: &CtlInfo,
        direction: ScrollDirection,
        amount: u32,
    ) -> Result<String, LinuxError> {
        let (x, y) = centre(c);
        let b = match direction {
            ScrollDirection::Up => 4,
            ScrollDirection::Down => 5,
        };
        let layout = web::layout_before_scroll(&self.bus, c).await;
        let notches = amount.clamp(1, 50);
        match layout {
            Some(before) => {
                // a web page coalesces notches sent back to back into a scroll of
                // varying length: one at a time, each one delivered and synced
                self.activate(xid).await?;
                for _ in 0..notches {
                    self.run(move |d| d.click(x, y, b, 1)).await?;
                    tokio::time::sleep(crate::apps::web::NOTCH_PAUSE).await;
                }
                web::wait_scrolled(&self.bus, c, before).await;
            }
            None => self.xclick(xid, x, y, b, notches).await?,
        }
        Ok(format!("scrolled {:?} {amount}", c.name))
    }

    /// `focus`: AT-SPI `GrabFocus`, else a click at the centre.
    async fn focus(&self, xid: WinId, c: &CtlInfo) -> Result<String, LinuxError> {
        if self.grab_focus(c).await {
            Ok(format!("focused {:?}", c.name))
        } else {
            let (x, y) = centre(c);
            self.xclick(xid, x, y, 1, 1).await?;
            Ok(format!("clicked {:?} to focus it", c.name))
        }
    }

    /// Choose an entry of a list or combo box: through the Selection interface when the entry
    /// is a direct child, else by clicking (opening the combo first). The entry is matched by
    /// [`match_entry`]; when none matches, a popup this opened is closed again, so a failed
    /// `select` leaves the box as it was, and the error lists the entries.
    async fn select(&self, xid: WinId, c: &CtlInfo, item: &str) -> Result<String, LinuxError> {
        let mut tree = self.entries_tree(c).await?;
        // a GTK4 drop-down's list is chosen from with the keyboard (act/dropdown.rs)
        let dropdown = tree
            .nodes
            .get(&c.path)
            .and_then(|n| crate::apps::gtk4::dropdown_button(&tree, n))
            .map(|b| b.path.clone());
        if let Some(button) = dropdown {
            return self.select_in_dropdown(xid, c, item, &button).await;
        }
        let (mut found, mut names) = find_entry(&tree, c, item);
        let mut opened = None;
        if matches!(&found, Err(several) if several.is_empty()) {
            // a closed GTK3 combo box builds its menu lazily: open it and look again
            if let Some(i) = action::click_index(&c.actions) {
                if self.do_action(c, i).await.unwrap_or(false) {
                    opened = Some(i);
                }
                tokio::time::sleep(self.config.settle_time / 2).await;
                tree = self.entries_tree(c).await?;
                let (f, n) = find_entry(&tree, c, item);
                found = f;
                if !n.is_empty() {
                    names = n;
                }
            }
        }
        let entry = match found {
            Ok(hit) => hit,
            Err(several) => {
                // leave the box as it was: close the popup this opened (the click action
                // toggles it) and choose nothing
                if let Some(i) = opened {
                    let _ = self.do_action(c, i).await;
                    tokio::time::sleep(self.config.settle_poll * 2).await;
                }
                return Err(LinuxError::ActionFailed(select_error(
                    &c.name, item, &several, &names,
                )));
            }
        };
        if web::chosen_already(
            c.seen.role,
            web::live_states(&self.bus, &c.bus, &entry.path).await,
        ) {
            if let Some(i) = opened {
                let _ = self.do_action(c, i).await;
            }
            return Ok(format!(
                "{item:?} is the choice of {:?} already; left as it is",
                c.name
            ));
        }
        self.choose_entry(xid, c, item, &tree, entry).await
    }

    /// A step of [`Self::select`]: the tree of the control's application with the control
    /// and its entries (those the application's cache lacks, in GTK3 dialogs and GTK4, come
    /// from a walk; a GTK2 menu's items are read even while hidden).
    async fn entries_tree(&self, c: &CtlInfo) -> Result<AppTree, LinuxError> {
        let mut tree = self.control_tree(c).await?;
        if c.seen.role == role::MENU {
            self.open_menus(&c.bus, &mut tree, vec![c.path.clone()], true)
                .await;
        }
        Ok(tree)
    }

    /// A step of [`Self::select`]: choose the entry found, through the Selection interface
    /// of its parent (not in a menu), else its click action, else an XTEST click where it is
    /// drawn.
    async fn choose_entry(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
        tree: &AppTree,
        entry: Entry,
    ) -> Result<String, LinuxError> {
        let Entry {
            path,
            parent,
            index,
            ifaces,
        } = entry;
        let parent_selectable = tree
            .nodes
            .get(&parent)
            .is_some_and(|p| p.ifaces & iface::SELECTION != 0);
        // selecting a menu's child only highlights it: a menu item is activated instead
        let in_menu = tree
            .nodes
            .get(&parent)
            .is_some_and(|p| p.role == role::MENU);
        let greyed = tree
            .nodes
            .get(&path)
            .is_some_and(|n| !n.has(state::SENSITIVE) && !n.has(state::ENABLED));
        if in_menu && greyed {
            return Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is disabled (greyed out) now; nothing was chosen",
                c.name
            )));
        }
        if parent_selectable && !in_menu {
            let ok: bool = self
                .bus
                .call(
                    &c.bus,
                    &parent,
                    "org.a11y.atspi.Selection",
                    "SelectChild",
                    &(index,),
                )
                .await
                .unwrap_or(false);
            if ok {
                return Ok(format!("selected {item:?} in {:?}", c.name));
            }
        }
        // Gecko's option actions change the choice without the page's change event
        if c.seen.role == role::COMBO_BOX && in_menu && self.bus.toolkit(&c.bus).await.0 == "Gecko"
        {
            return self
                .select_by_keys(xid, c, item, tree, &parent, &path)
                .await;
        }
        if ifaces & iface::ACTION != 0 {
            let acts = self.bus.actions(&c.bus, &path).await.unwrap_or_default();
            if let Some(i) = action::click_index(&acts) {
                // a menu item may open a modal dialog whose call blocks (GTK2 file chooser)
                let ok = match self.do_action_watching(&c.bus, &path, i).await? {
                    crate::act::modal::Done::Answered(ok) => ok,
                    crate::act::modal::Done::OpenedDialog(title) => {
                        return Ok(format!(
                            "selected {item:?} in {:?}; opened the dialog {title:?}",
                            c.name
                        ));
                    }
                };
                // a web option's action may only highlight it: believe the state
                if ok
                    && (!parent_selectable
                        || in_menu
                        || web::wait_selected(&self.bus, &self.config, &c.bus, &path).await)
                {
                    web::close_popup(&self.bus, c).await;
                    return Ok(format!("selected {item:?} in {:?}", c.name));
                }
            }
        }
        // last resort: click the entry where it is drawn
        let (x, y, w, h) = self.bus.extents(&c.bus, &path).await?;
        if (x == i32::MIN || w <= 0 || h <= 0) && c.seen.role == role::COMBO_BOX && in_menu {
            return self
                .select_by_keys(xid, c, item, tree, &parent, &path)
                .await;
        }
        if x == i32::MIN || w <= 0 || h <= 0 {
            return Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is not on screen and cannot be selected",
                c.name
            )));
        }
        self.xclick(xid, x + w / 2, y + h / 2, 1, 1).await?;
        Ok(format!("clicked entry {item:?} of {:?}", c.name))
    }
}

impl LinuxDesktop {
    /// A step of [`Self::choose_entry`]: a closed web `<select>` whose options are not drawn
    /// (Gecko's: their "select" action and `SelectChild` change the choice without the
    /// page's change event) is chosen with the keyboard, as a person does: focus on the box,
    /// then arrow keys from the option chosen now to the wanted one.
    async fn select_by_keys(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
        tree: &AppTree,
        parent: &str,
        path: &str,
    ) -> Result<String, LinuxError> {
        let options = tree.kids(parent);
        let chosen = options
            .iter()
            .position(|p| tree.nodes.get(p).is_some_and(|n| n.has(state::SELECTED)));
        let not_drawn = || {
            LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is not on screen and cannot be selected",
                c.name
            ))
        };
        let target = options
            .iter()
            .position(|p| p == path)
            .ok_or_else(not_drawn)?;
        self.activate(xid).await?;
        if !self.grab_focus(c).await {
            return Err(not_drawn());
        }
        let steps = web::arrow_keys(chosen, target)
            .into_iter()
            .map(|key| KeyStep::Chord { mods: vec![], key })
            .collect();
        self.send_keys_in_order(xid, Some(c), steps).await?;
        if web::wait_selected(&self.bus, &self.config, &c.bus, path).await {
            Ok(format!(
                "selected {item:?} in {:?} with the keyboard",
                c.name
            ))
        } else {
            Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} did not become the chosen one after the arrow keys; \
                 observe the window and try again",
                c.name
            )))
        }
    }
}

/// The entry a `select` chose: its path, its parent and index there, its interfaces.
struct Entry {
    path: String,
    parent: String,
    index: i32,
    ifaces: u32,
}

/// The entry of `c` that `item` names ([`match_entry`], entries named as the observation
/// names them: "Desktop" for a places row whose own name is empty), or the names of the
/// several that match (none: empty); with the names of all entries.
fn find_entry(
    tree: &AppTree,
    c: &CtlInfo,
    item: &str,
) -> (Result<Entry, Vec<String>>, Vec<String>) {
    let nodes: Vec<&crate::a11y::bus::Node> =
        tree.subtree(&c.path, 5000).into_iter().skip(1).collect();
    let cands: Vec<(String, bool)> = nodes
        .iter()
        .map(|n| {
            (
                crate::observe::display_name(tree, n),
                crate::observe::is_entry(n.role),
            )
        })
        .collect();
    let found = match match_entry(item, &cands) {
        EntryMatch::One(i) => {
            let n = nodes[i];
            Ok(Entry {
                path: n.path.clone(),
                parent: n.parent.clone(),
                index: n.index,
                ifaces: n.ifaces,
            })
        }
        EntryMatch::Several(is) => Err(is.into_iter().map(|i| cands[i].0.clone()).collect()),
        EntryMatch::NoMatch => Err(Vec::new()),
    };
    (found, entry_names(&cands))
}

/// The most entries an error message lists.
const MAX_LISTED: usize = 30;

/// What [`match_entry`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryMatch {
    /// This candidate.
    One(usize),
    /// Several entries contain the wanted text and none equals it: these candidates.
    Several(Vec<usize>),
    /// Nothing matches.
    NoMatch,
}

/// A name reduced for a forgiving comparison: every dash (hyphen, non-breaking hyphen, figure,
/// en and em dash, horizontal bar, minus sign, small and full-width hyphen-minus) becomes `-`,
/// every run of white space (non-breaking and narrow spaces too) one space, trimmed; soft
/// hyphens and zero-width characters are dropped; letters are lower-cased.
pub(crate) fn normalise_entry(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        let c = match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}' => '-',
            '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => continue,
            c if c.is_whitespace() => {
                pending_space = !out.is_empty();
                continue;
            }
            c => c,
        };
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Match the entry a `select` names among candidates (display name, whether its role is an
/// entry of a list or menu), in tiers, entries before other nodes in each: the exact name,
/// then the name after [`normalise_entry`] (dashes, spaces, case), then the only entry whose
/// normalised name contains the wanted text. Several entries containing it are ambiguous, not
/// a guess.
pub(crate) fn match_entry(want: &str, cands: &[(String, bool)]) -> EntryMatch {
    let exact = want.trim();
    let norm = normalise_entry(want);
    if norm.is_empty() {
        return EntryMatch::NoMatch;
    }
    let tiers: [&dyn Fn(&str) -> bool; 2] = [&|name| name.trim() == exact, &|name| {
        normalise_entry(name) == norm
    }];
    for same in tiers {
        for entries_only in [true, false] {
            if let Some(i) = cands
                .iter()
                .position(|(name, entry)| (*entry || !entries_only) && same(name))
            {
                return EntryMatch::One(i);
            }
        }
    }
    let containing: Vec<usize> = cands
        .iter()
        .enumerate()
        .filter(|(_, (name, entry))| *entry && normalise_entry(name).contains(&norm))
        .map(|(i, _)| i)
        .collect();
    match containing.as_slice() {
        [] => EntryMatch::NoMatch,
        [one] => EntryMatch::One(*one),
        _ => EntryMatch::Several(containing),
    }
}

/// The distinct, non-empty names of the entries among the candidates, in order.
fn entry_names(cands: &[(String, bool)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (name, entry) in cands {
        if *entry && !name.trim().is_empty() && !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// The message of a failed `select`: what was asked, why it failed, and the entries (at most
/// [`MAX_LISTED`], with how many more).
fn select_error(control: &str, item: &str, several: &[String], entries: &[String]) -> String {
    let list = |names: &[String]| {
        let mut s = names
            .iter()
            .take(MAX_LISTED)
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > MAX_LISTED {
            s.push_str(&format!(" and {} more", names.len() - MAX_LISTED));
        }
        s
    };
    if !several.is_empty() {
        return format!(
            "{control:?} has several entries containing {item:?}: {}; select one by its whole name",
            list(several)
        );
    }
    if entries.is_empty() {
        return format!(
            "{control:?} has no entry {item:?} and lists no entries; open it (click) and observe its list, then select by a listed name"
        );
    }
    format!(
        "{control:?} has no entry {item:?} (nothing was selected); its entries: {}",
        list(entries)
    )
}

/// Log where an action's time went: finding the control (from `t0`), watching the window
/// (from `start`), the action itself (from `action`) and the settle (from `settle`, to now).
fn log_phases(t0: Instant, start: Instant, action: Instant, settle: Instant) {
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_millis() as u64;
    tracing::debug!(
        control_ms = ms(t0, start),
        watch_ms = ms(start, action),
        action_ms = ms(action, settle),
        settle_ms = ms(settle, Instant::now()),
        "action phases"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(names: &[(&str, bool)]) -> Vec<(String, bool)> {
        names.iter().map(|(n, e)| (n.to_string(), *e)).collect()
    }

    #[test]
    fn normalising_dashes_spaces_and_case() {
        assert_eq!(
            normalise_entry("  Excel 2007\u{2013}365\u{a0}(.XLSX) "),
            "excel 2007-365 (.xlsx)"
        );
        for dash in [
            '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2212}',
        ] {
            assert_eq!(normalise_entry(&format!("a{dash}b")), "a-b");
        }
        assert_eq!(normalise_entry("a \t\u{202f} b"), "a b");
        assert_eq!(normalise_entry("co\u{ad}lour"), "colour");
        assert_eq!(normalise_entry(" \u{a0} "), "");
    }

    /// Defect 8 (issue 11): a hyphen in the request matches the entry's en dash.
    #[test]
    fn select_matches_exactly_then_normalised() {
        let c = cands(&[
            ("All Formats", true),
            ("Excel 2007\u{2013}365 (.xlsx)", true),
            ("Excel 97\u{2013}2003 (.xls)", true),
        ]);
        assert_eq!(
            match_entry("Excel 2007-365 (.xlsx)", &c),
            EntryMatch::One(1)
        );
        assert_eq!(
            match_entry("excel 2007 \u{2014} 365 (.XLSX)", &c),
            EntryMatch::NoMatch
        );
        assert_eq!(match_entry("EXCEL 97-2003 (.XLS)", &c), EntryMatch::One(2));
        // the exact name wins over a normalised one, entries over other nodes
        let c = cands(&[("utf-8", false), ("UTF-8", true), ("UTF\u{2011}8", true)]);
        assert_eq!(match_entry("UTF\u{2011}8", &c), EntryMatch::One(2));
        assert_eq!(match_entry("UTF-8", &c), EntryMatch::One(1));
        assert_eq!(match_entry("utf-8", &c), EntryMatch::One(0));
        assert_eq!(match_entry("Utf-8", &c), EntryMatch::One(1));
    }

    /// Defect 8 (issue 11): a part of a name matches only when one entry contains it; an
    /// unknown or empty name matches nothing (so nothing is selected).
    #[test]
    fn select_never_guesses() {
        let c = cands(&[
            ("All Formats", true),
            ("Excel 2007\u{2013}365 (.xlsx)", true),
            ("Excel 97\u{2013}2003 (.xls)", true),
            ("Text CSV (.csv)", false),
        ]);
        assert_eq!(match_entry("csv", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("(.xlsx)", &c), EntryMatch::One(1));
        assert_eq!(match_entry("excel", &c), EntryMatch::Several(vec![1, 2]));
        assert_eq!(match_entry("Excel 2010", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("  ", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("", &[]), EntryMatch::NoMatch);
    }

    /// Defect 8 (issue 11): the error lists the entries, at most 30, and says how many more.
    #[test]
    fn a_failed_select_lists_the_entries() {
        let many: Vec<(String, bool)> = (0..45).map(|i| (format!("Entry {i}"), true)).collect();
        let names = entry_names(&many);
        let msg = select_error("Type", "Nope", &[], &names);
        assert!(
            msg.contains("\"Entry 0\"") && msg.contains("\"Entry 29\""),
            "{msg}"
        );
        assert!(
            !msg.contains("\"Entry 30\"") && msg.contains("and 15 more"),
            "{msg}"
        );
        assert!(msg.contains("nothing was selected"), "{msg}");
        let dup = cands(&[("A", true), ("A", true), ("", true), ("label", false)]);
        assert_eq!(entry_names(&dup), vec!["A".to_string()]);
        let msg = select_error("Type", "Nope", &[], &[]);
        assert!(msg.contains("open it"), "{msg}");
        let msg = select_error("Type", "ex", &["Ex 1".into(), "Ex 2".into()], &names);
        assert!(msg.contains("several") && msg.contains("\"Ex 2\""), "{msg}");
    }
}
