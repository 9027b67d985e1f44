//! The change watch of a KWin display (docs/desktop.md, "How the KWin display works"): what
//! settling waits on, from KWin's own signals rather than from polling pixels.
//!
//! A KWin script loaded once for the display's life ([`super::script::watch_script`]) follows
//! every window: its `damaged` signal (a redraw, one per frame the program commits), its frame
//! moving or resizing, its minimising, and windows being added and removed; on each it calls
//! ufo's callback object back ([`super::bus`]), which hands the event to [`Watch::note`]. Only
//! KWin's calls count. A redraw counts for the watched windows only (by the window's own id or
//! its top-level's: a menu drawn on a watched window counts); a window added, removed, moved
//! or minimised anywhere is a structure change, as on X11.
//!
//! A window streamed over PipeWire (`super::cast`) has its own redraws reported by its
//! stream's frames instead ([`Watch::streamed_redraw`], once the frame is kept): a look then
//! reads a frame at least as new as every redraw reported of it. The script's reports of that
//! window's own redraws are not counted (a menu on it still counts from the script), but they
//! date the frame: KWin reports a commit at once and sends the frame showing it at its next
//! repaint, on the virtual output's fixed 60 Hz. Measured (gnome-calculator, release, 100
//! frames): the frame came 10.8 ms (p50; p90 21) after the script's report of the last commit
//! in it. A frame's redraw is noted as that much late ([`Change::late`]), at most one frame
//! interval ([`FRAME`]; see [`frame_delay`]), so that settling waits its quiet time from the program's draw, as on
//! X11, and not from KWin's repaint: that delay was the gap between a KWin step and an X11 one.
//!
//! Scripts cannot ask a program whether it has read its input: [`Watch::ping`] says so with
//! `None`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::display::watch::{Change, ChangeLog, ChangeWatch};
use crate::display::WinId;

/// What the watch script reports, read from its call ([`Event::parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The script is running and follows every window.
    Ready,
    /// Window `id` was redrawn; `top` is the window it belongs to (its top-level: itself
    /// unless it is a menu, a popup or a dialog).
    Damage { id: String, top: String },
    /// A window appeared.
    Added(String),
    /// A window closed.
    Removed(String),
    /// A window moved, was resized, minimised or restored.
    Moved(String),
    /// Something else the window list shows changed: a title, an app id, which window is
    /// active, the stacking order, a parent (not a change settling waits on).
    Changed(String),
}

impl Event {
    /// The event of a call with these words (`None`: a kind this ufo does not know, from a
    /// newer script; ignored).
    pub(crate) fn parse(kind: &str, id: &str, top: &str) -> Option<Event> {
        let id = id.to_string();
        Some(match kind {
            "ready" => Event::Ready,
            "damage" => Event::Damage {
                top: if top.is_empty() {
                    id.clone()
                } else {
                    top.into()
                },
                id,
            },
            "added" => Event::Added(id),
            "removed" => Event::Removed(id),
            "moved" => Event::Moved(id),
            "changed" => Event::Changed(id),
            _ => return None,
        })
    }
}

/// Our window numbers for KWin's window ids (UUIDs), kept for the windows listed last: shared
/// by the display's thread (which lists windows) and the watch (which reads KWin's ids).
#[derive(Default)]
pub(crate) struct Ids {
    numbers: HashMap<String, u32>,
    last: u32,
}

impl Ids {
    /// The number of KWin's window `id`, given now if it has none.
    pub(crate) fn number(&mut self, id: &str) -> u32 {
        if let Some(n) = self.numbers.get(id) {
            return *n;
        }
        self.last += 1;
        self.numbers.insert(id.to_string(), self.last);
        self.last
    }

    /// The number of KWin's window `id`, if it was listed.
    pub(crate) fn known(&self, id: &str) -> Option<WinId> {
        self.numbers.get(id).map(|n| WinId(*n))
    }

    /// KWin's id of window `n`.
    pub(crate) fn uuid(&self, n: WinId) -> Result<String, crate::LinuxError> {
        self.numbers
            .iter()
            .find(|(_, v)| **v == n.0)
            .map(|(k, _)| k.clone())
            .ok_or_else(|| crate::LinuxError::NoWindow(n.to_string()))
    }

