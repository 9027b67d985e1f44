//! KDE's KWin (5.27 and later) as a display (docs/desktop.md, "Wayland"): input through
//! `org_kde_kwin_fake_input` ([`input`]; what KWin's keyboard layout lacks is pasted,
//! [`layout`]), captures through `org.kde.KWin.ScreenShot2` and windows through one-shot KWin
//! scripts over D-Bus ([`bus`], [`script`]); settling waits on KWin's own reports of redraws
//! and windows, from a script loaded for the display's life ([`watch`]). KWin grants the
//! first two by a `.desktop` file naming ufo's executable (`kwin_grant`). With the `pipewire`
//! feature, looks and captures read the last frame of KWin's screencast of the output
//! ([`cast`]), granted by the same file; else ScreenShot2's.
//!
//! One thread owns the Wayland connection and the D-Bus connection (on a small runtime of its
//! own, so that KWin's script answers are served while a caller waits); callers send it
//! commands over a bounded channel and wait for each answer with a bound. AT-SPI extents are
//! relative to the client area ([`CoordSpace::ClientArea`]): a window's client area is where
//! its frame and buffer meet. No take-over watch.

mod bus;
pub(crate) mod cast;
pub(crate) mod input;
pub(crate) mod layout;
pub(crate) mod script;
pub(crate) mod watch;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::error::TrySendError;
use ufo_core::Rect;

use super::keys::KeyStep;
use super::pixels::{self, Look, RgbImage};
use super::watch::{ChangeWatch, PersonInput};
use super::{CoordSpace, Display, DisplayWindow, WinId};
use crate::error::cause;
use crate::LinuxError;
use bus::Bus;
use cast::Casts;
use input::{time_to_land, Input, Opened};
use layout::Piece;
use script::{Job, Listed};
use watch::{lock, Ids, Watch};

/// Most commands waiting for the thread.
const QUEUE: usize = 32;
/// How often the thread reads KWin's Wayland events when no command comes.
const IDLE: Duration = Duration::from_millis(100);
/// Longest wait for the display to open (KWin reads the client's executable on connection:
/// about a second for a large debug build).
const OPEN_WAIT: Duration = Duration::from_secs(20);
/// Bound on one command's answer.
const ANSWER: Duration = Duration::from_secs(10);

/// Where a command's answer goes.
type Reply<T> = SyncSender<Result<T, LinuxError>>;

/// What the thread is asked.
enum Command {
    /// The client windows, bottom of the stack first, with their frames.
    Windows(Reply<Vec<Shown>>),
    Activate(WinId, Reply<()>),
    Close(WinId, Reply<()>),
    /// A capture of a rectangle (on the screen): where it lies, BGRX rows.
    Capture(Rect, Reply<(Rect, Vec<u8>)>),
    Click {
        x: i32,
        y: i32,
        button: u8,
        count: u32,
        reply: Reply<()>,
    },
    Keys(Vec<Piece>, Reply<()>),
    /// A screencast of a window: its PipeWire node (`None`: KWin offers none to ufo).
    StreamWindow(WinId, Reply<Option<u32>>),
}

impl Command {
    /// What it asks, for the log.
    fn name(&self) -> &'static str {
        match self {
            Command::Windows(_) => "windows",
            Command::Activate(..) => "activate",
            Command::Close(..) => "close",
            Command::Capture(..) => "capture",
            Command::Click { .. } => "click",
            Command::Keys(..) => "keys",
            Command::StreamWindow(..) => "screencast",
        }
    }
}

/// A window and its frame (for the hit test).
#[derive(Debug, Clone)]
struct Shown {
    window: DisplayWindow,
    frame: Option<Rect>,
    active: bool,
}

