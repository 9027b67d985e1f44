//! One feature's state behind a lock of its own ([`Part`]), so that a feature locks only what
//! it owns. The bottom layer: it imports nothing of the crate.

use std::sync::{Mutex, MutexGuard};

/// One feature's state behind a lock of its own.
#[derive(Default)]
pub(crate) struct Part<T>(Mutex<T>);

impl<T> Part<T> {
    /// The state, locked (never held across an await).
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
