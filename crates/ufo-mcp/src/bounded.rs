//! A stdio MCP server's output, bounded: one message (one line) is at most
//! [`MAX_MESSAGE_BYTES`], like a model's answer. rmcp's own line reader has no limit, so an
//! endless line from a server would fill memory; here the server's stdout is read through
//! [`BoundedLines`], which fails the stream once a line grows past the cap. The transport
//! then closes, the pending call fails, and [`BoundedChild`] stops the server.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// The longest message (line) read from an MCP server: 16 MiB, the cap of a model's answer.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// An [`AsyncRead`] that fails with [`io::ErrorKind::InvalidData`] once more than `cap`
/// bytes arrive without a newline, and raises `tripped` so the caller can say why.
pub(crate) struct BoundedLines<R> {
    inner: R,
    cap: usize,
    /// Bytes since the last newline.
    open_line: usize,
    tripped: Arc<AtomicBool>,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, cap: usize, tripped: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            cap,
            open_line: 0,
            tripped,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.tripped.load(Ordering::SeqCst) {
            return Poll::Ready(Err(too_long(self.cap)));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        // every line of what arrived, the first one continuing the open line
        let mut open_line = self.open_line;
        let mut longest = 0;
        for (i, part) in buf.filled()[before..].split(|b| *b == b'\n').enumerate() {
            if i > 0 {
                longest = longest.max(open_line);
                open_line = 0;
            }
            open_line = open_line.saturating_add(part.len());
        }
        self.open_line = open_line;
        if longest.max(open_line) > self.cap {
            // a read that fails delivers nothing
            buf.set_filled(before);
            self.tripped.store(true, Ordering::SeqCst);
            return Poll::Ready(Err(too_long(self.cap)));
        }
        Poll::Ready(Ok(()))
    }
}

fn too_long(cap: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the server sent a message longer than {} MiB", cap >> 20),
    )
}

/// A stdio MCP server: the child process and the transport over its stdin and (bounded)
/// stdout. The child is killed when this is dropped or closed.
pub(crate) struct BoundedChild {
    child: Child,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

/// How long [`BoundedChild::close`] waits for the server to exit once its stdin is closed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

impl BoundedChild {
    /// Start `cmd` with piped stdin and stdout (and stderr, returned), killed on drop. Lines
    /// of its stdout longer than `cap` raise `tripped` and close the transport.
    pub(crate) fn spawn(
        mut cmd: Command,
        cap: usize,
        tripped: Arc<AtomicBool>,
    ) -> io::Result<(Self, Option<ChildStderr>)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(io::Error::other(
                "the server's stdin or stdout was not piped",
            ));
        };
        let stderr = child.stderr.take();
        let transport = AsyncRwTransport::new(BoundedLines::new(stdout, cap, tripped), stdin);
        Ok((Self { child, transport }, stderr))
    }
}

impl Transport<RoleClient> for BoundedChild {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Close the server's stdin, give it [`EXIT_WAIT`] to exit, then kill it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.transport.close().await;
        if tokio::time::timeout(EXIT_WAIT, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &'static [u8], cap: usize) -> (io::Result<Vec<u8>>, bool) {
        let tripped = Arc::new(AtomicBool::new(false));
        let mut reader = BoundedLines::new(input, cap, tripped.clone());
        let mut out = Vec::new();
        let result = reader.read_to_end(&mut out).await.map(|_| out);
        (result, tripped.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn lines_up_to_the_cap_pass_and_a_longer_one_fails() {
        let (ok, tripped) = read_all(b"abcd\nefgh\nij", 4).await;
        assert_eq!(ok.expect("within the cap"), b"abcd\nefgh\nij");
        assert!(!tripped);
        let (err, tripped) = read_all(b"abcd\nefghi\n", 4).await;
        let err = err.expect_err("a line of 5 bytes");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("longer than"), "{err}");
        assert!(tripped);
    }
}
