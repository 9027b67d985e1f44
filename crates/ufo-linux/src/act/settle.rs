//! Settling after an action on events, not on a clock (issue 13).
//!
//! The display's change watch (`display::watch::ChangeWatch`; on X11 X Damage and structure
//! events, `display/x11/changes.rs`) reports every redraw of the window acted on and the
//! dialogs on it ([`Watched`]) and every window appearing, going away or moving (a dialog or a
//! menu opening). A redraw is a change when the pixels differ from the last look, in regions
//! (`display::pixels::Look::changed_regions`) other than a caret, a control clicked lately
//! ([`Clicked`]) or a toolkit's transition ([`Transitions`]). After an action, [`decide`] (a
//! pure function over the times of the changes) says when the window has settled: it changed
//! and then stayed quiet for [`SettleParams::quiet`], or nothing changed within a bound
//! learned per application and input path ([`Learned`]): twice the longest time to a first
//! change seen so far, between a floor and the configured settle time. The watch also asks an
//! application whether it has read the input sent to it so far (`ChangeWatch::ping`).
//!
//! The application's own end signal (issue 48), where its toolkit gives a trustworthy one:
//! GTK 4 (`a11y::apps::draws_in_one_frame`) lays out and paints the whole window in one frame
//! after its handlers ran, so once the application has answered a ping sent after its last
//! change, and one frame ([`FRAME`], 20 ms) passed after that answer without a change, its
//! update is drawn ([`SettleParams::frame`]); the observation made while waiting begins at the
//! answer. That is 22-44 ms after the change (26 p50) instead of [`QUIET`] (41 p50): in one
//! run of the steps bench at load 6.7, gnome-calculator's `=` step 123 -> 104 ms p50 (2.47 ->
//! 2.08 times the calculator alone), a click 66 -> 51 ms (docs/desktop.md). The frame stays:
//! GTK answers a ping from its event handling, before a paint already queued. A frame drawn
//! after the answer ends the wait sooner: GTK's frame clock paints everything queued in one
//! frame, so once a redraw reported after the answer (X Damage; the answer comes on the same
//! connection, in the server's order) has been looked at and shows no change, with one window
//! watched and no redraw since that look began, the update is drawn (`drawn` in [`decide`];
//! a clicked button's press animation draws such frames at 60 Hz). ufo also pings behind
//! every redraw before it looks at it, so the answer comes while the look runs. With both,
//! the `=` settle after its first change went from 25.5 to 17.5 ms p50 (three runs of the steps
//! bench, 26 sessions a side, 19 of 26 ended on a drawn frame). No other
//! toolkit here gives one: LibreOffice (VCL) paints one update from idle handlers of its own up
//! to 42 ms apart and answers pings in between (and redraws a Writer line 260-300 ms later);
//! GTK 3 and 2, Qt, Chromium and Firefox were not measured (Chromium's page load has its own
//! wait, `observe::loading`). What the signal cannot see is work the handler left for later (a
//! timer, a thread): an application and input path whose window changed after a settle that
//! ended on the signal ([`changed_after_signal`], found by the look before the next action)
//! waits the quiet time from then on ([`Learned::late`]).
//!
//! The observation made while waiting begins after a quiet learned per application and input
//! path from its own pauses within an update (issue 48; [`update_pause`]: the longest time
//! between two successive changes a settle saw). Once three settles were seen, it begins
//! after the longest pause of the last 32, between 10 and 20 ms ([`learned_prefetch_after`]):
//! a LibreOffice cell entry shows one change, and its observation begins 10 ms after it
//! instead of 20. It is kept only if nothing changed after it began, so beginning it sooner
//! risks an observation made twice, never a stale one. The quiet time that ends a settle
//! stays [`QUIET`]: learned from the same pauses (1.5 times the longest, down to 20 ms), it
//! ended none of 18 Calc entries that had learned it sooner in one run of the steps bench,
//! the observation made while waiting (35-55 ms) outlasting it, and 3 of 18 under load: no
//! gain the bench could see, and the risk of missing a late change (docs/desktop.md).
//!
//! This file holds what settling decides and keeps between actions ([`SettleState`], which
//! the desktop holds) and what a settle gives ([`Settled`]: whether the window changed, and
//! the observation made while waiting when it still holds); the waits themselves
//! (`settle_start`, `settle_after`, `still_holds`, `settle_quiet`) are in `wait.rs`, as they
//! look at the window, observe it and ask the application.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use ufo_core::Rect;

use crate::display::pixels::Look;
use crate::display::WinId;

