//! The one Wayland connection of a wlroots display, owned by its thread (`mod.rs` sends it
//! jobs): the globals bound once, the virtual keyboard and pointer made once (the first-input
//! race, docs/desktop.md "Wayland"), the toplevels as the compositor reports them, captures
//! through screencopy into a memfd read back with `pread`, and every wait bounded by a
//! deadline (no blocking dispatch).

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wayland_client::backend::ObjectId;
use wayland_client::globals::{registry_queue_init, GlobalList, GlobalListContents};
use wayland_client::protocol::wl_buffer::WlBuffer;
use wayland_client::protocol::wl_callback::WlCallback;
use wayland_client::protocol::wl_keyboard::KeyState;
use wayland_client::protocol::wl_output::WlOutput;
use wayland_client::protocol::wl_pointer::{Axis, AxisSource, ButtonState};
use wayland_client::protocol::wl_registry::WlRegistry;
use wayland_client::protocol::wl_seat::WlSeat;
use wayland_client::protocol::wl_shm::{self, WlShm};
use wayland_client::protocol::wl_shm_pool::WlShmPool;
use wayland_client::{
    delegate_noop, event_created_child, Connection, Dispatch, EventQueue, Proxy, QueueHandle,
};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::{
    zwp_virtual_keyboard_manager_v1::ZwpVirtualKeyboardManagerV1,
    zwp_virtual_keyboard_v1::ZwpVirtualKeyboardV1,
};
use wayland_protocols_wlr::foreign_toplevel::v1::client::{
    zwlr_foreign_toplevel_handle_v1::{self as fth, ZwlrForeignToplevelHandleV1},
    zwlr_foreign_toplevel_manager_v1::{self as ftm, ZwlrForeignToplevelManagerV1},
};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1::{self as scf, ZwlrScreencopyFrameV1},
    zwlr_screencopy_manager_v1::ZwlrScreencopyManagerV1,
};
use wayland_protocols_wlr::virtual_pointer::v1::client::{
    zwlr_virtual_pointer_manager_v1::ZwlrVirtualPointerManagerV1,
    zwlr_virtual_pointer_v1::ZwlrVirtualPointerV1,
};

use super::keymap::{self, Keymap};
use super::shm::{crop, io_err, memfd_with, to_bgrx, Cut, Shot};
use super::sway::Ipc;
use super::watch::{Damage, Watch, WatchFrame};
use crate::display::choice::{compositor_of, Compositor};
use crate::display::keys::KeyStep;
use crate::display::wl_client::{self, wl_err, Common, KeepsOutputSize};
use crate::display::WinId;
use crate::error::cause;
use crate::LinuxError;
use ufo_core::Rect;

/// How long the clients get, once, to bind the keyboard and pointer the new devices gave the
/// seat (measured: 2 ms was enough; docs/desktop.md, "Wayland").
const DEVICE_WAIT: Duration = Duration::from_millis(50);
/// Bound on one exchange with the compositor (a round trip, a capture).
pub(crate) const EXCHANGE: Duration = Duration::from_secs(5);
/// XKB v1, the keymap format of `zwp_virtual_keyboard_v1.keymap`.
const KEYMAP_XKB_V1: u32 = 1;
/// evdev codes of the pointer buttons (X buttons 1, 2, 3).
const BTN_LEFT: u32 = 0x110;
const BTN_RIGHT: u32 = 0x111;
const BTN_MIDDLE: u32 = 0x112;

/// A toplevel as the compositor last described it.
#[derive(Debug, Clone)]
pub(crate) struct Toplevel {
    /// Our number for it (a window id), given in the order the toplevels appeared.
    pub number: u32,
    pub title: String,
    pub app_id: String,
    pub activated: bool,
    /// The toplevel it belongs to (a dialog's parent), by protocol object.
    pub parent: Option<ObjectId>,
    pub handle: ZwlrForeignToplevelHandleV1,
}

/// One screencopy frame's progress.
#[derive(Debug, Default)]
struct Frame {
    format: Option<wl_shm::Format>,
    width: u32,
    height: u32,
    stride: u32,
    buffer_done: bool,
    y_invert: bool,
    ready: bool,
    failed: bool,
}

