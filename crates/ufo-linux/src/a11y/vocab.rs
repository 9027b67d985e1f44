//! The AT-SPI vocabulary this crate speaks, named by the `atspi` crate's types: roles
//! ([`Role`]), states ([`State`], the bits of a [`atspi::StateSet`]) and interfaces
//! ([`Interface`], the bits of an [`atspi::InterfaceSet`]).
//!
//! Nodes keep the numbers the bus sent (a role or state newer than the `atspi` crate is kept,
//! not lost); these constants are what the rest of the crate compares them with.

use atspi::{Interface, Role, State};

/// Object path of an application's root accessible.
pub(crate) const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";

/// Role numbers (`org.a11y.atspi.Role`).
pub(crate) mod role {
    use super::Role;

    pub const INVALID: u32 = Role::Invalid as u32;
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
}
