//! The knowledge store.
