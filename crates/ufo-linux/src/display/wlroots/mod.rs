//! A wlroots Wayland compositor (sway) as a display (docs/desktop.md, "Wayland"): windows
//! from `zwlr_foreign_toplevel_manager_v1` joined with sway's IPC for their processes and
//! client areas (`sway`), keys through `zwp_virtual_keyboard_v1` with a keymap made for the
//! keys (`keymap`), clicks through `zwlr_virtual_pointer_v1`, captures through
//! `zwlr_screencopy_manager_v1` (`session`). One connection, owned by one thread that runs the
//! jobs sent to it over a bounded channel; every job's answer is awaited with a bound.
//!
//! AT-SPI extents are relative to the client area on Wayland ([`CoordSpace::ClientArea`]).
//! Without sway's IPC (another wlroots compositor) windows have no known place: their
//! controls are acted on through their actions. The change watch comes from the compositor's
//! copies with damage (`watch`); there is no take-over watch.

pub(crate) mod keymap;
mod session;
mod shm;
pub(crate) mod sway;
mod watch;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ufo_core::Rect;
use wayland_protocols_wlr::foreign_toplevel::v1::client::zwlr_foreign_toplevel_handle_v1::ZwlrForeignToplevelHandleV1;

use super::keys::KeyStep;
use super::pixels::{Look, RgbImage};
use super::watch::{ChangeWatch, PersonInput};
use super::{CoordSpace, Display, DisplayWindow, WinId};
use crate::error::cause;
use crate::LinuxError;
pub(crate) use session::socket_path;
use session::{Session, EXCHANGE};
use sway::View;

/// A job for the connection's thread.
type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// Most jobs waiting for the thread.
const QUEUE: usize = 32;
/// Longest the thread waits for the compositor's events before it looks for jobs again (a
/// job wakes it at once).
const IDLE: Duration = Duration::from_millis(100);
/// Longest wait for the connection to open.
const OPEN_WAIT: Duration = Duration::from_secs(10);

/// A wlroots compositor: the channel to the connection's thread, and what does not change.
pub(crate) struct Wlroots {
    jobs: SyncSender<Job>,
    /// written after each job sent, so that the thread waiting for events runs it at once
    wake: Arc<OwnedFd>,
    screen: Rect,
    socket: PathBuf,
    watch: Option<Arc<watch::Watch>>,
}

impl Wlroots {
    /// Connect to the compositor at `socket` (else the one `WAYLAND_DISPLAY` names), on a
    /// thread of its own that keeps the connection for the display's life.
    pub(crate) fn open(socket: Option<&Path>) -> Result<Wlroots, LinuxError> {
        let socket = session::socket_path(socket)?;
        let (jobs, inbox) = mpsc::sync_channel::<Job>(QUEUE);
        let (opened_tx, opened) = mpsc::sync_channel(1);
        let path = socket.clone();
        let wake = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .map(Arc::new)
        .map_err(|e| LinuxError::WaylandConnect {
            socket: socket.display().to_string(),
            source: Box::new(std::io::Error::from(e)),
        })?;
        let woken = Arc::clone(&wake);
        std::thread::Builder::new()
            .name("ufo-wayland".into())
            .spawn(move || match Session::open(Some(&path)) {
                Ok(s) => {
                    let _ = opened_tx.send(Ok((s.output_size(), s.change_watch())));
                    serve(s, inbox, &woken);
                }
                Err(e) => {
                    let _ = opened_tx.send(Err(e));
                }
            })
            .map_err(|e| LinuxError::WaylandConnect {
                socket: socket.display().to_string(),
                source: Box::new(e),
            })?;
        let ((w, h), watch) = match opened.recv_timeout(OPEN_WAIT) {
            Ok(r) => r?,
            Err(_) => {
                return Err(LinuxError::Timeout {
                    what: format!("the Wayland compositor at {}", socket.display()),
                    ms: OPEN_WAIT.as_millis() as u64,
                })
            }
        };
        Ok(Wlroots {
            jobs,
            wake,
            screen: Rect::new(0, 0, w, h),
            socket,
            watch,
        })
    }