/// How long the window must stay quiet after a change to count as settled.
pub(crate) const QUIET: Duration = Duration::from_millis(40);
/// The shortest wait for a first change (an application never seen changing yet waits the
/// configured settle time; one seen answering in 10 ms waits this long: gnome-calculator
/// shows the result of `=` up to ~120 ms after the click).
pub(crate) const FLOOR: Duration = Duration::from_millis(150);
/// How long the window must have been quiet after a change before ufo observes it while
/// waiting out the rest of [`QUIET`] (back-to-back frames of one redraw come ~16 ms apart).
pub(crate) const PREFETCH_AFTER: Duration = Duration::from_millis(20);
/// One frame of an application that draws an update in one frame (GTK's frame clock ticks
/// every 16.7 ms), and a little: after the application answered a ping sent after its last
/// change, this much quiet ends the settle (see [`SettleParams::frame`]).
pub(crate) const FRAME: Duration = Duration::from_millis(20);
/// The shortest quiet before observing while waiting, learned from an application's own
/// pauses ([`learned_prefetch_after`]).
pub(crate) const PREFETCH_FLOOR: Duration = Duration::from_millis(10);
/// Settles with a change an application and input path must have shown before the quiet
/// before observing is learned from their pauses (until then: [`PREFETCH_AFTER`]).
pub(crate) const UPDATES_NEEDED: usize = 3;
/// Most settles' pauses kept per application and input path (the latest: a load that comes
/// and goes is forgotten after as many).
const UPDATES_KEPT: usize = 32;
/// Most observations made while waiting in one settle.
pub(crate) const PREFETCH_MAX: usize = 3;
/// Longest time an observation made while settling is kept for the next step.
pub(crate) const PREFETCH_KEPT: Duration = Duration::from_secs(2);
/// How long a clicked control's own press, ripple and hover transitions run on in a
/// toolkit (GTK: up to half a second); its rectangle is left out of the looks that long.
const ANIMATION: Duration = Duration::from_millis(600);

/// The controls clicked lately: a press animation runs on for [`ANIMATION`] after the click,
/// and the control last clicked keeps the pointer over it (its hover fades when the pointer
/// leaves). Steps can follow each other faster than that (a scripted model, a list of
/// actions), so every one of them is left out of the looks, not only the last.
#[derive(Debug, Default)]
pub(crate) struct Clicked(VecDeque<(Instant, Rect)>);

impl Clicked {
    /// Note a click on `r` at `at`.
    pub fn note(&mut self, at: Instant, r: Rect) {
        self.0.push_back((at, r));
        while self.0.len() > 8 {
            self.0.pop_front();
        }
    }

    /// The rectangles still animating at `now`: those clicked less than [`ANIMATION`]
    /// before, and the last one clicked (the pointer is still over it).
    pub fn animating(&mut self, now: Instant) -> Vec<Rect> {
        let n = self.0.len();
        let mut i = 0;
        self.0.retain(|(t, _)| {
            i += 1;
            i == n || now.duration_since(*t) < ANIMATION
        });
        self.0.iter().map(|(_, r)| *r).collect()
    }
}

/// The bounds of one settle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SettleParams {
    /// Quiet time after the last change that ends the wait.
    pub quiet: Duration,
    /// Longest wait for a first change.
    pub first_change: Duration,
    /// Longest wait for quiet after the first change: a toolkit's transitions (GTK fades a
    /// button in over a quarter second when it becomes sensitive) redraw at frame rate
    /// without saying anything new; the accessibility tree is already up to date.
    pub tail: Duration,
    /// Longest wait in all.
    pub max: Duration,
    /// The quiet that ends the wait once the application answered a ping sent after its last
    /// change, for a toolkit that draws an update in one frame
    /// (`a11y::apps::draws_in_one_frame`) and an application and input path never seen
    /// changing after such an end ([`Learned::late`]); `None`: only [`Self::quiet`] ends it.
    pub frame: Option<Duration>,
}

/// What [`decide`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Look again after at most this long.
    Wait(Duration),
    /// Done; `changed` says whether anything changed since the action.
    Settled { changed: bool },
}

/// Decide, `elapsed` after the action, given the times (since the action) of the first and
/// the last change seen, when the application answered a ping sent after the last change
/// (`answered`) and when it drew the last frame that a look has seen since (`drawn`: the last
/// redraw reported before a look began, when every redraw reported so far has been looked
/// at; both used with [`SettleParams::frame`] only).
pub(crate) fn decide(
    elapsed: Duration,
    first: Option<Duration>,
    last: Option<Duration>,
    answered: Option<Duration>,
    drawn: Option<Duration>,
    p: &SettleParams,
) -> Decision {
    let changed = first.is_some();
    if elapsed >= p.max || first.is_some_and(|f| elapsed >= f + p.tail) {
        return Decision::Settled { changed };
    }
    let left = p.max - elapsed;
    match last {
        Some(t) => {
            let quiet_for = elapsed.saturating_sub(t);
            let tail_left = first.map_or(left, |f| (f + p.tail).saturating_sub(elapsed));
            // the application read everything up to its last change and drew nothing for a
            // frame after that answer: a frame it had queued is drawn by then; or it drew a
            // frame after the answer (its frame clock paints everything queued at once) and
            // that frame showed no change
            let signal_end = match (p.frame, answered) {
                (Some(_), Some(a)) if a >= t && drawn.is_some_and(|d| d > a) => Some(elapsed),
                (Some(frame), Some(a)) if a >= t => Some(a + frame),
                _ => None,
            };
            if quiet_for >= p.quiet || signal_end.is_some_and(|e| elapsed >= e) {
                Decision::Settled { changed: true }
            } else {
                let mut wait = p.quiet - quiet_for;
                if let Some(e) = signal_end {
                    wait = wait.min(e - elapsed);
                }
                Decision::Wait(wait.min(left).min(tail_left))
            }
        }
        None if elapsed >= p.first_change => Decision::Settled { changed: false },
        None => Decision::Wait((p.first_change - elapsed).min(left)),
    }
}

