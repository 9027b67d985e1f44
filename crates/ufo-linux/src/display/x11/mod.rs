//! The X11 display, through x11rb: top-level windows from the window manager
//! (`_NET_CLIENT_LIST`, `_NET_WM_PID`, `WM_TRANSIENT_FOR`, ...), screenshots (shared memory,
//! `shm.rs`, else `GetImage`),
//! input (XTEST), the change watch (X Damage, `changes.rs`), the person's take-over watch
//! (XInput 2, `takeover.rs`), the display's published accessibility bus (`atspi_bus.rs`), the
//! demonstration recorder (`demo.rs`) and what `ufo doctor` checks of the X server
//! (`doctor.rs`). The only part of the crate that names x11rb.

pub(crate) mod atspi_bus;
pub(crate) mod changes;
pub mod demo;
pub(crate) mod doctor;
mod error;
mod shm;
pub mod takeover;

use std::sync::{Arc, Mutex};

use ufo_core::Rect;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{
    self, AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, ImageFormat, MapState,
    PropMode, Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use super::pixels::{Look, RgbImage};
use super::watch::{ChangeWatch, PersonInput};
use super::{CoordSpace, Display, DisplayWindow, WinId};
use crate::error::cause;
use crate::LinuxError;
use changes::XChangeWatch;
use error::xerr;

x11rb::atom_manager! {
    pub(crate) Atoms: AtomsCookie {
        _NET_CLIENT_LIST,
        _NET_ACTIVE_WINDOW,
        _NET_WM_NAME,
        _NET_WM_PID,
        _NET_CLOSE_WINDOW,
        _NET_WM_WINDOW_TYPE,
        _NET_WM_WINDOW_TYPE_DIALOG,
        _NET_WM_STATE,
        _NET_WM_STATE_MODAL,
        UTF8_STRING,
    }
}

/// The answers awaited about one window: attributes, geometry, position on the root window,
/// and seven properties (names, pid, class, transient-for, window type, state).
type Cookies<'a> = (
    x11rb::cookie::Cookie<'a, RustConnection, xproto::GetWindowAttributesReply>,
    x11rb::cookie::Cookie<'a, RustConnection, xproto::GetGeometryReply>,
    x11rb::cookie::Cookie<'a, RustConnection, xproto::TranslateCoordinatesReply>,
    [x11rb::cookie::Cookie<'a, RustConnection, xproto::GetPropertyReply>; 7],
);

struct KeyMap {
    min: u8,
    per: usize,
    syms: Vec<u32>,
    /// Keycodes with no keysyms, bound in turn to type keysyms the keyboard lacks. Taking
    /// them in turn (rather than rebinding one) keeps a key already sent from being read by
    /// the application with the keysym bound after it.
    scratch: Vec<u8>,
    /// The scratch keycode to bind next.
    next_scratch: usize,
}

/// The X11 display: one connection for windows, pixels and input, and the watches, each on
/// a connection of its own.
pub(crate) struct X11 {
    conn: RustConnection,
    root: Window,
    screen_w: u32,
    screen_h: u32,
    /// Whether the X server offers direct rendering (DRI2 or DRI3): without it, OpenGL in
    /// its clients is software rendering (Xvfb, Xvnc).
    direct_rendering: bool,
    atoms: Atoms,
    keymap: Mutex<Option<KeyMap>>,
    /// Whether the server has the X-Resource extension, which names the process of a window
    /// that does not say it (no `_NET_WM_PID`: Tk's windows).
    xres: bool,
    /// Screenshots and looks through shared memory; `None` without MIT-SHM 1.2
    shm: Option<shm::ShmImages>,
    /// X damage and window events for settling; `None` without DAMAGE
    watch: Option<Arc<XChangeWatch>>,
    /// The person's input on a watched private desktop (takeover.rs); `None` elsewhere
    person: Option<Arc<PersonInput>>,
}

/// The root window's property where the accessibility bus launcher publishes its address.
const ATSPI_BUS_PROPERTY: &[u8] = b"AT_SPI_BUS";

impl X11 {
    pub(crate) async fn open() -> Result<X11, LinuxError> {
        let worker = |e: tokio::task::JoinError| LinuxError::X11Request {
            what: "connect".into(),
            source: cause(e.to_string()),
        };
        let mut x = tokio::task::spawn_blocking(X11::connect)
            .await
            .map_err(worker)??;
        x.watch = tokio::task::spawn_blocking(XChangeWatch::start)
            .await
            .ok()
            .flatten()
            .map(Arc::new);
        x.person = tokio::task::spawn_blocking(takeover::start_if_watched)
            .await
            .ok()
            .flatten();
        Ok(x)
    }

    fn connect() -> Result<X11, LinuxError> {
        let display = std::env::var("DISPLAY").map_err(|_| LinuxError::NoDisplay)?;
        let (conn, screen_num) =
            x11rb::connect(Some(&display)).map_err(|source| LinuxError::X11Connect {
                display: display.clone(),
                source: Box::new(source),
            })?;
        let screen = conn
            .setup()
            .roots
            .get(screen_num)
            .ok_or_else(|| LinuxError::X11Connect {
                display: display.clone(),
                source: cause(format!("screen {screen_num} does not exist")),
            })?;
        let root = screen.root;
        let (screen_w, screen_h) = (
            u32::from(screen.width_in_pixels),
            u32::from(screen.height_in_pixels),
        );
        let atoms = Atoms::new(&conn)
            .map_err(xerr("intern atoms"))?
            .reply()
            .map_err(xerr("intern atoms"))?;
        let has_xtest = conn
            .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
            .map_err(xerr("query XTEST"))?
            .is_some();
        if !has_xtest {
            return Err(LinuxError::X11Connect {
                display,
                source: cause("the X server lacks the XTEST extension needed for input"),
            });
        }
        let mut direct_rendering = false;
        for name in ["DRI3", "DRI2"] {
            direct_rendering |= conn
                .extension_information(name)
                .map_err(xerr("query the DRI extensions"))?
                .is_some();
        }
        let xres = conn
            .extension_information(x11rb::protocol::res::X11_EXTENSION_NAME)
            .map_err(xerr("query X-Resource"))?
            .is_some();
        let shm = shm::ShmImages::new(&conn, screen_w, screen_h);
        Ok(X11 {
            conn,
            root,
            screen_w,
            screen_h,
            direct_rendering,
            xres,
            shm,
            atoms,
            keymap: Mutex::new(None),
            watch: None,
            person: None,
        })
    }

    fn prop32(&self, win: Window, prop: u32, ty: impl Into<u32>) -> Result<Vec<u32>, LinuxError> {
        let r = self
            .conn
            .get_property(false, win, prop, ty, 0, 4096)
            .map_err(xerr("GetProperty"))?
            .reply()
            .map_err(xerr("GetProperty"))?;
        Ok(r.value32().map(|v| v.collect()).unwrap_or_default())
    }

    /// The pixels of a rectangle of the screen as the server keeps them: through shared
    /// memory when it serves (`shm.rs`), else `GetImage`.
    fn image(&self, rect: (i16, i16, u16, u16)) -> Result<shm::Image, LinuxError> {
        if let Some(image) = self
            .shm
            .as_ref()
            .and_then(|s| s.get(&self.conn, self.root, rect))
        {
            return Ok(image);
        }
        let (x, y, w, h) = rect;
        let reply = self
            .conn
            .get_image(ImageFormat::Z_PIXMAP, self.root, x, y, w, h, !0)
            .map_err(xerr("GetImage"))?
            .reply()
            .map_err(xerr("GetImage"))?;
        Ok(shm::Image {
            depth: reply.depth,
            data: reply.data,
        })
    }

    fn client_windows(&self) -> Result<Vec<DisplayWindow>, LinuxError> {
        let ids = self.prop32(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)?;
        // a window may vanish between the list and these calls: it is skipped
        Ok(self.windows_info(&ids).into_iter().flatten().collect())
    }

    fn windows_info(&self, ids: &[Window]) -> Vec<Option<DisplayWindow>> {
        let sent: Vec<Option<Cookies<'_>>> = ids.iter().map(|&id| self.ask_window(id)).collect();
        let mut found: Vec<Option<DisplayWindow>> = ids
            .iter()
            .zip(sent)
            .map(|(&id, cookies)| self.read_window(id, cookies?))
            .collect();
        self.fill_client_pids(&mut found);
        found
    }

    /// The process of each window that does not name it (`_NET_WM_PID` missing: Tk, some
    /// Motif and plain Xlib programs), as the X server knows it: X-Resource's client PID is
    /// read by the server from the connection's socket, so, unlike `WM_CLIENT_MACHINE` and
    /// `WM_COMMAND` (written by the client, and absent on Tk's windows), it cannot be wrong
    /// about a local client. A remote client has none and stays without a pid. One round
    /// trip for all such windows.
    fn fill_client_pids(&self, windows: &mut [Option<DisplayWindow>]) {
        use x11rb::protocol::res::{ClientIdMask, ClientIdSpec, ConnectionExt as _};
        if !self.xres {
            return;
        }
        let asked: Vec<_> = windows
            .iter()
            .map(|w| {
                let w = w.as_ref().filter(|w| w.pid.is_none())?;
                let spec = ClientIdSpec {
                    client: w.id.0,
                    mask: ClientIdMask::LOCAL_CLIENT_PID,
                };
                self.conn.res_query_client_ids(&[spec]).ok()
            })
            .collect();
        for (w, cookie) in windows.iter_mut().zip(asked) {
            let (Some(w), Some(cookie)) = (w.as_mut(), cookie) else {
                continue;
            };
            w.pid = cookie.reply().ok().and_then(|r| {
                r.ids
                    .iter()
                    .find(|v| v.spec.mask == ClientIdMask::LOCAL_CLIENT_PID)
                    .and_then(|v| v.value.first().copied())
                    .filter(|pid| *pid != 0)
            });
        }
    }

    fn ask_window(&self, id: Window) -> Option<Cookies<'_>> {
        let c = &self.conn;
        let prop = |p: u32, t: u32| c.get_property(false, id, p, t, 0, 4096).ok();
        let a = &self.atoms;
        Some((
            c.get_window_attributes(id).ok()?,
            c.get_geometry(id).ok()?,
            c.translate_coordinates(id, self.root, 0, 0).ok()?,
            [
                prop(a._NET_WM_NAME, a.UTF8_STRING)?,
                prop(AtomEnum::WM_NAME.into(), AtomEnum::STRING.into())?,
                prop(a._NET_WM_PID, AtomEnum::CARDINAL.into())?,
                prop(AtomEnum::WM_CLASS.into(), AtomEnum::STRING.into())?,
                prop(AtomEnum::WM_TRANSIENT_FOR.into(), AtomEnum::WINDOW.into())?,
                prop(a._NET_WM_WINDOW_TYPE, AtomEnum::ATOM.into())?,
                prop(a._NET_WM_STATE, AtomEnum::ATOM.into())?,
            ],
        ))
    }

    fn read_window(&self, id: Window, cookies: Cookies<'_>) -> Option<DisplayWindow> {
        let (attrs, geo, tr, [name, wm_name, pid, class, transient, types, states]) = cookies;
        // read every reply, so none is left pending, before deciding
        let attrs = attrs.reply().ok();
        let geo = geo.reply().ok();
        let tr = tr.reply().ok();
        let text = |r: Option<xproto::GetPropertyReply>| {
            r.map(|r| String::from_utf8_lossy(&r.value).into_owned())
                .unwrap_or_default()
        };
        let first32 = |r: Option<xproto::GetPropertyReply>| {
            r.and_then(|r| r.value32().and_then(|mut v| v.next()))
        };
        let name = text(name.reply().ok());
        let wm_name = text(wm_name.reply().ok());
        let pid = first32(pid.reply().ok());
        let class = text(class.reply().ok());
        let transient_for = first32(transient.reply().ok()).filter(|w| *w != 0);
        let holds = |r: Option<xproto::GetPropertyReply>, atom: u32| {
            r.and_then(|r| r.value32().map(|mut v| v.any(|a| a == atom)))
                .unwrap_or(false)
        };
        let dialog = holds(types.reply().ok(), self.atoms._NET_WM_WINDOW_TYPE_DIALOG);
        let wm_modal = holds(states.reply().ok(), self.atoms._NET_WM_STATE_MODAL);
        let (attrs, geo, tr) = (attrs?, geo?, tr?);
        if attrs.map_state != MapState::VIEWABLE {
            return None;
        }
        Some(DisplayWindow {
            id: WinId(id),
            title: if name.is_empty() { wm_name } else { name },
            pid,
            app_id: class.split('\0').next().unwrap_or_default().to_string(),
            area: Some(Rect::new(
                i32::from(tr.dst_x),
                i32::from(tr.dst_y),
                u32::from(geo.width),
                u32::from(geo.height),
            )),
            transient_for: transient_for.map(WinId),
            dialog,
            wm_modal,
        })
    }

    fn client_message(&self, win: Window, ty: u32, data: [u32; 5]) -> Result<(), LinuxError> {
        let ev = ClientMessageEvent::new(32, win, ty, data);
        self.conn
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                ev,
            )
            .map_err(xerr("SendEvent"))?;
        self.conn.flush().map_err(xerr("flush"))?;
        Ok(())
    }

    fn fake(&self, ty: u8, detail: u8, x: i16, y: i16) -> Result<(), LinuxError> {
        self.conn
            .xtest_fake_input(ty, detail, 0, self.root, x, y, 0)
            .map_err(xerr("XTEST FakeInput"))?;
        Ok(())
    }

    fn sync(&self) -> Result<(), LinuxError> {
        self.conn
            .get_input_focus()
            .map_err(xerr("sync"))?
            .reply()
            .map_err(xerr("sync"))?;
        Ok(())
    }

    /// Move the pointer.
    fn motion(&self, x: i32, y: i32) -> Result<(), LinuxError> {
        self.fake(xproto::MOTION_NOTIFY_EVENT, 0, x as i16, y as i16)?;
        self.sync()
    }

    fn load_keymap(&self) -> Result<KeyMap, LinuxError> {
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let r = self
            .conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(xerr("GetKeyboardMapping"))?
            .reply()
            .map_err(xerr("GetKeyboardMapping"))?;
        let per = usize::from(r.keysyms_per_keycode).max(1);
        let syms = r.keysyms;
        let scratch = (0..syms.len() / per)
            .rev()
            .filter(|i| syms[i * per..(i + 1) * per].iter().all(|s| *s == 0))
            .map(|i| min + i as u8)
            .collect();
        Ok(KeyMap {
            min,
            per,
            syms,
            scratch,
            next_scratch: 0,
        })
    }

    /// Find (keycode, needs shift) for a keysym, binding a scratch keycode when missing.
    fn keycode_for(&self, km: &mut KeyMap, sym: u32) -> Result<(u8, bool), LinuxError> {
        let mut shifted = None;
        for (i, chunk) in km.syms.chunks(km.per).enumerate() {
            if chunk.first() == Some(&sym) {
                return Ok((km.min + i as u8, false));
            }
            if shifted.is_none() && chunk.get(1) == Some(&sym) {
                shifted = Some(km.min + i as u8);
            }
        }
        if let Some(kc) = shifted {
            return Ok((kc, true));
        }
        if km.scratch.is_empty() {
            return Err(LinuxError::ActionFailed(format!(
                "the keyboard map has no key for keysym {sym:#x} and no free keycode to bind it; type this character with set_text instead"
            )));
        }
        let kc = km.scratch[km.next_scratch % km.scratch.len()];
        km.next_scratch = (km.next_scratch + 1) % km.scratch.len();
        let syms = vec![sym; km.per];
        self.conn
            .change_keyboard_mapping(1, kc, km.per as u8, &syms)
            .map_err(xerr("ChangeKeyboardMapping"))?;
        self.sync()?;
        let idx = usize::from(kc - km.min) * km.per;
        km.syms[idx..idx + km.per].copy_from_slice(&syms);
        // give clients time to refresh their keymap after MappingNotify
        std::thread::sleep(std::time::Duration::from_millis(30));
        Ok((kc, false))
    }

    fn atspi_bus_atom(&self) -> Result<u32, LinuxError> {
        Ok(self
            .conn
            .intern_atom(false, ATSPI_BUS_PROPERTY)
            .map_err(xerr("InternAtom"))?
            .reply()
            .map_err(xerr("InternAtom"))?
            .atom)
    }

    /// The address in the root window's `AT_SPI_BUS` property (`None`: not set).
    fn root_atspi_bus(&self) -> Result<Option<String>, LinuxError> {
        let atom = self.atspi_bus_atom()?;
        let r = self
            .conn
            .get_property(false, self.root, atom, AtomEnum::STRING, 0, 4096)
            .map_err(xerr("GetProperty"))?
            .reply()
            .map_err(xerr("GetProperty"))?;
        Ok((!r.value.is_empty()).then(|| String::from_utf8_lossy(&r.value).into_owned()))
    }

    /// Publish `address` in the root window's `AT_SPI_BUS` property.
    fn set_root_atspi_bus(&self, address: &str) -> Result<(), LinuxError> {
        let atom = self.atspi_bus_atom()?;
        self.conn
            .change_property8(
                PropMode::REPLACE,
                self.root,
                atom,
                AtomEnum::STRING,
                address.as_bytes(),
            )
            .map_err(xerr("ChangeProperty"))?
            .check()
            .map_err(xerr("ChangeProperty"))?;
        self.conn.flush().map_err(xerr("flush"))?;
        Ok(())
    }
}