    /// Forget the windows that are gone (KWin never reuses an id).
    pub(crate) fn keep_only<'a>(&mut self, listed: impl Iterator<Item = &'a str> + Clone) {
        self.numbers
            .retain(|id, _| listed.clone().any(|l| l == id.as_str()));
    }
}

/// The shared numbers, locked (a panic while holding them leaves plain data behind).
pub(crate) fn lock(ids: &Mutex<Ids>) -> MutexGuard<'_, Ids> {
    ids.lock().unwrap_or_else(|p| p.into_inner())
}

/// The change watch settling reads, filled by the callback object from the script's calls.
pub(crate) struct Watch {
    log: ChangeLog,
    ids: Arc<Mutex<Ids>>,
    /// the windows whose redraws count
    watched: Mutex<Vec<WinId>>,
    /// the windows whose own redraws their streams report
    streamed: Mutex<Vec<WinId>>,
    /// when the script last reported a commit of each streamed window not yet shown by a frame
    drawn: Mutex<HashMap<WinId, Instant>>,
    /// how many times the window list changed (a window added, removed, moved, renamed,
    /// activated, restacked): a listing made at the same count still holds
    generation: AtomicU64,
}

impl Watch {
    /// A watch reading KWin's ids through `ids`.
    pub(crate) fn new(ids: Arc<Mutex<Ids>>) -> Watch {
        Watch {
            log: ChangeLog::default(),
            ids,
            watched: Mutex::default(),
            streamed: Mutex::default(),
            drawn: Mutex::default(),
            generation: AtomicU64::new(0),
        }
    }

    /// How many times the window list changed so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Note what the script reported, now.
    pub(crate) fn note(&self, event: &Event) {
        if !matches!(event, Event::Ready | Event::Damage { .. }) {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        let watched = self
            .watched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let streamed = self
            .streamed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let now = Instant::now();
        let ids = lock(&self.ids);
        if let Event::Damage { id, .. } = event {
            if let Some(n) = ids.known(id).filter(|n| streamed.contains(n)) {
                self.drawn
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(n, now);
            }
        }
        if let Some(change) = change_of(event, &ids, &watched, &streamed, now) {
            self.log.note(change);
        }
    }

    /// Window `id`'s redraws come from its stream from now on (`on`), or from the script again.
    pub(crate) fn set_streamed(&self, id: WinId, on: bool) {
        let mut s = self.streamed.lock().unwrap_or_else(|p| p.into_inner());
        s.retain(|w| *w != id);
        if on {
            s.push(id);
        }
    }

    /// A frame of window `id`'s stream came (and is kept): a redraw, counted when the window
    /// is watched.
    // (called by the streams, built with `pipewire`; tested either way)
    #[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
    pub(crate) fn streamed_redraw(&self, id: WinId) {
        let now = Instant::now();
        let drawn = self
            .drawn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        let watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        if watched.contains(&id) {
            self.log.note(Change {
                at: now,
                damage: true,
                mapped: false,
                gone: None,
                late: frame_delay(drawn, now),
            });
        }
    }
}

/// One repaint interval of KWin's virtual output (60 Hz): the most a frame is dated back.
pub(crate) const FRAME: Duration = Duration::from_micros(16_667);

/// How long the frame that came at `now` waited for KWin's repaint after the commit the
/// script reported last at `drawn`, counted as one repaint interval at most (zero without a
/// report, or one older than two intervals: a report can come after its own frame, and then
/// belongs to no later one; a loaded KWin sends a frame more than one interval late).
fn frame_delay(drawn: Option<Instant>, now: Instant) -> Duration {
    drawn
        .map(|d| now.saturating_duration_since(d))
        .filter(|d| *d <= 2 * FRAME)
        .map_or(Duration::ZERO, |d| d.min(FRAME))
}

/// The change an event is, given the window numbers, the watched windows and those whose
/// streams report their redraws (`None`: nothing settling waits on, such as a redraw of a
/// window not watched, or of a streamed one).
fn change_of(
    event: &Event,
    ids: &Ids,
    watched: &[WinId],
    streamed: &[WinId],
    at: Instant,
) -> Option<Change> {
    let structure = |mapped, gone| Change {
        at,
        damage: false,
        mapped,
        gone,
        late: Duration::ZERO,
    };
    match event {
        Event::Ready => None,
        Event::Damage { id, top } => {
            if ids.known(id).is_some_and(|n| streamed.contains(&n)) {
                return None;
            }
            let counts = [id, top]
                .into_iter()
                .filter_map(|i| ids.known(i))
                .any(|n| watched.contains(&n));
            counts.then_some(Change {
                at,
                damage: true,
                mapped: false,
                gone: None,
                late: Duration::ZERO,
            })
        }
        Event::Added(_) => Some(structure(true, None)),
        Event::Removed(id) => Some(structure(false, ids.known(id))),
        Event::Moved(_) => Some(structure(false, None)),
        Event::Changed(_) => None,
    }
}

/// Longest a window listing is reused while KWin reports no change of the list (a change no
/// signal reports is seen by then).
pub(crate) const LIST_KEPT: Duration = Duration::from_secs(1);

/// Whether a listing made at window-list generation `made` (at `at`) still holds at
/// generation `now`: nothing changed since, and it is younger than [`LIST_KEPT`].
pub(crate) fn listing_holds(made: (u64, Instant), now: u64, at: Instant) -> bool {
    made.0 == now && at.saturating_duration_since(made.1) < LIST_KEPT
}

impl ChangeWatch for Watch {
    fn log(&self) -> &ChangeLog {
        &self.log
    }

