//! Actions on LibreOffice Calc's cells (`apps/table.rs` reads the sheets): `read_text` gives
//! the formula and the shown value (`=SUM(A1:A5) → 15`), read from the formula input line
//! after the Name Box moved the cursor there; `set_text` types the content and presses Enter
//! (LibreOffice's cells have no editable text interface). `set_text` on the Name Box jumps to
//! the cell or selects the range typed (`A1:B5`).
//!
//! Before the keys of `set_text`, one look says where they would go ([`reach_for`]): the
//! active window, the cell's states and its document's children, three calls at once. When
//! the cell is the cursor's, focused (LibreOffice marks only the cursor's cell so, and only
//! while the sheet holds the focus: a dialog, the Name Box or the input line clear it) and no
//! cell is being edited, the keys go straight in; Enter after an entry leaves the cursor on
//! the next cell down, so a column of entries never moves it. Otherwise the Name Box moves
//! the cursor and the sheet is focused again, as before; an edit in progress (a person
//! typing, keys without Enter) is committed first, since the Name Box does not end it.
//!
//! Measured (issue 48, docs/desktop.md; steps bench `UFO_BENCH_ONLY=cells`, release builds
//! of main and of this change alternating, three runs of 5 sessions a side): an entry p50 /
//! p95 300 / 759 ms before, **171 / 537** after at load 7.9 (÷ Calc alone 4.12× → 2.35×
//! p50); 229 / 785 and 237 / 746 at load 5.5; 161 / 414 and 153 / 478 at load 4.1 (3.86× →
//! 3.66×). ufo's own calls for the jump and the focus took 1–2 ms; LibreOffice's handling of
//! them before the keys is what the skip saves: the content shown 134 → 50 ms p50 after the
//! action began at load 7.9, 60 → 56 at load 4.1.

use std::time::{Duration, Instant};

use ufo_core::UiAction;
use zbus::zvariant::OwnedObjectPath;

use super::Actor;
use crate::apps::table::{
    cell_address, cell_content, cell_path, split_cell_id, INPUT_LINE, NAME_BOX,
};
use crate::controls::CtlInfo;
use crate::display::keys::{char_keysym, parse_keys, sym, KeyStep};
use crate::display::WinId;
use crate::vocab::{role, state};
use crate::LinuxError;

const ACC: &str = "org.a11y.atspi.Accessible";

/// Pause between two reads of a cell just entered, until it shows its content.
const SHOWN_POLL: Duration = Duration::from_millis(3);

/// Where the keys of a cell entry go without moving the cursor first ([`reach_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Into the cell named: it is LibreOffice's cursor cell, its sheet has the keyboard
    /// focus in the active window and no cell is being edited (Enter after an entry leaves
    /// the cursor on the next cell down, so a column of entries is always there).
    Typed,
    /// Anywhere else, or not known: the Name Box moves the cursor there and the sheet is
    /// focused before the keys.
    Jump,
    /// A cell is being edited in the active window (a person typing, keys without Enter):
    /// Enter commits that edit first (the Name Box does not end it: the keys went on with
    /// it, `774` for `4` after `77`), then as [`Reach::Jump`].
    Commit,
}

/// What the sheet's document holds besides the sheet ([`reach_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DocNow {
    /// The sheet alone.
    Sheet,
    /// A cell's editor (a panel beside the sheet while a cell is being edited).
    Editing,
    /// Other children (shapes, charts), or it could not be read.
    Other,
}

/// The rule of [`Reach`], from one look: `active`, whether the window is the active one;
/// `cell_states`, the cell's AT-SPI states (LibreOffice marks a cell focused only while
/// its cursor is on it and its sheet holds the focus: a dialog, the Name Box or the input
/// line holding it, or the cursor moved elsewhere, clear it); `doc`, what the sheet's
/// document holds. Anything unread is a [`Reach::Jump`].
pub(crate) fn reach_for(active: bool, cell_states: Option<u64>, doc: DocNow) -> Reach {
    match (active, cell_states, doc) {
        (true, _, DocNow::Editing) => Reach::Commit,
        (true, Some(s), DocNow::Sheet) if s & state::FOCUSED != 0 => Reach::Typed,
        _ => Reach::Jump,
    }
}