    /// Run `f` on the connection's thread and wait for its answer (bounded).
    fn call<T, F>(&self, what: &str, f: F) -> Result<T, LinuxError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Session) -> Result<T, LinuxError> + Send + 'static,
    {
        let bound = EXCHANGE * 2;
        let deadline = Instant::now() + bound;
        let (tx, rx) = mpsc::sync_channel(1);
        let mut job: Job = Box::new(move |s: &mut Session| {
            let _ = tx.send(f(s));
        });
        let gone = || LinuxError::WaylandConnect {
            socket: self.socket.display().to_string(),
            source: cause("the connection to the compositor is closed; start ufo again"),
        };
        loop {
            match self.jobs.try_send(job) {
                Ok(()) => {
                    // (a full counter only means the thread is woken already)
                    let _ = rustix::io::write(self.wake.as_fd(), &1u64.to_ne_bytes());
                    break;
                }
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    job = back;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(TrySendError::Full(_)) => {
                    return Err(LinuxError::Timeout {
                        what: format!("the Wayland display's queue ({what})"),
                        ms: bound.as_millis() as u64,
                    })
                }
                Err(TrySendError::Disconnected(_)) => return Err(gone()),
            }
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(LinuxError::Timeout {
                what: format!("the Wayland compositor ({what})"),
                ms: bound.as_millis() as u64,
            }),
            Err(RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }

    /// The screen now ([`Session::seen`]: the change watch's last copy, else a capture of the
    /// whole output, quicker than one of a region on wlroots 0.15, docs/desktop.md "Wayland"),
    /// cut to `area` (clipped to the screen): BGRX rows and where they lie. Looks, captures
    /// and fingerprints all come from it, so a redraw settling heard of and the pixels it
    /// compares are the same frame.
    fn grab(&self, area: Rect) -> Result<Option<(Rect, Vec<u8>)>, LinuxError> {
        self.call("capture", move |s| s.seen(area))
    }
}

/// What `ufo doctor` reads of a Wayland compositor.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    /// The socket reached.
    pub socket: PathBuf,
    /// The interfaces of the globals it offers.
    pub globals: Vec<String>,
    /// sway's IPC socket, when found.
    pub ipc: Option<PathBuf>,
}

/// Connect to the compositor at `socket` (else `WAYLAND_DISPLAY`'s) and read what it offers,
/// bounded by `within`.
pub(crate) fn probe(socket: Option<&Path>, within: Duration) -> Result<Probe, LinuxError> {
    let socket = session::socket_path(socket)?;
    let (tx, rx) = mpsc::sync_channel(1);
    let path = socket.clone();
    // (the registry's round trip has no bound of its own: a thread waited on with one)
    std::thread::Builder::new()
        .name("ufo-wayland-probe".into())
        .spawn(move || {
            let _ = tx.send(session::offered(&path));
        })
        .map_err(|e| LinuxError::WaylandConnect {
            socket: socket.display().to_string(),
            source: Box::new(e),
        })?;
    let (globals, peer) = rx.recv_timeout(within).map_err(|_| LinuxError::Timeout {
        what: format!("the Wayland compositor at {}", socket.display()),
        ms: within.as_millis() as u64,
    })??;
    let ipc = sway::Ipc::find(&socket, peer).map(|i| i.path().to_path_buf());
    Ok(Probe {
        socket,
        globals,
        ipc,
    })
}

