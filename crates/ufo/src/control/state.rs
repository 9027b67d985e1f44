//! What the control socket shares with the session: the open question, who has the desktop,
//! whether the session is cancelled, and a version counter that wakes the watchers and the
//! waits on each change. One lock guards it all, so "first answer wins" is decided in one
//! place ([`Control::close`], [`Control::answer_from_console`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use ufo_core::access::Owner;
use ufo_core::events::{Answered, Record};

use super::protocol::{AnswerValue, Ask, AskKind};
use super::screen::Screen;

/// How many answered questions are remembered (to tell a late answer who was first).
const HISTORY: usize = 64;

/// Who closed a question (the `by` of the `answered` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// Typed on ufo's terminal.
    Terminal,
    /// Sent through the control socket.
    Console,
    /// A line of `--answers`.
    AnswersFile,
    /// `--confirm yes|no`, or nobody could be asked (no terminal, no console).
    Policy,
    /// Nobody answered within the prompt timeout.
    Timeout,
    /// The session was cancelled while it asked.
    Cancelled,
}

impl By {
    /// Its name in the records.
    pub fn as_str(self) -> &'static str {
        match self {
            By::Terminal => "terminal",
            By::Console => "console",
            By::AnswersFile => "answers_file",
            By::Policy => "policy",
            By::Timeout => "timeout",
            By::Cancelled => "cancelled",
        }
    }

    /// How the refusal of a later answer names it.
    fn phrase(self) -> &'static str {
        match self {
            By::Terminal => "by the terminal",
            By::Console => "from the console",
            By::AnswersFile => "by the answers file",
            By::Policy => "by the --confirm policy",
            By::Timeout => "by the timeout",
            By::Cancelled => "by the cancellation",
        }
    }
}

/// Who has the desktop while the agent pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// The console sent `takeover`.
    Console,
    /// The person used the watched private desktop's window.
    Person,
}

impl Taken {
    fn as_str(self) -> &'static str {
        match self {
            Taken::Console => "console",
            Taken::Person => "person",
        }
    }
}

/// The kind of desktop the session drives (the state's `desktop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DesktopKind {
    /// This Linux session's X desktop.
    Live,
    /// A private desktop of ufo's own (the only one the console may take over).
    Private,
    /// The simulated desktop.
    Sim,
    /// A desktop served by `ufo serve`.
    Remote,
    /// Several devices as one.
    Devices,
}

impl DesktopKind {
    /// The kind of the desktop spec `spec` (`--desktop`), with `devices` devices, run inside a
    /// private desktop or not.
    pub fn of(spec: &str, devices: usize, inside_private: bool) -> Self {
        if devices > 0 {
            DesktopKind::Devices
        } else if spec.starts_with("sim:") {
            DesktopKind::Sim
        } else if spec.starts_with("remote:") {
            DesktopKind::Remote
        } else if inside_private {
            DesktopKind::Private
        } else {
            DesktopKind::Live
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            DesktopKind::Live => "live",
            DesktopKind::Private => "private",
            DesktopKind::Sim => "sim",
            DesktopKind::Remote => "remote",
            DesktopKind::Devices => "devices",
        }
    }
}

/// Where the question records go (the session's trajectory).
pub type RecordSink = Box<dyn Fn(&Value) + Send + Sync>;

struct OpenAsk {
    ask: Ask,
    console: Option<oneshot::Sender<AnswerValue>>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: Option<OpenAsk>,
    answered: VecDeque<(u64, By)>,
    taken: Option<Taken>,
    /// The engine is inside its pause (it asked whether the desktop was handed back).
    paused: bool,
}

/// The session's shared control state.
pub struct Control {
    inner: Mutex<Inner>,
    version: watch::Sender<u64>,
    cancel: Arc<AtomicBool>,
    desktop: DesktopKind,
    owner: Owner,
    records: RecordSink,
    screen: Option<Arc<dyn Screen>>,
}

