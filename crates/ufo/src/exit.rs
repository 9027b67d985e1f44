//! The exit statuses every command shares (docs/formats.md, "Exit codes"): 0 FINISH, 1 FAIL,
//! 3 ERROR come from the session's end; these two are decided before or around it.

/// Exit status for bad usage or configuration.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit status of a cancelled session (128 + SIGINT, as shells report it).
pub(crate) const EXIT_CANCELLED: u8 = 130;
