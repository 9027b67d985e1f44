//! The waits around an action: watching the window before it (`settle_start`), settling
//! after it on events (`settle_after`, see `settle` for what counts as a change and when the
//! window has settled), handing out the observation made while waiting
//! (`still_holds`), and the settle asked for between steps (`settle_quiet`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ufo_core::Rect;

use super::settle::{
    changed_after_signal, changed_box, changed_regions, decide, differs, ended_on_signal,
    first_change_bound, grow, look_still_holds, update_pause, Decision, Input, LastLook, Made,
    Prefetched, SettleParams, SettleStart, Settled, Watched, FRAME, PREFETCH_KEPT, PREFETCH_MAX,
    QUIET,
};
use super::Settler;
use crate::display::pixels::Look;
use crate::display::watch::ChangeWatch;
use crate::display::WinId;

/// What one settle on events knows and has seen so far (see
/// [`Settler::settle_after`]).
struct Run {
    /// when the action began, the rectangles left out of the looks, and the watched window
    /// with its window-manager frame
    since: Instant,
    exempt: Vec<Rect>,
    ids: Vec<WinId>,
    /// the windows watched (the window and the dialogs on it) and the area they cover
    watched: Watched,
    params: SettleParams,
    /// the quiet after the last change before observing while waiting (learned:
    /// `settle::learned_prefetch_after`)
    prefetch_after: Duration,
    poll: Duration,
    /// the redraws counted at the last look, and that look
    seen: usize,
    look: Option<Look>,
    /// when that look began (a redraw logged after it may not be in it)
    look_at: Instant,
    /// the first and the last change seen in the looks, after `since`
    first: Option<Duration>,
    last: Option<Duration>,
    looks: usize,
    /// the changes seen (ms after `since`, rectangle), for the log
    changes: Vec<(u64, i32, i32, u32, u32)>,
    prefetches: usize,
    prefetched: Option<Made>,
    /// the time of the last window event followed
    structure_seen: Option<Duration>,
    /// a "nothing changed" was checked against the application's own answer
    late_checked: bool,
    /// with an end signal ([`SettleParams::frame`]): the last pings sent to the application
    /// (their numbers, and when they were sent after `since`; at most [`PINGS_KEPT`]), and
    /// when the first of those sent after the last change was answered
    pings: Vec<(u32, Duration)>,
    answered: Option<Duration>,
    /// the last redraw reported before the last look began (after `since`): the last frame
    /// a look has seen
    drawn: Option<Duration>,
}

/// Longest wait between two looks at the log of changes while settling.
const POLL: Duration = Duration::from_millis(5);
/// The same with an end signal ([`SettleParams::frame`]).
const FRAME_POLL: Duration = Duration::from_millis(2);

/// Most pings one settle keeps asking about (one is sent behind each new redraw).
const PINGS_KEPT: usize = 8;

/// How long after the application's answer a window its handler made has surely been
/// announced (its CreateNotify comes at once; its MapNotify waits for the window manager).
const HANDLER_WINDOW: Duration = Duration::from_millis(4);

/// Longest wait, once the application answered, for a window made since the action to be
/// shown: the application asks the window manager to map it, which takes a while more (GIMP's
/// Preferences window: made 50 ms before GIMP's answer, in the window manager's list up to 20
/// ms after it, on a 2-core machine running tests). A window made and never shown (a toolkit's
/// hidden helper window) costs this much.
const SHOW_WAIT: Duration = Duration::from_millis(500);

/// Longest wait for an application to answer a ping ([`Settler::input_handled`]): one
/// that does not answer (hung, or a toolkit that ignores pings) is taken to have read its
/// input by then.
const PING_MAX: Duration = Duration::from_secs(2);
/// Interval between two checks for the answer to a ping.
const PING_POLL: Duration = Duration::from_millis(2);

/// When the observation made while settling began, if it began after the first change
/// (`first`, after the action) and read controls of the application `bus`: the application
/// answered it after the action's handler had run, as the round trip of
/// [`Settler::wait_for_handler`] would; its first answer came one round trip or more
/// before the observation ended.
fn answered_after(run: &Run, first: Option<Duration>, bus: &str) -> Option<Instant> {
    let (began, o) = run.prefetched.as_ref()?;
    let read_bus = o.labelled.1.iter().any(|(_, c)| c.bus == bus);
    stands_for_handler(*began, run.since, first, read_bus).then_some(*began)
}

/// The rule of [`answered_after`]: an observation that `began` after the first change (seen
/// `first` after the action at `since`) and read the application's controls (`read_bus`).
fn stands_for_handler(
    began: Instant,
    since: Instant,
    first: Option<Duration>,
    read_bus: bool,
) -> bool {
    read_bus && first.is_some_and(|f| began >= since + f)
}

