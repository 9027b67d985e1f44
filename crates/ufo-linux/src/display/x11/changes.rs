//! The X11 change watch (issue 13): its own X connection listens, on a thread of its own, for
//! X Damage on the windows settling watches (every redraw of them) and for windows appearing,
//! going away or moving (structure events on the root window: a dialog or a menu opening).
//! Nothing is asked of the applications: the X server reports what they draw, so listening
//! costs them no work.
//!
//! The same connection asks an application whether it has handled the input sent to it so
//! far ([`XChangeWatch::ping`]): a `_NET_WM_PING` client message goes to its window behind the
//! input events, and the toolkit answers it on the root window once it has read every event
//! queued before it (Firefox and Chromium did so here; an idle Firefox within 2 ms).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::damage::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{
    ChangeWindowAttributesAux, ClientMessageEvent, ConnectionExt as _, EventMask,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use crate::display::watch::{Change, ChangeLog, ChangeWatch};
use crate::display::WinId;

/// The mark in the fourth word of ufo's pings ("ufo" in ASCII), so that their answers are
/// told from those to the window manager's pings (which carry a server time instead of a
/// number of ufo's in the second word).
const PING_MARK: u32 = 0x0075_666f;

/// The atoms of a ping: `WM_PROTOCOLS` (the message's type) and `_NET_WM_PING`.
#[derive(Debug, Clone, Copy)]
struct PingAtoms {
    protocols: u32,
    ping: u32,
}

/// The number of ufo's ping that a client message on the root window answers, if it is one:
/// a `WM_PROTOCOLS` message whose words are `_NET_WM_PING`, the number, the window, and
/// ufo's mark (the toolkit sends the ping back unchanged but for the window it is sent to).
fn pong_of(atoms: PingAtoms, ty: u32, format: u8, data: [u32; 5]) -> Option<u32> {
    (format == 32 && ty == atoms.protocols && data[0] == atoms.ping && data[3] == PING_MARK)
        .then_some(data[1])
}

/// Change notifications from the X server: damage on the watched windows, windows mapped,
/// unmapped or moved anywhere.
pub(crate) struct XChangeWatch {
    conn: Arc<RustConnection>,
    log: Arc<ChangeLog>,
    /// the watched windows and their damage objects
    watched: Mutex<Vec<(WinId, u32)>>,
    atoms: PingAtoms,
    /// the number of the next ping
    next_ping: AtomicU32,
}

impl XChangeWatch {
    /// Connect and start listening; `None` when the X server lacks DAMAGE or the connection
    /// fails (settling then falls back to comparing pixels).
    pub(crate) fn start() -> Option<XChangeWatch> {
        let display = std::env::var("DISPLAY").ok()?;
        let (conn, screen) = x11rb::connect(Some(&display)).ok()?;
        conn.damage_query_version(1, 1).ok()?.reply().ok()?;
        let root = conn.setup().roots.get(screen)?.root;
        conn.change_window_attributes(
            root,
            &ChangeWindowAttributesAux::new().event_mask(EventMask::SUBSTRUCTURE_NOTIFY),
        )
        .ok()?
        .check()
        .ok()?;
        let atom = |name: &[u8]| conn.intern_atom(false, name).ok()?.reply().ok();
        let atoms = PingAtoms {
            protocols: atom(b"WM_PROTOCOLS")?.atom,
            ping: atom(b"_NET_WM_PING")?.atom,
        };
        let conn = Arc::new(conn);
        let log = Arc::new(ChangeLog::default());
        let (c, l) = (Arc::clone(&conn), Arc::clone(&log));
        std::thread::Builder::new()
            .name("ufo-x-changes".into())
            .spawn(move || listen(&c, &l, atoms))
            .ok()?;
        Some(XChangeWatch {
            conn,
            log,
            watched: Mutex::new(Vec::new()),
            atoms,
            next_ping: AtomicU32::new(1),
        })
    }
}

impl ChangeWatch for XChangeWatch {
    fn log(&self) -> &ChangeLog {
        &self.log
    }

    fn ping(&self, id: WinId) -> Option<u32> {
        let n = self.next_ping.fetch_add(1, Ordering::Relaxed);
        let data = [self.atoms.ping, n, id.0, PING_MARK, 0];
        let ev = ClientMessageEvent::new(32, id.0, self.atoms.protocols, data);
        self.conn
            .send_event(false, id.0, EventMask::NO_EVENT, ev)
            .ok()?;
        self.conn.flush().ok()?;
        Some(n)
    }

    fn watch(&self, ids: &[WinId]) {
        let mut g = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        let (keep, gone): (Vec<_>, Vec<_>) = g.drain(..).partition(|(w, _)| ids.contains(w));
        *g = keep;
        for (_, old) in gone {
            let _ = self.conn.damage_destroy(old);
        }
        for &id in ids {
            if g.iter().any(|(w, _)| *w == id) {
                continue;
            }
            let Ok(damage) = self.conn.generate_id() else {
                continue;
            };
            let made = self
                .conn
                .damage_create(damage, id.0, damage::ReportLevel::BOUNDING_BOX)
                .ok()
                .and_then(|c| c.check().ok());
            if made.is_some() {
                g.push((id, damage));
            }
        }
        let _ = self.conn.flush();
    }
}