impl Display for X11 {
    fn screen(&self) -> Rect {
        Rect::new(0, 0, self.screen_w, self.screen_h)
    }

    fn direct_rendering(&self) -> bool {
        self.direct_rendering
    }

    fn coord_space(&self) -> CoordSpace {
        CoordSpace::Screen
    }

    fn windows(&self) -> Result<Vec<DisplayWindow>, LinuxError> {
        self.client_windows()
    }

    fn window(&self, id: WinId) -> Result<Option<DisplayWindow>, LinuxError> {
        Ok(self.windows_info(&[id.0]).pop().flatten())
    }

    fn active_window(&self) -> Result<Option<WinId>, LinuxError> {
        Ok(self
            .prop32(self.root, self.atoms._NET_ACTIVE_WINDOW, AtomEnum::WINDOW)?
            .first()
            .copied()
            .filter(|w| *w != 0)
            .map(WinId))
    }

    fn request_activate(&self, id: WinId) -> Result<(), LinuxError> {
        self.client_message(id.0, self.atoms._NET_ACTIVE_WINDOW, [2, 0, 0, 0, 0])
    }

    fn request_close(&self, id: WinId) -> Result<(), LinuxError> {
        self.client_message(id.0, self.atoms._NET_CLOSE_WINDOW, [0, 2, 0, 0, 0])
    }

