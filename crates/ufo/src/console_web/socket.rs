//! The client side of a session's control socket, `<out>/control.sock` (docs/console.md,
//! "The control socket"): one JSON request line, one JSON response line; or `watch`, a
//! stream of state lines. Every connect, write and read is bounded in time and size. Each
//! request says whom the console sends it for (`"as"`), so the session applies the same
//! access rule again ([`with_caller`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use ufo_core::access::Caller;

/// The socket's file name in a trajectory folder.
pub const SOCKET: &str = "control.sock";
/// Longest answer line read (a `view` carries a whole screenshot in base64).
pub const MAX_LINE: u64 = 48 << 20;
/// Longest wait for a connection and for an answer.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// Why a request through the socket failed.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// No session listens (it ended, or has not started yet).
    #[error("the session is not running (no control socket answers at {0}); it may have ended")]
    NotRunning(PathBuf),
    /// The session took too long.
    #[error("the session did not answer within {0:?}; try again")]
    Timeout(Duration),
    /// The connection broke or the answer was not JSON.
    #[error("the session's control socket failed: {0}; try again")]
    Broken(String),
}

/// The socket of the session in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

async fn connect(sock: &Path) -> Result<UnixStream, SocketError> {
    match tokio::time::timeout(TIMEOUT, UnixStream::connect(sock)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(_)) => Err(SocketError::NotRunning(sock.to_path_buf())),
        Err(_) => Err(SocketError::Timeout(TIMEOUT)),
    }
}

/// Read one line of at most [`MAX_LINE`] bytes; `None` at the end of the stream.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
) -> Result<Option<Value>, SocketError> {
    let mut buf = Vec::new();
    let n = r
        .take(MAX_LINE)
        .read_until(b'\n', &mut buf)
        .await
        .map_err(|e| SocketError::Broken(e.to_string()))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') && n as u64 >= MAX_LINE {
        return Err(SocketError::Broken(format!(
            "an answer longer than {MAX_LINE} bytes"
        )));
    }
    serde_json::from_slice(&buf)
        .map(Some)
        .map_err(|e| SocketError::Broken(format!("an answer that is not JSON ({e})")))
}

/// Send `request` to the socket `sock` and return its answer.
pub async fn request(sock: &Path, request: &Value) -> Result<Value, SocketError> {
    let work = async {
        let mut stream = connect(sock).await?;
        let mut line =
            serde_json::to_vec(request).map_err(|e| SocketError::Broken(e.to_string()))?;
        line.push(b'\n');
        stream
            .write_all(&line)
            .await
            .map_err(|e| SocketError::Broken(e.to_string()))?;
        let mut reader = BufReader::new(stream);
        read_line(&mut reader)
            .await?
            .ok_or_else(|| SocketError::Broken("the session closed the connection".into()))
    };
    tokio::time::timeout(TIMEOUT, work)
        .await
        .unwrap_or(Err(SocketError::Timeout(TIMEOUT)))
}

/// `request` sent for `caller`: a token holder's name and role as `"as"`; the owner's own
/// requests carry none.
pub fn with_caller(mut request: Value, caller: &Caller) -> Value {
    if let (Caller::Token(p), Some(m)) = (caller, request.as_object_mut()) {
        m.insert("as".into(), serde_json::to_value(p).unwrap_or(Value::Null));
    }
    request
}

/// The session's state (`{"op":"state"}`) as `caller` may see it, or `None` when no session
/// answers in time (or it refuses).
pub async fn state(dir: &Path, caller: &Caller) -> Option<Value> {
    let sock = path(dir);
    if !crate::folder::exists(&sock) {
        return None;
    }
    let answer = tokio::time::timeout(
        Duration::from_secs(2),
        request(
            &sock,
            &with_caller(serde_json::json!({"op": "state"}), caller),
        ),
    )
    .await
    .ok()?
    .ok()?;
    (answer["ok"] == true).then_some(answer)
}

/// A `watch` of the session's state: each line it sends, until it closes.
pub struct Watch {
    reader: BufReader<UnixStream>,
}

impl Watch {
    /// Start watching the session at `sock` for `caller`.
    pub async fn start(sock: &Path, caller: &Caller) -> Result<Watch, SocketError> {
        let mut stream = connect(sock).await?;
        let mut line = with_caller(serde_json::json!({"op": "watch"}), caller).to_string();
        line.push('\n');
        tokio::time::timeout(TIMEOUT, stream.write_all(line.as_bytes()))
            .await
            .map_err(|_| SocketError::Timeout(TIMEOUT))?
            .map_err(|e| SocketError::Broken(e.to_string()))?;
        Ok(Watch {
            reader: BufReader::new(stream),
        })
    }

    /// The next state line; `None` when the session closed the watch.
    pub async fn next(&mut self) -> Option<Value> {
        read_line(&mut self.reader).await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UnixListener;

    /// A fake session: answers each request line with `answer(request)`.
    async fn fake(sock: PathBuf, answer: fn(&Value) -> String) {
        let listener = UnixListener::bind(&sock).expect("bind");
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut r = BufReader::new(s);
                    let mut line = String::new();
                    while r.read_line(&mut line).await.unwrap_or(0) > 0 {
                        let req: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                        let out = answer(&req);
                        if r.get_mut().write_all(out.as_bytes()).await.is_err() {
                            break;
                        }
                        line.clear();
                    }
                });
            }
        });
    }

    #[tokio::test]
    async fn a_request_gets_its_answer_and_a_missing_socket_says_not_running() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = path(dir.path());
        let err = request(&sock, &serde_json::json!({"op":"state"}))
            .await
            .expect_err("nobody listens");
        assert!(matches!(err, SocketError::NotRunning(_)), "{err}");
        fake(sock.clone(), |req| {
            format!("{{\"ok\":true,\"op\":{}}}\n", req["op"])
        })
        .await;
        let answer = request(&sock, &serde_json::json!({"op":"cancel"}))
            .await
            .expect("answer");
        assert_eq!(answer["op"], "cancel");
        assert_eq!(
            state(dir.path(), &Caller::Owner).await.expect("state")["op"],
            "state"
        );
    }

    #[tokio::test]
    async fn an_answer_that_is_not_json_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = path(dir.path());
        fake(sock.clone(), |_| "not json\n".to_string()).await;
        let err = request(&sock, &serde_json::json!({"op":"state"}))
            .await
            .expect_err("refused");
        assert!(matches!(err, SocketError::Broken(_)), "{err}");
    }
}
