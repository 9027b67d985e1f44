//! What a display's watches report, display-free: the change watch that settling waits on
//! ([`ChangeWatch`], recording into a [`ChangeLog`]) and the person's input on a watched
//! private desktop ([`PersonInput`]). A display's listener (X11: `x11/changes.rs`,
//! `x11/takeover.rs`) fills them on a thread of its own; settling and the desktop read them.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::window::WinId;

/// Most change times kept.
const KEEP: usize = 512;
/// Most answers to pings kept.
const PONGS_KEPT: usize = 64;
/// Most windows kept that were made and not yet shown.
const UNSHOWN_KEPT: usize = 64;

/// One change the display reported: when, and whether it is a redraw of a watched window
/// (else a window mapped, unmapped, moved, created or destroyed anywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    pub at: Instant,
    pub damage: bool,
    /// a window was mapped (a dialog or a menu appeared)
    pub mapped: bool,
    /// the window unmapped or destroyed, if any
    pub gone: Option<WinId>,
    /// How long after the application drew it the display reported a redraw: zero where the
    /// display reports a draw as it happens (X11's Damage); a compositor's wait for its next
    /// frame where a redraw is reported by the frame that shows it (KWin's window streams).
    pub late: Duration,
}

#[derive(Default)]
struct Log {
    /// the changes seen, oldest first
    changes: VecDeque<Change>,
    /// the answers to pings (their numbers, when they came), oldest first
    pongs: VecDeque<(u32, Instant)>,
    /// the top-level windows made (when) and not yet mapped, handed to the window manager
    /// or destroyed, oldest first
    unshown: VecDeque<(WinId, Instant)>,
}

/// The changes a watch has seen (the last [`KEEP`]) and the answers to its pings, for the
/// questions settling asks.
#[derive(Default)]
pub(crate) struct ChangeLog(Mutex<Log>);

