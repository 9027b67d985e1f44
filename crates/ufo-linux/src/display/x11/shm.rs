//! Pixels through shared memory (MIT-SHM 1.2): the X server writes the image into a memory
//! file this connection attached (`ShmAttachFd`, `ShmGetImage`) and ufo reads it with `pread`,
//! instead of the whole image crossing the socket in the reply to `GetImage`.
//!
//! Every screenshot and every look of a settle reads a window's pixels, and a LibreOffice
//! window is most of the screen. Measured on Xvfb (1280x1024, the whole screen, a quiet
//! 2-core machine, release build, 20 reads each): `GetImage` 3.9 ms p50, `ShmGetImage` with
//! the read 1.0 ms. The socket's way also costs the X server and ufo a switch for each part of
//! the 5 MB reply, which waits for a core when the machine is busy.
//!
//! Segments (each the screen's size; the memory file's pages are made only where the server
//! writes) are kept in a small pool: a look while settling and the capture of the observation
//! made meanwhile run at the same time. A server without the extension, one that refuses the
//! segment (a display on another machine cannot map a local file), or a read that fails turns
//! shared memory off for the connection: its pixels are asked with `GetImage` as before.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::shm::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ImageFormat, Window};
use x11rb::rust_connection::RustConnection;

/// Most segments at once: a settle's look, an observation's capture, and one more (a dialog's
/// look); a fourth reader at the same moment uses `GetImage`.
const MOST_SEGMENTS: usize = 3;

/// A window's pixels as the server keeps them (Z-pixmap, 4 bytes each on a 24- or 32-bit
/// screen) and the depth it gave.
pub(super) struct Image {
    pub depth: u8,
    pub data: Vec<u8>,
}

/// The pool of shared memory segments of one connection.
pub(super) struct ShmImages {
    pool: Mutex<Pool>,
    /// Each segment's size in bytes: the whole screen at 4 bytes a pixel.
    size: usize,
    /// Set once shared memory failed on this connection.
    off: AtomicBool,
}

#[derive(Default)]
struct Pool {
    free: Vec<Segment>,
    made: usize,
}

/// A memory file attached to the server as `seg`.
struct Segment {
    seg: shm::Seg,
    file: OwnedFd,
}

impl ShmImages {
    /// Shared memory for a screen of `screen_w` x `screen_h`, when the server offers MIT-SHM
    /// 1.2 or later (file descriptors); `None` otherwise.
    pub(super) fn new(conn: &RustConnection, screen_w: u32, screen_h: u32) -> Option<ShmImages> {
        conn.extension_information(shm::X11_EXTENSION_NAME)
            .ok()
            .flatten()?;
        let version = conn.shm_query_version().ok()?.reply().ok()?;
        if (version.major_version, version.minor_version) < (1, 2) {
            return None;
        }
        Some(ShmImages {
            pool: Mutex::new(Pool::default()),
            size: screen_w as usize * screen_h as usize * 4,
            off: AtomicBool::new(false),
        })
    }

    /// The pixels of `root`'s rectangle (on the screen), or `None` when shared memory cannot
    /// give them now: it is off, every segment is in use, or this request failed (which turns
    /// it off). The caller then asks with `GetImage`.
    pub(super) fn get(
        &self,
        conn: &RustConnection,
        root: Window,
        (x, y, w, h): (i16, i16, u16, u16),
    ) -> Option<Image> {
        if self.off.load(Ordering::Relaxed) || usize::from(w) * usize::from(h) * 4 > self.size {
            return None;
        }
        let segment = self.take(conn)?;
        match read(conn, root, &segment, (x, y, w, h), self.size) {
            Ok(image) => {
                self.give_back(segment);
                Some(image)
            }
            Err(why) => {
                tracing::debug!(%why, "shared memory pixels failed: GetImage from now on");
                self.off.store(true, Ordering::Relaxed);
                let _ = conn.shm_detach(segment.seg);
                None
            }
        }
    }

