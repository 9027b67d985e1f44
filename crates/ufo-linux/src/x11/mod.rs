//! X11 through x11rb: top-level windows, screenshots (GetImage) and input (XTEST).

pub(crate) mod annotate;
pub(crate) mod atspi_bus;
pub mod demo;
pub(crate) mod keys;
pub mod takeover;

use std::sync::Mutex;

use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{
    self, AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, ImageFormat, MapState,
    Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::error::cause;
use crate::LinuxError;

/// Parse a window id (`0x1a00004` or decimal).
pub(crate) fn parse_window_id(id: &str) -> Result<u32, LinuxError> {
    let t = id.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse::<u32>().ok(),
    };
    parsed.ok_or_else(|| LinuxError::NoWindow(id.to_string()))
}

pub(crate) fn window_id(xid: u32) -> String {
    format!("{xid:#x}")
}

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

/// A top-level client window as X11 knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XWindow {
    pub id: Window,
    pub title: String,
    pub pid: Option<u32>,
    pub class: String,
    /// Client area in root coordinates.
    pub x: i32,
    pub y: i32,
    pub w: u32,
    pub h: u32,
    pub transient_for: Option<Window>,
    /// Its `_NET_WM_WINDOW_TYPE` lists `_NET_WM_WINDOW_TYPE_DIALOG`.
    pub dialog: bool,
    /// Its `_NET_WM_STATE` holds `_NET_WM_STATE_MODAL` (the window manager is told it is modal).
    pub wm_modal: bool,
}

impl XWindow {
    /// Its client area on the screen.
    pub fn rect(&self) -> ufo_core::Rect {
        ufo_core::Rect::new(self.x, self.y, self.w, self.h)
    }
}

/// An RGB image.
pub(crate) struct RgbImage {
    pub width: u32,
    pub height: u32,
    /// Row-major RGB, 3 bytes a pixel.
    pub data: Vec<u8>,
}

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

/// The X11 connection.
pub(crate) struct X11 {
    conn: RustConnection,
    root: Window,
    pub screen_w: u32,
    pub screen_h: u32,
    /// Whether the X server offers direct rendering (DRI2 or DRI3): without it, OpenGL in
    /// its clients is software rendering (Xvfb, Xvnc).
    pub direct_rendering: bool,
    atoms: Atoms,
    keymap: Mutex<Option<KeyMap>>,
}

/// An X11 request's error as [`LinuxError::X11Request`], naming what was asked.
pub(crate) fn xerr<E>(what: &str) -> impl Fn(E) -> LinuxError + '_
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |source| LinuxError::X11Request {
        what: what.to_string(),
        source: Box::new(source),
    }
}

