//! Desktop backends for ufo-rs.