/// What the events tell.
#[derive(Default)]
pub(crate) struct State {
    output_size: Option<(u32, u32)>,
    pub toplevels: HashMap<ObjectId, Toplevel>,
    next_number: u32,
    frame: Frame,
    /// the copies with damage that feed the change watch (`watch.rs`), when the compositor
    /// offers them
    pub damage: Option<Damage>,
}

/// The connection and everything bound on it.
pub(crate) struct Session {
    conn: Connection,
    queue: EventQueue<State>,
    qh: QueueHandle<State>,
    pub state: State,
    seat: WlSeat,
    output: WlOutput,
    shm: WlShm,
    screencopy: ZwlrScreencopyManagerV1,
    keyboard: ZwpVirtualKeyboardV1,
    pointer: ZwlrVirtualPointerV1,
    pointer_version: u32,
    /// The keymap the keyboard has now.
    keymap: Option<Keymap>,
    pub ipc: Option<Ipc>,
    t0: Instant,
}

/// Where the Wayland socket is: the given path, or `WAYLAND_DISPLAY` (a name in
/// `XDG_RUNTIME_DIR`, or a path), `wayland-0` when unset.
pub(crate) fn socket_path(given: Option<&Path>) -> Result<std::path::PathBuf, LinuxError> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let name = std::env::var("WAYLAND_DISPLAY").unwrap_or_else(|_| "wayland-0".into());
    if name.starts_with('/') {
        return Ok(name.into());
    }
    let dir = std::env::var_os("XDG_RUNTIME_DIR").ok_or_else(|| LinuxError::WaylandConnect {
        socket: name.clone(),
        source: cause("XDG_RUNTIME_DIR is not set, so the socket cannot be found"),
    })?;
    Ok(Path::new(&dir).join(name))
}

/// Connect to the socket: the connection, the globals offered, and the compositor's uid and
/// pid (`SO_PEERCRED`).
type Connected = (
    Connection,
    GlobalList,
    EventQueue<State>,
    Option<(u32, u32)>,
);

fn connect(path: &Path) -> Result<Connected, LinuxError> {
    let connect_err = |source: crate::Cause| LinuxError::WaylandConnect {
        socket: path.display().to_string(),
        source,
    };
    let stream = UnixStream::connect(path).map_err(|e| connect_err(Box::new(e)))?;
    let peer = rustix::net::sockopt::socket_peercred(&stream)
        .ok()
        .map(|c| (c.uid.as_raw(), c.pid.as_raw_nonzero().get() as u32));
    let conn = Connection::from_socket(stream).map_err(|e| connect_err(Box::new(e)))?;
    let (globals, queue) =
        registry_queue_init::<State>(&conn).map_err(|e| connect_err(Box::new(e)))?;
    Ok((conn, globals, queue, peer))
}

/// The compositor's uid and pid, from its socket.
pub(crate) type Peer = Option<(u32, u32)>;

/// What a compositor offers (`ufo doctor`): the interface names of its globals, and its
/// uid and pid.
pub(crate) fn offered(path: &Path) -> Result<(Vec<String>, Peer), LinuxError> {
    let (_conn, globals, _queue, peer) = connect(path)?;
    Ok((interfaces(&globals), peer))
}

fn interfaces(globals: &GlobalList) -> Vec<String> {
    globals
        .contents()
        .clone_list()
        .into_iter()
        .map(|g| g.interface)
        .collect()
}

impl Session {
    /// Connect, check the compositor offers the wlroots protocols, bind them, make the two
    /// devices and give the clients their one wait.
    pub(crate) fn open(socket: Option<&Path>) -> Result<Session, LinuxError> {
        let path = socket_path(socket)?;
        let connect_err = |source: crate::Cause| LinuxError::WaylandConnect {
            socket: path.display().to_string(),
            source,
        };
        let (conn, globals, queue, peer) = connect(&path)?;
        match compositor_of(&interfaces(&globals)) {
            Compositor::Wlroots => {}
            other => return Err(connect_err(cause(other.unsupported_reason()))),
        }
        let mut s = Session::bind(conn, queue, &globals, connect_err)?;
        s.ipc = Ipc::find(&path, peer);
        s.sync()?;
        if s.state.output_size.is_none() {
            return Err(LinuxError::WaylandConnect {
                socket: path.display().to_string(),
                source: cause("the compositor describes no output mode; is an output enabled?"),
            });
        }
        std::thread::sleep(DEVICE_WAIT);
        Ok(s)
    }

