//! Test doubles of the ports that hold no logic of their own, for tests of this workspace and
//! of anyone building on ufo-core (feature `testing`): a recorder that keeps everything in
//! memory and a person who answers from a list. The simulated desktop (`ufo-desktop`) and the
//! scripted model (`ufo-llm`) are the doubles of the other two ports.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use crate::ports::{ConfirmRequest, Decision, Recorder, RecorderError, UserIo};

/// A [`Recorder`] that keeps every event and artifact in memory.
#[derive(Debug, Default)]
pub struct MemoryRecorder {
    /// The events, in order.
    pub events: Vec<Value>,
    /// The artifacts, in order, with their names (a name written twice appears twice).
    pub artifacts: Vec<(String, Vec<u8>)>,
}

impl MemoryRecorder {
    /// The last artifact written under `name`.
    pub fn artifact_bytes(&self, name: &str) -> Option<&[u8]> {
        self.artifacts
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }

    /// The events of one `type` (`step`, `round_end`, ...).
    pub fn of_type<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events.iter().filter(move |e| e["type"] == kind)
    }
}

impl Recorder for MemoryRecorder {
    fn event(&mut self, event: &Value) -> Result<(), RecorderError> {
        self.events.push(event.clone());
        Ok(())
    }

    fn artifact(&mut self, name: &str, bytes: &[u8]) -> Result<String, RecorderError> {
        self.artifacts.push((name.to_string(), bytes.to_vec()));
        Ok(name.to_string())
    }
}

/// A [`UserIo`] that approves or rejects every held action the same way, answers questions
/// from a list (then no answer), has no follow-up requests, and logs what it was asked.
#[derive(Debug)]
pub struct ListedPerson {
    decision: Decision,
    answers: Mutex<VecDeque<String>>,
    log: Mutex<Vec<String>>,
}

impl ListedPerson {
    /// A person who gives `decision` to every confirmation and `answers` to questions, in order.
    pub fn new(decision: Decision, answers: impl IntoIterator<Item = String>) -> Self {
        Self {
            decision,
            answers: Mutex::new(answers.into_iter().collect()),
            log: Mutex::new(Vec::new()),
        }
    }

    /// What the person was asked, in order: `confirm <description>` and `ask <question>`.
    pub fn asked(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn note(&self, line: String) {
        if let Ok(mut l) = self.log.lock() {
            l.push(line);
        }
    }
}

#[async_trait]
impl UserIo for ListedPerson {
    async fn confirm(&self, request: &ConfirmRequest) -> Decision {
        self.note(format!("confirm {}", request.description));
        self.decision
    }

    async fn ask(&self, _agent: &str, question: &str) -> Option<String> {
        self.note(format!("ask {question}"));
        self.answers.lock().ok().and_then(|mut a| a.pop_front())
    }

    async fn follow_up(&self) -> Option<String> {
        None
    }
}
