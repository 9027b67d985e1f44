//! Errors of the Linux backend. Every message says what to do about it.

use ufo_core::DesktopError;

/// The cause kept by an error variant: another library's error, or words ([`cause`]) when
/// what went wrong is an answer that cannot be used.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A cause known only as words, e.g. "the server has no screen 1".
pub fn cause(reason: impl Into<String>) -> Cause {
    reason.into().into()
}

/// Errors of the live Linux desktop backend.
#[derive(Debug, thiserror::Error)]
pub enum LinuxError {
    /// `DISPLAY` is not set.
    #[error("DISPLAY is not set; start a session with `scripts/desktop-session.sh up` and `source` the env file it prints, or run inside a desktop session")]
    NoDisplay,
    /// The X server could not be reached, or cannot serve the agent (no such screen, no
    /// XTEST).
    #[error("cannot connect to the X server {display:?}: {source}; check DISPLAY (is Xvfb or your desktop running?)")]
    X11Connect {
        /// The display tried.
        display: String,
        /// The connection's error, or why the server cannot be used ([`cause`]).
        #[source]
        source: Cause,
    },
    /// An X11 request failed on the connection, got an error reply or an answer that cannot
    /// be used.
    #[error("X11 request failed ({what}): {source}; the X server may have gone away, start the session again")]
    X11Request {
        /// What was asked.
        what: String,
        /// The connection's or the server's error, or why the answer cannot be used.
        #[source]
        source: Cause,
    },
    /// The Wayland compositor could not be reached, or cannot serve the agent (it lacks the
    /// protocols ufo needs).
    #[error("cannot use the Wayland compositor at {socket}: {source}; check WAYLAND_DISPLAY and XDG_RUNTIME_DIR (is the compositor running?), or start one with `scripts/wayland-session.sh up sway`")]
    WaylandConnect {
        /// The socket tried.
        socket: String,
        /// The connection's error, or why the compositor cannot be used ([`cause`]).
        #[source]
        source: Cause,
    },
    /// A Wayland exchange (or one with the compositor's IPC) failed.
    #[error("Wayland request failed ({what}): {source}; the compositor may have gone away, start the session again")]
    Wayland {
        /// What was asked.
        what: String,
        /// The connection's or the compositor's error, or why the answer cannot be used.
        #[source]
        source: Cause,
    },
    /// There is no session bus to find the accessibility bus through.
    #[error("cannot reach the accessibility bus: DBUS_SESSION_BUS_ADDRESS is not set; run inside a desktop session, or start one with `scripts/desktop-session.sh up` and `source` the env file it prints")]
    NoSessionBus,
    /// The session bus or the accessibility bus cannot be reached.
    #[error("cannot reach the accessibility bus ({what}): {source}; check DBUS_SESSION_BUS_ADDRESS and that at-spi-bus-launcher runs (scripts/desktop-session.sh up starts both)")]
    A11yBus {
        /// The step that failed (`connect to the session bus`, `org.a11y.Bus.GetAddress`, ...).
        what: String,
        /// The D-Bus error (boxed: it is large, and every result of the backend carries it).
        #[source]
        source: Box<zbus::Error>,
    },
    /// A D-Bus call failed: the application's error reply, the connection, the bus, or a
    /// reply that does not decode.
    #[error("accessibility call {what} failed: {source}; the application may have closed, observe again")]
    Call {
        /// Interface.method and object.
        what: String,
        /// The D-Bus error, or why the reply cannot be used ([`cause`]).
        #[source]
        source: Cause,
    },
    /// A D-Bus call or a wait did not finish in time.
    #[error("{what} did not answer within {ms} ms; the application may be busy or hung, try again or raise the timeout")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The bound, in milliseconds.
        ms: u64,
    },
    /// No window matched.
    #[error("no window matches {0:?}; run `ufo inspect` without a window to list them")]
    NoWindow(String),
    /// None of the application's accessible windows is this X window's (yet).
    #[error("the application shows no accessible window that is {title:?} ({frames} other top-level windows on the accessibility bus, none named as it or lying where it is): it may still be being built; observe it again")]
    NoFrame {
        /// The X window's title.
        title: String,
        /// How many top-level accessible windows the application has.
        frames: usize,
    },
    /// No control with that id.
    #[error("no control {control:?} in window {window:?}; observe the window again and use a current label")]
    NoControl {
        /// The window.
        window: String,
        /// The control id.
        control: String,
    },
    /// The application is not in the launch table.
    #[error(
        "no application {0:?} in the launch table; add it to LinuxConfig::launch (name -> command)"
    )]
    UnknownApp(String),
    /// Launching failed.
    #[error("launching {app:?} with `{command}` failed: {reason}")]
    Launch {
        /// Application name.
        app: String,
        /// Command line.
        command: String,
        /// Why.
        reason: String,
    },
    /// The action does not apply.
    #[error("{0}")]
    Unsupported(String),
    /// The action reached the control and failed.
    #[error("{0}")]
    ActionFailed(String),
    /// Bad `type_keys` syntax.
    #[error(
        "bad key syntax: {0}; see crates/ufo-linux/README.md (e.g. `hello{{ENTER}}`, `{{ctrl+s}}`)"
    )]
    KeySyntax(String),
    /// Encoding the screenshot failed.
    #[error("cannot encode the screenshot as PNG: {0}")]
    Png(#[from] ufo_desktop::annotate::AnnotateError),
    /// A background task (screenshot encoding) ended without its result.
    #[error("a screenshot task failed: {0}; observe again")]
    Task(#[from] tokio::task::JoinError),
    /// Running a shell command failed.
    #[error("cannot run the shell command: {0}; check that /bin/sh exists and the system has free processes and memory")]
    Shell(#[from] ufo_proc::ProcError),
    /// An application's launch command could not be started.
    #[error("`{command}` could not be started: {source}; check the application's launch command")]
    Spawn {
        /// The command line.
        command: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// The log file of a launched application could not be made.
    #[error("cannot create the log file {path} for `{command}`: {source}; check that the temporary folder is writable")]
    LaunchLog {
        /// The file.
        path: std::path::PathBuf,
        /// The command line.
        command: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The port's error of a backend error: the variants the engine tells apart keep their words;
/// a timeout and every other failure keep the error itself as their source (docs of
/// [`DesktopError`]), so nothing beneath it is lost.
impl From<LinuxError> for DesktopError {
    fn from(e: LinuxError) -> Self {
        match e {
            LinuxError::NoWindow(w) => DesktopError::NoWindow(w),
            LinuxError::NoControl { window, control } => {
                DesktopError::NoControl { window, control }
            }
            LinuxError::UnknownApp(a) => DesktopError::UnknownApp(a),
            LinuxError::Timeout { ms, .. } => DesktopError::Timeout {
                ms,
                source: Some(Box::new(e)),
            },
            LinuxError::Unsupported(m) => DesktopError::Unsupported(m),
            LinuxError::ActionFailed(m) | LinuxError::KeySyntax(m) => DesktopError::ActionFailed(m),
            other => DesktopError::Backend(Box::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every failure but the ones the engine tells apart: what it reads, and the error beneath.
    fn failures() -> Vec<LinuxError> {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        vec![
            LinuxError::NoDisplay,
            LinuxError::X11Connect {
                display: ":9".into(),
                source: cause("the server has no screen 1"),
            },
            LinuxError::X11Request {
                what: "GetGeometry".into(),
                source: Box::new(io()),
            },
            LinuxError::WaylandConnect {
                socket: "/run/user/1000/wayland-1".into(),
                source: cause("the compositor lacks zwlr_virtual_pointer_manager_v1"),
            },
            LinuxError::Wayland {
                what: "screencopy".into(),
                source: Box::new(io()),
            },
            LinuxError::NoSessionBus,
            LinuxError::A11yBus {
                what: "org.a11y.Bus.GetAddress".into(),
                source: Box::new(zbus::Error::Failure("the bus is gone".into())),
            },
            LinuxError::Call {
                what: "Accessible.GetChildren".into(),
                source: Box::new(io()),
            },
            LinuxError::NoFrame {
                title: "Untitled".into(),
                frames: 2,
            },
            LinuxError::Launch {
                app: "Calc".into(),
                command: "calc".into(),
                reason: "it exited".into(),
            },
            LinuxError::Spawn {
                command: "calc".into(),
                source: io(),
            },
            LinuxError::LaunchLog {
                path: "/nowhere/calc.log".into(),
                command: "calc".into(),
                source: io(),
            },
        ]
    }

    /// A backend failure reads as it did when only its text was kept, and its source chain
    /// reaches the original error (ARCHITECTURE.md, "Errors").
    #[test]
    fn a_backend_failure_keeps_the_error_beneath_it() {
        for e in failures() {
            let text = e.to_string();
            let beneath = std::error::Error::source(&e).map(|s| s.to_string());
            let d = DesktopError::from(e);
            assert_eq!(d.to_string(), format!("desktop backend failure: {text}"));
            let source = std::error::Error::source(&d).expect("the LinuxError");
            assert!(source.downcast_ref::<LinuxError>().is_some(), "{source:?}");
            assert_eq!(source.source().map(|s| s.to_string()), beneath);
        }
        let d = DesktopError::from(LinuxError::A11yBus {
            what: "connect".into(),
            source: Box::new(zbus::Error::Failure("the bus is gone".into())),
        });
        // (the variant keeps the D-Bus error boxed: the source is that box)
        let root = std::error::Error::source(&d)
            .and_then(|s| s.source())
            .and_then(|s| s.downcast_ref::<Box<zbus::Error>>());
        assert!(
            matches!(root.map(|b| &**b), Some(zbus::Error::Failure(m)) if m == "the bus is gone")
        );
    }

    /// A timeout reads as the port's timeout and keeps what was waited for as its source; the
    /// variants the engine tells apart keep their words.
    #[test]
    fn a_timeout_keeps_what_was_waited_for() {
        let d = DesktopError::from(LinuxError::Timeout {
            what: "GetChildren".into(),
            ms: 250,
        });
        assert_eq!(
            d.to_string(),
            "the desktop did not answer within 250 ms; the application may be hung"
        );
        let source = std::error::Error::source(&d).expect("the LinuxError");
        assert!(source
            .to_string()
            .starts_with("GetChildren did not answer within 250 ms"));
        assert!(matches!(
            DesktopError::from(LinuxError::KeySyntax("{ctrl".into())),
            DesktopError::ActionFailed(m) if m == "{ctrl"
        ));
        assert!(matches!(
            DesktopError::from(LinuxError::NoWindow("0x1".into())),
            DesktopError::NoWindow(w) if w == "0x1"
        ));
    }
}