    fn bind(
        conn: Connection,
        queue: EventQueue<State>,
        globals: &GlobalList,
        connect_err: impl Fn(crate::Cause) -> LinuxError,
    ) -> Result<Session, LinuxError> {
        let qh = queue.handle();
        let bind_err = |e: wayland_client::globals::BindError| connect_err(Box::new(e));
        let seat: WlSeat = globals.bind(&qh, 1..=7, ()).map_err(bind_err)?;
        let output: WlOutput = globals.bind(&qh, 1..=4, ()).map_err(bind_err)?;
        let shm: WlShm = globals.bind(&qh, 1..=1, ()).map_err(bind_err)?;
        let screencopy: ZwlrScreencopyManagerV1 = globals.bind(&qh, 1..=3, ()).map_err(bind_err)?;
        let _toplevels: ZwlrForeignToplevelManagerV1 =
            globals.bind(&qh, 1..=3, ()).map_err(bind_err)?;
        let vkm: ZwpVirtualKeyboardManagerV1 = globals.bind(&qh, 1..=1, ()).map_err(bind_err)?;
        let vpm: ZwlrVirtualPointerManagerV1 = globals.bind(&qh, 1..=2, ()).map_err(bind_err)?;
        // the one keyboard and pointer of the display's life: made before anything is typed
        let keyboard = vkm.create_virtual_keyboard(&seat, &qh, ());
        let pointer = vpm.create_virtual_pointer(Some(&seat), &qh, ());
        let pointer_version = pointer.version();
        let mut state = State::default();
        // copies with damage came with screencopy version 2
        if screencopy.version() >= 2 {
            state.damage = Some(Damage::start(
                Arc::new(Watch::default()),
                screencopy.clone(),
                output.clone(),
                shm.clone(),
                &qh,
            ));
        }
        let mut s = Session {
            conn,
            queue,
            qh,
            state,
            seat,
            output,
            shm,
            screencopy,
            keyboard,
            pointer,
            pointer_version,
            keymap: None,
            ipc: None,
            t0: Instant::now(),
        };
        // a keyboard without a keymap is no keyboard to the clients: give it one at once
        let first = Keymap::for_steps(&[])?;
        s.upload(&first)?;
        s.keymap = Some(first);
        Ok(s)
    }

    /// The output's size (its current mode).
    pub(crate) fn output_size(&self) -> (u32, u32) {
        self.state.output_size.unwrap_or((0, 0))
    }

    fn millis(&self) -> u32 {
        (self.t0.elapsed().as_millis() & 0xffff_ffff) as u32
    }

    /// Read what the compositor sent without waiting, and handle it.
    pub(crate) fn pump(&mut self) -> Result<(), LinuxError> {
        self.wait(None, Duration::ZERO)
    }

    /// Handle the events already read.
    fn dispatch(&mut self, what: &str) -> Result<(), LinuxError> {
        wl_client::dispatch(&mut self.queue, &mut self.state, what)
    }

    /// Handle events until `done` holds, waiting at most until `deadline`.
    fn dispatch_until(
        &mut self,
        what: &str,
        deadline: Instant,
        done: impl Fn(&State) -> bool,
    ) -> Result<(), LinuxError> {
        wl_client::dispatch_until(
            &self.conn,
            &mut self.queue,
            &mut self.state,
            ("the Wayland compositor", what),
            deadline,
            done,
        )
    }

