//! Mutter's own remote-desktop interfaces (docs/desktop.md, "GNOME"):
//! `org.gnome.Mutter.RemoteDesktop` for keys and the pointer, and a linked
//! `org.gnome.Mutter.ScreenCast` session recording the monitor, whose PipeWire stream gives the
//! captures and places the absolute pointer (Mutter moves it only on a stream). Used on a
//! private GNOME desktop ufo started, where no one is asked: on a person's session these would
//! bypass the consent the portals ask, and ufo does not use them there.
//!
//! Mutter makes a session's virtual keyboard and pointer known to applications only with the
//! session's first event, and that first event is lost: [`Remote::open`] sends a Shift press
//! and a pointer motion first and waits a little (measured: 20 of 20 first keys typed, against
//! 1 of 20 without; without the motion, the first click was lost now and then).
//! The session is kept for the display's life. Every call is bounded.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::bus::Peer;
use crate::display::keys::sym;
use crate::LinuxError;

const RD: &str = "org.gnome.Mutter.RemoteDesktop";
const RD_PATH: &str = "/org/gnome/Mutter/RemoteDesktop";
const RD_SESSION: &str = "org.gnome.Mutter.RemoteDesktop.Session";
const SC: &str = "org.gnome.Mutter.ScreenCast";
const SC_PATH: &str = "/org/gnome/Mutter/ScreenCast";
const SC_SESSION: &str = "org.gnome.Mutter.ScreenCast.Session";
const SC_STREAM: &str = "org.gnome.Mutter.ScreenCast.Stream";
/// Longest wait for the monitor stream's PipeWire node once the session started.
const NODE_WAIT: Duration = Duration::from_secs(5);
/// How long the first (lost) events are given before real input follows.
const PRIME_WAIT: Duration = Duration::from_millis(50);

/// evdev's left, right and middle buttons.
const BTN_LEFT: i32 = 0x110;
const BTN_RIGHT: i32 = 0x111;
const BTN_MIDDLE: i32 = 0x112;

/// What a pointer button number (1 left, 2 middle, 3 right, 4–7 the wheel) is on Mutter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Button {
    /// An evdev button code.
    Press(i32),
    /// A wheel step: axis (0 vertical, 1 horizontal) and direction.
    Wheel(u32, i32),
}

/// The Mutter form of button `n`; `None` for a number no pointer has.
pub(crate) fn button(n: u8) -> Option<Button> {
    Some(match n {
        1 => Button::Press(BTN_LEFT),
        2 => Button::Press(BTN_MIDDLE),
        3 => Button::Press(BTN_RIGHT),
        4 => Button::Wheel(0, -1),
        5 => Button::Wheel(0, 1),
        6 => Button::Wheel(1, -1),
        7 => Button::Wheel(1, 1),
        _ => return None,
    })
}

/// The input half of a remote-desktop session, whoever grants it: Mutter's own interface on a
/// private desktop ([`Remote`]), or on a person's session the RemoteDesktop portal, which takes
/// the same keysyms, evdev buttons, wheel steps and motion on a stream of its ScreenCast. The
/// GNOME display sends all its input through this, and reads its captures from the session's
/// PipeWire node, so a portal session can take Mutter's place.
#[async_trait::async_trait]
pub(crate) trait RemoteInput: Send + Sync {
    /// Press or release a keysym.
    async fn key(&self, keysym: u32, down: bool) -> Result<(), LinuxError>;
    /// Move the pointer to a point of the recorded monitor.
    async fn move_to(&self, x: f64, y: f64) -> Result<(), LinuxError>;
    /// Press and release a button (or step the wheel) where the pointer is.
    async fn button(&self, b: Button) -> Result<(), LinuxError>;
    /// End the session (its stream ends with it).
    async fn stop(&self);
}

/// A started remote-desktop session with its monitor stream.
#[derive(Clone)]
pub(crate) struct Remote {
    conn: zbus::Connection,
    rd: OwnedObjectPath,
    stream: OwnedObjectPath,
    /// The monitor stream's PipeWire node.
    pub(crate) node: u32,
    /// The monitor's size, as the stream says (`None`: it did not say).
    pub(crate) size: Option<(u32, u32)>,
}

/// What a remote-desktop session's linked ScreenCast session records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The primary monitor: the display's own session.
    Monitor,
    /// The window that has the keyboard focus when the session is made (Mutter 43's
    /// `RecordWindow` without a `window-id`: Mutter gives other programs no window ids).
    FocusedWindow,
}

