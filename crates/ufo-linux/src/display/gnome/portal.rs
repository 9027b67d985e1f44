//! The RemoteDesktop and ScreenCast portals (`org.freedesktop.portal.Desktop`), the path of a
//! person's own GNOME session (docs/desktop.md, "GNOME"; docs/security.md, "GNOME's
//! portals"): a remote-desktop session with the keyboard and the pointer, a linked screencast
//! of one monitor, started once the person agreed in GNOME's dialog; keys as keysyms,
//! absolute pointer motion on the monitor's stream, and the captures from that stream through
//! the private PipeWire connection the portal opens (it shows this process only what was
//! shared).
//!
//! Consent: the portal keeps a grant only where its version allows. RemoteDesktop version 2
//! takes `persist_mode` and a restore token in `SelectDevices`; version 1 (xdg-desktop-portal
//! 1.16, Debian 12) persists nothing of a remote-desktop session: its ScreenCast (version 4)
//! refuses `persist_mode` there ("Remote desktop sessions cannot persist"), so the dialog asks
//! once per session. A token the portal gives is kept in ufo's per-user data folder
//! ([`super::consent`]). Measured on GNOME 43 (xdg-desktop-portal 1.16, xdg-desktop-portal-gnome
//! 43, headless shell): CreateSession, SelectDevices and SelectSources answer in under 10 ms
//! each; Start returns when the dialog is answered.
//!
//! Requests follow the portal's protocol: the `Response` signal on the request's object path
//! (made from this connection's unique name and a handle token of ours) is subscribed before
//! the call. Every call and every wait is bounded.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::bus::{Peer, CALL};
use super::consent::TokenFile;
use super::mutter::{Button, RemoteInput};
use crate::display::choice::PortalSource;
use crate::error::cause;
use crate::LinuxError;

const DESKTOP: &str = "org.freedesktop.portal.Desktop";
const DESKTOP_PATH: &str = "/org/freedesktop/portal/desktop";
const RD: &str = "org.freedesktop.portal.RemoteDesktop";
const SC: &str = "org.freedesktop.portal.ScreenCast";
const REQUEST: &str = "org.freedesktop.portal.Request";
const SESSION: &str = "org.freedesktop.portal.Session";
/// Devices asked for: the keyboard (1) and the pointer (2).
const KEYBOARD_AND_POINTER: u32 = 1 | 2;
/// `persist_mode`: until the person revokes it.
const PERSIST_UNTIL_REVOKED: u32 = 2;
/// The first RemoteDesktop version that persists a session (`persist_mode`, `restore_token`).
pub(crate) const RD_PERSISTS_FROM: u32 = 2;

/// Handle tokens of this process (unique per connection is enough; counted from 1).
static NEXT_TOKEN: AtomicU32 = AtomicU32::new(1);

/// The versions of the two portals, as their `version` properties say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions {
    /// `org.freedesktop.portal.RemoteDesktop`'s.
    pub(crate) remote_desktop: u32,
    /// `org.freedesktop.portal.ScreenCast`'s.
    pub(crate) screen_cast: u32,
}

impl Versions {
    /// Whether the portal can keep the person's grant of a remote-desktop session (a restore
    /// token); else the dialog asks every session.
    pub(crate) fn persists(self) -> bool {
        self.remote_desktop >= RD_PERSISTS_FROM
    }
}

/// The portals' versions (an error when xdg-desktop-portal does not answer: not installed, or
/// not running in this session).
pub(crate) async fn versions(conn: &zbus::Connection) -> Result<Versions, LinuxError> {
    let get = |iface: &'static str| async move {
        let v: OwnedValue = Peer::Portal
            .call(
                conn,
                DESKTOP,
                DESKTOP_PATH,
                "org.freedesktop.DBus.Properties",
                "Get",
                &(iface, "version"),
            )
            .await?;
        u32::try_from(v).map_err(|e| LinuxError::Wayland {
            what: format!("{iface}'s version"),
            source: cause(e.to_string()),
        })
    };
    Ok(Versions {
        remote_desktop: get(RD).await?,
        screen_cast: get(SC).await?,
    })
}