    /// Wait at most `timeout` for the compositor's events or for `wake` to become readable,
    /// and handle the events that came: the idle step of the connection's thread, so that the
    /// change watch hears of a redraw when it happens.
    pub(crate) fn wait(
        &mut self,
        wake: Option<std::os::fd::BorrowedFd<'_>>,
        timeout: Duration,
    ) -> Result<(), LinuxError> {
        self.dispatch("dispatch")?;
        self.conn.flush().map_err(wl_err("flush"))?;
        let Some(guard) = self.queue.prepare_read() else {
            return Ok(());
        };
        let timeout = rustix::event::Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        let fd = guard.connection_fd();
        let mut fds = vec![rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN | rustix::event::PollFlags::ERR,
        )];
        if let Some(w) = wake.as_ref() {
            fds.push(rustix::event::PollFd::new(w, rustix::event::PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(io_err("wait for the compositor")(e.into())),
        }
        if fds[0].revents().is_empty() {
            drop(guard);
        } else {
            match guard.read() {
                Ok(_) => {}
                Err(wayland_client::backend::WaylandError::Io(e))
                    if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(wl_err("read")(e)),
            }
        }
        self.dispatch("dispatch")?;
        self.conn.flush().map_err(wl_err("flush"))
    }

    /// The change watch, when the compositor copies with damage.
    pub(crate) fn change_watch(&self) -> Option<Arc<Watch>> {
        self.state.damage.as_ref().map(|d| Arc::clone(d.watch()))
    }

    /// `area` of the screen now (clipped to it; `None` when off the output): as the last
    /// redraw left it, when the change watch has one (after a round trip, every redraw the
    /// compositor made before it has been heard of, and each was copied as it was drawn);
    /// else cut from a capture, which waits for the next frame.
    pub(crate) fn seen(&mut self, area: Rect) -> Result<Option<Cut>, LinuxError> {
        self.sync()?;
        match self.state.damage.as_ref().and_then(|d| d.latest(area)) {
            Some(seen) => seen,
            None => Ok(crop(&self.capture()?, area)),
        }
    }

    /// A round trip: returns once the compositor has handled every request sent so far.
    pub(crate) fn sync(&mut self) -> Result<(), LinuxError> {
        let done = Arc::new(AtomicBool::new(false));
        self.conn.display().sync(&self.qh, Arc::clone(&done));
        self.dispatch_until("round trip", Instant::now() + EXCHANGE, |_| {
            done.load(Ordering::Acquire)
        })
    }

    /// Give the keyboard a keymap (a memfd, no `unsafe`; the size counts the final NUL).
    fn upload(&mut self, km: &Keymap) -> Result<(), LinuxError> {
        let bytes = km.bytes();
        let file = memfd_with("ufo-keymap", &bytes)?;
        self.keyboard
            .keymap(KEYMAP_XKB_V1, file.as_fd(), bytes.len() as u32);
        Ok(())
    }

    /// Type key steps: each run that fits one keymap gets a keymap holding its keysyms
    /// (unless the keyboard's holds them already), then its keys, the modifiers held by
    /// their modifier state; one round trip at the end.
    pub(crate) fn keys(&mut self, steps: &[KeyStep]) -> Result<(), LinuxError> {
        for run in keymap::chunks(steps) {
            if !self.keymap.as_ref().is_some_and(|k| k.holds(run)) {
                let km = Keymap::for_steps(run)?;
                self.upload(&km)?;
                // the clients read the new keymap before the keys that need it
                self.sync()?;
                self.keymap = Some(km);
            }
            let Some(km) = self.keymap.clone() else {
                continue;
            };
            for KeyStep::Chord { mods, key } in run {
                self.chord(&km, mods, *key)?;
            }
        }
        self.sync()
    }

    fn chord(&mut self, km: &Keymap, mods: &[u32], key: u32) -> Result<(), LinuxError> {
        let code = |k: u32| {
            km.code(k).ok_or_else(|| {
                LinuxError::ActionFailed(format!("keysym {k:#x} is not in the keymap just sent"))
            })
        };
        let mut held = 0u32;
        for m in mods {
            self.keyboard
                .key(self.millis(), code(*m)?, KeyState::Pressed.into());
            held |= keymap::modifier_bit(*m).unwrap_or(0);
            // the compositor takes the modifier state from this event, not from the keys
            self.keyboard.modifiers(held, 0, 0, 0);
        }
        let k = code(key)?;
        self.keyboard
            .key(self.millis(), k, KeyState::Pressed.into());
        self.keyboard
            .key(self.millis(), k, KeyState::Released.into());
        for m in mods.iter().rev() {
            self.keyboard
                .key(self.millis(), code(*m)?, KeyState::Released.into());
            held &= !keymap::modifier_bit(*m).unwrap_or(0);
            self.keyboard.modifiers(held, 0, 0, 0);
        }
        Ok(())
    }

    /// Press and release a pointer button `count` times at a point of the output (X button
    /// numbers: 1 left, 2 middle, 3 right, 4 and 5 the wheel).
    pub(crate) fn click(
        &mut self,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        let (w, h) = self.output_size();
        let (w, h) = (w.max(1), h.max(1));
        let (px, py) = (
            x.clamp(0, w as i32 - 1) as u32,
            y.clamp(0, h as i32 - 1) as u32,
        );
        let t = self.millis();
        self.pointer.motion_absolute(t, px, py, w, h);
        self.pointer.frame();
        for _ in 0..count {
            let t = self.millis();
            match button {
                4 | 5 => {
                    let sign = if button == 4 { -1.0 } else { 1.0 };
                    self.pointer.axis_source(AxisSource::Wheel);
                    if self.pointer_version >= 2 {
                        self.pointer.axis_discrete(
                            t,
                            Axis::VerticalScroll,
                            15.0 * sign,
                            sign as i32,
                        );
                    } else {
                        self.pointer.axis(t, Axis::VerticalScroll, 15.0 * sign);
                    }
                    self.pointer.frame();
                }
                _ => {
                    let b = match button {
                        2 => BTN_MIDDLE,
                        3 => BTN_RIGHT,
                        _ => BTN_LEFT,
                    };
                    self.pointer.button(t, b, ButtonState::Pressed);
                    self.pointer.frame();
                    self.pointer.button(self.millis(), b, ButtonState::Released);
                    self.pointer.frame();
                }
            }
        }
        self.sync()
    }

    /// Capture the whole output (screencopy into a memfd, read back with `pread`).
    pub(crate) fn capture(&mut self) -> Result<Shot, LinuxError> {
        let deadline = Instant::now() + EXCHANGE;
        self.state.frame = Frame::default();
        let frame = self
            .screencopy
            .capture_output(0, &self.output, &self.qh, ());
        // version 3 ends the buffer offers with `buffer_done`; before it, `buffer` is all
        let v3 = self.screencopy.version() >= 3;
        let got = self.dispatch_until("screencopy buffer", deadline, |s| {
            s.frame.buffer_done || s.frame.failed || (!v3 && s.frame.format.is_some())
        });
        let shot = got.and_then(|()| self.copy_frame(&frame, deadline));
        frame.destroy();
        shot
    }

    fn copy_frame(
        &mut self,
        frame: &ZwlrScreencopyFrameV1,
        deadline: Instant,
    ) -> Result<Shot, LinuxError> {
        let fr = &self.state.frame;
        let format = match (fr.failed, fr.format) {
            (false, Some(f)) => f,
            _ => {
                return Err(LinuxError::Wayland {
                    what: "screencopy".into(),
                    source: cause("the compositor offers no shared-memory buffer for the output"),
                })
            }
        };
        let (w, h, stride) = (fr.width, fr.height, fr.stride);
        let size = u64::from(stride) * u64::from(h);
        let file = memfd_with("ufo-shot", &[])?;
        file.set_len(size).map_err(io_err("screencopy buffer"))?;
        let pool: WlShmPool = self
            .shm
            .create_pool(file.as_fd(), size as i32, &self.qh, ());
        let buffer: WlBuffer =
            pool.create_buffer(0, w as i32, h as i32, stride as i32, format, &self.qh, ());
        frame.copy(&buffer);
        let done = self.dispatch_until("screencopy", deadline, |s| s.frame.ready || s.frame.failed);
        buffer.destroy();
        pool.destroy();
        done?;
        if self.state.frame.failed {
            return Err(LinuxError::Wayland {
                what: "screencopy".into(),
                source: cause("the compositor could not copy the output"),
            });
        }
        let mut raw = vec![0u8; size as usize];
        file.read_exact_at(&mut raw, 0)
            .map_err(io_err("read the screencopy buffer"))?;
        let bgrx = to_bgrx(&raw, w, h, stride, format, self.state.frame.y_invert)?;
        Ok(Shot {
            width: w,
            height: h,
            bgrx,
        })
    }

    /// Ask the compositor to activate a toplevel (raise and focus it).
    pub(crate) fn activate(
        &mut self,
        handle: &ZwlrForeignToplevelHandleV1,
    ) -> Result<(), LinuxError> {
        handle.activate(&self.seat);
        self.sync()
    }

    /// Ask a toplevel to close.
    pub(crate) fn close(&mut self, handle: &ZwlrForeignToplevelHandleV1) -> Result<(), LinuxError> {
        handle.close();
        self.sync()
    }
}

wayland_client::delegate_dispatch!(State: [WlRegistry: GlobalListContents] => Common);
wayland_client::delegate_dispatch!(State: [WlCallback: Arc<AtomicBool>] => Common);
wayland_client::delegate_dispatch!(State: [WlOutput: ()] => Common);

impl KeepsOutputSize for State {
    fn output_size_mut(&mut self) -> &mut Option<(u32, u32)> {
        &mut self.output_size
    }
}

impl Dispatch<ZwlrForeignToplevelManagerV1, ()> for State {
    fn event(
        _: &mut Self,
        _: &ZwlrForeignToplevelManagerV1,
        _: ftm::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
    }

