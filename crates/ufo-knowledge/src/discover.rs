//! Discovery of the installed help.
