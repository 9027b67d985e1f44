//! `GET /api/sessions/{id}/events`: a session's `events.jsonl` as Server-Sent Events, from
//! the start and then as it grows (polled every [`POLL`]), each line as `event: record` and
//! its progress line (as `ufo run` prints it) as `event: progress`; the control socket's state
//! as `event: state` on each change; `event: end` after `session_end`, or once the session no
//! longer runs and the file stops growing.

use std::convert::Infallible;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use serde_json::{json, Value};
use tokio::sync::mpsc;

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

/// The SSE response for the session in `dir` (`id` in `children`).
pub fn events(
    dir: PathBuf,
    id: String,
    children: Arc<Children>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Event>(QUEUE);
    let done = Arc::new(AtomicBool::new(false));
    tokio::spawn(watch_state(dir.clone(), tx.clone(), done.clone()));
    tokio::spawn(tail(dir, id, children, tx, done));
    let stream =
        futures::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
        );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Send the control socket's state lines until `done` or the page goes; reconnect while the
/// socket is there (the session may not have made it yet).
async fn watch_state(dir: PathBuf, tx: mpsc::Sender<Event>, done: Arc<AtomicBool>) {
    let sock = socket::path(&dir);
    while !done.load(Ordering::Relaxed) && !tx.is_closed() {
        if crate::folder::exists(&sock) {
            if let Ok(mut w) = socket::Watch::start(&sock).await {
                while let Some(state) = w.next().await {
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
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Send the file's lines as they come; `end` after `session_end`, or when the session is no
/// longer running and nothing more comes.
async fn tail(
    dir: PathBuf,
    id: String,
    children: Arc<Children>,
    tx: mpsc::Sender<Event>,
    done: Arc<AtomicBool>,
) {
    let events = dir.join("events.jsonl");
    let mut offset = 0u64;
    let mut lines = Lines::default();
    let mut ended = false;
    let mut quiet_polls = 0u32;
    loop {
        let path = events.clone();
        let bytes = tokio::task::spawn_blocking(move || read_from(&path, offset))
            .await
            .unwrap_or_default();
        offset += bytes.len() as u64;
        for line in lines.feed(&bytes) {
            let record = match line {
                Line::Whole(l) => l,
                Line::TooLong(n) => json!({"type": "omitted", "bytes": n}).to_string(),
            };
            let value: Value = serde_json::from_str(&record).unwrap_or(Value::Null);
            if value["type"] == "session_end" {
                ended = true;
            }
            if tx
                .send(Event::default().event("record").data(record))
                .await
                .is_err()
            {
                done.store(true, Ordering::Relaxed);
                return;
            }
            if let Some(p) = crate::recorder::progress_line(&value, &|_, t| t.to_string()) {
                if tx
                    .send(Event::default().event("progress").data(p))
                    .await
                    .is_err()
                {
                    done.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
        let running = children.is_running(&id) || crate::folder::exists(&socket::path(&dir));
        if bytes.is_empty() {
            quiet_polls = quiet_polls.saturating_add(1);
        } else {
            quiet_polls = 0;
        }
        // after session_end: the lines still coming (experience summaries) within a second
        if (ended && quiet_polls >= 5) || (!running && quiet_polls >= 10) {
            done.store(true, Ordering::Relaxed);
            let why = if ended { "session_end" } else { "not running" };
            let _ = tx
                .send(
                    Event::default()
                        .event("end")
                        .data(json!({"why": why}).to_string()),
                )
                .await;
            return;
        }
        if tx.is_closed() {
            done.store(true, Ordering::Relaxed);
            return;
        }
        tokio::time::sleep(POLL).await;
    }
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