/// Whether the settle that `decide` ended at `decided` (after the action) ended on the
/// application's end signal: before [`SettleParams::quiet`] passed after the last change, and
/// not at the tail or the max.
pub(crate) fn ended_on_signal(
    decided: Duration,
    first: Option<Duration>,
    last: Option<Duration>,
    p: &SettleParams,
) -> bool {
    p.frame.is_some()
        && decided < p.max
        && first.is_some_and(|f| decided < f + p.tail)
        && last.is_some_and(|l| decided < l + p.quiet)
}

/// Whether the window changed after the last settle ended on its end signal, by the look
/// before the next action on it: the settle ended on the signal (`on_signal`), the same
/// windows are watched, something was redrawn since, and the pixels differ outside the
/// clicks' animations, the transitions and the carets (`differs`). The application and input
/// path of that settle then wait for [`QUIET`] ([`Learned::note_late`]).
pub(crate) fn changed_after_signal(
    on_signal: bool,
    last: &LastLook,
    watched: &Watched,
    redrawn: bool,
    differs: bool,
) -> bool {
    on_signal && last.watched == *watched && redrawn && differs
}

/// The quiet after the last change before observing while waiting, learned from the pauses
/// an application made within its own updates (`pauses`: for each of the latest
/// [`UPDATES_KEPT`] settles with a change, the longest time between two successive changes it
/// saw, [`update_pause`]; zero when it saw one): the longest pause kept, between
/// [`PREFETCH_FLOOR`] and [`PREFETCH_AFTER`] (a longer pause raises it at once);
/// [`PREFETCH_AFTER`] with fewer than [`UPDATES_NEEDED`].
pub(crate) fn learned_prefetch_after(pauses: &[Duration]) -> Duration {
    match pauses.iter().max() {
        Some(m) if pauses.len() >= UPDATES_NEEDED => (*m).clamp(PREFETCH_FLOOR, PREFETCH_AFTER),
        _ => PREFETCH_AFTER,
    }
}

/// The longest pause within one update: the longest time between two successive changes a
/// settle saw (`changes`, their times after the action, in any order; zero with one).
/// Changes, not redraws: an observation is discarded only when the window changed after it
/// began, and an application may redraw without changing anything (LibreOffice redraws the
/// same pixels 15-18 ms after a cell entry's change).
pub(crate) fn update_pause(changes: &[Duration]) -> Duration {
    let mut at = changes.to_vec();
    at.sort();
    at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default()
}

/// The wait for a first change after an action that took `acted` to send (a cell entry waits
/// for LibreOffice to show the content, 50-500 ms, before its settle looks): the bound learned
/// (`learned`, counted from the moment the watch began) plus that time, at most `max`; a slow
/// action must not use up the wait for the redraw that follows it.
pub(crate) fn first_change_bound(learned: Duration, acted: Duration, max: Duration) -> Duration {
    (learned + acted).min(max)
}

/// The longest time to a first change seen per application and input path, which bounds the
/// wait for a first change next time; the longest pauses within its updates, which set the
/// quiet before observing while waiting ([`learned_prefetch_after`]); and the applications and input paths seen changing
/// after a settle that ended on their end signal ([`SettleParams::frame`]), which wait for
/// [`QUIET`] from then on.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    first_change: HashMap<String, Duration>,
    pauses: HashMap<String, VecDeque<Duration>>,
    late: HashSet<String>,
}

impl Learned {
    /// The bound for `key`: twice the longest first change seen, at least [`FLOOR`], at most
    /// `max` (and `max` for a key never seen).
    pub fn bound(&self, key: &str, max: Duration) -> Duration {
        match self.first_change.get(key) {
            Some(t) => (*t * 2).clamp(FLOOR, max),
            None => max,
        }
    }

    /// Note that `key` changed after a settle that ended on its end signal.
    pub fn note_late(&mut self, key: &str) {
        self.late.insert(key.to_string());
    }

    /// Whether `key` was seen changing after a settle that ended on its end signal.
    pub fn late(&self, key: &str) -> bool {
        self.late.contains(key)
    }