impl X11 {
    /// Connect to `$DISPLAY` and check for XTEST.
    pub fn connect() -> Result<X11, LinuxError> {
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
        Ok(X11 {
            conn,
            root,
            screen_w,
            screen_h,
            direct_rendering,
            atoms,
            keymap: Mutex::new(None),
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

    /// Managed, viewable top-level windows in the window manager's order (`_NET_CLIENT_LIST`).
    pub fn client_windows(&self) -> Result<Vec<XWindow>, LinuxError> {
        let ids = self.prop32(self.root, self.atoms._NET_CLIENT_LIST, AtomEnum::WINDOW)?;
        // a window may vanish between the list and these calls: it is skipped
        Ok(self.windows_info(&ids).into_iter().flatten().collect())
    }

    /// One window's details; `None` when it is not viewable (or gone).
    pub fn window_info(&self, id: Window) -> Result<Option<XWindow>, LinuxError> {
        Ok(self.windows_info(&[id]).pop().flatten())
    }

    /// Details of several windows, all requests sent before the first reply is read (one
    /// round trip in all instead of nine per window).
    pub fn windows_info(&self, ids: &[Window]) -> Vec<Option<XWindow>> {
        type Cookies<'a> = (
            x11rb::cookie::Cookie<'a, RustConnection, xproto::GetWindowAttributesReply>,
            x11rb::cookie::Cookie<'a, RustConnection, xproto::GetGeometryReply>,
            x11rb::cookie::Cookie<'a, RustConnection, xproto::TranslateCoordinatesReply>,
            [x11rb::cookie::Cookie<'a, RustConnection, xproto::GetPropertyReply>; 7],
        );
        let c = &self.conn;
        let prop = |id: Window, p: u32, t: u32| c.get_property(false, id, p, t, 0, 4096);
        let sent: Vec<Option<Cookies<'_>>> = ids
            .iter()
            .map(|&id| {
                Some((
                    c.get_window_attributes(id).ok()?,
                    c.get_geometry(id).ok()?,
                    c.translate_coordinates(id, self.root, 0, 0).ok()?,
                    [
                        prop(id, self.atoms._NET_WM_NAME, self.atoms.UTF8_STRING).ok()?,
                        prop(id, AtomEnum::WM_NAME.into(), AtomEnum::STRING.into()).ok()?,
                        prop(id, self.atoms._NET_WM_PID, AtomEnum::CARDINAL.into()).ok()?,
                        prop(id, AtomEnum::WM_CLASS.into(), AtomEnum::STRING.into()).ok()?,
                        prop(
                            id,
                            AtomEnum::WM_TRANSIENT_FOR.into(),
                            AtomEnum::WINDOW.into(),
                        )
                        .ok()?,
                        prop(id, self.atoms._NET_WM_WINDOW_TYPE, AtomEnum::ATOM.into()).ok()?,
                        prop(id, self.atoms._NET_WM_STATE, AtomEnum::ATOM.into()).ok()?,
                    ],
                ))
            })
            .collect();
        ids.iter()
            .zip(sent)
            .map(|(&id, cookies)| {
                let (attrs, geo, tr, [name, wm_name, pid, class, transient, types, states]) =
                    cookies?;
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
                Some(XWindow {
                    id,
                    title: if name.is_empty() { wm_name } else { name },
                    pid,
                    class: class.split('\0').next().unwrap_or_default().to_string(),
                    x: i32::from(tr.dst_x),
                    y: i32::from(tr.dst_y),
                    w: u32::from(geo.width),
                    h: u32::from(geo.height),
                    transient_for,
                    dialog,
                    wm_modal,
                })
            })
            .collect()
    }

    /// The active window, if the window manager says.
    pub fn active_window(&self) -> Result<Option<Window>, LinuxError> {
        Ok(self
            .prop32(self.root, self.atoms._NET_ACTIVE_WINDOW, AtomEnum::WINDOW)?
            .first()
            .copied()
            .filter(|w| *w != 0))
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

    /// Ask the window manager to activate (raise and focus) a window.
    pub fn request_activate(&self, win: Window) -> Result<(), LinuxError> {
        self.client_message(win, self.atoms._NET_ACTIVE_WINDOW, [2, 0, 0, 0, 0])
    }

    /// Ask the window manager to close a window.
    pub fn request_close(&self, win: Window) -> Result<(), LinuxError> {
        self.client_message(win, self.atoms._NET_CLOSE_WINDOW, [0, 2, 0, 0, 0])
    }

    /// Capture a screen rectangle (clipped to the screen) as RGB.
    pub fn capture(&self, x: i32, y: i32, w: u32, h: u32) -> Result<RgbImage, LinuxError> {
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
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                x0 as i16,
                y0 as i16,
                cw as u16,
                ch as u16,
                !0,
            )
            .map_err(xerr("GetImage"))?
            .reply()
            .map_err(xerr("GetImage"))?;
        let depth = reply.depth;
        let n = (cw * ch) as usize;
        if depth != 24 && depth != 32 || reply.data.len() < n * 4 {
            return Err(LinuxError::X11Request {
                what: "GetImage".into(),
                source: cause(format!(
                    "unsupported screen format (depth {depth}, {} bytes for {n} pixels); run the X server at 24-bit depth",
                    reply.data.len()
                )),
            });
        }
        let mut data = Vec::with_capacity(n * 3);
        for px in reply.data.chunks_exact(4).take(n) {
            // little-endian BGRX
            data.extend_from_slice(&[px[2], px[1], px[0]]);
        }
        Ok(RgbImage {
            width: cw,
            height: ch,
            data,
        })
    }

    /// The child of the root window on top at a screen point (a top-level window, its
    /// window-manager frame, or a popup), if any: the hit test before an XTEST click.
    pub fn top_at(&self, x: i32, y: i32) -> Result<Option<Window>, LinuxError> {
        let r = self
            .conn
            .translate_coordinates(self.root, self.root, x as i16, y as i16)
            .map_err(xerr("TranslateCoordinates"))?
            .reply()
            .map_err(xerr("TranslateCoordinates"))?;
        Ok((r.child != x11rb::NONE).then_some(r.child))
    }

    /// The child of the root window that holds `win` (its frame when a window manager
    /// reparents it, else the window itself); at most 16 levels up.
    pub fn top_of(&self, win: Window) -> Result<Window, LinuxError> {
        let mut w = win;
        for _ in 0..16 {
            let t = self
                .conn
                .query_tree(w)
                .map_err(xerr("QueryTree"))?
                .reply()
                .map_err(xerr("QueryTree"))?;
            if t.parent == self.root || t.parent == x11rb::NONE {
                return Ok(w);
            }
            w = t.parent;
        }
        Ok(w)
    }

    /// A cheap fingerprint of a screen rectangle (to see whether it changed).
    pub fn fingerprint(&self, x: i32, y: i32, w: u32, h: u32) -> Result<u64, LinuxError> {
        let img = self.capture(x, y, w, h)?;
        // FNV-1a over every 7th byte is plenty to notice a redraw
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in img.data.iter().step_by(7) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        Ok(hash)
    }

    /// The raw pixels of a screen rectangle (clipped to the screen): the settle's look at a
    /// window, compared with the previous look by [`Look::changed_regions`].
    pub fn look(&self, x: i32, y: i32, w: u32, h: u32) -> Result<Look, LinuxError> {
        let x0 = x.clamp(0, self.screen_w as i32);
        let y0 = y.clamp(0, self.screen_h as i32);
        let x1 = (x + w as i32).clamp(0, self.screen_w as i32);
        let y1 = (y + h as i32).clamp(0, self.screen_h as i32);
        let (cw, ch) = ((x1 - x0).max(0) as usize, (y1 - y0).max(0) as usize);
        if cw == 0 || ch == 0 {
            return Ok(Look::default());
        }
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                x0 as i16,
                y0 as i16,
                cw as u16,
                ch as u16,
                !0,
            )
            .map_err(xerr("GetImage"))?
            .reply()
            .map_err(xerr("GetImage"))?;
        let stride = reply.data.len() / ch;
        if stride < cw * 4 {
            return Err(LinuxError::X11Request {
                what: "GetImage".into(),
                source: cause(format!(
                    "unsupported screen format (depth {}, {} bytes for {cw}x{ch} pixels); run the X server at 24-bit depth",
                    reply.depth,
                    reply.data.len()
                )),
            });
        }
        Ok(Look {
            x: x0,
            y: y0,
            w: cw,
            h: ch,
            stride,
            data: reply.data,
        })
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
    pub fn motion(&self, x: i32, y: i32) -> Result<(), LinuxError> {
        self.fake(xproto::MOTION_NOTIFY_EVENT, 0, x as i16, y as i16)?;
        self.sync()
    }

    /// Press and release a button at a point, `count` times.
    pub fn click(&self, x: i32, y: i32, button: u8, count: u32) -> Result<(), LinuxError> {
        self.motion(x, y)?;
        for _ in 0..count {
            self.fake(xproto::BUTTON_PRESS_EVENT, button, 0, 0)?;
            self.fake(xproto::BUTTON_RELEASE_EVENT, button, 0, 0)?;
        }
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

    /// Find (keycode, needs shift) for a keysym, binding the scratch keycode when missing.
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

    /// Press modifiers, press and release the key, release the modifiers.
    pub fn chord(&self, mods: &[u32], key: u32) -> Result<(), LinuxError> {
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
        if shift && !mods.contains(&crate::x11::keys::sym::SHIFT_L) {
            let (skc, _) = self.keycode_for(km, crate::x11::keys::sym::SHIFT_L)?;
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
}

/// The raw pixels (32 bits each) of a screen rectangle at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Look {
    x: i32,
    y: i32,
    w: usize,
    h: usize,
    stride: usize,
    data: Vec<u8>,
}

impl Look {
    /// Where `self` and `other` differ: one screen rectangle per group of changed pixels
    /// (pixels in neighbouring [`TILE`]-pixel tiles form one group, each given by the
    /// smallest rectangle holding its pixels), leaving out the pixels inside `masks` (screen
    /// rectangles); empty when nothing outside them differs. Two looks of different
    /// rectangles differ everywhere. Apart, a blinking caret and a fading button are two
    /// groups, so the caret can be told apart from a change that matters.
    pub fn changed_regions(&self, other: &Look, masks: &[ufo_core::Rect]) -> Vec<ufo_core::Rect> {
        if (self.x, self.y, self.w, self.h) != (other.x, other.y, other.w, other.h) {
            return vec![ufo_core::Rect::new(
                other.x,
                other.y,
                other.w as u32,
                other.h as u32,
            )];
        }
        let masked = |sx: i32, sy: i32| {
            masks
                .iter()
                .any(|m| sx >= m.x && sx < m.x + m.w as i32 && sy >= m.y && sy < m.y + m.h as i32)
        };
        // per tile: the bounds (x0, y0, x1, y1) of its changed pixels, in look coordinates
        let (tw, th) = (self.w.div_ceil(TILE), self.h.div_ceil(TILE));
        let mut tiles: Vec<Option<(usize, usize, usize, usize)>> = vec![None; tw * th];
        for row in 0..self.h {
            let at = row * self.stride;
            let (a, b) = (
                self.data.get(at..at + self.w * 4),
                other.data.get(at..at + self.w * 4),
            );
            let (Some(a), Some(b)) = (a, b) else { break };
            // (whole rows compare as memory first: most rows did not change)
            if a == b {
                continue;
            }
            let sy = self.y + row as i32;
            for (col, (p, q)) in a.chunks_exact(4).zip(b.chunks_exact(4)).enumerate() {
                // the fourth byte is padding
                if p[..3] != q[..3] && !masked(self.x + col as i32, sy) {
                    let t = &mut tiles[(row / TILE) * tw + col / TILE];
                    *t = Some(match *t {
                        None => (col, row, col, row),
                        Some((x0, y0, x1, y1)) => {
                            (x0.min(col), y0.min(row), x1.max(col), y1.max(row))
                        }
                    });
                }
            }
        }
        // groups of neighbouring changed tiles (8-neighbourhood)
        let mut regions = Vec::new();
        let mut seen = vec![false; tiles.len()];
        for start in 0..tiles.len() {
            if seen[start] || tiles[start].is_none() {
                continue;
            }
            seen[start] = true;
            let mut stack = vec![start];
            let mut bounds = (usize::MAX, usize::MAX, 0, 0);
            while let Some(i) = stack.pop() {
                if let Some((x0, y0, x1, y1)) = tiles[i] {
                    bounds = (
                        bounds.0.min(x0),
                        bounds.1.min(y0),
                        bounds.2.max(x1),
                        bounds.3.max(y1),
                    );
                }
                let (tx, ty) = ((i % tw) as isize, (i / tw) as isize);
                for (dx, dy) in [
                    (-1, -1),
                    (0, -1),
                    (1, -1),
                    (-1, 0),
                    (1, 0),
                    (-1, 1),
                    (0, 1),
                    (1, 1),
                ] {
                    let (nx, ny) = (tx + dx, ty + dy);
                    if nx < 0 || ny < 0 || nx >= tw as isize || ny >= th as isize {
                        continue;
                    }
                    let n = ny as usize * tw + nx as usize;
                    if !seen[n] && tiles[n].is_some() {
                        seen[n] = true;
                        stack.push(n);
                    }
                }
            }
            let (x0, y0, x1, y1) = bounds;
            regions.push(ufo_core::Rect::new(
                self.x + x0 as i32,
                self.y + y0 as i32,
                (x1 - x0 + 1) as u32,
                (y1 - y0 + 1) as u32,
            ));
        }
        regions
    }
}

/// The side of the square tiles [`Look::changed_regions`] groups changed pixels by: changes
/// this close (a glyph's strokes, a button's label and border) are one region.
const TILE: usize = 16;

pub(crate) fn intersect(a: ufo_core::Rect, b: ufo_core::Rect) -> Option<ufo_core::Rect> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.w as i32).min(b.x + b.w as i32);
    let y1 = (a.y + a.h as i32).min(b.y + b.h as i32);
    (x1 > x0 && y1 > y0).then(|| ufo_core::Rect {
        x: x0,
        y: y0,
        w: (x1 - x0) as u32,
        h: (y1 - y0) as u32,
    })
}

/// The smallest rectangle holding all of `rs` (`None` when there are none).
pub(crate) fn union(rs: impl IntoIterator<Item = ufo_core::Rect>) -> Option<ufo_core::Rect> {
    rs.into_iter().reduce(|a, b| {
        let (x0, y0) = (a.x.min(b.x), a.y.min(b.y));
        let x1 = (a.x + a.w as i32).max(b.x + b.w as i32);
        let y1 = (a.y + a.h as i32).max(b.y + b.h as i32);
        ufo_core::Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32)
    })
}

/// Whether a changed rectangle is a text caret blinking (a line at most 2 pixels wide and
/// at most 60 high): toolkits fade it in and out at frame rate for half a second (GTK 4) or
/// flip it twice a second, and it says nothing about what an action did.
pub(crate) fn is_caret(r: &ufo_core::Rect) -> bool {
    r.w <= 2 && r.h <= 60
}

#[cfg(test)]
mod look_tests {
    use super::*;

    fn look(w: usize, h: usize) -> Look {
        Look {
            x: 100,
            y: 50,
            w,
            h,
            stride: w * 4,
            data: vec![0; w * h * 4],
        }
    }

    fn set(l: &mut Look, col: usize, row: usize) {
        let i = row * l.stride + col * 4;
        l.data[i] = 255;
    }

    #[test]
    fn a_region_covers_every_changed_pixel_near_each_other_in_screen_coordinates() {
        let a = look(20, 10);
        let mut b = a.clone();
        assert_eq!(a.changed_regions(&b, &[]), vec![]);
        set(&mut b, 3, 2);
        set(&mut b, 7, 5);
        assert_eq!(
            a.changed_regions(&b, &[]),
            vec![ufo_core::Rect::new(103, 52, 5, 4)]
        );
    }

    #[test]
    fn changes_far_apart_are_regions_of_their_own() {
        let a = look(100, 60);
        let mut b = a.clone();
        set(&mut b, 2, 2);
        // two tiles from the nearest change: apart
        set(&mut b, 60, 3);
        // neighbouring tiles, diagonally: together
        set(&mut b, 15, 15);
        set(&mut b, 16, 16);
        let mut r = a.changed_regions(&b, &[]);
        r.sort_by_key(|r| (r.x, r.y));
        assert_eq!(
            r,
            vec![
                ufo_core::Rect::new(102, 52, 15, 15),
                ufo_core::Rect::new(160, 53, 1, 1)
            ]
        );
        assert_eq!(union(r), Some(ufo_core::Rect::new(102, 52, 59, 15)));
    }

    #[test]
    fn masked_pixels_and_padding_bytes_do_not_count() {
        let a = look(20, 10);
        let mut b = a.clone();
        set(&mut b, 3, 2);
        // the padding byte of another pixel
        b.data[4 * 4 + 3] = 9;
        let mask = ufo_core::Rect {
            x: 102,
            y: 51,
            w: 3,
            h: 3,
        };
        assert_eq!(a.changed_regions(&b, &[mask]), vec![]);
    }

    #[test]
    fn a_thin_line_is_a_caret_and_a_glyph_is_not() {
        let a = look(40, 30);
        let mut caret = a.clone();
        for row in 3..25 {
            set(&mut caret, 10, row);
        }
        let r = a.changed_regions(&caret, &[]);
        assert!(r.len() == 1 && is_caret(&r[0]), "{r:?}");
        let mut glyph = caret.clone();
        set(&mut glyph, 4, 8);
        let r = a.changed_regions(&glyph, &[]);
        assert!(r.len() == 1 && !is_caret(&r[0]), "{r:?}");
    }

    #[test]
    fn looks_of_different_rectangles_differ_everywhere() {
        let a = look(20, 10);
        let b = look(21, 10);
        assert_eq!(
            a.changed_regions(&b, &[]),
            vec![ufo_core::Rect::new(100, 50, 21, 10)]
        );
    }
}