/// A KWin session: the channel to its thread, and what does not change.
pub(crate) struct Kwin {
    commands: tokio::sync::mpsc::Sender<Command>,
    /// closed by the thread once it has ended (its watch script unloaded)
    ended: Mutex<Receiver<()>>,
    screen: Rect,
    socket: PathBuf,
    /// `None` when KWin would not run the watch script (settling then compares pixels)
    watch: Option<Arc<Watch>>,
    /// the watched windows' screencasts (looks read their last frames)
    casts: Casts,
    /// the last listing, the window list's generation before it was made and when
    listing: Mutex<Option<(u64, Instant, Vec<Shown>)>>,
}

/// What the thread says once it opened the display: KWin's output size, its change watch
/// and its screencast, else how captures are taken (`None` overall: the compositor is not
/// KWin).
type Opening = Option<((u32, u32), Option<Arc<Watch>>, cast::Path)>;

impl Kwin {
    /// Connect to the compositor at `socket` (else `WAYLAND_DISPLAY`'s) and, when it is KWin,
    /// to KWin on the session bus at `session_bus` (else `DBUS_SESSION_BUS_ADDRESS`'s), on a
    /// thread of their own for the display's life; through `connector` when given (else
    /// connecting here). `None`: the compositor is not KWin.
    pub(crate) fn open(
        socket: Option<&Path>,
        session_bus: Option<String>,
        connector: Option<Arc<dyn crate::WaylandConnector>>,
    ) -> Result<Option<Kwin>, LinuxError> {
        let socket = super::wlroots::socket_path(socket)?;
        let (commands, inbox) = tokio::sync::mpsc::channel::<Command>(QUEUE);
        let (opened_tx, opened) = mpsc::sync_channel(1);
        let (ending, ended) = mpsc::sync_channel::<()>(1);
        let path = socket.clone();
        std::thread::Builder::new()
            .name("ufo-kwin".into())
            .spawn(move || {
                run_thread(&path, connector, session_bus, inbox, opened_tx);
                drop(ending);
            })
            .map_err(|e| LinuxError::WaylandConnect {
                socket: socket.display().to_string(),
                source: Box::new(e),
            })?;
        let opening = match opened.recv_timeout(OPEN_WAIT) {
            Ok(r) => r?,
            Err(_) => {
                return Err(LinuxError::Timeout {
                    what: format!("KWin at {}", socket.display()),
                    ms: OPEN_WAIT.as_millis() as u64,
                })
            }
        };
        Ok(opening.map(|((w, h), watch, path)| {
            tracing::info!("KWin captures through {}", path.describe());
            let casts = Casts::new(path, watch.as_ref());
            Kwin {
                commands,
                ended: Mutex::new(ended),
                screen: Rect::new(0, 0, w, h),
                socket,
                watch,
                casts,
                listing: Mutex::new(None),
            }
        }))
    }

