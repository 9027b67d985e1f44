//! Desktop backends for ufo-rs.
//!
//! - [`sim`]: [`SimDesktop`], an in-process, deterministic desktop loaded from a JSON scenario
//!   (`--desktop sim:FILE`), used by tests and demos.
//! - [`annotate`]: drawing numbered boxes on screenshots and PNG encoding, shared with the live
//!   backend.

pub mod annotate;
pub mod sim;

pub use sim::SimDesktop;
