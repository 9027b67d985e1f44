//! KWin over D-Bus (docs/desktop.md, "Wayland"): captures through `org.kde.KWin.ScreenShot2`
//! into a pipe read with a bound, and one-shot scripts ([`super::script`]) loaded through
//! `org.kde.kwin.Scripting`, run, and unloaded, which answer by calling ufo's callback object
//! (only KWin's answers count). The watch script ([`Bus::start_watch`]) is loaded once for
//! the display's life and calls the same object with KWin's changes ([`super::watch`]).
//! Every call is bounded.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use ufo_core::Rect;
use zbus::zvariant::{Fd, OwnedValue, Value};

use super::script::{self, Job, CALLBACK_PATH};
use super::watch::{Event, Watch};
use crate::display::kwin_grant::{self, SCREENSHOT};
use crate::error::cause;
use crate::LinuxError;

const KWIN: &str = "org.kde.KWin";
/// Watch scripts this process loaded so far: the next one's number in its name.
static WATCHES: AtomicU64 = AtomicU64::new(0);

/// The name a watch script is loaded under: `ufo-watch-PID-wN`, the process's Nth (from 0),
/// so that a person or a test can ask KWin whether it is still loaded
/// (`org.kde.kwin.Scripting.isScriptLoaded`).
pub(crate) fn watch_name(pid: u32, n: u64) -> String {
    format!("ufo-watch-{pid}-w{n}")
}
/// Bound on one D-Bus call to KWin.
const CALL: Duration = Duration::from_secs(5);
/// Bound on a script's answer.
const SCRIPT_ANSWER: Duration = Duration::from_secs(3);
/// Most bytes of one capture (an 8K screen of 4-byte pixels).
const CAPTURE_MOST: u64 = 7680 * 4320 * 4;

fn dbus_err(what: &str) -> impl Fn(zbus::Error) -> LinuxError + '_ {
    move |e| LinuxError::Wayland {
        what: format!("KWin over D-Bus: {what}"),
        source: Box::new(e),
    }
}

fn timeout(what: &str, bound: Duration) -> LinuxError {
    LinuxError::Timeout {
        what: format!("KWin ({what})"),
        ms: bound.as_millis() as u64,
    }
}

/// The answer a script is awaited for: its token and where its reply goes.
type Waiting = Arc<Mutex<Option<(String, oneshot::Sender<String>)>>>;

/// Where the watch script's first call ("ready") goes.
type Ready = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// ufo's callback object: KWin's scripts call it with their token and their reply, the watch
/// script with KWin's changes.
struct Callback {
    waiting: Waiting,
    /// KWin's unique name on the bus: nobody else may answer.
    kwin: String,
    watch: Arc<Watch>,
    ready: Ready,
}

#[zbus::interface(name = "org.ufo.KwinScript")]
impl Callback {
    #[zbus(name = "reply")]
    fn reply(
        &self,
        #[zbus(header)] header: zbus::message::Header<'_>,
        token: String,
        body: String,
    ) {
        if header.sender().map(|s| s.as_str()) != Some(self.kwin.as_str()) {
            return;
        }
        let Ok(mut slot) = self.waiting.lock() else {
            return;
        };
        if slot.as_ref().is_some_and(|(t, _)| *t == token) {
            if let Some((_, tx)) = slot.take() {
                let _ = tx.send(body);
            }
        }
    }

    /// A change the watch script reports: what, the window's id and its top-level's.
    #[zbus(name = "event")]
    fn event(
        &self,
        #[zbus(header)] header: zbus::message::Header<'_>,
        kind: String,
        id: String,
        top: String,
    ) {
        if header.sender().map(|s| s.as_str()) != Some(self.kwin.as_str()) {
            return;
        }
        match Event::parse(&kind, &id, &top) {
            Some(Event::Ready) => {
                if let Some(tx) = self.ready.lock().ok().and_then(|mut r| r.take()) {
                    let _ = tx.send(());
                }
            }
            Some(e) => self.watch.note(&e),
            None => {}
        }
    }
}

/// The D-Bus side of a KWin display.
pub(crate) struct Bus {
    conn: zbus::Connection,
    waiting: Waiting,
    ready: Ready,
    /// The name of the watch script while it is loaded.
    watching: Option<String>,
    tokens: AtomicU64,
    /// Where scripts are written for KWin to read.
    scripts: PathBuf,
    /// what keeps the bus connection's peer alive, when a connector made it
    _peer: Option<Box<dyn std::fmt::Debug + Send>>,
}

/// The session bus's socket path in a D-Bus address (`unix:path=...`, the first such entry).
fn unix_path(address: &str) -> Option<PathBuf> {
    address.split(';').find_map(|entry| {
        let rest = entry.strip_prefix("unix:")?;
        rest.split(',')
            .find_map(|kv| kv.strip_prefix("path="))
            .map(PathBuf::from)
    })
}

