//! The person: answers from a file, then the terminal (when there is one), under the
//! `--confirm` policy.
//!
//! Prompts are written to stderr and answers read from stdin, only when both are terminals.
//! One background thread reads stdin line by line; lines typed while nothing was asked are
//! dropped before each prompt, so a late answer never answers the next question. Each prompt
//! waits at most the timeout (5 minutes; `UFO_PROMPT_TIMEOUT_SECS` overrides it, undocumented
//! for now), after which it counts as no answer.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use ufo_core::inert::{inert, inert_exact, needs_escaping};
use ufo_core::{ConfirmRequest, Decision, UserIo};

use crate::config::ConfirmPolicy;
use crate::console::{Console, Style, Verbosity};

/// Default time a prompt waits for the person.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Environment variable overriding the prompt timeout (seconds, fractions allowed).
pub const TIMEOUT_ENV: &str = "UFO_PROMPT_TIMEOUT_SECS";

/// The prompt timeout from [`TIMEOUT_ENV`], else the default; a bad value is reported and
/// ignored.
fn timeout_from_env(value: Option<String>) -> (Duration, Option<String>) {
    match value {
        None => (DEFAULT_TIMEOUT, None),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => (Duration::from_secs_f64(s), None),
            _ => (
                DEFAULT_TIMEOUT,
                Some(format!(
                    "{TIMEOUT_ENV} is {v:?}; set it to a number of seconds above 0 (using 300)"
                )),
            ),
        },
    }
}

/// Lines from stdin, read by one background thread. `None` in the channel means end of input.
struct StdinLines {
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Option<String>>>,
    eof: AtomicBool,
}

impl StdinLines {
    fn start() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread (not the runtime's blocking pool): a read still waiting when the
        // session ends must not keep the process alive.
        let spawned = std::thread::Builder::new()
            .name("ufo-stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut line = String::new();
                    match stdin.lock().read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(None);
                            return;
                        }
                        Ok(_) => {
                            let l = line.trim_end_matches(['\r', '\n']).to_string();
                            if tx.send(Some(l)).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        let eof = AtomicBool::new(spawned.is_err());
        Self {
            rx: tokio::sync::Mutex::new(rx),
            eof,
        }
    }

    /// Drop what was typed while nothing was asked; false when input has ended.
    async fn drain(&self) -> bool {
        if self.eof.load(Ordering::SeqCst) {
            return false;
        }
        let mut rx = self.rx.lock().await;
        while let Ok(x) = rx.try_recv() {
            if x.is_none() {
                self.eof.store(true, Ordering::SeqCst);
                return false;
            }
        }
        true
    }

    /// The next line, within `timeout`; `None` on timeout or EOF.
    async fn next(&self, timeout: Duration) -> Option<String> {
        if self.eof.load(Ordering::SeqCst) {
            return None;
        }
        let mut rx = self.rx.lock().await;
        match tokio::time::timeout(timeout, rx.recv()).await {
            Ok(Some(Some(line))) => Some(line),
            Ok(_) => {
                self.eof.store(true, Ordering::SeqCst);
                None
            }
            Err(_) => None,
        }
    }
}

/// How a terminal prompt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// The person typed this line.
    Line(String),
    /// There is no terminal to ask.
    NoTerminal,
    /// Nothing was typed within the timeout.
    Timeout,
    /// The input ended (Ctrl-D).
    Closed,
    /// The session was cancelled.
    Cancelled,
    /// The question was answered elsewhere first.
    Stopped,
}

/// Whether a typed line approves (`y` or `yes`, any case).
pub fn is_yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `UserIo` for the command line.
pub struct CliUser {
    confirm: ConfirmPolicy,
    answers: Mutex<VecDeque<String>>,
    requests: Mutex<VecDeque<String>>,
    tty: bool,
    timeout: Duration,
    console: Arc<Console>,
    stdin: std::sync::OnceLock<StdinLines>,
    cancel: Option<Arc<AtomicBool>>,
}

impl CliUser {
    /// A user with this policy, scripted answers and follow-up requests.
    #[allow(dead_code)]
    pub fn new(confirm: ConfirmPolicy, answers: Vec<String>, requests: Vec<String>) -> Self {
        Self::with_console(confirm, answers, requests, Console::new(Verbosity::Normal))
    }

    /// As [`CliUser::new`], prompting through `console` (which pauses the status line).
    pub fn with_console(
        confirm: ConfirmPolicy,
        answers: Vec<String>,
        requests: Vec<String>,
        console: Arc<Console>,
    ) -> Self {
        let (timeout, warning) = timeout_from_env(std::env::var(TIMEOUT_ENV).ok());
        if let Some(w) = warning {
            console.line(&format!("warning: {w}"));
        }
        Self {
            confirm,
            answers: Mutex::new(answers.into()),
            requests: Mutex::new(requests.into()),
            tty: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            timeout,
            console,
            stdin: std::sync::OnceLock::new(),
            cancel: None,
        }
    }

