//! GNOME (Mutter 43 and later) as a display (docs/desktop.md, "GNOME"): keys and the pointer
//! through a remote-desktop session, Mutter's own on a private GNOME desktop ufo started
//! ([`mutter`]) or the portals' on a person's session ([`portal`], the grant kept by
//! [`consent`]), chosen once ([`GnomePath`]); keys planned in [`keys`]; captures from the last
//! frame of the session's PipeWire stream of the monitor (`display/pipewire`, with the
//! `pipewire` feature), and the windows
//! from the applications' AT-SPI frames ([`frames`]): GNOME Shell answers other programs no
//! question about windows. Windows have no known place unless maximized, so application
//! windows are maximized when first listed (AT-SPI's `window.toggle-maximized`, GTK 4's own
//! window action); one is activated by Alt+Tab until AT-SPI calls it active, closed by its
//! `window.close` action (else Alt+F4). On Mutter's path a window not maximized (a dialog) is
//! placed by a stream of its own instead ([`casts`]): a slot off the monitor, its pixels and
//! clicks through Mutter's `RecordWindow` of it, in a remote-desktop session of its own
//! (measured: opened in 272–1275 ms, first frame included; Mutter 43 starts no stream added
//! to a started session and links one ScreenCast session to a remote-desktop session). On
//! the portals' path such windows keep no place with a monitor source; with a window source
//! (`UFO_GNOME_PORTAL_SOURCE=window`) the person picks one window in GNOME's dialog, the
//! portal's stream is that window's, and the display is that window alone: the AT-SPI frame
//! of the stream's size ([`frames::shared_of`]), placed at (0, 0), the pointer moved in its
//! buffer as on Mutter's window streams ([`casts::window_origin`]), anything else refused.
//!
//! The input and capture halves need only a remote-desktop session and its stream: input goes
//! through [`RemoteInput`] and captures come from the session's PipeWire node (through the
//! connection the portal opens, on its path), so everything else is the same on both paths.
//! Measured on the headless shell, one calculator click and its settling: see
//! docs/desktop.md, "GNOME". The D-Bus side runs on a small runtime of the display's own;
//! callers wait for each answer with a bound, and each call to Mutter or the portal is bounded
//! too ([`bus`]). The change watch is the stream's frames ([`FrameWatch`]): Mutter sends one
//! only when the screen changed, so each frame is a redraw somewhere; settling compares the
//! window's looks to tell whether it was this window's.

pub(crate) mod bus;
pub(crate) mod casts;
pub(crate) mod consent;
pub(crate) mod frames;
pub(crate) mod keys;
pub(crate) mod mutter;
pub(crate) mod portal;

use std::collections::HashSet;
use std::future::Future;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use ufo_core::Rect;

use super::keys::{sym, KeyStep};
use super::pixels::{self, Look, RgbImage};
use super::watch::{Change, ChangeLog, ChangeWatch, PersonInput};
use super::{position_unknown, CoordSpace, Display, DisplayWindow, WinId};
use crate::a11y::bus::A11yBus;
pub(crate) use crate::display::choice::GnomePath;
use crate::display::choice::PortalSource;
use crate::error::cause;
use crate::vocab::ROOT_PATH;
use crate::LinuxError;
use casts::{Cast, Casts};
use frames::{Ids, Listed, Seen};
use mutter::{Remote, RemoteInput, Source};

/// Bound on one answer of the display's runtime.
const ANSWER: Duration = Duration::from_secs(10);
/// How long GNOME's consent dialog waits for the person on the portal path.
const CONSENT: Duration = Duration::from_secs(120);
/// How long a listing of the windows is reused (AT-SPI calls; input forgets it at once).
const LISTING_KEPT: Duration = Duration::from_millis(150);
/// Longest wait for the first frame of the monitor stream.
const FIRST_FRAME: Duration = Duration::from_secs(3);
/// How long a window's new stream is given to send its first frame before the pointer
/// passes over the window to have it redrawn.
const FIRST_NUDGE: Duration = Duration::from_millis(300);
/// How long Alt+Tab is given to hand the focus over before AT-SPI is asked again.
const SWITCH_WAIT: Duration = Duration::from_millis(400);
/// Most windows Alt+Tab goes through to activate one.
const SWITCH_MOST: usize = 8;
/// The AT-SPI action of GTK 4 windows that maximizes them (and back).
const MAXIMIZE: &str = "window.toggle-maximized";
/// The AT-SPI action of GTK 4 windows that closes them.
const CLOSE: &str = "window.close";
/// The keysyms of Tab and F4.
const TAB: u32 = sym::TAB;
const F4: u32 = 0xffc1;

#[cfg(feature = "pipewire")]
type Stream = crate::display::pipewire::VideoStream;
/// Without PipeWire there is no stream to read (captures say how to get one).
#[cfg(not(feature = "pipewire"))]
type Stream = ();