    /// Note the longest pause `key` made within one update ([`update_pause`]).
    pub fn note_pause(&mut self, key: &str, pause: Duration) {
        let kept = self.pauses.entry(key.to_string()).or_default();
        kept.push_back(pause);
        while kept.len() > UPDATES_KEPT {
            kept.pop_front();
        }
    }

    /// The quiet before observing while waiting for `key` ([`learned_prefetch_after`]).
    pub fn prefetch_after(&self, key: &str) -> Duration {
        let pauses: Vec<Duration> = self
            .pauses
            .get(key)
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default();
        learned_prefetch_after(&pauses)
    }

    /// Note how long the first change took after an action.
    pub fn note(&mut self, key: &str, first: Duration) {
        let e = self
            .first_change
            .entry(key.to_string())
            .or_insert(Duration::ZERO);
        *e = (*e).max(first);
    }
}

/// Longest time between two frames of one transition (GTK draws one every 16 ms; a busy
/// machine skips some).
pub(crate) const FRAME_GAP: Duration = Duration::from_millis(50);
/// Largest transition, per side: a button or an icon fading or pulsing. A larger region
/// redrawn frame after frame (a page being laid out, a video) is content.
const TRANSITION_SIDE: u32 = 160;
/// Frames of a region after which it is a transition.
const TRANSITION_FRAMES: u32 = 3;

/// Regions of a window redrawn frame after frame in one place: a toolkit's transitions (GTK
/// fades a button in over a quarter second when it becomes sensitive, and pulses a
/// suggested action). A small region changed on [`TRANSITION_FRAMES`] looks in a row, each
/// at most [`FRAME_GAP`] after the last, within the same rectangle (give or take 4 pixels)
/// is one: from that frame on its redraws are not changes (the accessibility tree already
/// says what the transition shows), and the looks that decide whether an observation still
/// holds leave it out. A change that lands somewhere else, or a region that grows, is content.
#[derive(Debug, Default)]
pub(crate) struct Transitions(Vec<Track>);

#[derive(Debug, Clone, Copy)]
struct Track {
    rect: Rect,
    frames: u32,
    last: Instant,
}

fn near(a: &Rect, b: &Rect) -> bool {
    (a.x - b.x).abs() <= 4
        && (a.y - b.y).abs() <= 4
        && (a.w as i32 - b.w as i32).abs() <= 4
        && (a.h as i32 - b.h as i32).abs() <= 4
}

impl Transitions {
    /// Note the regions that changed in a look at `at`; the ones that are content (not
    /// transitions) are returned.
    pub fn note(&mut self, at: Instant, regions: &[Rect]) -> Vec<Rect> {
        self.0
            .retain(|t| at.saturating_duration_since(t.last) <= FRAME_GAP);
        let mut content = Vec::new();
        for r in regions {
            let small = r.w <= TRANSITION_SIDE && r.h <= TRANSITION_SIDE;
            let frames = match self.0.iter_mut().find(|t| near(&t.rect, r)) {
                Some(t) if small => {
                    t.frames += 1;
                    t.last = at;
                    t.frames
                }
                _ => {
                    self.0.push(Track {
                        rect: *r,
                        frames: 1,
                        last: at,
                    });
                    1
                }
            };
            if frames < TRANSITION_FRAMES {
                content.push(*r);
            }
        }
        content
    }

    /// The rectangles of the transitions running at `now` (grown by 4 pixels: the track
    /// allows that much movement).
    pub fn running(&self, now: Instant) -> Vec<Rect> {
        self.0
            .iter()
            .filter(|t| t.frames >= TRANSITION_FRAMES)
            .filter(|t| now.saturating_duration_since(t.last) <= FRAME_GAP * 4)
            .map(|t| grow(t.rect, 4))
            .collect()
    }
}

/// What settling keeps between actions.
#[derive(Default)]
pub(crate) struct SettleState {
    /// first-change bounds learned per window and input
    pub learned: Learned,
    /// how the last action went in
    pub last_input: Input,
    /// whether the last action changed the screen
    pub last_changed: Option<bool>,
    /// when the last settle after an action ended
    pub settled_at: Option<Instant>,
    /// the controls clicked lately, newest last (their press animations run on: see
    /// [`Clicked`])
    pub clicked: Clicked,
    /// regions redrawn frame after frame in one place (toolkit transitions)
    pub transitions: Transitions,
    /// the window acted on last (for `settle`)
    pub last_window: Option<WinId>,
    /// the last look of the last settle on events, for the next action's look before it
    pub last_look: Option<LastLook>,
    /// the application and input path of the last settle, when it ended on the
    /// application's end signal (a change seen after it is a late one: [`Learned::late`])
    pub on_signal: Option<String>,
}

