//! The terminal side of `ufo run`: progress lines on stderr (coloured only on a terminal and
//! without `NO_COLOR`), verbosity levels, and a live status line (round, step, agent, state,
//! elapsed, tokens) drawn only when stderr is a terminal. Everything written to stderr while
//! the status line is shown goes through [`Console`] so the line is cleared and redrawn around
//! it; interactive prompts pause it. Nothing it writes shows a known secret value
//! ([`Console::write_raw`]).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use ufo_core::inert::inert;

/// How much `ufo run` says on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// `--quiet`: warnings and errors only.
    Quiet,
    /// Default: one line per step and a summary.
    Normal,
    /// `-v`: also each step's thought, model use and timings; info logs.
    Verbose,
    /// `-vv`: debug logs too.
    Debug,
}

impl Verbosity {
    /// From the `--quiet` flag and the number of `-v`.
    pub fn from_flags(quiet: bool, verbose: u8) -> Self {
        match (quiet, verbose) {
            (true, _) => Verbosity::Quiet,
            (false, 0) => Verbosity::Normal,
            (false, 1) => Verbosity::Verbose,
            (false, _) => Verbosity::Debug,
        }
    }
}

/// ANSI styles used on a colour terminal.
#[derive(Debug, Clone, Copy)]
pub enum Style {
    /// Bold.
    Bold,
    /// Dimmed.
    Dim,
    /// Green (FINISH).
    Green,
    /// Red (FAIL, errors).
    Red,
    /// Magenta (ERROR).
    Magenta,
    /// Yellow (CONFIRM, PENDING, prompts).
    Yellow,
    /// Cyan (agents).
    Cyan,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Green => "32",
            Style::Red => "31",
            Style::Magenta => "35",
            Style::Yellow => "33",
            Style::Cyan => "36",
        }
    }

    /// The style for a status word.
    pub fn for_status(status: &str) -> Style {
        match status {
            "FINISH" => Style::Green,
            "FAIL" | "REJECTED" => Style::Red,
            "ERROR" => Style::Magenta,
            "CONFIRM" | "PENDING" | "CANCELLED" => Style::Yellow,
            _ => Style::Bold,
        }
    }
}

#[derive(Debug, Default)]
struct Status {
    round: u64,
    steps: u64,
    seq: u64,
    agent: String,
    state: String,
    tokens: u64,
    cost: f64,
    /// Tokens per second of the last streamed answer.
    rate: Option<f64>,
}