/// A GNOME session driven through a remote-desktop session (Mutter's or the portals').
pub(crate) struct Gnome {
    runtime: Option<tokio::runtime::Runtime>,
    /// the remote-desktop session, Mutter's or the portals'
    input: Arc<dyn RemoteInput>,
    a11y: A11yBus,
    screen: Rect,
    /// The monitor stream (`None` without the `pipewire` feature).
    stream: Option<Stream>,
    /// The stream's frames as redraws (`None` without a stream).
    watch: Option<Arc<FrameWatch>>,
    ids: Mutex<Ids>,
    /// the last listing and when it was made
    listing: Mutex<Option<(Instant, Vec<Listed>)>>,
    /// frames already asked to maximize (asked once)
    maximized: Mutex<HashSet<WinId>>,
    /// The session bus, on Mutter's path (window streams are asked there); `None` on the
    /// portals' path, where a window's stream would mean asking the person per window.
    conn: Option<zbus::Connection>,
    /// The streams of windows not maximized, each with its remote-desktop session.
    casts: Casts<Remote, Stream>,
    /// The person shared one window on the portal path: the stream is that window's, and the
    /// display lists and acts in it only.
    window_only: bool,
    /// With `window_only`: whether another frame said ACTIVE at the last listing (keys would
    /// go there).
    elsewhere: Mutex<bool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The path a display took, and for the portals how the grant went.
#[derive(Debug, Clone)]
pub(crate) enum OpenedPath {
    /// Mutter's own session.
    Mutter,
    /// The portals' session.
    Portal(portal::Grant),
}

/// What a remote-desktop session gives the display: its input, monitor stream node and
/// size, and the PipeWire connection to read the stream through (`None`: the session's
/// daemon).
type Session = (
    Arc<dyn RemoteInput>,
    OpenedPath,
    u32,
    Option<(u32, u32)>,
    Option<std::os::fd::OwnedFd>,
);

/// Whether this build reads PipeWire streams (window streams need it, as captures do).
const PIPEWIRE: bool = cfg!(feature = "pipewire");

impl Gnome {
    /// Open a remote-desktop session by `path` on the session bus at `session_bus` (else
    /// `DBUS_SESSION_BUS_ADDRESS`'s), the accessibility bus, and the monitor stream. On the
    /// portals' path this waits (up to [`CONSENT`]) for the person to answer GNOME's dialog.
    pub(crate) fn open(
        session_bus: Option<String>,
        timeout: Duration,
        path: GnomePath,
    ) -> Result<Gnome, LinuxError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ufo-gnome")
            .enable_all()
            .build()
            .map_err(|e| LinuxError::Wayland {
                what: "the GNOME display's runtime".into(),
                source: Box::new(e),
            })?;
        let bus = session_bus.clone();
        let bound = match path {
            GnomePath::Mutter => ANSWER,
            GnomePath::Portal { .. } => CONSENT + ANSWER,
        };
        let (session, a11y, conn) = ask_within(&runtime, "open", bound, async move {
            let conn = session_connection(bus.as_deref(), timeout).await?;
            let session = open_session(&conn, path).await?;
            let a11y = A11yBus::connect(timeout, bus.as_deref()).await?;
            Ok((session, a11y, conn))
        })?;
        let conn = (path == GnomePath::Mutter && PIPEWIRE).then_some(conn);
        let (input, opened, node, size, remote) = session;
        let window_only =
            matches!(&opened, OpenedPath::Portal(g) if g.source == PortalSource::Window);
        let watch = Arc::new(FrameWatch::default());
        let stream = connect_stream(node, remote, Arc::clone(&watch))?;
        let watch = stream.is_some().then_some(watch);
        let screen = screen_of(size, stream.as_ref());
        tracing::info!(
            node,
            "GNOME: {}; monitor {}x{}, captures {}",
            path.reason(),
            screen.w,
            screen.h,
            if stream.is_some() {
                "from its PipeWire stream"
            } else {
                "unavailable (built without the pipewire feature)"
            }
        );
        log_grant(&opened);
        Ok(Gnome {
            runtime: Some(runtime),
            input,
            a11y,
            screen,
            stream,
            watch,
            ids: Mutex::default(),
            listing: Mutex::default(),
            maximized: Mutex::default(),
            conn,
            casts: Casts::default(),
            window_only,
            elsewhere: Mutex::default(),
        })
    }

