//! The change watch of a wlroots display (docs/desktop.md, "Wayland"): what settling waits on,
//! from the compositor's own reports rather than from polling pixels.
//!
//! - **redraws**: the output is copied with damage (`zwlr_screencopy_frame_v1.copy_with_damage`)
//!   over and over; the compositor answers each copy once something was drawn, so every answer
//!   is a redraw, noted when it comes. Two shared-memory buffers take turns: the one the last
//!   answer filled holds the screen as that redraw left it, which is what the looks of settling
//!   read ([`Damage::latest`]): a redraw and the pixels it made come from the same frame, and a
//!   look costs a read of memory instead of a capture;
//! - **windows**: a toplevel appearing or closing (`zwlr_foreign_toplevel_handle_v1`) is noted
//!   by the connection's state (`session.rs`).
//!
//! A Wayland client cannot ask another client whether it has read its input (X11's
//! `_NET_WM_PING` goes through the window manager): [`Watch::ping`] says so with `None`.
//!
//! Measured on sway 1.7 (headless, pixman, 2 cores), gnome-calculator, one click on a button
//! and the observation after it (`cargo bench -p ufo-linux --bench wayland`, docs/desktop.md
//! "What a step costs"): p50 684 ms when settling polled captures, 77 ms with this watch
//! (output at 240 Hz), against 59–65 ms for the same step on X11 in the same run.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

use wayland_client::protocol::wl_buffer::WlBuffer;
use wayland_client::protocol::wl_output::WlOutput;
use wayland_client::protocol::wl_shm::{self, WlShm};
use wayland_client::protocol::wl_shm_pool::WlShmPool;
use wayland_client::{Dispatch, Proxy, QueueHandle};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1::{self as scf, ZwlrScreencopyFrameV1},
    zwlr_screencopy_manager_v1::ZwlrScreencopyManagerV1,
};

use ufo_core::Rect;

use super::shm::{clip, columns, io_err, memfd_with, Cut};
use crate::display::watch::{Change, ChangeLog, ChangeWatch};
use crate::display::WinId;
use crate::LinuxError;

/// Failed copies in a row after which the watch stops (settling then has no redraws to wait
/// on, and falls back on its time bound): a compositor that refuses copies keeps refusing.
const MAX_FAILURES: u32 = 5;

/// The change watch settling reads: the changes the connection's thread noted.
#[derive(Default)]
pub(crate) struct Watch {
    log: ChangeLog,
}

impl Watch {
    /// A redraw of the output, noted now.
    fn redrawn(&self) {
        self.log.note(Change {
            at: Instant::now(),
            damage: true,
            mapped: false,
            gone: None,
            late: std::time::Duration::ZERO,
        });
    }

    /// A toplevel appeared (`gone: None`) or closed.
    pub(crate) fn window(&self, gone: Option<WinId>) {
        self.log.note(Change {
            at: Instant::now(),
            damage: false,
            mapped: gone.is_none(),
            gone,
            late: std::time::Duration::ZERO,
        });
    }
}

impl ChangeWatch for Watch {
    fn log(&self) -> &ChangeLog {
        &self.log
    }

    // every redraw of the output counts: the looks that follow compare the watched windows'
    // area only, so a redraw elsewhere costs a look and changes nothing
    fn watch(&self, _ids: &[WinId]) {}

    fn ping(&self, _id: WinId) -> Option<u32> {
        None
    }
}

/// What the event queue's state must handle for the watch's requests (the connection's
/// state, `session.rs`, does; it hands the frames' events to [`Damage::on_frame`]).
pub(crate) trait Queue:
    Dispatch<ZwlrScreencopyFrameV1, WatchFrame>
    + Dispatch<WlShmPool, ()>
    + Dispatch<WlBuffer, ()>
    + 'static
{
}

impl<S> Queue for S where
    S: Dispatch<ZwlrScreencopyFrameV1, WatchFrame>
        + Dispatch<WlShmPool, ()>
        + Dispatch<WlBuffer, ()>
        + 'static
{
}

/// The user data of the watch's frames (the captures of `session.rs` carry `()`).
pub(crate) struct WatchFrame;

/// A shared-memory buffer the compositor copies the output into.
struct Buffer {
    file: File,
    pool: WlShmPool,
    buffer: WlBuffer,
    format: wl_shm::Format,
    width: u32,
    height: u32,
    stride: u32,
}

impl Buffer {
    fn fits(&self, f: &Offer) -> bool {
        (self.format, self.width, self.height, self.stride)
            == (f.format, f.width, f.height, f.stride)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.buffer.destroy();
        self.pool.destroy();
    }
}

/// The buffer a frame asks for.
#[derive(Debug, Clone, Copy)]
struct Offer {
    format: wl_shm::Format,
    width: u32,
    height: u32,
    stride: u32,
}

/// The copies with damage, kept going by the connection's thread: one frame in flight at a
/// time, into the buffer the last answer did not fill.
pub(crate) struct Damage {
    watch: Arc<Watch>,
    manager: ZwlrScreencopyManagerV1,
    output: WlOutput,
    shm: WlShm,
    buffers: [Option<Buffer>; 2],
    /// the buffer the frame in flight copies into
    target: usize,
    /// the buffer the last answer filled, and whether its rows are upside down
    latest: Option<(usize, bool)>,
    /// what the frame in flight asked for, and its rows' order
    offer: Option<Offer>,
    y_invert: bool,
    failures: u32,
}