    /// Send a command made with its reply channel, and wait for the answer (bounded).
    fn ask<T>(&self, what: &str, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, LinuxError> {
        let deadline = Instant::now() + ANSWER;
        let (tx, rx) = mpsc::sync_channel(1);
        let mut cmd = make(tx);
        let gone = || LinuxError::WaylandConnect {
            socket: self.socket.display().to_string(),
            source: cause("the connection to KWin is closed; start ufo again"),
        };
        loop {
            match self.commands.try_send(cmd) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    cmd = back;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(TrySendError::Full(_)) => {
                    return Err(LinuxError::Timeout {
                        what: format!("the KWin display's queue ({what})"),
                        ms: ANSWER.as_millis() as u64,
                    })
                }
                Err(TrySendError::Closed(_)) => return Err(gone()),
            }
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(LinuxError::Timeout {
                what: format!("KWin ({what})"),
                ms: ANSWER.as_millis() as u64,
            }),
            Err(RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }

    /// `area` from the screencast of the topmost window it lies in (see [`Kwin::grab`]).
    fn streamed(&self, area: Rect, capture: bool) -> Option<(Rect, Vec<u8>)> {
        if *self.casts.path() != cast::Path::Screencast {
            return None;
        }
        let shown = self.shown().ok()?;
        self.casts
            .keep_only(&shown.iter().map(|s| s.window.id).collect::<Vec<_>>());
        let i = shown.iter().rposition(|s| {
            s.frame.is_some_and(|f| cast::covers(f, area))
                || s.window.area.is_some_and(|c| cast::covers(c, area))
        })?;
        let s = &shown[i];
        let covered = shown[i + 1..]
            .iter()
            .any(|o| o.frame.is_some_and(|f| cast::overlap(f, area)));
        if capture && covered {
            return None;
        }
        let id = s.window.id;
        let stream = self.casts.stream(id, || {
            self.ask("screencast", |r| Command::StreamWindow(id, r))
        })?;
        let got = cast::read(&stream, area, s.window.area, s.frame);
        if got.is_some() {
            self.casts.count_served();
        }
        got
    }

    /// The windows: the last listing while the watch reports no change of the list (kept
    /// here too, so that a look, which needs it, does not wait on the thread while it serves
    /// KWin's reports), else one from the thread.
    fn shown(&self) -> Result<Vec<Shown>, LinuxError> {
        let generation = self.watch.as_ref().map(|w| w.generation());
        {
            let kept = self.listing.lock().unwrap_or_else(|p| p.into_inner());
            if let (Some(g), Some((made, at, shown))) = (generation, kept.as_ref()) {
                if watch::listing_holds((*made, *at), g, Instant::now()) {
                    return Ok(shown.clone());
                }
            }
        }
        let at = Instant::now();
        let shown = self.ask("windows", Command::Windows)?;
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) =
            generation.map(|g| (g, at, shown.clone()));
        Ok(shown)
    }

    /// Forget the listing kept (an action changes the list, whether or not KWin reported it
    /// yet).
    fn forget_listing(&self) {
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// A rectangle clipped to the screen, captured: where it lies and its BGRX rows. From a
    /// window's screencast when the rectangle lies in it (and, for a `capture` of what the
    /// model sees, no other window lies over it), else through ScreenShot2.
    fn grab(&self, area: Rect, capture: bool) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
        let Some(clipped) = clip(area, self.screen) else {
            return Ok(None);
        };
        if let Some(got) = self.streamed(clipped, capture) {
            return Ok(Some(got));
        }
        self.ask("capture", |r| Command::Capture(clipped, r))
            .map(Some)
    }
}

/// A rectangle clipped to the screen (`None`: nothing of it is on the screen).
fn clip(area: Rect, screen: Rect) -> Option<Rect> {
    let x0 = area.x.max(screen.x);
    let y0 = area.y.max(screen.y);
    let x1 = (area.x + area.w as i32).min(screen.x + screen.w as i32);
    let y1 = (area.y + area.h as i32).min(screen.y + screen.h as i32);
    (x1 > x0 && y1 > y0).then(|| Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32))
}

/// The thread: open the Wayland side (is it KWin?), then the D-Bus side on a runtime of its
/// own, say how it went, and serve commands until the display is dropped.
/// Most the display's end waits for its thread to unload the watch script.
const END_WAIT: Duration = Duration::from_secs(2);

impl Drop for Kwin {
    // the watch script stays loaded in KWin, calling a bus name that is gone, unless the
    // thread unloads it: close its inbox and give it that long (a process ending right after
    // would cut it short)
    fn drop(&mut self) {
        let (closed, _) = tokio::sync::mpsc::channel(1);
        drop(std::mem::replace(&mut self.commands, closed));
        let ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        let _ = ended.recv_timeout(END_WAIT);
    }
}

