//! The Wayland connection to KWin made by a helper process (docs/desktop.md, "Private Wayland
//! desktops"). KWin offers its fake input only to a program whose executable a `.desktop` file
//! names, and it finds the executable through `/proc/<pid>/exe` of the process that connected.
//! It cannot read that for ufo: ufo is not dumpable (docs/security.md), and when ufo runs as
//! root KWin runs as another user. So ufo starts `ufo wayland-connect SOCKET` (its own
//! executable; as the desktop's user when there is one), which connects, hands the connected
//! socket back over a socket pair (`SCM_RIGHTS`) and stays alive until ufo has bound its
//! globals; KWin then sees ufo's executable, run by its own user.

use std::io::{IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The hidden subcommand the helper runs.
pub(crate) const SUBCOMMAND: &str = "wayland-connect";
/// Longest wait for the helper's connected socket.
const HAND_WAIT: Duration = Duration::from_secs(10);
/// Longest the helper waits for ufo to say it has bound its globals.
const BOUND_WAIT: Duration = Duration::from_secs(30);
/// Longest wait for the helper to end once released.
const END_WAIT: Duration = Duration::from_secs(2);
/// Most bytes of the helper's error output kept for a message.
const MOST_ERROR: u64 = 4096;

/// Connects through the helper, as `user` (uid, gid) when given, else as ufo's own user;
/// the helper carries `mark` (the private desktop's, so that its reaper ends it too).
#[derive(Debug, Clone)]
pub(crate) struct HelperConnector {
    /// ufo's executable.
    pub(crate) exe: PathBuf,
    /// The user to connect as.
    pub(crate) user: Option<(u32, u32)>,
    /// The private desktop's mark variable and value, if any.
    pub(crate) mark: Option<(String, String)>,
}

/// The helper, kept until the display has bound its globals: dropping it tells the helper to
/// end (its socket pair closes) and waits for it, bounded.
#[derive(Debug)]
struct Helper {
    ours: Option<UnixStream>,
    child: Child,
}

impl Drop for Helper {
    fn drop(&mut self) {
        drop(self.ours.take());
        let deadline = Instant::now() + END_WAIT;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ufo_linux::WaylandConnector for HelperConnector {
    fn connect(&self, socket: &Path) -> Result<ufo_linux::WaylandStream, ufo_linux::Cause> {
        self.connect_through_helper(socket, false)
    }

    // the session bus, through a helper that stays while the connection lives: KWin checks
    // the caller of its screenshot interface by the executable of the connection's peer
    fn connect_bus(
        &self,
        socket: &Path,
    ) -> Option<Result<ufo_linux::WaylandStream, ufo_linux::Cause>> {
        // only as ufo's own user: the bus authenticates the connection by the uid ufo claims,
        // which must be its peer's (a private KWin, run as another user, checks no caller)
        let me = nix::unistd::geteuid().as_raw();
        if self.user.is_some_and(|(uid, _)| uid != me) {
            return None;
        }
        Some(self.connect_through_helper(socket, true))
    }
}

impl HelperConnector {
    /// Start the helper on `socket` (to hold until ufo's end with `hold`) and take the
    /// connection it hands over.
    fn connect_through_helper(
        &self,
        socket: &Path,
        hold: bool,
    ) -> Result<ufo_linux::WaylandStream, ufo_linux::Cause> {
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| format!("cannot make a socket pair for the Wayland helper: {e}"))?;
        let mut c = Command::new(&self.exe);
        c.arg(SUBCOMMAND).arg(socket);
        if hold {
            c.arg("--hold");
        }
        c.env_clear()
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some((k, v)) = &self.mark {
            c.env(k, v);
        }
        if let Some((uid, gid)) = self.user {
            c.uid(uid).gid(gid);
        }
        let child = c.spawn().map_err(|e| {
            format!(
                "cannot start {} {SUBCOMMAND} (ufo's own executable, run as the desktop's \
                 user, makes the connection KWin identifies; that user must be able to run it): \
                 {e}",
                self.exe.display()
            )
        })?;
        let mut helper = Helper {
            ours: Some(ours),
            child,
        };
        match receive(helper.ours.as_ref()) {
            Ok(stream) => Ok(ufo_linux::WaylandStream {
                stream,
                keep_until_bound: Box::new(helper),
            }),
            Err(e) => {
                let said = helper_said(&mut helper.child);
                Err(format!("the Wayland helper handed over no connection ({e}){said}").into())
            }
        }
    }
}

/// The connected socket the helper sends on `ours`, waited for at most [`HAND_WAIT`].
fn receive(ours: Option<&UnixStream>) -> Result<UnixStream, String> {
    let ours = ours.ok_or("the socket pair is closed")?;
    ours.set_read_timeout(Some(HAND_WAIT))
        .map_err(|e| format!("cannot bound the wait: {e}"))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let got = recvmsg(
        ours,
        &mut [IoSliceMut::new(&mut byte)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| match e {
        rustix::io::Errno::AGAIN => format!("nothing within {} s", HAND_WAIT.as_secs()),
        e => format!("reading the socket pair: {e}"),
    })?;
    let mut fd: Option<OwnedFd> = None;
    for message in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    match fd {
        Some(fd) => Ok(UnixStream::from(fd)),
        None if got.bytes == 0 => Err("it ended first".into()),
        None => Err("a message without a socket".into()),
    }
}

/// What the helper wrote on its error output, once it has ended (bounded wait and read).
fn helper_said(child: &mut Child) -> String {
    let deadline = Instant::now() + END_WAIT;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut text = String::new();
    if let Some(err) = child.stderr.take() {
        let _ = err.take(MOST_ERROR).read_to_string(&mut text);
    }
    match text.trim() {
        "" => String::new(),
        t => format!(": {t}"),
    }
}

/// `ufo wayland-connect SOCKET [--hold]`, the helper: connect to the socket (the
/// compositor's, or the session bus's), hand the connection to the parent on stdin (a socket
/// pair), wait until the parent closes it or says it is done (at most [`BOUND_WAIT`], or
/// without bound with `hold`: the parent's end closes when it ends), then end. Exit 0 when the connection was handed over.
pub(crate) fn helper(socket: &Path, hold: bool) -> ExitCode {
    match hand_over(socket, hold) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn hand_over(socket: &Path, hold: bool) -> Result<(), String> {
    let parent = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(UnixStream::from)
        .map_err(|e| format!("stdin is not ufo's socket pair: {e}"))?;
    let stream = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot connect to the Wayland compositor at {}: {e}; is it running, and may this \
             user open its socket?",
            socket.display()
        )
    })?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    let fds = [stream.as_fd()];
    if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err("no room for the socket in the message".into());
    }
    sendmsg(
        &parent,
        &[IoSlice::new(b"w")],
        &mut ancillary,
        SendFlags::empty(),
    )
    .map_err(|e| format!("cannot hand the connection to ufo: {e}"))?;
    // KWin reads this process's executable when it first filters the globals for the
    // connection: stay until ufo has bound them (it closes its end) or the wait runs out
    // (held: until ufo closes its end, at the latest when ufo ends)
    parent
        .set_read_timeout((!hold).then_some(BOUND_WAIT))
        .map_err(|e| format!("cannot bound the wait: {e}"))?;
    let mut byte = [0u8; 1];
    let _ = (&parent).read(&mut byte);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_sent_over_the_pair_is_received_and_a_closed_pair_is_an_error() {
        let (ours, theirs) = UnixStream::pair().expect("pair");
        let (a, mut b) = UnixStream::pair().expect("pair to send");
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        let fds = [a.as_fd()];
        assert!(ancillary.push(SendAncillaryMessage::ScmRights(&fds)));
        sendmsg(
            &theirs,
            &[IoSlice::new(b"w")],
            &mut ancillary,
            SendFlags::empty(),
        )
        .expect("send");
        drop(a);
        let mut got = receive(Some(&ours)).expect("a socket");
        // the received socket is the same connection as the one sent
        std::io::Write::write_all(&mut got, b"hi").expect("write");
        let mut buf = [0u8; 2];
        b.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"hi");
        drop(theirs);
        let err = receive(Some(&ours)).expect_err("the other end closed");
        assert!(err.contains("ended first"), "{err}");
    }
}
