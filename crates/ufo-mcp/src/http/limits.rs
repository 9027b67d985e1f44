//! The bounds of `ufo serve` ([`Limits`]): sizes, timeouts, connections, failed tokens and
//! MCP sessions, with their defaults.

use std::time::Duration;

/// The bounds of the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, declared or chunked (413 beyond).
    pub max_body_bytes: usize,
    /// Largest request head: the request line and the headers (431 beyond).
    pub max_header_bytes: usize,
    /// Longest wait for a response to start.
    pub request_timeout: Duration,
    /// A connection that has shown a valid token and then sends no request head this long is
    /// closed; also bounds the TLS handshake.
    pub idle_timeout: Duration,
    /// A connection that has not shown a valid token this long after it was accepted is
    /// closed (TLS handshake included).
    pub first_request_timeout: Duration,
    /// Connections served at once. When all are taken, a new one replaces the oldest that
    /// has not shown a valid token; it is closed only when every one has.
    pub max_connections: usize,
    /// Failed authentications per client address per `failure_window` before the address is
    /// locked out (429, whatever token it sends); the same count per token presented makes
    /// that token answer 429 unchecked.
    pub max_failures: u32,
    /// Failed authentications per network (IPv4 /24, IPv6 /64, loopback as one) per
    /// `failure_window` before its further bad tokens answer 429 (a valid one still passes).
    pub max_network_failures: u32,
    /// See `max_failures`.
    pub failure_window: Duration,
    /// MCP sessions one token keeps; a new `initialize` beyond closes its least recently
    /// used one.
    pub max_mcp_sessions_per_token: usize,
    /// How long a shutdown waits for open requests.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1 << 20,
            max_header_bytes: 32 * 1024,
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(30),
            first_request_timeout: Duration::from_secs(10),
            max_connections: 256,
            max_failures: 10,
            max_network_failures: 30,
            failure_window: Duration::from_secs(60),
            max_mcp_sessions_per_token: 16,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}