    fn watch(&self, ids: &[WinId]) {
        *self.watched.lock().unwrap_or_else(|p| p.into_inner()) = ids.to_vec();
    }

    fn ping(&self, _id: WinId) -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_and_unknown_kinds_left_out() {
        assert_eq!(Event::parse("ready", "", ""), Some(Event::Ready));
        assert_eq!(
            Event::parse("damage", "{a}", ""),
            Some(Event::Damage {
                id: "{a}".into(),
                top: "{a}".into()
            })
        );
        assert_eq!(
            Event::parse("damage", "{menu}", "{a}"),
            Some(Event::Damage {
                id: "{menu}".into(),
                top: "{a}".into()
            })
        );
        assert_eq!(
            Event::parse("removed", "{a}", "{a}"),
            Some(Event::Removed("{a}".into()))
        );
        assert_eq!(Event::parse("exploded", "{a}", ""), None);
    }

    #[test]
    fn redraws_count_for_watched_windows_and_structure_everywhere() {
        let mut ids = Ids::default();
        let (a, b) = (WinId(ids.number("{a}")), WinId(ids.number("{b}")));
        let at = Instant::now();
        let damage = |id: &str, top: &str| Event::parse("damage", id, top).expect("damage");
        // the watched window, and a menu on it (not listed, its top-level is)
        assert!(change_of(&damage("{a}", ""), &ids, &[a], &[], at).is_some_and(|c| c.damage));
        assert!(change_of(&damage("{menu}", "{a}"), &ids, &[a], &[], at).is_some());
        // another window's redraw, an unknown window's, or nothing watched
        assert_eq!(change_of(&damage("{b}", ""), &ids, &[a], &[], at), None);
        assert_eq!(change_of(&damage("{x}", "{x}"), &ids, &[a], &[], at), None);
        assert_eq!(change_of(&damage("{a}", ""), &ids, &[], &[], at), None);
        // windows added, moved or removed anywhere; a removed listed window is named
        let added = change_of(&Event::Added("{n}".into()), &ids, &[a], &[], at).expect("added");
        assert!(added.mapped && !added.damage);
        let gone = change_of(&Event::Removed("{b}".into()), &ids, &[a], &[], at).expect("gone");
        assert_eq!(gone.gone, Some(b));
        let moved = change_of(&Event::Moved("{b}".into()), &ids, &[], &[], at).expect("moved");
        assert!(!moved.damage && !moved.mapped && moved.gone.is_none());
        assert_eq!(change_of(&Event::Ready, &ids, &[a], &[], at), None);
        assert_eq!(
            change_of(&Event::Changed("{a}".into()), &ids, &[a], &[], at),
            None
        );
    }

