//! `ufo-agents`: third-party agents the HostAgent can ASSIGN subtasks to, each with its own
//! state machine (the HostAgent's and AppAgent's states are untouched):
//!
//! - [`ShellAgent`]: a LinuxAgent running shell commands in a working directory under the
//!   shell policy (commands off the allow-list are held for the person's confirmation);
//!   states CONTINUE / CONFIRM / FINISH / FAIL / ERROR.
//! - [`OperatorAgent`]: a coordinate-based computer-use agent (screenshot in, click or type at
//!   x,y out) for applications whose control tree is poor; states CONTINUE / FINISH / FAIL /
//!   ERROR.
//! - [`AgentsFactory`]: composes the AppAgent factory with these.

mod common;
pub mod factory;
pub mod operator;
pub mod shell;

pub use factory::{AgentsFactory, SHELL_DESCRIPTION};
pub use operator::{OperatorAgent, OperatorStatus, OPERATOR_KIND};
pub use shell::{ShellAgent, ShellConfig, ShellStatus, SHELL_AGENT};