fn run_thread(
    path: &Path,
    connector: Option<Arc<dyn crate::WaylandConnector>>,
    session_bus: Option<String>,
    inbox: tokio::sync::mpsc::Receiver<Command>,
    opened: SyncSender<Result<Opening, LinuxError>>,
) {
    let input = match Input::open(path, connector.as_deref()) {
        Ok(Opened::Kwin(i)) => i,
        Ok(Opened::Other) => {
            let _ = opened.send(Ok(None));
            return;
        }
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = opened.send(Err(LinuxError::Wayland {
                what: "the KWin display's runtime".into(),
                source: Box::new(e),
            }));
            return;
        }
    };
    rt.block_on(async move {
        let ids = Arc::new(Mutex::new(Ids::default()));
        let watch = Arc::new(Watch::new(Arc::clone(&ids)));
        let mut bus = match Bus::open(
            session_bus.as_deref(),
            Arc::clone(&watch),
            connector.as_deref(),
        )
        .await
        {
            Ok(b) => b,
            Err(e) => {
                let _ = opened.send(Err(e));
                return;
            }
        };
        let watch = match bus.start_watch().await {
            Ok(()) => Some(watch),
            Err(e) => {
                tracing::warn!("no change watch on KWin (settling compares pixels): {e}");
                None
            }
        };
        let path = cast::path(input.offers_screencast());
        let _ = opened.send(Ok(Some((input.output_size(), watch.clone(), path))));
        let worker = Worker {
            input: *input,
            bus,
            ids,
            watch,
            listing: None,
        };
        serve(worker, inbox).await;
    });
}

/// What the thread owns.
struct Worker {
    input: Input,
    bus: Bus,
    /// shared with the change watch, which reads KWin's ids in the script's calls
    ids: Arc<Mutex<Ids>>,
    watch: Option<Arc<Watch>>,
    /// the last listing, the window list's generation before it was made and when: reused
    /// while the watch reports no change of the list (a listing is a script run, ~9 ms)
    listing: Option<(u64, Instant, Vec<Shown>)>,
}

/// Serve commands until the display is dropped (or KWin's connection breaks), then unload
/// the watch script.
async fn serve(mut w: Worker, mut inbox: tokio::sync::mpsc::Receiver<Command>) {
    loop {
        tokio::select! {
            cmd = inbox.recv() => match cmd {
                Some(c) => w.handle(c).await,
                None => break,
            },
            () = tokio::time::sleep(IDLE) => {
                if let Err(e) = w.input.pump() {
                    tracing::warn!("the KWin Wayland connection broke: {e}");
                    break;
                }
            }
        }
    }
    w.bus.stop_watch().await;
}

impl Worker {
    async fn handle(&mut self, cmd: Command) {
        let t = Instant::now();
        let what = cmd.name();
        self.serve_one(cmd).await;
        tracing::debug!(
            what,
            ms = t.elapsed().as_secs_f64() * 1000.0,
            "KWin command"
        );
    }

    /// Send the planned pieces in order, each paste given time to land before what follows
    /// (the thread's bus tasks run meanwhile); one round trip at the end.
    async fn type_pieces(&mut self, pieces: &[Piece]) -> Result<(), LinuxError> {
        for p in pieces {
            if let Some(pasted) = self.input.send(p)? {
                let left = time_to_land(pasted).saturating_sub(pasted.closed.elapsed());
                tokio::time::sleep(left).await;
            }
        }
        self.input.sync()
    }

    async fn serve_one(&mut self, cmd: Command) {
        if let Err(e) = self.input.pump() {
            tracing::warn!("the KWin Wayland connection broke: {e}");
        }
        match cmd {
            Command::Windows(r) => {
                let _ = r.send(self.windows().await);
            }
            Command::Activate(id, r) => {
                let _ = r.send(self.on_window(id, Job::Activate).await);
            }
            Command::Close(id, r) => {
                let _ = r.send(self.on_window(id, Job::Close).await);
            }
            Command::Capture(area, r) => {
                let _ = r.send(self.bus.capture(area).await);
            }
            Command::Click {
                x,
                y,
                button,
                count,
                reply,
            } => {
                let _ = reply.send(self.input.click(x, y, button, count));
            }
            Command::Keys(pieces, r) => {
                let _ = r.send(self.type_pieces(&pieces).await);
            }
            Command::StreamWindow(id, r) => {
                let uuid = lock(&self.ids).uuid(id);
                let _ = r.send(uuid.and_then(|u| self.input.stream_window(&u)));
            }
        }
    }