/// A started portal session: its handle, the monitor stream, and the PipeWire connection the
/// portal opened for it.
pub(crate) struct Portal {
    conn: zbus::Connection,
    session: OwnedObjectPath,
    /// The monitor stream's PipeWire node.
    pub(crate) node: u32,
    /// The monitor's size, as the stream says.
    pub(crate) size: Option<(u32, u32)>,
    /// The PipeWire connection to read the stream through (taken by the display).
    pub(crate) remote: Option<OwnedFd>,
    /// How the session was granted.
    pub(crate) grant: Grant,
}

/// How a portal session was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The portals' versions.
    pub(crate) versions: Versions,
    /// Whether a kept restore token was offered.
    pub(crate) restored: bool,
    /// Whether the portal gave a new token (kept for the next session).
    pub(crate) token_kept: bool,
    /// From the first call to the started session (the dialog's time included).
    pub(crate) took: Duration,
    /// What the person was asked to share: the stream is that monitor's, or that window's.
    pub(crate) source: PortalSource,
}

impl Portal {
    /// Ask for a remote-desktop session with the keyboard and pointer and one `source` (a
    /// monitor, or a window the person picks): the person answers GNOME's dialog (unless a
    /// kept token restores the grant) within `consent`; then the PipeWire connection to the
    /// stream.
    pub(crate) async fn open(
        conn: &zbus::Connection,
        tokens: &TokenFile,
        consent: Duration,
        source: PortalSource,
    ) -> Result<Portal, LinuxError> {
        let started = Instant::now();
        let versions = versions(conn).await.map_err(|e| LinuxError::Wayland {
            what: "the RemoteDesktop portal".into(),
            source: cause(format!(
                "xdg-desktop-portal does not answer on the session bus ({e}); install \
                 xdg-desktop-portal and xdg-desktop-portal-gnome"
            )),
        })?;
        let session = create_session(conn).await?;
        let kept = versions.persists().then(|| tokens.load()).flatten();
        let restored = kept.is_some();
        let chosen = select_and_start(conn, &session, versions, kept, consent, source).await;
        let started_session = match chosen {
            Ok(s) => s,
            Err(e) => {
                close(conn, &session).await;
                return Err(e);
            }
        };
        let token_kept = started_session
            .token
            .as_deref()
            .is_some_and(|t| keep_token(tokens, t));
        let remote = open_pipewire_remote(conn, &session).await?;
        let portal = Portal {
            conn: conn.clone(),
            session,
            node: started_session.node,
            size: started_session.size,
            remote: Some(remote),
            grant: Grant {
                versions,
                restored,
                token_kept,
                took: started.elapsed(),
                source,
            },
        };
        // a window's stream: its pointer lies in the window's buffer, whose size the stream
        // gives, so the corner primed is inside it as the monitor's is
        super::mutter::prime(&portal, portal.size).await?;
        Ok(portal)
    }

    async fn notify<B>(&self, method: &str, body: &B) -> Result<(), LinuxError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        Peer::Portal
            .call(&self.conn, DESKTOP, DESKTOP_PATH, RD, method, body)
            .await
    }

    fn options() -> HashMap<&'static str, Value<'static>> {
        HashMap::new()
    }
}

#[async_trait::async_trait]
impl RemoteInput for Portal {
    async fn key(&self, keysym: u32, down: bool) -> Result<(), LinuxError> {
        let sym = i32::try_from(keysym)
            .map_err(|_| LinuxError::Unsupported(format!("keysym {keysym:#x} is out of range")))?;
        let state = u32::from(down);
        self.notify(
            "NotifyKeyboardKeysym",
            &(self.session.as_ref(), Self::options(), sym, state),
        )
        .await
    }

    async fn move_to(&self, x: f64, y: f64) -> Result<(), LinuxError> {
        self.notify(
            "NotifyPointerMotionAbsolute",
            &(self.session.as_ref(), Self::options(), self.node, x, y),
        )
        .await
    }

