//! What an observation learnt about each control, kept for the actions (and for the
//! applications' modules, which act on the controls they listed).

use std::collections::HashMap;

use ufo_core::{Control, Rect};

use crate::display::WinId;

/// What the last observation learnt about one control (used by actions).
#[derive(Debug, Clone)]
pub(crate) struct CtlInfo {
    pub bus: String,
    pub path: String,
    pub name: String,
    /// Screen rectangle.
    pub rect: Rect,
    pub actions: Vec<String>,
    pub ifaces: u32,
    pub states: u64,
    /// The window it belongs to.
    pub window: WinId,
    /// AT-SPI role number and raw accessible name when observed, and its label there (for
    /// the "changed since the last observation" check).
    pub seen: Seen,
    /// Where it lay in that observation: out of view in a page, it is scrolled into view
    /// before an action (act/reach.rs).
    pub place: ufo_core::Place,
    /// The part of a composite listed as this one line that takes text (a combo box's entry:
    /// observe/composite.rs).
    pub part: Option<Box<CtlInfo>>,
    /// Shown only while the pointer rests on it (a libadwaita tab's close button, on a tab
    /// not in front): clicked through its AT-SPI action, as an XTEST click that moves there
    /// at once lands on what lies under it.
    pub shown_on_hover: bool,
}

impl CtlInfo {
    /// The node an action goes to: text is set, typed and read in the composite's part
    /// (a combo box's entry); anything else (a click, `select`) goes to the control itself.
    pub(crate) fn for_action(&self, action: &ufo_core::UiAction) -> &CtlInfo {
        use ufo_core::UiAction as A;
        match (action, &self.part) {
            (A::SetText { .. } | A::TypeKeys { .. } | A::ReadText, Some(part)) => part,
            _ => self,
        }
    }
}

/// The controls of one observation by id, each with the label it was given.
pub(crate) type Labelled = Vec<(String, CtlInfo)>;

/// What an observation saw of a control.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// AT-SPI role number.
    pub role: u32,
    /// Raw accessible name.
    pub name: String,
    /// Its label in that observation (1-based; 0 when unknown).
    pub label: usize,
}

/// The controls of the latest observations, by id.
#[derive(Default)]
pub(crate) struct KnownControls {
    /// control id → info, from the latest observation of its window
    pub by_id: HashMap<String, CtlInfo>,
}

/// A control with everything the backend knows about it.
#[derive(Debug, Clone)]
pub struct ControlDetail {
    /// The control as the engine sees it.
    pub control: Control,
    /// AT-SPI state names that matter to a person reading `ufo inspect` (focused, checked, ...).
    pub states: Vec<&'static str>,
    /// Action names the control offers.
    pub actions: Vec<String>,
}

/// A control as observed: what the engine is told, and what the actions need.
pub(crate) struct Fetched {
    pub(crate) detail: ControlDetail,
    pub(crate) info: CtlInfo,
    /// A field named by its container (names.rs, `NameSource::Container`): its name when that
    /// name names several fields of the window at once (the label just left of it, else its
    /// description, else none).
    pub(crate) by_container: Option<String>,
}

impl KnownControls {
    /// Put the controls of a new observation of window `xid` in place of its old ones.
    pub(crate) fn install(&mut self, xid: WinId, entries: Labelled) {
        self.by_id.retain(|_, c| c.window != xid);
        self.by_id.extend(entries);
    }
}
