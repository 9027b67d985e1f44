//! `ufo mcp serve`: this desktop served to any MCP client over stdio. (The MCP servers a
//! session uses, `[mcp.servers.<name>]` in `ufo.toml`, are in [`crate::extensions`].)

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};

/// `ufo mcp ...`
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// Subcommands of `ufo mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve this desktop to any MCP client over stdio: list windows, observe a window
    /// (controls + annotated screenshot), act on a control, type, launch an application.
    Serve(ServeArgs),
}

/// Options of `ufo mcp serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Desktop to serve: `live` (this Linux session), `private` (a desktop of ufo's own, ended
    /// with the server) or `sim:<SCENARIO.json>` (simulated).
    #[arg(long, default_value = "live", value_name = "live|private|sim:FILE")]
    pub desktop: String,

    /// The private desktop's options.
    #[command(flatten)]
    pub private: crate::cli::PrivateArgs,

    /// Allow the tools that change the desktop (act, type_text, launch_app); without it they
    /// are refused.
    #[arg(long)]
    pub allow_actions: bool,

    /// Configuration file (ufo.toml, default ./ufo.toml when present): its `[launch]` table
    /// adds to the built-in one for `launch_app`. Its other keys are checked but unused.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Run `ufo mcp ...`.
pub async fn run(args: McpArgs) -> ExitCode {
    match args.command {
        McpCommand::Serve(a) => {
            let launch = match crate::settings::launch_from_file(a.config.as_deref()) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let desktop: Arc<dyn ufo_core::Desktop> =
                match crate::desktop::open_desktop(&a.desktop, &launch).await {
                    Ok(d) => Arc::from(d),
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        return ExitCode::from(2);
                    }
                };
            match ufo_mcp::serve_stdio(desktop, a.allow_actions).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(3)
                }
            }
        }
    }
}
