//! The person: answers from a file, then the terminal (when there is one), under the
//! `--confirm` policy.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{ConfirmRequest, Decision, UserIo};

use crate::cli::ConfirmPolicy;

/// `UserIo` for the command line.
pub struct CliUser {
    confirm: ConfirmPolicy,
    answers: Mutex<VecDeque<String>>,
    requests: Mutex<VecDeque<String>>,
    tty: bool,
    timeout: Duration,
}

impl CliUser {
    /// A user with this policy, scripted answers and follow-up requests.
    pub fn new(confirm: ConfirmPolicy, answers: Vec<String>, requests: Vec<String>) -> Self {
        Self {
            confirm,
            answers: Mutex::new(answers.into()),
            requests: Mutex::new(requests.into()),
            tty: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            timeout: Duration::from_secs(300),
        }
    }

    fn pop(q: &Mutex<VecDeque<String>>) -> Option<String> {
        let mut g = q.lock().unwrap_or_else(|p| p.into_inner());
        g.pop_front()
    }

    /// Read one line from the terminal, bounded by the timeout; `None` on timeout or EOF.
    async fn read_line(&self, prompt: String) -> Option<String> {
        if !self.tty {
            return None;
        }
        let task = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = write!(err, "{prompt}");
            let _ = err.flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
            }
        });
        match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(line)) => line,
            _ => None,
        }
    }
}

#[async_trait]
impl UserIo for CliUser {
    async fn confirm(&self, request: &ConfirmRequest) -> Decision {
        match self.confirm {
            ConfirmPolicy::Yes => Decision::Approve,
            ConfirmPolicy::No => Decision::Reject,
            ConfirmPolicy::Ask => {
                let prompt = format!(
                    "\n{} wants to: {}\nApprove? [y/N] ",
                    request.agent, request.description
                );
                match self.read_line(prompt).await {
                    Some(a) if matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                        Decision::Approve
                    }
                    _ => Decision::Reject,
                }
            }
        }
    }

    async fn ask(&self, agent: &str, question: &str) -> Option<String> {
        if let Some(a) = Self::pop(&self.answers) {
            return Some(a);
        }
        self.read_line(format!("\n{agent} asks: {question}\n> "))
            .await
            .filter(|a| !a.trim().is_empty())
    }

    async fn follow_up(&self) -> Option<String> {
        if let Some(r) = Self::pop(&self.requests) {
            return Some(r);
        }
        self.read_line("\nAnything else? (empty line ends the session)\n> ".into())
            .await
            .filter(|a| !a.trim().is_empty())
    }
}
