//! KWin's input over Wayland (docs/desktop.md, "Wayland"): one `org_kde_kwin_fake_input`
//! device for the display's life (bound at version 4 at most, authenticated once, then one
//! wait: the first-input race), keys as evdev codes of KWin's layout ([`super::layout`]),
//! clicks at absolute points, and pastes of what the layout cannot type through
//! `zwlr_data_control_v1` (the clipboard) and Ctrl+V. Every wait is bounded.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wayland_client::globals::{registry_queue_init, GlobalList, GlobalListContents};
use wayland_client::protocol::wl_callback::WlCallback;
use wayland_client::protocol::wl_output::WlOutput;
use wayland_client::protocol::wl_registry::WlRegistry;
use wayland_client::protocol::wl_seat::WlSeat;
use wayland_client::{
    delegate_noop, event_created_child, Connection, Dispatch, EventQueue, QueueHandle,
};
use wayland_protocols_plasma::fake_input::client::org_kde_kwin_fake_input::OrgKdeKwinFakeInput;
use wayland_protocols_plasma::screencast::v1::client::{
    zkde_screencast_stream_unstable_v1::{self as scs, ZkdeScreencastStreamUnstableV1},
    zkde_screencast_unstable_v1::{Pointer, ZkdeScreencastUnstableV1},
};
use wayland_protocols_wlr::data_control::v1::client::{
    zwlr_data_control_device_v1::{self as dcd, ZwlrDataControlDeviceV1},
    zwlr_data_control_manager_v1::ZwlrDataControlManagerV1,
    zwlr_data_control_offer_v1::ZwlrDataControlOfferV1,
    zwlr_data_control_source_v1::{self as dcs, ZwlrDataControlSourceV1},
};

use super::layout::{code, Piece};
use crate::display::choice::{compositor_of, Compositor};
use crate::display::kwin_grant::{self, FAKE_INPUT};
use crate::display::wl_client::{self, wl_err, Common, KeepsOutputSize};
use crate::error::cause;
use crate::LinuxError;

/// How long the clients get, once, to bind the keyboard and pointer the new device gave the
/// seat (docs/desktop.md, "Wayland").
const DEVICE_WAIT: Duration = Duration::from_millis(50);
/// Bound on one exchange with KWin.
const EXCHANGE: Duration = Duration::from_secs(5);
/// Bound on the wait for the focused program to ask for a paste.
const PASTE_WAIT: Duration = Duration::from_secs(2);
/// How long a pasted text gets to land once the program has read it all (it inserts the
/// text after reading it to the end, which keys sent meanwhile could overtake).
const PASTE_LAND: Duration = Duration::from_millis(150);
/// The most a pasted text gets to land, however slowly the program read it.
const PASTE_LAND_MOST: Duration = Duration::from_secs(1);
/// The MIME types a paste is offered as.
const TEXT_TYPES: [&str; 5] = [
    "text/plain;charset=utf-8",
    "UTF8_STRING",
    "text/plain",
    "TEXT",
    "STRING",
];
/// Most window streams kept open at once.
pub(crate) const MOST_STREAMS: usize = 16;
/// evdev codes of the pointer buttons.
const BTN_LEFT: u32 = 0x110;
const BTN_RIGHT: u32 = 0x111;
const BTN_MIDDLE: u32 = 0x112;

/// What the events tell.
#[derive(Default)]
pub(crate) struct State {
    output_size: Option<(u32, u32)>,
    /// The text being pasted, how many times it was handed over, and the pipes it was
    /// written to (kept until the program has read them).
    paste: String,
    served: u32,
    handed: Vec<std::fs::File>,
    /// What KWin said of the screencast asked for (`None`: nothing yet).
    cast: Option<Cast>,
}

/// What KWin said of a screencast.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cast {
    /// The PipeWire node that carries it.
    Created(u32),
    /// Refused, with KWin's reason.
    Failed(String),
    /// KWin stopped it.
    Closed,
}