/// A bus connection made by a connector, and what keeps its peer alive.
type Through = (tokio::net::UnixStream, Box<dyn std::fmt::Debug + Send>);

/// The bus connection `connector` makes for the session bus at `address` (else
/// `DBUS_SESSION_BUS_ADDRESS`), with what keeps its peer alive; `None`: connect here.
fn through(
    address: Option<&str>,
    connector: Option<&dyn crate::WaylandConnector>,
) -> Result<Option<Through>, LinuxError> {
    let Some(c) = connector else {
        return Ok(None);
    };
    let address = address
        .map(str::to_string)
        .or_else(|| std::env::var("DBUS_SESSION_BUS_ADDRESS").ok());
    let Some(path) = address.as_deref().and_then(unix_path) else {
        return Ok(None);
    };
    let made = match c.connect_bus(&path) {
        None => return Ok(None),
        Some(made) => made.map_err(|e| LinuxError::Wayland {
            what: "the session bus through ufo's helper".into(),
            source: e,
        })?,
    };
    let io = |e: std::io::Error| LinuxError::Wayland {
        what: "the session bus through ufo's helper".into(),
        source: Box::new(e),
    };
    made.stream.set_nonblocking(true).map_err(io)?;
    let stream = tokio::net::UnixStream::from_std(made.stream).map_err(io)?;
    Ok(Some((stream, made.keep_until_bound)))
}

impl Bus {
    /// Connect to the session bus (at `address`, else `DBUS_SESSION_BUS_ADDRESS`), find KWin
    /// on it and serve the callback object (the watch script's calls go to `watch`).
    /// Through `connector` when it makes bus connections: KWin checks the caller of its
    /// screenshot interface by the executable of the connection's peer, which it cannot read
    /// for ufo (not dumpable).
    pub(crate) async fn open(
        address: Option<&str>,
        watch: Arc<Watch>,
        connector: Option<&dyn crate::WaylandConnector>,
    ) -> Result<Bus, LinuxError> {
        let (builder, peer) = match through(address, connector)? {
            Some((stream, peer)) => (zbus::connection::Builder::unix_stream(stream), Some(peer)),
            None => (
                match address {
                    Some(a) => zbus::connection::Builder::address(a),
                    None => zbus::connection::Builder::session(),
                }
                .map_err(dbus_err("the session bus address"))?,
                None,
            ),
        };
        let conn = tokio::time::timeout(CALL, builder.method_timeout(CALL).build())
            .await
            .map_err(|_| timeout("connecting to the session bus", CALL))?
            .map_err(dbus_err("connecting to the session bus"))?;
        let dbus = zbus::fdo::DBusProxy::new(&conn)
            .await
            .map_err(dbus_err("the bus"))?;
        let name = zbus::names::BusName::try_from(KWIN)
            .map_err(|e| dbus_err("KWin's name")(zbus::Error::from(e)))?;
        let kwin = dbus
            .get_name_owner(name)
            .await
            .map_err(|e| LinuxError::Wayland {
                what: "KWin over D-Bus".into(),
                source: cause(format!(
                    "org.kde.KWin is not on the session bus ({e}): is this KWin's session, and \
                 DBUS_SESSION_BUS_ADDRESS its bus?"
                )),
            })?;
        let waiting: Waiting = Arc::default();
        let ready: Ready = Arc::default();
        conn.object_server()
            .at(
                CALLBACK_PATH,
                Callback {
                    waiting: Arc::clone(&waiting),
                    kwin: kwin.to_string(),
                    watch,
                    ready: Arc::clone(&ready),
                },
            )
            .await
            .map_err(dbus_err("serving the script callback"))?;
        Ok(Bus {
            conn,
            waiting,
            ready,
            watching: None,
            tokens: AtomicU64::new(1),
            scripts: script_dir(),
            _peer: peer,
        })
    }

    async fn call<B>(
        &self,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message, LinuxError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        tokio::time::timeout(
            CALL,
            self.conn
                .call_method(Some(KWIN), path, Some(iface), method, body),
        )
        .await
        .map_err(|_| timeout(method, CALL))?
        .map_err(dbus_err(method))
    }