impl Remote {
    /// Create a remote-desktop session and a ScreenCast session linked to it, record the
    /// primary monitor (the cursor left out of the frames), start, wait for the stream's
    /// node, and prime the input.
    pub(crate) async fn open(conn: &zbus::Connection) -> Result<Remote, LinuxError> {
        Self::open_recording(conn, Source::Monitor).await
    }

    /// A session of its own recording `source`: Mutter 43 starts no stream added to a
    /// started session (`RecordWindow` answers, `PipeWireStreamAdded` never comes) and links
    /// one ScreenCast session to a remote-desktop session ("already have an associated screen
    /// cast session"), so a window's stream comes with a remote-desktop session of its own,
    /// whose pointer moves in the window's coordinates. Mutter ends it when the window goes.
    pub(crate) async fn open_recording(
        conn: &zbus::Connection,
        source: Source,
    ) -> Result<Remote, LinuxError> {
        let (rd, sc) = linked_sessions(conn).await?;
        let stream = match source {
            Source::Monitor => record_monitor(conn, &sc).await?,
            Source::FocusedWindow => record_focused_window(conn, &sc).await?,
        };
        let owner: String = Peer::Mutter
            .call(
                conn,
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetNameOwner",
                &(SC,),
            )
            .await?;
        // only Mutter's own signal on this stream's path counts
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(owner.as_str())
            .and_then(|b| b.path(stream.as_str()))
            .and_then(|b| b.interface(SC_STREAM))
            .and_then(|b| b.member("PipeWireStreamAdded"))
            .map_err(Peer::Mutter.failed("the stream's signal"))?
            .build();
        let mut added = zbus::MessageStream::for_match_rule(rule, conn, Some(4))
            .await
            .map_err(Peer::Mutter.failed("the stream's signal"))?;
        let _: () = Peer::Mutter
            .call(conn, RD, rd.as_str(), RD_SESSION, "Start", &())
            .await?;
        let node = match tokio::time::timeout(NODE_WAIT, added.next()).await {
            Ok(Some(Ok(m))) => m
                .body()
                .deserialize::<u32>()
                .map_err(Peer::Mutter.failed("PipeWireStreamAdded"))?,
            _ => {
                return Err(LinuxError::Timeout {
                    what: format!(
                        "Mutter's {} stream (PipeWireStreamAdded; are pipewire and \
                         wireplumber running in the session?)",
                        match source {
                            Source::Monitor => "monitor",
                            Source::FocusedWindow => "window",
                        }
                    ),
                    ms: NODE_WAIT.as_millis() as u64,
                })
            }
        };
        let size = stream_size(conn, &stream).await;
        let remote = Remote {
            conn: conn.clone(),
            rd,
            stream,
            node,
            size,
        };
        prime(&remote, remote.size).await?;
        Ok(remote)
    }

    async fn session_call<B>(&self, method: &str, body: &B) -> Result<(), LinuxError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType + Sync,
    {
        Peer::Mutter
            .call(&self.conn, RD, self.rd.as_str(), RD_SESSION, method, body)
            .await
    }
}

#[async_trait::async_trait]
impl RemoteInput for Remote {
    async fn key(&self, keysym: u32, down: bool) -> Result<(), LinuxError> {
        self.session_call("NotifyKeyboardKeysym", &(keysym, down))
            .await
    }

    async fn move_to(&self, x: f64, y: f64) -> Result<(), LinuxError> {
        self.session_call("NotifyPointerMotionAbsolute", &(self.stream.as_str(), x, y))
            .await
    }

    async fn button(&self, b: Button) -> Result<(), LinuxError> {
        match b {
            Button::Press(code) => {
                self.session_call("NotifyPointerButton", &(code, true))
                    .await?;
                self.session_call("NotifyPointerButton", &(code, false))
                    .await
            }
            Button::Wheel(axis, steps) => {
                self.session_call("NotifyPointerAxisDiscrete", &(axis, steps))
                    .await
            }
        }
    }

    async fn stop(&self) {
        let _ = self.session_call("Stop", &()).await;
    }
}

