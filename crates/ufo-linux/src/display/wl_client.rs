//! What ufo's two Wayland clients (the wlroots session and KWin's input) answer alike: the
//! registry's events (globals are bound once, at start), a sync callback's end, and the
//! output's current size. Each client's state delegates these to [`Common`] with
//! `wayland_client::delegate_dispatch!` and keeps the size where [`KeepsOutputSize`] says.
//! Both wait for their compositor the same way too: [`dispatch_until`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use wayland_client::backend::WaylandError;
use wayland_client::globals::GlobalListContents;
use wayland_client::protocol::wl_callback::{self, WlCallback};
use wayland_client::protocol::wl_output::{self, WlOutput};
use wayland_client::protocol::wl_registry::{self, WlRegistry};
use wayland_client::{Connection, Dispatch, EventQueue, QueueHandle, WEnum};

use crate::LinuxError;

/// The dispatcher of the events every ufo Wayland client handles the same way.
pub(crate) struct Common;

/// A client state that keeps the output's size (the current mode; the first mode until one
/// says it is current).
pub(crate) trait KeepsOutputSize {
    /// Where the size is kept.
    fn output_size_mut(&mut self) -> &mut Option<(u32, u32)>;
}

impl<D> Dispatch<WlRegistry, GlobalListContents, D> for Common
where
    D: Dispatch<WlRegistry, GlobalListContents>,
{
    // globals that come or go later are not used: what ufo needs is bound at start
    fn event(
        _: &mut D,
        _: &WlRegistry,
        _: wl_registry::Event,
        _: &GlobalListContents,
        _: &Connection,
        _: &QueueHandle<D>,
    ) {
    }
}

impl<D> Dispatch<WlCallback, Arc<AtomicBool>, D> for Common
where
    D: Dispatch<WlCallback, Arc<AtomicBool>>,
{
    fn event(
        _: &mut D,
        _: &WlCallback,
        ev: wl_callback::Event,
        done: &Arc<AtomicBool>,
        _: &Connection,
        _: &QueueHandle<D>,
    ) {
        if let wl_callback::Event::Done { .. } = ev {
            done.store(true, Ordering::Release);
        }
    }
}

impl<D> Dispatch<WlOutput, (), D> for Common
where
    D: Dispatch<WlOutput, ()> + KeepsOutputSize,
{
    fn event(
        s: &mut D,
        _: &WlOutput,
        ev: wl_output::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<D>,
    ) {
        if let wl_output::Event::Mode {
            flags,
            width,
            height,
            ..
        } = ev
        {
            let current = is_current(flags);
            let size = s.output_size_mut();
            if current || size.is_none() {
                *size = Some((width.max(0) as u32, height.max(0) as u32));
            }
        }
    }
}

fn is_current(flags: WEnum<wl_output::Mode>) -> bool {
    flags
        .into_result()
        .is_ok_and(|f| f.contains(wl_output::Mode::Current))
}

/// The error of the Wayland exchange `what`.
pub(crate) fn wl_err(what: &str) -> impl Fn(WaylandError) -> LinuxError + '_ {
    move |e| LinuxError::Wayland {
        what: what.to_string(),
        source: Box::new(e),
    }
}

/// Handle the events of `queue` already read into `state`.
pub(crate) fn dispatch<S>(
    queue: &mut EventQueue<S>,
    state: &mut S,
    what: &str,
) -> Result<(), LinuxError> {
    queue
        .dispatch_pending(state)
        .map(|_| ())
        .map_err(|e| LinuxError::Wayland {
            what: what.to_string(),
            source: Box::new(e),
        })
}

/// Handle the events of `queue` into `state` until `done` holds, reading the connection as
/// they come and waiting at most until `deadline`; `peer` names the compositor in the
/// timeout's message.
pub(crate) fn dispatch_until<S>(
    conn: &Connection,
    queue: &mut EventQueue<S>,
    state: &mut S,
    (peer, what): (&str, &str),
    deadline: Instant,
    done: impl Fn(&S) -> bool,
) -> Result<(), LinuxError> {
    let start = Instant::now();
    loop {
        dispatch(queue, state, what)?;
        if done(state) {
            return Ok(());
        }
        conn.flush().map_err(wl_err(what))?;
        let now = Instant::now();
        if now >= deadline {
            return Err(LinuxError::Timeout {
                what: format!("{peer} ({what})"),
                ms: deadline.saturating_duration_since(start).as_millis() as u64,
            });
        }
        let Some(guard) = queue.prepare_read() else {
            continue;
        };
        let left = deadline - now;
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let fd = guard.connection_fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN | rustix::event::PollFlags::ERR,
        )];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(e) => {
                return Err(LinuxError::Wayland {
                    what: what.to_string(),
                    source: Box::new(std::io::Error::from(e)),
                })
            }
        }
        match guard.read() {
            Ok(_) => {}
            Err(WaylandError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(wl_err(what)(e)),
        }
    }
}