/// The connection and what is bound on it.
pub(crate) struct Input {
    conn: Connection,
    queue: EventQueue<State>,
    qh: QueueHandle<State>,
    state: State,
    device: OrgKdeKwinFakeInput,
    clipboard: Option<(ZwlrDataControlManagerV1, ZwlrDataControlDeviceV1)>,
    /// The source of the last paste: kept while it is the selection.
    source: Option<ZwlrDataControlSourceV1>,
    /// KWin's screencast (granted like fake input).
    screencast: Option<ZkdeScreencastUnstableV1>,
    /// The windows' streams asked for, oldest first (KWin closes a window's when it closes).
    streams: VecDeque<ZkdeScreencastStreamUnstableV1>,
}

/// The error when KWin offers no fake input: the grant is missing.
fn no_grant() -> LinuxError {
    let exe = std::env::current_exe()
        .ok()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .unwrap_or_default();
    LinuxError::Unsupported(format!(
        "KWin does not offer {FAKE_INPUT} to this program: no .desktop file grants it to {}. \
         Install this as ~/.local/share/applications/ufo.desktop (or in \
         /usr/share/applications; `ufo doctor` checks it), its Exec= being this executable, \
         then start ufo again:\n{}",
        exe.display(),
        kwin_grant::grant_file(&exe)
    ))
}

/// What opening KWin's input found.
pub(crate) enum Opened {
    /// KWin, its input ready.
    Kwin(Box<Input>),
    /// Another compositor (opened by another display).
    Other,
}

/// The globals KWin offers a connection made by `connector` (what the display's own
/// connection will be offered: KWin filters them by the connecting process), for `ufo doctor`.
pub(crate) fn offered_via(
    path: &Path,
    connector: &dyn crate::WaylandConnector,
) -> Result<Vec<String>, LinuxError> {
    let connect_err = |source: crate::Cause| LinuxError::WaylandConnect {
        socket: path.display().to_string(),
        source,
    };
    let s = connector.connect(path).map_err(connect_err)?;
    let conn = Connection::from_socket(s.stream).map_err(|e| connect_err(Box::new(e)))?;
    let (globals, _queue) =
        registry_queue_init::<State>(&conn).map_err(|e| connect_err(Box::new(e)))?;
    drop(s.keep_until_bound);
    Ok(globals
        .contents()
        .clone_list()
        .into_iter()
        .map(|g| g.interface)
        .collect())
}

impl Input {
    /// Connect to the compositor at `path`; when it is KWin, bind its fake input (the grant
    /// missing is an error that says which file to install) and the clipboard, and give the
    /// clients their one wait. `connector` makes the connection when given (KWin then reads
    /// the executable of its process, kept alive until the globals are bound).
    pub(crate) fn open(
        path: &Path,
        connector: Option<&dyn crate::WaylandConnector>,
    ) -> Result<Opened, LinuxError> {
        let connect_err = |source: crate::Cause| LinuxError::WaylandConnect {
            socket: path.display().to_string(),
            source,
        };
        let (stream, keep) = match connector {
            Some(c) => {
                let s = c.connect(path).map_err(connect_err)?;
                (s.stream, Some(s.keep_until_bound))
            }
            None => (
                UnixStream::connect(path).map_err(|e| connect_err(Box::new(e)))?,
                None,
            ),
        };
        let conn = Connection::from_socket(stream).map_err(|e| connect_err(Box::new(e)))?;
        let (globals, queue) =
            registry_queue_init::<State>(&conn).map_err(|e| connect_err(Box::new(e)))?;
        let names: Vec<String> = globals
            .contents()
            .clone_list()
            .into_iter()
            .map(|g| g.interface)
            .collect();
        match compositor_of(&names) {
            Compositor::Kwin => {}
            Compositor::Wlroots | Compositor::Mutter | Compositor::Other { .. } => {
                return Ok(Opened::Other)
            }
        }
        if !names.iter().any(|n| n == FAKE_INPUT) {
            return Err(no_grant());
        }
        let mut input = Input::bind(conn, queue, &globals, connect_err)?;
        input.sync()?;
        // the globals are bound: KWin has read what it reads of the connecting process
        drop(keep);
        if input.state.output_size.is_none() {
            return Err(LinuxError::WaylandConnect {
                socket: path.display().to_string(),
                source: cause("KWin describes no output mode; is an output enabled?"),
            });
        }
        std::thread::sleep(DEVICE_WAIT);
        Ok(Opened::Kwin(Box::new(input)))
    }