/// When (after the action) a change a look found happened: when the last redraw noted by
/// the end of the look was reported (`redraw`; the look itself, 5-10 ms, and the wait before
/// it, the end of the action, come after it: counting from the end of the look lengthened
/// every quiet time by as much), else when the look ended (`elapsed`), less how late the
/// display reported that redraw (`late`: KWin's repaint wait for a streamed window, zero on
/// X11), never before the last change already seen (`last`).
fn seen_at(
    elapsed: Duration,
    redraw: Option<Duration>,
    late: Duration,
    last: Option<Duration>,
) -> Duration {
    redraw
        .map_or(elapsed, |r| r.min(elapsed))
        .saturating_sub(late)
        .max(last.unwrap_or(Duration::ZERO))
}

/// The longest pause between two changes a settle saw ([`update_pause`]): those its looks
/// found, and the first and the last change (`first`, `last`; a window appearing or going
/// included), in whole milliseconds as the looks note them.
fn longest_pause(run: &Run, first: Duration, last: Option<Duration>) -> Duration {
    let ms = |d: Duration| Duration::from_millis(d.as_millis() as u64);
    let mut seen: Vec<Duration> = run
        .changes
        .iter()
        .map(|c| Duration::from_millis(c.0))
        .collect();
    seen.extend([first].into_iter().chain(last).map(ms));
    update_pause(&seen)
}

/// Keep `ping` among the last [`PINGS_KEPT`] pings of a settle.
fn keep_ping(pings: &mut Vec<(u32, Duration)>, ping: (u32, Duration)) {
    pings.push(ping);
    if pings.len() > PINGS_KEPT {
        pings.remove(0);
    }
}

/// When (after the action) the application first answered a ping sent after its last change
/// (at `last`), given each ping's answer (`answer`, `None` before it came): a ping sent
/// before the change says nothing of it.
fn first_answer(
    pings: &[(u32, Duration)],
    last: Duration,
    answer: impl Fn(u32) -> Option<Duration>,
) -> Option<Duration> {
    pings
        .iter()
        .filter(|(_, sent)| *sent >= last)
        .filter_map(|(n, _)| answer(*n))
        .min()
}