    /// The windows: the last listing while the watch reports no change of the list, else a
    /// new one.
    async fn windows(&mut self) -> Result<Vec<Shown>, LinuxError> {
        let generation = self.watch.as_ref().map(|w| w.generation());
        if let (Some(g), Some((made, at, shown))) = (generation, &self.listing) {
            if watch::listing_holds((*made, *at), g, Instant::now()) {
                return Ok(shown.clone());
            }
        }
        let at = Instant::now();
        let listed = script::read_reply(&self.bus.run(&Job::List).await?)?;
        let shown = {
            let mut ids = lock(&self.ids);
            ids.keep_only(listed.iter().map(|l| l.id.as_str()));
            shown_of(&listed, &mut ids)
        };
        self.listing = generation.map(|g| (g, at, shown.clone()));
        Ok(shown)
    }

    async fn on_window(&mut self, id: WinId, job: fn(String) -> Job) -> Result<(), LinuxError> {
        // what it changes is listed afresh, whether or not KWin's report came yet
        self.listing = None;
        let uuid = lock(&self.ids).uuid(id)?;
        match self.bus.run(&job(uuid)).await?.as_str() {
            "done" => Ok(()),
            _ => Err(LinuxError::NoWindow(id.to_string())),
        }
    }
}

/// The client windows of a listing, numbered, bottom of the stack first.
fn shown_of(listed: &[Listed], ids: &mut Ids) -> Vec<Shown> {
    listed
        .iter()
        .filter(|l| l.is_client())
        .map(|l| {
            let app_id = if l.app.is_empty() {
                l.desktop_file.clone()
            } else {
                l.app.clone()
            };
            Shown {
                window: DisplayWindow {
                    id: WinId(ids.number(&l.id)),
                    title: l.caption.clone(),
                    pid: u32::try_from(l.pid).ok().filter(|p| *p > 0),
                    app_id,
                    area: script::client_area(l.frame, l.buffer),
                    transient_for: l.parent.as_deref().map(|p| WinId(ids.number(p))),
                    dialog: l.dialog,
                    wm_modal: l.modal,
                },
                frame: script::client_area(l.frame, None),
                active: l.active,
            }
        })
        .collect()
}

/// The topmost window whose frame holds the point.
fn top_at(shown: &[Shown], x: i32, y: i32) -> Option<WinId> {
    shown
        .iter()
        .rev()
        .find(|s| {
            s.frame.is_some_and(|f| {
                x >= f.x && y >= f.y && x < f.x + f.w as i32 && y < f.y + f.h as i32
            })
        })
        .map(|s| s.window.id)
}

impl Display for Kwin {
    fn screen(&self) -> Rect {
        self.screen
    }

    // a client cannot tell how KWin renders; a virtual session renders in software
    fn direct_rendering(&self) -> bool {
        false
    }

    fn coord_space(&self) -> CoordSpace {
        CoordSpace::ClientArea
    }

    fn windows(&self) -> Result<Vec<DisplayWindow>, LinuxError> {
        Ok(self.shown()?.into_iter().map(|s| s.window).collect())
    }

    fn window(&self, id: WinId) -> Result<Option<DisplayWindow>, LinuxError> {
        Ok(self.windows()?.into_iter().find(|w| w.id == id))
    }

    fn active_window(&self) -> Result<Option<WinId>, LinuxError> {
        Ok(self
            .shown()?
            .into_iter()
            .find(|s| s.active)
            .map(|s| s.window.id))
    }

    fn request_activate(&self, id: WinId) -> Result<(), LinuxError> {
        self.forget_listing();
        self.ask("activate", |r| Command::Activate(id, r))
    }

