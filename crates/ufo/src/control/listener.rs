//! The listener of `<out>/control.sock`: a Unix stream socket only the session's own user
//! may use (mode 0600, and each peer's uid checked through SO_PEERCRED), at most
//! [`MAX_CONNECTIONS`] connections, request lines of at most [`MAX_REQUEST`] bytes, each
//! awaited at most [`IDLE`] (a `watch` connection stays open). The socket file is created at
//! the session's start, a stale one replaced, and removed at its end.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::protocol::{error_line, ok_line, parse_envelope, Envelope, Request, MAX_REQUEST};
use super::Control;
use ufo_core::access::{self, Caller, Verdict};

/// The socket's file name in the trajectory folder.
pub const SOCKET_NAME: &str = "control.sock";
/// Connections served at once; more are told so and closed.
pub const MAX_CONNECTIONS: usize = 16;
/// Of them, `watch` connections at once: the rest stay free for answers, cancels and
/// take-overs however many pages watch.
pub const MAX_WATCHERS: usize = 12;
/// How long a connection may take to send its next request line.
const IDLE: Duration = Duration::from_secs(10);
/// How long a screenshot or an input may take.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a take-over waits for the agent to pause before answering.
const PAUSE_WAIT: Duration = Duration::from_secs(10);
/// How often a Ctrl-C (which sets the flag outside the socket) is looked for.
const CANCEL_POLL: Duration = Duration::from_millis(250);
/// Longest socket path (`sun_path` holds 108 bytes with its terminating zero).
const MAX_PATH: usize = 107;

/// The running control socket; dropping it stops it and removes the file.
pub struct ControlSocket {
    path: PathBuf,
    task: JoinHandle<()>,
}

impl ControlSocket {
    /// Listen on `<out>/control.sock` for `control` (inside a Tokio runtime).
    pub fn start(out: &Path, control: Arc<Control>) -> Result<ControlSocket, String> {
        let path = out.join(SOCKET_NAME);
        if path.as_os_str().len() > MAX_PATH {
            return Err(format!(
                "the control socket path {} is longer than {MAX_PATH} bytes; use a shorter --out",
                path.display()
            ));
        }
        replace_stale(&path)?;
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
        let uid = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::symlink_metadata(&path))
            .map(|m| m.uid())
            .map_err(|e| {
                let _ = std::fs::remove_file(&path);
                format!("cannot make {} private (mode 0600): {e}", path.display())
            })?;
        let task = tokio::spawn(serve(listener, control, uid));
        Ok(ControlSocket { path, task })
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Remove a socket file a dead process left behind (the trajectory folder is locked, so no
/// live session uses it). Only the entry itself goes: a link is removed, never followed.
fn replace_stale(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(format!(
            "{} is a folder; remove it so the session can open its control socket",
            path.display()
        )),
        Ok(_) => std::fs::remove_file(path).map_err(|e| {
            format!(
                "cannot replace the stale control socket {}: {e}",
                path.display()
            )
        }),
        Err(_) => Ok(()),
    }
}

async fn serve(listener: UnixListener, control: Arc<Control>, uid: u32) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let watchers = Arc::new(Semaphore::new(MAX_WATCHERS));
    let mut connections = tokio::task::JoinSet::new();
    let mut poll = tokio::time::interval(CANCEL_POLL);
    let mut seen_cancel = control.cancelled();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if !same_user(&stream, uid) {
                    // another user's process: closed without a word
                    continue;
                }
                match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        let control = control.clone();
                        let watchers = watchers.clone();
                        connections.spawn(async move {
                            connection(stream, control, watchers).await;
                            drop(slot);
                        });
                    }
                    Err(_) => {
                        connections.spawn(refuse(stream));
                    }
                }
            }
            _ = poll.tick() => control.poll_cancel(&mut seen_cancel),
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn same_user(stream: &UnixStream, uid: u32) -> bool {
    stream.peer_cred().is_ok_and(|c| c.uid() == uid)
}

async fn refuse(mut stream: UnixStream) {
    let line = error_line(&format!(
        "the control socket serves at most {MAX_CONNECTIONS} connections at once; close one \
         and try again"
    ));
    let _ = tokio::time::timeout(IDLE, write_line(&mut stream, &line)).await;
}

async fn write_line(stream: &mut (impl tokio::io::AsyncWrite + Unpin), line: &str) -> bool {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    stream.write_all(&bytes).await.is_ok() && stream.flush().await.is_ok()
}