impl Control {
    /// The state of a session of `owner` on `desktop`, cancelled through `cancel`, writing
    /// its question records to `records`; `screen` is the private desktop's screen (view and
    /// input).
    pub fn new(
        desktop: DesktopKind,
        owner: Owner,
        cancel: Arc<AtomicBool>,
        records: RecordSink,
        screen: Option<Arc<dyn Screen>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner::default()),
            version: watch::channel(0).0,
            cancel,
            desktop,
            owner,
            records,
            screen,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wake the watchers and the waits.
    fn changed(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// A receiver that sees each change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Who the session belongs to (who may reach it through the socket besides its user).
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Whether the session is cancelled (Ctrl-C or the console).
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// The state object of the protocol.
    pub fn state(&self) -> Value {
        let g = self.lock();
        json!({
            "ok": true,
            "pid": std::process::id(),
            "desktop": self.desktop.as_str(),
            "asking": g.open.as_ref().map(|o| serde_json::to_value(&o.ask).unwrap_or(Value::Null)),
            "taken": g.taken.map(Taken::as_str),
            "cancelled": self.cancelled(),
        })
    }

    // ---- questions --------------------------------------------------------------------

    /// Open a question: record it (`ask`) and show it to the console. The receiver gets the
    /// console's answer, if the console answers first.
    pub fn open(
        &self,
        kind: AskKind,
        agent: &str,
        text: &str,
    ) -> (u64, oneshot::Receiver<AnswerValue>) {
        let (tx, rx) = oneshot::channel();
        let mut g = self.lock();
        g.next_id += 1;
        let ask = Ask {
            id: g.next_id,
            kind,
            agent: agent.to_string(),
            text: text.to_string(),
        };
        (self.records)(
            &Record::Ask(ufo_core::events::Ask {
                ts: None,
                id: ask.id,
                kind: kind.as_str().into(),
                agent: ask.agent.clone(),
                text: ask.text.clone(),
            })
            .to_value(),
        );
        let id = ask.id;
        g.open = Some(OpenAsk {
            ask,
            console: Some(tx),
        });
        drop(g);
        self.changed();
        (id, rx)
    }

    /// Close question `id` with `value`, answered `by`; `Err` names who answered it first.
    pub fn close(&self, id: u64, by: By, value: Value) -> Result<(), String> {
        let mut g = self.lock();
        self.take_open(&mut g, id)?;
        self.record_answer(&mut g, id, by, value);
        drop(g);
        self.changed();
        Ok(())
    }

    /// The console's answer to question `id`: it wins when the question is still open and
    /// the answer fits its kind.
    pub fn answer_from_console(&self, id: u64, value: AnswerValue) -> Result<(), String> {
        let mut g = self.lock();
        if let Some(open) = &g.open {
            let fits = matches!(
                (open.ask.kind, &value),
                (AskKind::Confirm, AnswerValue::Approve(_))
                    | (AskKind::Pending, AnswerValue::Text(_))
            );
            if open.ask.id == id && !fits {
                return Err(match open.ask.kind {
                    AskKind::Confirm => format!(
                        "question {id} is a confirm; answer with \"approve\": true or false"
                    ),
                    AskKind::Pending => {
                        format!("question {id} is a question; answer with \"text\": \"...\"")
                    }
                });
            }
        }
        let mut open = self.take_open(&mut g, id)?;
        let recorded = match &value {
            AnswerValue::Approve(a) => Value::Bool(*a),
            AnswerValue::Text(t) => Value::String(t.clone()),
        };
        self.record_answer(&mut g, id, By::Console, recorded);
        if let Some(tx) = open.console.take() {
            let _ = tx.send(value);
        }
        drop(g);
        self.changed();
        Ok(())
    }

    fn take_open(&self, g: &mut Inner, id: u64) -> Result<OpenAsk, String> {
        if g.open.as_ref().is_some_and(|o| o.ask.id == id) {
            if let Some(open) = g.open.take() {
                return Ok(open);
            }
        }
        Err(match g.answered.iter().find(|(i, _)| *i == id) {
            Some((_, by)) => format!("question {id} was already answered ({})", by.phrase()),
            None => match &g.open {
                Some(o) => format!(
                    "question {id} is not the open question; the open one is {}",
                    o.ask.id
                ),
                None => format!("question {id} is not open; no question is open now"),
            },
        })
    }

    fn record_answer(&self, g: &mut Inner, id: u64, by: By, value: Value) {
        (self.records)(
            &Record::Answered(Answered {
                ts: None,
                id,
                by: by.as_str().into(),
                value,
            })
            .to_value(),
        );
        if g.answered.len() == HISTORY {
            g.answered.pop_front();
        }
        g.answered.push_back((id, by));
    }

    /// Resolves once question `id` is no longer open (someone answered it).
    pub async fn closed(&self, id: u64) {
        let mut rx = self.subscribe();
        loop {
            if self.lock().open.as_ref().is_none_or(|o| o.ask.id != id) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    // ---- take-over --------------------------------------------------------------------

    fn private_only(&self, op: &str) -> Result<(), String> {
        if self.desktop == DesktopKind::Private && self.screen.is_some() {
            return Ok(());
        }
        Err(format!(
            "{op} needs a private desktop (run the session with --desktop private); this \
             session's desktop is {}",
            self.desktop.as_str()
        ))
    }

    /// The console takes the private desktop over.
    pub fn takeover(&self) -> Result<(), String> {
        self.private_only("takeover")?;
        if self.cancelled() {
            return Err("the session is cancelled; it ends after the current step".into());
        }
        self.lock().taken = Some(Taken::Console);
        self.changed();
        Ok(())
    }

    /// The console hands the desktop back.
    pub fn handback(&self) -> Result<(), String> {
        self.private_only("handback")?;
        let mut g = self.lock();
        if g.taken != Some(Taken::Console) {
            return Err(
                "the desktop is not taken over from the console; send takeover first".into(),
            );
        }
        g.taken = None;
        drop(g);
        self.changed();
        Ok(())
    }

    /// The screen, while the console has the desktop.
    pub fn taken_screen(&self, op: &str) -> Result<Arc<dyn Screen>, String> {
        self.private_only(op)?;
        if self.lock().taken != Some(Taken::Console) {
            return Err(format!(
                "{op} works only while the console has the desktop; send takeover first"
            ));
        }
        self.screen
            .clone()
            .ok_or_else(|| format!("{op}: this session has no screen"))
    }

    /// Whether the console has the desktop.
    pub fn console_has_desktop(&self) -> bool {
        self.lock().taken == Some(Taken::Console)
    }

    /// The person's own take-over of the watched desktop began or ended (as the engine
    /// asked the desktop); a take-over by the console stays.
    pub fn set_person(&self, person: bool) {
        let mut g = self.lock();
        let now = match (g.taken, person) {
            (Some(Taken::Console), _) => return,
            (_, true) => Some(Taken::Person),
            (_, false) => None,
        };
        if g.taken != now {
            g.taken = now;
            drop(g);
            self.changed();
        }
    }

    /// The pause ended another way (Enter on the terminal): nobody has the desktop.
    pub fn clear_taken(&self) {
        let mut g = self.lock();
        g.paused = false;
        if g.taken.take().is_some() {
            drop(g);
            self.changed();
        }
    }

    /// The engine is in (or out of) its pause.
    pub fn set_paused(&self, paused: bool) {
        let mut g = self.lock();
        if g.paused != paused {
            g.paused = paused;
            drop(g);
            self.changed();
        }
    }

    /// Wait at most `within` for the engine to pause; whether it did.
    pub async fn wait_paused(&self, within: Duration) -> bool {
        let mut rx = self.subscribe();
        let wait = async {
            loop {
                if self.lock().paused {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(within, wait).await.unwrap_or(false)
    }

    /// Wait at most `within` until the console no longer has the desktop; whether it handed
    /// it back.
    pub async fn wait_console_handback(&self, within: Duration) -> bool {
        let mut rx = self.subscribe();
        let wait = async {
            loop {
                if !self.console_has_desktop() {
                    return;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(within, wait).await.is_ok()
    }

    // ---- cancel -----------------------------------------------------------------------

    /// Cancel the session as the first Ctrl-C does.
    pub fn cancel(&self) {
        if !self.cancel.swap(true, Ordering::SeqCst) {
            // commands run in process groups of their own: interrupt them as Ctrl-C does
            ufo_proc::interrupt_all();
            eprintln!(
                "\ncancelling (from the console): a model call in flight stops now, a running \
                 command is interrupted, an action in progress finishes"
            );
        }
        self.changed();
    }

    /// Wake the watchers when the cancel flag was set elsewhere (Ctrl-C); call it now and then.
    pub fn poll_cancel(&self, seen: &mut bool) {
        let now = self.cancelled();
        if now != *seen {
            *seen = now;
            self.changed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(kind: DesktopKind) -> (Arc<Control>, Arc<Mutex<Vec<Value>>>) {
        let records = Arc::new(Mutex::new(Vec::new()));
        let r = records.clone();
        let c = Control::new(
            kind,
            Owner::private_terminal(),
            Arc::new(AtomicBool::new(false)),
            Box::new(move |v| r.lock().unwrap_or_else(|p| p.into_inner()).push(v.clone())),
            None,
        );
        (c, records)
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_the_second_is_told_who_was_first() {
        let (c, records) = control(DesktopKind::Sim);
        let (id, rx) = c.open(AskKind::Confirm, "AppAgent/Writer", "click Delete All");
        assert_eq!(id, 1);
        assert_eq!(c.state()["asking"]["kind"], "confirm");
        // a text for a confirm does not fit
        let e = c
            .answer_from_console(1, AnswerValue::Text("y".into()))
            .expect_err("text for a confirm");
        assert!(e.contains("approve"), "{e}");
        c.answer_from_console(1, AnswerValue::Approve(true))
            .expect("the console is first");
        assert_eq!(rx.await.ok(), Some(AnswerValue::Approve(true)));
        let e = c.close(1, By::Terminal, true.into()).expect_err("second");
        assert_eq!(e, "question 1 was already answered (from the console)");
        assert!(c.state()["asking"].is_null());
        // the terminal first: the console is told
        let (id, _rx) = c.open(AskKind::Pending, "HostAgent", "Which file?");
        assert_eq!(id, 2);
        c.close(2, By::AnswersFile, "a.pdf".into()).expect("first");
        let e = c
            .answer_from_console(2, AnswerValue::Text("b".into()))
            .expect_err("second");
        assert_eq!(e, "question 2 was already answered (by the answers file)");
        let e = c
            .answer_from_console(9, AnswerValue::Text("b".into()))
            .expect_err("unknown");
        assert!(e.contains("not open"), "{e}");
        c.closed(2).await;
        let types: Vec<String> = records
            .lock()
            .map(|r| {
                r.iter()
                    .map(|v| format!("{}:{}", v["type"], v["by"]))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            types,
            [
                "\"ask\":null",
                "\"answered\":\"console\"",
                "\"ask\":null",
                "\"answered\":\"answers_file\""
            ]
        );
    }

    #[test]
    fn take_over_is_refused_off_a_private_desktop() {
        let (c, _) = control(DesktopKind::Sim);
        let e = c.takeover().expect_err("sim");
        assert!(e.contains("--desktop private") && e.contains("sim"), "{e}");
        assert!(c.handback().is_err() && c.taken_screen("view").is_err());
        assert!(c.state()["taken"].is_null());
    }

    #[test]
    fn the_desktop_kind_of_a_spec() {
        assert_eq!(DesktopKind::of("sim:x.json", 0, false), DesktopKind::Sim);
        assert_eq!(DesktopKind::of("live", 0, true), DesktopKind::Private);
        assert_eq!(DesktopKind::of("live", 0, false), DesktopKind::Live);
        assert_eq!(DesktopKind::of("live", 2, false), DesktopKind::Devices);
        assert_eq!(
            DesktopKind::of("remote:https://h", 0, false),
            DesktopKind::Remote
        );
    }
}