    fn request_close(&self, id: WinId) -> Result<(), LinuxError> {
        self.forget_listing();
        self.ask("close", |r| Command::Close(id, r))
    }

    fn top_at(&self, x: i32, y: i32) -> Result<Option<WinId>, LinuxError> {
        Ok(top_at(&self.shown()?, x, y))
    }

    fn top_of(&self, id: WinId) -> Result<WinId, LinuxError> {
        Ok(id)
    }

    fn capture(&self, area: Rect) -> Result<RgbImage, LinuxError> {
        let (r, bgrx) = self.grab(area, true)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause(format!(
                "the rectangle {},{} {}x{} is off the screen",
                area.x, area.y, area.w, area.h
            )),
        })?;
        Ok(RgbImage::from_bgrx(r, &bgrx))
    }

    fn fingerprint(&self, area: Rect) -> Result<u64, LinuxError> {
        let (_, bgrx) = self.grab(area, false)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause("the rectangle is off the screen"),
        })?;
        Ok(pixels::fingerprint_bytes(&bgrx))
    }

    fn look(&self, area: Rect) -> Result<Look, LinuxError> {
        Ok(self
            .grab(area, false)?
            .map(Look::from_bgrx)
            .unwrap_or_default())
    }

    fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError> {
        self.ask("click", |reply| Command::Click {
            x,
            y,
            button,
            count,
            reply,
        })
    }

    fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError> {
        self.keys(&[KeyStep::Chord {
            mods: mods.to_vec(),
            key,
        }])
    }

    fn keys(&self, steps: &[KeyStep]) -> Result<(), LinuxError> {
        let pieces = layout::plan(steps)?;
        self.ask("keys", |r| Command::Keys(pieces, r))
    }

    fn captures(&self) -> Option<(String, u64)> {
        Some((self.casts.path().describe(), self.casts.served()))
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

    fn listed(id: &str, frame: [f64; 4], normal: bool) -> Listed {
        Listed {
            id: id.into(),
            caption: format!("window {id}"),
            app: "app".into(),
            desktop_file: String::new(),
            pid: 7,
            active: false,
            minimized: false,
            normal,
            dialog: false,
            modal: false,
            parent: None,
            frame: Some(frame),
            buffer: None,
        }
    }

    #[test]
    fn windows_are_numbered_once_and_the_top_one_is_hit() {
        let mut ids = Ids::default();
        let list = vec![
            listed("{a}", [0.0, 0.0, 100.0, 100.0], true),
            listed("{panel}", [0.0, 0.0, 1280.0, 30.0], false),
            listed("{b}", [50.0, 50.0, 100.0, 100.0], true),
        ];
        let shown = shown_of(&list, &mut ids);
        assert_eq!(shown.len(), 2, "the panel is no client window");
        let (a, b) = (shown[0].window.id, shown[1].window.id);
        assert_ne!(a, b);
        // the same windows keep their numbers
        let again = shown_of(&list, &mut ids);
        assert_eq!(again[0].window.id, a);
        assert_eq!(top_at(&shown, 60, 60), Some(b));
        assert_eq!(top_at(&shown, 10, 10), Some(a));
        assert_eq!(top_at(&shown, 500, 500), None);
        assert_eq!(ids.uuid(a).expect("known"), "{a}");
        ids.keep_only(list[2..].iter().map(|l| l.id.as_str()));
        assert!(matches!(ids.uuid(a), Err(LinuxError::NoWindow(_))));
    }

    #[test]
    fn rectangles_are_clipped_to_the_screen() {
        let screen = Rect::new(0, 0, 100, 50);
        assert_eq!(
            clip(Rect::new(90, 40, 20, 20), screen),
            Some(Rect::new(90, 40, 10, 10))
        );
        assert_eq!(clip(Rect::new(-5, -5, 5, 5), screen), None);
    }
}
