//! Performing an action on a window: the control found (and checked to be the one the model
//! saw), the window watched, the action sent the fastest correct way, then the settle; a
//! search box's page and a clicked slide's shapes waited for.

use std::time::Instant;

use ufo_core::{Button, ScrollDirection, UiAction};

use super::input::centre;
use super::modal::Done;
use super::settle::{Input, SettleStart};
use super::{verify, Actor};
use crate::apps::web;
use crate::controls::CtlInfo;
use crate::display::keys::{char_keysym, parse_keys, sym, KeyStep};
use crate::display::{position_unknown, WinId};
use crate::observe::is_detected;
use crate::observe::loading::may_navigate;
use crate::vocab::{action, iface, role, WEB_DOCUMENTS};
use crate::LinuxError;

impl Actor<'_> {
    /// An action on window `window_id` for the `Desktop` port: performed and settled
    /// ([`Self::perform`]); the observation made while the last action settled is dropped
    /// first (it is of the screen before this one), and a navigation the action may have
    /// started in a browser is left for the next observation to wait for (`observe::loading`).
    pub(crate) async fn act(
        &self,
        window_id: &str,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        self.ahead.lock().take();
        // the window's pixels, whatever control is named: nothing is done on the screen
        if matches!(action, UiAction::ReadPixels) {
            return self.observer.ask_for_pixels(WinId::parse(window_id)?);
        }
        // the window's capture now is the one its next observation compares with
        if !matches!(action, UiAction::ReadText) {
            self.observer
                .pixel_trail
                .lock()
                .acted(WinId::parse(window_id)?);
        }
        let role = control_id.and_then(|c| self.controls.lock().by_id.get(c).map(|i| i.seen.role));
        let docs_before = self.observer.docs_seen(window_id);
        let done = self.perform(window_id, control_id, action).await?;
        let navigates = may_navigate(action, role);
        if let Some(xid) = self.observer.navigation_window(window_id, navigates).await {
            // (the navigation cannot start before the browser has read the keys or the click)
            let since = self
                .settler
                .input_handled(xid)
                .await
                .unwrap_or_else(Instant::now);
            self.observer.expect_navigation(xid, since, docs_before);
        }
        Ok(done)
    }

    /// A step of [`Self::perform`]: an action on a spreadsheet's cell, or on the Name Box
    /// (`cells.rs`), and its settle. Text entered into a cell is settled on the display's
    /// events like a click (a dialog never opens from it), so the window is observed while
    /// it goes quiet and the next step takes that observation (wait.rs); other actions
    /// settle on the window's pixels.
    async fn perform_on_sheet(
        &self,
        xid: WinId,
        window: &str,
        id: &str,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        if matches!(action, UiAction::SetText { .. })
            && crate::apps::table::split_cell_id(id).is_some()
        {
            let t0 = Instant::now();
            let start = self.settler.settle_start(xid, None).await;
            self.settling.lock().last_window = Some(xid);
            let t1 = Instant::now();
            let result = self.sheet_action(xid, window, id, action).await;
            let t2 = Instant::now();
            let settled = self.settler.settle_after(xid, start, None).await;
            *self.ahead.lock() = settled.seen;
            log_phases(t0, t0, t1, t2);
            return result;
        }
        let before = self.fingerprint(xid).await;
        self.settling.lock().last_window = Some(xid);
        let result = self.sheet_action(xid, window, id, action).await;
        if !matches!(action, UiAction::ReadText) {
            self.settler.settle_window(xid, before).await;
        }
        result
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
            return self.perform_on_sheet(xid, window, id, action).await;
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
        let ctl = self.reached(ctl, action).await?;
        // settle on X events from the moment of the action (settle.rs); a click's own
        // press and hover animation does not hold the settle up, nor a hovered control's
        // highlight (the settle waits for what the hover shows elsewhere: a tooltip)
        let clicked = ctl
            .as_ref()
            .filter(|_| matches!(action, UiAction::Click { .. } | UiAction::Hover))
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
            SettleStart::Pixels(self.fingerprint(watched).await)
        } else {
            self.settler.settle_start(watched, clicked).await
        };
        self.settling.lock().last_window = Some(xid);
        // a slide of Impress's slides panel, known before the click rebuilds the panel
        let slide = match (&ctl, action) {
            (Some(c), UiAction::Click { .. }) if !is_detected(c) => self.slide_click(c).await,
            _ => None,
        };
        let t_action = Instant::now();
        let result = self
            .run_action(xid, window, ctl.as_ref(), action, in_dialog)
            .await?;
        let t_settle = Instant::now();
        if !matches!(action, UiAction::ReadText) {
            let probe = ctl
                .as_ref()
                .filter(|c| !is_detected(c))
                .map(|c| (c.bus.as_str(), c.path.as_str()));
            let settled = self.settler.settle_after(watched, start, probe).await;
            *self.ahead.lock() = settled.seen;
        }
        log_phases(t0, t_start, t_action, t_settle);
        self.wait_for_late_answers(ctl.as_ref(), action, slide)
            .await;
        Ok(result)
    }

    /// A step of [`Self::perform`], after the settle: what an application shows a while after
    /// its window settled is waited for, and the observation made while the action settled
    /// (of the screen before it) is not handed out: a search box's page answering the text
    /// (search.rs), a clicked slide's shapes in Impress (slides.rs).
    async fn wait_for_late_answers(
        &self,
        ctl: Option<&CtlInfo>,
        action: &UiAction,
        slide: Option<super::slides::SlideClick>,
    ) {
        if let (Some(c), UiAction::SetText { .. } | UiAction::TypeKeys { .. }) = (ctl, action) {
            if !is_detected(c) && self.wait_for_search_answer(c).await {
                self.ahead.lock().take();
            }
        }
        if let Some(s) = slide {
            self.wait_for_slide(&s).await;
            self.ahead.lock().take();
        }
    }

    pub(super) async fn run_action(
        &self,
        xid: WinId,
        window: &str,
        ctl: Option<&CtlInfo>,
        action: &UiAction,
        in_dialog: bool,
    ) -> Result<String, LinuxError> {
        if let Some(c) = ctl.filter(|c| is_detected(c)) {
            return self.act_on_detected(xid, c, action).await;
        }
        let need = || {
            ctl.ok_or_else(|| LinuxError::Unsupported(format!("{} needs a control", action.name())))
        };
        match action {
            UiAction::Click { button, double } => {
                self.click(xid, need()?, *button, *double, in_dialog).await
            }
            UiAction::ClickAt { x, y } => self.click_at(xid, window, *x, *y).await,
            UiAction::ReadPixels => self.observer.ask_for_pixels(xid),
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
            UiAction::Hover => {
                let c = need()?;
                let (x, y) = centre(c);
                self.xhover(xid, x, y).await?;
                Ok(format!("the pointer rests on {:?} at {x},{y}", c.name))
            }
        }
    }

    pub(super) async fn control(
        &self,
        window: &str,
        control_id: &str,
    ) -> Result<CtlInfo, LinuxError> {
        let known = self.controls.lock().by_id.get(control_id).cloned();
        // read in the pixels: no tree node to check or to ask for its actions
        if let Some(c) = known.as_ref().filter(|c| is_detected(c)) {
            return Ok(c.clone());
        }
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
            let (unchanged, actions) = tokio::join!(verify::check_unchanged(self.bus, &c), actions);
            unchanged?;
            if needs_actions {
                c.actions = actions;
            }
            return Ok(c);
        }
        // a region of the window named by its rectangle (`ocr:x,y,w,h`): read or clicked there
        if let Some(region) = self.region_control(window, control_id).await? {
            return Ok(region);
        }
        // not seen yet (or the window changed): observe once and look again
        self.observer.observe(window, true).await?;
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

    pub(super) async fn read(&self, c: &CtlInfo) -> Result<String, LinuxError> {
        if c.ifaces & iface::TEXT != 0 {
            let t = self.bus.text(&c.bus, &c.path).await?;
            // a web page's text is one object replacement character per child
            if t.contains('\u{fffc}') && WEB_DOCUMENTS.contains(c.seen.role) {
                let tree = self.observer.control_tree(c).await?;
                return web::page_text(self.bus, c, &tree).await;
            }
            return Ok(t);
        }
        if c.ifaces & iface::VALUE != 0 {
            return Ok(format!("{}", self.bus.value(&c.bus, &c.path).await?));
        }
        // a document without text of its own (Writer's): its visible text (office.rs)
        if let Some(t) = self.observer.office().document_text(c).await {
            return Ok(t);
        }
        Ok(c.name.clone())
    }

    /// `click`: a left single click at the centre of a control nothing covers (XTEST), else
    /// through the control's AT-SPI click action; other buttons and double clicks by XTEST.
    pub(super) async fn click(
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
            // (a menu entry pressed either way is checked to have closed its menu)
            let closed = |done: String, note: Option<String>| match note {
                Some(n) => format!("{done}; {n}"),
                None => done,
            };
            if let Some((x, y)) = self.uncovered_centre(c, in_dialog).await {
                self.settling.lock().last_input = Input::Xtest;
                self.xclick(xid, x, y, 1, 1).await?;
                let note = self.close_menu_left_open(c).await;
                return Ok(closed(format!("clicked {:?} at {x},{y}", c.name), note));
            }
            self.settling.lock().last_input = Input::Atspi;
            let idx = action::click_index(&c.actions);
            if let Some(i) = idx {
                match self.do_action_watching(&c.bus, &c.path, i).await? {
                    Done::Answered(true) => {
                        let note = self.close_menu_left_open(c).await;
                        let done = format!("clicked {:?} ({})", c.name, c.actions[i]);
                        return Ok(closed(done, note));
                    }
                    Done::OpenedDialog(title) => {
                        return Ok(format!(
                            "clicked {:?} ({}); opened the dialog {title:?}",
                            c.name, c.actions[i]
                        ));
                    }
                    Done::Answered(false) => {}
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
    pub(super) async fn click_at(
        &self,
        xid: WinId,
        window: &str,
        x: i32,
        y: i32,
    ) -> Result<String, LinuxError> {
        let dw = self.window(window).await?;
        let w = dw.area.ok_or_else(|| position_unknown(&dw))?;
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
    pub(super) async fn set_text(
        &self,
        xid: WinId,
        c: &CtlInfo,
        text: &str,
    ) -> Result<String, LinuxError> {
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
            mods: vec![sym::CONTROL_L],
            key: 'a' as u32,
        }];
        steps.push(KeyStep::Chord {
            mods: vec![],
            key: 0xffff, // Delete
        });
        steps.extend(text.chars().map(|ch| KeyStep::Chord {
            mods: vec![],
            key: char_keysym(ch),
        }));
        self.send_keys_in_order(xid, Some(c), steps).await?;
        Ok(match self.wait_text_typed(c, text).await {
            None => format!("typed the new text into {:?}", c.name),
            Some(shown) => format!(
                "typed the new text into {:?}; it shows only {shown:?} so far",
                c.name
            ),
        })
    }

    /// A number set as the value of a control that has one, checked by reading it back.
    /// A GTK 2 spin button takes new text without changing its value (GIMP then keeps the
    /// old setting), so its value is set instead. `None`: not a number, no value, or the
    /// control did not take it (the text paths follow).
    /// Web pages keep their own path: a page is told of a new value by the events typing
    /// sends.
    pub(super) async fn set_number(&self, c: &CtlInfo, text: &str) -> Option<String> {
        if c.ifaces & iface::VALUE == 0 || c.seen.role != role::SPIN_BUTTON {
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
    pub(super) async fn scroll(
        &self,
        xid: WinId,
        c: &CtlInfo,
        direction: ScrollDirection,
        amount: u32,
    ) -> Result<String, LinuxError> {
        // the visible part of the control: a row half out of its list is aimed at inside it
        let mut clips = super::aim::scrolling_boxes(self.bus, c).await;
        if let Some(area) = self
            .run(move |d| d.window(xid))
            .await
            .ok()
            .flatten()
            .and_then(|w| w.area)
        {
            clips.push(area);
        }
        let (x, y) = super::aim::aim(c.rect, &clips);
        let b = match direction {
            ScrollDirection::Up => 4,
            ScrollDirection::Down => 5,
        };
        let layout = web::layout_before_scroll(self.bus, c).await;
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
                web::wait_scrolled(self.bus, c, before).await;
            }
            None => self.xclick(xid, x, y, b, notches).await?,
        }
        Ok(format!("scrolled {:?} {amount}", c.name))
    }

    /// `focus`: AT-SPI `GrabFocus`, else a click at the centre.
    pub(super) async fn focus(&self, xid: WinId, c: &CtlInfo) -> Result<String, LinuxError> {
        if self.grab_focus(c).await {
            Ok(format!("focused {:?}", c.name))
        } else {
            let (x, y) = centre(c);
            self.xclick(xid, x, y, 1, 1).await?;
            Ok(format!("clicked {:?} to focus it", c.name))
        }
    }
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
