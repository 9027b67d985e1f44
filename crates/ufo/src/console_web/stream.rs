//! `GET /api/sessions/{id}/events`: a session's `events.jsonl` as Server-Sent Events, from
//! the start and then as it grows (polled every [`POLL`]), each line as `event: record` and
//! its progress line (as `ufo run` prints it) as `event: progress`; the control socket's state
//! as `event: state` on each change; `event: end` after `session_end`, once the session no
//! longer runs and the file stops growing, or once the token of the page's login is revoked.
//!
//! A stream holds what it uses only while the page is there: it ends, and lets go of its
//! watch on the session's control socket, as soon as the page goes. One token keeps at most
//! [`MAX_STREAMS_PER_TOKEN`] streams open ([`Streams`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use ufo_core::access::Caller;

use super::sessions::Children;
use super::socket;

/// How often the file is read for new lines.
pub const POLL: Duration = Duration::from_millis(200);
/// Longest line sent; a longer one is replaced by `{"type":"omitted","bytes":N}`.
pub const MAX_EVENT_LINE: usize = 1 << 20;
/// Most bytes read per poll.
const CHUNK: u64 = 1 << 20;
/// Events queued for a slow page before the reader waits.
const QUEUE: usize = 64;
/// Streams one token keeps open at once.
pub const MAX_STREAMS_PER_TOKEN: usize = 8;
/// How often (in polls) a stream checks that its token is still valid.
const CHECK_TOKEN_EVERY: u32 = 5;

/// The streams open per token.
#[derive(Debug, Default)]
pub struct Streams {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream of a token, counted until it is dropped.
#[derive(Debug)]
pub struct Slot {
    streams: Arc<Streams>,
    token_id: String,
}

impl Streams {
    /// A slot for one more stream of `token_id`, unless it has [`MAX_STREAMS_PER_TOKEN`].
    pub fn take(self: &Arc<Self>, token_id: &str) -> Option<Slot> {
        let mut open = self.open.lock().ok()?;
        let n = open.entry(token_id.to_string()).or_default();
        if *n >= MAX_STREAMS_PER_TOKEN {
            return None;
        }
        *n += 1;
        Some(Slot {
            streams: self.clone(),
            token_id: token_id.to_string(),
        })
    }

    /// How many streams `token_id` has open.
    #[cfg(test)]
    pub fn open_for(&self, token_id: &str) -> usize {
        self.open
            .lock()
            .map(|o| o.get(token_id).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock() {
            if let Some(n) = open.get_mut(&self.token_id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.remove(&self.token_id);
                }
            }
        }
    }
}

/// Whom a stream is for: the caller (its requests to the control socket say so), whether its
/// token is still valid, and its slot.
pub struct Reader {
    /// The caller.
    pub caller: Caller,
    /// False once the token of the page's login is revoked.
    pub valid: Box<dyn Fn() -> bool + Send + Sync>,
    /// Its place among the token's streams.
    pub slot: Slot,
}

/// Splits appended bytes into whole lines, each at most [`MAX_EVENT_LINE`] bytes.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
    skipped: usize,
}

/// A line out of [`Lines`].
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A whole line (without its newline).
    Whole(String),
    /// A line longer than the bound: only its length.
    TooLong(usize),
}

impl Lines {
    /// Feed bytes; the lines they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let ends = piece.last() == Some(&b'\n');
            let body = if ends {
                &piece[..piece.len() - 1]
            } else {
                piece
            };
            if self.skipped > 0 || self.partial.len() + body.len() > MAX_EVENT_LINE {
                self.skipped += self.partial.len() + body.len();
                self.partial.clear();
            } else {
                self.partial.extend_from_slice(body);
            }
            if ends {
                if self.skipped > 0 {
                    out.push(Line::TooLong(self.skipped));
                    self.skipped = 0;
                } else {
                    let line = String::from_utf8_lossy(&self.partial).into_owned();
                    self.partial.clear();
                    if !line.trim().is_empty() {
                        out.push(Line::Whole(line));
                    }
                }
            }
        }
        out
    }
}

