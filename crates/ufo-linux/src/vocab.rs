//! The AT-SPI vocabulary this crate speaks, named by the `atspi` crate's types: roles
//! ([`Role`]), states ([`State`], the bits of a [`atspi::StateSet`]) and interfaces
//! ([`Interface`], the bits of an [`atspi::InterfaceSet`]); the sets of roles the observation
//! and the actions sort nodes by ([`Roles`], one named constant per set, all in this file);
//! the states an inspection names ([`STATE_LABELS`]); and the action names the toolkits give
//! a click ([`action`]).
//!
//! Nodes keep the numbers the bus sent (a role or state newer than the `atspi` crate is kept,
//! not lost); these constants are what the rest of the crate compares them with. The bottom
//! layer of the crate: it imports nothing of it.

use atspi::{Interface, Role, State};

/// Object path of an application's root accessible.
pub(crate) const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";

/// Role numbers (`org.a11y.atspi.Role`).
pub(crate) mod role {
    use super::Role;

    pub const INVALID: u32 = Role::Invalid as u32;
    pub const ANIMATION: u32 = Role::Animation as u32;
    pub const CANVAS: u32 = Role::Canvas as u32;
    pub const EMBEDDED: u32 = Role::Embedded as u32;
    pub const IMAGE: u32 = Role::Image as u32;
    pub const VIDEO: u32 = Role::Video as u32;
    pub const ALERT: u32 = Role::Alert as u32;
    pub const CHECK_BOX: u32 = Role::CheckBox as u32;
    pub const CHECK_MENU_ITEM: u32 = Role::CheckMenuItem as u32;
    pub const COMBO_BOX: u32 = Role::ComboBox as u32;
    pub const DESKTOP_FRAME: u32 = Role::DesktopFrame as u32;
    pub const DIALOG: u32 = Role::Dialog as u32;
    pub const DRAWING_AREA: u32 = Role::DrawingArea as u32;
    pub const FILE_CHOOSER: u32 = Role::FileChooser as u32;
    pub const FILLER: u32 = Role::Filler as u32;
    pub const FRAME: u32 = Role::Frame as u32;
    pub const GLASS_PANE: u32 = Role::GlassPane as u32;
    pub const HTML_CONTAINER: u32 = Role::HTMLContainer as u32;
    pub const INTERNAL_FRAME: u32 = Role::InternalFrame as u32;
    pub const LABEL: u32 = Role::Label as u32;
    pub const PROGRESS_BAR: u32 = Role::ProgressBar as u32;
    pub const SCROLL_BAR: u32 = Role::ScrollBar as u32;
    pub const LAYERED_PANE: u32 = Role::LayeredPane as u32;
    pub const LIST: u32 = Role::List as u32;
    pub const LIST_ITEM: u32 = Role::ListItem as u32;
    pub const MENU: u32 = Role::Menu as u32;
    pub const MENU_BAR: u32 = Role::MenuBar as u32;
    pub const MENU_ITEM: u32 = Role::MenuItem as u32;
    pub const POPUP_MENU: u32 = Role::PopupMenu as u32;
    pub const PAGE_TAB: u32 = Role::PageTab as u32;
    pub const PAGE_TAB_LIST: u32 = Role::PageTabList as u32;
    pub const PANEL: u32 = Role::Panel as u32;
    pub const PASSWORD_TEXT: u32 = Role::PasswordText as u32;
    pub const PUSH_BUTTON: u32 = Role::Button as u32;
    pub const RADIO_BUTTON: u32 = Role::RadioButton as u32;
    pub const RADIO_MENU_ITEM: u32 = Role::RadioMenuItem as u32;
    pub const ROOT_PANE: u32 = Role::RootPane as u32;
    pub const SCROLL_PANE: u32 = Role::ScrollPane as u32;
    pub const SEPARATOR: u32 = Role::Separator as u32;
    pub const SLIDER: u32 = Role::Slider as u32;
    pub const SPIN_BUTTON: u32 = Role::SpinButton as u32;
    pub const SPLIT_PANE: u32 = Role::SplitPane as u32;
    pub const STATUS_BAR: u32 = Role::StatusBar as u32;
    pub const TABLE: u32 = Role::Table as u32;
    pub const TABLE_CELL: u32 = Role::TableCell as u32;
    pub const TERMINAL: u32 = Role::Terminal as u32;
    pub const TEXT: u32 = Role::Text as u32;
    pub const TOGGLE_BUTTON: u32 = Role::ToggleButton as u32;
    pub const TOOL_BAR: u32 = Role::ToolBar as u32;
    pub const TOOL_TIP: u32 = Role::ToolTip as u32;
    pub const TREE: u32 = Role::Tree as u32;
    pub const TREE_TABLE: u32 = Role::TreeTable as u32;
    pub const VIEWPORT: u32 = Role::Viewport as u32;
    pub const WINDOW: u32 = Role::Window as u32;
    pub const PARAGRAPH: u32 = Role::Paragraph as u32;
    pub const APPLICATION: u32 = Role::Application as u32;
    pub const ENTRY: u32 = Role::Entry as u32;
    pub const DOCUMENT_FRAME: u32 = Role::DocumentFrame as u32;
    pub const HEADING: u32 = Role::Heading as u32;
    pub const SECTION: u32 = Role::Section as u32;
    pub const FORM: u32 = Role::Form as u32;
    pub const LINK: u32 = Role::Link as u32;
    pub const TABLE_ROW: u32 = Role::TableRow as u32;
    pub const TREE_ITEM: u32 = Role::TreeItem as u32;
    pub const DOCUMENT_SPREADSHEET: u32 = Role::DocumentSpreadsheet as u32;
    pub const DOCUMENT_PRESENTATION: u32 = Role::DocumentPresentation as u32;
    pub const DOCUMENT_TEXT: u32 = Role::DocumentText as u32;
    pub const DOCUMENT_WEB: u32 = Role::DocumentWeb as u32;
    pub const LANDMARK: u32 = Role::Landmark as u32;
    pub const DOCUMENT_EMAIL: u32 = Role::DocumentEmail as u32;
    pub const LIST_BOX: u32 = Role::ListBox as u32;
    pub const GROUPING: u32 = Role::Grouping as u32;
    pub const STATIC: u32 = Role::Static as u32;
    pub const PUSH_BUTTON_MENU: u32 = Role::PushButtonMenu as u32;
}

