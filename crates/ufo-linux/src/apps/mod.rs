//! What particular applications need beyond the generic observation: LibreOffice Calc's
//! sheets (`table`), office documents' paragraphs (`office`), web pages (`web`) and GTK2's
//! open menus (`menus`).

pub(crate) mod menus;
pub(crate) mod office;
pub(crate) mod table;
pub(crate) mod web;
