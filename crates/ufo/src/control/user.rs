//! The person behind two doors: the terminal (and `--answers`, `--confirm`) of [`CliUser`],
//! and the control socket. Each CONFIRM and PENDING opens a question (an `ask` record); the
//! first answer closes it (an `answered` record naming who), and the other side is told.
//!
//! Without a terminal, `--confirm ask` means no and a question goes unanswered, as before;
//! only with [`CONSOLE_VAR`] set (a session started by `ufo serve` for the page) does it
//! wait for the socket, up to the prompt timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;
use ufo_core::{ConfirmRequest, Decision, UserIo};

use super::protocol::{AnswerValue, AskKind};
use super::{By, Control};
use crate::config::ConfirmPolicy;
use crate::user::{is_yes, CliUser, Read};

/// Set (to `1`) in the environment of a session whose questions go to the console: without a
/// terminal, `--confirm ask` then waits for the control socket instead of meaning no.
pub const CONSOLE_VAR: &str = "UFO_CONSOLE";

/// Whether [`CONSOLE_VAR`] asks to wait for the console.
pub fn console_requested() -> bool {
    std::env::var(CONSOLE_VAR).is_ok_and(|v| !v.trim().is_empty() && v.trim() != "0")
}

/// A terminal prompt in progress.
type Terminal<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Read> + Send + 'a>>;

/// How an open question ended.
enum Ended {
    /// The console answered (and closed it).
    Console(AnswerValue),
    /// Something else answered with this (`None`: no answer).
    Here(By, Option<AnswerValue>),
}

/// `UserIo` that races the terminal with the control socket.
pub struct ConsoleUser {
    cli: CliUser,
    control: Arc<Control>,
    wait_for_console: bool,
    cancel: Arc<AtomicBool>,
}

impl ConsoleUser {
    /// `cli` with the console of `control`; `wait_for_console`: without a terminal, wait for
    /// the socket instead of answering no at once.
    pub fn new(
        cli: CliUser,
        control: Arc<Control>,
        wait_for_console: bool,
        cancel: Arc<AtomicBool>,
    ) -> Self {
        Self {
            cli,
            control,
            wait_for_console,
            cancel,
        }
    }

    async fn until_cancelled(&self) {
        while !self.cancel.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Wait for the answer to question `id`: from the terminal (`terminal`, when there is
    /// one) or the console, whichever comes first.
    async fn wait(
        &self,
        console: &mut oneshot::Receiver<AnswerValue>,
        terminal: Option<Terminal<'_>>,
        parse: impl Fn(String) -> Option<AnswerValue>,
    ) -> Ended {
        if let Some(terminal) = terminal {
            return match terminal.await {
                Read::Line(l) => match parse(l) {
                    Some(v) => Ended::Here(By::Terminal, Some(v)),
                    None => Ended::Here(By::Terminal, None),
                },
                Read::Stopped => match console.try_recv() {
                    Ok(v) => Ended::Console(v),
                    Err(_) => Ended::Here(By::Timeout, None),
                },
                Read::Cancelled => Ended::Here(By::Cancelled, None),
                Read::Timeout => Ended::Here(By::Timeout, None),
                Read::Closed | Read::NoTerminal => Ended::Here(By::Terminal, None),
            };
        }
        if !self.wait_for_console {
            return Ended::Here(By::Policy, None);
        }
        tokio::select! {
            v = console => match v {
                Ok(v) => Ended::Console(v),
                Err(_) => Ended::Here(By::Timeout, None),
            },
            _ = tokio::time::sleep(self.cli.timeout()) => Ended::Here(By::Timeout, None),
            _ = self.until_cancelled() => Ended::Here(By::Cancelled, None),
        }
    }

    /// Close question `id` with what `ended` says; the answer that counts (the console's when
    /// it came first after all).
    async fn settle(
        &self,
        id: u64,
        ended: Ended,
        console: oneshot::Receiver<AnswerValue>,
    ) -> (By, Option<AnswerValue>) {
        match ended {
            Ended::Console(v) => (By::Console, Some(v)),
            Ended::Here(by, v) => {
                let recorded = match &v {
                    Some(AnswerValue::Approve(a)) => Value::Bool(*a),
                    Some(AnswerValue::Text(t)) => Value::String(t.clone()),
                    None => Value::Null,
                };
                match self.control.close(id, by, recorded) {
                    Ok(()) => (by, v),
                    // the console answered in the same instant: its answer counts
                    Err(_) => match console.await {
                        Ok(v) => (By::Console, Some(v)),
                        Err(_) => (by, v),
                    },
                }
            }
        }
    }
}

#[async_trait]
impl UserIo for ConsoleUser {
    async fn confirm(&self, request: &ConfirmRequest) -> Decision {
        let text = self.cli.held_text(request);
        let (id, rx) = self.control.open(AskKind::Confirm, &request.agent, &text);
        let policy = match self.cli.policy() {
            ConfirmPolicy::Yes => Some(true),
            ConfirmPolicy::No => Some(false),
            ConfirmPolicy::Ask => None,
        };
        let (by, value) = if let Some(approve) = policy {
            let ended = Ended::Here(By::Policy, Some(AnswerValue::Approve(approve)));
            self.settle(id, ended, rx).await
        } else {
            let mut rx = rx;
            let terminal: Option<Terminal<'_>> = self.cli.has_terminal().then(|| {
                Box::pin(self.cli.terminal_confirm(request, self.control.closed(id))) as Terminal
            });
            let ended = match self
                .wait(&mut rx, terminal, |l| {
                    Some(AnswerValue::Approve(is_yes(&l)))
                })
                .await
            {
                // no answer is a rejection, and recorded as one
                Ended::Here(by, None) => Ended::Here(by, Some(AnswerValue::Approve(false))),
                ended => ended,
            };
            self.settle(id, ended, rx).await
        };
        let decision = match value {
            Some(AnswerValue::Approve(true)) => Decision::Approve,
            _ => Decision::Reject,
        };
        tracing::info!(id, by = by.as_str(), ?decision, "confirmation");
        if by != By::Policy {
            self.cli.show_decision(decision);
        }
        decision
    }

    async fn ask(&self, agent: &str, question: &str) -> Option<String> {
        let (id, mut rx) = self.control.open(AskKind::Pending, agent, question);
        let ended = match self.cli.scripted_answer() {
            Some(a) => Ended::Here(By::AnswersFile, Some(AnswerValue::Text(a))),
            None => {
                let terminal: Option<Terminal<'_>> = self.cli.has_terminal().then(|| {
                    Box::pin(
                        self.cli
                            .terminal_ask(agent, question, self.control.closed(id)),
                    ) as Terminal
                });
                self.wait(&mut rx, terminal, |l| {
                    (!l.trim().is_empty()).then_some(AnswerValue::Text(l))
                })
                .await
            }
        };
        let (by, value) = self.settle(id, ended, rx).await;
        tracing::info!(id, agent, question, by = by.as_str(), "question");
        match value {
            Some(AnswerValue::Text(t)) if !t.trim().is_empty() => Some(t),
            _ => None,
        }
    }

    async fn follow_up(&self) -> Option<String> {
        self.cli.follow_up().await
    }

    async fn handback_requested(&self, first: bool) -> bool {
        self.cli.handback_requested(first).await
    }
}