    fn bind(
        conn: Connection,
        queue: EventQueue<State>,
        globals: &GlobalList,
        connect_err: impl Fn(crate::Cause) -> LinuxError,
    ) -> Result<Input, LinuxError> {
        let qh = queue.handle();
        let bind_err = |e: wayland_client::globals::BindError| connect_err(Box::new(e));
        let seat: WlSeat = globals.bind(&qh, 1..=7, ()).map_err(bind_err)?;
        let _output: WlOutput = globals.bind(&qh, 1..=4, ()).map_err(bind_err)?;
        // version 5 only adds `destroy`; KWin 5.27 offers 4
        let device: OrgKdeKwinFakeInput = globals.bind(&qh, 1..=4, ()).map_err(bind_err)?;
        device.authenticate(
            "ufo".into(),
            "ufo types and clicks in applications for its user".into(),
        );
        let clipboard = globals
            .bind::<ZwlrDataControlManagerV1, _, _>(&qh, 1..=2, ())
            .ok()
            .map(|m| {
                let d = m.get_data_device(&seat, &qh, ());
                (m, d)
            });
        // version 1 has what ufo asks (stream_window); KWin 5.27 offers 3
        let screencast = globals
            .bind::<ZkdeScreencastUnstableV1, _, _>(&qh, 1..=3, ())
            .ok();
        Ok(Input {
            conn,
            queue,
            qh,
            state: State::default(),
            device,
            clipboard,
            source: None,
            screencast,
            streams: VecDeque::new(),
        })
    }

    /// Ask KWin to stream the window `uuid` (its own pixels, without the pointer) and wait,
    /// bounded, for the PipeWire node that carries it (`Ok(None)`: KWin does not offer its
    /// screencast to this program: no grant). At most [`MOST_STREAMS`] are kept: asking for
    /// one more closes the oldest.
    pub(crate) fn stream_window(&mut self, uuid: &str) -> Result<Option<u32>, LinuxError> {
        let Some(manager) = &self.screencast else {
            return Ok(None);
        };
        self.state.cast = None;
        let stream = manager.stream_window(uuid.to_string(), Pointer::Hidden.into(), &self.qh, ());
        self.streams.push_back(stream);
        if self.streams.len() > MOST_STREAMS {
            if let Some(old) = self.streams.pop_front() {
                old.close();
            }
        }
        self.dispatch_until("screencast", Instant::now() + EXCHANGE, |s| {
            s.cast.is_some()
        })?;
        let what = || format!("screencast of window {uuid}");
        match self.state.cast.clone() {
            Some(Cast::Created(node)) => Ok(Some(node)),
            Some(Cast::Failed(why)) => Err(LinuxError::Wayland {
                what: what(),
                source: cause(format!("KWin refused it: {why}")),
            }),
            Some(Cast::Closed) | None => Err(LinuxError::Wayland {
                what: what(),
                source: cause("KWin closed it at once"),
            }),
        }
    }

    /// Whether KWin offers its screencast to this program (the grant lists it).
    pub(crate) fn offers_screencast(&self) -> bool {
        self.screencast.is_some()
    }

    /// The output's size.
    pub(crate) fn output_size(&self) -> (u32, u32) {
        self.state.output_size.unwrap_or((0, 0))
    }