/// State bits (`org.a11y.atspi.StateType`, the two words of `GetState` as one `u64`).
pub(crate) mod state {
    use super::State;

    pub const ACTIVE: u64 = State::Active as u64;
    pub const CHECKED: u64 = State::Checked as u64;
    pub const DEFUNCT: u64 = State::Defunct as u64;
    pub const EDITABLE: u64 = State::Editable as u64;
    pub const ENABLED: u64 = State::Enabled as u64;
    pub const EXPANDED: u64 = State::Expanded as u64;
    pub const FOCUSABLE: u64 = State::Focusable as u64;
    pub const FOCUSED: u64 = State::Focused as u64;
    pub const MANAGES_DESCENDANTS: u64 = State::ManagesDescendants as u64;
    pub const MODAL: u64 = State::Modal as u64;
    pub const SELECTED: u64 = State::Selected as u64;
    pub const SENSITIVE: u64 = State::Sensitive as u64;
    pub const SHOWING: u64 = State::Showing as u64;
    pub const VISIBLE: u64 = State::Visible as u64;
}

/// Interface bits (a node's interfaces as the bits of an [`atspi::InterfaceSet`]).
pub(crate) mod iface {
    use super::Interface;

    pub const ACTION: u32 = Interface::Action as u32;
    pub const COMPONENT: u32 = Interface::Component as u32;
    pub const TEXT: u32 = Interface::Text as u32;
    pub const EDITABLE_TEXT: u32 = Interface::EditableText as u32;
    pub const VALUE: u32 = Interface::Value as u32;
    pub const SELECTION: u32 = Interface::Selection as u32;
    pub const APPLICATION: u32 = Interface::Application as u32;
}

/// The readable name of a role number.
pub(crate) fn role_name(r: u32) -> String {
    match Role::try_from(r) {
        Ok(role) => role.name().to_string(),
        Err(_) => format!("role {r}"),
    }
}

/// A set of roles, one bit per role number: membership is one bit test. Role numbers above
/// [`Roles::MAX`] (newer than any toolkit sends today) belong to no set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Roles([u64; 4]);

impl Roles {
    /// The largest role number a set can hold.
    pub(crate) const MAX: u32 = 255;

    /// The set of `roles` (usable in a `const`).
    pub(crate) const fn of(roles: &[u32]) -> Roles {
        let mut bits = [0u64; 4];
        let mut i = 0;
        while i < roles.len() {
            let r = roles[i];
            if r <= Self::MAX {
                bits[(r / 64) as usize] |= 1 << (r % 64);
            }
            i += 1;
        }
        Roles(bits)
    }