/// The listening thread: every damage or structure event is a change (damage is acknowledged
/// at once so the next redraw reports again); an answer to a ping is kept. Ends when the
/// connection breaks.
fn listen(conn: &RustConnection, log: &ChangeLog, atoms: PingAtoms) {
    while let Ok(ev) = conn.wait_for_event() {
        let at = Instant::now();
        let change = match ev {
            Event::ClientMessage(m) => {
                if let Some(n) = pong_of(atoms, m.type_, m.format, m.data.as_data32()) {
                    log.note_pong(n, at);
                }
                None
            }
            Event::DamageNotify(n) => {
                let _ = conn.damage_subtract(n.damage, 0u32, 0u32);
                let _ = conn.flush();
                Some((true, false, None))
            }
            Event::MapNotify(e) => {
                log.note_shown(WinId(e.window));
                Some((false, true, None))
            }
            Event::CreateNotify(e) => {
                // (a window the application maps itself, a menu or a helper that is never
                // shown, is not waited for: only the window manager maps late)
                if !e.override_redirect {
                    log.note_made(WinId(e.window), at);
                }
                Some((false, false, None))
            }
            // (a managed window is reparented into the window manager's frame, and the
            // frame, not the window, is mapped on the root)
            Event::ReparentNotify(e) => {
                log.note_shown(WinId(e.window));
                None
            }
            Event::UnmapNotify(e) => Some((false, false, Some(WinId(e.window)))),
            Event::DestroyNotify(e) => {
                log.note_shown(WinId(e.window));
                Some((false, false, Some(WinId(e.window))))
            }
            Event::ConfigureNotify(_) => Some((false, false, None)),
            _ => None,
        };
        if let Some((damage, mapped, gone)) = change {
            log.note(Change {
                at,
                damage,
                mapped,
                gone,
                late: Duration::ZERO,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answer_to_a_ping_of_ufo_is_a_pong() {
        let atoms = PingAtoms {
            protocols: 300,
            ping: 301,
        };
        let answer = [301, 7, 0x1a0_0004, PING_MARK, 0];
        assert_eq!(pong_of(atoms, 300, 32, answer), Some(7));
        // the window manager's own pings carry a server time and no mark
        assert_eq!(
            pong_of(atoms, 300, 32, [301, 123_456, 0x1a0_0004, 0, 0]),
            None
        );
        // another protocol, another type of message, another format
        assert_eq!(
            pong_of(atoms, 300, 32, [302, 7, 0x1a0_0004, PING_MARK, 0]),
            None
        );
        assert_eq!(pong_of(atoms, 299, 32, answer), None);
        assert_eq!(pong_of(atoms, 300, 8, answer), None);
    }

    /// Live (a display with a window manager, `UFO_LIVE_TESTS=1`): a window the window manager
    /// is to map awaits showing from its CreateNotify until the manager took it; a window
    /// that maps itself (override-redirect: a menu, a toolkit's hidden helper) never does.
    #[test]
    fn a_window_made_awaits_the_window_manager_and_a_menu_does_not() {
        use x11rb::protocol::xproto::{CreateWindowAux, WindowClass};
        if std::env::var("UFO_LIVE_TESTS").as_deref() != Ok("1") {
            return;
        }
        let watch = XChangeWatch::start().expect("the X change watch starts on DISPLAY");
        let (conn, screen) = x11rb::connect(None).expect("a second connection");
        let root = conn.setup().roots[screen].root;
        let made = |override_redirect: bool| {
            let id = conn.generate_id().expect("an id");
            let aux = CreateWindowAux::new().override_redirect(u32::from(override_redirect));
            let class = WindowClass::INPUT_OUTPUT;
            conn.create_window(0, id, root, 10, 10, 50, 50, 0, class, 0, &aux)
                .expect("create");
            conn.flush().expect("flush");
            id
        };
        let until = |what: &dyn Fn() -> bool| {
            let t = Instant::now();
            while !what() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            what()
        };
        let t0 = Instant::now();
        let menu = made(true);
        assert!(
            until(&|| watch.log().structure_since(t0)),
            "its CreateNotify"
        );
        assert!(!watch.log().awaits_showing(t0), "a menu maps itself");
        let window = made(false);
        assert!(until(&|| watch.log().awaits_showing(t0)), "made, not shown");
        conn.map_window(menu).expect("map");
        conn.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(50));
        assert!(watch.log().awaits_showing(t0), "the window still waits");
        conn.map_window(window).expect("map");
        conn.flush().expect("flush");
        assert!(
            until(&|| !watch.log().awaits_showing(t0)),
            "the window manager took it"
        );
        for id in [menu, window] {
            let _ = conn.destroy_window(id);
        }
        let _ = conn.flush();
    }
}
