//! One trajectory writer shared by the session and the question records, which are written
//! while the engine waits for an answer.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use ufo_core::{Recorder, RecorderError};

/// A recorder both the engine and the control state write through.
pub struct SharedRecorder<R>(Arc<Mutex<R>>);

impl<R> Clone for SharedRecorder<R> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<R: Recorder> SharedRecorder<R> {
    /// Share `recorder`.
    pub fn new(recorder: R) -> Self {
        Self(Arc::new(Mutex::new(recorder)))
    }

    /// The recorder itself, for the writes after the session.
    pub fn lock(&self) -> MutexGuard<'_, R> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<R: Recorder> Recorder for SharedRecorder<R> {
    fn event(&mut self, event: &Value) -> Result<(), RecorderError> {
        self.lock().event(event)
    }

    fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<String, RecorderError> {
        self.lock().artifact(name, bytes)
    }
}