    /// Whether role number `r` is in the set.
    pub(crate) const fn contains(&self, r: u32) -> bool {
        r <= Self::MAX && self.0[(r / 64) as usize] & (1 << (r % 64)) != 0
    }
}

/// Containers and decorations: never controls, even when focusable.
pub(crate) const CONTAINERS: Roles = Roles::of(&[
    role::ALERT,
    role::DESKTOP_FRAME,
    role::DIALOG,
    role::DRAWING_AREA,
    role::FILLER,
    role::FRAME,
    role::GLASS_PANE,
    role::HTML_CONTAINER,
    role::INTERNAL_FRAME,
    role::LABEL,
    role::LAYERED_PANE,
    role::LIST,
    role::MENU_BAR,
    role::PAGE_TAB_LIST,
    role::PANEL,
    role::ROOT_PANE,
    role::SCROLL_PANE,
    role::SEPARATOR,
    role::SPLIT_PANE,
    role::STATUS_BAR,
    role::TABLE,
    role::TOOL_BAR,
    role::TOOL_TIP,
    role::TREE,
    role::TREE_TABLE,
    role::VIEWPORT,
    role::WINDOW,
    role::APPLICATION,
    role::SECTION,
    role::GROUPING,
]);

/// Controls by their role alone: what a person clicks, types in, picks or reads as a
/// document.
pub(crate) const INTERACTIVE: Roles = Roles::of(&[
    role::PUSH_BUTTON,
    role::TOGGLE_BUTTON,
    role::CHECK_BOX,
    role::RADIO_BUTTON,
    role::MENU,
    role::MENU_ITEM,
    role::CHECK_MENU_ITEM,
    role::RADIO_MENU_ITEM,
    role::COMBO_BOX,
    role::ENTRY,
    role::TEXT,
    role::PASSWORD_TEXT,
    role::SPIN_BUTTON,
    role::SLIDER,
    role::LIST_ITEM,
    role::PAGE_TAB,
    role::LINK,
    role::TREE_ITEM,
    role::TABLE_CELL,
    role::LIST_BOX,
    role::TERMINAL,
    role::DOCUMENT_FRAME,
    role::DOCUMENT_TEXT,
    role::DOCUMENT_WEB,
    role::DOCUMENT_SPREADSHEET,
    role::DOCUMENT_PRESENTATION,
    role::DOCUMENT_EMAIL,
    role::PUSH_BUTTON_MENU,
]);

/// Controls whose text is their value (read through the Text interface).
pub(crate) const TEXTUAL: Roles = Roles::of(&[
    role::TEXT,
    role::ENTRY,
    role::SPIN_BUTTON,
    role::COMBO_BOX,
    role::TERMINAL,
    role::DOCUMENT_FRAME,
    role::DOCUMENT_TEXT,
    role::DOCUMENT_WEB,
    role::DOCUMENT_EMAIL,
]);

/// Fields a person types in or picks from: named by the labels that point at them
/// (names.rs, `field_name`).
pub(crate) const FIELDS: Roles = Roles::of(&[
    role::TEXT,
    role::ENTRY,
    role::PASSWORD_TEXT,
    role::SPIN_BUTTON,
    role::COMBO_BOX,
    role::SLIDER,
]);

/// Entries of lists, trees and tab bars: their visible label beats their description.
pub(crate) const ITEMS: Roles = Roles::of(&[
    role::LIST_ITEM,
    role::TREE_ITEM,
    role::TABLE_CELL,
    role::PAGE_TAB,
]);

/// Menu items, plain and checkable: entries of a menu (what `select` picks there).
pub(crate) const MENU_ITEMS: Roles = Roles::of(&[
    role::MENU_ITEM,
    role::CHECK_MENU_ITEM,
    role::RADIO_MENU_ITEM,
]);

/// Controls named by a label a toolkit may write with its mnemonic mark ("_Add"): buttons,
/// menu items, check and radio boxes, tabs. The mark is never part of their name.
pub(crate) const LABELLED: Roles = Roles::of(&[
    role::PUSH_BUTTON,
    role::TOGGLE_BUTTON,
    role::PUSH_BUTTON_MENU,
    role::CHECK_BOX,
    role::RADIO_BUTTON,
    role::MENU,
    role::MENU_ITEM,
    role::CHECK_MENU_ITEM,
    role::RADIO_MENU_ITEM,
    role::PAGE_TAB,
]);