/// Serve one connection: one response line per request line, until it closes, idles too
/// long, sends a line too long, or asks to `watch`.
async fn connection(stream: UnixStream, control: Arc<Control>, watchers: Arc<Semaphore>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut line = Vec::new();
        let limit = (MAX_REQUEST + 2) as u64;
        let got =
            tokio::time::timeout(IDLE, (&mut reader).take(limit).read_until(b'\n', &mut line))
                .await;
        let n = match got {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let complete = line.last() == Some(&b'\n');
        if complete {
            line.pop();
        }
        if !complete && line.len() > MAX_REQUEST {
            let _ = write_line(
                &mut write,
                &error_line(&super::protocol::ProtocolError::TooLong.to_string()),
            )
            .await;
            return;
        }
        if line.iter().all(u8::is_ascii_whitespace) && complete {
            continue;
        }
        let request = match parse_envelope(&line) {
            Ok(Envelope { caller, request }) => match refusal(&control, &caller, &request) {
                None => request,
                Some(why) => {
                    if !write_line(&mut write, &error_line(&why)).await {
                        return;
                    }
                    continue;
                }
            },
            Err(e) => {
                if !write_line(&mut write, &error_line(&e.to_string())).await {
                    return;
                }
                continue;
            }
        };
        if request == Request::Watch {
            let Ok(_watching) = watchers.try_acquire_owned() else {
                let _ = write_line(
                    &mut write,
                    &error_line(&format!(
                        "the control socket serves at most {MAX_WATCHERS} watches at once; \
                         close a page that follows this session"
                    )),
                )
                .await;
                return;
            };
            watch(&mut reader, &mut write, &control).await;
            return;
        }
        let response = handle(&control, request).await;
        if !write_line(&mut write, &response).await {
            return;
        }
    }
}

/// Why `caller` may not make `request` of this session (`None`: it may): the one access rule
/// ([`access::on_session`]) on the session's owner, as the web console applies it before.
fn refusal(control: &Control, caller: &Caller, request: &Request) -> Option<String> {
    match access::on_session(caller, control.owner(), request.op()) {
        Verdict::Allow => None,
        Verdict::Hidden => Some(match caller {
            Caller::Token(p) => format!(
                "this session is not shared with the token {:?}: its owner shares it with \
                 `--share {}`",
                p.name, p.name
            ),
            Caller::Owner => "refused".into(),
        }),
        Verdict::Forbidden(why) => Some(why),
    }
}

/// `watch`: the state now, then once per change, until the session ends or the peer leaves
/// (its end of the connection closes: noticed at once, not at the next change, so a page that
/// went holds no slot).
async fn watch(
    read: &mut (impl tokio::io::AsyncRead + Unpin),
    write: &mut (impl tokio::io::AsyncWrite + Unpin),
    control: &Control,
) {
    let mut rx = control.subscribe();
    let mut last = Value::Null;
    let mut ignored = [0u8; 256];
    loop {
        let state = control.state();
        if state != last {
            if !write_line(write, &state.to_string()).await {
                return;
            }
            last = state;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            // a watcher has nothing more to say: whatever it sends is dropped, its end closes it
            read = read.read(&mut ignored) => if !matches!(read, Ok(n) if n > 0) { return },
        }
    }
}

/// The response line to one request (not `watch`).
async fn handle(control: &Control, request: Request) -> String {
    let result: Result<Value, String> = match request {
        Request::State | Request::Watch => return control.state().to_string(),
        Request::Answer { id, value } => control.answer_from_console(id, value).map(|()| json!({})),
        Request::Cancel => {
            control.cancel();
            Ok(json!({}))
        }
        Request::Takeover => match control.takeover() {
            Ok(()) => Ok(json!({"paused": control.wait_paused(PAUSE_WAIT).await})),
            Err(e) => Err(e),
        },
        Request::Handback => control.handback().map(|()| json!({})),
        Request::View => view(control).await,
        Request::Input(input) => match control.taken_screen("input") {
            Ok(screen) => match tokio::time::timeout(SCREEN_TIMEOUT, screen.input(&input)).await {
                Ok(Ok(())) => Ok(json!({})),
                Ok(Err(e)) => Err(format!("the input was not sent: {e}")),
                Err(_) => Err(format!(
                    "the input was not sent within {} s; the private desktop may be hung",
                    SCREEN_TIMEOUT.as_secs()
                )),
            },
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(Value::Object(mut m)) if !m.is_empty() => {
            m.insert("ok".into(), true.into());
            Value::Object(m).to_string()
        }
        Ok(_) => ok_line(),
        Err(e) => error_line(&e),
    }
}

async fn view(control: &Control) -> Result<Value, String> {
    let screen = control.taken_screen("view")?;
    match tokio::time::timeout(SCREEN_TIMEOUT, screen.view()).await {
        Ok(Ok(shot)) => Ok(json!({
            "png": base64::engine::general_purpose::STANDARD.encode(shot.png.as_slice()),
            "width": shot.width,
            "height": shot.height,
        })),
        Ok(Err(e)) => Err(format!(
            "cannot take a screenshot of the private desktop: {e}"
        )),
        Err(_) => Err(format!(
            "no screenshot within {} s; the private desktop may be hung",
            SCREEN_TIMEOUT.as_secs()
        )),
    }
}
