//! What `ufo doctor` learns of the X server (`doctor.rs` says what it means): whether it
//! answers, whether it has XTEST, which window manager runs, and the accessibility-bus address
//! the display publishes. Read-only, each on a connection of its own.

use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _};

/// What the X server `DISPLAY` names is like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum XServer {
    /// It could not be reached: why.
    Unreachable(String),
    /// It answered.
    Reached {
        /// It has the XTEST extension (input).
        xtest: bool,
        /// The window manager.
        wm: WindowManager,
    },
}

/// The window manager on the X server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WindowManager {
    /// One runs: its name.
    Running(String),
    /// None (no `_NET_SUPPORTING_WM_CHECK` on the root window).
    Missing,
    /// The screen could not be read: not looked at.
    Unknown,
}

/// Look at the X server `display`.
pub(crate) fn check_server(display: &str) -> XServer {
    let (conn, screen) = match x11rb::connect(Some(display)) {
        Ok(c) => c,
        Err(e) => return XServer::Unreachable(e.to_string()),
    };
    let xtest = conn
        .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
        .ok()
        .flatten()
        .is_some();
    let wm = match conn.setup().roots.get(screen).map(|s| s.root) {
        None => WindowManager::Unknown,
        Some(root) => match wm_name(&conn, root) {
            Some(name) => WindowManager::Running(name),
            None => WindowManager::Missing,
        },
    };
    XServer::Reached { xtest, wm }
}

/// The root window's `AT_SPI_BUS` property on `DISPLAY` (`Ok(None)`: not set), or why it
/// could not be read (no X display, the server did not answer).
pub(crate) fn published_bus_address() -> Result<Option<String>, String> {
    let (conn, screen) = x11rb::connect(None).map_err(|e| format!("no X display: {e}"))?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .ok_or_else(|| format!("the X display has no screen {screen}"))?
        .root;
    let failed = |e: &dyn std::fmt::Display| format!("the X server did not answer: {e}");
    let atom = conn
        .intern_atom(false, b"AT_SPI_BUS")
        .map_err(|e| failed(&e))?
        .reply()
        .map_err(|e| failed(&e))?
        .atom;
    let r = conn
        .get_property(false, root, atom, AtomEnum::STRING, 0, 4096)
        .map_err(|e| failed(&e))?
        .reply()
        .map_err(|e| failed(&e))?;
    Ok((!r.value.is_empty()).then(|| String::from_utf8_lossy(&r.value).into_owned()))
}

fn wm_name(conn: &impl Connection, root: u32) -> Option<String> {
    let atom = |name: &str| {
        conn.intern_atom(false, name.as_bytes())
            .ok()?
            .reply()
            .ok()
            .map(|r| r.atom)
    };
    let check = atom("_NET_SUPPORTING_WM_CHECK")?;
    let win = conn
        .get_property(false, root, check, AtomEnum::WINDOW, 0, 1)
        .ok()?
        .reply()
        .ok()?
        .value32()?
        .next()?;
    let name_atom = atom("_NET_WM_NAME")?;
    let utf8 = atom("UTF8_STRING")?;
    let name = conn
        .get_property(false, win, name_atom, utf8, 0, 256)
        .ok()
        .and_then(|c| c.reply().ok())
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
        .unwrap_or_default();
    Some(if name.is_empty() {
        format!("window {win:#x}")
    } else {
        name
    })
}