impl ChangeLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        // a panic while holding the lock leaves plain data behind: keep going
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note a change (the listener's side).
    pub(crate) fn note(&self, change: Change) {
        let mut g = self.lock();
        g.changes.push_back(change);
        if g.changes.len() > KEEP {
            g.changes.pop_front();
        }
    }

    /// Note the answer to ping `n` (the listener's side).
    pub(crate) fn note_pong(&self, n: u32, at: Instant) {
        let mut g = self.lock();
        g.pongs.push_back((n, at));
        if g.pongs.len() > PONGS_KEPT {
            g.pongs.pop_front();
        }
    }

    /// When the answer to ping `n` came, if it has.
    pub(crate) fn pong(&self, n: u32) -> Option<Instant> {
        self.lock()
            .pongs
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, at)| *at)
    }

    /// Note that top-level window `id`, one the window manager is to map, was made (the
    /// listener's side; X11's CreateNotify of a window that does not redirect the window
    /// manager).
    pub(crate) fn note_made(&self, id: WinId, at: Instant) {
        let mut g = self.lock();
        g.unshown.push_back((id, at));
        if g.unshown.len() > UNSHOWN_KEPT {
            g.unshown.pop_front();
        }
    }

    /// Note that window `id` was mapped, handed to the window manager (reparented into its
    /// frame) or destroyed: it no longer awaits being shown.
    pub(crate) fn note_shown(&self, id: WinId) {
        self.lock().unshown.retain(|(w, _)| *w != id);
    }

    /// Whether a top-level window made after `since` has been neither shown nor destroyed
    /// yet: its application asked for it to be mapped, and the window manager has not done
    /// it yet (or the application has not asked, and may never: waits on it are bounded).
    pub(crate) fn awaits_showing(&self, since: Instant) -> bool {
        self.lock().unshown.iter().any(|(_, at)| *at >= since)
    }

    /// Since `since`: how many redraws of the watched windows were reported, and the times
    /// (since `since`) of the first and the last window mapped, unmapped or moved.
    pub(crate) fn activity_since(
        &self,
        since: Instant,
    ) -> (usize, Option<Duration>, Option<Duration>) {
        let g = self.lock();
        let after = || g.changes.iter().rev().take_while(|c| c.at >= since);
        let damage = after().filter(|c| c.damage).count();
        let mut structure = after().filter(|c| !c.damage).map(|c| c.at - since);
        let last = structure.next();
        let first = structure.last().or(last);
        (damage, first, last)
    }

    /// How late the last redraw noted after `since` was reported ([`Change::late`]; zero when
    /// there was none): settling dates the change it sees in that redraw back by as much
    /// ([`Self::last_redraw_since`]), so that a compositor's frame delay does not lengthen
    /// the quiet time it waits out.
    #[cfg(test)]
    pub(crate) fn lateness_since(&self, since: Instant) -> Duration {
        self.last_redraw_since(since)
            .map_or(Duration::ZERO, |(_, late)| late)
    }

    /// The last redraw noted after `since`: when it was noted, and how late it was reported
    /// ([`Change::late`]).
    pub(crate) fn last_redraw_since(&self, since: Instant) -> Option<(Instant, Duration)> {
        self.lock()
            .changes
            .iter()
            .rev()
            .take_while(|c| c.at >= since)
            .find(|c| c.damage)
            .map(|c| (c.at, c.late))
    }

    /// When the last change of any kind was seen.
    pub(crate) fn last_change(&self) -> Option<Instant> {
        self.lock().changes.back().map(|c| c.at)
    }

    /// Whether one of `ids` was unmapped or destroyed after `since`.
    pub(crate) fn gone_since(&self, since: Instant, ids: &[WinId]) -> bool {
        self.lock()
            .changes
            .iter()
            .rev()
            .take_while(|c| c.at >= since)
            .any(|c| c.gone.is_some_and(|g| ids.contains(&g)))
    }

    /// Whether a window was mapped, unmapped, moved or destroyed after `since`.
    pub(crate) fn structure_since(&self, since: Instant) -> bool {
        self.lock()
            .changes
            .iter()
            .rev()
            .take_while(|c| c.at >= since)
            .any(|c| !c.damage)
    }

    /// When the last window was mapped.
    pub(crate) fn last_map(&self) -> Option<Instant> {
        self.lock()
            .changes
            .iter()
            .rev()
            .find(|c| c.mapped)
            .map(|c| c.at)
    }
}

/// A display's watch of redraws and window changes: it reports redraws of the windows it is
/// told to watch and every window mapped, unmapped or moved into its [`ChangeLog`], and asks
/// an application whether it has read the input sent to it so far.
pub(crate) trait ChangeWatch: Send + Sync {
    /// What it has seen.
    fn log(&self) -> &ChangeLog;
    /// Watch `ids` (a window and the dialogs on it) for redraws from now on (the windows
    /// watched before and not among them are let go).
    fn watch(&self, ids: &[WinId]);
    /// Ask the application owning window `id` to answer once it has read the input sent to
    /// it so far; the ping's number, for [`ChangeLog::pong`] (`None` when the display cannot
    /// ask, or the ping could not be sent).
    fn ping(&self, id: WinId) -> Option<u32>;
}

/// Whether a watched desktop is taken over by the person, and by what: filled by the display's
/// listener, read by the desktop.
#[derive(Debug, Default)]
pub(crate) struct PersonInput(Mutex<Option<String>>);

