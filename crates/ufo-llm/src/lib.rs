//! Model backends for ufo-rs.