/// The last look of a settle on events: what it watched, when the settle ended, and the
/// pixels. While no redraw and no window event came since, the window still looks like that,
/// and the next action's look before it is this one (a grab of the window costs ~5 ms).
pub(crate) struct LastLook {
    pub watched: Watched,
    pub at: Instant,
    pub look: Look,
}

/// Whether the last settle's look stands for the look before the next action: the same
/// windows and area watched, and no redraw nor window event since it was taken (`redraws`
/// and `moved` counted since then).
pub(crate) fn look_still_holds(
    last: &LastLook,
    watched: &Watched,
    redraws: usize,
    moved: bool,
) -> bool {
    last.watched == *watched && redraws == 0 && !moved
}

/// How a settle after an action ended: whether anything changed since the action, and the
/// observation made while it waited that still holds (for the next `observe` of the window).
pub(crate) struct Settled {
    pub changed: bool,
    pub seen: Option<Prefetched>,
}

impl Settled {
    /// A settle that observed nothing ahead.
    pub(crate) fn unseen(changed: bool) -> Settled {
        Settled {
            changed,
            seen: None,
        }
    }
}

/// An observation made while a settle waited out its quiet time, for the next `observe` of
/// the window: the window did not change after it began (up to the end of the settle).
pub(crate) struct Prefetched {
    pub xid: WinId,
    /// the area of the window and its dialogs, which the looks look at
    pub area: Option<Rect>,
    /// when the settle ended
    pub settled: Instant,
    /// the window's last look in the settle, and the rectangles left out of looks
    pub look: Option<Look>,
    pub exempt: Vec<Rect>,
    pub obs: ufo_core::WindowObservation,
    /// the controls it labelled (installed when it is handed out)
    pub controls: (WinId, crate::controls::Labelled),
}

/// An observation made while settling, and when it began.
pub(crate) type Made = (Instant, crate::observe::Observation);

/// Where a settle starts: the time of the action, the screen rectangles left out of the
/// looks at the window and the look before the action (with a change watch); or the window's
/// pixels before it when no watch runs.
pub(crate) enum SettleStart {
    Events {
        since: Instant,
        exempt: Vec<Rect>,
        before: Option<Look>,
        /// when that look began (the last settle's, when nothing was redrawn since)
        before_at: Instant,
        /// the watched window and its window-manager frame (their unmapping means the
        /// action closed the window)
        ids: Vec<WinId>,
        /// the windows watched for damage (the window and the dialogs on it) and the
        /// screen area they cover, which the looks look at
        watched: Watched,
    },
    Pixels(Option<u64>),
}

/// The windows a settle watches: a window and the dialogs on it (a dialog the action opens
/// is drawn after it appears, and the next observation shows it), and the screen area they
/// cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Watched {
    pub ids: Vec<WinId>,
    pub area: Option<Rect>,
}

/// How an action reached the application (the learned bounds differ: an XTEST click shows in
/// milliseconds, an AT-SPI action in GTK only a quarter second later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Input {
    #[default]
    Other,
    Xtest,
    Atspi,
}

/// Whether two looks at a window differ outside `exempt` by more than a blinking text caret
/// (a window that could not be read counts as changed when it could be before, or after).
pub(crate) fn differs(a: Option<&Look>, b: Option<&Look>, exempt: &[Rect]) -> bool {
    changed_box(a, b, exempt).is_some()
}

/// Where two looks at a window differ (see [`differs`]): the smallest rectangle holding
/// every changed region but the carets; the whole window when one of them could not be read.
pub(crate) fn changed_box(a: Option<&Look>, b: Option<&Look>, exempt: &[Rect]) -> Option<Rect> {
    crate::display::pixels::union(changed_regions(a, b, exempt))
}

/// The regions where two looks at a window differ, carets left out; the whole window when
/// one of them could not be read.
pub(crate) fn changed_regions(a: Option<&Look>, b: Option<&Look>, exempt: &[Rect]) -> Vec<Rect> {
    match (a, b) {
        (Some(a), Some(b)) => a
            .changed_regions(b, exempt)
            .into_iter()
            .filter(|r| !crate::display::pixels::is_caret(r))
            .collect(),
        (None, None) => Vec::new(),
        _ => vec![Rect::default()],
    }
}