    /// ufo's unique name on the bus, which scripts call back.
    fn me(&self) -> String {
        self.conn
            .unique_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    async fn unload(&self, name: &str) {
        let _ = self
            .call(
                "/Scripting",
                "org.kde.kwin.Scripting",
                "unloadScript",
                &(name,),
            )
            .await;
    }

    /// Run a one-shot script and return its reply: written to a file KWin reads, loaded,
    /// run (Plasma 5.27's object path, else Plasma 6's), its answer awaited (bounded), then
    /// unloaded and its file removed whatever happened.
    pub(crate) async fn run(&self, job: &Job) -> Result<String, LinuxError> {
        let token = self.tokens.fetch_add(1, Ordering::Relaxed);
        let name = format!("ufo-{}-{token}", std::process::id());
        let file = self.scripts.join(format!("{name}.js"));
        write_script(&file, &script::script(job, &self.me(), token))?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.waiting.lock() {
            *slot = Some((token.to_string(), tx));
        }
        let answer = self.load_and_run(&file, &name, rx).await;
        self.unload(&name).await;
        let _ = std::fs::remove_file(&file);
        answer
    }

    /// Load the watch script for the display's life and wait (bounded) for its first call,
    /// which says it follows every window; its file is removed once KWin has read it. On an
    /// error it is unloaded (settling then compares pixels).
    pub(crate) async fn start_watch(&mut self) -> Result<(), LinuxError> {
        let name = watch_name(std::process::id(), WATCHES.fetch_add(1, Ordering::Relaxed));
        let file = self.scripts.join(format!("{name}.js"));
        write_script(&file, &script::watch_script(&self.me(), &name))?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.ready.lock() {
            *slot = Some(tx);
        }
        let started = self.load_and_run(&file, &name, rx).await;
        let _ = std::fs::remove_file(&file);
        match started {
            Ok(()) => {
                self.watching = Some(name);
                Ok(())
            }
            Err(e) => {
                self.unload(&name).await;
                Err(e)
            }
        }
    }

    /// Unload the watch script (the display is dropped).
    pub(crate) async fn stop_watch(&mut self) {
        if let Some(name) = self.watching.take() {
            self.unload(&name).await;
        }
    }

    /// Load and run a script, then wait (bounded) for its answer on `rx`.
    async fn load_and_run<T>(
        &self,
        file: &std::path::Path,
        name: &str,
        rx: oneshot::Receiver<T>,
    ) -> Result<T, LinuxError> {
        let path = file.to_string_lossy().to_string();
        let id: i32 = self
            .call(
                "/Scripting",
                "org.kde.kwin.Scripting",
                "loadScript",
                &(path.as_str(), name),
            )
            .await?
            .body()
            .deserialize()
            .map_err(dbus_err("loadScript's answer"))?;
        if id < 0 {
            return Err(LinuxError::Wayland {
                what: "KWin scripting".into(),
                source: cause(format!(
                    "KWin would not load the script {path} (answer {id})"
                )),
            });
        }
        let mut ran = None;
        for obj in [format!("/{id}"), format!("/Scripting/Script{id}")] {
            match self.call(&obj, "org.kde.kwin.Script", "run", &()).await {
                Ok(_) => {
                    ran = None;
                    break;
                }
                Err(e) => ran = Some(e),
            }
        }
        if let Some(e) = ran {
            return Err(e);
        }
        tokio::time::timeout(SCRIPT_ANSWER, rx)
            .await
            .map_err(|_| {
                timeout(
                    "a script's answer; it may have failed, see KWin's log",
                    SCRIPT_ANSWER,
                )
            })?
            .map_err(|_| timeout("a script's answer", SCRIPT_ANSWER))
    }

    /// Capture a screen rectangle: `ScreenShot2.CaptureArea` into a pipe read on a blocking
    /// thread (KWin writes after it answered). Returns where the pixels lie and their BGRX
    /// rows.
    pub(crate) async fn capture(&self, area: Rect) -> Result<(Rect, Vec<u8>), LinuxError> {
        let io = |what: &'static str| {
            move |e: std::io::Error| LinuxError::Wayland {
                what: what.into(),
                source: Box::new(e),
            }
        };
        let (reader, writer) = std::io::pipe().map_err(io("a pipe for the capture"))?;
        let reading = tokio::task::spawn_blocking(move || {
            let mut buf = Vec::new();
            reader.take(CAPTURE_MOST).read_to_end(&mut buf).map(|_| buf)
        });
        let mut opts: HashMap<&str, Value<'_>> = HashMap::new();
        opts.insert("include-cursor", Value::from(false));
        opts.insert("native-resolution", Value::from(true));
        let fd: std::os::fd::OwnedFd = writer.into();
        let reply = self
            .call(
                "/org/kde/KWin/ScreenShot2",
                SCREENSHOT,
                "CaptureArea",
                &(area.x, area.y, area.w, area.h, opts, Fd::from(&fd)),
            )
            .await;
        // our copy of the write end: the read ends when KWin closes its own
        drop(fd);
        let reply = reply.map_err(not_granted)?;
        let meta: HashMap<String, OwnedValue> = reply
            .body()
            .deserialize()
            .map_err(dbus_err("the capture's answer"))?;
        let raw = tokio::time::timeout(CALL, reading)
            .await
            .map_err(|_| timeout("the capture's pixels", CALL))?
            .map_err(|e| LinuxError::Wayland {
                what: "capture".into(),
                source: cause(e.to_string()),
            })?
            .map_err(io("reading the capture"))?;
        let get = |k: &str| meta.get(k).and_then(|v| u32::try_from(v).ok());
        let shape = Shape {
            width: get("width").unwrap_or(0),
            height: get("height").unwrap_or(0),
            stride: get("stride").unwrap_or(0),
            format: get("format").unwrap_or(0),
        };
        let bgrx = to_bgrx(&raw, shape)?;
        Ok((Rect::new(area.x, area.y, shape.width, shape.height), bgrx))
    }
}