impl Damage {
    /// Start watching the output (the compositor's screencopy must be version 2 or later).
    pub(crate) fn start(
        watch: Arc<Watch>,
        manager: ZwlrScreencopyManagerV1,
        output: WlOutput,
        shm: WlShm,
        qh: &QueueHandle<impl Queue>,
    ) -> Damage {
        let d = Damage {
            watch,
            manager,
            output,
            shm,
            buffers: [None, None],
            target: 0,
            latest: None,
            offer: None,
            y_invert: false,
            failures: 0,
        };
        d.request(qh);
        d
    }

    /// The watch settling reads.
    pub(crate) fn watch(&self) -> &Arc<Watch> {
        &self.watch
    }

    fn request(&self, qh: &QueueHandle<impl Queue>) {
        self.manager.capture_output(0, &self.output, qh, WatchFrame);
    }

    /// `area` of the screen as the last redraw left it (`None` before the first answer;
    /// `Ok(None)` when `area` is off the output): where it lies and its BGRX rows, read from
    /// the buffer row by row (a window is a fraction of the output).
    pub(crate) fn latest(&self, area: Rect) -> Option<Result<Option<Cut>, LinuxError>> {
        let (i, y_invert) = self.latest?;
        let b = self.buffers[i].as_ref()?;
        Some(read_area(b, y_invert, area))
    }

    /// The frame's buffers are all offered: copy into the target buffer (made, or made again
    /// when the output changed) once something is drawn.
    fn copy(&mut self, frame: &ZwlrScreencopyFrameV1, qh: &QueueHandle<impl Queue>) {
        let Some(offer) = self.offer else {
            tracing::warn!("the compositor offers no shared-memory buffer: no change watch");
            frame.destroy();
            return;
        };
        let slot = &mut self.buffers[self.target];
        if !slot.as_ref().is_some_and(|b| b.fits(&offer)) {
            match make_buffer(&self.shm, offer, qh) {
                Ok(b) => *slot = Some(b),
                Err(e) => {
                    tracing::warn!("no change watch: {e}");
                    frame.destroy();
                    return;
                }
            }
        }
        if let Some(b) = slot.as_ref() {
            frame.copy_with_damage(&b.buffer);
        }
    }

    /// The frame in flight was copied: that was a redraw; ask for the next one into the
    /// other buffer.
    fn ready(&mut self, frame: &ZwlrScreencopyFrameV1, qh: &QueueHandle<impl Queue>) {
        frame.destroy();
        self.failures = 0;
        self.latest = Some((self.target, self.y_invert));
        self.target ^= 1;
        self.watch.redrawn();
        self.request(qh);
    }

    /// The frame in flight failed (the output changed, or the compositor is busy): ask again,
    /// up to [`MAX_FAILURES`] in a row.
    fn failed(&mut self, frame: &ZwlrScreencopyFrameV1, qh: &QueueHandle<impl Queue>) {
        frame.destroy();
        self.failures += 1;
        self.latest = None;
        if self.failures < MAX_FAILURES {
            self.request(qh);
        } else {
            tracing::warn!(
                "the compositor refused {MAX_FAILURES} copies in a row: no change watch"
            );
        }
    }
}

/// `area` of a buffer (clipped to it) as BGRX rows, top row first: one read of the rows it
/// spans, its columns cut from them.
fn read_area(b: &Buffer, y_invert: bool, area: Rect) -> Result<Option<Cut>, LinuxError> {
    let Some(r) = clip(area, b.width, b.height) else {
        return Ok(None);
    };
    // the rows of `r` lie together in the buffer, bottom first when it is upside down
    let first = if y_invert {
        b.height - (r.y as u32 + r.h)
    } else {
        r.y as u32
    };
    let stride = b.stride as usize;
    let mut block = vec![0u8; stride * r.h as usize];
    b.file
        .read_exact_at(&mut block, first as u64 * stride as u64)
        .map_err(io_err("read the watched output"))?;
    let rows = columns(&block, b.stride, (r.x as u32, r.w), r.h, b.format, y_invert)?;
    Ok(Some((r, rows)))
}

fn make_buffer(shm: &WlShm, o: Offer, qh: &QueueHandle<impl Queue>) -> Result<Buffer, LinuxError> {
    let size = u64::from(o.stride) * u64::from(o.height);
    let file = memfd_with("ufo-watch", &[])?;
    file.set_len(size).map_err(io_err("watch buffer"))?;
    let pool = shm.create_pool(file.as_fd(), size as i32, qh, ());
    let buffer = pool.create_buffer(
        0,
        o.width as i32,
        o.height as i32,
        o.stride as i32,
        o.format,
        qh,
        (),
    );
    Ok(Buffer {
        file,
        pool,
        buffer,
        format: o.format,
        width: o.width,
        height: o.height,
        stride: o.stride,
    })
}

impl Damage {
    /// An event of one of the watch's frames.
    pub(crate) fn on_frame(
        &mut self,
        frame: &ZwlrScreencopyFrameV1,
        ev: scf::Event,
        qh: &QueueHandle<impl Queue>,
    ) {
        match ev {
            scf::Event::Buffer {
                format,
                width,
                height,
                stride,
            } => {
                self.offer = format.into_result().ok().map(|format| Offer {
                    format,
                    width,
                    height,
                    stride,
                });
                // before version 3 this one offer is all there is
                if frame.version() < 3 {
                    self.copy(frame, qh);
                }
            }
            scf::Event::BufferDone => self.copy(frame, qh),
            scf::Event::Flags { flags } => {
                self.y_invert = flags
                    .into_result()
                    .is_ok_and(|fl| fl.contains(scf::Flags::YInvert));
            }
            scf::Event::Ready { .. } => self.ready(frame, qh),
            scf::Event::Failed => self.failed(frame, qh),
            _ => {}
        }
    }
}