    // the child of the root window on top at the point: a top-level window, its
    // window-manager frame, or a popup
    fn top_at(&self, x: i32, y: i32) -> Result<Option<WinId>, LinuxError> {
        let r = self
            .conn
            .translate_coordinates(self.root, self.root, x as i16, y as i16)
            .map_err(xerr("TranslateCoordinates"))?
            .reply()
            .map_err(xerr("TranslateCoordinates"))?;
        Ok((r.child != x11rb::NONE).then_some(WinId(r.child)))
    }

    // the child of the root window that holds it (its frame when a window manager reparents
    // it); at most 16 levels up
    fn top_of(&self, id: WinId) -> Result<WinId, LinuxError> {
        let mut w = id.0;
        for _ in 0..16 {
            let t = self
                .conn
                .query_tree(w)
                .map_err(xerr("QueryTree"))?
                .reply()
                .map_err(xerr("QueryTree"))?;
            if t.parent == self.root || t.parent == x11rb::NONE {
                return Ok(WinId(w));
            }
            w = t.parent;
        }
        Ok(WinId(w))
    }

    fn capture(&self, area: Rect) -> Result<RgbImage, LinuxError> {
        let Rect { x, y, w, h } = area;
        let x0 = x.clamp(0, self.screen_w as i32);
        let y0 = y.clamp(0, self.screen_h as i32);
        let x1 = (x + w as i32).clamp(0, self.screen_w as i32);
        let y1 = (y + h as i32).clamp(0, self.screen_h as i32);
        let (cw, ch) = ((x1 - x0).max(0) as u32, (y1 - y0).max(0) as u32);
        if cw == 0 || ch == 0 {
            return Err(LinuxError::X11Request {
                what: "GetImage".into(),
                source: cause(format!("the rectangle {x},{y} {w}x{h} is off screen")),
            });
        }
        let image = self.image((x0 as i16, y0 as i16, cw as u16, ch as u16))?;
        let depth = image.depth;
        let n = (cw * ch) as usize;
        if depth != 24 && depth != 32 || image.data.len() < n * 4 {
            return Err(LinuxError::X11Request {
                what: "GetImage".into(),
                source: cause(format!(
                    "unsupported screen format (depth {depth}, {} bytes for {n} pixels); run the X server at 24-bit depth",
                    image.data.len()
                )),
            });
        }
        let mut data = vec![0u8; n * 3];
        for (rgb, px) in data.chunks_exact_mut(3).zip(image.data.chunks_exact(4)) {
            // little-endian BGRX
            rgb.copy_from_slice(&[px[2], px[1], px[0]]);
        }
        crate::display::pixels::give_back(image.data);
        Ok(RgbImage {
            width: cw,
            height: ch,
            data,
        })
    }

