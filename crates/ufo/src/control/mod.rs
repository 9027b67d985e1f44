//! The session's control socket (docs/console.md "The control socket"): how the web console
//! of `ufo serve`, or any program of the same user, watches a running session, answers its
//! CONFIRM and PENDING questions, cancels it, and takes its private desktop over.
//!
//! The engine does not know about it: the console comes in through the ports the engine
//! already has, a [`UserIo`](ufo_core::UserIo) that races the terminal with the socket
//! ([`ConsoleUser`]) and a [`Desktop`](ufo_core::Desktop) whose take-over port also reports the
//! console's take-over ([`ConsoleDesktop`]).
//!
//! | file | what |
//! |---|---|
//! | `protocol.rs` | the request and state types, and the one parser of request lines |
//! | `state.rs` | [`Control`]: the open question, who has the desktop, the change counter |
//! | `listener.rs` | [`ControlSocket`]: the socket, its checks and bounds |
//! | `user.rs` | [`ConsoleUser`] |
//! | `desktop.rs` | [`ConsoleDesktop`] |
//! | `screen.rs` | the private desktop's screen: view and input |
//! | `recorder.rs` | [`SharedRecorder`]: the trajectory the session and the questions write |
//! | `server.rs` | a session started by `ufo serve` ends with it ([`end_with_server`]) |

mod desktop;
mod listener;
mod protocol;
mod recorder;
mod screen;
mod server;
mod state;
mod user;

pub use desktop::ConsoleDesktop;
pub use listener::ControlSocket;
pub use recorder::SharedRecorder;
pub use screen::Screen;
pub use server::{end_with_server, session_owner, OWNER_VAR, SERVER_VAR};
pub use state::{By, Control, DesktopKind};
pub use user::{console_requested, ConsoleUser};