impl Settler<'_> {
    /// When the application owning window `xid` had read the input sent to it so far: it
    /// answered a ping sent behind that input (`ChangeWatch::ping`). `None` without a change
    /// watch, or when no answer came within [`PING_MAX`].
    pub(crate) async fn input_handled(&self, xid: WinId) -> Option<Instant> {
        let w = Arc::clone(self.watch.as_ref()?);
        let asked = Instant::now();
        let pinger = Arc::clone(&w);
        let n = tokio::task::spawn_blocking(move || pinger.ping(xid))
            .await
            .ok()??;
        while asked.elapsed() < PING_MAX {
            if let Some(at) = w.log().pong(n) {
                tracing::debug!(ms = (at - asked).as_millis() as u64, "input read");
                return Some(at);
            }
            tokio::time::sleep(PING_POLL).await;
        }
        tracing::debug!("no answer to the ping");
        None
    }

    /// Start watching `xid` before acting on it. `clicked` is the control about to be
    /// clicked: its own press and hover animation (and those of the controls clicked just
    /// before, and of the one the pointer leaves) run on for half a second in GTK and say
    /// nothing new, so the looks at the window leave them out.
    pub(crate) async fn settle_start(&self, xid: WinId, clicked: Option<Rect>) -> SettleStart {
        let exempt: Vec<Rect> = {
            let mut g = self.settling.lock();
            g.last_input = Input::Other;
            let now = Instant::now();
            let mut exempt = g.clicked.animating(now);
            if let Some(r) = clicked {
                exempt.push(r);
                g.clicked.note(now, r);
            }
            exempt.into_iter().map(|r| grow(r, 4)).collect()
        };
        match self.watch {
            Some(w) => {
                let watched = self.watched(xid).await;
                let (watcher, wanted) = (Arc::clone(w), watched.ids.clone());
                let _ = tokio::task::spawn_blocking(move || watcher.watch(&wanted)).await;
                let frame = self.run(move |d| d.top_of(xid)).await.ok();
                let ids = std::iter::once(xid).chain(frame).collect();
                let since = Instant::now();
                // (the last settle's look, when nothing was redrawn since)
                let (before, before_at) = match self.look_unchanged(w.as_ref(), &watched) {
                    Some(kept) => kept,
                    None => {
                        let now = self.look_at(watched.area).await;
                        self.note_late_change(&watched, now.as_ref(), &exempt);
                        (now, since)
                    }
                };
                SettleStart::Events {
                    since,
                    exempt,
                    before,
                    before_at,
                    ids,
                    watched,
                }
            }
            None => SettleStart::Pixels(self.fingerprint(xid).await),
        }
    }

    /// A step of [`Self::settle_start`] when the window was redrawn since the last settle
    /// ended (`now`: its look): if that settle ended on the application's end signal and the
    /// window changed since, the settle missed a late change, and that application and input
    /// path wait for the quiet time from now on ([`changed_after_signal`]).
    fn note_late_change(&self, watched: &Watched, now: Option<&Look>, exempt: &[Rect]) {
        let mut g = self.settling.lock();
        let Some(key) = g.on_signal.take() else {
            return;
        };
        let mut exempt = exempt.to_vec();
        exempt.extend(g.transitions.running(Instant::now()));
        let late = g.last_look.as_ref().is_some_and(|last| {
            let differs = differs(Some(&last.look), now, &exempt);
            changed_after_signal(true, last, watched, true, differs)
        });
        if late {
            tracing::debug!(key, "changed after a settle on the end signal");
            g.learned.note_late(&key);
        }
    }

    /// The windows to watch for `xid`: it and the dialogs on it (the windows transient for
    /// it), with the area they cover; `xid` alone when the window manager does not list it.
    async fn watched(&self, xid: WinId) -> Watched {
        self.run(move |d| {
            let all = d.windows()?;
            let mine: Vec<_> = all
                .iter()
                .filter(|w| w.id == xid || w.transient_for == Some(xid))
                .collect();
            if !mine.iter().any(|w| w.id == xid) {
                let area = d.window(xid)?.and_then(|w| w.area);
                return Ok(Watched {
                    ids: vec![xid],
                    area,
                });
            }
            Ok(Watched {
                ids: mine.iter().map(|w| w.id).collect(),
                area: crate::display::pixels::union(mine.iter().filter_map(|w| w.area)),
            })
        })
        .await
        .unwrap_or_else(|_: crate::LinuxError| Watched {
            ids: vec![xid],
            area: None,
        })
    }

    /// The last settle's last look when the window still looks like that
    /// ([`look_still_holds`]): the same windows watched, and not redrawn nor moved since.
    fn look_unchanged(
        &self,
        w: &dyn ChangeWatch,
        watched: &Watched,
    ) -> Option<(Option<Look>, Instant)> {
        let g = self.settling.lock();
        let last = g.last_look.as_ref()?;
        let (redraws, _, _) = w.log().activity_since(last.at);
        let moved = w.log().structure_since(last.at);
        look_still_holds(last, watched, redraws, moved).then(|| (Some(last.look.clone()), last.at))
    }

    /// The pixels of a screen area now (`None` when there is none or it cannot be read).
    async fn look_at(&self, area: Option<Rect>) -> Option<Look> {
        let a = area?;
        self.run(move |d| d.look(a)).await.ok()
    }

    /// The window's pixels now (`None` when it cannot be read).
    async fn look(&self, xid: WinId) -> Option<Look> {
        self.run(move |d| {
            let w = d
                .window(xid)?
                .ok_or_else(|| crate::LinuxError::NoWindow(xid.to_string()))?;
            let area = w.area.ok_or_else(|| crate::display::position_unknown(&w))?;
            d.look(area)
        })
        .await
        .ok()
    }

    /// Wait until the window has settled after the action begun at `start`; remembers (for
    /// [`ufo_core::Desktop::last_action_changed`]) whether anything changed. A redraw counts
    /// as a change when the window's pixels (outside the exempt rectangles) differ from the
    /// last look; a window mapped, unmapped or moved always counts.
    pub(crate) async fn settle_after(
        &self,
        xid: WinId,
        start: SettleStart,
        probe: Option<(&str, &str)>,
    ) -> Settled {
        let settled = match (start, self.watch) {
            (
                SettleStart::Events {
                    since,
                    exempt,
                    before,
                    before_at,
                    ids,
                    watched,
                },
                Some(w),
            ) => {
                let key = format!("{xid}/{:?}", self.settling.lock().last_input);
                let max = self.config.settle_time;
                // (counted from when the action was sent: a slow one, a cell entry waiting
                // for LibreOffice, must not use up the wait for the redraw after it)
                let (learned, late) = {
                    let g = self.settling.lock();
                    (g.learned.bound(&key, max), g.learned.late(&key))
                };
                // the application's end signal, where its toolkit gives one
                let frame = match probe {
                    Some((bus, _)) if !late => {
                        self.observer.apps.draws_in_one_frame(self.bus, bus).await
                    }
                    _ => false,
                };
                let params = SettleParams {
                    quiet: QUIET,
                    first_change: first_change_bound(learned, since.elapsed(), max),
                    tail: self.config.settle_tail,
                    max,
                    frame: frame.then_some(FRAME),
                };
                let run = Run {
                    since,
                    exempt,
                    ids,
                    watched,
                    params,
                    prefetch_after: self.settling.lock().learned.prefetch_after(&key),
                    // (with an end signal, its answer and the frame after it are what the
                    // step waits for: noticed within 2 ms rather than 5)
                    poll: self
                        .config
                        .settle_poll
                        .min(if frame { FRAME_POLL } else { POLL }),
                    seen: 0,
                    look: before,
                    look_at: before_at,
                    first: None,
                    last: None,
                    looks: 0,
                    changes: Vec::new(),
                    prefetches: 0,
                    prefetched: None,
                    structure_seen: None,
                    late_checked: false,
                    pings: Vec::new(),
                    answered: None,
                    drawn: None,
                };
                self.settle_on_events(xid, w, key, run, probe).await
            }
            (SettleStart::Pixels(before), _) => {
                self.settle_window(xid, before).await;
                Settled::unseen(before.is_none() || self.fingerprint(xid).await != before)
            }
            (SettleStart::Events { .. }, None) => Settled::unseen(true),
        };
        self.settling.lock().last_changed = Some(settled.changed);
        settled
    }

    /// [`Self::settle_after`] with a change watch: follow the windows and look at them on
    /// every redraw until [`decide`] says the window settled (observing it while the quiet
    /// time runs out), then wait for what the application may still do, and keep the
    /// observation made meanwhile if it still holds.
    async fn settle_on_events(
        &self,
        xid: WinId,
        w: &Arc<dyn ChangeWatch>,
        key: String,
        mut run: Run,
        probe: Option<(&str, &str)>,
    ) -> Settled {
        let since = run.since;
        let max = run.params.max;
        loop {
            let (redraws, s_first, s_last) = w.log().activity_since(since);
            // a window appeared, went or moved: a dialog opened on the window (or
            // closed) is watched (or let go) from now on
            let mut moved = false;
            if s_last != run.structure_seen {
                run.structure_seen = s_last;
                moved = self.follow_windows(xid, w, &mut run).await;
            }
            if redraws > run.seen || moved {
                run.seen = redraws;
                // (asked before looking: the answer comes while the look runs)
                self.ping_behind_redraw(xid, w, &mut run).await;
                self.look_again(w.as_ref(), &mut run).await;
            }
            let f = match (run.first, s_first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let l = match (run.last, s_last) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            self.ask_after_change(xid, w, &mut run, l).await;
            // the last frame seen stands for every frame drawn when no redraw came since the
            // look began, and for the window's frame clock when one window is watched (a
            // dialog paints on a frame clock of its own)
            let unseen = w.log().activity_since(since).0 > run.seen;
            let drawn = run
                .drawn
                .filter(|_| !unseen && !moved && run.watched.ids.len() == 1);
            match decide(since.elapsed(), f, l, run.answered, drawn, &run.params) {
                Decision::Wait(d) => {
                    if self.prefetch(xid, &mut run, l).await {
                        continue;
                    }
                    tokio::time::sleep(d.min(run.poll)).await
                }
                Decision::Settled { changed } => {
                    let decided = since.elapsed();
                    // no change within the learned bound: the application may be slow to
                    // redraw (a loaded machine), not idle
                    if !changed && !run.late_checked && since.elapsed() < max {
                        run.late_checked = true;
                        if let Some(probe) = probe {
                            if self.redrew_late(w.as_ref(), probe, &mut run).await {
                                continue;
                            }
                        }
                    }
                    let times = (f, l, decided, redraws);
                    break self
                        .settled(xid, w.as_ref(), &key, run, probe, times, changed)
                        .await;
                }
            }
        }
    }

    /// A step of [`Self::settle_on_events`] once [`decide`] said the window settled: wait
    /// for what the application may still do (its handler's round trip, the next dialog),
    /// learn how long the first change took, and keep the observation made meanwhile if it
    /// still holds. `times`: the first and the last change, when it was decided, and the
    /// redraws counted.
    #[allow(clippy::too_many_arguments)]
    async fn settled(
        &self,
        xid: WinId,
        w: &dyn ChangeWatch,
        key: &str,
        mut run: Run,
        probe: Option<(&str, &str)>,
        (f, l, decided, redraws): (Option<Duration>, Option<Duration>, Duration, usize),
        changed: bool,
    ) -> Settled {
        let (since, max) = (run.since, run.params.max);
        if let Some(probe) = probe {
            // (a ping answered after the last change is the handler's round trip too: a
            // window the handler made was announced before the answer)
            // (the first ping sent after the last change, when one was answered)
            let pinged = run.answered.and_then(|_| {
                let sent = run.pings.iter().map(|(_, sent)| *sent);
                sent.filter(|s| l.is_some_and(|l| *s >= l)).min()
            });
            let answered = answered_after(&run, f, probe.0).or(pinged.map(|t| since + t));
            self.wait_for_handler(w, probe, answered, since, max, run.poll)
                .await;
        }
        self.wait_for_next_dialog(w, &run, max).await;
        let on_signal = ended_on_signal(decided, f, l, &run.params);
        let pause = f.map(|f| longest_pause(&run, f, l));
        {
            let mut g = self.settling.lock();
            if let Some(f) = f {
                g.learned.note(key, f);
            }
            if let Some(p) = pause {
                g.learned.note_pause(key, p);
            }
            g.on_signal = on_signal.then(|| key.to_string());
        }
        let kept = self.still_prefetched(xid, w, &mut run, l).await;
        let kept_one = kept.is_some();
        {
            let mut g = self.settling.lock();
            let now = Instant::now();
            g.settled_at = Some(now);
            // (taken before now: a redraw between it and now is counted against it)
            g.last_look = run.look.clone().map(|look| LastLook {
                watched: run.watched.clone(),
                at: run.look_at,
                look,
            });
        }
        tracing::debug!(
            changed,
            first_ms = f.map(|f| f.as_millis() as u64),
            decided_ms = decided.as_millis() as u64,
            on_signal,
            prefetch_after_ms = run.prefetch_after.as_millis() as u64,
            pause_ms = pause.map(|p| p.as_millis() as u64),
            answered_ms = run.answered.map(|a| a.as_millis() as u64),
            drawn_ms = run.drawn.map(|d| d.as_millis() as u64),
            pings = run.pings.len(),
            redraws,
            looks = run.looks,
            prefetches = run.prefetches,
            kept_one,
            changes = ?run.changes,
            exempt = ?run.exempt,
            ms = since.elapsed().as_millis() as u64,
            "settled"
        );
        Settled {
            changed,
            seen: kept,
        }
    }

    /// A step of [`Self::settle_on_events`]: a window appeared, went or moved; watch the
    /// window and the dialogs on it as they are now. Whether they changed.
    async fn follow_windows(&self, xid: WinId, w: &Arc<dyn ChangeWatch>, run: &mut Run) -> bool {
        let now = self.watched(xid).await;
        if now == run.watched {
            return false;
        }
        // a dialog the action opened on the window is drawn for a while
        // after it appears, and that is content, not a transition: it
        // gets the whole settle time to go quiet
        if now.ids.iter().any(|i| !run.watched.ids.contains(i)) {
            run.params.tail = run.params.max;
        }
        if now.ids != run.watched.ids {
            let (w, wanted) = (Arc::clone(w), now.ids.clone());
            let _ = tokio::task::spawn_blocking(move || w.watch(&wanted)).await;
        }
        run.watched = now;
        true
    }

    /// A step of [`Self::settle_on_events`]: look at the watched area again and note where it
    /// changed outside the exempt rectangles and the running transitions.
    async fn look_again(&self, w: &dyn ChangeWatch, run: &mut Run) {
        run.looks += 1;
        let began = Instant::now();
        let shown = w.log().last_redraw_since(run.since);
        let now = self.look_at(run.watched.area).await;
        run.look_at = began;
        run.drawn = shown.map(|(at, _)| at.saturating_duration_since(run.since));
        // the last redraw this look shows, and how late the display reported it (a
        // compositor's frame)
        let (redraw, late) = w
            .log()
            .last_redraw_since(run.since)
            .map_or((None, Duration::ZERO), |(at, late)| {
                (Some(at.saturating_duration_since(run.since)), late)
            });
        let regions = changed_regions(run.look.as_ref(), now.as_ref(), &run.exempt);
        run.look = now;
        let content = self
            .settling
            .lock()
            .transitions
            .note(Instant::now(), &regions);
        if let Some(r) = crate::display::pixels::union(content) {
            let t = seen_at(run.since.elapsed(), redraw, late, run.last);
            run.changes.push((t.as_millis() as u64, r.x, r.y, r.w, r.h));
            run.first.get_or_insert(t);
            run.last = Some(t);
        }
    }

    /// A step of [`Self::settle_on_events`] with an end signal ([`SettleParams::frame`]): ask
    /// the application whether it has read everything up to its last change (at `l`), unless
    /// a ping was sent after it (a ping, `ChangeWatch::ping`), and note when the first ping
    /// sent after the change was answered.
    async fn ask_after_change(
        &self,
        xid: WinId,
        w: &Arc<dyn ChangeWatch>,
        run: &mut Run,
        l: Option<Duration>,
    ) {
        let Some(l) = l.filter(|_| run.params.frame.is_some()) else {
            return;
        };
        if !run.pings.iter().any(|(_, sent)| *sent >= l) {
            let pinger = Arc::clone(w);
            let sent = run.since.elapsed();
            let n = tokio::task::spawn_blocking(move || pinger.ping(xid)).await;
            // (no answer can come: the quiet time ends the settle)
            run.params.frame = run.params.frame.filter(|_| matches!(n, Ok(Some(_))));
            if let Ok(Some(n)) = n {
                keep_ping(&mut run.pings, (n, sent));
            }
        }
        let log = w.log();
        run.answered = first_answer(&run.pings, l, |n| {
            log.pong(n)
                .map(|at| at.saturating_duration_since(run.since))
        });
    }

    /// A step of [`Self::settle_on_events`] with an end signal, on a redraw not looked at
    /// yet: ask the application at once whether it has read everything (a ping sent after the
    /// redraw, unless one was), so that, when the look finds a change there, the answer comes
    /// while the look runs rather than after it.
    async fn ping_behind_redraw(&self, xid: WinId, w: &Arc<dyn ChangeWatch>, run: &mut Run) {
        if run.params.frame.is_none() {
            return;
        }
        let Some((redraw, _)) = w.log().last_redraw_since(run.since) else {
            return;
        };
        let redraw = redraw.saturating_duration_since(run.since);
        if run.pings.iter().any(|(_, sent)| *sent >= redraw) {
            return;
        }
        let pinger = Arc::clone(w);
        let sent = run.since.elapsed();
        if let Ok(Some(n)) = tokio::task::spawn_blocking(move || pinger.ping(xid)).await {
            keep_ping(&mut run.pings, (n, sent));
        }
    }

    /// A step of [`Self::settle_on_events`] while it waits: observe while the quiet time
    /// runs out, so that the next step's observation is ready when the window has settled
    /// (kept only if nothing changed after it began, see `take_prefetched`). `l` is the time
    /// of the last change. Whether it observed (or gave up observing): then look again
    /// without sleeping.
    async fn prefetch(&self, xid: WinId, run: &mut Run, l: Option<Duration>) -> bool {
        let Some(lc) = l else {
            return false;
        };
        let since = run.since;
        let began_after = |t: &Instant| *t >= since + lc;
        let quiet_for = since.elapsed().saturating_sub(lc);
        // with an end signal, once the application answered after its last change: the
        // observation overlaps the frame the settle still waits for
        let ready = match run.params.frame {
            Some(_) => run.answered.is_some_and(|a| a >= lc),
            None => quiet_for >= run.prefetch_after,
        };
        if !(run.prefetches < PREFETCH_MAX
            && ready
            && !run.prefetched.as_ref().is_some_and(|(t, _)| began_after(t)))
        {
            return false;
        }
        run.prefetches += 1;
        // an observation raises its window when another one is
        // active (one the action opened): only the next step's
        // own observation may do that
        let active = self.run(|d| d.active_window()).await;
        if active.is_ok_and(|a| a.is_some_and(|a| !run.watched.ids.contains(&a))) {
            run.prefetches = PREFETCH_MAX;
            return true;
        }
        let t = Instant::now();
        let seen = self.observer.observe_ahead(&xid.to_string()).await.ok();
        run.prefetched = seen.map(|o| (t, o));
        true
    }

    /// A step of [`Self::settle_on_events`] once settled: the application may still be busy
    /// (LibreOffice closes one dialog, then opens the next): a round trip to it is answered
    /// from its main loop once the click's handler is done; a window that handler showed
    /// since keeps the settle going until quiet. `answered`: when the observation made while
    /// settling began, if it asked the application after its first change and was answered
    /// (that was the round trip: an application drawing a frame answers ~13 ms late).
    async fn wait_for_handler(
        &self,
        w: &dyn ChangeWatch,
        (bus, path): (&str, &str),
        answered: Option<Instant>,
        since: Instant,
        max: Duration,
        poll: Duration,
    ) {
        let asked = match answered {
            Some(t) => t,
            None => {
                let asked = Instant::now();
                let _ = self
                    .bus
                    .call::<_, Vec<u32>>(bus, path, "org.a11y.atspi.Accessible", "GetState", &())
                    .await;
                // (a window the handler made is announced at once by its
                // CreateNotify; its MapNotify waits for the window manager)
                tokio::time::sleep(HANDLER_WINDOW).await;
                asked
            }
        };
        self.wait_for_showing(w, since, max, poll).await;
        // (a window appeared, went or moved: redraws of the watched
        // window alone are the transitions the tail cut short)
        if w.log().structure_since(asked) {
            while since.elapsed() < max
                && w.log().last_change().is_some_and(|t| t.elapsed() < QUIET)
            {
                tokio::time::sleep(poll).await;
            }
        }
    }

    /// A step of [`Self::wait_for_handler`] once the application answered: a window it made
    /// since the action (at `since`) and has not shown yet is being mapped by the window
    /// manager; wait for that, up to [`SHOW_WAIT`] and the settle's bound `max`, so that the
    /// window list read after the step has it.
    async fn wait_for_showing(
        &self,
        w: &dyn ChangeWatch,
        since: Instant,
        max: Duration,
        poll: Duration,
    ) {
        let began = Instant::now();
        let log = w.log();
        while log.awaits_showing(since) && began.elapsed() < SHOW_WAIT && since.elapsed() < max {
            tokio::time::sleep(poll).await;
        }
        if began.elapsed() >= poll {
            tracing::debug!(
                ms = began.elapsed().as_millis() as u64,
                shown = !log.awaits_showing(since),
                "waited for a window made to be shown"
            );
        }
    }

    /// A step of [`Self::settle_on_events`] when no change came within the learned bound:
    /// a round trip to the application is answered from its main loop once the action's
    /// handler is done, and the toolkit draws what the handler changed at its next frame;
    /// after both, a redraw that changed the window's content means the action did change
    /// it (a loaded machine made gnome-calculator's "=" redraw after the bound). Whether it
    /// did; the settle then goes on until quiet.
    async fn redrew_late(
        &self,
        w: &dyn ChangeWatch,
        (bus, path): (&str, &str),
        run: &mut Run,
    ) -> bool {
        let left = run.params.max.saturating_sub(run.since.elapsed());
        let _ = tokio::time::timeout(
            left,
            self.bus
                .call::<_, Vec<u32>>(bus, path, "org.a11y.atspi.Accessible", "GetState", &()),
        )
        .await;
        tokio::time::sleep(super::settle::FRAME_GAP.min(left)).await;
        let (redraws, _, _) = w.log().activity_since(run.since);
        if redraws <= run.seen {
            return false;
        }
        run.seen = redraws;
        self.look_again(w, run).await;
        run.first.is_some()
    }

    /// A step of [`Self::settle_on_events`] once settled: the action closed the dialog it
    /// was on: applications often open the next one a while later (LibreOffice's
    /// keep-format question after Save), so wait for a window to appear (then quiet) up to
    /// the settle time.
    async fn wait_for_next_dialog(&self, w: &dyn ChangeWatch, run: &Run, max: Duration) {
        let since = run.since;
        let log = w.log();
        if log.gone_since(since, &run.ids) {
            let closed = Instant::now();
            while since.elapsed() < max {
                let mapped = log.last_map().is_some_and(|t| t >= since);
                let quiet = log.last_change().is_none_or(|t| t.elapsed() >= QUIET);
                if mapped && quiet && closed.elapsed() >= QUIET {
                    break;
                }
                tokio::time::sleep(run.poll).await;
            }
        }
    }

    /// A step of [`Self::settle_on_events`] once settled: the observation made while
    /// waiting holds if it began after the last change (at `l`) and the window looks the
    /// same since the last look.
    async fn still_prefetched(
        &self,
        xid: WinId,
        w: &dyn ChangeWatch,
        run: &mut Run,
        l: Option<Duration>,
    ) -> Option<Prefetched> {
        let since = run.since;
        match run.prefetched.take() {
            Some((t, o)) if l.is_some_and(|lc| t >= since + lc) && !w.log().structure_since(t) => {
                let (redraws, _, _) = w.log().activity_since(since);
                let mut exempt = run.exempt.clone();
                exempt.extend(self.settling.lock().transitions.running(Instant::now()));
                let same = redraws == run.seen || {
                    let now = self.look_at(run.watched.area).await;
                    !differs(run.look.as_ref(), now.as_ref(), &exempt)
                };
                same.then_some(Prefetched {
                    xid,
                    area: run.watched.area,
                    settled: Instant::now(),
                    look: run.look.clone(),
                    exempt,
                    obs: o.full.observation,
                    controls: o.labelled,
                })
            }
            _ => None,
        }
    }
}