    async fn button(&self, b: Button) -> Result<(), LinuxError> {
        let s = self.session.as_ref();
        match b {
            Button::Press(code) => {
                for state in [1u32, 0] {
                    self.notify("NotifyPointerButton", &(&s, Self::options(), code, state))
                        .await?;
                }
                Ok(())
            }
            Button::Wheel(axis, steps) => {
                self.notify(
                    "NotifyPointerAxisDiscrete",
                    &(&s, Self::options(), axis, steps),
                )
                .await
            }
        }
    }

    async fn stop(&self) {
        close(&self.conn, &self.session).await;
    }
}

/// What `Start` gave: the monitor stream and a restore token.
struct Started {
    node: u32,
    size: Option<(u32, u32)>,
    token: Option<String>,
}

/// `CreateSession`: the new session's handle.
async fn create_session(conn: &zbus::Connection) -> Result<OwnedObjectPath, LinuxError> {
    let session_token = handle_token();
    let created = request(conn, RD, "CreateSession", CALL, |t| {
        (HashMap::from([
            ("handle_token", Value::from(t)),
            ("session_handle_token", Value::from(session_token.clone())),
        ]),)
    })
    .await?;
    created
        .get("session_handle")
        .and_then(|v| match plain(v) {
            Value::Str(s) => OwnedObjectPath::try_from(s.as_str()).ok(),
            Value::ObjectPath(p) => Some(OwnedObjectPath::from(p.to_owned())),
            _ => None,
        })
        .ok_or_else(|| LinuxError::Wayland {
            what: "the RemoteDesktop portal".into(),
            source: cause("CreateSession gave no session handle"),
        })
}

/// `SelectDevices` (with persistence and the kept token where the version allows),
/// `SelectSources`, then `Start`: the dialog, waited for up to `consent`.
async fn select_and_start(
    conn: &zbus::Connection,
    session: &OwnedObjectPath,
    versions: Versions,
    kept: Option<String>,
    consent: Duration,
    source: PortalSource,
) -> Result<Started, LinuxError> {
    let s = session.clone();
    request(conn, RD, "SelectDevices", CALL, |t| {
        let mut o = HashMap::from([
            ("handle_token", Value::from(t)),
            ("types", Value::from(KEYBOARD_AND_POINTER)),
        ]);
        if versions.persists() {
            o.insert("persist_mode", Value::from(PERSIST_UNTIL_REVOKED));
            if let Some(k) = kept {
                o.insert("restore_token", Value::from(k));
            }
        }
        (s.as_ref(), o)
    })
    .await?;
    // no persist_mode here: a remote-desktop session's screencast persists with it (or,
    // before RemoteDesktop 2, not at all: the portal refuses it)
    let s = session.clone();
    request(conn, SC, "SelectSources", CALL, |t| {
        (
            s.as_ref(),
            HashMap::from([
                ("handle_token", Value::from(t)),
                ("types", Value::from(source.portal_type())),
                ("multiple", Value::from(false)),
            ]),
        )
    })
    .await?;
    let s = session.clone();
    let result = request(conn, RD, "Start", consent, |t| {
        (
            s.as_ref(),
            "",
            HashMap::from([("handle_token", Value::from(t))]),
        )
    })
    .await?;
    started_of(&result)
}

/// The started session's stream and token, when it has the keyboard, the pointer and a stream.
fn started_of(result: &HashMap<String, OwnedValue>) -> Result<Started, LinuxError> {
    let devices = result
        .get("devices")
        .and_then(|v| match plain(v) {
            Value::U32(d) => Some(*d),
            _ => None,
        })
        .unwrap_or(0);
    if devices & KEYBOARD_AND_POINTER != KEYBOARD_AND_POINTER {
        return Err(LinuxError::Unsupported(format!(
            "the person shared the screen but not the keyboard and pointer (devices \
             {devices}); start again and tick \"Allow remote interaction\" in GNOME's dialog"
        )));
    }
    let Some((node, size)) = result.get("streams").and_then(|v| first_stream(v)) else {
        return Err(LinuxError::Wayland {
            what: "the ScreenCast portal".into(),
            source: cause(
                "the session started with no stream; choose a monitor or window to share",
            ),
        });
    };
    let token = result.get("restore_token").and_then(|v| match plain(v) {
        Value::Str(t) => Some(t.to_string()),
        _ => None,
    });
    Ok(Started { node, size, token })
}