    // the pixels as the server keeps them (4 bytes each), compared by `Look::changed_regions`
    fn look(&self, area: Rect) -> Result<Look, LinuxError> {
        let Rect { x, y, w, h } = area;
        let x0 = x.clamp(0, self.screen_w as i32);
        let y0 = y.clamp(0, self.screen_h as i32);
        let x1 = (x + w as i32).clamp(0, self.screen_w as i32);
        let y1 = (y + h as i32).clamp(0, self.screen_h as i32);
        let (cw, ch) = ((x1 - x0).max(0) as usize, (y1 - y0).max(0) as usize);
        if cw == 0 || ch == 0 {
            return Ok(Look::default());
        }
        let image = self.image((x0 as i16, y0 as i16, cw as u16, ch as u16))?;
        let stride = image.data.len() / ch;
        if stride < cw * 4 {
            return Err(LinuxError::X11Request {
                what: "GetImage".into(),
                source: cause(format!(
                    "unsupported screen format (depth {}, {} bytes for {cw}x{ch} pixels); run the X server at 24-bit depth",
                    image.depth,
                    image.data.len()
                )),
            });
        }
        Ok(Look::new(x0, y0, cw, ch, stride, image.data))
    }

    // a software cursor (Xvfb's among them) is in the frame buffer GetImage reads
    fn captures_may_show_pointer(&self) -> bool {
        true
    }

    fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError> {
        self.motion(x, y)?;
        for _ in 0..count {
            self.fake(xproto::BUTTON_PRESS_EVENT, button, 0, 0)?;
            self.fake(xproto::BUTTON_RELEASE_EVENT, button, 0, 0)?;
        }
        self.sync()
    }

    // a keysym the keyboard map lacks is bound to a free keycode first
    fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError> {
        let mut guard = self
            .keymap
            .lock()
            .map_err(|_| LinuxError::ActionFailed("keyboard state poisoned".into()))?;
        if guard.is_none() {
            *guard = Some(self.load_keymap()?);
        }
        let km = guard
            .as_mut()
            .ok_or_else(|| LinuxError::ActionFailed("no keyboard map".into()))?;
        let mut held = Vec::new();
        for m in mods {
            let (kc, _) = self.keycode_for(km, *m)?;
            held.push(kc);
        }
        let (kc, shift) = self.keycode_for(km, key)?;
        if shift && !mods.contains(&crate::display::keys::sym::SHIFT_L) {
            let (skc, _) = self.keycode_for(km, crate::display::keys::sym::SHIFT_L)?;
            held.push(skc);
        }
        for h in &held {
            self.fake(xproto::KEY_PRESS_EVENT, *h, 0, 0)?;
        }
        self.fake(xproto::KEY_PRESS_EVENT, kc, 0, 0)?;
        self.fake(xproto::KEY_RELEASE_EVENT, kc, 0, 0)?;
        for h in held.iter().rev() {
            self.fake(xproto::KEY_RELEASE_EVENT, *h, 0, 0)?;
        }
        self.sync()
    }

    fn publish_a11y_bus(&self, live: &str) -> Result<(), LinuxError> {
        if live.trim().is_empty() {
            return Ok(());
        }
        let published = self.root_atspi_bus()?;
        if atspi_bus::BusProperty::judge(published.as_deref(), live).needs_publishing() {
            self.set_root_atspi_bus(live)?;
        }
        Ok(())
    }

    fn change_watch(&self) -> Option<Arc<dyn ChangeWatch>> {
        self.watch
            .as_ref()
            .map(|w| Arc::clone(w) as Arc<dyn ChangeWatch>)
    }

    fn person_input(&self) -> Option<Arc<PersonInput>> {
        self.person.clone()
    }
}