    /// Read what KWin sent without waiting, and handle it.
    pub(crate) fn pump(&mut self) -> Result<(), LinuxError> {
        self.conn.flush().map_err(wl_err("flush"))?;
        if let Some(guard) = self.queue.prepare_read() {
            match guard.read() {
                Ok(_) => {}
                Err(wayland_client::backend::WaylandError::Io(e))
                    if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(wl_err("read")(e)),
            }
        }
        self.dispatch("dispatch")
    }

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
            ("KWin", what),
            deadline,
            done,
        )
    }

    /// A round trip: returns once KWin has handled every request sent so far.
    pub(crate) fn sync(&mut self) -> Result<(), LinuxError> {
        let done = Arc::new(AtomicBool::new(false));
        self.conn.display().sync(&self.qh, Arc::clone(&done));
        self.dispatch_until("round trip", Instant::now() + EXCHANGE, |_| {
            done.load(Ordering::Acquire)
        })
    }

    fn press(&self, code: u32, down: bool) {
        self.device.keyboard_key(code, u32::from(down));
    }

    /// Send one planned piece. For a paste, how it went: the program inserts the text a
    /// moment after reading it all, and keys sent meanwhile could overtake it, so the caller
    /// waits for [`time_to_land`].
    pub(crate) fn send(&mut self, p: &Piece) -> Result<Option<Pasted>, LinuxError> {
        match p {
            Piece::Key { mods, key } => {
                for m in mods {
                    self.press(*m, true);
                }
                if key.shift {
                    self.press(code::SHIFT, true);
                }
                self.press(key.code, true);
                self.press(key.code, false);
                if key.shift {
                    self.press(code::SHIFT, false);
                }
                for m in mods.iter().rev() {
                    self.press(*m, false);
                }
                Ok(None)
            }
            Piece::Paste(text) => self.paste(text).map(Some),
        }
    }

    /// Paste `text` as a person would: make it the clipboard, press Ctrl+V, hand it over
    /// when the focused program asks (bounded). The text stays the clipboard afterwards.
    fn paste(&mut self, text: &str) -> Result<Pasted, LinuxError> {
        let Some((manager, device)) = &self.clipboard else {
            return Err(LinuxError::Unsupported(
                "KWin offers no zwlr_data_control_manager_v1, so characters its keyboard \
                 layout lacks cannot be typed; set the control's text through its actions"
                    .into(),
            ));
        };
        let source = manager.create_data_source(&self.qh, ());
        for t in TEXT_TYPES {
            source.offer(t.into());
        }
        device.set_selection(Some(&source));
        if let Some(old) = self.source.replace(source) {
            old.destroy();
        }
        self.state.paste = text.to_string();
        self.state.served = 0;
        // the focused program has the new selection before it sees Ctrl+V
        self.sync()?;
        self.press(code::CTRL, true);
        self.press(code::V, true);
        self.press(code::V, false);
        self.press(code::CTRL, false);
        let asked = Instant::now();
        let deadline = asked + PASTE_WAIT;
        self.dispatch_until("a paste to be asked for", deadline, |s| s.served > 0)
            .map_err(|_| {
                LinuxError::ActionFailed(format!(
                    "nothing asked for the pasted text within {} ms: the focused control may \
                     not take pastes (KWin types the characters its layout lacks by pasting \
                     them)",
                    PASTE_WAIT.as_millis()
                ))
            })?;
        let closed = self.close_when_read(deadline);
        Ok(Pasted {
            closed,
            took: closed - asked,
        })
    }

    /// Wait (bounded) until the program has read the pasted text out of the pipe and close
    /// the pipe (its end of file): when that was.
    fn close_when_read(&mut self, deadline: Instant) -> Instant {
        for f in std::mem::take(&mut self.state.handed) {
            while Instant::now() < deadline
                && rustix::io::ioctl_fionread(&f).is_ok_and(|unread| unread > 0)
            {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Instant::now()
    }
}

/// A paste the program has read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pasted {
    /// When its pipe was closed (the program had read it all).
    pub(crate) closed: Instant,
    /// How long the program took from Ctrl+V to reading it all: how quickly it reacts now.
    pub(crate) took: Duration,
}

