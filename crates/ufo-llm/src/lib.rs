//! Model backends for ufo-rs: implementations of the [`ufo_core::ports::LlmClient`] port.
//!
//! - [`script`]: the scripted model (`--llm script:FILE`), answers from a JSON Lines file,
//!   used by tests.

pub mod script;

pub use script::ScriptedModel;