impl Settler<'_> {
    /// Whether the observation made while the last settle waited (`p`) can be handed out for
    /// window `window_id`: the window has not changed since the settle ended (no window event;
    /// no redraw, or one that leaves the window looking the same) and it is at most
    /// [`PREFETCH_KEPT`] old.
    pub(crate) async fn still_holds(&self, p: &Prefetched, window_id: &str) -> bool {
        let Some(w) = self.watch.as_ref() else {
            return false;
        };
        let Ok(xid) = WinId::parse(window_id) else {
            return false;
        };
        if p.xid != xid || p.settled.elapsed() > PREFETCH_KEPT || w.log().structure_since(p.settled)
        {
            return false;
        }
        let (redraws, _, _) = w.log().activity_since(p.settled);
        if redraws > 0 {
            let now = self.look_at(p.area).await;
            if differs(p.look.as_ref(), now.as_ref(), &p.exempt) {
                return false;
            }
        }
        true
    }

    /// The observation made while the last action settled (`ahead`), handed out for window
    /// `window_id` when it still holds ([`Self::still_holds`]) and the action started no
    /// navigation that it did not wait for (it would show the old page: observed once loaded,
    /// `observe::loading`); its labels are the actions' from now on.
    pub(crate) async fn hand_out(
        &self,
        ahead: Option<Prefetched>,
        window_id: &str,
    ) -> Option<ufo_core::WindowObservation> {
        let p = ahead?;
        if !(self.still_holds(&p, window_id).await && self.observer.still_loaded(window_id)) {
            return None;
        }
        tracing::debug!("observed while settling");
        let (xid, labelled) = p.controls;
        self.observer.controls.lock().install(xid, labelled);
        Some(p.obs)
    }

    /// The settle asked for between steps: on the change watch when there is one
    /// ([`Self::settle_quiet`]), else on the pixels of the window acted on last, else a poll.
    pub(crate) async fn between_steps(&self) {
        if self.settle_quiet().await {
            return;
        }
        let last = self.settling.lock().last_window;
        match last {
            Some(xid) => self.settle_window(xid, None).await,
            None => tokio::time::sleep(self.config.settle_poll).await,
        }
    }

    /// The settle asked for between steps (a SCREENSHOT status): the last action already
    /// settled, so wait only while something still changes: until no X event came for
    /// [`QUIET`] and the screen over the last window (a dialog on it included) looks the same
    /// twice [`QUIET`] apart (at most `settle_time`); at once when nothing changed since the
    /// last action's settle ended (it waited for quiet, a dialog the action opened included).
    /// `false` without a change watch.
    pub(crate) async fn settle_quiet(&self) -> bool {
        let Some(w) = self.watch else {
            return false;
        };
        let (last, settled_at) = {
            let st = self.settling.lock();
            (st.last_window, st.settled_at)
        };
        if settled_at.is_some_and(|s| w.log().last_change().is_none_or(|c| c < s)) {
            return true;
        }
        let deadline = Instant::now() + self.config.settle_time;
        let mut look = match last {
            Some(x) => self.look(x).await,
            None => None,
        };
        while Instant::now() < deadline {
            if let Some(t) = w.log().last_change().filter(|t| t.elapsed() < QUIET) {
                tokio::time::sleep(QUIET.saturating_sub(t.elapsed())).await;
                continue;
            }
            let Some(x) = last else { break };
            tokio::time::sleep(QUIET).await;
            let now = self.look(x).await;
            let moved = changed_box(look.as_ref(), now.as_ref(), &[]);
            look = now;
            tracing::debug!(
                ?moved,
                since_settle_ms = settled_at.map(|s| s.elapsed().as_millis() as u64),
                "quiet look"
            );
            if moved.is_none() {
                break;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_dated_back_by_the_display_s_delay_but_never_before_the_last_one() {
        let ms = Duration::from_millis;
        let zero = Duration::ZERO;
        assert_eq!(seen_at(ms(40), None, zero, None), ms(40), "no redraw noted");
        assert_eq!(
            seen_at(ms(40), Some(ms(31)), zero, None),
            ms(31),
            "X11: when the redraw was reported, not when the look ended"
        );
        assert_eq!(
            seen_at(ms(40), Some(ms(52)), zero, None),
            ms(40),
            "never after the look"
        );
        assert_eq!(
            seen_at(ms(40), Some(ms(40)), ms(11), None),
            ms(29),
            "a frame 11 ms late"
        );
        assert_eq!(seen_at(ms(40), Some(ms(40)), ms(11), Some(ms(35))), ms(35));
        assert_eq!(seen_at(ms(5), Some(ms(5)), ms(11), None), zero);
    }

    #[test]
    fn the_answer_that_counts_is_the_first_to_a_ping_sent_after_the_last_change() {
        let ms = Duration::from_millis;
        let pings = [(1, ms(10)), (2, ms(50)), (3, ms(56))];
        let answers = |n: u32| match n {
            1 => Some(ms(12)),
            2 => Some(ms(58)),
            3 => Some(ms(57)),
            _ => None,
        };
        // the change at 50: pings 2 and 3 were sent after it, 3 answered first
        assert_eq!(first_answer(&pings, ms(50), answers), Some(ms(57)));
        // the change at 52: only ping 3 speaks of it
        assert_eq!(first_answer(&pings, ms(52), answers), Some(ms(57)));
        // a change after every ping: no answer yet
        assert_eq!(first_answer(&pings, ms(60), answers), None);
        // sent after it but not answered yet
        assert_eq!(
            first_answer(&pings, ms(52), |n| (n == 1).then_some(ms(12))),
            None
        );
        let mut kept = Vec::new();
        for n in 0..10 {
            keep_ping(&mut kept, (n, ms(u64::from(n))));
        }
        assert_eq!(kept.len(), PINGS_KEPT);
        assert_eq!(kept[0].0, 2, "the oldest let go");
    }

    /// Only an observation that began after the first change and read the clicked
    /// application's controls stands for the handler's round trip.
    #[test]
    fn an_observation_stands_for_the_handler_only_after_the_first_change_on_its_bus() {
        let since = Instant::now();
        let ms = Duration::from_millis;
        // began at the first change, read the application: its answers came after the handler
        assert!(stands_for_handler(
            since + ms(30),
            since,
            Some(ms(30)),
            true
        ));
        assert!(stands_for_handler(
            since + ms(55),
            since,
            Some(ms(30)),
            true
        ));
        // began before the first change: its answers may predate the handler
        assert!(!stands_for_handler(
            since + ms(29),
            since,
            Some(ms(30)),
            true
        ));
        // nothing changed yet
        assert!(!stands_for_handler(since + ms(55), since, None, true));
        // read another application only
        assert!(!stands_for_handler(
            since + ms(55),
            since,
            Some(ms(30)),
            false
        ));
    }
}