    /// A free segment, or a new one while fewer than [`MOST_SEGMENTS`] were made.
    fn take(&self, conn: &RustConnection) -> Option<Segment> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = pool.free.pop() {
            return Some(s);
        }
        if pool.made >= MOST_SEGMENTS {
            return None;
        }
        match attach(conn, self.size) {
            Ok(s) => {
                pool.made += 1;
                Some(s)
            }
            Err(why) => {
                tracing::debug!(%why, "no shared memory segment: GetImage from now on");
                self.off.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    fn give_back(&self, segment: Segment) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.free.push(segment);
    }
}

/// A new memory file of `size` bytes, attached to the server (which maps it for writing).
fn attach(conn: &RustConnection, size: usize) -> Result<Segment, String> {
    use rustix::fs::{ftruncate, memfd_create, MemfdFlags};
    let file = memfd_create("ufo-pixels", MemfdFlags::CLOEXEC)
        .map_err(|e| format!("memfd_create: {e}"))?;
    ftruncate(&file, size as u64).map_err(|e| format!("sizing the memory file: {e}"))?;
    let for_server = file
        .try_clone()
        .map_err(|e| format!("duplicating the memory file: {e}"))?;
    let seg = conn.generate_id().map_err(|e| format!("an id: {e}"))?;
    conn.shm_attach_fd(seg, for_server, false)
        .map_err(|e| format!("ShmAttachFd: {e}"))?
        .check()
        .map_err(|e| format!("ShmAttachFd: {e}"))?;
    Ok(Segment { seg, file })
}

/// `ShmGetImage` of the rectangle into `segment`, then its bytes read from the file.
fn read(
    conn: &RustConnection,
    root: Window,
    segment: &Segment,
    (x, y, w, h): (i16, i16, u16, u16),
    size: usize,
) -> Result<Image, String> {
    let format = u8::from(ImageFormat::Z_PIXMAP);
    let reply = conn
        .shm_get_image(root, x, y, w, h, !0, format, segment.seg, 0)
        .map_err(|e| format!("ShmGetImage: {e}"))?
        .reply()
        .map_err(|e| format!("ShmGetImage: {e}"))?;
    let len = reply.size as usize;
    if len > size {
        return Err(format!(
            "the server wrote {len} bytes into a segment of {size}"
        ));
    }
    // (read into the buffer's spare capacity: a screen's 5 MB are not zeroed first; a buffer
    // used before has its pages mapped already, `pixels::pixel_buffer`)
    let mut data: Vec<u8> = crate::display::pixels::pixel_buffer(len);
    while data.len() < len {
        let at = data.len();
        let spare = rustix::buffer::spare_capacity(&mut data);
        match rustix::io::pread(&segment.file, spare, at as u64) {
            Ok(0) => return Err(format!("the memory file ended at {at} of {len} bytes")),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("reading the memory file: {e}")),
        }
    }
    // (the capacity may exceed `len`, and the file holds more than this image)
    data.truncate(len);
    Ok(Image {
        depth: reply.depth,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, WindowClass};

    /// Live (a display, `UFO_LIVE_TESTS=1`): a window of one colour read through shared memory
    /// gives the same bytes as `GetImage`, the colour among them; with every segment in use
    /// the pool gives none (the caller asks with `GetImage`), and one given back serves again.
    #[test]
    fn shared_memory_pixels_are_get_images_and_the_pool_is_bounded() {
        if std::env::var("UFO_LIVE_TESTS").as_deref() != Ok("1") {
            return;
        }
        let (conn, screen) = x11rb::connect(None).expect("a connection to DISPLAY");
        let s = &conn.setup().roots[screen];
        let (root, sw, sh) = (s.root, s.width_in_pixels, s.height_in_pixels);
        let shm = ShmImages::new(&conn, sw.into(), sh.into()).expect("Xvfb offers MIT-SHM 1.2");
        let id = conn.generate_id().expect("an id");
        let aux = CreateWindowAux::new()
            .override_redirect(1)
            .background_pixel(0x0033_6699);
        conn.create_window(
            0,
            id,
            root,
            20,
            30,
            64,
            48,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &aux,
        )
        .expect("create");
        conn.map_window(id).expect("map");
        conn.flush().expect("flush");
        let rect = (10, 20, 100, 80);
        let by_socket = || {
            conn.get_image(ImageFormat::Z_PIXMAP, root, 10, 20, 100, 80, !0)
                .expect("GetImage")
                .reply()
                .expect("GetImage")
                .data
        };
        // the pixel (30, 30) of the rectangle lies in the window
        let at = (30 * 100 + 30) * 4;
        let t = Instant::now();
        while by_socket()[at..at + 3] != [0x99, 0x66, 0x33] && t.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let shared = shm.get(&conn, root, rect).expect("shared memory serves");
        assert_eq!(
            shared.data[at..at + 3],
            [0x99, 0x66, 0x33],
            "the window's colour"
        );
        assert_eq!(shared.data, by_socket(), "the same bytes as GetImage");
        let held: Vec<Segment> = (0..MOST_SEGMENTS).filter_map(|_| shm.take(&conn)).collect();
        assert_eq!(held.len(), MOST_SEGMENTS);
        assert!(shm.get(&conn, root, rect).is_none(), "every segment in use");
        for segment in held {
            shm.give_back(segment);
        }
        assert!(shm.get(&conn, root, rect).is_some(), "a segment free again");
        assert!(!shm.off.load(Ordering::Relaxed));
        let _ = conn.destroy_window(id);
        let _ = conn.flush();
    }
}
