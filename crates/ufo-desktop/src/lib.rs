//! Desktop backends for ufo-rs.
//!
//! - [`sim`]: [`SimDesktop`], an in-process, deterministic desktop loaded from a JSON scenario
//!   (`--desktop sim:FILE`), used by tests and demos.
//! - [`annotate`]: drawing numbered boxes on screenshots and PNG encoding, shared with the live
//!   backend.
//! - `testing` (feature `testing`): when tests that need a desktop session or an installed
//!   peer run, one rule for every test crate.

pub mod annotate;
pub mod sim;
#[cfg(feature = "testing")]
pub mod testing;

pub use sim::SimDesktop;