/// Controls that are checked or not.
pub(crate) const CHECKABLE: Roles = Roles::of(&[
    role::CHECK_BOX,
    role::TOGGLE_BUTTON,
    role::RADIO_BUTTON,
    role::CHECK_MENU_ITEM,
    role::RADIO_MENU_ITEM,
]);

/// Controls whose number is a position in a range (its value says something).
pub(crate) const RANGES: Roles = Roles::of(&[
    role::SPIN_BUTTON,
    role::SLIDER,
    role::SCROLL_BAR,
    role::PROGRESS_BAR,
]);

/// Containers of entries: walked even when they manage their descendants (GTK3 reports no
/// child count for them and keeps their rows out of its cache).
pub(crate) const LISTS: Roles = Roles::of(&[
    role::COMBO_BOX,
    role::LIST,
    role::MENU,
    role::PAGE_TAB_LIST,
    role::TABLE,
    role::TREE,
    role::TREE_TABLE,
    role::LIST_BOX,
]);

/// Drawn content whose inside the tree does not describe (a canvas, an image, an embedded
/// object): sight reads such a node where it is not a control (docs/sight.md, "When").
pub(crate) const SILENT: Roles = Roles::of(&[
    role::ANIMATION,
    role::CANVAS,
    role::DRAWING_AREA,
    role::EMBEDDED,
    role::IMAGE,
    role::VIDEO,
]);

/// Tables a cell belongs to (its row is folded into one control).
pub(crate) const TABLES: Roles = Roles::of(&[role::TABLE, role::TREE_TABLE, role::TREE]);

/// Push and toggle buttons.
pub(crate) const BUTTONS: Roles = Roles::of(&[role::PUSH_BUTTON, role::TOGGLE_BUTTON]);

/// Buttons of every kind, menu buttons included.
pub(crate) const ANY_BUTTON: Roles = Roles::of(&[
    role::PUSH_BUTTON,
    role::TOGGLE_BUTTON,
    role::PUSH_BUTTON_MENU,
]);

/// Top-level windows of an application: frames, dialogs, alerts, file choosers.
pub(crate) const WINDOWS: Roles = Roles::of(&[
    role::FRAME,
    role::DIALOG,
    role::WINDOW,
    role::ALERT,
    role::FILE_CHOOSER,
]);

/// Containers of a web page that the walk goes through although they are not SHOWING.
pub(crate) const PAGE_CONTAINERS: Roles = Roles::of(&[
    role::PANEL,
    role::SECTION,
    role::GROUPING,
    role::FORM,
    role::FILLER,
]);

/// A web page's document (its text is one object replacement character per child).
pub(crate) const WEB_DOCUMENTS: Roles = Roles::of(&[role::DOCUMENT_FRAME, role::DOCUMENT_WEB]);

/// The roles of an office document's root node.
pub(crate) const OFFICE_DOCUMENTS: Roles = Roles::of(&[
    role::DOCUMENT_SPREADSHEET,
    role::DOCUMENT_TEXT,
    role::DOCUMENT_PRESENTATION,
    role::DOCUMENT_FRAME,
]);

/// Roles of objects that are or may sit in a sheet's cell: table cell, paragraph, text,
/// entry, none (invalid), filler (LibreOffice's in-place editor).
pub(crate) const MAY_HOLD_CELL_TEXT: Roles = Roles::of(&[
    role::INVALID,
    role::FILLER,
    role::TABLE_CELL,
    role::TEXT,
    role::PARAGRAPH,
    role::ENTRY,
]);

/// Roles whose accessible name follows their content or the document's title (a GTK combo box
/// is named by its chosen item, a document or tab by its title): only their role is checked
/// before an action (`act::verify`).
pub(crate) const NAME_FOLLOWS_CONTENT: Roles = Roles::of(&[
    role::COMBO_BOX,
    role::FRAME,
    role::LABEL,
    role::PAGE_TAB,
    role::PASSWORD_TEXT,
    role::SLIDER,
    role::SPIN_BUTTON,
    role::TABLE_CELL,
    role::TERMINAL,
    role::TEXT,
    role::ENTRY,
    role::DOCUMENT_FRAME,
    role::DOCUMENT_SPREADSHEET,
    role::DOCUMENT_PRESENTATION,
    role::DOCUMENT_TEXT,
    role::DOCUMENT_WEB,
    role::DOCUMENT_EMAIL,
    role::LIST_BOX,
]);