/// Keep a restore token the portal gave; whether it was kept (a failure is logged: the dialog
/// asks again next time).
fn keep_token(tokens: &TokenFile, token: &str) -> bool {
    match tokens.save(token) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(
                "GNOME portal: the restore token could not be kept ({e}); the dialog will ask \
                 again next time"
            );
            false
        }
    }
}

/// A handle token of this process (the request's last path element).
fn handle_token() -> String {
    format!("ufo{}", NEXT_TOKEN.fetch_add(1, Ordering::Relaxed))
}

/// The request object path the portal makes for `token` on this connection.
fn request_path(unique: &str, token: &str) -> String {
    let sender = unique.trim_start_matches(':').replace('.', "_");
    format!("{DESKTOP_PATH}/request/{sender}/{token}")
}

/// Why a request was not granted, by its response code.
fn refused(iface: &str, method: &str, code: u32) -> LinuxError {
    let why = match code {
        1 => "the person cancelled GNOME's dialog (or closed it); start again and choose Share",
        _ => "the portal ended the request (another error; see xdg-desktop-portal's log)",
    };
    LinuxError::Wayland {
        what: format!("{iface}.{method}"),
        source: cause(format!("not granted (response {code}): {why}")),
    }
}

/// Make a request: subscribe to its `Response`, call `method` with the body `body` makes of
/// the handle token, and wait (bounded by `within`) for the response's results.
async fn request<B>(
    conn: &zbus::Connection,
    iface: &str,
    method: &str,
    within: Duration,
    body: impl FnOnce(String) -> B,
) -> Result<HashMap<String, OwnedValue>, LinuxError>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    let token = handle_token();
    let unique = conn
        .unique_name()
        .map(|n| n.to_string())
        .ok_or_else(|| LinuxError::Wayland {
            what: "the portal".into(),
            source: cause("the session bus connection has no name"),
        })?;
    let path = request_path(&unique, &token);
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface(REQUEST)
        .and_then(|b| b.member("Response"))
        .and_then(|b| b.path(path.as_str()))
        .map_err(Peer::Portal.failed(method))?
        .build();
    let mut responses = zbus::MessageStream::for_match_rule(rule, conn, Some(4))
        .await
        .map_err(Peer::Portal.failed(method))?;
    let _: OwnedObjectPath = Peer::Portal
        .call(
            conn,
            DESKTOP,
            DESKTOP_PATH,
            iface,
            method,
            &body(token.clone()),
        )
        .await?;
    let msg = match tokio::time::timeout(within, responses.next()).await {
        Ok(Some(Ok(m))) => m,
        Ok(Some(Err(e))) => return Err(Peer::Portal.failed(method)(e)),
        Ok(None) => {
            return Err(LinuxError::Wayland {
                what: format!("{iface}.{method}"),
                source: cause("the session bus closed before the portal answered"),
            })
        }
        Err(_) => {
            // the dialog stays up otherwise
            let _ = Peer::Portal
                .call::<_, ()>(conn, DESKTOP, &path, REQUEST, "Close", &())
                .await;
            return Err(LinuxError::Timeout {
                what: format!(
                    "{iface}.{method} (the portal's answer; a consent dialog waits for the \
                     person)"
                ),
                ms: within.as_millis() as u64,
            });
        }
    };
    let (code, results): (u32, HashMap<String, OwnedValue>) = msg
        .body()
        .deserialize()
        .map_err(Peer::Portal.failed(method))?;
    if code != 0 {
        return Err(refused(iface, method, code));
    }
    Ok(results)
}

/// The value inside however many variant wrappings.
fn plain<'a, 'v>(v: &'a Value<'v>) -> &'a Value<'v> {
    match v {
        Value::Value(inner) => plain(inner),
        other => other,
    }
}

