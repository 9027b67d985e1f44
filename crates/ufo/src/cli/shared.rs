//! The option groups several subcommands share (the private and remote desktops, who may
//! reach a session, what it prints) and the checks of their values.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// What `--confirm` does with actions held by the CONFIRM gate, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfirmPolicy {
    /// Ask in the terminal; with no terminal, reject.
    Ask,
    /// Approve every held action.
    Yes,
    /// Reject every held action.
    No,
}

impl From<ConfirmPolicy> for crate::config::ConfirmPolicy {
    fn from(c: ConfirmPolicy) -> Self {
        match c {
            ConfirmPolicy::Ask => Self::Ask,
            ConfirmPolicy::Yes => Self::Yes,
            ConfirmPolicy::No => Self::No,
        }
    }
}

/// Who may reach a session from `ufo serve`'s web console, and whether it may run shell
/// commands: the options `ufo run`, `ufo resume` and `ufo follow` share (docs/security.md,
/// "Who may do what").
#[derive(Debug, Clone, Default, Args)]
pub struct AccessArgs {
    /// Let the holder of the `ufo serve` token named NAME watch this session in the web
    /// console, and (unless it is a viewer token) answer its questions, cancel it and take its
    /// private desktop over (repeatable). Without it no token reaches a session started here.
    #[arg(long = "share", value_name = "NAME", value_parser = token_name)]
    pub share: Vec<String>,

    /// Run no shell command: the HostAgent's `Bash` may only launch a known application, and
    /// the shell agent is not offered (sessions the web console starts on a server without
    /// `--allow-shell` run so).
    #[arg(long)]
    pub no_shell: bool,
}

/// A `--share` value: a token name as `ufo serve token add` accepts it.
pub fn token_name(s: &str) -> Result<String, String> {
    if ufo_core::access::valid_token_name(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a token name: use the NAME of `ufo serve token add NAME` (1 to 64 \
             letters, digits or -_.@)"
        ))
    }
}

/// What a session shows while it runs and leaves behind: the options `ufo run`, `ufo resume`
/// and `ufo follow` share.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct OutputArgs {
    /// Print no progress lines (warnings and errors only).
    #[arg(long, short, conflicts_with = "verbose")]
    pub quiet: bool,

    /// More detail on stderr: `-v` adds each step's thought and timings and info logs,
    /// `-vv` debug logs. `<out>/ufo.log` always has the debug log.
    #[arg(long, short, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Write `<out>/report.html` (see `ufo report`; a resumed session's parts included) when
    /// the session ends.
    #[arg(long)]
    pub report: bool,
}

/// A count given on the command line (`--max-steps`, `--max-rounds`): a whole number, with a
/// message that says so (clap's own would suggest `-- -1` for a negative one).
pub fn count(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("{s:?} is not a count; give a whole number such as 20"))
}

/// How a private desktop (`--desktop private`) is started: the options `run`, `resume`,
/// `follow`, `mcp serve` and `batch` share.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct PrivateArgs {
    /// With `--desktop private`: show the private desktop in a window on your display
    /// (Xephyr), where you can watch it and click and type in it.
    #[arg(long)]
    pub watch: bool,

    /// With `--desktop private`: give the private desktop a fresh, empty HOME instead of yours.
    #[arg(long)]
    pub scratch_home: bool,
}

/// How a remote desktop (`--desktop remote:URL`, served by `ufo serve`) is reached: the
/// options `run`, `resume`, `follow` and `inspect` share.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// With `--desktop remote:URL`: the file holding the token (`ufo serve token add` on the
    /// served machine). Default: the UFO_REMOTE_TOKEN environment variable.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// With `--desktop remote:https://…`: the SHA-256 fingerprint of the server's certificate
    /// (`AB:CD:…`, as `ufo serve --tls` prints it) to pin. Without it the certificate must
    /// be signed by a public certificate authority.
    #[arg(long, value_name = "AB:CD:…")]
    pub fingerprint: Option<String>,

    /// A device of a session across several desktops (repeatable): `NAME=SPEC` with SPEC
    /// `live`, `private`, `sim:FILE` or `remote:URL`, or `NAME` alone for an entry of the
    /// `[devices]` table of ufo.toml. The HostAgent sees every device's windows labelled
    /// `NAME: title` and launches on a device by its labelled application or command
    /// (docs/devices.md). Instead of --desktop.
    #[arg(long, value_name = "NAME=SPEC")]
    pub device: Vec<String>,
}