/// How long after its pipe closed a paste has landed: [`PASTE_LAND`], or as long as the
/// program took to ask for it and read it when that was longer (a loaded program
/// inserts late as it reads late: at load 11 to 16 on 2 cores gnome-text-editor took 76 to
/// 103 ms at the median to read a line, 369 ms at most, and a key sent 150 ms after the end
/// of file overtook a pasted line in 4 of 11 runs of the typing test), [`PASTE_LAND_MOST`] at
/// most.
pub(crate) fn time_to_land(p: Pasted) -> Duration {
    p.took.clamp(PASTE_LAND, PASTE_LAND_MOST)
}

impl Input {
    /// Press and release a pointer button `count` times at a screen point (X button
    /// numbers: 1 left, 2 middle, 3 right, 4 and 5 the wheel).
    pub(crate) fn click(
        &mut self,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        let (w, h) = self.output_size();
        let px = f64::from(x.clamp(0, w.max(1) as i32 - 1));
        let py = f64::from(y.clamp(0, h.max(1) as i32 - 1));
        self.device.pointer_motion_absolute(px, py);
        for _ in 0..count {
            match button {
                4 | 5 => {
                    let sign = if button == 4 { -1.0 } else { 1.0 };
                    // axis 0: vertical; 15 is one wheel step
                    self.device.axis(0, 15.0 * sign);
                }
                _ => {
                    let b = match button {
                        2 => BTN_MIDDLE,
                        3 => BTN_RIGHT,
                        _ => BTN_LEFT,
                    };
                    self.device.button(b, 1);
                    self.device.button(b, 0);
                }
            }
        }
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

impl Dispatch<ZwlrDataControlDeviceV1, ()> for State {
    // others' clipboards are not read: each offer is let go once it is the selection
    fn event(
        _: &mut Self,
        _: &ZwlrDataControlDeviceV1,
        ev: dcd::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        match ev {
            dcd::Event::Selection { id: Some(offer) }
            | dcd::Event::PrimarySelection { id: Some(offer) } => offer.destroy(),
            _ => {}
        }
    }

    event_created_child!(State, ZwlrDataControlDeviceV1, [
        dcd::EVT_DATA_OFFER_OPCODE => (ZwlrDataControlOfferV1, ()),
    ]);
}

impl Dispatch<ZwlrDataControlSourceV1, ()> for State {
    fn event(
        s: &mut Self,
        source: &ZwlrDataControlSourceV1,
        ev: dcs::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        match ev {
            dcs::Event::Send { fd, .. } => {
                // the text fits the pipe (layout::PASTE_MOST): the write does not wait; the
                // reader reads to the end, which comes when the file is dropped (`Input::paste`)
                let mut f = std::fs::File::from(fd);
                if f.write_all(s.paste.as_bytes()).is_ok() {
                    s.served += 1;
                    s.handed.push(f);
                }
            }
            dcs::Event::Cancelled => source.destroy(),
            _ => {}
        }
    }
}

delegate_noop!(State: ignore WlSeat);
delegate_noop!(State: OrgKdeKwinFakeInput);
delegate_noop!(State: ZkdeScreencastUnstableV1);

impl Dispatch<ZkdeScreencastStreamUnstableV1, ()> for State {
    fn event(
        state: &mut Self,
        _: &ZkdeScreencastStreamUnstableV1,
        event: scs::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        state.cast = match event {
            scs::Event::Created { node } => Some(Cast::Created(node)),
            scs::Event::Failed { error } => Some(Cast::Failed(error)),
            scs::Event::Closed => Some(Cast::Closed),
            _ => return,
        };
    }
}
delegate_noop!(State: ignore ZwlrDataControlOfferV1);
delegate_noop!(State: ZwlrDataControlManagerV1);

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_paste_gets_its_time_or_as_long_as_the_program_took_to_read_it() {
        let after = |took| {
            time_to_land(Pasted {
                closed: Instant::now(),
                took: ms(took),
            })
        };
        // a quick program: the fixed time
        assert_eq!(after(3), ms(150));
        // a slow one: as long as it took
        assert_eq!(after(369), ms(369));
        // bounded
        assert_eq!(after(5_000), ms(1_000));
    }
}
