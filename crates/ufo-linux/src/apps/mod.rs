//! What particular applications need beyond the generic observation: LibreOffice Calc's
//! sheets (`table`; which of their cells show nothing on the screen: `inked`), office
//! documents' paragraphs (`office`), web pages (`web`), GTK2's open menus (`menus`), GTK4's
//! drop-downs (`gtk4`) and libadwaita's tabs (`adwaita`). The cells Calc's sheets read
//! before (`sheets`) are what the desktop holds.

pub(crate) mod adwaita;
pub(crate) mod gnumeric;
pub(crate) mod gtk4;
pub(crate) mod inked;
pub(crate) mod menus;
pub(crate) mod office;
pub(crate) mod sheets;
pub(crate) mod table;
pub(crate) mod web;