/// The states an inspection names, with their names (`ufo inspect`'s `[focused,checked]`).
pub(crate) const STATE_LABELS: [(u64, &str); 5] = [
    (state::FOCUSED, "focused"),
    (state::CHECKED, "checked"),
    (state::SELECTED, "selected"),
    (state::EXPANDED, "expanded"),
    (state::EDITABLE, "editable"),
];

/// Action names (`org.a11y.atspi.Action`).
pub(crate) mod action {
    /// Action names that mean "click" in the toolkits we know (matched case-insensitively;
    /// GTK3 says "click", GTK4 "click" or "Click", others "press"/"activate"). Chromium names
    /// a check box's action "check"/"uncheck", an option's "select" and a list item's
    /// "doDefault".
    const CLICK: &[&str] = &[
        "click",
        "press",
        "activate",
        "jump",
        "toggle",
        "open",
        "check",
        "uncheck",
        "select",
        "dodefault",
    ];

    /// Whether an action's name means "click" ([`CLICK`], in any case).
    pub(crate) fn is_click(name: &str) -> bool {
        CLICK.contains(&name.to_lowercase().as_str())
    }

    /// The index of the first action among `names` that means "click".
    pub(crate) fn click_index(names: &[String]) -> Option<usize> {
        names.iter().position(|a| is_click(a))
    }

    /// Whether a name from `GetActions` is an action's name: not empty (Chromium's answer)
    /// and not an ATK key binding `mnemonic;sequence;shortcut` (`;;` or `<Alt>f;`, what Gecko
    /// gave in every field before it was no longer asked, see `ActionNames` in `a11y::bus`);
    /// the others are asked one by one with `GetName(i)`.
    pub(crate) fn is_name(name: &str) -> bool {
        !name.trim().is_empty() && !name.contains(';')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The role constants are the numbers on the bus: `Role`'s discriminants follow
    /// `org.a11y.atspi.Role`, the same as its conversion from the wire.
    #[test]
    fn role_numbers_are_the_wire_numbers() {
        for n in 0..=129u32 {
            let r = Role::try_from(n).expect("a role up to 129");
            assert_eq!(r as u32, n, "{r:?}");
        }
        assert_eq!(role::COMBO_BOX, 11);
        assert_eq!(role::PUSH_BUTTON_MENU, 129);
    }

    /// The state constants are the bits of `GetState` (state n is bit n).
    #[test]
    fn state_bits_are_the_wire_bits() {
        assert_eq!(state::ACTIVE, 1 << 1);
        assert_eq!(state::CHECKED, 1 << 4);
        assert_eq!(state::MODAL, 1 << 16);
        assert_eq!(state::SHOWING, 1 << 25);
        assert_eq!(state::VISIBLE, 1 << 30);
        assert_eq!(state::MANAGES_DESCENDANTS, 1 << 31);
    }

    /// A set holds exactly the roles it was made of, and no role beyond its range.
    #[test]
    fn a_role_set_holds_its_roles_and_no_other() {
        const S: Roles = Roles::of(&[0, 63, 64, 129, 255, 256, 9999]);
        for r in 0..=300u32 {
            assert_eq!(
                S.contains(r),
                [0, 63, 64, 129, 255].contains(&r),
                "role {r}"
            );
        }
        assert!(!S.contains(u32::MAX));
        assert!(BUTTONS.contains(role::PUSH_BUTTON) && !BUTTONS.contains(role::LINK));
    }

    proptest::proptest! {
        /// Any list of role numbers: the set answers as the list does (within its range).
        #[test]
        fn a_role_set_answers_as_its_list(
            list in proptest::collection::vec(0u32..400, 0..20),
            probe in 0u32..400,
        ) {
            let set = Roles::of(&list);
            proptest::prop_assert_eq!(
                set.contains(probe),
                probe <= Roles::MAX && list.contains(&probe)
            );
        }
    }

    #[test]
    fn gecko_key_bindings_and_chromium_blanks_are_not_action_names() {
        for garbage in [";;", "<Alt>f;", "<Alt><Shift>T;", "", "  "] {
            assert!(!action::is_name(garbage), "{garbage:?}");
        }
        for real in ["press", "click", "jump", "select", "open", "activate"] {
            assert!(action::is_name(real), "{real:?}");
        }
    }

    #[test]
    fn click_names_in_any_case() {
        assert!(action::is_click("Click") && action::is_click("doDefault"));
        assert!(!action::is_click("showMenu"));
        let names = ["showMenu".to_string(), "Press".to_string()];
        assert_eq!(action::click_index(&names), Some(1));
    }
}