    #[test]
    fn a_streamed_window_s_redraws_come_from_its_stream_only() {
        let ids = Arc::new(Mutex::new(Ids::default()));
        let a = WinId(lock(&ids).number("{a}"));
        let w = Watch::new(Arc::clone(&ids));
        w.watch(&[a]);
        let t0 = Instant::now();
        w.set_streamed(a, true);
        w.note(&Event::parse("damage", "{a}", "").expect("damage"));
        assert_eq!(w.log().activity_since(t0).0, 0, "the stream reports it");
        w.streamed_redraw(a);
        assert_eq!(w.log().activity_since(t0).0, 1, "its frame counts");
        // a menu on it is not in its stream: the script's report counts
        w.note(&Event::parse("damage", "{menu}", "{a}").expect("damage"));
        assert_eq!(w.log().activity_since(t0).0, 2);
        // a window not watched: its frames do not count
        w.streamed_redraw(WinId(99));
        assert_eq!(w.log().activity_since(t0).0, 2);
        w.set_streamed(a, false);
        w.note(&Event::parse("damage", "{a}", "").expect("damage"));
        assert_eq!(w.log().activity_since(t0).0, 3, "the script again");
    }

    #[test]
    fn a_frame_is_dated_back_to_the_commit_it_shows_by_at_most_one_repaint() {
        let ms = Duration::from_millis;
        let t = Instant::now() + ms(100);
        assert_eq!(frame_delay(Some(t - ms(11)), t), ms(11));
        assert_eq!(frame_delay(Some(t - FRAME), t), FRAME);
        assert_eq!(
            frame_delay(Some(t - ms(25)), t),
            FRAME,
            "a late frame: one interval"
        );
        assert_eq!(
            frame_delay(Some(t - ms(40)), t),
            Duration::ZERO,
            "another frame's"
        );
        assert_eq!(frame_delay(None, t), Duration::ZERO);
        assert_eq!(frame_delay(Some(t + ms(1)), t), Duration::ZERO);

        let ids = Arc::new(Mutex::new(Ids::default()));
        let a = WinId(lock(&ids).number("{a}"));
        let b = WinId(lock(&ids).number("{b}"));
        let w = Watch::new(Arc::clone(&ids));
        w.watch(&[a, b]);
        w.set_streamed(a, true);
        let t0 = Instant::now();
        w.note(&Event::parse("damage", "{a}", "").expect("damage"));
        std::thread::sleep(ms(5));
        w.streamed_redraw(a);
        let late = w.log().lateness_since(t0);
        assert!(late >= ms(5) && late <= FRAME, "dated back by {late:?}");
        // the report was used by that frame: the next one has none
        let t1 = Instant::now();
        w.streamed_redraw(a);
        assert_eq!(w.log().lateness_since(t1), Duration::ZERO);
        // a window not streamed: its redraws are reported as they happen
        let t2 = Instant::now();
        w.note(&Event::parse("damage", "{b}", "").expect("damage"));
        assert_eq!(w.log().activity_since(t2).0, 1);
        assert_eq!(w.log().lateness_since(t2), Duration::ZERO);
    }

    #[test]
    fn a_listing_holds_until_the_list_changes_or_it_is_old() {
        let ids = Arc::new(Mutex::new(Ids::default()));
        let w = Watch::new(ids);
        let t0 = Instant::now();
        let made = (w.generation(), t0);
        w.note(&Event::parse("damage", "{a}", "").expect("damage"));
        assert!(
            listing_holds(made, w.generation(), t0),
            "a redraw changes no list"
        );
        w.note(&Event::Changed("{a}".into()));
        assert!(!listing_holds(made, w.generation(), t0), "a title changed");
        let made = (w.generation(), t0);
        assert!(listing_holds(made, w.generation(), t0 + LIST_KEPT / 2));
        assert!(!listing_holds(made, w.generation(), t0 + LIST_KEPT));
        for e in ["added", "removed", "moved"] {
            let before = w.generation();
            w.note(&Event::parse(e, "{b}", "").expect("event"));
            assert_eq!(w.generation(), before + 1, "{e}");
        }
    }

    #[test]
    fn the_watch_follows_the_windows_it_is_told_to() {
        let ids = Arc::new(Mutex::new(Ids::default()));
        let a = WinId(lock(&ids).number("{a}"));
        let w = Watch::new(Arc::clone(&ids));
        let t0 = Instant::now();
        let damage = Event::parse("damage", "{a}", "").expect("damage");
        w.note(&damage);
        assert_eq!(w.log().activity_since(t0).0, 0, "nothing watched yet");
        w.watch(&[a]);
        w.note(&damage);
        w.note(&damage);
        assert_eq!(w.log().activity_since(t0).0, 2);
        w.note(&Event::Removed("{a}".into()));
        assert!(w.log().gone_since(t0, &[a]));
        assert_eq!(w.ping(a), None);
    }
}
