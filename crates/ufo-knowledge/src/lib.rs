//! The knowledge store of ufo-rs: the help installed with the applications, a person's own
//! documents, and their search, in one SQLite file with an FTS5 index (BM25 ranking, Porter
//! stemming, WAL so that several processes can write at once).
//!
//! [`extract`] reduces a page to title, headings, index keywords and body text; [`discover`]
//! finds the installed help; [`store`] keeps and searches it and implements the core's
//! [`ufo_core::knowledge::Knowledge`] port; [`model`] runs a sentence-transformers model in
//! the process for [`embed`]'s vectors.

pub mod apps;
pub mod discover;
pub mod embed;
pub mod experience;
pub mod extract;
pub mod model;
pub mod pages;
pub mod query;
pub mod store;
pub mod web;