/// The connection's thread: run the jobs as they come; between them, wait for the
/// compositor's events (woken by a job) and handle them as they come, so that the window list
/// and the change watch stay current. Ends when the display is dropped.
fn serve(mut s: Session, inbox: Receiver<Job>, wake: &OwnedFd) {
    loop {
        loop {
            match inbox.try_recv() {
                Ok(job) => {
                    if let Err(e) = s.pump() {
                        tracing::warn!("the Wayland connection broke: {e}");
                    }
                    job(&mut s);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        if let Err(e) = s.wait(Some(wake.as_fd()), IDLE) {
            tracing::warn!("the Wayland connection broke: {e}");
            return;
        }
        // (the jobs that woke it are taken at the top of the loop)
        let _ = rustix::io::read(wake, &mut [0u8; 8]);
    }
}

/// The windows: the toplevels in the order they appeared, each with what sway's IPC says
/// of it (its process, its client area when it is showing).
fn windows_of(s: &mut Session) -> Result<(Vec<DisplayWindow>, Vec<View>), LinuxError> {
    s.sync()?;
    let views = match s.ipc.as_mut() {
        Some(ipc) => ipc.views()?,
        None => Vec::new(),
    };
    let mut tops: Vec<&session::Toplevel> = s.state.toplevels.values().collect();
    tops.sort_by_key(|t| t.number);
    let named: Vec<sway::Named<'_>> = tops
        .iter()
        .map(|t| (t.number, t.app_id.as_str(), t.title.as_str()))
        .collect();
    let joined = sway::join(&named, &views);
    let number_of =
        |id: &wayland_client::backend::ObjectId| s.state.toplevels.get(id).map(|t| WinId(t.number));
    let windows = tops
        .iter()
        .zip(joined)
        .map(|(t, view)| {
            let view = view.map(|i| &views[i]);
            let parent = t.parent.as_ref().and_then(number_of);
            DisplayWindow {
                id: WinId(t.number),
                title: t.title.clone(),
                pid: view.and_then(|v| v.pid),
                app_id: t.app_id.clone(),
                area: view.filter(|v| v.visible).map(|v| v.area),
                transient_for: parent,
                dialog: parent.is_some(),
                wm_modal: false,
            }
        })
        .collect();
    Ok((windows, views))
}

/// The protocol handle of window `id`.
fn handle_of(s: &Session, id: WinId) -> Result<ZwlrForeignToplevelHandleV1, LinuxError> {
    s.state
        .toplevels
        .values()
        .find(|t| t.number == id.0)
        .map(|t| t.handle.clone())
        .ok_or_else(|| LinuxError::NoWindow(id.to_string()))
}

impl Display for Wlroots {
    fn screen(&self) -> Rect {
        self.screen
    }

    // a client cannot tell whether the compositor renders with the GPU: assume software,
    // which is what a headless wlroots (pixman) does
    fn direct_rendering(&self) -> bool {
        false
    }

    fn coord_space(&self) -> CoordSpace {
        CoordSpace::ClientArea
    }

    fn windows(&self) -> Result<Vec<DisplayWindow>, LinuxError> {
        self.call("windows", |s| windows_of(s).map(|(w, _)| w))
    }

    fn window(&self, id: WinId) -> Result<Option<DisplayWindow>, LinuxError> {
        Ok(self.windows()?.into_iter().find(|w| w.id == id))
    }

    fn active_window(&self) -> Result<Option<WinId>, LinuxError> {
        self.call("active window", |s| {
            s.sync()?;
            Ok(s.state
                .toplevels
                .values()
                .find(|t| t.activated)
                .map(|t| WinId(t.number)))
        })
    }

    fn request_activate(&self, id: WinId) -> Result<(), LinuxError> {
        self.call("activate", move |s| {
            let h = handle_of(s, id)?;
            s.activate(&h)
        })
    }

    fn request_close(&self, id: WinId) -> Result<(), LinuxError> {
        self.call("close", move |s| {
            let h = handle_of(s, id)?;
            s.close(&h)
        })
    }

    fn top_at(&self, x: i32, y: i32) -> Result<Option<WinId>, LinuxError> {
        self.call("hit test", move |s| {
            let (windows, views) = windows_of(s)?;
            let Some(top) = sway::top_at(&views, x, y).map(|i| &views[i]) else {
                return Ok(None);
            };
            // the window whose client area is that view's
            Ok(windows
                .iter()
                .find(|w| w.area == Some(top.area) && w.pid == top.pid)
                .map(|w| w.id))
        })
    }

    fn top_of(&self, id: WinId) -> Result<WinId, LinuxError> {
        Ok(id)
    }

    fn capture(&self, area: Rect) -> Result<RgbImage, LinuxError> {
        let (r, bgrx) = self.grab(area)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause(format!(
                "the rectangle {},{} {}x{} is off the output",
                area.x, area.y, area.w, area.h
            )),
        })?;
        Ok(RgbImage::from_bgrx(r, &bgrx))
    }

    // the captured bytes hashed as they come, with no conversion to RGB first (settling
    // takes one every poll)
    fn fingerprint(&self, area: Rect) -> Result<u64, LinuxError> {
        let (_, bgrx) = self.grab(area)?.ok_or_else(|| LinuxError::Wayland {
            what: "capture".into(),
            source: cause("the rectangle is off the output"),
        })?;
        Ok(super::pixels::fingerprint_bytes(&bgrx))
    }

    fn look(&self, area: Rect) -> Result<Look, LinuxError> {
        Ok(self.grab(area)?.map(Look::from_bgrx).unwrap_or_default())
    }

    fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError> {
        self.call("click", move |s| s.click(x, y, button, count))
    }

    fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError> {
        let step = KeyStep::Chord {
            mods: mods.to_vec(),
            key,
        };
        self.call("keys", move |s| s.keys(&[step]))
    }

    // one keymap for the whole run, rather than one per key
    fn keys(&self, steps: &[KeyStep]) -> Result<(), LinuxError> {
        let steps = steps.to_vec();
        self.call("keys", move |s| s.keys(&steps))
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