impl Actor<'_> {
    /// Whether an action goes to [`Self::sheet_action`]: any action on a cell (a control id
    /// with `#` and an address), `set_text` on the Name Box.
    pub(crate) fn is_sheet_target(&self, control_id: &str, action: &UiAction) -> bool {
        split_cell_id(control_id).is_some()
            || (matches!(action, UiAction::SetText { .. })
                && self
                    .controls
                    .lock()
                    .by_id
                    .get(control_id)
                    .is_some_and(|c| c.name == NAME_BOX))
    }

    /// An action on a cell, or `set_text` on the Name Box (which jumps there).
    pub(crate) async fn sheet_action(
        &self,
        xid: WinId,
        window: &str,
        control_id: &str,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        if let Some((sheet_id, cell)) = split_cell_id(control_id) {
            return self.cell_action(xid, window, sheet_id, cell, action).await;
        }
        let name_box = self
            .controls
            .lock()
            .by_id
            .get(control_id)
            .cloned()
            .ok_or_else(|| LinuxError::NoControl {
                window: window.to_string(),
                control: control_id.to_string(),
            })?;
        let UiAction::SetText { text } = action else {
            return Err(LinuxError::Unsupported(format!(
                "{} on the Name Box: use set_text",
                action.name()
            )));
        };
        self.jump(&name_box, text).await?;
        Ok(format!(
            "the Name Box moved the cursor to {:?}",
            text.trim()
        ))
    }

    /// The control of this window with a given name (the Name Box, the input line).
    fn named(&self, xid: WinId, name: &str) -> Option<CtlInfo> {
        self.controls
            .lock()
            .by_id
            .values()
            .find(|c| c.window == xid && c.name == name)
            .cloned()
    }

    /// Type a cell address or range into the Name Box and press Enter (its `activate`
    /// action): LibreOffice moves the cursor there or selects the range.
    async fn jump(&self, name_box: &CtlInfo, target: &str) -> Result<(), LinuxError> {
        let target = target.trim();
        let ok: bool = self
            .bus
            .call(
                &name_box.bus,
                &name_box.path,
                "org.a11y.atspi.EditableText",
                "SetTextContents",
                &(target,),
            )
            .await?;
        if !ok {
            return Err(LinuxError::ActionFailed(format!(
                "the Name Box did not take {target:?}; observe the window again"
            )));
        }
        // (the actions listed when it was observed, else asked: one round trip less)
        let actions = if name_box
            .actions
            .iter()
            .any(|a| a.eq_ignore_ascii_case("activate"))
        {
            name_box.actions.clone()
        } else {
            self.bus
                .actions(&name_box.bus, &name_box.path)
                .await
                .unwrap_or_default()
        };
        let index = actions
            .iter()
            .position(|a| a.eq_ignore_ascii_case("activate"))
            .ok_or_else(|| {
                LinuxError::ActionFailed(
                    "the Name Box has no activate action: type the address into it with type_keys and {ENTER}"
                        .to_string(),
                )
            })?;
        let _: bool = self
            .bus
            .call(
                &name_box.bus,
                &name_box.path,
                "org.a11y.atspi.Action",
                "DoAction",
                &(index as i32,),
            )
            .await?;
        Ok(())
    }

    /// Give the keyboard focus back to the sheet (the Name Box may keep it after a jump), and
    /// wait until LibreOffice has taken it.
    async fn focus_grid(&self, xid: WinId, sheet: &CtlInfo) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        let _ = self
            .bus
            .call::<_, bool>(
                &sheet.bus,
                &sheet.path,
                "org.a11y.atspi.Component",
                "GrabFocus",
                &(),
            )
            .await;
        let deadline = Instant::now() + self.config.settle_time / 2;
        loop {
            let focused = self
                .bus
                .live_states(&sheet.bus, &sheet.path)
                .await
                .is_some_and(|s| s & state::FOCUSED != 0);
            if focused || Instant::now() >= deadline {
                return Ok(());
            }
            tokio::time::sleep(self.config.settle_poll).await;
        }
    }

    /// Where the keys of an entry into the cell at `path` of `sheet` go now
    /// ([`reach_for`]): the active window, the cell's states and the count of its
    /// document's children, read at once (~1 ms; the Name Box's jump and the focus took
    /// 2-50 ms of ufo's and more of LibreOffice's time); the roles of those children only
    /// when the sheet is not alone.
    async fn reach(&self, xid: WinId, sheet: &CtlInfo, path: &str) -> Reach {
        let Some(doc) = self.sheet_document(sheet).await else {
            return Reach::Jump;
        };
        let active = async { self.run(|d| d.active_window()).await.ok().flatten() };
        let states = self.bus.live_states(&sheet.bus, path);
        let children = async { self.bus.child_count(&sheet.bus, &doc).await.ok() };
        let (active, states, children) = tokio::join!(active, states, children);
        let doc_now = self.document_now(&sheet.bus, &doc, children).await;
        reach_for(active == Some(xid), states, doc_now)
    }

    /// End the edit in progress in `sheet`'s document with Enter (a person's text is kept,
    /// in its cell), and wait until LibreOffice has ended it: the keys go through the
    /// display, the Name Box's jump over AT-SPI, which would overtake them.
    async fn commit_edit(&self, xid: WinId, sheet: &CtlInfo) -> Result<(), LinuxError> {
        let enter = KeyStep::Chord {
            mods: vec![],
            key: sym::RETURN,
        };
        self.send_keys_in_order(xid, Some(sheet), vec![enter])
            .await?;
        self.wait_edit_ended(sheet).await;
        Ok(())
    }

    /// Wait, bounded by the settle time, until no cell of `sheet`'s document is being
    /// edited (after the Enter that commits the edit).
    async fn wait_edit_ended(&self, sheet: &CtlInfo) {
        let Some(doc) = self.sheet_document(sheet).await else {
            return;
        };
        let deadline = Instant::now() + self.config.settle_time;
        while Instant::now() < deadline {
            let count = self.bus.child_count(&sheet.bus, &doc).await.ok();
            if self.document_now(&sheet.bus, &doc, count).await != DocNow::Editing {
                return;
            }
            tokio::time::sleep(SHOWN_POLL).await;
        }
    }

    /// What a sheet's document `doc` holds, from its child count (`None`: unread): the
    /// sheet alone when it has one child, else what [`Self::document_beside`] finds.
    async fn document_now(&self, bus: &str, doc: &str, children: Option<i32>) -> DocNow {
        match children {
            Some(1) => DocNow::Sheet,
            Some(_) => self.document_beside(bus, doc).await,
            None => DocNow::Other,
        }
    }

    /// What a sheet's document `doc` holds besides the sheet: a cell's editor is a panel.
    async fn document_beside(&self, bus: &str, doc: &str) -> DocNow {
        let Ok(kids) = self.bus.children(bus, doc).await else {
            return DocNow::Other;
        };
        let roles = futures::future::join_all(
            kids.iter()
                .take(64)
                .map(|k| self.bus.call::<_, u32>(bus, k, ACC, "GetRole", &())),
        )
        .await;
        if roles
            .iter()
            .any(|r| r.as_ref().is_ok_and(|r| *r == role::PANEL))
        {
            DocNow::Editing
        } else {
            DocNow::Other
        }
    }

    /// The path of the spreadsheet document holding `sheet` (its parent), asked once per
    /// sheet; `None` when the parent is not a spreadsheet document.
    async fn sheet_document(&self, sheet: &CtlInfo) -> Option<String> {
        let key = (sheet.bus.clone(), sheet.path.clone());
        if let Some(doc) = self.sheets.document_of(&key) {
            return Some(doc);
        }
        let parent: Result<(String, OwnedObjectPath), _> =
            self.bus.prop(&sheet.bus, &sheet.path, ACC, "Parent").await;
        let (bus, doc) = parent.ok()?;
        let doc = doc.as_str().to_string();
        let is_doc = self
            .bus
            .call::<_, u32>(&bus, &doc, ACC, "GetRole", &())
            .await
            .is_ok_and(|r| r == role::DOCUMENT_SPREADSHEET);
        if bus != sheet.bus || !is_doc {
            return None;
        }
        self.sheets.set_document_of(key, doc.clone());
        Some(doc)
    }

    /// Move the cursor to a cell through the Name Box.
    async fn go_to_cell(&self, xid: WinId, window: &str, address: &str) -> Result<(), LinuxError> {
        let name_box = match self.named(xid, NAME_BOX) {
            Some(b) => b,
            None => {
                self.observer.observe(window, false).await?;
                self.named(xid, NAME_BOX).ok_or_else(|| {
                    LinuxError::ActionFailed(format!(
                        "cannot reach cell {address}: the window shows no Name Box (View ▸ Formula Bar shows it)"
                    ))
                })?
            }
        };
        self.jump(&name_box, address).await
    }

    /// The sheet control's info, observing once when it is not known.
    async fn sheet_info(&self, window: &str, sheet_id: &str) -> Result<CtlInfo, LinuxError> {
        if let Some(s) = self.controls.lock().by_id.get(sheet_id).cloned() {
            return Ok(s);
        }
        self.observer.observe(window, false).await?;
        self.controls
            .lock()
            .by_id
            .get(sheet_id)
            .cloned()
            .ok_or_else(|| LinuxError::NoControl {
                window: window.to_string(),
                control: sheet_id.to_string(),
            })
    }

    /// One action on one cell.
    async fn cell_action(
        &self,
        xid: WinId,
        window: &str,
        sheet_id: &str,
        (row, col): (u32, u32),
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        let address = cell_address(row, col);
        let sheet = self.sheet_info(window, sheet_id).await?;
        let key = (sheet.bus.clone(), sheet.path.clone(), row, col);
        let known = self.sheets.cell_path(&key);
        let path = match known {
            Some(p) if self.bus.text(&sheet.bus, &p).await.is_ok() => p,
            _ => {
                let p = cell_path(self.bus, &sheet.bus, &sheet.path, row, col).await?;
                self.sheets.set_cell_path(key, p.clone());
                p
            }
        };
        let shown = || async { self.bus.text(&sheet.bus, &path).await };
        match action {
            UiAction::ReadText => {
                let value = shown().await?;
                self.go_to_cell(xid, window, &address).await?;
                let formula = match self.named(xid, INPUT_LINE) {
                    Some(line) => self.bus.text(&line.bus, &line.path).await.ok(),
                    None => None,
                };
                Ok(cell_content(formula.as_deref(), &value))
            }
            UiAction::SetText { text } => {
                let cell = (&sheet, (row, col), path.as_str());
                self.enter_text(xid, window, cell, &address, text).await
            }
            UiAction::Click { .. } | UiAction::Focus => {
                self.go_to_cell(xid, window, &address).await?;
                Ok(format!("selected cell {address}"))
            }
            UiAction::TypeKeys { keys } => {
                // any key may change any cell (a paste, an undo, a fill)
                self.sheets.note_other_action();
                let steps = parse_keys(keys)?;
                self.go_to_cell(xid, window, &address).await?;
                self.focus_grid(xid, &sheet).await?;
                let n = steps.len();
                self.send_keys_in_order(xid, Some(&sheet), steps).await?;
                Ok(format!("typed {n} keys in cell {address}"))
            }
            UiAction::Select { .. }
            | UiAction::Scroll { .. }
            | UiAction::ClickAt { .. }
            | UiAction::ReadPixels
            | UiAction::Hover => {
                Err(LinuxError::Unsupported(format!(
                    "{} does not apply to cell {address}: use set_text, read_text, click or type_keys on a cell, scroll on the sheet",
                    action.name()
                )))
            }
        }
    }

    /// `set_text` on a cell: the cursor moved there with the Name Box and the grid focused
    /// unless the keys already go there ([`Reach`]), an edit in progress committed, the
    /// text typed, then Delete (drops what AutoInput proposed after it) and Enter (commits);
    /// LibreOffice shows the content once it has handled Enter, which is waited for, bounded.
    /// The next observation reads this cell again, and the cells it may feed.
    async fn enter_text(
        &self,
        xid: WinId,
        window: &str,
        (sheet, (row, col), path): (&CtlInfo, (u32, u32), &str),
        address: &str,
        text: &str,
    ) -> Result<String, LinuxError> {
        let t0 = Instant::now();
        let reach = self.reach(xid, sheet, path).await;
        let checked = t0.elapsed();
        if reach == Reach::Commit {
            self.commit_edit(xid, sheet).await?;
        }
        if reach != Reach::Typed {
            self.go_to_cell(xid, window, address).await?;
        }
        let jumped = t0.elapsed();
        if reach != Reach::Typed {
            self.focus_grid(xid, sheet).await?;
        }
        let focused = t0.elapsed();
        let mut steps: Vec<KeyStep> = text
            .chars()
            .map(|ch| KeyStep::Chord {
                mods: vec![],
                key: char_keysym(ch),
            })
            .collect();
        // Delete drops what AutoInput proposed after the text, Enter commits
        steps.push(KeyStep::Chord {
            mods: vec![],
            key: 0xffff,
        });
        steps.push(KeyStep::Chord {
            mods: vec![],
            key: sym::RETURN,
        });
        self.send_keys_in_order(xid, Some(sheet), steps).await?;
        let sent = t0.elapsed();
        // LibreOffice shows the content once it has handled Enter: wait for it, bounded (each
        // read is a round trip LibreOffice answers between its own work, so a short pause
        // between reads costs it nothing; the settle's pause of 25 ms cost ~7 ms p50 a step)
        let deadline = Instant::now() + self.config.settle_time;
        let mut now = self.bus.text(&sheet.bus, path).await.unwrap_or_default();
        while now.is_empty() && !text.trim().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(SHOWN_POLL).await;
            now = self.bus.text(&sheet.bus, path).await.unwrap_or_default();
        }
        tracing::debug!(
            ?reach,
            check_ms = checked.as_millis() as u64,
            jump_ms = jumped.as_millis() as u64,
            focus_ms = focused.as_millis() as u64,
            keys_ms = sent.as_millis() as u64,
            shown_ms = t0.elapsed().as_millis() as u64,
            "cell entry phases"
        );
        // the next observation reads this cell again, and the cells it may feed
        self.sheets
            .note_entry(&(sheet.bus.clone(), sheet.path.clone()), (row, col));
        if now.is_empty() && !text.trim().is_empty() {
            return Err(LinuxError::ActionFailed(format!(
                "typed {text:?} into cell {address} but it still shows nothing; is a dialog open?"
            )));
        }
        Ok(format!(
            "entered {text:?} in cell {address} (it shows {now:?})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOCUSED: u64 = state::FOCUSED;

    #[test]
    fn the_keys_go_straight_in_only_on_the_focused_cursor_cell_of_the_active_window_unedited() {
        use DocNow::{Other, Sheet};
        assert_eq!(reach_for(true, Some(FOCUSED), Sheet), Reach::Typed);
        // the cursor elsewhere, or the focus in the Name Box, the input line, a dialog
        assert_eq!(reach_for(true, Some(0), Sheet), Reach::Jump);
        // another window active: the keys would go there
        assert_eq!(reach_for(false, Some(FOCUSED), Sheet), Reach::Jump);
        // shapes on the sheet, or the document not read: the Name Box all the same
        assert_eq!(reach_for(true, Some(FOCUSED), Other), Reach::Jump);
        // anything not read
        assert_eq!(reach_for(true, None, Sheet), Reach::Jump);
        assert_eq!(reach_for(false, None, Other), Reach::Jump);
    }

    #[test]
    fn a_cell_being_edited_is_committed_before_the_jump_wherever_the_cursor_is() {
        // the keys would go on with that edit: on the cell named or another one
        assert_eq!(
            reach_for(true, Some(FOCUSED), DocNow::Editing),
            Reach::Commit
        );
        assert_eq!(reach_for(true, Some(0), DocNow::Editing), Reach::Commit);
        assert_eq!(reach_for(true, None, DocNow::Editing), Reach::Commit);
        // not in the active window: Enter would go elsewhere; the Name Box as before
        assert_eq!(
            reach_for(false, Some(FOCUSED), DocNow::Editing),
            Reach::Jump
        );
    }
}
