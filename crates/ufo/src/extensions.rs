//! What `ufo.toml` adds to a session beside the GUI: MCP servers (`[mcp.servers.<name>]`) and
//! third-party agents (`[agents]`), and what `ufo run` builds from them (the MCP tool
//! provider and the agent factory).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Result};
use serde::Deserialize;
use ufo_agents::{AgentsFactory, ShellConfig};
use ufo_mcp::{McpServerConfig, McpTools};

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