/// A new remote-desktop session and a ScreenCast session linked to it.
async fn linked_sessions(
    conn: &zbus::Connection,
) -> Result<(OwnedObjectPath, OwnedObjectPath), LinuxError> {
    let rd: OwnedObjectPath = Peer::Mutter
        .call(conn, RD, RD_PATH, RD, "CreateSession", &())
        .await?;
    let id: OwnedValue = Peer::Mutter
        .call(
            conn,
            RD,
            rd.as_str(),
            "org.freedesktop.DBus.Properties",
            "Get",
            &(RD_SESSION, "SessionId"),
        )
        .await?;
    let id = String::try_from(id).map_err(|e| LinuxError::Wayland {
        what: "Mutter's remote-desktop session id".into(),
        source: crate::error::cause(e.to_string()),
    })?;
    let link: HashMap<&str, Value<'_>> =
        HashMap::from([("remote-desktop-session-id", Value::from(id.as_str()))]);
    let sc: OwnedObjectPath = Peer::Mutter
        .call(conn, SC, SC_PATH, SC, "CreateSession", &(link,))
        .await?;
    Ok((rd, sc))
}

/// The first events of a session's keyboard and pointer are lost (Mutter's own session and
/// a portal's, which Mutter serves): a Shift press and release, a motion to the bottom-right
/// corner of the monitor of size `size` (no hot corner there, unlike the top-left one, which
/// opens the overview), then a pause.
pub(crate) async fn prime(
    input: &(impl RemoteInput + ?Sized),
    size: Option<(u32, u32)>,
) -> Result<(), LinuxError> {
    input.key(sym::SHIFT_L, true).await?;
    input.key(sym::SHIFT_L, false).await?;
    let (w, h) = size.unwrap_or((1280, 800));
    input
        .move_to(
            f64::from(w.saturating_sub(1)),
            f64::from(h.saturating_sub(1)),
        )
        .await?;
    tokio::time::sleep(PRIME_WAIT).await;
    Ok(())
}

/// Record the primary monitor (`""`; Mutter's headless virtual monitor is `Meta-0` when an
/// older Mutter wants a connector named), the cursor left out.
async fn record_monitor(
    conn: &zbus::Connection,
    sc: &OwnedObjectPath,
) -> Result<OwnedObjectPath, LinuxError> {
    let mut last = None;
    for connector in ["", "Meta-0"] {
        let props: HashMap<&str, Value<'_>> = HashMap::from([("cursor-mode", Value::from(0u32))]);
        match Peer::Mutter
            .call(
                conn,
                SC,
                sc.as_str(),
                SC_SESSION,
                "RecordMonitor",
                &(connector, props),
            )
            .await
        {
            Ok(p) => return Ok(p),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| LinuxError::Unsupported("no monitor to record".into())))
}

/// Record the window that has the keyboard focus (no `window-id`: Mutter offers other
/// programs no window ids), the cursor left out. Mutter answers "Window not found" when no
/// window has the focus.
async fn record_focused_window(
    conn: &zbus::Connection,
    sc: &OwnedObjectPath,
) -> Result<OwnedObjectPath, LinuxError> {
    let props: HashMap<&str, Value<'_>> = HashMap::from([("cursor-mode", Value::from(0u32))]);
    Peer::Mutter
        .call(conn, SC, sc.as_str(), SC_SESSION, "RecordWindow", &(props,))
        .await
}

/// The monitor's size from the stream's parameters (`size`: two integers).
async fn stream_size(conn: &zbus::Connection, stream: &OwnedObjectPath) -> Option<(u32, u32)> {
    let params: OwnedValue = Peer::Mutter
        .call(
            conn,
            SC,
            stream.as_str(),
            "org.freedesktop.DBus.Properties",
            "Get",
            &(SC_STREAM, "Parameters"),
        )
        .await
        .ok()?;
    let params = HashMap::<String, OwnedValue>::try_from(params).ok()?;
    let (w, h) = <(i32, i32)>::try_from(params.get("size")?.try_clone().ok()?).ok()?;
    Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_are_evdev_codes_and_the_wheel_is_discrete_steps() {
        assert_eq!(button(1), Some(Button::Press(0x110)));
        assert_eq!(button(3), Some(Button::Press(0x111)));
        assert_eq!(button(2), Some(Button::Press(0x112)));
        assert_eq!(button(4), Some(Button::Wheel(0, -1)), "up");
        assert_eq!(button(5), Some(Button::Wheel(0, 1)), "down");
        assert_eq!(button(9), None);
    }
}