    /// Watch the Ctrl-C flag: once it is set, a prompt being shown stops waiting and counts
    /// as no answer (so the session can end CANCELLED after the current step), and no new
    /// prompt is shown.
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = Some(cancel);
        self
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::SeqCst))
    }

    /// Resolves once Ctrl-C was pressed (never without a flag).
    async fn until_cancelled(&self) {
        loop {
            if self.cancelled() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn pop(q: &Mutex<VecDeque<String>>) -> Option<String> {
        let mut g = q.lock().unwrap_or_else(|p| p.into_inner());
        g.pop_front()
    }

    /// Show `prompt` and read one line from the terminal, bounded by the timeout; `None` on
    /// timeout, EOF, or without a terminal.
    async fn read_line(&self, prompt: String) -> Option<String> {
        match self.read_line_until(prompt, std::future::pending()).await {
            Read::Line(l) => Some(l),
            _ => None,
        }
    }

    /// As [`read_line`](Self::read_line), but the prompt also ends when `stop` resolves (the
    /// question was answered elsewhere first); the terminal is told so.
    async fn read_line_until(
        &self,
        prompt: String,
        stop: impl std::future::Future<Output = ()>,
    ) -> Read {
        if !self.tty {
            return Read::NoTerminal;
        }
        if self.cancelled() {
            return Read::Cancelled;
        }
        let lines = self.stdin.get_or_init(StdinLines::start);
        // Drop earlier keystrokes before the question is shown, never after: an answer
        // typed as soon as the prompt appears must count.
        if !lines.drain().await {
            return Read::Closed;
        }
        self.console.pause();
        self.console.write_raw(prompt.as_bytes());
        let answer = tokio::select! {
            a = lines.next(self.timeout) => match a {
                Some(line) => Read::Line(line),
                None if lines.eof.load(Ordering::SeqCst) => Read::Closed,
                None => Read::Timeout,
            },
            _ = self.until_cancelled() => Read::Cancelled,
            _ = stop => Read::Stopped,
        };
        let why = match &answer {
            Read::Line(_) | Read::NoTerminal => None,
            Read::Cancelled => Some("\n(cancelled; counted as no answer)".to_string()),
            Read::Closed => Some("\n(input closed; counted as no answer)".to_string()),
            Read::Timeout => Some(format!(
                "\n(no answer within {} s; counted as no answer)",
                self.timeout.as_secs_f64()
            )),
            Read::Stopped => Some("\n(answered from the console)".to_string()),
        };
        if let Some(why) = why {
            self.console.line(&self.console.paint(Style::Yellow, &why));
        }
        self.console.resume();
        answer
    }

    /// The `--confirm` policy.
    pub fn policy(&self) -> ConfirmPolicy {
        self.confirm
    }

    /// Whether prompts are shown on a terminal.
    pub fn has_terminal(&self) -> bool {
        self.tty
    }

    /// How long a prompt waits for an answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The next answer of the `--answers` file, if any is left.
    pub fn scripted_answer(&self) -> Option<String> {
        Self::pop(&self.answers)
    }

    /// The held action exactly as the terminal shows it, without colours or the prompt.
    pub fn held_text(&self, request: &ConfirmRequest) -> String {
        self.describe_held(request, true)
    }

    /// Ask the terminal to approve `request` until `stop`; the decision typed, if any.
    pub async fn terminal_confirm(
        &self,
        request: &ConfirmRequest,
        stop: impl std::future::Future<Output = ()>,
    ) -> Read {
        let prompt = self.describe_held(request, false);
        self.read_line_until(prompt, stop).await
    }

    /// Ask the terminal `question` of `agent` until `stop`.
    pub async fn terminal_ask(
        &self,
        agent: &str,
        question: &str,
        stop: impl std::future::Future<Output = ()>,
    ) -> Read {
        self.read_line_until(self.question_prompt(agent, question), stop)
            .await
    }

    fn question_prompt(&self, agent: &str, question: &str) -> String {
        format!(
            "\n{} {} asks: {}\n> ",
            self.console.paint(Style::Yellow, "QUESTION"),
            self.console.paint(Style::Cyan, &inert(agent)),
            self.console.paint(Style::Bold, &inert(question))
        )
    }

    /// Say on the terminal how a confirmation ended.
    pub fn show_decision(&self, decision: Decision) {
        if self.tty {
            let word = match decision {
                Decision::Approve => self.console.paint(Style::Green, "approved"),
                Decision::Reject => self.console.paint(Style::Red, "rejected"),
            };
            self.console.line(&word);
        }
    }

    /// The lines that show a held action: what it is, on which control, with which text.
    /// Everything in it came from a model or the screen, so it is made inert first: a control
    /// character or escape sequence is shown escaped and can never redraw the prompt.
    /// `plain`: without colours, the leading blank line and the closing prompt (the text the
    /// console shows).
    fn describe_held(&self, request: &ConfirmRequest, plain: bool) -> String {
        let c = &self.console;
        let paint = |style: Style, text: &str| {
            if plain {
                text.to_string()
            } else {
                c.paint(style, text)
            }
        };
        let a = &request.action;
        let held = a.get("held").unwrap_or(a);
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let mut out = format!(
            "\n{} {} wants to: {}\n",
            paint(Style::Yellow, "CONFIRM"),
            paint(Style::Cyan, &inert(&request.agent)),
            paint(Style::Bold, &inert(&request.description))
        );
        let (label, text) = (field(held, "control_label"), field(held, "control_text"));
        if !label.is_empty() || !text.is_empty() {
            out.push_str(&format!(
                "  control: [{}] {}\n",
                inert(&label),
                inert(&text)
            ));
        }
        let args = held.get("args").cloned().unwrap_or(Value::Null);
        for (k, name) in [
            ("text", "text to type"),
            ("keys", "keys to type"),
            ("item", "item"),
        ] {
            if let Some(v) = args.get(k).and_then(Value::as_str) {
                out.push_str(&format!("  {name}: \"{}\"\n", inert_exact(v)));
            }
        }
        // The command to approve, exactly and on one line: the host's `Bash`, or a shell
        // agent's `command`.
        let bash = field(held, "bash");
        let command = if bash.is_empty() {
            field(&args, "command")
        } else {
            bash
        };
        if !command.is_empty() {
            out.push_str(&format!(
                "  shell command: {}\n",
                paint(Style::Bold, &inert_exact(&command))
            ));
            if needs_escaping(&command) {
                out.push_str(
                    "  (shown escaped: \\n is a newline, \\r a carriage return, \\x1b an escape, \\u{a0} a no-break space (any \\u{…} is one character by its code), \\\\ one backslash)\n",
                );
            }
        }
        if plain {
            return out.trim().to_string();
        }
        out.push_str("Approve? [y/N] ");
        out
    }
}

#[async_trait]
impl UserIo for CliUser {
    async fn confirm(&self, request: &ConfirmRequest) -> Decision {
        match self.confirm {
            ConfirmPolicy::Yes => Decision::Approve,
            ConfirmPolicy::No => Decision::Reject,
            ConfirmPolicy::Ask => {
                let prompt = self.describe_held(request, false);
                let decision = match self.read_line(prompt).await {
                    Some(a) if is_yes(&a) => Decision::Approve,
                    _ => Decision::Reject,
                };
                tracing::info!(agent = %inert(&request.agent), action = %inert(&request.description), ?decision, "confirmation");
                self.show_decision(decision);
                decision
            }
        }
    }

    async fn ask(&self, agent: &str, question: &str) -> Option<String> {
        if let Some(a) = Self::pop(&self.answers) {
            return Some(a);
        }
        let prompt = self.question_prompt(agent, question);
        let answer = self
            .read_line(prompt)
            .await
            .filter(|a| !a.trim().is_empty());
        tracing::info!(agent, question, answered = answer.is_some(), "question");
        answer
    }

    async fn handback_requested(&self, first: bool) -> bool {
        if !self.tty || self.cancelled() {
            return false;
        }
        let lines = self.stdin.get_or_init(StdinLines::start);
        if first {
            // a line typed before the take-over does not hand it back
            if lines.drain().await {
                self.console.line(&self.console.paint(
                    Style::Yellow,
                    "Press Enter here, or Pause in the desktop's window, to hand the desktop back to the agent.",
                ));
            }
            return false;
        }
        lines.next(Duration::ZERO).await.is_some()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_timeout_from_the_environment() {
        assert_eq!(timeout_from_env(None), (DEFAULT_TIMEOUT, None));
        assert_eq!(
            timeout_from_env(Some("1".into())),
            (Duration::from_secs(1), None)
        );
        assert_eq!(
            timeout_from_env(Some("0.5".into())).0,
            Duration::from_millis(500)
        );
        for bad in ["0", "-1", "soon", "inf"] {
            let (d, w) = timeout_from_env(Some(bad.into()));
            assert_eq!(d, DEFAULT_TIMEOUT);
            assert!(w.is_some_and(|w| w.contains(TIMEOUT_ENV)), "{bad}");
        }
    }
}
