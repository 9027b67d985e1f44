//! What ufo's two Wayland clients (the wlroots session and KWin's input) answer alike: the
//! registry's events (globals are bound once, at start), a sync callback's end, and the
//! output's current size. Each client's state delegates these to [`Common`] with
//! `wayland_client::delegate_dispatch!` and keeps the size where [`KeepsOutputSize`] says.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wayland_client::globals::GlobalListContents;
use wayland_client::protocol::wl_callback::{self, WlCallback};
use wayland_client::protocol::wl_output::{self, WlOutput};
use wayland_client::protocol::wl_registry::{self, WlRegistry};
use wayland_client::{Connection, Dispatch, QueueHandle, WEnum};

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