/// Stderr for one `ufo` process.
pub struct Console {
    verbosity: Verbosity,
    color: bool,
    live: bool,
    started: Instant,
    bar: Mutex<Option<ProgressBar>>,
    status: Mutex<Status>,
    paused: Mutex<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether colour is wanted on a stream that is (or is not) a terminal: `NO_COLOR` (any
/// non-empty value) and `TERM=dumb` turn it off.
pub fn color_wanted(is_terminal: bool, env: &dyn Fn(&str) -> Option<String>) -> bool {
    is_terminal
        && !matches!(env("NO_COLOR"), Some(v) if !v.is_empty())
        && env("TERM").as_deref() != Some("dumb")
}

impl Console {
    /// A console for this process's stderr at a verbosity.
    pub fn new(verbosity: Verbosity) -> Arc<Self> {
        let tty = std::io::stderr().is_terminal();
        let env = |k: &str| std::env::var(k).ok();
        Arc::new(Self {
            verbosity,
            color: color_wanted(tty, &env),
            live: tty && verbosity > Verbosity::Quiet && env("TERM").as_deref() != Some("dumb"),
            started: Instant::now(),
            bar: Mutex::new(None),
            status: Mutex::new(Status::default()),
            paused: Mutex::new(false),
        })
    }

    /// The verbosity.
    pub fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    /// Whether progress lines are printed.
    pub fn progress(&self) -> bool {
        self.verbosity > Verbosity::Quiet
    }

    /// Whether output is coloured.
    pub fn color(&self) -> bool {
        self.color
    }

    /// `s` in a style when colour is on, else as it is.
    pub fn paint(&self, style: Style, s: &str) -> String {
        if self.color && !s.is_empty() {
            format!("\x1b[{}m{s}\x1b[0m", style.code())
        } else {
            s.to_string()
        }
    }

    /// Write raw bytes to stderr, clearing and redrawing the status line around them; known
    /// secret values are hidden first, whatever the text quotes (a control name in a CONFIRM
    /// prompt, a question, a log line).
    pub fn write_raw(&self, bytes: &[u8]) {
        let hidden = ufo_core::secrets::redactor().redact_bytes(bytes);
        let bytes = hidden.as_deref().unwrap_or(bytes);
        let bar = lock(&self.bar).clone();
        let write = || {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(bytes);
            let _ = err.flush();
        };
        match bar {
            Some(b) => b.suspend(write),
            None => write(),
        }
    }

    /// Print one line on stderr (a newline is added).
    pub fn line(&self, s: &str) {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s.as_bytes());
        v.push(b'\n');
        self.write_raw(&v);
    }

    /// Start the live status line (only on a terminal, not with `--quiet`).
    pub fn start_status(&self) {
        if self.live && !*lock(&self.paused) {
            self.show_bar();
        }
    }

    fn show_bar(&self) {
        let mut g = lock(&self.bar);
        if g.is_some() {
            return;
        }
        let style = ProgressStyle::with_template("{spinner} {prefix} | {elapsed} | {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style)
            .with_elapsed(self.started.elapsed());
        self.paint_status(&bar);
        bar.enable_steady_tick(Duration::from_millis(120));
        *g = Some(bar);
    }

    fn paint_status(&self, bar: &ProgressBar) {
        let s = lock(&self.status);
        let agent = if s.agent.is_empty() {
            "starting".to_string()
        } else {
            format!("{} {}", s.agent, s.state)
        };
        bar.set_prefix(format!(
            "round {} step {} (#{}) {}",
            s.round,
            s.steps,
            s.seq,
            self.paint(Style::Cyan, &agent)
        ));
        let rate = s
            .rate
            .map(|r| format!(", {r:.1} tok/s"))
            .unwrap_or_default();
        if s.cost > 0.0 {
            bar.set_message(format!("{} tokens{rate}, cost {:.4}", s.tokens, s.cost));
        } else {
            bar.set_message(format!("{} tokens{rate}", s.tokens));
        }
    }

    fn hide_bar(&self) {
        if let Some(b) = lock(&self.bar).take() {
            b.finish_and_clear();
        }
    }

    /// Hide the status line while the person is asked something.
    pub fn pause(&self) {
        *lock(&self.paused) = true;
        self.hide_bar();
    }

    /// Show the status line again after a prompt.
    pub fn resume(&self) {
        *lock(&self.paused) = false;
        self.start_status();
    }

    /// Remove the status line for good (the session ended).
    pub fn finish(&self) {
        *lock(&self.paused) = true;
        self.hide_bar();
    }

    /// Follow the trajectory: update the status line from a record.
    pub fn on_event(&self, e: &Value) {
        if e["type"] == "step" {
            let mut s = lock(&self.status);
            s.round = e["round"].as_u64().unwrap_or(s.round);
            s.steps = e["steps"].as_u64().unwrap_or(s.steps);
            s.seq = e["seq"].as_u64().unwrap_or(s.seq);
            // The agent's name holds an application's name from the screen: made inert, as
            // is everything shown from a record.
            s.agent = inert(e["agent"].as_str().unwrap_or("")).into_owned();
            s.state = format!(
                "{} -> {}",
                inert(e["state"].as_str().unwrap_or("")),
                inert(e["status"].as_str().unwrap_or(""))
            );
            s.tokens += e["llm"]["prompt_tokens"].as_u64().unwrap_or(0)
                + e["llm"]["completion_tokens"].as_u64().unwrap_or(0);
            s.cost += e["llm"]["cost"].as_f64().unwrap_or(0.0);
            if let Some(rate) = e["tokens_per_s"].as_f64() {
                s.rate = Some(rate);
            }
        }
        if e["type"] == "session_end" {
            self.finish();
            return;
        }
        if let Some(b) = lock(&self.bar).as_ref() {
            self.paint_status(b);
        }
    }
}

/// A `tracing` writer that prints through the [`Console`] (one event per write).
#[derive(Clone)]
pub struct ConsoleWriter(pub Arc<Console>);

/// The buffer of one log event; printed when dropped.
pub struct EventBuf {
    console: Arc<Console>,
    buf: Vec<u8>,
}

impl Write for EventBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for EventBuf {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.console.write_raw(&self.buf);
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for ConsoleWriter {
    type Writer = EventBuf;

    fn make_writer(&'a self) -> Self::Writer {
        EventBuf {
            console: self.0.clone(),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        let none = |_: &str| None;
        assert!(color_wanted(true, &none));
        assert!(!color_wanted(false, &none));
        assert!(!color_wanted(true, &|k: &str| (k == "NO_COLOR").then(|| "1".into())));
        assert!(color_wanted(true, &|k: &str| (k == "NO_COLOR").then(String::new)));
        assert!(!color_wanted(true, &|k: &str| (k == "TERM").then(|| "dumb".into())));
    }

    #[test]
    fn verbosity_levels() {
        assert_eq!(Verbosity::from_flags(true, 0), Verbosity::Quiet);
        assert_eq!(Verbosity::from_flags(false, 0), Verbosity::Normal);
        assert_eq!(Verbosity::from_flags(false, 1), Verbosity::Verbose);
        assert_eq!(Verbosity::from_flags(false, 3), Verbosity::Debug);
    }
}