impl PersonInput {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The person's input `what` (the listener's side): the desktop is taken over from the
    /// first one until the hand-back. Whether this took it over.
    pub(crate) fn take_over(&self, what: String) -> bool {
        let mut g = self.lock();
        if g.is_some() {
            return false;
        }
        *g = Some(what);
        true
    }

    /// What the person did, while the desktop is taken over.
    pub(crate) fn taken(&self) -> Option<String> {
        self.lock().clone()
    }

    /// The person handed the desktop back (the hand-back key, or ufo's terminal). Whether it
    /// was taken over.
    pub(crate) fn hand_back(&self) -> bool {
        self.lock().take().is_some()
    }

    /// Wait at most `within` for the hand-back; `true` once the desktop is not taken over.
    pub(crate) async fn wait_handback(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.lock().is_none() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            tokio::time::sleep((deadline - now).min(Duration::from_millis(20))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(at: Instant, damage: bool, mapped: bool, gone: Option<u32>) -> Change {
        Change {
            at,
            damage,
            mapped,
            gone: gone.map(WinId),
            late: Duration::ZERO,
        }
    }

    #[test]
    fn the_log_answers_what_settling_asks() {
        let log = ChangeLog::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        log.note(change(t0 + ms(5), true, false, None));
        log.note(change(t0 + ms(10), false, true, None));
        log.note(change(t0 + ms(20), true, false, None));
        log.note(change(t0 + ms(30), false, false, Some(7)));
        assert_eq!(log.activity_since(t0), (2, Some(ms(10)), Some(ms(30))));
        assert_eq!(
            log.activity_since(t0 + ms(15)),
            (1, Some(ms(15)), Some(ms(15)))
        );
        assert!(log.gone_since(t0, &[WinId(7)]));
        assert!(!log.gone_since(t0, &[WinId(8)]));
        assert!(log.structure_since(t0 + ms(25)));
        assert!(!log.structure_since(t0 + ms(31)));
        assert_eq!(log.last_map(), Some(t0 + ms(10)));
        assert_eq!(log.last_change(), Some(t0 + ms(30)));
        assert_eq!(log.lateness_since(t0), Duration::ZERO);
        log.note(Change {
            late: ms(9),
            ..change(t0 + ms(35), true, false, None)
        });
        log.note(change(t0 + ms(36), false, false, None));
        assert_eq!(log.lateness_since(t0), ms(9), "the last redraw's");
        assert_eq!(log.last_redraw_since(t0), Some((t0 + ms(35), ms(9))));
        assert_eq!(log.last_redraw_since(t0 + ms(36)), None);
        assert_eq!(
            log.lateness_since(t0 + ms(36)),
            Duration::ZERO,
            "none since"
        );
        log.note_pong(3, t0 + ms(40));
        assert_eq!(log.pong(3), Some(t0 + ms(40)));
        assert_eq!(log.pong(4), None);
    }

    #[test]
    fn a_window_made_awaits_showing_until_mapped_reparented_or_destroyed() {
        let log = ChangeLog::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        log.note_made(WinId(1), t0 + ms(5));
        log.note_made(WinId(2), t0 + ms(10));
        assert!(log.awaits_showing(t0));
        assert!(log.awaits_showing(t0 + ms(10)));
        assert!(
            !log.awaits_showing(t0 + ms(11)),
            "made before: not this action's"
        );
        log.note_shown(WinId(2));
        assert!(!log.awaits_showing(t0 + ms(6)));
        assert!(log.awaits_showing(t0));
        log.note_shown(WinId(1));
        log.note_shown(WinId(9));
        assert!(!log.awaits_showing(t0));
        for i in 0..(UNSHOWN_KEPT as u32 + 5) {
            log.note_made(WinId(100 + i), t0 + ms(20));
        }
        log.note_shown(WinId(100));
        assert!(log.awaits_showing(t0), "the latest are kept");
    }

    #[test]
    fn the_log_keeps_its_last_changes_only() {
        let log = ChangeLog::default();
        let t0 = Instant::now();
        for i in 0..(KEEP as u64 + 10) {
            log.note(change(t0 + Duration::from_millis(i), true, false, None));
        }
        assert_eq!(log.activity_since(t0).0, KEEP);
    }

    #[tokio::test]
    async fn the_first_input_takes_over_until_the_hand_back() {
        let p = PersonInput::default();
        assert!(p.taken().is_none());
        assert!(p.take_over("key press".into()));
        assert!(!p.take_over("button press".into()));
        assert_eq!(p.taken().as_deref(), Some("key press"));
        assert!(!p.wait_handback(Duration::from_millis(30)).await);
        assert!(p.hand_back());
        assert!(!p.hand_back());
        assert!(p.wait_handback(Duration::ZERO).await);
    }
}