    event_created_child!(State, ZwlrForeignToplevelManagerV1, [
        ftm::EVT_TOPLEVEL_OPCODE => (ZwlrForeignToplevelHandleV1, ()),
    ]);
}

impl Dispatch<ZwlrForeignToplevelHandleV1, ()> for State {
    fn event(
        s: &mut Self,
        h: &ZwlrForeignToplevelHandleV1,
        ev: fth::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        if let fth::Event::Closed = ev {
            let gone = s.toplevels.remove(&h.id()).map(|t| WinId(t.number));
            if let (Some(d), Some(g)) = (s.damage.as_ref(), gone) {
                d.watch().window(Some(g));
            }
            h.destroy();
            return;
        }
        let next = &mut s.next_number;
        let damage = &s.damage;
        let t = s.toplevels.entry(h.id()).or_insert_with(|| {
            *next += 1;
            if let Some(d) = damage {
                d.watch().window(None);
            }
            Toplevel {
                number: *next,
                title: String::new(),
                app_id: String::new(),
                activated: false,
                parent: None,
                handle: h.clone(),
            }
        });
        match ev {
            fth::Event::Title { title } => t.title = title,
            fth::Event::AppId { app_id } => t.app_id = app_id,
            fth::Event::State { state } => {
                // an array of native-endian u32 states
                t.activated = state.chunks_exact(4).any(|b| {
                    u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == fth::State::Activated as u32
                });
            }
            fth::Event::Parent { parent } => t.parent = parent.map(|p| p.id()),
            _ => {}
        }
    }
}

impl Dispatch<ZwlrScreencopyFrameV1, ()> for State {
    fn event(
        s: &mut Self,
        _: &ZwlrScreencopyFrameV1,
        ev: scf::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let f = &mut s.frame;
        match ev {
            scf::Event::Buffer {
                format,
                width,
                height,
                stride,
            } => {
                f.format = format.into_result().ok();
                f.width = width;
                f.height = height;
                f.stride = stride;
            }
            scf::Event::BufferDone => f.buffer_done = true,
            scf::Event::Flags { flags } => {
                f.y_invert = flags
                    .into_result()
                    .is_ok_and(|fl| fl.contains(scf::Flags::YInvert));
            }
            scf::Event::Ready { .. } => f.ready = true,
            scf::Event::Failed => f.failed = true,
            _ => {}
        }
    }
}

impl Dispatch<ZwlrScreencopyFrameV1, WatchFrame> for State {
    fn event(
        s: &mut Self,
        frame: &ZwlrScreencopyFrameV1,
        ev: scf::Event,
        _: &WatchFrame,
        _: &Connection,
        qh: &QueueHandle<Self>,
    ) {
        match s.damage.as_mut() {
            Some(d) => d.on_frame(frame, ev, qh),
            None => frame.destroy(),
        }
    }
}

delegate_noop!(State: ignore WlSeat);
delegate_noop!(State: ignore WlShm);
delegate_noop!(State: ignore WlBuffer);
delegate_noop!(State: WlShmPool);
delegate_noop!(State: ZwpVirtualKeyboardManagerV1);
delegate_noop!(State: ZwpVirtualKeyboardV1);
delegate_noop!(State: ZwlrVirtualPointerManagerV1);
delegate_noop!(State: ZwlrVirtualPointerV1);
delegate_noop!(State: ZwlrScreencopyManagerV1);