/// `r` grown by `by` pixels on every side (a button's focus ring and shadow).
pub(crate) fn grow(r: Rect, by: u32) -> Rect {
    Rect {
        x: r.x - by as i32,
        y: r.y - by as i32,
        w: r.w + 2 * by,
        h: r.h + 2 * by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn p() -> SettleParams {
        SettleParams {
            quiet: ms(40),
            first_change: ms(100),
            tail: ms(300),
            max: ms(800),
            frame: None,
        }
    }

    #[test]
    fn settles_once_quiet_after_a_change() {
        // changed at 10 ms: at 30 ms wait 20 ms more, at 50 ms settled
        assert_eq!(
            decide(ms(30), Some(ms(10)), Some(ms(10)), None, None, &p()),
            Decision::Wait(ms(20))
        );
        assert_eq!(
            decide(ms(50), Some(ms(10)), Some(ms(10)), None, None, &p()),
            Decision::Settled { changed: true }
        );
    }

    #[test]
    fn a_later_change_restarts_the_quiet_time() {
        assert_eq!(
            decide(ms(60), Some(ms(10)), Some(ms(45)), None, None, &p()),
            Decision::Wait(ms(25))
        );
    }

    #[test]
    fn nothing_changed_ends_at_the_first_change_bound() {
        assert_eq!(
            decide(ms(30), None, None, None, None, &p()),
            Decision::Wait(ms(70))
        );
        assert_eq!(
            decide(ms(100), None, None, None, None, &p()),
            Decision::Settled { changed: false }
        );
    }

    #[test]
    fn a_transition_that_runs_on_ends_at_the_tail() {
        // first change at 30 ms, redraws every 16 ms: done at 30 + 300 ms
        assert_eq!(
            decide(ms(320), Some(ms(30)), Some(ms(318)), None, None, &p()),
            Decision::Wait(ms(10))
        );
        assert_eq!(
            decide(ms(330), Some(ms(30)), Some(ms(318)), None, None, &p()),
            Decision::Settled { changed: true }
        );
    }

    #[test]
    fn a_window_that_never_goes_quiet_ends_at_the_max() {
        let p = SettleParams {
            tail: ms(2000),
            ..p()
        };
        assert_eq!(
            decide(ms(800), Some(ms(5)), Some(ms(795)), None, None, &p),
            Decision::Settled { changed: true }
        );
        // a wait never runs past the max
        assert_eq!(
            decide(ms(790), Some(ms(5)), Some(ms(789)), None, None, &p),
            Decision::Wait(ms(10))
        );
    }

    fn framed() -> SettleParams {
        SettleParams {
            frame: Some(FRAME),
            ..p()
        }
    }

    #[test]
    fn an_answer_after_the_last_change_and_a_frame_of_quiet_end_the_wait() {
        // gnome-calculator's `=`: the result drawn 50 ms after the click, the ping sent
        // after it answered at 53 ms: settled a frame later, not 40 ms after the change
        assert_eq!(
            decide(
                ms(60),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(53)),
                None,
                &framed()
            ),
            Decision::Wait(ms(13))
        );
        assert_eq!(
            decide(
                ms(73),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(53)),
                None,
                &framed()
            ),
            Decision::Settled { changed: true }
        );
        // a frame after the change is not enough without the answer: the main loop may be
        // busy with more of the update
        assert_eq!(
            decide(ms(75), Some(ms(50)), Some(ms(50)), None, None, &framed()),
            Decision::Wait(ms(15))
        );
        assert_eq!(
            decide(ms(90), Some(ms(50)), Some(ms(50)), None, None, &framed()),
            Decision::Settled { changed: true }
        );
        // an answer to a ping sent before the last change says nothing of it
        assert_eq!(
            decide(
                ms(80),
                Some(ms(20)),
                Some(ms(60)),
                Some(ms(30)),
                None,
                &framed()
            ),
            Decision::Wait(ms(20))
        );
        // a late answer (a busy main loop) still needs its frame: a paint queued behind
        // the ping comes after the answer
        assert_eq!(
            decide(
                ms(95),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(80)),
                None,
                &framed()
            ),
            Decision::Settled { changed: true },
            "the quiet time passed first"
        );
        let slow = SettleParams {
            quiet: ms(200),
            ..framed()
        };
        assert_eq!(
            decide(
                ms(95),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(80)),
                None,
                &slow
            ),
            Decision::Wait(ms(5))
        );
    }

    #[test]
    fn a_frame_drawn_after_the_answer_and_seen_unchanged_ends_the_wait_at_once() {
        // the result drawn at 50 ms, answered at 53, a frame of the clicked button's press
        // animation drawn at 58 and looked at with no change: settled then, not at 73
        assert_eq!(
            decide(
                ms(64),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(53)),
                Some(ms(58)),
                &framed()
            ),
            Decision::Settled { changed: true }
        );
        assert!(ended_on_signal(
            ms(64),
            Some(ms(50)),
            Some(ms(50)),
            &framed()
        ));
        // a frame drawn before the answer may precede a paint queued behind the ping
        assert_eq!(
            decide(
                ms(56),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(53)),
                Some(ms(52)),
                &framed()
            ),
            Decision::Wait(ms(17))
        );
        // a frame that showed a change is the last change: the answer came before it
        assert_eq!(
            decide(
                ms(64),
                Some(ms(50)),
                Some(ms(58)),
                Some(ms(53)),
                Some(ms(58)),
                &framed()
            ),
            Decision::Wait(ms(34))
        );
        // no answer, or no end signal for this toolkit: a frame says nothing
        assert_eq!(
            decide(
                ms(64),
                Some(ms(50)),
                Some(ms(50)),
                None,
                Some(ms(58)),
                &framed()
            ),
            Decision::Wait(ms(26))
        );
        assert_eq!(
            decide(
                ms(64),
                Some(ms(50)),
                Some(ms(50)),
                Some(ms(53)),
                Some(ms(58)),
                &p()
            ),
            Decision::Wait(ms(26))
        );
    }

    #[test]
    fn without_a_trusted_end_signal_an_answer_changes_nothing() {
        assert_eq!(
            decide(ms(73), Some(ms(50)), Some(ms(50)), Some(ms(53)), None, &p()),
            Decision::Wait(ms(17))
        );
        assert_eq!(
            decide(ms(20), None, None, Some(ms(3)), None, &framed()),
            Decision::Wait(ms(80)),
            "nothing changed yet: the first-change bound"
        );
    }

    #[test]
    fn only_a_settle_ended_before_its_quiet_time_ended_on_the_signal() {
        let f = framed();
        assert!(ended_on_signal(ms(73), Some(ms(50)), Some(ms(50)), &f));
        assert!(!ended_on_signal(ms(90), Some(ms(50)), Some(ms(50)), &f));
        assert!(!ended_on_signal(ms(73), Some(ms(50)), Some(ms(50)), &p()));
        assert!(!ended_on_signal(ms(100), None, None, &f), "nothing changed");
        let short = SettleParams {
            tail: ms(20),
            ..framed()
        };
        assert!(
            !ended_on_signal(ms(73), Some(ms(50)), Some(ms(60)), &short),
            "the tail"
        );
    }

    #[test]
    fn a_change_after_a_settle_on_the_signal_is_late_only_when_the_pixels_differ() {
        let w = |x| Watched {
            ids: vec![WinId(1)],
            area: Some(Rect::new(x, 0, 100, 100)),
        };
        let last = LastLook {
            watched: w(0),
            at: Instant::now(),
            look: Look::default(),
        };
        assert!(changed_after_signal(true, &last, &w(0), true, true));
        assert!(
            !changed_after_signal(false, &last, &w(0), true, true),
            "a quiet-time end"
        );
        assert!(
            !changed_after_signal(true, &last, &w(0), true, false),
            "a caret, a hover"
        );
        assert!(
            !changed_after_signal(true, &last, &w(0), false, true),
            "not redrawn"
        );
        assert!(
            !changed_after_signal(true, &last, &w(8), true, true),
            "the window moved"
        );
    }

    #[test]
    fn a_small_region_redrawn_frame_after_frame_in_place_is_a_transition_from_its_third_frame() {
        let t0 = Instant::now();
        let button = Rect::new(740, 660, 63, 92);
        let display = Rect::new(500, 455, 17, 22);
        let mut tr = Transitions::default();
        assert_eq!(tr.note(t0, &[display, button]), vec![display, button]);
        assert_eq!(tr.note(t0 + ms(15), &[button]), vec![button]);
        assert!(tr.running(t0 + ms(15)).is_empty());
        // the third frame, a pixel off
        let moved = Rect::new(741, 660, 63, 92);
        assert_eq!(tr.note(t0 + ms(30), &[moved]), vec![]);
        assert_eq!(tr.running(t0 + ms(40)), vec![grow(button, 4)]);
        // content elsewhere still counts while it runs
        assert_eq!(tr.note(t0 + ms(45), &[moved, display]), vec![display]);
        // a pause longer than a frame ends it
        assert_eq!(tr.note(t0 + ms(200), &[moved]), vec![moved]);
    }

    #[test]
    fn a_large_or_growing_region_redrawn_frame_after_frame_is_content() {
        let t0 = Instant::now();
        let page = Rect::new(0, 80, 800, 600);
        let mut tr = Transitions::default();
        for i in 0..5 {
            assert_eq!(tr.note(t0 + ms(16 * i), &[page]), vec![page]);
        }
        let mut tr = Transitions::default();
        for i in 0..5u32 {
            let text = Rect::new(10, 10, 10 + 12 * i, 20);
            assert_eq!(tr.note(t0 + ms(16 * u64::from(i)), &[text]), vec![text]);
        }
        assert!(tr.running(t0 + ms(80)).is_empty());
    }

    #[test]
    fn clicks_animate_for_a_while_and_the_last_one_keeps_the_pointer() {
        let t0 = Instant::now();
        let r = |x| Rect::new(x, 0, 10, 10);
        let mut c = Clicked::default();
        c.note(t0, r(1));
        c.note(t0 + ms(100), r(2));
        assert_eq!(c.animating(t0 + ms(200)), vec![r(1), r(2)]);
        assert_eq!(c.animating(t0 + ms(650)), vec![r(2)]);
        assert_eq!(c.animating(t0 + ms(5000)), vec![r(2)]);
    }

    #[test]
    fn the_last_look_stands_only_for_the_same_windows_with_no_redraw_since() {
        let w = |ids: Vec<u32>, x| Watched {
            ids: ids.into_iter().map(WinId).collect(),
            area: Some(Rect::new(x, 0, 100, 100)),
        };
        let last = LastLook {
            watched: w(vec![1], 0),
            at: Instant::now(),
            look: Look::default(),
        };
        assert!(look_still_holds(&last, &w(vec![1], 0), 0, false));
        assert!(
            !look_still_holds(&last, &w(vec![1], 0), 1, false),
            "redrawn since"
        );
        assert!(
            !look_still_holds(&last, &w(vec![1], 0), 0, true),
            "a window moved"
        );
        assert!(
            !look_still_holds(&last, &w(vec![1, 2], 0), 0, false),
            "a dialog opened"
        );
        assert!(
            !look_still_holds(&last, &w(vec![1], 8), 0, false),
            "the window moved"
        );
    }

    #[test]
    fn a_slow_action_extends_the_wait_for_its_first_change_up_to_the_max() {
        // a cell entry whose content showed after 481 ms: the redraw is still awaited
        assert_eq!(first_change_bound(ms(300), ms(481), ms(800)), ms(781));
        assert_eq!(first_change_bound(ms(300), ms(1), ms(800)), ms(301));
        assert_eq!(first_change_bound(ms(800), ms(100), ms(800)), ms(800));
    }

    #[test]
    fn the_first_change_bound_is_learned_per_key() {
        let mut l = Learned::default();
        assert_eq!(l.bound("calc/xtest", ms(800)), ms(800));
        l.note("calc/xtest", ms(12));
        assert_eq!(l.bound("calc/xtest", ms(800)), FLOOR);
        l.note("calc/xtest", ms(100));
        l.note("calc/xtest", ms(20));
        assert_eq!(l.bound("calc/xtest", ms(800)), ms(200));
        l.note("calc/atspi", ms(600));
        assert_eq!(l.bound("calc/atspi", ms(800)), ms(800));
        assert_eq!(l.bound("calc/xtest", ms(800)), ms(200));
    }

    #[test]
    fn the_quiet_before_observing_is_learned_from_the_longest_pause_within_updates() {
        // too few settles seen: today's
        assert_eq!(learned_prefetch_after(&[]), PREFETCH_AFTER);
        assert_eq!(learned_prefetch_after(&[ms(0), ms(0)]), PREFETCH_AFTER);
        // LibreOffice's cell entries: one change each
        assert_eq!(
            learned_prefetch_after(&[ms(0), ms(0), ms(0)]),
            PREFETCH_FLOOR
        );
        // an update in parts up to 14 ms apart
        assert_eq!(learned_prefetch_after(&[ms(12), ms(14), ms(0)]), ms(14));
        // a loaded machine: never past today's
        assert_eq!(
            learned_prefetch_after(&[ms(16), ms(42), ms(12)]),
            PREFETCH_AFTER
        );
    }

    #[test]
    fn the_pause_of_an_update_is_the_longest_between_its_changes() {
        assert_eq!(update_pause(&[ms(50), ms(68), ms(52)]), ms(16));
        assert_eq!(
            update_pause(&[ms(50), ms(50)]),
            ms(0),
            "first and last alike"
        );
        assert_eq!(update_pause(&[ms(50)]), ms(0));
        assert_eq!(update_pause(&[]), ms(0));
    }

    #[test]
    fn the_quiet_before_observing_is_learned_per_key_and_a_long_pause_raises_it_at_once() {
        let mut l = Learned::default();
        assert_eq!(l.prefetch_after("calc/Xtest"), PREFETCH_AFTER);
        l.note_pause("calc/Xtest", ms(4));
        l.note_pause("calc/Xtest", ms(0));
        assert_eq!(
            l.prefetch_after("calc/Xtest"),
            PREFETCH_AFTER,
            "two settles are not enough"
        );
        l.note_pause("calc/Xtest", ms(0));
        assert_eq!(l.prefetch_after("calc/Xtest"), PREFETCH_FLOOR);
        assert_eq!(l.prefetch_after("calc/Atspi"), PREFETCH_AFTER);
        l.note_pause("calc/Xtest", ms(17));
        assert_eq!(l.prefetch_after("calc/Xtest"), ms(17));
        // a load that came and went is forgotten after as many settles as are kept
        for _ in 0..UPDATES_KEPT {
            l.note_pause("calc/Xtest", ms(4));
        }
        assert_eq!(l.prefetch_after("calc/Xtest"), PREFETCH_FLOOR);
    }

    #[test]
    fn a_late_change_is_kept_per_key() {
        let mut l = Learned::default();
        assert!(!l.late("calc/Xtest"));
        l.note_late("calc/Xtest");
        assert!(l.late("calc/Xtest"));
        assert!(!l.late("calc/Atspi"));
    }
}
