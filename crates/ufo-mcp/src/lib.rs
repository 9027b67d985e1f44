//! `ufo-mcp`: the Model Context Protocol for ufo-rs, with `rmcp` (the official Rust SDK).
//!
//! - [`McpTools`]: a [`ufo_core::ToolProvider`] over MCP servers (stdio child processes or
//!   streamable HTTP) configured per application or globally. The AppAgents see their tools
//!   beside the GUI functions; Args are checked against each tool's input schema
//!   ([`schema::validate`]) before a call; every call is bounded by a timeout.
//! - [`DesktopServer`]: an MCP server exposing a [`ufo_core::Desktop`] (list windows, observe a
//!   window with its annotated screenshot, act, type, launch), for `ufo mcp serve`. Acting
//!   tools are refused unless actions are allowed.
//! - [`remote::RemoteDesktop`]: the [`ufo_core::Desktop`] port over MCP streamable HTTP, for
//!   `--desktop remote:URL` against `ufo serve`.

mod bounded;
mod bounded_http;
pub mod client;
pub mod http;
pub mod remote;
pub mod schema;
pub mod server;

pub use bounded::MAX_MESSAGE_BYTES;
pub use client::{McpConfigError, McpConnectError, McpServerConfig, McpTools, DEFAULT_TIMEOUT_MS};
pub use server::{serve_stdio, DesktopServer, ServeError, ToolCallError};