/// The first stream of `Start`'s `streams` (`a(ua{sv})`): its node and size.
fn first_stream(v: &Value<'_>) -> Option<(u32, Option<(u32, u32)>)> {
    let Value::Array(streams) = plain(v) else {
        return None;
    };
    let Value::Structure(s) = plain(streams.inner().first()?) else {
        return None;
    };
    let node = match plain(s.fields().first()?) {
        Value::U32(n) => *n,
        _ => return None,
    };
    let size = match s.fields().get(1).map(plain) {
        Some(Value::Dict(d)) => d
            .iter()
            .find(|(k, _)| matches!(plain(k), Value::Str(k) if k.as_str() == "size"))
            .and_then(|(_, v)| size_of(v)),
        _ => None,
    };
    Some((node, size))
}

/// A `(ii)` size, under however many variant wrappings.
fn size_of(v: &Value<'_>) -> Option<(u32, u32)> {
    let Value::Structure(s) = plain(v) else {
        return None;
    };
    match s.fields() {
        [w, h] => match (plain(w), plain(h)) {
            (Value::I32(w), Value::I32(h)) => {
                Some((u32::try_from(*w).ok()?, u32::try_from(*h).ok()?))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The PipeWire connection of a started session (`OpenPipeWireRemote`).
async fn open_pipewire_remote(
    conn: &zbus::Connection,
    session: &OwnedObjectPath,
) -> Result<OwnedFd, LinuxError> {
    let fd: zbus::zvariant::OwnedFd = Peer::Portal
        .call(
            conn,
            DESKTOP,
            DESKTOP_PATH,
            SC,
            "OpenPipeWireRemote",
            &(session.as_ref(), Portal::options()),
        )
        .await?;
    Ok(fd.into())
}

/// End a session (errors ignored: it may be gone already).
async fn close(conn: &zbus::Connection, session: &OwnedObjectPath) {
    let _ = Peer::Portal
        .call::<_, ()>(conn, DESKTOP, session.as_str(), SESSION, "Close", &())
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::zvariant::{Array, Dict, Signature, Structure, StructureBuilder};

    #[test]
    fn a_request_path_is_the_unique_name_without_colon_and_dots_then_the_token() {
        assert_eq!(
            request_path(":1.45", "ufo3"),
            "/org/freedesktop/portal/desktop/request/1_45/ufo3"
        );
    }

    #[test]
    fn only_remote_desktop_2_and_later_persist() {
        let v = |rd| Versions {
            remote_desktop: rd,
            screen_cast: 4,
        };
        assert!(!v(1).persists(), "xdg-desktop-portal 1.16 (Debian 12)");
        assert!(v(2).persists());
    }

    #[test]
    fn the_first_stream_gives_its_node_and_size() {
        let mut props = Dict::new(
            &Signature::try_from("s").unwrap(),
            &Signature::try_from("v").unwrap(),
        );
        props
            .append(
                Value::from("size"),
                Value::Value(Box::new(Value::from(Structure::from((1280i32, 800i32))))),
            )
            .unwrap();
        props
            .append(
                Value::from("source_type"),
                Value::Value(Box::new(Value::U32(1))),
            )
            .unwrap();
        let stream = StructureBuilder::new()
            .add_field(37u32)
            .append_field(Value::Dict(props))
            .build()
            .unwrap();
        let streams = Array::from(vec![Value::Structure(stream)]);
        assert_eq!(
            first_stream(&Value::Array(streams)),
            Some((37, Some((1280, 800))))
        );
        assert_eq!(first_stream(&Value::U32(3)), None, "not streams");
    }

    #[test]
    fn a_start_without_the_keyboard_and_pointer_is_refused_with_what_to_tick() {
        let r = HashMap::from([("devices".to_string(), OwnedValue::from(2u32))]);
        let e = started_of(&r).err().expect("refused").to_string();
        assert!(e.contains("Allow remote interaction"), "{e}");
        let r = HashMap::from([("devices".to_string(), OwnedValue::from(3u32))]);
        assert!(started_of(&r).is_err(), "no stream");
    }

    #[test]
    fn a_cancelled_dialog_says_what_to_do() {
        let e = refused(RD, "Start", 1).to_string() + &format!("{:?}", refused(RD, "Start", 1));
        assert!(e.contains("cancelled") && e.contains("Share"), "{e}");
    }
}