    /// Run `fut` on the display's runtime and wait for it (bounded).
    fn run<T: Send + 'static>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, LinuxError>> + Send + 'static,
    ) -> Result<T, LinuxError> {
        match &self.runtime {
            Some(rt) => ask(rt, what, fut),
            None => Err(gone()),
        }
    }

    /// The windows: the last listing when recent, else a new one (which also maximizes
    /// application windows seen for the first time).
    fn listed(&self) -> Result<Vec<Listed>, LinuxError> {
        if let Some((at, l)) = lock(&self.listing).as_ref() {
            if at.elapsed() < LISTING_KEPT {
                return Ok(l.clone());
            }
        }
        let (seen, mut listed) = self.list_now()?;
        let asked = Instant::now();
        // a person's shared window keeps its size (its stream follows it)
        if !self.window_only && self.maximize_new(&seen, &listed) {
            // their sizes changed (the wait for it is bounded): listed as they are now
            listed = self.list_now()?.1;
            self.await_shown(asked);
        }
        *lock(&self.listing) = Some((Instant::now(), listed.clone()));
        let alive: Vec<WinId> = listed.iter().map(|l| l.window.id).collect();
        self.end_casts(self.casts.keep_only(&alive));
        Ok(listed)
    }

    /// The windows as AT-SPI says now, with what was seen of their frames.
    fn list_now(&self) -> Result<(Vec<Seen>, Vec<Listed>), LinuxError> {
        let a11y = self.a11y.clone();
        let seen = self.run("windows", async move { frames_seen(&a11y).await })?;
        if self.window_only {
            let opaque = self.stream.as_ref().and_then(stream_box);
            let shared = frames::shared_of(&seen, opaque, &mut lock(&self.ids));
            *lock(&self.elsewhere) = frames::focus_elsewhere(&seen, shared.as_ref());
            return Ok((seen, shared.into_iter().collect()));
        }
        let streams = self.conn.is_some();
        let listed = frames::windows_of(&seen, self.screen, &mut lock(&self.ids), streams);
        Ok((seen, listed))
    }

    /// Ask application windows not maximized yet, and not asked before, to maximize (so that
    /// their place is known); whether any was asked.
    fn maximize_new(&self, seen: &[Seen], listed: &[Listed]) -> bool {
        let mut asked = Vec::new();
        {
            let mut done = lock(&self.maximized);
            // the windows gone are forgotten: the set stays as large as the list
            done.retain(|id| listed.iter().any(|l| l.window.id == *id));
            for l in listed {
                let Some(s) = seen.iter().find(|s| s.bus == l.bus && s.path == l.path) else {
                    continue;
                };
                if frames::to_maximize(s, self.screen) && done.insert(l.window.id) {
                    asked.push((l.bus.clone(), l.path.clone()));
                }
            }
        }
        if asked.is_empty() {
            return false;
        }
        let a11y = self.a11y.clone();
        let screen = self.screen;
        let r = self.run("maximize", async move {
            for (bus, path) in asked {
                match do_named_action(&a11y, &bus, &path, MAXIMIZE).await {
                    Ok(()) => settle_placed(&a11y, &bus, &path, screen).await,
                    Err(e) => tracing::debug!(
                        "GNOME: a window not maximized ({e}); its place stays unknown"
                    ),
                }
            }
            Ok(())
        });
        r.is_ok()
    }

    /// Wait (bounded by [`SHOWN_WAIT`]) until the monitor stream shows the windows maximized
    /// since `asked`: the toolkit reports its new size before Mutter's frame of it reaches the
    /// stream, and on a loaded machine the first screenshot showed the window where it was.
    fn await_shown(&self, asked: Instant) {
        let Some(watch) = self.watch.as_ref() else {
            return;
        };
        let deadline = Instant::now() + SHOWN_WAIT;
        loop {
            let now = Instant::now();
            if shown(asked, watch.log().last_change(), now) {
                return;
            }
            if now >= deadline {
                tracing::debug!("GNOME: the stream did not go quiet after a maximize; going on");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn forget_listing(&self) {
        *lock(&self.listing) = None;
    }

    fn find(&self, id: WinId) -> Result<Listed, LinuxError> {
        let listed = self.listed()?;
        match listed.into_iter().find(|l| l.window.id == id) {
            Some(l) => Ok(l),
            None if self.window_only => Err(not_shared(&format!("window {id}"))),
            None => Err(LinuxError::NoWindow(id.to_string())),
        }
    }

    /// The window the person shared (window source): listed, with its place.
    fn shared(&self) -> Result<(Listed, Rect), LinuxError> {
        let l = self.listed()?.into_iter().next().ok_or_else(|| {
            LinuxError::Unsupported(
                "the window shared through GNOME's portal is not among the applications' \
                 windows (it closed, or changed so that its stream and AT-SPI no longer \
                 agree on its size); start ufo again and share a window"
                    .into(),
            )
        })?;
        let place = l.window.area.ok_or_else(|| position_unknown(&l.window))?;
        Ok((l, place))
    }

    /// Send key events in order (with a window source, only while no other window says it has
    /// the focus: keys go to the focused window).
    fn send_keys(&self, events: Vec<keys::Event>) -> Result<(), LinuxError> {
        if self.window_only {
            self.shared()?;
            if *lock(&self.elsewhere) {
                return Err(not_shared("the window that has the keyboard focus"));
            }
        }
        self.send_events(events)
    }

    /// Send key events in order, wherever the focus is (Alt+Tab: GNOME Shell takes it).
    fn send_events(&self, events: Vec<keys::Event>) -> Result<(), LinuxError> {
        self.forget_listing();
        let remote = Arc::clone(&self.input);
        self.run("keys", async move {
            for (k, down) in events {
                remote.key(k, down).await?;
            }
            Ok(())
        })
    }

    /// The last frame's pixels of a rectangle (clipped to the screen, or to the window whose
    /// slot it lies in): where and BGRX rows.
    fn grab(&self, area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
        if self.window_only {
            return self.grab_shared(area);
        }
        if casts::in_streams(area.x) {
            return self.grab_streamed(area);
        }
        let Some(stream) = self.stream.as_ref() else {
            return Err(no_pipewire());
        };
        latest(stream, area)
    }

    /// `area` of the shared window (its own coordinates), from the portal's stream of it
    /// (clipped to the window).
    fn grab_shared(&self, area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
        let (_, place) = self.shared()?;
        let Some(stream) = self.stream.as_ref() else {
            return Err(no_pipewire());
        };
        match clip(area, place.w, place.h) {
            Some(inside) => latest_of_window(stream, inside, (place.w, place.h)),
            None => Ok(None),
        }
    }

    /// A click in the shared window (window source): motion on the portal's stream of it, in
    /// its buffer as its frames show it; a point outside it is refused.
    fn click_shared(
        &self,
        x: i32,
        y: i32,
        b: mutter::Button,
        count: u32,
    ) -> Result<(), LinuxError> {
        let (_, place) = self.shared()?;
        if !casts::holds(place, x, y) {
            return Err(not_shared(&format!(
                "the point {x},{y} (outside the shared window)"
            )));
        }
        let (ox, oy) = match self.stream.as_ref() {
            Some(s) => origin_in_stream(s, (place.w, place.h))?,
            None => (0, 0),
        };
        self.press(Arc::clone(&self.input), (x + ox, y + oy), b, count)
    }

    /// Move the pointer of `remote`'s stream to `at` (in the stream's coordinates) and press
    /// `b` `count` times.
    fn press(
        &self,
        remote: Arc<dyn RemoteInput>,
        at: (i32, i32),
        b: mutter::Button,
        count: u32,
    ) -> Result<(), LinuxError> {
        self.forget_listing();
        self.run("click", async move {
            remote.move_to(f64::from(at.0), f64::from(at.1)).await?;
            for _ in 0..count {
                remote.button(b).await?;
            }
            Ok(())
        })
    }

    /// `area` of the window whose slot it lies in, from the window's own stream (clipped to
    /// the window).
    fn grab_streamed(&self, area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
        let (place, cast) = self.streamed(area.x, area.y)?;
        let within = casts::relative_rect(place, area);
        let clipped = clip(within, place.w, place.h);
        let Some(clipped) = clipped else {
            return Ok(None);
        };
        let size = (place.w, place.h);
        Ok(latest_of_window(&cast.stream, clipped, size)?
            .map(|(r, px)| (Rect::new(r.x + place.x, r.y + place.y, r.w, r.h), px)))
    }

    /// The window whose slot holds a point, its place, and its stream (opened when not
    /// yet).
    fn streamed(&self, x: i32, y: i32) -> Result<(Rect, Cast<Remote, Stream>), LinuxError> {
        let listed = self.listed()?;
        let l = frames::streamed_at(&listed, x, y).ok_or_else(|| {
            LinuxError::Unsupported(format!(
                "the point {x},{y} lies in no window's place on GNOME (a window not maximized \
                 is placed in a slot of its own, off the monitor, only while it is listed); \
                 observe the window again and use the coordinates it gives"
            ))
        })?;
        let place = l.window.area.ok_or_else(|| position_unknown(&l.window))?;
        let cast = self.cast_of(l.window.id)?;
        Ok((place, cast))
    }

    /// The stream of window `id`: the one open, else a new one. Mutter records the window
    /// that has the focus, so the window is activated first and must still be the active one
    /// once its stream is made.
    fn cast_of(&self, id: WinId) -> Result<Cast<Remote, Stream>, LinuxError> {
        if let Some(c) = self.casts.get(id) {
            if stream_alive(&c.stream) {
                return Ok(c);
            }
            // Mutter ended it (the window went away and came back, or the session ended)
            self.end_casts(self.casts.remove(id).into_iter().collect());
        }
        let conn = self.conn.clone().ok_or_else(|| {
            LinuxError::Unsupported(
                "a window that is not maximized has no known place here: GNOME records a \
                 window in a stream of its own only on a private GNOME desktop ufo started \
                 (`--desktop private:gnome`, built with the pipewire feature); act on its \
                 controls through their actions"
                    .into(),
            )
        })?;
        let started = Instant::now();
        if self.active_window()? != Some(id) {
            self.request_activate(id)?;
        }
        let remote = self.run("a window's stream", async move {
            Remote::open_recording(&conn, Source::FocusedWindow).await
        })?;
        let remote = Arc::new(remote);
        if self.active_window()? != Some(id) {
            self.end_remotes(vec![remote]);
            return Err(LinuxError::Unsupported(format!(
                "window {id} lost the focus while GNOME recorded it (Mutter records the \
                 focused window); try the action again"
            )));
        }
        let stream = Arc::new(connect_window_stream(remote.node)?);
        let mut first = frame_within(&stream, FIRST_NUDGE);
        if first.is_none() {
            first = self.nudge(id, &remote, &stream);
        }
        let size = self.find(id)?.window.area.map(|a| (a.w, a.h));
        if let Some(Err(e)) = size.map(|size| recorded_is(&stream, id, size)) {
            self.end_remotes(vec![remote]);
            return Err(e);
        }
        tracing::info!(
            "GNOME: window {id} recorded in a stream of its own (PipeWire node {}, first \
             frame {:?}) in {} ms",
            remote.node,
            first,
            started.elapsed().as_millis()
        );
        let cast = Cast { id, remote, stream };
        self.end_casts(self.casts.add(cast.clone()));
        Ok(cast)
    }

    /// Have a window's new stream send its first frame, and wait for it (bounded). Mutter
    /// sends a window's frame when the window redraws, and the one it sends as the stream
    /// starts may find no buffer yet: the pointer passes over the window through the
    /// stream's own session (hover redraws).
    fn nudge(&self, id: WinId, remote: &Arc<Remote>, stream: &Stream) -> Option<(u32, u32)> {
        let size = self.find(id).ok().and_then(|l| l.window.area);
        let (w, h) = size.map_or((2, 2), |a| (a.w, a.h));
        let r = Arc::clone(remote);
        let _ = self.run("a window's first frame", async move {
            for (fx, fy) in [(1, 1), (2, 1), (1, 2), (2, 2), (3, 3)] {
                let (x, y) = (
                    f64::from(w) * f64::from(fx) / 4.0,
                    f64::from(h) * f64::from(fy) / 4.0,
                );
                r.move_to(x, y).await?;
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            Ok(())
        });
        frame_within(stream, FIRST_FRAME)
    }

    /// End window streams: their PipeWire streams dropped, their sessions stopped (a session
    /// Mutter already ended answers an error, which is nothing to report).
    fn end_casts(&self, ended: Vec<Cast<Remote, Stream>>) {
        self.end_remotes(ended.into_iter().map(|c| c.remote).collect());
    }

    /// Stop remote-desktop sessions of window streams (bounded).
    fn end_remotes(&self, remotes: Vec<Arc<Remote>>) {
        if remotes.is_empty() {
            return;
        }
        let _ = self.run("stop a window's stream", async move {
            for r in remotes {
                r.stop().await;
            }
            Ok(())
        });
    }

    /// A click at a point of a window known by its stream: motion on the window's stream
    /// (window coordinates) and the buttons of its session.
    fn click_streamed(
        &self,
        x: i32,
        y: i32,
        b: mutter::Button,
        count: u32,
    ) -> Result<(), LinuxError> {
        let (place, cast) = self.streamed(x, y)?;
        let (rx, ry) = casts::relative(place, x, y);
        // Mutter 43 places a window stream's pointer in the window's buffer, as its frames
        // show it: the window itself lies inside its shadow there
        let (ox, oy) = origin_in_stream(&cast.stream, (place.w, place.h))?;
        self.press(cast.remote, (rx + ox, ry + oy), b, count)
    }

    /// Alt held, Tab pressed `n` times, Alt released: the `n`-th window in GNOME's recent
    /// order comes to the front.
    fn switch(&self, n: usize) -> Result<(), LinuxError> {
        let mut events = vec![(sym::ALT_L, true)];
        for _ in 0..n {
            events.extend([(TAB, true), (TAB, false)]);
        }
        events.push((sym::ALT_L, false));
        // the shell's switcher, not keys to a window: also with a window source, to bring the
        // shared window forward
        self.send_events(events)
    }

    /// Wait (bounded) until AT-SPI calls window `id` active.
    fn becomes_active(&self, id: WinId, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            self.forget_listing();
            if self.active_window().ok().flatten() == Some(id) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Drop for Gnome {
    // the session is ended (Mutter's, or the portal's closed: its stream goes with it and
    // GNOME's sharing indicator goes away); a runtime may not be dropped
    // on an async thread, so it is shut down in the background
    fn drop(&mut self) {
        self.stream = None;
        self.end_casts(self.casts.take_all());
        let remote = Arc::clone(&self.input);
        let _ = self.run("stop", async move {
            remote.stop().await;
            Ok(())
        });
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Captures without a stream to read.
fn no_pipewire() -> LinuxError {
    LinuxError::Unsupported(
        "captures on GNOME read the session's PipeWire stream: build ufo with \
         `--features ufo/pipewire` (needs libpipewire-0.3-dev and libclang)"
            .into(),
    )
}

/// Acting on `what`, which is not the window the person shared (window source).
fn not_shared(what: &str) -> LinuxError {
    LinuxError::Unsupported(format!(
        "{what} is not the window the person shared through GNOME's portal: ufo sees and acts \
         only in that window; start ufo again and share that window, or the whole monitor \
         ({}=monitor)",
        crate::display::choice::GNOME_PORTAL_SOURCE_VAR
    ))
}

fn gone() -> LinuxError {
    LinuxError::Wayland {
        what: "GNOME".into(),
        source: cause("the GNOME display is closed; start ufo again"),
    }
}

/// Open the remote-desktop session of `path` on the session bus `conn`.
async fn open_session(conn: &zbus::Connection, path: GnomePath) -> Result<Session, LinuxError> {
    Ok(match path {
        GnomePath::Mutter => {
            let r = Remote::open(conn).await?;
            let (node, size) = (r.node, r.size);
            (Arc::new(r), OpenedPath::Mutter, node, size, None)
        }
        GnomePath::Portal { .. } => {
            let tokens = consent::TokenFile::of_user();
            let source = PortalSource::of_env()?;
            let mut p = portal::Portal::open(conn, &tokens, CONSENT, source).await?;
            let (node, size, fd) = (p.node, p.size, p.remote.take());
            let grant = OpenedPath::Portal(p.grant.clone());
            (Arc::new(p), grant, node, size, fd)
        }
    })
}

/// Log how a portal session was granted (its versions, the time, what persists).
fn log_grant(opened: &OpenedPath) {
    if let OpenedPath::Portal(g) = opened {
        tracing::info!(
            "GNOME portal: sharing {}; RemoteDesktop version {}, ScreenCast version {}; \
             granted in {} ms ({}); {}",
            g.source.describe(),
            g.versions.remote_desktop,
            g.versions.screen_cast,
            g.took.as_millis(),
            if g.restored {
                "a kept restore token offered"
            } else {
                "the dialog asked"
            },
            if g.versions.persists() {
                "the portal keeps the grant by a restore token"
            } else {
                "this portal persists no remote-desktop grant: the dialog asks every session"
            }
        );
    }
}

/// Run `fut` on `rt` and wait for its answer (bounded by [`ANSWER`]).
fn ask<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    what: &str,
    fut: impl Future<Output = Result<T, LinuxError>> + Send + 'static,
) -> Result<T, LinuxError> {
    ask_within(rt, what, ANSWER, fut)
}

/// Run `fut` on `rt` and wait for its answer (bounded by `bound`).
fn ask_within<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    what: &str,
    bound: Duration,
    fut: impl Future<Output = Result<T, LinuxError>> + Send + 'static,
) -> Result<T, LinuxError> {
    let (tx, rx) = mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    match rx.recv_timeout(bound) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(LinuxError::Timeout {
            what: format!("GNOME ({what})"),
            ms: bound.as_millis() as u64,
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
    }
}

/// The session bus (at `address`, else the environment's), calls bounded by `timeout`.
async fn session_connection(
    address: Option<&str>,
    timeout: Duration,
) -> Result<zbus::Connection, LinuxError> {
    let connect = async {
        let builder = match address {
            Some(a) => zbus::connection::Builder::address(a)?,
            None => zbus::connection::Builder::session()?,
        };
        builder.method_timeout(timeout).build().await
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(LinuxError::Wayland {
            what: "GNOME's session bus".into(),
            source: Box::new(e),
        }),
        Err(_) => Err(LinuxError::Timeout {
            what: "connecting to GNOME's session bus".into(),
            ms: timeout.as_millis() as u64,
        }),
    }
}

/// Every application's top-level frames on the accessibility bus.
async fn frames_seen(a11y: &A11yBus) -> Result<Vec<Seen>, LinuxError> {
    let apps = a11y.applications().await?;
    let per_app = futures::future::join_all(apps.into_iter().map(|(bus, pid)| async move {
        let name: String = a11y
            .prop(&bus, ROOT_PATH, "org.a11y.atspi.Accessible", "Name")
            .await
            .unwrap_or_default();
        let kids = a11y.children(&bus, ROOT_PATH).await.unwrap_or_default();
        let seen = futures::future::join_all(
            kids.iter()
                .take(crate::a11y::bus::MAX_WINDOWS)
                .enumerate()
                .map(|(i, path)| frame_seen(a11y, &bus, &name, pid, path, i)),
        )
        .await;
        seen.into_iter().flatten().collect::<Vec<_>>()
    }))
    .await;
    Ok(per_app.into_iter().flatten().collect())
}

/// One top-level node (`None`: it went away while read).
async fn frame_seen(
    a11y: &A11yBus,
    bus: &str,
    app: &str,
    pid: Option<u32>,
    path: &str,
    index: usize,
) -> Option<Seen> {
    let (node, extents) = futures::join!(
        a11y.node(bus, path, ROOT_PATH, index as i32),
        a11y.extents(bus, path)
    );
    let node = node.ok()?;
    let (_, _, w, h) = extents.unwrap_or_default();
    Some(Seen {
        bus: bus.to_string(),
        path: path.to_string(),
        app: app.to_string(),
        pid,
        title: node.name,
        role: node.role,
        states: node.states,
        size: (w, h),
    })
}

/// Most time a window is given to take its maximized size.
const MAXIMIZE_WAIT: Duration = Duration::from_millis(1500);
/// Most time the stream is given, after a maximize, to show it and go quiet.
const SHOWN_WAIT: Duration = Duration::from_millis(1500);
/// A stream with no frame for this long shows the screen as it is: a maximize animates in
/// frames a few ms apart, a blinking caret redraws every half second or more.
const QUIET: Duration = Duration::from_millis(150);

/// Whether the stream shows what was asked at `asked`: a redraw came since, and none for
/// [`QUIET`] up to `now` (the last one, `last_change`, being the asked change's last frame).
fn shown(asked: Instant, last_change: Option<Instant>, now: Instant) -> bool {
    last_change.is_some_and(|at| at > asked && now.saturating_duration_since(at) >= QUIET)
}

/// Wait (bounded) until a window being maximized reports the same placed size twice in a row:
/// the toolkit resizes on the compositor's answer, and passes through other sizes first.
async fn settle_placed(a11y: &A11yBus, bus: &str, path: &str, screen: Rect) {
    let deadline = Instant::now() + MAXIMIZE_WAIT;
    let mut last = None;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let size = a11y
            .extents(bus, path)
            .await
            .ok()
            .map(|(_, _, w, h)| (w, h));
        if size.is_some_and(|s| frames::placed(screen, s).is_some()) && size == last {
            return;
        }
        last = size;
    }
    tracing::debug!("GNOME: a window did not settle maximized; its place may stay unknown");
}

/// Do the action called `name` of a node; an error when it has none of that name.
async fn do_named_action(
    a11y: &A11yBus,
    bus: &str,
    path: &str,
    name: &str,
) -> Result<(), LinuxError> {
    let names = a11y.actions(bus, path).await?;
    let i = names
        .iter()
        .position(|n| n == name)
        .ok_or_else(|| LinuxError::ActionFailed(format!("the window has no {name} action")))?;
    let _: bool = a11y
        .call(bus, path, "org.a11y.atspi.Action", "DoAction", &(i as i32,))
        .await?;
    Ok(())
}

/// The change watch of a GNOME display: every frame of the monitor stream after the first
/// (which is the stream's start, not a change) is a redraw. Mutter 43 gives no damage
/// rectangles, nor window events: settling tells by the looks whether the window acted on
/// changed; no ping.
#[derive(Default)]
pub(crate) struct FrameWatch {
    log: ChangeLog,
}

impl FrameWatch {
    /// Frame `seq` of the stream arrived.
    #[cfg_attr(not(feature = "pipewire"), allow(dead_code))]
    fn frame(&self, seq: u64, changed: bool) {
        if seq > 1 && changed {
            self.log.note(Change {
                at: Instant::now(),
                damage: true,
                mapped: false,
                gone: None,
                late: std::time::Duration::ZERO,
            });
        }
    }
}

impl ChangeWatch for FrameWatch {
    fn log(&self) -> &ChangeLog {
        &self.log
    }

    // the stream is the whole monitor: there is nothing to choose
    fn watch(&self, _ids: &[WinId]) {}

    fn ping(&self, _id: WinId) -> Option<u32> {
        None
    }
}

/// The monitor stream, through `remote` (the portal's PipeWire connection) when given.
#[cfg(feature = "pipewire")]
fn connect_stream(
    node: u32,
    remote: Option<std::os::fd::OwnedFd>,
    watch: Arc<FrameWatch>,
) -> Result<Option<Stream>, LinuxError> {
    let on_frame = Box::new(move |seq: u64, changed: bool| watch.frame(seq, changed));
    crate::display::pipewire::VideoStream::connect_to(node, remote, on_frame)
        .map(Some)
        .map_err(|e| LinuxError::Wayland {
            what: format!("GNOME's monitor stream (PipeWire node {node})"),
            source: Box::new(e),
        })
}

#[cfg(not(feature = "pipewire"))]
fn connect_stream(
    _node: u32,
    _remote: Option<std::os::fd::OwnedFd>,
    _watch: Arc<FrameWatch>,
) -> Result<Option<Stream>, LinuxError> {
    Ok(None)
}

/// A rectangle clipped to a window of `w`×`h` at (0, 0) (`None`: nothing of it is inside).
fn clip(r: Rect, w: u32, h: u32) -> Option<Rect> {
    let x0 = r.x.max(0);
    let y0 = r.y.max(0);
    let x1 = (i64::from(r.x) + i64::from(r.w)).min(i64::from(w)) as i32;
    let y1 = (i64::from(r.y) + i64::from(r.h)).min(i64::from(h)) as i32;
    (x1 > x0 && y1 > y0).then(|| Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32))
}

/// `area` of a window of `size` (its own coordinates) from the last frame of its stream: the
/// frame holds the window's whole buffer, its shadow around it (see [`casts::window_origin`]).
#[cfg(feature = "pipewire")]
fn latest_of_window(
    s: &Stream,
    area: Rect,
    size: (u32, u32),
) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
    let f = first_frame(
        s,
        "capture",
        "the window's stream",
        "observe the window again",
    )?;
    let (ox, oy) = origin_of(&f, size)?;
    Ok(f.cut(Rect::new(area.x + ox, area.y + oy, area.w, area.h))
        .map(|(r, px)| (Rect::new(r.x - ox, r.y - oy, r.w, r.h), px)))
}

/// Where a window of `size` lies in a frame of its stream.
#[cfg(feature = "pipewire")]
fn origin_of(
    f: &crate::display::pipewire::Frame,
    size: (u32, u32),
) -> Result<(i32, i32), LinuxError> {
    casts::window_origin(&f.pixels, f.width, f.height, size).ok_or_else(|| LinuxError::Wayland {
        what: "a window's stream".into(),
        source: cause(
            "the window's stream shows no opaque window (it may be closing or hidden); \
             observe the window again",
        ),
    })
}

/// Where a window of `size` lies in the last frame of its stream (waited for, bounded).
#[cfg(feature = "pipewire")]
fn origin_in_stream(s: &Stream, size: (u32, u32)) -> Result<(i32, i32), LinuxError> {
    let f = first_frame(
        s,
        "a window's stream",
        "the window's stream",
        "observe the window again",
    )?;
    origin_of(&f, size)
}

/// The stream's first frame, waited for at most [`FIRST_FRAME`]; the error names `what` was
/// being done, `whose` stream gave nothing, and `then` what to do about it.
#[cfg(feature = "pipewire")]
fn first_frame(
    s: &Stream,
    what: &str,
    whose: &str,
    then: &str,
) -> Result<std::sync::Arc<crate::display::pipewire::Frame>, LinuxError> {
    s.first(FIRST_FRAME).ok_or_else(|| LinuxError::Wayland {
        what: what.into(),
        source: cause(format!(
            "{whose} gave no frame ({}); {then}",
            s.ended().unwrap_or_else(|| "none within 3 s".into())
        )),
    })
}

#[cfg(not(feature = "pipewire"))]
fn origin_in_stream(_s: &Stream, _size: (u32, u32)) -> Result<(i32, i32), LinuxError> {
    Ok((0, 0))
}

#[cfg(not(feature = "pipewire"))]
fn latest_of_window(
    _s: &Stream,
    _area: Rect,
    _size: (u32, u32),
) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
    Ok(None)
}

/// A window's stream (its frames are not redraws to watch: the monitor stream shows the
/// window's too).
#[cfg(feature = "pipewire")]
fn connect_window_stream(node: u32) -> Result<Stream, LinuxError> {
    crate::display::pipewire::VideoStream::connect_to(node, None, Box::new(|_, _| {})).map_err(
        |e| LinuxError::Wayland {
            what: format!("GNOME's window stream (PipeWire node {node})"),
            source: Box::new(e),
        },
    )
}

#[cfg(not(feature = "pipewire"))]
fn connect_window_stream(_node: u32) -> Result<Stream, LinuxError> {
    Err(LinuxError::Unsupported(
        "window streams need the pipewire feature".into(),
    ))
}

/// Whether a window's stream shows window `id` of `size`: Mutter records the focused window,
/// and the focus may have moved while the stream was made (no frame yet: nothing to tell).
#[cfg(feature = "pipewire")]
fn recorded_is(s: &Stream, id: WinId, size: (u32, u32)) -> Result<(), LinuxError> {
    let Some(f) = s.first(Duration::ZERO) else {
        return Ok(());
    };
    match casts::opaque_box(&f.pixels, f.width, f.height) {
        Some(b) if !casts::shows_size(b, size) => Err(LinuxError::Unsupported(format!(
            "GNOME recorded another window than {id}: its stream shows a window of {}x{}, not \
             {}x{} (Mutter records the focused window, and the focus moved); try the action \
             again",
            b.w, b.h, size.0, size.1
        ))),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "pipewire"))]
fn recorded_is(_s: &Stream, _id: WinId, _size: (u32, u32)) -> Result<(), LinuxError> {
    Ok(())
}

/// Whether a stream still runs (Mutter ends a window's when the window goes).
#[cfg(feature = "pipewire")]
fn stream_alive(s: &Stream) -> bool {
    s.ended().is_none()
}

#[cfg(not(feature = "pipewire"))]
fn stream_alive(_s: &Stream) -> bool {
    false
}

/// The size of a stream's first frame, waited for up to `wait`.
#[cfg(feature = "pipewire")]
fn frame_within(s: &Stream, wait: Duration) -> Option<(u32, u32)> {
    s.first(wait).map(|f| (f.width, f.height))
}

#[cfg(not(feature = "pipewire"))]
fn frame_within(_s: &Stream, _wait: Duration) -> Option<(u32, u32)> {
    None
}

/// The monitor: as the stream's parameters say, else its first frame's size, else the
/// private desktop's 1280×800.
fn screen_of(size: Option<(u32, u32)>, stream: Option<&Stream>) -> Rect {
    if let Some((w, h)) = size {
        return Rect::new(0, 0, w, h);
    }
    let (w, h) = stream.and_then(first_size).unwrap_or((1280, 800));
    Rect::new(0, 0, w, h)
}

/// The box of opaque pixels of a stream's last frame (on a window's stream: the window).
#[cfg(feature = "pipewire")]
fn stream_box(s: &Stream) -> Option<Rect> {
    let f = s.first(FIRST_FRAME)?;
    casts::opaque_box(&f.pixels, f.width, f.height)
}

#[cfg(not(feature = "pipewire"))]
fn stream_box(_s: &Stream) -> Option<Rect> {
    None
}

#[cfg(feature = "pipewire")]
fn first_size(s: &Stream) -> Option<(u32, u32)> {
    s.first(FIRST_FRAME).map(|f| (f.width, f.height))
}

#[cfg(not(feature = "pipewire"))]
fn first_size(_s: &Stream) -> Option<(u32, u32)> {
    None
}

#[cfg(feature = "pipewire")]
fn latest(s: &Stream, area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
    let f = first_frame(s, "capture", "GNOME's monitor stream", "start ufo again")?;
    Ok(f.cut(area))
}

#[cfg(not(feature = "pipewire"))]
fn latest(_s: &Stream, _area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
    Ok(None)
}

impl Display for Gnome {
    fn screen(&self) -> Rect {
        self.screen
    }

    // the monitor, and the slots of windows known by their streams when there are some
    fn placeable(&self) -> Rect {
        if self.conn.is_some() {
            casts::placeable(self.screen)
        } else {
            self.screen
        }
    }

    // a headless shell renders in software
    fn direct_rendering(&self) -> bool {
        false
    }

    fn coord_space(&self) -> CoordSpace {
        CoordSpace::ClientArea
    }

    fn windows(&self) -> Result<Vec<DisplayWindow>, LinuxError> {
        Ok(self.listed()?.into_iter().map(|l| l.window).collect())
    }

    fn window(&self, id: WinId) -> Result<Option<DisplayWindow>, LinuxError> {
        Ok(self.windows()?.into_iter().find(|w| w.id == id))
    }

    fn active_window(&self) -> Result<Option<WinId>, LinuxError> {
        Ok(self
            .listed()?
            .into_iter()
            .find(|l| l.active)
            .map(|l| l.window.id))
    }

    // GNOME lets no other program raise a window: Alt+Tab, one more window each time (the
    // recent order moves the one brought forward to the front), until AT-SPI calls it active
    fn request_activate(&self, id: WinId) -> Result<(), LinuxError> {
        let count = self.listed()?.len().min(SWITCH_MOST);
        self.find(id)?;
        for n in 1..count.max(2) {
            if self.active_window()? == Some(id) {
                return Ok(());
            }
            self.switch(n)?;
            if self.becomes_active(id, SWITCH_WAIT) {
                return Ok(());
            }
        }
        Err(LinuxError::Unsupported(format!(
            "window {id} did not become active through Alt+Tab on GNOME (Alt+Tab switches \
             between applications: a second window of the same application is not reached); \
             close the windows in front of it, or act on it through its controls' actions"
        )))
    }

    fn request_close(&self, id: WinId) -> Result<(), LinuxError> {
        let l = self.find(id)?;
        self.forget_listing();
        let a11y = self.a11y.clone();
        let (bus, path) = (l.bus.clone(), l.path.clone());
        let by_action = self.run("close", async move {
            do_named_action(&a11y, &bus, &path, CLOSE).await
        });
        if by_action.is_ok() {
            return Ok(());
        }
        // a window without GTK 4's action: the keys its close button stands for
        if self.active_window()? != Some(id) {
            self.request_activate(id)?;
        }
        self.send_keys(vec![
            (sym::ALT_L, true),
            (F4, true),
            (F4, false),
            (sym::ALT_L, false),
        ])
    }

    fn top_at(&self, x: i32, y: i32) -> Result<Option<WinId>, LinuxError> {
        if self.window_only {
            let (l, place) = self.shared()?;
            return Ok(casts::holds(place, x, y).then_some(l.window.id));
        }
        Ok(frames::top_at(&self.listed()?, x, y))
    }

    fn top_of(&self, id: WinId) -> Result<WinId, LinuxError> {
        Ok(id)
    }

    fn capture(&self, area: Rect) -> Result<RgbImage, LinuxError> {
        let (r, bgrx) = self.grab(area)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause(format!(
                "the rectangle {},{} {}x{} is off the screen",
                area.x, area.y, area.w, area.h
            )),
        })?;
        Ok(RgbImage::from_bgrx(r, &bgrx))
    }

    fn fingerprint(&self, area: Rect) -> Result<u64, LinuxError> {
        let (_, bgrx) = self.grab(area)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause("the rectangle is off the screen"),
        })?;
        Ok(pixels::fingerprint_bytes(&bgrx))
    }

    fn look(&self, area: Rect) -> Result<Look, LinuxError> {
        Ok(self.grab(area)?.map(Look::from_bgrx).unwrap_or_default())
    }

    fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError> {
        let b = mutter::button(button).ok_or_else(|| {
            LinuxError::Unsupported(format!(
                "pointer button {button} does not exist on GNOME (1–7: left, middle, right, \
                 the wheel)"
            ))
        })?;
        if self.window_only {
            return self.click_shared(x, y, b, count);
        }
        if casts::in_streams(x) {
            return self.click_streamed(x, y, b, count);
        }
        self.press(Arc::clone(&self.input), (x, y), b, count)
    }

    fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError> {
        self.keys(&[KeyStep::Chord {
            mods: mods.to_vec(),
            key,
        }])
    }

    fn keys(&self, steps: &[KeyStep]) -> Result<(), LinuxError> {
        self.send_keys(keys::plan(steps)?)
    }

    fn change_watch(&self) -> Option<Arc<dyn ChangeWatch>> {
        self.watch
            .as_ref()
            .map(|w| Arc::clone(w) as Arc<dyn ChangeWatch>)
    }

    fn person_input(&self) -> Option<Arc<PersonInput>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_after_the_first_are_redraws() {
        let w = FrameWatch::default();
        let since = Instant::now();
        w.frame(1, true);
        assert_eq!(
            w.log().activity_since(since).0,
            0,
            "the stream's first frame"
        );
        w.frame(2, true);
        w.frame(3, false);
        w.frame(4, true);
        assert_eq!(w.log().activity_since(since).0, 2);
        assert!(
            !w.log().structure_since(since),
            "frames say nothing of windows"
        );
        assert_eq!(w.ping(WinId(1)), None);
    }

    #[test]
    fn a_maximize_is_shown_once_a_redraw_came_after_it_and_the_stream_went_quiet() {
        let asked = Instant::now();
        let ms = Duration::from_millis;
        assert!(!shown(asked, None, asked + ms(500)), "no frame yet");
        assert!(
            !shown(asked + ms(10), Some(asked), asked + ms(500)),
            "only a frame from before the maximize"
        );
        assert!(
            !shown(asked, Some(asked + ms(100)), asked + ms(200)),
            "frames may still be coming"
        );
        assert!(shown(asked, Some(asked + ms(100)), asked + ms(250)));
    }
}
