//! The options of `ufo serve ...` (clap).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The default address: this machine only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8377";

/// Options of `ufo serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// Manage the clients' tokens instead of serving.
    #[command(subcommand)]
    pub command: Option<ServeCommand>,

    /// Desktop to serve: `live` (this Linux session), `private` (a desktop of ufo's own, ended
    /// with the server) or `sim:<SCENARIO.json>` (simulated).
    #[arg(
        long,
        default_value = "live",
        value_name = "live|wayland|private[:sway|kwin]|sim:FILE"
    )]
    pub desktop: String,

    /// The private desktop's options.
    #[command(flatten)]
    pub private: super::shared::PrivateArgs,

    /// Address and port to listen on (port 0: any free port; the line `listening URL` on
    /// stdout says which). Another address than a loopback one needs TLS and a token.
    #[arg(long, default_value = DEFAULT_LISTEN, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,

    /// Allow the tools that change the desktop (act, type_text, launch_app); without it they
    /// are refused.
    #[arg(long)]
    pub allow_actions: bool,

    /// Also offer `run_shell`: shell commands on this machine, for a remote HostAgent's `Bash`
    /// and a remote batch's task set-up and evaluators (needs --allow-actions). Anyone with a
    /// token can then run any command as this user: give it only to clients you would give a
    /// shell.
    #[arg(long, requires = "allow_actions")]
    pub allow_shell: bool,

    /// Serve over TLS with a self-signed certificate made on first start and kept (its
    /// SHA-256 fingerprint is printed for clients to pin).
    #[arg(long)]
    pub tls: bool,

    /// Serve over TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// A name clients reach this server by (its `Host` header), besides the listen address
    /// and `localhost` (repeatable).
    #[arg(long = "host-name", value_name = "NAME")]
    pub host_names: Vec<String>,

    /// Configuration file (ufo.toml, default ./ufo.toml when present): its `[launch]` table
    /// adds to the built-in one for `launch_app`; sessions started from the console get it too.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// A model spec sessions started from the web console may use (repeatable; the first is
    /// the default). Without one the console starts no sessions.
    #[arg(long = "llm", value_name = "SPEC")]
    pub llms: Vec<String>,

    /// The runs folder the console lists and starts sessions in (default: `runs_dir` of
    /// ufo.toml, else `runs`).
    #[arg(long, value_name = "DIR")]
    pub runs: Option<PathBuf>,

    /// Most sessions the console runs at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_sessions: usize,

    /// Most sessions one token runs from the console at once.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub max_sessions_per_token: usize,

    /// A device sessions started from the console may name (repeatable): `NAME=SPEC` (as
    /// `ufo run --device`) or `NAME` of ufo.toml's `[devices]`. The start form names devices
    /// only by these names; without this option it can name none.
    #[arg(long = "device", value_name = "NAME=SPEC|NAME", value_parser = served_device)]
    pub devices: Vec<(String, String)>,
}

/// A `--device` of `ufo serve`: its name, and the value the session's `--device` gets.
fn served_device(s: &str) -> Result<(String, String), String> {
    let name = s.split_once('=').map_or(s, |(n, _)| n);
    if crate::devices::valid_name(name) {
        Ok((name.to_string(), s.to_string()))
    } else {
        Err(format!(
            "{s:?}: give NAME=SPEC or a NAME of [devices], the name 1 to 32 letters, digits, - \
             or _"
        ))
    }
}

/// `ufo serve token ...`
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// The clients' bearer tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `ufo serve token add|list|revoke`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token for a client; the token is printed once, on the last line.
    Add {
        /// The client's name (letters, digits, `-_.@`).
        name: String,
        /// What its holder may do: `admin` (every console session and what the server's flags
        /// allow), `user` (its own sessions and what the flags allow), `viewer` (watches what
        /// is shared with it, reads the desktop, never acts). docs/security.md, "Who may do what".
        #[arg(long, default_value = "user", value_name = "admin|user|viewer")]
        role: ufo_core::access::Role,
    },
    /// List the clients that have a token (never the tokens).
    List,
    /// Revoke a client's token; requests with it are refused from then on.
    Revoke {
        /// The client's name.
        name: String,
    },
}