/// Read what `events` holds after `offset` (at most [`CHUNK`] bytes).
fn read_from(events: &Path, offset: u64) -> Vec<u8> {
    let Ok(mut f) = crate::folder::open_read(events) else {
        return Vec::new();
    };
    if f.seek(SeekFrom::Start(offset)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let _ = f.take(CHUNK).read_to_end(&mut buf);
    buf
}

/// The SSE response for the session in `dir` (`id` in `children`), for `reader`.
pub fn events(
    dir: PathBuf,
    id: String,
    children: Arc<Children>,
    reader: Reader,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Event>(QUEUE);
    let done = CancellationToken::new();
    tokio::spawn(watch_state(
        dir.clone(),
        reader.caller.clone(),
        tx.clone(),
        done.clone(),
    ));
    tokio::spawn(tail(dir, id, children, reader, tx, done));
    let stream =
        futures::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
        );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Send the control socket's state lines until `done` or the page goes (which ends the watch
/// on the socket at once, so closed pages hold none of its connections); reconnect while the
/// socket is there (the session may not have made it yet).
async fn watch_state(
    dir: PathBuf,
    caller: Caller,
    tx: mpsc::Sender<Event>,
    done: CancellationToken,
) {
    let sock = socket::path(&dir);
    while !done.is_cancelled() && !tx.is_closed() {
        if crate::folder::exists(&sock) {
            if let Ok(mut w) = socket::Watch::start(&sock, &caller).await {
                loop {
                    let state = tokio::select! {
                        () = tx.closed() => return,
                        () = done.cancelled() => return,
                        state = w.next() => state,
                    };
                    // the session refused (or ended): stop watching
                    let Some(state) = state.filter(|s| s["ok"] != false) else {
                        break;
                    };
                    if tx
                        .send(Event::default().event("state").data(state.to_string()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        tokio::select! {
            () = tx.closed() => return,
            () = done.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

/// Send the file's lines as they come; `end` after `session_end`, or when the session is no
/// longer running and nothing more comes.
async fn tail(
    dir: PathBuf,
    id: String,
    children: Arc<Children>,
    reader: Reader,
    tx: mpsc::Sender<Event>,
    done: CancellationToken,
) {
    // whichever way the tail ends, the state watch ends with it (and so the stream), and the
    // token's stream slot is given back
    let _end_watch = done.clone().drop_guard();
    let Reader {
        valid, slot: _slot, ..
    } = reader;
    let events = dir.join("events.jsonl");
    let mut offset = 0u64;
    let mut lines = Lines::default();
    let mut ended = false;
    let mut quiet_polls = 0u32;
    let mut polls = 0u32;
    loop {
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(CHECK_TOKEN_EVERY) && !valid() {
            send_end(&tx, "token revoked").await;
            return;
        }
        let path = events.clone();
        let bytes = tokio::task::spawn_blocking(move || read_from(&path, offset))
            .await
            .unwrap_or_default();
        offset += bytes.len() as u64;
        match send_records(&tx, &mut lines, &bytes).await {
            Some(end_seen) => ended |= end_seen,
            None => return,
        }
        let running = children.is_running(&id) || crate::folder::exists(&socket::path(&dir));
        if bytes.is_empty() {
            quiet_polls = quiet_polls.saturating_add(1);
        } else {
            quiet_polls = 0;
        }
        // after session_end: the lines still coming (experience summaries) within a second
        if (ended && quiet_polls >= 5) || (!running && quiet_polls >= 10) {
            send_end(&tx, if ended { "session_end" } else { "not running" }).await;
            return;
        }
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Sends the stream's `end` event saying `why` (a stream already closed is not an error).
async fn send_end(tx: &mpsc::Sender<Event>, why: &str) {
    let _ = tx
        .send(
            Event::default()
                .event("end")
                .data(json!({"why": why}).to_string()),
        )
        .await;
}

/// Sends the whole lines `bytes` complete as `record` events, each followed by its `progress`
/// line if it has one: whether a `session_end` record was among them, `None` once the
/// receiver is gone.
async fn send_records(tx: &mpsc::Sender<Event>, lines: &mut Lines, bytes: &[u8]) -> Option<bool> {
    let mut ended = false;
    for line in lines.feed(bytes) {
        let record = match line {
            Line::Whole(l) => l,
            Line::TooLong(n) => json!({"type": "omitted", "bytes": n}).to_string(),
        };
        let value: Value = serde_json::from_str(&record).unwrap_or(Value::Null);
        if value["type"] == "session_end" {
            ended = true;
        }
        tx.send(Event::default().event("record").data(record))
            .await
            .ok()?;
        if let Some(p) = crate::recorder::progress_line(&value, &|_, t| t.to_string()) {
            tx.send(Event::default().event("progress").data(p))
                .await
                .ok()?;
        }
    }
    Some(ended)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_come_whole_across_reads_and_long_ones_are_cut() {
        let mut l = Lines::default();
        assert!(l.feed(b"{\"a\":").is_empty());
        assert_eq!(
            l.feed(b"1}\n{\"b\":2}\n{\"c"),
            [
                Line::Whole("{\"a\":1}".into()),
                Line::Whole("{\"b\":2}".into())
            ]
        );
        let long = vec![b'x'; MAX_EVENT_LINE + 10];
        assert!(l.feed(&long).is_empty());
        assert_eq!(
            l.feed(b"\n{}\n"),
            [Line::TooLong(MAX_EVENT_LINE + 13), Line::Whole("{}".into())]
        );
    }

    #[test]
    fn a_token_keeps_a_bounded_number_of_streams_each_counted_until_dropped() {
        let streams = Arc::new(Streams::default());
        let slots: Vec<Slot> = (0..MAX_STREAMS_PER_TOKEN)
            .map(|_| streams.take("alice").expect("a slot"))
            .collect();
        assert!(streams.take("alice").is_none(), "one more is refused");
        assert!(streams.take("bob").is_some(), "another token has its own");
        drop(slots);
        assert_eq!(streams.open_for("alice"), 0, "dropped streams are released");
        assert!(streams.take("alice").is_some());
    }

    proptest! {
        /// However the bytes are split into reads, the same lines come out.
        #[test]
        fn splitting_does_not_change_the_lines(text in "([a-z{}\":]{0,20}\n){0,8}", cut in 0usize..200) {
            let bytes = text.as_bytes();
            let cut = cut.min(bytes.len());
            let mut one = Lines::default();
            let whole = one.feed(bytes);
            let mut two = Lines::default();
            let mut parts = two.feed(&bytes[..cut]);
            parts.extend(two.feed(&bytes[cut..]));
            prop_assert_eq!(whole, parts);
        }
    }
}
