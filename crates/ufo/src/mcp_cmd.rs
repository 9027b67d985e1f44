//! MCP and third-party agents in the binary: `ufo mcp serve`, the `[mcp.servers.<name>]` and
//! `[agents]` sections of `ufo.toml`, and what `ufo run` builds from them (the MCP tool
//! provider and the agent factory).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use serde::Deserialize;
use ufo_agents::{AgentsFactory, ShellConfig};
use ufo_mcp::{McpServerConfig, McpTools};

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

/// `[mcp]` in ufo.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// MCP servers by name.
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[agents]` in ufo.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsSection {
    /// Offer the shell agent to the host.
    #[serde(default)]
    pub shell: bool,
    /// Where the shell agent runs commands (default: the current directory).
    pub shell_workdir: Option<PathBuf>,
    /// Longest a shell agent command may run, in milliseconds (default 60000).
    pub shell_timeout_ms: Option<u64>,
    /// Applications driven by the operator agent (coordinates) instead of the AppAgent.
    #[serde(default)]
    pub operator_apps: Vec<String>,
}

/// The MCP tool provider of `[mcp.servers]`, or `None` when there are none.
pub fn tools(section: &McpSection) -> Result<Option<McpTools>> {
    if section.servers.is_empty() {
        return Ok(None);
    }
    let tools = McpTools::new(section.servers.clone()).map_err(|e| anyhow!("{e}"))?;
    Ok(Some(tools))
}

/// The agent factory of `[agents]`.
pub fn factory(section: &AgentsSection) -> Result<AgentsFactory> {
    let mut f = AgentsFactory::new().with_operator_apps(section.operator_apps.clone());
    if section.shell {
        let workdir = match &section.shell_workdir {
            Some(p) => p.clone(),
            None => std::env::current_dir()
                .map_err(|e| anyhow!("cannot read the current directory for the shell agent: {e}; set [agents] shell_workdir"))?,
        };
        if !workdir.is_dir() {
            return Err(anyhow!(
                "[agents] shell_workdir {} is not a directory; create it or fix the path",
                workdir.display()
            ));
        }
        let mut config = ShellConfig::new(workdir);
        if let Some(ms) = section.shell_timeout_ms {
            if ms == 0 {
                return Err(anyhow!(
                    "[agents] shell_timeout_ms is 0; set it to 1 or more"
                ));
            }
            config.timeout = Duration::from_millis(ms);
        }
        f = f.with_shell(config);
    }
    Ok(f)
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
                match crate::open_desktop(&a.desktop, &launch).await {
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