/// A capture's shape, as KWin describes it.
#[derive(Debug, Clone, Copy)]
struct Shape {
    width: u32,
    height: u32,
    stride: u32,
    /// The `QImage::Format` number.
    format: u32,
}

/// The rows of a capture as BGRX, from QImage's 32-bit formats (RGB32, ARGB32 and its
/// premultiplied form: B, G, R, A bytes in memory).
fn to_bgrx(raw: &[u8], s: Shape) -> Result<Vec<u8>, LinuxError> {
    let bad = |why: String| LinuxError::Wayland {
        what: "capture".into(),
        source: cause(why),
    };
    if !matches!(s.format, 4..=6) {
        return Err(bad(format!(
            "KWin sent QImage format {}, not one ufo reads (RGB32, ARGB32)",
            s.format
        )));
    }
    let (w, h, stride) = (s.width as usize, s.height as usize, s.stride as usize);
    if w == 0 || h == 0 || stride < w * 4 {
        return Err(bad(format!(
            "KWin sent a capture of {w}x{h}, stride {stride}"
        )));
    }
    let mut out = Vec::with_capacity(w * h * 4);
    for row in 0..h {
        let line = raw.get(row * stride..row * stride + w * 4).ok_or_else(|| {
            bad(format!(
                "the capture holds {} bytes, short of {w}x{h}",
                raw.len()
            ))
        })?;
        out.extend_from_slice(line);
    }
    Ok(out)
}

/// A refused capture explained: KWin grants ScreenShot2 by a `.desktop` file.
fn not_granted(e: LinuxError) -> LinuxError {
    let text = e.to_string();
    if !text.contains("NoAuthorized") {
        return e;
    }
    let exe = std::env::current_exe()
        .ok()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .unwrap_or_default();
    LinuxError::Unsupported(format!(
        "KWin refuses ufo's captures: no .desktop file grants {} {SCREENSHOT}; run `ufo \
         doctor` for the file to install in ~/.local/share/applications (its Exec= must be \
         this executable):\n{}",
        exe.display(),
        kwin_grant::grant_file(&exe)
    ))
}

/// Where scripts are written: `XDG_RUNTIME_DIR` (the person's own, private), else the
/// temporary folder (KWin may run as another user there).
fn script_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir)
}

/// Write a script KWin can read, never over another file.
fn write_script(path: &std::path::Path, text: &str) -> Result<(), LinuxError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| LinuxError::Wayland {
        what: format!("writing the KWin script {}", path.display()),
        source: Box::new(e),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bus_socket_is_read_from_the_first_unix_path_entry() {
        assert_eq!(
            unix_path("unix:path=/tmp/dbus-x,guid=ab12"),
            Some(PathBuf::from("/tmp/dbus-x"))
        );
        assert_eq!(
            unix_path("unix:abstract=/tmp/a,guid=1;unix:guid=2,path=/run/bus"),
            Some(PathBuf::from("/run/bus"))
        );
        assert_eq!(unix_path("tcp:host=localhost,port=1"), None);
        assert_eq!(unix_path("unix:abstract=/tmp/a"), None);
    }

    #[test]
    fn captures_become_bgrx_rows_and_bad_ones_are_refused() {
        // 2x2, stride 12: four bytes of padding per row
        let raw = [
            1, 2, 3, 255, 4, 5, 6, 255, 0, 0, 0, 0, //
            7, 8, 9, 255, 10, 11, 12, 255, 0, 0, 0, 0,
        ];
        let s = Shape {
            width: 2,
            height: 2,
            stride: 12,
            format: 6,
        };
        let out = to_bgrx(&raw, s).expect("pixels");
        assert_eq!(
            out,
            vec![1, 2, 3, 255, 4, 5, 6, 255, 7, 8, 9, 255, 10, 11, 12, 255]
        );
        assert!(to_bgrx(&raw[..16], s).is_err());
        assert!(to_bgrx(&raw, Shape { format: 13, ..s }).is_err());
        assert!(to_bgrx(&raw, Shape { stride: 4, ..s }).is_err());
    }
}
